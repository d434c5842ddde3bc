// Item 9: the exact order of one pass, recorded by an observer of all
// activities, for each thing that can end a sleep. Item 6: perform requests.
// Item 10: calls from other threads. Item 11: the loop as an executor.

import Foundation
import Glibc
import Synchronization
import Testing
import PortSystem
import PortTestSupport
@testable import PortRunLoop

private let head = ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting"]

@Suite(.serialized) struct RunLoopSequenceTests {
    @Test func sequenceForATimer() {
        let r = Recorder()
        LoopThread.run { loop in
            _ = recordActivities(loop, .default, r)
            loop.add(PCTimer(fireAt: loop.clock.now() + .milliseconds(5)) { _ in r.add("TIMER") }, forMode: .default)
            #expect(loop.runInMode(.default, timeout: .seconds(5)) == .finished)
        }
        #expect(r.all == head + ["TIMER", "exit"])
    }

    @Test func sequenceForACustomSourceSignalledFromAnotherThread() {
        let r = Recorder()
        let source = RunLoopSource { _ in r.add("PERFORM") }
        LoopThread.run { loop in
            _ = recordActivities(loop, .default, r)
            loop.add(source, forMode: .default)
            loop.add(RunLoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in
                // Signal from another thread, and let the loop go to sleep only after it did.
                let done = Completion()
                Thread.detachNewThread { source.signal(); done.signal() }
                done.wait()
            }, forMode: .default)
            #expect(loop.runInMode(.default, before: .distantFuture, returnAfterSourceHandled: true) == .handledSource)
        }
        // Woken by the signal: back to step 2, perform in step 4; the pass
        // after a perform polls, so no second before/after waiting.
        #expect(r.all == head + ["beforeTimers", "beforeSources", "PERFORM", "exit"])
    }

    @Test func sequenceForASocketBecomingReadable() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        let (rx, tx) = (fds[0], fds[1])
        let receiving = SharedDescriptor(OwnedDescriptor(adopting: rx))  // the source's; closes with it
        let r = Recorder()
        LoopThread.run { loop in
            _ = recordActivities(loop, .default, r)
            try! loop.add(PortSource(sharing: receiving) { _ in
                var buf = [UInt8](repeating: 0, count: 16)
                let n = recv(rx, &buf, 16, Int32(MSG_DONTWAIT))
                r.add("RECV \(n)")
            }, forMode: .default)
            loop.add(RunLoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in
                let done = Completion()
                Thread.detachNewThread { _ = send(tx, "ping", 4, Int32(MSG_NOSIGNAL)); done.signal() }
                done.wait()
            }, forMode: .default)
            #expect(loop.runInMode(.default, before: .distantFuture, returnAfterSourceHandled: true) == .handledSource)
        }
        #expect(r.all == head + ["RECV 4", "exit"])
    }

    @Test func sequenceForABareWakeUpThenATimeout() {
        let r = Recorder()
        LoopThread.run { loop in
            _ = recordActivities(loop, .default, r)
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.add(RunLoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in
                PCRunLoop.current.wakeUp()
            }, forMode: .default)
            #expect(loop.runInMode(.default, timeout: .milliseconds(50)) == .timedOut)
        }
        // The wake-up ends the first sleep and the loop goes round again;
        // the second sleep ends with the timeout.
        #expect(r.all == head + ["beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
    }

    @Test func sequenceForATimeout() {
        let r = Recorder()
        LoopThread.run { loop in
            _ = recordActivities(loop, .default, r)
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            #expect(loop.runInMode(.default, timeout: .milliseconds(10)) == .timedOut)
        }
        #expect(r.all == head + ["exit"])
    }

    // MARK: 6. Perform requests

    @Test func performRequestsRunInOneMatchingPassInTheOrderQueued() {
        let r = Recorder()
        LoopThread.run { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: "modal")
            for i in 0..<5 { loop.perform(inModes: [.default]) { r.add("d\(i)") } }
            loop.perform(inModes: ["modal"]) { r.add("m") }
            loop.perform(inModes: [.common]) { r.add("c") }
            loop.add(RunLoopObserver(activities: .beforeTimers) { _, _ in r.add("pass") }, forMode: .default)
            loop.runInMode("modal", timeout: .zero)
            loop.runInMode(.default, timeout: .zero)
        }
        #expect(r.all == ["m", "pass", "d0", "d1", "d2", "d3", "d4", "c"])
    }

    @Test func performWaitingFromAnotherThreadAndInlineOnItsOwn() {
        let r = Recorder()
        let t = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(30))
        }
        let loop = t.loop!
        t.go()
        loop.perform(waitUntilDone: true) {
            r.add("on loop: \(PCRunLoop.current === loop)")
            // Re-entrant and on its own thread: inline, no deadlock.
            loop.perform(waitUntilDone: true) { r.add("inline") }
            r.add("after inline")
        }
        r.add("caller resumed")
        loop.stop()
        t.join()
        #expect(r.all == ["on loop: true", "inline", "after inline", "caller resumed"])
    }

    @Test func delayedPerformAndCancel() {
        let r = Recorder()
        LoopThread.run { _ in
            let clock = ManualClock()
            let loop = try! PCRunLoop.detached(clock: clock)
            loop.perform(after: .seconds(2), inModes: [.default]) { r.add("two") }
            let cancelled = loop.perform(after: .seconds(1), inModes: [.default]) { r.add("never") }
            #expect(cancelled.isPending)
            cancelled.cancel()
            #expect(!cancelled.isPending)
            clock.advance(by: .seconds(1))
            loop.runInMode(.default, timeout: .zero)
            #expect(r.all.isEmpty)
            clock.advance(by: .seconds(1))
            loop.runInMode(.default, timeout: .zero)
            #expect(loop.runInMode(.default, timeout: .zero) == .finished)
        }
        #expect(r.all == ["two"])
    }

    // MARK: 10. Threads

    @Test func addRemoveSignalPerformFromManyThreads() {
        let performed = Mutex(0)
        let fired = Mutex(0)
        let t = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(60))
        }
        let loop = t.loop!
        t.go()
        let group = DispatchGroup()
        for w in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                for i in 0..<200 {
                    let s = RunLoopSource { _ in }
                    loop.add(s, forMode: .common)
                    s.signal()
                    let timer = PCTimer(fireAt: .now()) { _ in fired.withLock { $0 += 1 } }
                    loop.add(timer, forMode: .default)
                    let o = RunLoopObserver(activities: .beforeWaiting) { _, _ in }
                    loop.add(o, forMode: .default)
                    loop.perform { performed.withLock { $0 += 1 } }
                    if i % 2 == 0 { s.invalidate() } else { loop.remove(s, forMode: .common) }
                    loop.remove(o, forMode: .default)
                    loop.wakeUp()
                    _ = w
                }
                group.leave()
            }
        }
        group.wait()
        loop.perform(waitUntilDone: true) {}
        // Timers added at `now` fire at the latest in the pass after the flush above.
        loop.perform(after: .milliseconds(1), inModes: [.default]) { loop.stop() }
        t.join()
        #expect(performed.withLock { $0 } == 800)
        #expect(fired.withLock { $0 } == 800)
    }

    // MARK: 11. Executor

    @Test func anActorOnARunLoopRunsOnItsThreadWithoutBlockingIt() async {
        let t = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(60))
        }
        let loop = t.loop!
        t.go()
        let actor = LoopActor(loop: loop)
        #expect(await actor.onLoopThread())
        // While the actor awaits, the loop keeps serving timers.
        let ticks = await actor.awaitWhileTimerTicks()
        #expect(ticks >= 3)
        loop.stop()
        t.join()
    }
}

actor LoopActor {
    let loop: PCRunLoop
    init(loop: PCRunLoop) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    func onLoopThread() -> Bool { loop.isCurrent }

    func awaitWhileTimerTicks() async -> Int {
        let ticks = Mutex(0)
        let (stream, cont) = AsyncStream<Void>.makeStream()
        let timer = PCTimer(interval: .milliseconds(1), repeats: true) { _ in
            if ticks.withLock({ $0 += 1; return $0 }) == 3 { cont.finish() }
        }
        loop.add(timer, forMode: .default)
        for await _ in stream {}  // suspends this actor; the loop thread keeps running passes
        timer.invalidate()
        #expect(loop.isCurrent)
        return ticks.withLock { $0 }
    }
}
