// RunLoopSource: a custom input source (Apple's Run Loops guide: "Defining a Custom Input
// Source"; CFRunLoopSource version 0). It has three callbacks: schedule (added
// to a loop in a mode), perform (signalled, and the loop runs in one of its
// modes), cancel (removed from a mode, or invalidated).
//
// `signal()` may be called from any thread: it marks the source ready and
// wakes its loop if the loop sleeps, so the perform runs without waiting for
// any other event. Signals coalesce: a source signalled several times before
// its loop gets to it performs once. Ready sources perform in order of
// `order` (lower first), then in the order they were added.

import PortSystem
import Synchronization

public final class RunLoopSource: RunLoopItem, @unchecked Sendable {
    // Safe to share: `attachment` and `pendingSignal` are Mutexes; the
    // callbacks and `order` are immutable; `sequence` is written once, under
    // the loop lock, when first added.
    package let attachment = Mutex(LoopAttachment())
    /// A signal that arrived before the source was added to a loop.
    package let pendingSignal = Mutex(false)
    /// Lower performs first.
    public let order: Int
    var sequence: UInt64 = 0
    package let scheduleCallback: ((PCRunLoop, PCRunLoop.Mode) -> Void)?
    package let performCallback: (RunLoopSource) -> Void
    package let cancelCallback: ((PCRunLoop, PCRunLoop.Mode) -> Void)?

    /// Creates a custom source. The callbacks run on the loop's thread, but
    /// for `schedule` and `cancel`, which run on the thread that adds,
    /// removes or invalidates the source.
    public init(
        order: Int = 0,
        schedule: ((PCRunLoop, PCRunLoop.Mode) -> Void)? = nil,
        cancel: ((PCRunLoop, PCRunLoop.Mode) -> Void)? = nil,
        perform: @escaping (RunLoopSource) -> Void
    ) {
        self.order = order
        self.scheduleCallback = schedule
        self.cancelCallback = cancel
        self.performCallback = perform
    }

    public var isValid: Bool { isAttachedAndValid }

    /// Marks the source ready to perform. Safe from any thread.
    public func signal() {
        let loop: PCRunLoop? = attachment.withLockAnnotated { a in
            guard a.isValid else { return nil }
            if a.loop == nil { pendingSignal.withLockAnnotated { $0 = true } }
            return a.loop
        }
        loop?.markSignalled(self)
    }

    /// Removes the source from its loop for good, calling `cancel` for each
    /// mode it was in. Idempotent; safe from any thread.
    public func invalidate() {
        let (was, loop) = markInvalid()
        guard was else { return }
        loop?.removeEverywhere(self)
    }
}
