// SocketActivation: `register NAME -- COMMAND` hands COMMAND the name's
// receive right the way systemd's socket activation does (sd_listen_fds(3)):
// the listening socket as descriptor 3, LISTEN_FDS=1, LISTEN_FDNAMES=NAME,
// and LISTEN_PID set to COMMAND's own pid. The pid is only known in the
// child, so COMMAND starts through a tiny shell wrapper that exports
// LISTEN_PID=$$ and execs it (same pid): `/bin/sh -c 'export
// LISTEN_PID=$$; exec "$0" "$@"' COMMAND ARGS...`. As under systemd, the
// socket is blocking (O_NONBLOCK cleared) and nothing else is inherited
// but standard input, output and error.
//
// While COMMAND runs, portctl relays SIGTERM, SIGINT, SIGHUP, SIGQUIT,
// SIGUSR1 and SIGUSR2 sent to it with kill(2); the same signals generated
// by a terminal (Ctrl-C) reach COMMAND directly, so they are not sent twice.

import Glibc
import PortCore

enum SocketActivation {
    /// The first descriptor passed (SD_LISTEN_FDS_START).
    static let firstDescriptor: Int32 = 3
    static let wrapper = "export LISTEN_PID=$$; exec \"$0\" \"$@\""
    static let relayedSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]

    /// The argument vector that starts `command` through the wrapper.
    static func arguments(for command: [String]) -> [String] { ["/bin/sh", "-c", wrapper] + command }

    /// The environment: `base` without any LISTEN_* of ours, plus the
    /// activation variables (LISTEN_PID comes from the wrapper) and `extra`.
    static func environment(base: [String], name: String, extra: [String] = []) -> [String] {
        base.filter { !$0.hasPrefix("LISTEN_") } + ["LISTEN_FDS=1", "LISTEN_FDNAMES=\(name)"] + extra
    }

    /// Starts `command` with `listening` as descriptor 3 and waits for it,
    /// relaying signals; returns how it ended.
    static func run(
        _ command: [String], listening: Int32, name: String, extraEnvironment: [String] = []
    ) throws(SystemCallError) -> Spawn.Termination {
        // Blocked before the child exists, so no signal to relay slips by
        // (portctl has one thread; the child's mask is reset by Spawn). The
        // child's exit comes through a pidfd, not SIGCHLD, which another
        // thread of a bigger process might take.
        let signals = try SignalFD.create(for: relayedSignals)
        defer {
            Descriptor.close(signals)
            try? SignalFD.unblock(relayedSignals)
        }
        try Descriptor.setNonBlocking(listening, false)
        let pid = try Spawn.start(
            arguments(for: command),
            environment: environment(base: Spawn.currentEnvironment, name: name, extra: extraEnvironment),
            descriptors: [firstDescriptor: listening])
        let exited = try Spawn.exitDescriptor(pid)
        defer { Descriptor.close(exited) }
        while true {
            let ready = try Poll.wait([(exited, .readable), (signals, .readable)], timeout: nil)
            if !ready[0].isEmpty { return try Spawn.wait(pid)! }
            while let delivery = try SignalFD.readDelivery(signals) {
                if !delivery.fromKernel { try Spawn.signal(pid, delivery.signal) }
            }
        }
    }
}
