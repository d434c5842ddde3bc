// Epoll: epoll(7). One instance per run-loop mode; descriptors are
// level-triggered and identified by a 64-bit token, never by pointer, so an
// event for a source removed earlier in the same batch is simply not found.

import CPortSystem
import Glibc

@usableFromInline
enum Epoll {
    struct Events: OptionSet, Sendable {
        let rawValue: UInt32
        static let readable = Events(rawValue: EPOLLIN.rawValue)
        static let writable = Events(rawValue: EPOLLOUT.rawValue)
        static let hangUp = Events(rawValue: EPOLLHUP.rawValue)
        static let readHangUp = Events(rawValue: EPOLLRDHUP.rawValue)
        static let error = Events(rawValue: EPOLLERR.rawValue)
    }

    /// The corresponding C function is `epoll_create1` (with `EPOLL_CLOEXEC`).
    static func create() throws(SystemCallError) -> Int32 {
        try SystemCall.must("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    /// The corresponding C function is `epoll_ctl(EPOLL_CTL_ADD)`.
    static func add(_ epfd: Int32, fd: Int32, events: Events, token: UInt64) throws(SystemCallError) {
        var ev = epoll_event()
        ev.events = events.rawValue
        ev.data.u64 = token
        _ = try SystemCall.must("epoll_ctl(ADD)") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) }
    }

    /// The corresponding C function is `epoll_ctl(EPOLL_CTL_MOD)`.
    static func modify(_ epfd: Int32, fd: Int32, events: Events, token: UInt64) throws(SystemCallError) {
        var ev = epoll_event()
        ev.events = events.rawValue
        ev.data.u64 = token
        _ = try SystemCall.must("epoll_ctl(MOD)") { epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) }
    }

    /// The corresponding C function is `epoll_ctl(EPOLL_CTL_DEL)`. ENOENT is
    /// ignored: removing what is not there is idempotent.
    static func remove(_ epfd: Int32, fd: Int32) throws(SystemCallError) {
        do {
            _ = try SystemCall.must("epoll_ctl(DEL)") { epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil) }
        } catch where error.errno == .noSuchFileOrDirectory {
        }
    }

    /// The corresponding C function is `epoll_wait`; `timeoutMilliseconds` -1
    /// blocks, 0 polls. Returns the number of events written.
    @inline(__always)
    static func wait(
        _ epfd: Int32, into buffer: UnsafeMutablePointer<epoll_event>, capacity: Int32, timeoutMilliseconds: Int32
    ) throws(SystemCallError) -> Int {
        // EINTR is retried by SystemCall.run; a run loop's deadline is
        // re-checked by its caller, so a retry never oversleeps a timer (the
        // timerfd carries timers, not this timeout).
        switch try SystemCall.run("epoll_wait", { epoll_wait(epfd, buffer, capacity, timeoutMilliseconds) }) {
        case .done(let n): return Int(n)
        case .wouldBlock: return 0
        }
    }
}
