// PortctlCommand: the whole subcommand tree of portctl in one place; each
// verb lives in Commands/. Shared options are option groups:
// ConnectionOptions (--socket, --user/--system, --timeout), OutputOptions
// (--json, --quiet), ComponentOptions, ServeOptions, OwnershipOptions.

import ArgumentParser
import PortCore

struct PortctlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portctl",
        abstract: "Talk to portd, the name server for PortCore message ports.",
        discussion: """
            The socket is, first match wins: --socket PATH; $PORTD_SOCKET; \
            \(DaemonPaths.systemSocket) with --system; $XDG_RUNTIME_DIR/portd/portd.sock; \
            /tmp/portd-$UID/portd.sock.

            \(ExitStatus.helpText)
            """,
        version: PortdVersion.current,
        subcommands: [
            Register.self, Listen.self, Send.self, Request.self, CheckIn.self, List.self, Lookup.self, Watch.self,
            Status.self, Wait.self,
        ]
    )
}
