// ConnectionOptions: how every portctl verb finds and waits for portd:
// `--socket PATH`, `--user`/`--system`, `--timeout S`. Path resolution is
// PortCore's DaemonPaths, the same code portd binds with.

import ArgumentParser
import PortCore

extension DaemonInstance: EnumerableFlag {
    public static func help(for value: DaemonInstance) -> ArgumentHelp? {
        switch value {
        case .user: "Talk to the per-user instance (the default)."
        case .system: "Talk to the system instance (\(DaemonPaths.systemSocket))."
        }
    }
}

struct ConnectionOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The control socket of portd (overrides PORTD_SOCKET and the instance).", valueName: "path"))
    var socket: String?

    @Flag(exclusivity: .exclusive)
    var instance: DaemonInstance?

    @Option(help: ArgumentHelp("Seconds to wait for portd before giving up.", valueName: "seconds"))
    var timeout: Double = 5

    func validate() throws {
        guard timeout.isFinite, timeout > 0, timeout <= 86_400 else {
            throw ValidationError("--timeout must be a number of seconds greater than 0 (at most 86400)")
        }
        if let socket, socket.isEmpty { throw ValidationError("--socket needs a path") }
    }

    /// Where portd's socket is for this invocation.
    var location: DaemonSocketLocation {
        DaemonPaths.resolve(
            explicitPath: socket, instance: instance, userID: CurrentProcess.userID,
            environment: CurrentProcess.environment)
    }

    var timeoutDuration: Duration { .nanoseconds(Int64(timeout * 1e9)) }
}
