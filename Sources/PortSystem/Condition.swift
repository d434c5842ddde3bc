// Condition: a pthread mutex with a condition variable on the monotonic
// clock, for threads that wait for each other's work (the name-server
// client's requests waiting for their replies, one thread reading for all).

import Glibc

@usableFromInline
package final class Condition: @unchecked Sendable {
    // Safe to share: the mutex and the condition variable are initialised
    // once in init, destroyed in deinit, and only ever touched through
    // pthread calls, which are thread-safe by definition.
    @usableFromInline let lock = Lock()
    private let cond: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        cond = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        let r = pthread_cond_init(cond, &attributes)
        pthread_condattr_destroy(&attributes)
        precondition(r == 0, "pthread_cond_init: \(r)")
    }

    deinit {
        pthread_cond_destroy(cond)
        cond.deallocate()
    }

    /// Runs `body` with the mutex held. Inlined, so that the caller's
    /// closure is not a generic call across modules.
    @inlinable @inline(__always)
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try lock.withLock(body)
    }

    /// With the mutex held (inside `withLock`): releases it, waits for a
    /// `broadcast` or `deadline` (nil: no bound), takes it again. Returns
    /// false when the deadline passed. Callers re-check their condition
    /// either way (wake-ups may be spurious).
    package func wait(until deadline: MonotonicInstant?) -> Bool {
        guard let deadline else {
            pthread_cond_wait(cond, lock.mutex)
            return true
        }
        let ns = deadline.nanoseconds
        var until = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
        return pthread_cond_timedwait(cond, lock.mutex, &until) != ETIMEDOUT
    }

    /// Wakes every waiter. Any thread, with or without the mutex.
    package func broadcast() { pthread_cond_broadcast(cond) }
}
