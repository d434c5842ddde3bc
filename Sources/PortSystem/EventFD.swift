// EventFD: eventfd(2), the run loop's wake-up signal. Any thread may write;
// the owning loop drains it after a wait. Writes coalesce in the counter.

import CPortSystem
import Glibc

@usableFromInline
package enum EventFD {
    /// The corresponding C function is `eventfd` (`EFD_CLOEXEC | EFD_NONBLOCK`).
    package static func create() throws(SystemCallError) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try SystemCall.must("eventfd") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) })
    }

    /// Adds one to the counter. EAGAIN (counter saturated) means a wake-up is
    /// already pending, which is all a signal needs.
    package static func signal(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) {
        let fd = fd.rawValue
        var one: UInt64 = 1
        _ = try SystemCall.run("write(eventfd)") { write(fd, &one, 8) }
    }

    /// Resets the counter; returns false when nothing was pending.
    @discardableResult
    package static func drain(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Bool {
        let fd = fd.rawValue
        var value: UInt64 = 0
        switch try SystemCall.run("read(eventfd)", { read(fd, &value, 8) }) {
        case .done: return true
        case .wouldBlock: return false
        }
    }
}
