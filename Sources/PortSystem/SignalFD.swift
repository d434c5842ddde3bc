// SignalFD: signalfd(2), so signals arrive as a readable descriptor a run
// loop can serve like any port-based source. The signals must be blocked in
// every thread first (sigprocmask before threads start).

import CPortSystem
import Glibc

/// signalfd(2). Access is `package`: the executables use it.
package enum SignalFD {
    /// Blocks `signals` for the calling thread (and threads it creates later)
    /// and returns a signalfd that reports them. The corresponding C functions
    /// are `pthread_sigmask` and `signalfd`.
    package static func create(for signals: [Int32]) throws(SystemCallError) -> OwnedDescriptor {
        var set = sigset_t()
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        let r = pthread_sigmask(SIG_BLOCK, &set, nil)
        if r != 0 { throw SystemCallError(call: "pthread_sigmask", errno: .init(rawValue: r)) }
        return OwnedDescriptor(adopting: try SystemCall.must("signalfd") { signalfd(-1, &set, Int32(SFD_CLOEXEC | SFD_NONBLOCK)) })
    }

    /// Reads one pending signal number, or nil when none is pending.
    package static func read(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Int32? {
        let fd = fd.rawValue
        var info = signalfd_siginfo()
        let size = MemoryLayout<signalfd_siginfo>.size
        switch try SystemCall.run("read(signalfd)", { Glibc.read(fd, &info, size) }) {
        case .done: return Int32(bitPattern: info.ssi_signo)
        case .wouldBlock: return nil
        }
    }
}

/// The signals the programs name, as their numbers (signal(7)).
package enum Signal {
    package static let hangUp: Int32 = SIGHUP
    package static let interrupt: Int32 = SIGINT
    package static let quit: Int32 = SIGQUIT
    package static let kill: Int32 = SIGKILL
    package static let user1: Int32 = SIGUSR1
    package static let user2: Int32 = SIGUSR2
    package static let brokenPipe: Int32 = SIGPIPE
    package static let terminate: Int32 = SIGTERM

    /// "SIGTERM" for the signals above, "signal N" for others.
    package static func name(_ number: Int32) -> String {
        switch number {
        case SIGHUP: "SIGHUP"
        case SIGINT: "SIGINT"
        case SIGQUIT: "SIGQUIT"
        case SIGKILL: "SIGKILL"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        case SIGPIPE: "SIGPIPE"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
