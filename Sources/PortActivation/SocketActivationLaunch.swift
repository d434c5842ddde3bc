// SocketActivationLaunch: starting a command with one listening socket the
// way systemd's socket activation passes it (sd_listen_fds(3)): the socket
// as descriptor 3, LISTEN_FDS=1, LISTEN_FDNAMES=NAME, and LISTEN_PID set to
// the command's own pid. The pid is only known in the child, so the command
// starts through a tiny shell wrapper that exports LISTEN_PID=$$ and execs
// it (same pid): `/bin/sh -c 'export LISTEN_PID=$$; exec "$0" "$@"'
// COMMAND ARGS...` (arguments pass through "$@" untouched). Used by
// `portctl register -- COMMAND` and by portd's activation of declared ports.
//
// Invariants: no LISTEN_* variable of the caller's reaches the command;
// nothing is inherited but the socket and the standard streams; the
// socket's O_NONBLOCK flag is the caller's business (it is shared with
// every other copy of the socket).

import PortSystem

package enum SocketActivationLaunch {
    /// The first descriptor passed (SD_LISTEN_FDS_START).
    package static let firstListenDescriptor: Int32 = 3
    /// The shell wrapper that sets LISTEN_PID to the command's pid.
    package static let listenPIDWrapper = "export LISTEN_PID=$$; exec \"$0\" \"$@\""

    /// The argument vector that starts `command` through the wrapper.
    package static func arguments(for command: [String]) -> [String] {
        ["/bin/sh", "-c", listenPIDWrapper] + command
    }

    /// `base` without any LISTEN_* variable, plus the activation variables
    /// (LISTEN_PID comes from the wrapper) and `extra`.
    package static func environment(base: [String], name: String, extra: [String] = []) -> [String] {
        base.filter { !$0.hasPrefix("LISTEN_") } + ["LISTEN_FDS=1", "LISTEN_FDNAMES=\(name)"] + extra
    }

    /// Starts `command` with a copy of `listening` as descriptor 3,
    /// socket-activation style, in `environment` (base variables,
    /// "NAME=value"); returns its pid. The caller keeps its own `listening`.
    package static func start(
        _ command: [String], listening: borrowing OwnedDescriptor, name: String, environment base: [String],
        extra: [String] = []
    ) throws(SystemCallError) -> Int32 {
        var descriptors = Spawn.Descriptors(capacity: 1)
        try descriptors.insert(copyOf: listening, as: firstListenDescriptor)
        return try Spawn.start(
            arguments(for: command),
            environment: environment(base: base, name: name, extra: extra),
            descriptors: descriptors)
    }
}
