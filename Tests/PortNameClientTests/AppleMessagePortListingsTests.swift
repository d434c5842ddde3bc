// Listings 3-17 to 3-19 of Apple's Run Loops guide ("Configuring a
// Port-Based Input Source" with Core Foundation message ports), ported as
// literally as Swift allows, across two processes through a real portd: the
// main side (3-17, 3-18) is this process; the worker (3-19) is another
// process, portctl, which holds its own named port (`portctl listen`,
// CFMessagePortCreateLocal + CFRunLoopRun) and checks in by sending its
// port's name to the main port (`portctl send`, CFMessagePortSendRequest
// with a NULL replyMode: no reply). The main side then reaches the worker
// through the name (CFMessagePortCreateRemote).

import Foundation
import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport

private let kCheckinMessage: UInt32 = 100
private let kExitMessage: UInt32 = 101

/// The main thread's state of listings 3-17 and 3-18.
private final class MainThread: @unchecked Sendable {
    // Safe to share: `activeThreads` is a Mutex; `names` is immutable
    // after init (its own lock serialises its requests).
    let names: PortNameServer
    let activeThreads = Mutex<[SendRight]>([])
    let checkedIn = Completion()
    /// Whether each check-in arrived as a request, a reply asked for.
    let checkInsAskingForAReply = Mutex<[Bool]>([])

    init(names: PortNameServer) { self.names = names }

    /// Listing 3-17: MySpawnThread (up to the task creation, which the
    /// test does by starting the worker process).
    func mySpawnThread(myPortName: String) throws -> Bool {
        let myPort = PCPort { [self] message in mainThreadResponseHandler(message) }  // CFMessagePortCreateLocal
        guard try names.register(myPort, name: myPortName) else { return false }
        // CFMessagePortCreateRunLoopSource + CFRunLoopAddSource; CFRelease(myPort) at the end of the scope.
        try PCRunLoop.current.add(myPort, forMode: .default)
        return true
    }

    /// Listing 3-18: MainThreadResponseHandler.
    func mainThreadResponseHandler(_ message: PCPortMessage) -> PCPortMessage? {
        if message.msgid == kCheckinMessage {
            checkInsAskingForAReply.withLock { $0.append(message.replyPort != nil) }
            if let threadPortName = message.components.first?.string,
                let messagePort = try? names.port(forName: threadPortName)  // CFMessagePortCreateRemote
            {
                addPortToListOfActiveThreads(messagePort)
            }
        } else {
            // Handle other messages.
        }
        return nil
    }

    func addPortToListOfActiveThreads(_ port: SendRight) {
        activeThreads.withLock { $0.append(port) }
        checkedIn.signal()
    }

    /// The main thread: a loop thread that spawns (registers its port) and
    /// goes on with its loop until the worker checked in; returned once the
    /// port is registered.
    func startLoop(myPortName: String) -> LoopThread {
        let registered = Completion()
        let mainLoop = LoopThread { [self] loop in
            guard (try? mySpawnThread(myPortName: myPortName)) == true else { return }
            registered.signal()
            while !checkedIn.wait(timeout: .zero) {
                _ = loop.runInMode(.default, timeout: .seconds(20), returnAfterSourceHandled: true)
            }
        }
        mainLoop.go()
        #expect(registered.wait(timeout: .seconds(20)))
        return mainLoop
    }
}

