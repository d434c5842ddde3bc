// Lock: a pthread mutex on the heap (a pthread_mutex_t must not move). Used
// for state whose values are not Sendable (class references to sources and
// timers), where Synchronization.Mutex's `sending` rules get in the way.
//
// One allocation per lock: the mutex lives in the tail of a ManagedBuffer
// (whose elements never move), not in a block of its own beside an object
// that points to it. A Lock is a value holding that buffer: copies share the
// one mutex, which is destroyed when the last copy goes. (Each request a
// port serves makes a one-shot reply right, and so a lock: issue 13 counts
// allocations per message.)

import Glibc

@usableFromInline
package struct Lock: @unchecked Sendable {
    // Safe to share: the mutex is initialised once in init, destroyed in
    // the storage's deinit, and only ever touched through pthread calls,
    // which are thread-safe by definition.
    @usableFromInline
    final class Storage: ManagedBuffer<Void, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    /// Keeps the mutex's memory alive as long as any copy of the lock.
    @usableFromInline let storage: Storage
    /// The mutex, in `storage`'s tail.
    @usableFromInline package let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        let created = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in }, to: Storage.self)
        let m = created.withUnsafeMutablePointerToElements { $0 }
        let r = pthread_mutex_init(m, nil)
        precondition(r == 0, "pthread_mutex_init: \(r)")
        storage = created
        mutex = m
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
