// Timers (item 7) with a clock the test moves, and the timer heap itself.

import Foundation
import Synchronization
import Testing
import PortSystem
import PortTestSupport
@testable import PortRunLoop

@Suite(.serialized) struct RunLoopTimerTests {
    /// A loop on a manual clock; passes run with a zero timeout (no sleeping).
    func withManualLoop(_ body: @escaping @Sendable (PCRunLoop, ManualClock) -> Void) {
        LoopThread.run { _ in
            let clock = ManualClock()
            let loop = try! PCRunLoop.detached(clock: clock)
            body(loop, clock)
        }
    }

    @Test func oneShotFiresWhenDueOnlyOnce() {
        let r = Recorder()
        withManualLoop { loop, clock in
            let t = PCTimer(fireAt: clock.now() + .seconds(10)) { _ in r.add("fire") }
            loop.add(t, forMode: .default)
            loop.runInMode(.default, timeout: .zero)
            #expect(r.all.isEmpty)
            clock.advance(by: .seconds(10))
            // A zero timeout has passed by the end of the pass (CFRunLoop checks it before emptiness).
            #expect(loop.runInMode(.default, timeout: .zero) == .timedOut)
            #expect(r.all == ["fire"])
            #expect(loop.runInMode(.default, timeout: .zero) == .finished)
            #expect(!t.isValid)
        }
    }

    @Test func repeatingTimerStaysOnItsGridAndFiresOnceForMissedTimes() {
        let r = Recorder()
        withManualLoop { loop, clock in
            let start = clock.now()
            let t = PCTimer(fireAt: start + .seconds(10), interval: .seconds(10)) { _ in
                r.add("fire@\((clock.now() - start).components.seconds)")
            }
            loop.add(t, forMode: .default)
            clock.advance(by: .seconds(13))  // late: fires at 13
            loop.runInMode(.default, timeout: .zero)
            #expect(t.fireDate == start + .seconds(20))  // from the scheduled 10, not the actual 13
            clock.advance(by: .seconds(22))  // now 35: 20 and 30 missed
            loop.runInMode(.default, timeout: .zero)
            #expect(t.fireDate == start + .seconds(40))
            clock.advance(by: .seconds(5))  // 40
            loop.runInMode(.default, timeout: .zero)
            t.invalidate()
        }
        #expect(r.all == ["fire@13", "fire@35", "fire@40"])
    }

    @Test func equalFireDatesFireInTheOrderAdded() {
        let r = Recorder()
        withManualLoop { loop, clock in
            let when = clock.now() + .seconds(1)
            for i in 0..<20 { loop.add(PCTimer(fireAt: when) { _ in r.add("\(i)") }, forMode: .default) }
            loop.add(PCTimer(fireAt: when + .milliseconds(-1)) { _ in r.add("early") }, forMode: .default)
            clock.advance(by: .seconds(1))
            loop.runInMode(.default, timeout: .zero)
        }
        #expect(r.all == ["early"] + (0..<20).map { "\($0)" })
    }

