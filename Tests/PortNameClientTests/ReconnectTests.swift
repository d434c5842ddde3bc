// ReconnectTests (issue 12, item 1): a client with reconnectAutomatically
// outlives portd: SIGKILL the daemon, start a new one at the same socket,
// and the client's delegate hears of the loss and of the reconnection,
// its names are registered again and its declared port checked in again,
// and the very PCPort objects the application holds receive what is sent
// to those names through the new portd.

import Foundation
import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport

private final class ReconnectRecorder: PortNameServerDelegate {
    let lost = Completion()
    let reconnected = Completion()
    let outcomes = Mutex<[String: String]>([:])

    func nameServerDidLoseConnection(_ server: PortNameServer) { lost.signal() }

    func nameServer(_ server: PortNameServer, didReconnectWith names: [String: ReregistrationOutcome]) {
        outcomes.withLock { o in
            for (name, outcome) in names { o[name] = "\(outcome)" }
        }
        reconnected.signal()
    }
}

@Suite struct ReconnectTests {
    @Test func namesAndCheckInsComeBackAfterPortdRestarts() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let first = try DaemonProcess.started(socket: socket, declaring: ["org.example.declared"])
        let client = try first.client()
        let thread = LoopThread { loop in loop.runUntilStopped() }
        let loop = thread.loop!
        let recorder = ReconnectRecorder()
        try client.reconnectAutomatically(in: loop, retryInterval: .milliseconds(20), delegate: recorder)

        let received = Mutex<[String]>([])
        let kept = Completion()
        let declaredGot = Completion()
        let port = PCPort { m in
            received.withLock { $0.append("kept \(m.msgid)") }
            kept.signal()
            return nil
        }
        try loop.add(port, forMode: .default)
        #expect(try client.register(port, name: "org.example.kept"))
        guard case .checkedIn(let declared) = try client.checkIn(declaredName: "org.example.declared") else {
            Issue.record("not checked in"); return
        }
        declared.setHandler { m in
            received.withLock { $0.append("declared \(m.msgid)") }
            declaredGot.signal()
            return nil
        }
        try loop.add(declared, forMode: .default)
        thread.go()

        _ = try first.stop(with: SIGKILL)
        #expect(recorder.lost.wait(timeout: .seconds(10)), "the delegate never heard that portd went away")

        let second = try DaemonProcess.started(socket: socket, declaring: ["org.example.declared"])
        #expect(recorder.reconnected.wait(timeout: .seconds(10)), "the client never reconnected")
        #expect(recorder.outcomes.withLock { $0 } == ["org.example.kept": "registered", "org.example.declared": "checkedIn"])

        // Through the new portd, to the same port objects.
        let sender = try second.client()
        let toKept = try #require(try sender.lookup("org.example.kept"))
        #expect(try toKept.send(PCPortMessage(msgid: 7), timeout: .seconds(5)) == .sent)
        #expect(kept.wait(timeout: .seconds(10)))
        let toDeclared = try #require(try sender.lookup("org.example.declared"))
        #expect(try toDeclared.send(PCPortMessage(msgid: 8), timeout: .seconds(5)) == .sent)
        #expect(declaredGot.wait(timeout: .seconds(10)))
        #expect(Set(received.withLock { $0 }) == ["kept 7", "declared 8"])
        #expect(client.isValid)

        client.invalidate()
        loop.stop()
        thread.join()
    }

    /// A name someone else took while portd was away is theirs: the
    /// delegate is told who has it, and the client keeps it no more.
    @Test func aNameTakenMeanwhileIsReportedAsTaken() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let first = try DaemonProcess.started(socket: socket)
        let client = try first.client()
        let thread = LoopThread { loop in loop.runUntilStopped() }
        let loop = thread.loop!
        let recorder = ReconnectRecorder()
        try client.reconnectAutomatically(in: loop, retryInterval: .milliseconds(20), delegate: recorder)
        let port = PCPort { _ in nil }
        try loop.add(port, forMode: .default)
        #expect(try client.register(port, name: "org.example.contested"))
        thread.go()

        _ = try first.stop(with: SIGKILL)
        #expect(recorder.lost.wait(timeout: .seconds(10)))
        // Hold the client's loop (so it cannot reconnect) until a rival got
        // the name from the new portd.
        let gate = Completion()
        loop.perform(inModes: [.common]) { _ = gate.wait(timeout: .seconds(30)) }
        let second = try DaemonProcess.started(socket: socket)
        let rival = try second.client()
        guard case .registered = try rival.register("org.example.contested") else {
            Issue.record("the rival must get the name while the client is away"); return
        }
        gate.signal()
        #expect(recorder.reconnected.wait(timeout: .seconds(10)))
        let outcome = recorder.outcomes.withLock { $0["org.example.contested"] }
        #expect(outcome?.hasPrefix("taken") == true, "\(outcome ?? "nil")")
        client.invalidate()
        loop.stop()
        thread.join()
    }

    /// A reconnection checks the socket's directory as the first connection
    /// did: while the runtime directory of the per-user fallback is not
    /// private (someone else could have changed it while portd was away), the client does not
    /// connect, however often its retry timer fires; once it is private
    /// again, it does.
    @Test func aReconnectionChecksTheDirectoryAgain() throws {
        let dir = try TemporaryDirectory()
        let privateDirectory = dir.appending("portd-private")
        #expect(try FileSystem.makeDirectory(privateDirectory, permissions: 0o700))
        try FileSystem.setPermissions(privateDirectory, 0o700)
        #expect(try FileSystem.makeDirectory(privateDirectory + "/portd", permissions: 0o700))
        let socket = privateDirectory + "/portd/portd.sock"
        let first = try DaemonProcess.started(socket: socket)
        let client = try PortNameServer(
            location: DaemonSocketLocation(path: socket, origin: .userFallback), timeout: .seconds(10))
        let thread = LoopThread { loop in loop.runUntilStopped() }
        let loop = thread.loop!
        // Counts the passes the retry timer causes, to know it has tried.
        let passes = Atomic<Int>(0)
        let tried = Completion()
        loop.add(RunLoopObserver(activities: .afterWaiting, repeats: true) { _, _ in
            if passes.add(1, ordering: .relaxed).newValue == 20 { tried.signal() }
        }, forMode: .default)
        let recorder = ReconnectRecorder()
        try client.reconnectAutomatically(in: loop, retryInterval: .milliseconds(10), delegate: recorder)
        let port = PCPort { _ in nil }
        try loop.add(port, forMode: .default)
        #expect(try client.register(port, name: "org.example.guarded"))
        thread.go()

        _ = try first.stop(with: SIGKILL)
        #expect(recorder.lost.wait(timeout: .seconds(10)))
        try FileSystem.setPermissions(privateDirectory, 0o777)
        let second = try DaemonProcess.started(socket: socket)
        passes.store(0, ordering: .relaxed)
        #expect(tried.wait(timeout: .seconds(30)), "the retry timer never fired")
        #expect(!recorder.reconnected.wait(timeout: .zero), "reconnected through a directory that is not private")
        let probe = try second.client()
        #expect(try probe.status().clients == 1, "only the probe is connected")
        try FileSystem.setPermissions(privateDirectory, 0o700)
        #expect(recorder.reconnected.wait(timeout: .seconds(10)))
        #expect(recorder.outcomes.withLock { $0 } == ["org.example.guarded": "registered"])
        client.invalidate()
        loop.stop()
        thread.join()
    }
}
