// Listings 3-12 to 3-15 of Apple's Run Loops guide ("Configuring a
// Port-Based Input Source": the main thread launches a worker with a port,
// the worker checks in with a port of its own, then runs its loop with
// runMode:beforeDate: until asked to exit), ported as literally as Swift
// allows. Where Objective-C passes the NSPort object itself to the other
// thread, the port's owner passes a send right (`makeSendRight()`), since a
// right, not the port, is what another thread or process may hold; the
// check-in's `sendPort` is the message's `replyPort`. Also the blog
// example of a secondary thread kept alive by a port nobody sends to.

import Foundation
import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
@testable import PortMessaging

private let kCheckinMessage: UInt32 = 100
private let kExitMessage: UInt32 = 101

/// The main thread's side (Listings 3-12 and 3-13).
private final class MainThreadController: PCPortDelegate, @unchecked Sendable {
    // Safe to share: `distantPort` is written on the main loop's thread in
    // `handle` and read by the test after `checkedIn` is signalled.
    var distantPort: SendRight?
    let checkedIn = Completion()
    let workerExited = Completion()

    /// Listing 3-12: launchThread.
    func launchThread() throws {
        let myPort = PCPort()
        // This class handles incoming port messages.
        myPort.setDelegate(self)
        // Install the port as an input source on the current run loop.
        try PCRunLoop.current.add(myPort, forMode: .default)
        // Detach the thread. Let the worker release the port (here: a right to it).
        let right = try myPort.makeSendRight()
        let exited = workerExited
        Thread.detachNewThread {
            MyWorkerClass.launchThread(withPort: right)
            exited.signal()
        }
    }

    /// Listing 3-13: handlePortMessage:.
    func handle(_ portMessage: PCPortMessage, on port: PCPort) -> PCPortMessage? {
        let message = portMessage.msgid
        if message == kCheckinMessage {
            // Get the worker thread's communications port.
            let distantPort = portMessage.replyPort
            // Retain and save the worker port for later use.
            storeDistantPort(distantPort)
        } else {
            // Handle other messages.
        }
        return nil
    }

    func storeDistantPort(_ port: SendRight?) {
        distantPort = port
        checkedIn.signal()
    }
}

/// The worker's side (Listings 3-14 and 3-15).
private final class MyWorkerClass: PCPortDelegate, @unchecked Sendable {
    // Safe to share: used on the worker's thread only (its loop's handler).
    var remotePort: SendRight?
    var shouldExit = false

    /// Listing 3-14: LaunchThreadWithPort:.
    static func launchThread(withPort inData: SendRight) {
        // Set up the connection between this thread and the main thread.
        let distantPort = inData
        let workerObj = MyWorkerClass()
        workerObj.sendCheckinMessage(distantPort)
        // Let the run loop process things.
        repeat {
            PCRunLoop.current.run(mode: .default, before: .distantFuture)
        } while !workerObj.shouldExit
    }

    /// Listing 3-15: sendCheckinMessage:.
    func sendCheckinMessage(_ outPort: SendRight) {
        // Retain and save the remote port for future use.
        remotePort = outPort
        // Create and configure the worker thread port.
        let myPort = PCPort()
        myPort.setDelegate(self)
        try? PCRunLoop.current.add(myPort, forMode: .default)
        // Create the check-in message; finish configuring it and send it immediately.
        let messageObj = PCPortMessage(msgid: kCheckinMessage)
        _ = try? outPort.send(messageObj, before: .now(), replyPort: myPort)
    }

    func handle(_ message: PCPortMessage, on port: PCPort) -> PCPortMessage? {
        if message.msgid == kExitMessage { shouldExit = true }
        return nil
    }
}

/// The blog example of a thread kept alive by a port nobody sends to
/// (performSelector:afterDelay: on a secondary thread needs its loop to
/// run; `[runLoop addPort:[NSMachPort port] forMode:NSDefaultRunLoopMode];
/// [runLoop run];`, as AFNetworking's network thread does).
private final class PerformSelectorDemo: @unchecked Sendable {
    // Safe to share: `log` is a Mutex; `keepAlive` and `loop` are written on the
    // demo's thread before `running` is signalled and read after.
    let log = Mutex<[String]>([])
    let dealt = Completion()
    let running = Completion()
    let returned = Completion()
    var keepAlive: PCPort?
    var loop: PCRunLoop?

