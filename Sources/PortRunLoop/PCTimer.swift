// PCTimer: a timer source (Apple's Run Loops guide: "Timer Sources"; Foundation's Timer, hence
// the prefix). One-shot or repeating, with a tolerance window
// [fire date, fire date + tolerance] inside which the loop may fire it late
// to coalesce wake-ups.
//
// A repeating timer reschedules from its *scheduled* fire date: after firing
// at or after date d it next fires at d + k·interval, the first such instant
// after now, so missed fire times cause one firing and the grid never drifts.

import PortSystem
import Synchronization

public final class PCTimer: RunLoopItem, @unchecked Sendable {
    // Safe to share: `attachment` is a Mutex; `action` and `interval` are
    // immutable; `scheduledFireDate`, `scheduledTolerance`, `sequence`,
    // `heapGeneration` and `isFiring` are read and written only with the lock
    // of the loop the timer is attached to held (before attachment, only by
    // the thread that creates the timer).
    package let attachment = Mutex(LoopAttachment())
    package let action: (PCTimer) -> Void
    /// The period of a repeating timer; nil for a one-shot timer.
    public let interval: Duration?
    var scheduledFireDate: MonotonicInstant
    var scheduledTolerance: Duration
    var sequence: UInt64 = 0
    var heapGeneration: UInt64 = 0
    var isFiring = false

    /// A timer that first fires at `fireAt`, then every `interval` if given.
    /// `action` runs on the thread of the loop the timer is added to.
    public init(
        fireAt: MonotonicInstant, interval: Duration? = nil, tolerance: Duration = .zero,
        _ action: @escaping (PCTimer) -> Void
    ) {
        precondition(interval.map { $0 > .zero } ?? true, "a repeating timer needs a positive interval")
        precondition(tolerance >= .zero, "tolerance must not be negative")
        self.scheduledFireDate = fireAt
        self.interval = interval
        self.scheduledTolerance = tolerance
        self.action = action
    }

    /// A timer that fires `interval` from now (read on `clock`), repeating if asked.
    public convenience init(
        interval: Duration, repeats: Bool, tolerance: Duration = .zero,
        clock: any RunLoopClock = SystemMonotonicClock(), _ action: @escaping (PCTimer) -> Void
    ) {
        self.init(
            fireAt: clock.now() + interval, interval: repeats ? interval : nil, tolerance: tolerance, action)
    }

    /// Whether the timer can still fire.
    public var isValid: Bool { isAttachedAndValid }

    /// Whether the timer repeats.
    public var repeats: Bool { interval != nil }

    /// The next fire date as scheduled (not including tolerance)
    /// (`-[NSTimer fireDate]`). Setting it (`-[NSTimer setFireDate:]`,
    /// `CFRunLoopTimerSetNextFireDate`) moves the next firing, in every mode
    /// the timer is in; a repeating timer continues on the grid of the new
    /// date. Safe from any thread; wakes the loop so it sleeps for the new date.
    public var fireDate: MonotonicInstant {
        get { readScheduled { scheduledFireDate } }
        set {
            guard let loop = attachment.withLockAnnotated({ $0.loop }) else {
                scheduledFireDate = newValue
                return
            }
            loop.reschedule(self, at: newValue)
        }
    }

    /// How late the timer may fire to share a wake-up with others
    /// (`-[NSTimer tolerance]`): it fires in [fireDate, fireDate +
    /// tolerance], never before its fire date. Setting it
    /// (`-[NSTimer setTolerance:]`, `CFRunLoopTimerSetTolerance`) applies
    /// from the loop's next sleep, in every mode the timer is in. Not
    /// negative. Safe from any thread; wakes the loop so it sleeps for the
    /// new window.
    public var tolerance: Duration {
        get { readScheduled { scheduledTolerance } }
        set {
            precondition(newValue >= .zero, "tolerance must not be negative")
            guard let loop = attachment.withLockAnnotated({ $0.loop }) else {
                scheduledTolerance = newValue
                return
            }
            loop.withStateLock {
                scheduledTolerance = newValue
                loop.wakeIfSleeping()
            }
        }
    }

    /// Reads a scheduled field: under the lock of the loop the timer is in,
    /// which guards it there; directly while the timer is in none.
    private func readScheduled<T>(_ read: () -> T) -> T {
        if let loop = attachment.withLockAnnotated({ $0.loop }) {
            return loop.withStateLock(read)
        }
        return read()
    }

    /// `+[NSTimer scheduledTimerWithTimeInterval:repeats:block:]`: a timer
    /// that fires `interval` from now (repeating every `interval` if asked),
    /// added to the current thread's loop in `.default`.
    @discardableResult
    public static func scheduledTimer(
        withTimeInterval interval: Duration, repeats: Bool, block: @escaping (PCTimer) -> Void
    ) -> PCTimer {
        let loop = PCRunLoop.current
        let timer = PCTimer(fireAt: loop.clock.now() + interval, interval: repeats ? interval : nil, block)
        loop.add(timer, forMode: .default)
        return timer
    }

    /// Stops the timer for good and removes it from its loop. Idempotent; safe
    /// from any thread.
    public func invalidate() {
        let (was, loop) = markInvalid()
        guard was else { return }
        loop?.removeEverywhere(self)
    }

    /// Runs the action now, on the calling thread. A one-shot timer is then
    /// invalidated; a repeating timer keeps its schedule.
    public func fire() {
        guard isValid else { return }
        action(self)
        if interval == nil { invalidate() }
    }

    /// The fire date after `scheduled` that is on the grid and after `now`.
    package static func nextFireDate(
        scheduled: MonotonicInstant, interval: Duration, now: MonotonicInstant
    ) -> MonotonicInstant {
        let step = UInt64(max(interval.nanosecondsClamped, 1))
        guard now >= scheduled else { return scheduled + interval }
        let missed = (now.nanoseconds - scheduled.nanoseconds) / step + 1
        let (advance, o) = missed.multipliedReportingOverflow(by: step)
        if o { return .distantFuture }
        return MonotonicInstant(nanoseconds: min(scheduled.nanoseconds &+ advance, MonotonicInstant.distantFuture.nanoseconds))
    }
}
