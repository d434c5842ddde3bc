// SystemThread: the pthread calls the layers above need, wrapped once: who
// the calling thread is, a detached thread running a C-convention entry
// point, and a per-thread slot holding one retained object (the run loop of
// each thread).
//
// Invariants: a ThreadSlot's object is retained while a thread holds it and
// released by the slot's destructor when the thread ends; the entry point of
// a new thread is a plain function, never a closure literal (a closure
// passed to pthread_create from a main-actor context traps in Swift 6).

import CPortSystem
import Glibc
import Synchronization

/// A thread's identity, comparable across threads. The corresponding C
/// functions are `pthread_self` and `pthread_equal`.
package struct ThreadIdentity: @unchecked Sendable {
    // Safe to share: a pthread_t is an opaque value only ever compared; nil
    // stands for the process's main thread, named from any thread.
    private let thread: pthread_t?

    /// The calling thread.
    @inline(__always)
    package static var current: ThreadIdentity { ThreadIdentity(thread: pthread_self()) }

    /// The process's main thread, whichever thread asks (its pthread_t cannot
    /// be read from another thread, so it is recognised by `isMainThread`).
    package static var main: ThreadIdentity { ThreadIdentity(thread: nil) }

    /// Whether the calling thread is this one.
    @inline(__always)
    package var isCurrent: Bool {
        guard let thread else { return Self.isMainThread }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Whether the calling thread is the process's main thread (its thread id
    /// is the process id). Asked on every run of the main loop, so the main
    /// thread's pthread_t is remembered the first time the main thread asks
    /// and compared from then on (no system call); the main thread lives as
    /// long as the process, so its pthread_t is never another thread's. The
    /// corresponding C functions are `gettid`, `getpid` and `pthread_self`.
    package static var isMainThread: Bool {
        let me = UInt(pthread_self())
        let known = mainPthread.load(ordering: .relaxed)
        if known != 0 { return known == me }
        guard port_gettid() == getpid() else { return false }
        mainPthread.store(me, ordering: .relaxed)
        return true
    }

    /// The main thread's pthread_t once seen; 0 before.
    private static let mainPthread = Atomic<UInt>(0)
}

package enum SystemThread {
    /// The entry point of a new thread.
    package typealias Entry = @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?

    /// Starts a detached thread running `entry(argument)`. The corresponding
    /// C functions are `pthread_create` and `pthread_detach`.
    package static func startDetached(_ entry: Entry, argument: UnsafeMutableRawPointer?) {
        var thread = pthread_t()
        let r = pthread_create(&thread, nil, entry, argument)
        precondition(r == 0, "pthread_create: \(r)")
        pthread_detach(thread)
    }
}

/// One object per thread, retained while the thread lives. The corresponding
/// C functions are `pthread_key_create`, `pthread_getspecific` and
/// `pthread_setspecific`.
package final class ThreadSlot<Object: AnyObject>: @unchecked Sendable {
    // Safe to share: `key` is written once in init; pthread's key calls are
    // thread-safe and each thread only sees its own value.
    private let key: pthread_key_t

    package init() {
        var key = pthread_key_t()
        let r = pthread_key_create(&key) { p in
            guard let p else { return }
            Unmanaged<AnyObject>.fromOpaque(p).release()
        }
        precondition(r == 0, "pthread_key_create: \(r)")
        self.key = key
    }

    /// The calling thread's object, if it has one.
    @inline(__always)
    package var value: Object? {
        guard let p = pthread_getspecific(key) else { return nil }
        // Only `set` stores here, and only an `Object`: no dynamic cast (it
        // was most of the cost of `PCRunLoop.current`, read on every request).
        return Unmanaged<Object>.fromOpaque(p).takeUnretainedValue()
    }

    /// Gives the calling thread `object` (retained until the thread ends).
    /// The thread must not have one yet.
    package func set(_ object: Object) {
        precondition(pthread_getspecific(key) == nil, "ThreadSlot: the thread already has an object")
        pthread_setspecific(key, Unmanaged<AnyObject>.passRetained(object).toOpaque())
    }
}
