// PCThread: a handle to a thread, to reach its run loop from any other thread
// (Foundation's Thread / NSThread, hence the prefix): the target of
// `performSelector:onThread:withObject:waitUntilDone:` and of
// `+[NSThread detachNewThreadWithBlock:]`.
//
// A thread's loop is made on first use by whoever asks first: the thread
// itself (`PCRunLoop.current`) or another thread through the handle
// (`thread.runLoop`). Both give the same object, so reaching a thread needs
// no cooperation from it beyond running its loop.
//
// Invariants: one handle per thread (`current` is kept in a thread slot;
// `main` is one object); a handle's loop, once made, never changes; the loop
// is owned by the handle's thread (only that thread runs it).

import PortSystem
import Synchronization

public final class PCThread: @unchecked Sendable {
    // Safe to share: `identity` is immutable; `loopSlot` is read and written
    // only with `loopLock` held. A pthread mutex (PortSystem's Lock), not
    // Synchronization's Mutex: the loop made here is handed to another
    // thread through this lock, and ThreadSanitizer sees the ordering a
    // pthread mutex gives, not that of Mutex's contended path (futex calls
    // inside the uninstrumented runtime), which it reported as a race.
    /// The thread's identity; only compared.
    package let identity: ThreadIdentity
    private let loopLock = Lock()
    private var loopSlot: PCRunLoop?

    private init(identity: ThreadIdentity) { self.identity = identity }

    /// The calling thread's handle (`+[NSThread currentThread]`), made on
    /// first use. Keep it, hand it to other threads: it reaches this
    /// thread's loop from anywhere.
    public static var current: PCThread {
        if ThreadIdentity.isMainThread { return main }
        if let t = currentThread.value { return t }
        let t = PCThread(identity: .current)
        currentThread.set(t)
        return t
    }

    /// The process's main thread (`+[NSThread mainThread]`); its `runLoop`
    /// is `PCRunLoop.main`.
    public static let main = PCThread(identity: .main)

    /// Whether the calling thread is this one.
    public var isCurrent: Bool { identity.isCurrent }

    /// Whether this is the process's main thread.
    public var isMainThread: Bool { self === PCThread.main }

    /// This thread's run loop, made on first use from any thread; the object
    /// the thread itself gets as `PCRunLoop.current`.
    public var runLoop: PCRunLoop {
        if isMainThread { return PCRunLoop.main }
        return loopLock.withLock {
            if let l = loopSlot { return l }
            let l = PCRunLoop.make(owner: identity)
            loopSlot = l
            return l
        }
    }

    /// `performSelector:onThread:withObject:waitUntilDone:modes:`: queues
    /// `body` on this thread's loop, to run at its next pass in one of
    /// `modes`. Runs when the thread runs its loop in one of them, delivered
    /// as a source of the loop, as Foundation delivers it: the thread's
    /// `run(mode:before:)` returns after it (see
    /// `PCRunLoop.perform(inModes:waitUntilDone:_:)`). Safe from any thread.
    public func perform(
        inModes modes: [PCRunLoop.Mode] = [.common], waitUntilDone: Bool = false,
        _ body: @escaping @Sendable () -> Void
    ) {
        runLoop.perform(inModes: modes, waitUntilDone: waitUntilDone, body)
    }

    /// `+[NSThread detachNewThreadWithBlock:]`: starts a thread that runs
    /// `body`, and returns its handle at once. Work can be performed on the
    /// new thread's loop through the handle before `body` even starts; it
    /// runs when `body` runs the loop (`PCRunLoop.current.run()` and kin).
    @discardableResult
    public static func detachNewThread(_ body: @escaping @Sendable () -> Void) -> PCThread {
        let start = ThreadStart(body)
        SystemThread.startDetached(pcThreadMain, argument: Unmanaged.passRetained(start).toOpaque())
        start.ready.wait()
        return start.handle.withLockAnnotated { $0! }
    }
}

/// What a new thread receives: its body, and where it leaves its handle.
private final class ThreadStart: Sendable {
    let body: @Sendable () -> Void
    let handle = Mutex<PCThread?>(nil)
    let ready = Completion()
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// The entry point of threads made by `detachNewThread` (a C-convention
/// function: a closure literal passed to pthread_create traps in Swift 6).
private func pcThreadMain(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let start = Unmanaged<ThreadStart>.fromOpaque(arg!).takeRetainedValue()
    let me = PCThread.current
    start.handle.withLockAnnotated { $0 = me }
    start.ready.signal()
    start.body()
    return nil
}

/// Each thread's handle; released when the thread ends.
private let currentThread = ThreadSlot<PCThread>()
