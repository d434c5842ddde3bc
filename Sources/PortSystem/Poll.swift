// Poll: poll(2): on one descriptor, for a sender that must wait for room in a
// full receiver's queue until a deadline ("send before date"); on several in Poll+Many.swift.

import CPortSystem
import Glibc

package enum Poll {
    /// Waits until `fd` is writable or `deadline` passes. Returns false on
    /// timeout. Hang-up and error conditions count as "ready": the send that
    /// follows reports them. The corresponding C function is `poll`.
    package static func waitWritable(_ fd: borrowing OwnedDescriptor, until deadline: MonotonicInstant) throws(SystemCallError) -> Bool {
        let fd = fd.rawValue
        while true {
            let now = MonotonicInstant.now()
            if now >= deadline { return false }
            let remaining = (deadline - now).nanosecondsClamped
            // Round up so that a wait never ends just before the deadline.
            let ms = Int32(clamping: (remaining + 999_999) / 1_000_000)
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            switch try SystemCall.run("poll", { Glibc.poll(&p, 1, ms) }) {
            case .done(let n) where n > 0: return true
            case .done, .wouldBlock: continue  // timed out this slice: re-check the deadline
            }
        }
    }
}
