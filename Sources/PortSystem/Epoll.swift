// Epoll: epoll(7). One instance per run-loop mode; descriptors are
// level-triggered and identified by a 64-bit token, never by pointer, so an
// event for a source removed earlier in the same batch is simply not found.
// A watched descriptor is lent to `add` and `remove`: the set does not own
// it, and its owner removes it before closing it.

import CPortSystem
import Glibc

@usableFromInline
package enum Epoll {
    package struct Events: OptionSet, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let readable = Events(rawValue: EPOLLIN.rawValue)
        package static let writable = Events(rawValue: EPOLLOUT.rawValue)
        package static let hangUp = Events(rawValue: EPOLLHUP.rawValue)
        package static let readHangUp = Events(rawValue: EPOLLRDHUP.rawValue)
        package static let error = Events(rawValue: EPOLLERR.rawValue)
    }

    /// The corresponding C function is `epoll_create1` (with `EPOLL_CLOEXEC`).
    package static func create() throws(SystemCallError) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try SystemCall.must("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) })
    }

    /// The corresponding C function is `epoll_ctl(EPOLL_CTL_ADD)`.
    package static func add(
        _ epoll: borrowing OwnedDescriptor, _ fd: borrowing OwnedDescriptor, events: Events, token: UInt64
    ) throws(SystemCallError) {
        let epfd = epoll.rawValue, fd = fd.rawValue
        var ev = epoll_event()
        ev.events = events.rawValue
        ev.data.u64 = token
        _ = try SystemCall.must("epoll_ctl(ADD)") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) }
    }

    /// The corresponding C function is `epoll_ctl(EPOLL_CTL_MOD)`.
    package static func modify(
        _ epoll: borrowing OwnedDescriptor, _ fd: borrowing OwnedDescriptor, events: Events, token: UInt64
    ) throws(SystemCallError) {
        let epfd = epoll.rawValue, fd = fd.rawValue
        var ev = epoll_event()
        ev.events = events.rawValue
        ev.data.u64 = token
        _ = try SystemCall.must("epoll_ctl(MOD)") { epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) }
    }

    /// The corresponding C function is `epoll_ctl(EPOLL_CTL_DEL)`. ENOENT is
    /// ignored: removing what is not there is idempotent.
    package static func remove(_ epoll: borrowing OwnedDescriptor, _ fd: borrowing OwnedDescriptor) throws(SystemCallError) {
        let epfd = epoll.rawValue, fd = fd.rawValue
        do {
            _ = try SystemCall.must("epoll_ctl(DEL)") { epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil) }
        } catch where error.errno == .noSuchFileOrDirectory {
        }
    }

    /// Room for the events of one `epoll_wait`, allocated once and reused;
    /// each event is read back as its token.
    @usableFromInline
    package final class EventBuffer {
        @usableFromInline package let events: UnsafeMutablePointer<epoll_event>
        @usableFromInline package let capacity: Int32

        package init(capacity: Int32) {
            self.capacity = capacity
            events = .allocate(capacity: Int(capacity))
        }

        deinit { events.deallocate() }

        /// The token of the `i`th event of the last wait.
        @inlinable @inline(__always)
        package func token(at i: Int) -> UInt64 { events[i].data.u64 }
    }

    /// The corresponding C function is `epoll_wait`; `timeoutMilliseconds` -1
    /// blocks, 0 polls. Returns the number of events written to `buffer`.
    @inlinable @inline(__always)
    package static func wait(
        _ epoll: borrowing OwnedDescriptor, into buffer: EventBuffer, timeoutMilliseconds: Int32
    ) throws(SystemCallError) -> Int {
        let epfd = epoll.rawValue
        let events = buffer.events, capacity = buffer.capacity
        // EINTR is retried by SystemCall.run; a run loop's deadline is
        // re-checked by its caller, so a retry never oversleeps a timer (the
        // timerfd carries timers, not this timeout).
        switch try SystemCall.run("epoll_wait", { epoll_wait(epfd, events, capacity, timeoutMilliseconds) }) {
        case .done(let n): return Int(n)
        case .wouldBlock: return 0
        }
    }
}