    func performSelectorClick() {
        Thread.detachNewThread { self.operationPerformSelector() }
    }

    func operationPerformSelector() {
        // Not delayed: runs at once, no run loop needed.
        dealSelector1()
        // Delayed: a timer on this thread's loop, which must run.
        let runLoop = PCRunLoop.current
        runLoop.perform(after: .milliseconds(100), inModes: [.default]) { self.dealSelector() }
        // A port nobody sends to keeps the loop from returning at once.
        let port = PCPort()
        try? runLoop.add(port, forMode: .default)
        keepAlive = port  // only so that the test can end the thread
        loop = runLoop
        running.signal()
        runLoop.run()
        log.withLock { $0.append("run returned") }
        returned.signal()
    }

    func dealSelector() {
        log.withLock { $0.append("operationPerformSelector") }
        dealt.signal()
    }

    func dealSelector1() { log.withLock { $0.append("not delayed") } }
}

/// The idiom `-[NSRunLoop run]`'s documentation gives for a loop that can be
/// ended: a thread keeps its loop alive with a port and runs
/// `while (shouldKeepRunning && [theRL runMode:NSDefaultRunLoopMode
/// beforeDate:[NSDate distantFuture]]);`, and another thread ends it with
/// `performSelector:onThread:withObject:waitUntilDone:modes:`, which
/// Foundation delivers as a source of that thread's loop.
private final class StoppableThread: @unchecked Sendable {
    // Safe to share: `shouldKeepRunning` is written only by the perform,
    // on the worker's thread, and read there; `log` is a Mutex.
    var shouldKeepRunning = true
    let log = Mutex<[String]>([])
    let running = Completion()
    let finished = Completion()

    func threadMain() {
        let theRL = PCRunLoop.current
        let port = PCPort()  // [NSMachPort port]
        try? theRL.add(port, forMode: .default)
        running.signal()
        while shouldKeepRunning && theRL.run(mode: .default, before: .distantFuture) {}
        log.withLock { $0.append("loop ended") }
        port.invalidate()
        finished.signal()
    }

    func stopRunning() {
        shouldKeepRunning = false
        log.withLock { $0.append("stopRunning") }
    }
}

