// TimerLateness: how late a one-shot timer's action runs after its fire
// date, on a loop with nothing else to do. Each round adds a timer 1 ms
// ahead (zero tolerance), runs the loop until the action stops it, and takes
// action start - fire date. C baseline: c.timerfd.lateness.1ms (a timerfd
// armed for the same deadline, waited for in epoll_wait). Single thread,
// party 0.

import PortCore

enum TimerLateness {
    /// The fire time seen by the action; only the loop's thread touches it.
    private final class Fired: @unchecked Sendable {
        var at: UInt64 = 0
    }

    static func run(iterations: Int, warmup: Int = 20) {
        let thread = BenchThread {
            Placement.pin(party: 0)
            let loop = LoopAPI.current()
            var samples = Samples(capacity: iterations)
            for i in 0..<(warmup + iterations) {
                let fired = Fired()
                let fireAt = MonotonicInstant.now() + .milliseconds(1)
                _ = LoopAPI.addOneShotTimer(to: loop, fireAt: fireAt) {
                    fired.at = MonotonicInstant.now().nanoseconds
                    LoopAPI.stop(loop)
                }
                guard LoopAPI.runUntilStopped(loop, timeout: .seconds(1)), fired.at != 0 else {
                    Report.fail("a 1 ms timer did not fire within 1 s")
                }
                if i >= warmup { samples.append(fired.at &- fireAt.nanoseconds) }
            }
            Report.latency("portcore.runloop.timer.lateness.1ms", samples)
        }
        thread.join()
    }
}