    @Test func timersDoNotFireInModesTheyAreNotIn() {
        let r = Recorder()
        withManualLoop { loop, clock in
            loop.add(PCTimer(fireAt: clock.now()) { _ in r.add("A") }, forMode: "A")
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: "B")
            clock.advance(by: .seconds(1))
            loop.runInMode("B", timeout: .zero)
            #expect(r.all.isEmpty)
            loop.runInMode("A", timeout: .zero)
            #expect(r.all == ["A"])
        }
    }

    @Test func timersDoNotFireWhileAHandlerRuns() throws {
        let fd = try ReadyFD()
        let r = Recorder()
        withManualLoop { loop, clock in
            loop.add(PCTimer(fireAt: clock.now() + .seconds(1)) { _ in r.add("timer") }, forMode: .default)
            try! loop.add(PortSource(sharing: fd.fd) { _ in
                fd.drain()
                r.add("handler begins")
                clock.advance(by: .seconds(5))  // the timer is due now, but this handler is running
                r.add("handler ends")
            }, forMode: .default)
            fd.makeReady()
            loop.runInMode(.default, timeout: .zero)
            loop.runInMode(.default, timeout: .zero)
        }
        #expect(r.all == ["handler begins", "handler ends", "timer"])
    }

    @Test func fireRunsNowAndInvalidatesOnlyOneShots() {
        let r = Recorder()
        withManualLoop { loop, clock in
            let once = PCTimer(fireAt: clock.now() + .seconds(100)) { _ in r.add("once") }
            let rep = PCTimer(fireAt: clock.now() + .seconds(100), interval: .seconds(100)) { _ in r.add("rep") }
            loop.add(once, forMode: .default)
            loop.add(rep, forMode: .default)
            once.fire()
            rep.fire()
            #expect(!once.isValid)
            #expect(rep.isValid)
            #expect(rep.fireDate == clock.now() + .seconds(100))
            once.fire()  // invalid: nothing
            rep.invalidate()
            #expect(loop.runInMode(.default, timeout: .zero) == .finished)
        }
        #expect(r.all == ["once", "rep"])
    }

    @Test func toleranceWindowsCoalesceWakeUps() {
        // The heap's wake deadline is the earliest end of any window.
        var heap = TimerHeap()
        let base = MonotonicInstant(nanoseconds: 1_000_000_000)
        let a = PCTimer(fireAt: base + .milliseconds(10), tolerance: .milliseconds(50)) { _ in }
        let b = PCTimer(fireAt: base + .milliseconds(30), tolerance: .milliseconds(5)) { _ in }
        let c = PCTimer(fireAt: base + .milliseconds(100)) { _ in }
        for (i, t) in [a, b, c].enumerated() { t.sequence = UInt64(i + 1); heap.push(t) }
        #expect(heap.wakeDeadline() == base + .milliseconds(35))  // b's window ends first
        // And when the loop wakes at 35, a (due since 10) fires with b: one wake-up for both.
        #expect(heap.popDue(now: base + .milliseconds(35)) === a)
        #expect(heap.popDue(now: base + .milliseconds(35)) === b)
        #expect(heap.popDue(now: base + .milliseconds(35)) == nil)
    }

    @Test func aChangedToleranceMovesTheWakeDeadline() {
        // -[NSTimer setTolerance:]: set before and after the timer is in a
        // loop, read back, and the window the loop sleeps to follows it.
        let base = MonotonicInstant(nanoseconds: 1_000_000_000)
        let a = PCTimer(fireAt: base + .milliseconds(10)) { _ in }
        a.tolerance = .milliseconds(5)
        #expect(a.tolerance == .milliseconds(5))
        var heap = TimerHeap()
        a.sequence = 1
        heap.push(a)
        #expect(heap.wakeDeadline() == base + .milliseconds(15))
        a.tolerance = .milliseconds(40)
        #expect(heap.wakeDeadline() == base + .milliseconds(50))
        withManualLoop { loop, clock in
            let t = PCTimer(fireAt: clock.now() + .seconds(1)) { _ in }
            loop.add(t, forMode: .default)
            t.tolerance = .milliseconds(250)
            #expect(t.tolerance == .milliseconds(250))
            t.invalidate()
        }
    }

    @Test func timerWithToleranceFiresInsideItsWindowOnTheRealClock() {
        let lateness = Mutex<Duration?>(nil)
        LoopThread.run { loop in
            let due = loop.clock.now() + .milliseconds(20)
            loop.add(PCTimer(fireAt: due, tolerance: .milliseconds(10)) { _ in
                lateness.withLock { $0 = MonotonicInstant.now() - due }
            }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(5))
        }
        let l = lateness.withLock { $0 }!
        #expect(l >= .zero)
    }

    @Test func heapDropsStaleEntriesOfRescheduledTimers() {
        var heap = TimerHeap()
        let t = PCTimer(fireAt: MonotonicInstant(nanoseconds: 10), interval: .nanoseconds(10)) { _ in }
        t.sequence = 1
        for i in 0..<1000 {
            heap.push(t)
            t.heapGeneration += 1
            t.scheduledFireDate = MonotonicInstant(nanoseconds: UInt64(20 + i * 10))
        }
        heap.push(t)
        #expect(heap.entries.count < 100)
        #expect(heap.peekLive()?.fireDate == t.scheduledFireDate)
    }

    @Test func nextFireDateArithmetic() {
        let s = MonotonicInstant(nanoseconds: 100)
        #expect(PCTimer.nextFireDate(scheduled: s, interval: .nanoseconds(10), now: MonotonicInstant(nanoseconds: 100)).nanoseconds == 110)
        #expect(PCTimer.nextFireDate(scheduled: s, interval: .nanoseconds(10), now: MonotonicInstant(nanoseconds: 135)).nanoseconds == 140)
        #expect(PCTimer.nextFireDate(scheduled: s, interval: .nanoseconds(10), now: MonotonicInstant(nanoseconds: 140)).nanoseconds == 150)
    }
}
