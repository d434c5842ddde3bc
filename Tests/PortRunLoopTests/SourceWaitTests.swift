// The run of a mode that holds one port source and nothing else
// (PCRunLoop.waitAlone, what a request's private reply mode runs): the
// same results as runInMode, a fallback as soon as the mode holds anything
// else, and every wake-up of a sleeping loop reaching it.

import Glibc
import Synchronization
import Testing
import PortSystem
import PortTestSupport
@testable import PortRunLoop

@Suite(.serialized) struct SourceWaitTests {
    /// Spins (yielding) until `loop` sleeps in a wait with its wake-up
    /// descriptor drained: the point at which a change from another thread
    /// must wake it, and after which an earlier wake-up has been taken.
    private static func untilSleeping(_ loop: PCRunLoop) {
        while true {
            if loop.withStateLock({ loop.sleeping }) {
                var p = pollfd(fd: loop.wakeFD.rawValue, events: Int16(POLLIN), revents: 0)
                let wakePending = poll(&p, 1, 0) > 0
                if !wakePending { return }
            }
            sched_yield()
        }
    }

    @Test func aReadySourceIsHandledAndAnIdleOneTimesOut() throws {
        let fd = try ReadyFD()
        LoopThread.run { loop in
            let calls = Mutex(0)
            let source = PortSource(sharing: fd.fd) { _ in
                fd.drain()
                calls.withLock { $0 += 1 }
            }
            try! loop.add(source, forMode: "alone")
            let state = loop.stateForWaiting(in: "alone")
            fd.makeReady()
            #expect(loop.waitAlone(source, in: state, before: loop.clock.now() + .seconds(10)) == .handledSource)
            #expect(calls.withLock { $0 } == 1)
            #expect(loop.waitAlone(source, in: state, before: loop.clock.now() + .milliseconds(30)) == .timedOut)
            // A deadline already passed is a poll: a ready source is still handled.
            fd.makeReady()
            #expect(loop.waitAlone(source, in: state, before: loop.clock.now()) == .handledSource)
            #expect(calls.withLock { $0 } == 2)
            // Not calling the source: ready is reported, the caller reads.
            fd.makeReady()
            #expect(loop.waitAlone(source, in: state, before: loop.clock.now() + .seconds(10), callingSource: false)
                == .handledSource)
            #expect(calls.withLock { $0 } == 2)
            #expect(fd.drain())
            #expect(loop.currentMode == nil)
            source.invalidate()
        }
    }

    /// Anything else in the mode (a timer, an observer, a custom source,
    /// a second port source, a perform request for it) makes the wait
    /// decline without running anything: the caller runs the loop.
    @Test func anythingElseInTheModeMakesItDecline() throws {
        let fd = try ReadyFD()
        let other = try ReadyFD()
        LoopThread.run { loop in
            let calls = Mutex(0)
            let source = PortSource(sharing: fd.fd) { _ in
                fd.drain()
                calls.withLock { $0 += 1 }
            }
            try! loop.add(source, forMode: "crowded")
            let state = loop.stateForWaiting(in: "crowded")
            fd.makeReady()
            let soon = loop.clock.now() + .seconds(10)

            let timer = PCTimer(fireAt: .distantFuture) { _ in }
            loop.add(timer, forMode: "crowded")
            #expect(loop.waitAlone(source, in: state, before: soon) == nil)
            loop.remove(timer, forMode: "crowded")

            let observer = RunLoopObserver(activities: .all) { _, _ in }
            loop.add(observer, forMode: "crowded")
            #expect(loop.waitAlone(source, in: state, before: soon) == nil)
            loop.remove(observer, forMode: "crowded")

            let custom = RunLoopSource { _ in }
            loop.add(custom, forMode: "crowded")
            #expect(loop.waitAlone(source, in: state, before: soon) == nil)
            loop.remove(custom, forMode: "crowded")

            let second = PortSource(sharing: other.fd) { _ in }
            try! loop.add(second, forMode: "crowded")
            #expect(loop.waitAlone(source, in: state, before: soon) == nil)
            loop.remove(second, forMode: "crowded")

            loop.perform(inModes: ["crowded"]) {}
            #expect(loop.waitAlone(source, in: state, before: soon) == nil)
            #expect(calls.withLock { $0 } == 0)
            // The general run takes the perform request and the source.
            #expect(loop.runInMode("crowded", timeout: .seconds(10), returnAfterSourceHandled: true) == .handledSource)
            #expect(calls.withLock { $0 } == 1)
            // Alone again: the wait takes it from here.
            fd.makeReady()
            #expect(loop.waitAlone(source, in: state, before: soon) == .handledSource)
            #expect(calls.withLock { $0 } == 2)
            source.invalidate()
            second.invalidate()
        }
    }

    /// A source invalidated from another thread while the loop waits for
    /// it wakes the loop, and the run ends as finished.
    @Test func aSourceInvalidatedDuringTheWaitEndsItAsFinished() throws {
        let fd = try ReadyFD()
        let result = Mutex<PCRunLoop.RunResult?>(nil)
        let holder = Mutex<PortSource?>(nil)
        let t = LoopThread { loop in
            let source = PortSource(sharing: fd.fd) { _ in fd.drain() }
            try! loop.add(source, forMode: "alone")
            holder.withLock { $0 = source }
            let state = loop.stateForWaiting(in: "alone")
            let r = loop.waitAlone(source, in: state, before: loop.clock.now() + .seconds(60))
            result.withLock { $0 = r }
        }
        t.go()
        Self.untilSleeping(t.loop)
        holder.withLock { $0 }?.invalidate()
        t.join()
        #expect(result.withLock { $0 } == .finished)
    }

    /// A stop() during the wait does not end it (a request keeps waiting
    /// for its reply); it stays pending for the next run, which it stops.
    @Test func aStopDuringTheWaitIsLeftForTheNextRun() throws {
        let fd = try ReadyFD()
        let results = Mutex<[PCRunLoop.RunResult?]>([])
        let t = LoopThread { loop in
            let source = PortSource(sharing: fd.fd) { _ in fd.drain() }
            try! loop.add(source, forMode: "alone")
            let state = loop.stateForWaiting(in: "alone")
            let r = loop.waitAlone(source, in: state, before: loop.clock.now() + .seconds(60))
            let next = loop.runInMode("alone", timeout: .seconds(60))
            results.withLock { $0 = [r, next] }
            source.invalidate()
        }
        t.go()
        Self.untilSleeping(t.loop)
        t.loop.stop()
        // Still waiting after the stop's wake-up: only the source ends it.
        Self.untilSleeping(t.loop)
        fd.makeReady()
        t.join()
        #expect(results.withLock { $0 } == [.handledSource, .stopped])
    }
}
