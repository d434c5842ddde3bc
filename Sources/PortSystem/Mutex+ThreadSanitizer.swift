// Mutex+ThreadSanitizer: Synchronization.Mutex as ThreadSanitizer sees it.
//
// On Linux a contended Mutex is taken in `_lockSlow` (a spin, then
// FUTEX_LOCK_PI, where the kernel hands the lock over) and given back in
// `_unlockSlow`, inside the prebuilt standard library, which is not
// instrumented: ThreadSanitizer then sees no order between two critical
// sections of one mutex and reports the state they share as a data race
// (it did, once: two threads invalidating one source). `withLockAnnotated`
// is `withLock` that also tells ThreadSanitizer, in the build scripts/test
// makes for it (PORTD_TSAN), that the section acquires and releases the
// mutex; in every other build it is `withLock` itself. The library's
// mutexes are taken through it.

#if PORTD_TSAN
import CPortSystem
#endif
import Synchronization

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the acquisition and release visible to
    /// ThreadSanitizer (see the top of this file).
    @inlinable @inline(__always)
    package borrowing func withLockAnnotated<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if PORTD_TSAN
        let address = withUnsafePointer(to: self) { UnsafeMutableRawPointer(mutating: $0) }
        return try withLock { (value: inout sending Value) throws(E) -> sending Result in
            __tsan_acquire(address)
            defer { __tsan_release(address) }
            return try body(&value)
        }
        #else
        return try withLock(body)
        #endif
    }
}
