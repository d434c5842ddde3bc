// MonotonicInstant and WallClock: the kernel's clocks. Every deadline is
// CLOCK_MONOTONIC nanoseconds; WallClock (CLOCK_REALTIME) only dates what
// people read. The clock a run loop reads is chosen above this layer
// (PortRunLoop's RunLoopClock), so that timer logic is tested with a clock
// the test moves, not with sleeps.

import CPortSystem
import Glibc
import Synchronization

/// A point on the monotonic clock, in nanoseconds since an unspecified start.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// Later than any deadline anyone waits for.
    public static let distantFuture = MonotonicInstant(nanoseconds: UInt64.max / 2)

    /// The current time of CLOCK_MONOTONIC. The corresponding C function is `clock_gettime`.
    @inlinable @inline(__always)
    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    public static func + (a: Self, d: Duration) -> Self {
        // A zero duration (a timer's usual tolerance, added at every sleep)
        // skips the 128-bit arithmetic of Duration.components.
        if d == .zero { return a }
        let ns = d.nanosecondsClamped
        if ns >= 0 { return Self(nanoseconds: min(a.nanoseconds &+ UInt64(ns), distantFuture.nanoseconds)) }
        let back = UInt64(-ns)
        return Self(nanoseconds: a.nanoseconds > back ? a.nanoseconds - back : 0)
    }

    public static func - (a: Self, b: Self) -> Duration {
        if a >= b { return .nanoseconds(Int64(clamping: a.nanoseconds - b.nanoseconds)) }
        return .nanoseconds(-Int64(clamping: b.nanoseconds - a.nanoseconds))
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
    /// Whole nanoseconds (truncated toward zero), clamped to Int64. One
    /// 128-bit division: `components` costs two and a multiplication,
    /// on every deadline a request computes.
    @inlinable
    public var nanosecondsClamped: Int64 {
        Int64(clamping: attoseconds / 1_000_000_000)
    }
}

/// The wall clock, for timestamps people read ("since when"), never for
/// deadlines: it jumps when the system time is set.
package enum WallClock {
    /// Milliseconds since the Unix epoch (CLOCK_REALTIME). The corresponding
    /// C function is `clock_gettime`.
    package static func unixMilliseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(max(ts.tv_sec, 0)) &* 1000 &+ UInt64(ts.tv_nsec / 1_000_000)
    }
}
