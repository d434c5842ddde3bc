// Poll+Many: poll(2) without a run loop, with a timeout: on one descriptor,
// or on two or three at once, for a process that feeds one pipe while it drains
// another (a child's stdin and stdout), or waits for one of two events (a
// child's exit, a signal). The descriptors are only lent for the wait.

import CPortSystem
import Glibc

extension Poll {
    /// Readiness as poll(2) reports it.
    package struct Events: OptionSet, Sendable, Hashable {
        package let rawValue: Int16
        package init(rawValue: Int16) { self.rawValue = rawValue }
        package static let readable = Events(rawValue: Int16(POLLIN))
        package static let writable = Events(rawValue: Int16(POLLOUT))
        /// The peer hung up (always reported, never needs asking for).
        package static let hangUp = Events(rawValue: Int16(POLLHUP))
        /// An error condition (always reported).
        package static let error = Events(rawValue: Int16(POLLERR))
        /// The peer shut down its writing half (POLLRDHUP, a Linux extension).
        package static let readHangUp = Events(rawValue: 0x2000)
    }

    /// Waits until `fd` is ready for `events` (hang-up and error always
    /// count) or `timeout` passes (nil: no bound); returns what it reported,
    /// empty on timeout. The corresponding C function is `poll`.
    package static func wait(
        _ fd: borrowing OwnedDescriptor, for events: Events, timeout: Duration?
    ) throws(SystemCallError) -> Events {
        try wait([(fd.rawValue, events)], timeout: timeout)[0]
    }

    /// Waits until `a` is ready for `aEvents` or `b` for `bEvents`, or
    /// `timeout` passes (nil: no bound); returns what each reported, both
    /// empty on timeout. The corresponding C function is `poll`.
    package static func wait(
        _ a: borrowing OwnedDescriptor, for aEvents: Events, _ b: borrowing OwnedDescriptor, for bEvents: Events,
        timeout: Duration?
    ) throws(SystemCallError) -> (Events, Events) {
        let ready = try wait([(a.rawValue, aEvents), (b.rawValue, bEvents)], timeout: timeout)
        return (ready[0], ready[1])
    }

    /// Waits until one of `a`, `b` and `c` is ready for its events, or
    /// `timeout` passes (nil: no bound); returns what each reported, all
    /// empty on timeout. The corresponding C function is `poll`.
    package static func wait(
        _ a: borrowing OwnedDescriptor, for aEvents: Events, _ b: borrowing OwnedDescriptor, for bEvents: Events,
        _ c: borrowing OwnedDescriptor, for cEvents: Events, timeout: Duration?
    ) throws(SystemCallError) -> (Events, Events, Events) {
        let ready = try wait([(a.rawValue, aEvents), (b.rawValue, bEvents), (c.rawValue, cEvents)], timeout: timeout)
        return (ready[0], ready[1], ready[2])
    }

    /// Waits until one of `entries` is ready or `timeout` passes; returns
    /// what each one reported, all empty on timeout. An interrupted wait
    /// resumes with the time left.
    private static func wait(_ entries: [(fd: Int32, events: Events)], timeout: Duration?) throws(SystemCallError) -> [Events] {
        let deadline = timeout.map { MonotonicInstant.now() + $0 }
        var fds = entries.map { pollfd(fd: $0.fd, events: $0.events.rawValue, revents: 0) }
        while true {
            var ms: Int32 = -1
            if let deadline {
                let left = deadline - MonotonicInstant.now()
                ms = left <= .zero ? 0 : Int32(clamping: (left.nanosecondsClamped + 999_999) / 1_000_000)
            }
            // Not SystemCall.run: its EINTR retry would restart the full timeout.
            let r = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), ms) }
            if r >= 0 { return fds.map { Events(rawValue: $0.revents) } }
            let e = port_errno()
            if e == EINTR { continue }
            throw SystemCallError(call: "poll", errno: .init(rawValue: e))
        }
    }
}
