// SocketActivation: `register NAME -- COMMAND` hands COMMAND the name's
// receive right the way systemd's socket activation does (PortCore's
// SocketActivationLaunch.start: descriptor 3, LISTEN_FDS=1, LISTEN_FDNAMES=NAME,
// LISTEN_PID). As under systemd, the socket is blocking (O_NONBLOCK
// cleared: the receive right is COMMAND's alone) and nothing else is
// inherited but standard input, output and error.
//
// While COMMAND runs, portctl watches its connection to portd: when portd
// goes away (stopped, crashed), the name is gone, so COMMAND is sent SIGTERM
// and portctl exits once it ends (a supervisor may then start both again,
// against the new portd). It also relays SIGTERM, SIGINT, SIGHUP, SIGQUIT,
// SIGUSR1 and SIGUSR2 sent to it with kill(2); the same signals generated
// by a terminal (Ctrl-C) reach COMMAND directly, so they are not sent twice.

import PortActivation
import PortCore

enum SocketActivation {
    static let relayedSignals: [Int32] = [Signal.terminate, Signal.interrupt, Signal.hangUp, Signal.quit, Signal.user1, Signal.user2]

    /// How COMMAND's run ended.
    struct Ending {
        let termination: Spawn.Termination
        /// portd went away while COMMAND ran: it was sent SIGTERM.
        let portdWentAway: Bool
    }

    /// Starts `command` with `listening` as descriptor 3 and waits for it,
    /// relaying signals; returns how it ended. When `portd` (the connection
    /// that holds the name) hangs up first, COMMAND is sent SIGTERM (its
    /// name is gone: nothing can reach it by name any more) and waited for.
    static func run(
        _ command: [String], listening: borrowing OwnedDescriptor, name: String, extraEnvironment: [String] = [],
        portd: borrowing OwnedDescriptor
    ) throws(SystemCallError) -> Ending {
        // Blocked before the child exists, so no signal to relay slips by
        // (portctl has one thread; the child's mask is reset by Spawn). The
        // child's exit comes through a pidfd, not SIGCHLD, which another
        // thread of a bigger process might take.
        let signals = try SignalFD.create(for: relayedSignals)  // closed on return
        defer { try? SignalFD.unblock(relayedSignals) }
        try Descriptor.setNonBlocking(listening, false)
        let pid = try SocketActivationLaunch.start(
            command, listening: listening, name: name, environment: Spawn.currentEnvironment, extra: extraEnvironment)
        let exited = try Spawn.exitDescriptor(pid)  // closed on return
        var portdWentAway = false
        while true {
            let exit: Poll.Events
            var hangUp: Poll.Events = []
            if portdWentAway {
                // A hung-up connection stays ready (POLLHUP): poll it no more.
                (exit, _) = try Poll.wait(exited, for: .readable, signals, for: .readable, timeout: nil)
            } else {
                (exit, _, hangUp) = try Poll.wait(
                    exited, for: .readable, signals, for: .readable, portd, for: .readHangUp, timeout: nil)
            }
            if !exit.isEmpty { return Ending(termination: try Spawn.wait(pid)!, portdWentAway: portdWentAway) }
            if !hangUp.isDisjoint(with: [.readHangUp, .hangUp, .error]) {
                portdWentAway = true
                try Spawn.signal(pid, Signal.terminate)
            }
            while let delivery = try SignalFD.readDelivery(signals) {
                if !delivery.fromKernel { try Spawn.signal(pid, delivery.signal) }
            }
        }
    }
}
