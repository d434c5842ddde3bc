// PortdCommand: portd's command line, parsed by swift-argument-parser:
// `portd [--socket PATH] [--system | --user] [--config PATH] [--check-config] [--version] [--help]`.
// Parsing only: what the options mean is DaemonPaths' (PortCore) and
// DaemonSetup's business; `--help` and `--version` exit here.

import ArgumentParser
import PortCore

extension DaemonInstance: EnumerableFlag {
    public static func help(for value: DaemonInstance) -> ArgumentHelp? {
        switch value {
        case .user: "Run the per-user instance (the default): $XDG_RUNTIME_DIR/portd/portd.sock."
        case .system: "Run the system instance: \(DaemonPaths.systemSocket)."
        }
    }
}

struct PortdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portd",
        abstract: "The name server for PortCore message ports.",
        discussion: """
            portd listens on its control socket and serves clients such as portctl(1) \
            until SIGTERM or SIGINT, then removes the socket and exits 0. With no \
            options it runs the per-user instance in the foreground.

            The socket is, first match wins: --socket PATH; $PORTD_SOCKET; \
            \(DaemonPaths.systemSocket) with --system; $XDG_RUNTIME_DIR/portd/portd.sock; \
            /run/user/$UID/portd/portd.sock (your runtime directory from pam_systemd: it must \
            exist and be private, mode 700; otherwise portd says what to set; root's is made \
            when missing). A socket passed by \
            systemd (portd.socket) is used instead of binding one.

            Configuration (portd.conf(5)): --config PATH; /etc/portd/portd.conf for \
            --system; $XDG_CONFIG_HOME/portd/portd.conf otherwise; each with drop-ins in \
            PATH.d/*.conf. SIGHUP reloads it (policy, limits and declared ports; names and clients stay).

            Environment: PORTD_SOCKET, XDG_RUNTIME_DIR, XDG_CONFIG_HOME, NOTIFY_SOCKET \
            (READY=1, STATUS=, WATCHDOG=1, RELOADING=1, STOPPING=1 are sent, never waiting), FDSTORE (the \
            manager keeps a file-descriptor store: declared ports' sockets go into it), \
            LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES (socket activation), JOURNAL_STREAM (structured logs), \
            PORTD_LOG_LEVEL.

            Exit status: 0 stopped by SIGTERM or SIGINT; 1 could not start (for \
            example another portd already serves the socket, or the configuration has \
            an error); 64 usage error. With --check-config: 0 the configuration is good, \
            1 it has errors.
            """,
        version: PortdVersion.current
    )

    @Option(
        help: ArgumentHelp("Listen on this socket path (overrides PORTD_SOCKET and the instance).", valueName: "path"),
        completion: .file())
    var socket: String?

    @Flag(exclusivity: .chooseLast)
    var instance: DaemonInstance?

    @Option(help: ArgumentHelp(
        "Read this configuration file (it must exist) and its drop-in directory PATH.d instead of the instance's.",
        valueName: "path"),
        completion: .file())
    var config: String?

    @Flag(help: "Check the configuration the other options select (syntax, meaning, and that each Exec= program is an executable file), print every error with its file and line, and exit: 0 when it is good, 1 otherwise. Nothing is bound or started.")
    var checkConfig = false

    func validate() throws {
        if let socket {
            if socket.isEmpty { throw ValidationError("--socket needs a path") }
            if socket.utf8.count > LocalSocket.maximumPathLength {
                throw ValidationError(
                    "--socket path is \(socket.utf8.count) bytes; a socket path holds at most \(LocalSocket.maximumPathLength)")
            }
        }
    }
}
