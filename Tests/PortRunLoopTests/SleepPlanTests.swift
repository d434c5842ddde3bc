// A pass that sleeps by what it saw under the lock in the previous pass
// (PCRunLoop.SleepPlan): every change made after that look and before the
// sleep, on the loop's own thread or on another one, must still be seen,
// or the loop sleeps through work it was given.
//
// Each test makes its change at exactly that point: in a port source's
// handler (after the look, on the loop's thread), or from another thread
// while a .beforeWaiting observer holds the loop just before its sleep. A
// loop that slept by a stale plan sleeps until the run's 5 s deadline and
// returns .timedOut instead of .stopped.

import Foundation
import Synchronization
import Testing
import PortSystem
import PortTestSupport
@testable import PortRunLoop

@Suite(.serialized) struct SleepPlanTests {
    /// Runs `change` on a new thread and waits until it returned.
    private static func onAnotherThread(_ change: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            change()
            done.signal()
        }
        done.wait()
    }

    @Test func aTimerAddedByAHandlerIsSleptFor() throws {
        let fd = try ReadyFD()
        let r = Recorder()
        LoopThread.run { loop in
            try! loop.add(PortSource(sharing: fd.fd) { _ in
                fd.drain()
                r.add("port")
                loop.add(PCTimer(fireAt: loop.clock.now() + .milliseconds(5)) { _ in
                    r.add("timer")
                    loop.stop()
                }, forMode: .default)
            }, forMode: .default)
            fd.makeReady()
            #expect(loop.runInMode(.default, timeout: .seconds(5)) == .stopped)
        }
        #expect(r.all == ["port", "timer"])
    }

    @Test func aTimerMovedByAHandlerIsSleptFor() throws {
        let fd = try ReadyFD()
        let r = Recorder()
        LoopThread.run { loop in
            // A stale plan wakes at the run's deadline, finds the timer due
            // and fires it then: late.
            let deadline = loop.clock.now() + .seconds(5)
            let timer = PCTimer(fireAt: .distantFuture) { _ in
                r.add(loop.clock.now() < deadline ? "timer" : "late timer")
                PCRunLoop.current.stop()
            }
            loop.add(timer, forMode: .default)
            try! loop.add(PortSource(sharing: fd.fd) { _ in
                fd.drain()
                r.add("port")
                timer.fireDate = loop.clock.now() + .milliseconds(5)
            }, forMode: .default)
            fd.makeReady()
            #expect(loop.runInMode(.default, before: deadline) == .stopped)
        }
        #expect(r.all == ["port", "timer"])
    }

    /// The loop handles a ready port (its look under the lock finds nothing
    /// to do), then, at the next pass's .beforeWaiting, another thread
    /// applies `change` while the loop waits for it.
    private static func changeFromAnotherThreadBeforeTheSleep(
        setUp: @escaping @Sendable (PCRunLoop) -> Void = { _ in },
        _ change: @escaping @Sendable (PCRunLoop) -> Void
    ) throws -> (PCRunLoop.RunResult, [String]) {
        let fd = try ReadyFD()
        let r = Recorder()
        let result = Mutex<PCRunLoop.RunResult?>(nil)
        LoopThread.run { loop in
            setUp(loop)
            try! loop.add(PortSource(sharing: fd.fd) { _ in
                fd.drain()
                r.add("port")
            }, forMode: .default)
            loop.add(RunLoopObserver(activities: .beforeWaiting) { _, _ in
                // Only the sleep after the port was handled: the first pass
                // finds the port ready and does not sleep.
                guard r.all == ["port"] else { return }
                r.add("change")
                onAnotherThread { change(loop) }
            }, forMode: .default)
            fd.makeReady()
            let end = loop.runInMode(.default, timeout: .seconds(5))
            result.withLock { $0 = end }
        }
        return (result.withLock { $0 }!, r.all)
    }

    @Test func aPerformQueuedFromAnotherThreadJustBeforeTheSleepRuns() throws {
        let (result, events) = try Self.changeFromAnotherThreadBeforeTheSleep { loop in
            loop.perform { PCRunLoop.current.stop() }
        }
        #expect(result == .stopped)
        #expect(events == ["port", "change"])
    }

    @Test func aTimerAddedFromAnotherThreadJustBeforeTheSleepFires() throws {
        let fired = Mutex(false)
        let (result, events) = try Self.changeFromAnotherThreadBeforeTheSleep { loop in
            loop.add(PCTimer(fireAt: loop.clock.now() + .milliseconds(5)) { _ in
                fired.withLock { $0 = true }
                PCRunLoop.current.stop()
            }, forMode: .default)
        }
        #expect(result == .stopped)
        #expect(fired.withLock { $0 })
        #expect(events == ["port", "change"])
    }

    @Test func aToleranceNarrowedFromAnotherThreadJustBeforeTheSleepIsSleptFor() throws {
        // Due in 2 s, but allowed to wait an hour: a plan made before the
        // change sleeps to the run's 5 s deadline. (Were it due before the
        // sleep, it would stop the run before the change: events would say.
        // 2 s leave a loaded machine ample time to reach the sleep.)
        let timer = Mutex<PCTimer?>(nil)
        let (result, events) = try Self.changeFromAnotherThreadBeforeTheSleep(setUp: { loop in
            let t = PCTimer(fireAt: loop.clock.now() + .seconds(2), tolerance: .seconds(3600)) { _ in
                PCRunLoop.current.stop()
            }
            loop.add(t, forMode: .default)
            timer.withLock { $0 = t }
        }) { _ in
            let t = timer.withLock { $0 }!
            t.tolerance = .zero
            #expect(t.tolerance == .zero)
        }
        #expect(result == .stopped)
        #expect(events == ["port", "change"])
    }

    @Test func aSourceSignalledFromAnotherThreadJustBeforeTheSleepIsPerformed() throws {
        let source = RunLoopSource { _ in PCRunLoop.current.stop() }
        let (result, events) = try Self.changeFromAnotherThreadBeforeTheSleep { loop in
            loop.add(source, forMode: .default)
            source.signal()
        }
        #expect(result == .stopped)
        #expect(events == ["port", "change"])
    }
}
