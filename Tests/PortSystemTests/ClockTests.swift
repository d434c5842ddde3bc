// Clock: Duration to whole nanoseconds (truncated toward zero, clamped to
// Int64) and MonotonicInstant arithmetic with it (clamped at zero and at
// distantFuture), the conversion every deadline goes through.

import Testing

@testable import PortSystem

@Suite struct ClockTests {
    @Test func durationsBecomeWholeNanosecondsTruncatedAndClamped() {
        #expect(Duration.seconds(30).nanosecondsClamped == 30_000_000_000)
        #expect(Duration.milliseconds(5).nanosecondsClamped == 5_000_000)
        #expect(Duration.zero.nanosecondsClamped == 0)
        #expect(Duration.nanoseconds(-7).nanosecondsClamped == -7)
        // Fractions of a nanosecond are cut toward zero, on both sides.
        #expect((Duration.nanoseconds(3) + .seconds(1e-10)).nanosecondsClamped == 3)
        #expect((Duration.nanoseconds(-3) - .seconds(1e-10)).nanosecondsClamped == -3)
        #expect((Duration.seconds(-3) + .nanoseconds(1)).nanosecondsClamped == -2_999_999_999)
        // Beyond Int64 nanoseconds (about 292 years): clamped.
        #expect(Duration.seconds(Int64.max).nanosecondsClamped == .max)
        #expect(Duration.seconds(Int64.min).nanosecondsClamped == .min)
        #expect(Duration.seconds(9_223_372_037).nanosecondsClamped == .max)
        #expect(Duration.seconds(9_223_372_036).nanosecondsClamped == 9_223_372_036_000_000_000)
    }

    @Test func instantPlusDurationIsClampedAtZeroAndDistantFuture() {
        let t = MonotonicInstant(nanoseconds: 1_000)
        #expect(t + .zero == t)
        #expect((t + .nanoseconds(5)).nanoseconds == 1_005)
        #expect((t + .nanoseconds(-400)).nanoseconds == 600)
        #expect((t + .seconds(-1)).nanoseconds == 0)
        #expect(t + .seconds(Int64.max) == .distantFuture)
    }
}
