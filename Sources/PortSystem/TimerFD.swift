// TimerFD: timerfd_create(2) on CLOCK_MONOTONIC. A run loop owns one and arms
// it for the earliest deadline of the mode it is running in.

import CPortSystem
import Glibc

@usableFromInline
package enum TimerFD {
    /// The corresponding C function is `timerfd_create(CLOCK_MONOTONIC)`.
    package static func create() throws(SystemCallError) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try SystemCall.must("timerfd_create") {
            timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
        })
    }

    /// Arms the timer to expire once at `deadline` (absolute, monotonic
    /// nanoseconds), or disarms it when `deadline` is nil. A deadline in the
    /// past expires at once. The corresponding C function is `timerfd_settime`.
    package static func arm(_ fd: borrowing OwnedDescriptor, deadline: UInt64?) throws(SystemCallError) {
        let fd = fd.rawValue
        var spec = itimerspec()
        if let deadline {
            // 0 would disarm; the kernel treats any past absolute time as due.
            let d = max(deadline, 1)
            spec.it_value.tv_sec = Int(d / 1_000_000_000)
            spec.it_value.tv_nsec = Int(d % 1_000_000_000)
        }
        _ = try SystemCall.must("timerfd_settime") {
            timerfd_settime(fd, Int32(TFD_TIMER_ABSTIME), &spec, nil)
        }
    }

    /// Clears the expiration count so level-triggered epoll stops reporting it.
    package static func drain(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) {
        let fd = fd.rawValue
        var expirations: UInt64 = 0
        _ = try SystemCall.run("read(timerfd)") { read(fd, &expirations, 8) }
    }
}
