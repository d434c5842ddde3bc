// MainDispatchQueue: libdispatch's main-queue interface for run loops, the
// one Core Foundation's main run loop uses, wrapped once. A run loop on the
// main thread watches `wakeUpDescriptor()` and calls `drain()` when it is
// readable, so blocks queued on DispatchQueue.main (and @MainActor jobs, which
// Swift on Linux runs on the main queue) run while the main thread runs it.
//
// Invariants: libdispatch owns its eventfd; PortCore watches a CLOEXEC
// duplicate (same eventfd, so the same readiness and counter) that it may
// close. `drain()` is called on the main thread only (libdispatch traps
// otherwise).

import CPortSystem
import Glibc

package enum MainDispatchQueue {
    /// A duplicate of the main queue's wake-up eventfd, readable when work
    /// was queued on the main queue. The corresponding C functions are
    /// `_dispatch_get_main_queue_handle_4CF` and `fcntl(F_DUPFD_CLOEXEC)`.
    /// Out of descriptors, this throws (EMFILE, ENFILE) before libdispatch
    /// is asked: it makes its eventfd at the first ask and traps when it
    /// cannot, so two descriptors (its eventfd and the duplicate) are made
    /// and closed first.
    package static func wakeUpDescriptor() throws(SystemCallError) -> OwnedDescriptor {
        do {
            let probe = try EventFD.create()
            let second = try Descriptor.duplicate(probe)
            second.close()
            probe.close()
        }
        let handle = _dispatch_get_main_queue_handle_4CF()
        precondition(handle >= 0, "libdispatch gave no main-queue descriptor")
        return try OwnedDescriptor.lending(handle, to: { (fd: borrowing OwnedDescriptor) throws(SystemCallError) -> OwnedDescriptor in
            try Descriptor.duplicate(fd)
        })
    }

    /// Runs the blocks queued on the main queue. Main thread only. The
    /// corresponding C function is `_dispatch_main_queue_callback_4CF`.
    package static func drain() {
        precondition(ThreadIdentity.isMainThread, "the main dispatch queue is drained on the main thread only")
        _dispatch_main_queue_callback_4CF(nil)
    }
}
