// RunLoopObserver: called at given points of a loop's pass (Apple's Run Loops guide: "Run Loop
// Observers"): entry, before timers, before sources, before waiting, after
// waiting, exit. Observers of one activity are called in `order` (lower
// first), then in the order added. A one-shot observer is invalidated after
// its first call.

import PortSystem
import Synchronization

extension PCRunLoop {
    /// The points of a pass an observer can watch.
    public struct Activity: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let entry = Activity(rawValue: 1 << 0)
        public static let beforeTimers = Activity(rawValue: 1 << 1)
        public static let beforeSources = Activity(rawValue: 1 << 2)
        public static let beforeWaiting = Activity(rawValue: 1 << 5)
        public static let afterWaiting = Activity(rawValue: 1 << 6)
        public static let exit = Activity(rawValue: 1 << 7)
        public static let all: Activity = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

        public var description: String {
            switch self {
            case .entry: "entry"
            case .beforeTimers: "beforeTimers"
            case .beforeSources: "beforeSources"
            case .beforeWaiting: "beforeWaiting"
            case .afterWaiting: "afterWaiting"
            case .exit: "exit"
            default: "Activity(\(rawValue))"
            }
        }
    }
}

public final class RunLoopObserver: RunLoopItem, @unchecked Sendable {
    // Safe to share: `attachment` is a Mutex; everything else is immutable
    // but `sequence`, written once under the loop lock when first added.
    package let attachment = Mutex(LoopAttachment())
    public let activities: PCRunLoop.Activity
    public let repeats: Bool
    public let order: Int
    var sequence: UInt64 = 0
    package let callback: (RunLoopObserver, PCRunLoop.Activity) -> Void

    /// `callback` runs on the loop's thread with the activity observed.
    public init(
        activities: PCRunLoop.Activity, repeats: Bool = true, order: Int = 0,
        _ callback: @escaping (RunLoopObserver, PCRunLoop.Activity) -> Void
    ) {
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.callback = callback
    }

    public var isValid: Bool { isAttachedAndValid }

    /// Removes the observer from its loop for good. Idempotent; safe from any thread.
    public func invalidate() {
        let (was, loop) = markInvalid()
        guard was else { return }
        loop?.removeEverywhere(self)
    }
}
