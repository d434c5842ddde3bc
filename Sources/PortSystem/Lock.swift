// Lock: a pthread mutex on the heap (a pthread_mutex_t must not move). Used
// for state whose values are not Sendable (class references to sources and
// timers), where Synchronization.Mutex's `sending` rules get in the way.

import Glibc

@usableFromInline
package final class Lock: @unchecked Sendable {
    // Safe to share: the mutex is initialised once in init, destroyed in
    // deinit, and only ever touched through pthread calls, which are
    // thread-safe by definition.
    @usableFromInline package let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        let r = pthread_mutex_init(mutex, nil)
        precondition(r == 0, "pthread_mutex_init: \(r)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable @inline(__always)
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A one-shot completion flag another thread can wait for (a perform request
/// with `waitUntilDone`).
package final class Completion: @unchecked Sendable {
    // Safe to share: `done` is read and written only with `mutex` held; the
    // condition variable is used only with that mutex.
    private let lock = Lock()
    private let cond: UnsafeMutablePointer<pthread_cond_t>
    private var done = false

    package init() {
        cond = .allocate(capacity: 1)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        cond.deallocate()
    }

    package func signal() {
        pthread_mutex_lock(lock.mutex)
        done = true
        pthread_cond_broadcast(cond)
        pthread_mutex_unlock(lock.mutex)
    }

    package func wait() {
        pthread_mutex_lock(lock.mutex)
        while !done { pthread_cond_wait(cond, lock.mutex) }
        pthread_mutex_unlock(lock.mutex)
    }

    /// Waits at most `timeout`; returns whether the completion was signalled.
    package func wait(timeout: Duration) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let ns = Int(timeout.nanosecondsClamped) + now.tv_nsec
        var until = timespec(tv_sec: now.tv_sec + ns / 1_000_000_000, tv_nsec: ns % 1_000_000_000)
        pthread_mutex_lock(lock.mutex)
        while !done {
            if pthread_cond_timedwait(cond, lock.mutex, &until) == ETIMEDOUT { break }
        }
        let result = done
        pthread_mutex_unlock(lock.mutex)
        return result
    }
}
