// Listings 3-1 to 3-11 of Apple's Run Loops guide, ported to PortCore as
// literally as Swift allows, each checked to do what the guide says.
//
// Deliberate changes, the same in every listing: Objective-C methods become
// closures or small classes; spans are scaled down (a test must not take
// seconds) with their ratios kept; Swift Testing runs tests off the main
// thread and nothing runs the main loop there, so the "main thread" of 3-4 to
// 3-8 (the application delegate's) is a loop thread of its own, reached the
// way performSelectorOnMainThread: reaches the main loop: a perform on its loop.

import Foundation
import Synchronization
import Testing
import PortSystem
import PortTestSupport
@testable import PortRunLoop

@Suite(.serialized) struct AppleListingsTests {
    /// Listing 3-1, "Creating a run loop observer": an observer of every
    /// activity, a repeating scheduled timer, and ten runUntilDate: calls.
    @Test func listing3_1_creatingARunLoopObserver() {
        let activities = Recorder()
        let fired = Recorder()
        LoopThread.run { _ in
            let myRunLoop = PCRunLoop.current

            // Create a run loop observer and attach it to the run loop.
            let observer = RunLoopObserver(activities: .all, repeats: true, order: 0) { _, activity in
                activities.add(activity.description)  // myRunLoopObserver
            }
            myRunLoop.add(observer, forMode: .default)

            // Create and schedule the timer.
            PCTimer.scheduledTimer(withTimeInterval: .milliseconds(10), repeats: true) { _ in
                fired.add("doFireTimer")
            }

            var loopCount = 10
            repeat {
                // Run the run loop 10 times to let the timer fire.
                myRunLoop.run(until: .now() + .milliseconds(30))
                loopCount -= 1
            } while loopCount != 0
            observer.invalidate()
        }
        #expect(fired.all.count >= 10)
        #expect(activities.count(of: "entry") >= 10)
        #expect(activities.count(of: "entry") == activities.count(of: "exit"))
        #expect(activities.count(of: "beforeTimers") > 0)
    }

    /// Listing 3-2, "Running a run loop": CFRunLoopRunInMode with a timeout
    /// and return-after-source, until a source stops the loop or nothing is left.
    @Test func listing3_2_runningARunLoop() {
        let results = Recorder()
        LoopThread.run { loop in
            var done = false
            // Add your sources or timers to the run loop and do any other setup.
            var handled = 0
            // The timer signals the source once; its first perform signals
            // it again, its second stops the loop. (Two timers signalling it
            // were both due in one pass on a slow machine, and the signals
            // coalesced into one perform, as CF's do: the loop never stopped.)
            let source = RunLoopSource { s in
                handled += 1
                if handled == 1 { s.signal() }
                if handled == 2 { PCRunLoop.current.stop() }  // a source explicitly stops the loop
            }
            loop.add(source, forMode: .default)
            loop.add(PCTimer(fireAt: .now() + .milliseconds(1)) { _ in source.signal() }, forMode: .default)
            var runs = 0
            repeat {
                // Start the run loop but return after each source is handled.
                let result = loop.runInMode(.default, timeout: .seconds(10), returnAfterSourceHandled: true)
                results.add(result.description)
                // If a source explicitly stopped the run loop, or if there are no
                // sources or timers, go ahead and exit.
                if result == .stopped || result == .finished { done = true }
                runs += 1
            } while !done && runs < 10  // the test's bound, not the listing's: fails rather than hangs
            source.invalidate()
        }
        // The second source both is handled and stops the loop: CF reports the
        // handled source first, and the pending stop ends the next run at once.
        #expect(results.all == ["handledSource", "handledSource", "stopped"])
    }

    // Listings 3-3 to 3-9: the custom input source, its context, its three
    // routines, its installation, the delegate's register/remove and the signal.

    /// Listing 3-3: RunLoopContext, a container of a source and a loop.
    final class RunLoopContext: @unchecked Sendable, Equatable {
        // Safe to share: both fields are immutable.
        let runLoop: PCRunLoop
        let source: CommandSource
        init(source: CommandSource, loop: PCRunLoop) { self.source = source; self.runLoop = loop }
        static func == (a: RunLoopContext, b: RunLoopContext) -> Bool { a.source === b.source && a.runLoop === b.runLoop }
    }

    /// Listing 3-8: the application delegate keeps the sources to ping.
    final class AppDelegate: @unchecked Sendable {
        // Safe to share: `sourcesToPing` is touched only on `loop`'s thread
        // (registerSource and removeSource arrive as performs on it).
        var sourcesToPing: [RunLoopContext] = []
        let loop: PCRunLoop
        init(loop: PCRunLoop) { self.loop = loop }
        func registerSource(_ sourceInfo: RunLoopContext) { sourcesToPing.append(sourceInfo) }
        func removeSource(_ sourceInfo: RunLoopContext) {
            if let i = sourcesToPing.firstIndex(of: sourceInfo) { sourcesToPing.remove(at: i) }
        }
    }

    /// Listings 3-3, 3-5, 3-7, 3-9: the custom input source object.
    final class CommandSource: @unchecked Sendable {
        // Safe to share: `commands` is read and written only inside `lock`;
        // `runLoopSource` is set once in init.
        private var runLoopSource: RunLoopSource!
        private let lock = Mutex(())
        private var commands: [String] = []
        let done: Recorder

