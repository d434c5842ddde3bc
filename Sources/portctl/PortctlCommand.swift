// PortctlCommand: the whole subcommand tree of portctl in one place (more
// verbs arrive with issue 5); each verb lives in Commands/.

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
        subcommands: [Status.self]
    )
}
