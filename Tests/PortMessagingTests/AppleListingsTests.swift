// Listings 3-12 to 3-15 of Apple's Run Loops guide ("Configuring a
// Port-Based Input Source": the main thread launches a worker with a port,
// the worker checks in with a port of its own, then runs its loop with
// runMode:beforeDate: until asked to exit), ported as literally as Swift
// allows. Where Objective-C passes the NSPort object itself to the other
// thread, the port's owner passes a send right (`makeSendRight()`), since a
// right, not the port, is what another thread or process may hold; the
// check-in's `sendPort` is the message's `replyPort`.

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
            _ = PCRunLoop.current.run(mode: .default, before: .distantFuture, returnAfterSourceHandled: true)
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

@Suite(.serialized) struct AppleListingsTests {
    /// 3-12 to 3-15: the worker checks in, runs its loop with
    /// runMode:beforeDate:, and exits when asked.
    @Test func listings3_12to3_15TheWorkerChecksInAndExitsWhenAsked() throws {
        let controller = MainThreadController()
        let main = LoopThread { loop in
            do { try controller.launchThread() } catch { return }
            // The main thread runs its loop until the worker checked in.
            while !controller.checkedIn.wait(timeout: .zero) {
                _ = loop.run(mode: .default, timeout: .seconds(20), returnAfterSourceHandled: true)
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