        init(delegate: AppDelegate, done: Recorder) {
            self.done = done
            // Listing 3-7 init: the schedule, cancel and perform routines.
            runLoopSource = RunLoopSource(
                schedule: { [unowned self] rl, _ in
                    // Listing 3-4: RunLoopSourceScheduleRoutine.
                    let theContext = RunLoopContext(source: self, loop: rl)
                    delegate.loop.perform(waitUntilDone: false) { delegate.registerSource(theContext) }
                },
                cancel: { [unowned self] rl, _ in
                    // Listing 3-6: RunLoopSourceCancelRoutine.
                    let theContext = RunLoopContext(source: self, loop: rl)
                    delegate.loop.perform(waitUntilDone: true) { delegate.removeSource(theContext) }
                },
                perform: { [unowned self] _ in self.sourceFired() }  // Listing 3-5
            )
        }

        /// Listing 3-7 addToCurrentRunLoop.
        func addToCurrentRunLoop() {
            PCRunLoop.current.add(runLoopSource, forMode: .default)
        }

        func invalidate() { runLoopSource.invalidate() }

        func sourceFired() {
            let batch = lock.withLock { _ in defer { commands = [] }; return commands }
            for c in batch { done.add(c) }
        }

        func addCommand(_ command: String) { lock.withLock { _ in commands.append(command) } }

        /// Listing 3-9: signal the source and wake its loop.
        func fireCommandsOnRunLoop(_ runloop: PCRunLoop) {
            runLoopSource.signal()
            runloop.wakeUp()
        }
    }

    @Test func listings3_3to3_9_aCustomInputSource() {
        let done = Recorder()
        let app = LoopThread { loop in loop.runUntilStopped() }
        let delegate = AppDelegate(loop: app.loop)
        app.loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)  // keeps the app's loop running
        app.go()
        let installed = Completion()
        let worker = LoopThread { loop in
            let source = CommandSource(delegate: delegate, done: done)
            source.addToCurrentRunLoop()  // queues registerSource: on the app's loop
            installed.signal()
            while done.all.isEmpty { loop.run(mode: .default, before: .distantFuture) }
            source.invalidate()
        }
        worker.go()
        installed.wait()
        // The "main thread" finds the worker's source among its sources to
        // ping (this perform runs after registerSource:, queued before it).
        let box = ContextBox()
        app.loop.perform(waitUntilDone: true) { box.value = delegate.sourcesToPing.first }
        let context = box.value
        #expect(context != nil)
        context?.source.addCommand("command 1")
        if let context { context.source.fireCommandsOnRunLoop(context.runLoop) }
        worker.join()
        let remaining = ContextBox()
        app.loop.perform(waitUntilDone: true) { remaining.value = delegate.sourcesToPing.first }
        #expect(done.all == ["command 1"])
        #expect(remaining.value == nil)  // the cancel routine removed it (Listing 3-6 waits until done)
        app.loop.stop()
        app.join()
    }

    final class ContextBox: @unchecked Sendable {
        // Safe to share: written inside a waitUntilDone perform, read after it returned.
        var value: RunLoopContext?
    }

    /// Listing 3-10, "Creating and scheduling timers using NSTimer": a timer
    /// that first fires after a delay then repeats, added by hand, and a
    /// scheduled repeating timer. Spans scaled 1:10 (1 s -> 100 ms).
    @Test func listing3_10_creatingAndSchedulingTimers() {
        let r = Recorder()
        LoopThread.run { _ in
            let myRunLoop = PCRunLoop.current

            // Create and schedule the first timer.
            let futureDate = MonotonicInstant.now() + .milliseconds(100)
            let myTimer = PCTimer(fireAt: futureDate, interval: .milliseconds(10)) { _ in r.add("myDoFireTimer1") }
            myRunLoop.add(myTimer, forMode: .default)

            // Create and schedule the second timer.
            PCTimer.scheduledTimer(withTimeInterval: .milliseconds(20), repeats: true) { _ in r.add("myDoFireTimer2") }

            let start = MonotonicInstant.now()
            myRunLoop.run(until: start + .milliseconds(150))
            #expect(myTimer.fireDate > futureDate)
        }
        let all = r.all
        #expect(all.count(where: { $0 == "myDoFireTimer2" }) >= 3)
        #expect(all.count(where: { $0 == "myDoFireTimer1" }) >= 2)
        // The second timer fires first: the first waits for its fire date.
        #expect(all.first == "myDoFireTimer2")
    }

    /// Listing 3-11, "Creating and scheduling a timer using Core Foundation":
    /// CFRunLoopTimerCreate(kCFAllocatorDefault, 0.1, 0.3, 0, 0, ...) in the
    /// common modes. Its fire date, 0.1 s after the clock's origin, is long
    /// past, so it fires at once, then every 0.3 s (scaled: 30 ms).
    @Test func listing3_11_aCoreFoundationTimer() {
        let r = Recorder()
        LoopThread.run { _ in
            let runLoop = PCRunLoop.current
            let timer = PCTimer(fireAt: MonotonicInstant(nanoseconds: 100_000_000), interval: .milliseconds(30)) { _ in
                r.add("myCFTimerCallback")
            }
            runLoop.add(timer, forMode: .common)
            runLoop.run(until: .now() + .milliseconds(45))
            timer.invalidate()
        }
        #expect(r.all.count >= 2)  // at once, then on the 30 ms grid of the past date
    }
}