@Suite(.serialized) struct AppleListingsTests {
    /// swift-corelibs-foundation's TestRunLoop.test_addingRemovingPorts:
    /// a port sees the loop schedule it in a mode once however often it is
    /// added, and remove it; it is freed once invalidated. Its TestPort
    /// subclasses Port to override schedule(in:forMode:) and
    /// remove(from:forMode:); PCPort is final, so the same two methods are
    /// its onSchedule and onRemove observers.
    @Test func addingRemovingPorts() {
        let seen = Recorder()
        let didDeallocate = Mutex(false)
        LoopThread.run { _ in
            let runLoop = PCRunLoop.current
            weak var deallocated: PCPort?
            do {
                let port = PCPort()
                deallocated = port
                var scheduledModes: [PCRunLoop.Mode] = []
                port.onSchedule { _, mode in scheduledModes.append(mode) }
                port.onRemove { _, mode in scheduledModes = scheduledModes.filter { $0 != mode } }
                func check() { seen.add("\(scheduledModes.map(\.name)) \(port.scheduledModes(in: runLoop).map(\.name))") }
                let customMode = PCRunLoop.Mode("Custom")

                check()  // []

                try? runLoop.add(port, forMode: .default)
                check()  // [.default]

                try? runLoop.add(port, forMode: .default)
                check()  // [.default]

                try? runLoop.add(port, forMode: customMode)
                check()  // [.default, customMode]

                runLoop.remove(port, forMode: customMode)
                check()  // [.default]

                try? runLoop.add(port, forMode: customMode)
                check()  // [.default, customMode]

                port.invalidate()
            }
            didDeallocate.withLock { $0 = deallocated == nil }
        }
        let d = PCRunLoop.Mode.default.name
        #expect(
            seen.all == [
                "[] []", "[\"\(d)\"] [\"\(d)\"]", "[\"\(d)\"] [\"\(d)\"]",
                "[\"\(d)\", \"Custom\"] [\"\(d)\", \"Custom\"]", "[\"\(d)\"] [\"\(d)\"]",
                "[\"\(d)\", \"Custom\"] [\"\(d)\", \"Custom\"]",
            ])
        #expect(didDeallocate.withLock { $0 })
    }

    /// The port freed after its removal (not invalidated): once it left
    /// every mode, the loop holds nothing of it; its last observer call
    /// says which mode it left.
    @Test func aPortRemovedFromEveryModeIsFreed() {
        let removed = Recorder()
        let freed = Mutex(false)
        LoopThread.run { runLoop in
            weak var gone: PCPort?
            do {
                let port = PCPort()
                gone = port
                port.onRemove { loop, mode in removed.add("\(loop === runLoop) \(mode.name)") }
                try? runLoop.add(port, forMode: .default)
                try? runLoop.add(port, forMode: "Custom")
                runLoop.remove(port, forMode: "Custom")
                runLoop.remove(port, forMode: "Custom")  // not in it: no call
                runLoop.remove(port, forMode: .default)
            }
            freed.withLock { $0 = gone == nil }
        }
        #expect(removed.all == ["true Custom", "true \(PCRunLoop.Mode.default.name)"])
        #expect(freed.withLock { $0 })
    }

    /// A perform on the thread ends its runMode:beforeDate:, so the loop
    /// sees the flag the perform cleared and ends.
    @Test func aPerformOnAThreadEndsItsRunModeBeforeDateLoop() {
        let worker = StoppableThread()
        let thread = PCThread.detachNewThread { worker.threadMain() }
        #expect(worker.running.wait(timeout: .seconds(20)))
        // [worker performSelector:@selector(stopRunning) onThread:thread withObject:nil
        //                waitUntilDone:NO modes:@[NSDefaultRunLoopMode]]
        thread.perform(inModes: [.default], waitUntilDone: false) { worker.stopRunning() }
        let ended = worker.finished.wait(timeout: .seconds(10))
        #expect(ended, "runMode:beforeDate: went back to sleep after the perform")
        if !ended {
            // Ends the run that slept on: the loop then sees the flag.
            thread.runLoop.stop()
            #expect(worker.finished.wait(timeout: .seconds(10)))
        }
        #expect(worker.log.withLock { $0 } == ["stopRunning", "loop ended"])
    }

    /// The kept-alive thread: the delayed perform runs, the loop keeps
    /// running after it (the port is still there), and returns once the
    /// port is gone.
    @Test func aPortNobodySendsToKeepsTheThreadsLoopRunning() throws {
        let demo = PerformSelectorDemo()
        demo.performSelectorClick()
        #expect(demo.running.wait(timeout: .seconds(20)))
        #expect(demo.dealt.wait(timeout: .seconds(20)))
        // Still running: work sent to the thread later runs there.
        let later = Completion()
        demo.loop?.perform(inModes: [.default]) { later.signal() }
        #expect(later.wait(timeout: .seconds(20)))
        #expect(demo.log.withLock { $0 } == ["not delayed", "operationPerformSelector"])
        // The loop returns once its only source is gone and it wakes:
        // removing a sleeping loop's last source does not wake it (as in
        // CF, where that is no guarantee the loop exits), so wake it.
        demo.keepAlive?.invalidate()
        demo.loop?.wakeUp()
        #expect(demo.returned.wait(timeout: .seconds(20)))
        #expect(demo.log.withLock { $0 } == ["not delayed", "operationPerformSelector", "run returned"])
    }

    /// 3-12 to 3-15: the worker checks in, runs its loop with
    /// runMode:beforeDate:, and exits when asked.
    @Test func listings3_12to3_15TheWorkerChecksInAndExitsWhenAsked() throws {
        let controller = MainThreadController()
        let main = LoopThread { loop in
            do { try controller.launchThread() } catch { return }
            // The main thread runs its loop until the worker checked in.
            while !controller.checkedIn.wait(timeout: .zero) {
                _ = loop.runInMode(.default, timeout: .seconds(20), returnAfterSourceHandled: true)
            }
        }
        main.go()
        #expect(controller.checkedIn.wait(timeout: .seconds(20)))
        main.join()
        let worker = try #require(controller.distantPort)
        #expect(try worker.send(PCPortMessage(msgid: kExitMessage), timeout: .seconds(5)) == .sent)
        #expect(controller.workerExited.wait(timeout: .seconds(20)), "the worker's runMode loop never re-checked shouldExit")
    }
}
