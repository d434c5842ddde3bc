// SignalFD+Info: a pending signal with who sent it, for a process that
// relays signals to a child (as sudo does): a signal the kernel generated
// for the whole foreground process group (Ctrl-C on a terminal: si_code
// SI_KERNEL) already reached the child and must not be sent twice, while
// one sent with kill(2) (SI_USER) reached only us.

import CPortSystem
import Glibc

extension SignalFD {
    /// A received signal and where it came from.
    package struct Delivery: Sendable, Equatable {
        package let signal: Int32
        /// The sender's pid for kill(2)/sigqueue(3); 0 from the kernel.
        package let senderPID: Int32
        /// Whether the kernel generated it (a terminal's Ctrl-C, Ctrl-\, a hang-up).
        package let fromKernel: Bool
    }

    /// Reads one pending signal with its origin, or nil when none is
    /// pending. The corresponding C function is `read` on a signalfd.
    package static func readDelivery(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Delivery? {
        let fd = fd.rawValue
        var info = signalfd_siginfo()
        let size = MemoryLayout<signalfd_siginfo>.size
        switch try SystemCall.run("read(signalfd)", { Glibc.read(fd, &info, size) }) {
        case .done:
            // SI_KERNEL is 0x80 (asm-generic/siginfo.h); Glibc does not export it.
            return Delivery(
                signal: Int32(bitPattern: info.ssi_signo), senderPID: Int32(bitPattern: info.ssi_pid),
                fromKernel: info.ssi_code == 0x80)
        case .wouldBlock:
            return nil
        }
    }

    /// Unblocks `signals` for the calling thread again (after its signalfd
    /// is closed). The corresponding C function is `pthread_sigmask`.
    package static func unblock(_ signals: [Int32]) throws(SystemCallError) {
        var set = sigset_t()
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        let r = pthread_sigmask(SIG_UNBLOCK, &set, nil)
        if r != 0 { throw SystemCallError(call: "pthread_sigmask", errno: .init(rawValue: r)) }
    }
}
