// PortctlCommand: the whole subcommand tree of portctl in one place; each
// verb lives in Commands/. Shared options are option groups:
// ConnectionOptions (--socket, --user/--system, --timeout), OutputOptions
// (--json, --quiet), ComponentOptions, ServeOptions, OwnershipOptions.
// ConnectionOptions and OutputOptions are the root's too, so they may come
// before the verb (`portctl --user list`, as `busctl --user list`); each
// verb's group of the same type gets the root's value (see
// ConnectionOptions). Every verb names itself (commandName): without it,
// swift-argument-parser derives the name from the type's name at every
// start, which costs a tenth of a `portctl send`.

import ArgumentParser
import PortCore

struct PortctlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portctl",
        abstract: "Talk to portd, the name server for PortCore message ports.",
        discussion: """
            --socket, --user, --system, --timeout, --json and --quiet go before the verb or after it \
            (portctl --user list). An option given more than once counts as the last one given; \
            --user and --system are one setting, so the last of them counts \
            (portctl --user status --system asks the system instance).

            The socket is, first match wins: --socket PATH; $PORTD_SOCKET; \
            \(DaemonPaths.systemSocket) with --system; $XDG_RUNTIME_DIR/portd/portd.sock; \
            /run/user/$UID/portd/portd.sock, in the runtime directory pam_systemd makes at login, \
            used only when /run/user/$UID is a directory of yours closed to others (mode 700; \
            otherwise status 77). No other user can create or redirect that path.

            \(ExitStatus.helpText)
            """,
        version: PortdVersion.current,
        subcommands: [
            Register.self, Listen.self, Send.self, Request.self, CheckIn.self, List.self, Lookup.self, Watch.self,
            Monitor.self, Status.self, Wait.self,
        ]
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
}