@Suite struct AppleMessagePortListingsTests {
    @Test func listings3_17to3_19TheWorkerProcessChecksInByName() throws {
        let daemon = try DaemonProcess.started()
        let main = MainThread(names: try daemon.client())
        let myPortName = "com.myapp.MainThread-\(getpid())"
        let workerPortName = "com.MyApp.Thread-\(getpid())"
        let mainLoop = main.startLoop(myPortName: myPortName)

        // Listing 3-19, in another process: the worker's own named port...
        let worker = try daemon.startPortctl(["listen", workerPortName, "--count", "1", "--json"])
        try worker.waitForStandardError(containing: "listening on \(workerPortName)")
        // ...and its check-in: the name of its port, sent to the main port.
        let checkIn = try daemon.portctl([
            "send", myPortName, "--msgid", "\(kCheckinMessage)", "--data", workerPortName,
        ])
        #expect(checkIn.status == 0, "\(checkIn.standardError)")
        #expect(main.checkedIn.wait(timeout: .seconds(20)))
        mainLoop.join()

        // The channel works: the main side sends to the worker process.
        let port = try #require(main.activeThreads.withLock { $0.first })
        #expect(try port.send(PCPortMessage(msgid: 7, strings: ["from the main thread"]), timeout: .seconds(5)) == .sent)
        #expect(try worker.waitForExit() == 0, "\(worker.standardError)")
        let m = try jsonObject(worker.standardOutput)
        #expect(m["msgid"] as? Int == 7)
        #expect((m["components"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["from the main thread"])
    }

    /// Listing 3-19 as the guide writes it, a thread (ServerThreadEntryPoint)
    /// of this process: it checks in with
    /// `CFMessagePortSendRequest(mainThreadPort, kCheckinMessage, outData,
    /// 0.1, 0.0, NULL, NULL)`, a one-way request (NULL replyMode, receive
    /// timeout 0), which CF reports as kCFMessagePortSuccess once the
    /// message is sent, with no reply asked for.
    @Test func listing3_19AOneWayCheckInSucceeds() throws {
        let daemon = try DaemonProcess.started()
        let main = MainThread(names: try daemon.client())
        let names = try daemon.client()
        let myPortName = "com.myapp.MainThread-\(getpid())"
        let mainLoop = main.startLoop(myPortName: myPortName)

        let status = Mutex<RequestResult?>(nil)
        let sent = Completion()
        let worker = LoopThread { _ in
            // ServerThreadEntryPoint: the main thread's port, by name (CFMessagePortCreateRemote).
            guard let mainThreadPort = try? names.port(forName: myPortName) else { sent.signal(); return }
            // Create a port for the worker thread.
            let myPortName = "com.MyApp.Thread-\(getpid())"
            let myPort = PCPort { message in  // CFMessagePortCreateLocal(NULL, myPortName, &ProcessClientRequest, ...)
                if message.msgid == kExitMessage { PCRunLoop.current.stop() }
                return nil
            }
            guard (try? names.register(myPort, name: myPortName)) == true else { sent.signal(); return }
            // CFMessagePortCreateRunLoopSource + CFRunLoopAddSource(CFRunLoopGetCurrent(), rlSource, kCFRunLoopDefaultMode).
            try? PCRunLoop.current.add(myPort, forMode: .default)
            // Package up the port name and send the check-in message.
            let outData = PCPortMessage.Component.data(Array(myPortName.utf8))
            let result = try? mainThreadPort.request(
                PCPortMessage(msgid: kCheckinMessage, components: [outData]),
                sendTimeout: .milliseconds(100), receiveTimeout: .zero)
            status.withLock { $0 = result }
            sent.signal()
            // Enter the run loop.
            PCRunLoop.current.runUntilStopped()
            myPort.invalidate()
        }
        worker.go()
        #expect(sent.wait(timeout: .seconds(20)))
        if case .sent? = status.withLock({ $0 }) {} else {
            Issue.record("the one-way check-in reported \(String(describing: status.withLock { $0 })), not success")
        }
        #expect(main.checkedIn.wait(timeout: .seconds(20)))
        mainLoop.join()
        #expect(main.checkInsAskingForAReply.withLock { $0 } == [false])
        let port = try #require(main.activeThreads.withLock { $0.first })
        #expect(try port.send(PCPortMessage(msgid: kExitMessage), timeout: .seconds(5)) == .sent)
        worker.join()
    }
}
