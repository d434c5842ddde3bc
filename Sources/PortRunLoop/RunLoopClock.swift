// RunLoopClock: where a run loop reads the time. The loop sleeps on
// CLOCK_MONOTONIC (SystemMonotonicClock); a clock the test moves
// (ManualClock) lets timer logic be tested without sleeps: the test moves it
// and runs passes with a zero timeout.

import PortSystem
import Synchronization

/// Where a run loop reads the time. The loop sleeps on CLOCK_MONOTONIC; a
/// clock other than the system's is for tests, which run passes with a zero
/// timeout after moving it.
public protocol RunLoopClock: Sendable {
    func now() -> MonotonicInstant
}

/// CLOCK_MONOTONIC.
public struct SystemMonotonicClock: RunLoopClock {
    public init() {}
    @inline(__always) public func now() -> MonotonicInstant { .now() }
}

/// A clock that moves only when told to.
public final class ManualClock: RunLoopClock {
    private let current: Mutex<MonotonicInstant>

    public init(start: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000)) {
        current = Mutex(start)
    }

    public func now() -> MonotonicInstant { current.withLockAnnotated { $0 } }

    /// Moves the clock forward by `d`.
    public func advance(by d: Duration) { current.withLockAnnotated { $0 = $0 + d } }

    /// Sets the clock to `instant`.
    public func set(_ instant: MonotonicInstant) { current.withLockAnnotated { $0 = instant } }
}
