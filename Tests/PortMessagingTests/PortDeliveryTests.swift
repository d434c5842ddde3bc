// Delivery guarantees across threads and processes, the check-in handshake,
// and the async forms.

import Foundation
import Glibc
import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
@testable import PortMessaging

@Suite(.serialized) struct PortDeliveryTests {
    @Test func everyMessageOnceInPerSenderOrderFrom4ThreadsAnd4Processes() throws {
        let perSender = Int(ProcessInfo.processInfo.environment["PORT_ORDER_TEST_COUNT"] ?? "") ?? 100_000
        // Per sender tag: the next msgid expected, and a count of violations.
        let next = Mutex<[String: UInt32]>([:])
        let violations = Mutex(0)
        let total = Mutex(0)
        let allIn = Completion()
        let expectedTotal = 8 * perSender
        let served = try ServedPort { m in
            let tag = m.components.first?.string ?? "?"
            next.withLock { n in
                let want = n[tag, default: 0]
                if m.msgid != want { violations.withLock { $0 += 1 } }
                n[tag] = m.msgid &+ 1
            }
            if total.withLock({ $0 += 1; return $0 }) == expectedTotal { allIn.signal() }
            return nil
        }
        defer { served.stop() }

        var peers: [ChildProcess] = []
        for p in 0..<4 {
            let right = try served.port.makeSendRight()
            peers.append(try startPeer(["send", "\(perSender)", "process\(p)"], passing: right))
            right.invalidate()  // the child has its own copy
        }
        let group = DispatchGroup()
        for t in 0..<4 {
            let right = try served.port.makeSendRight()
            group.enter()
            Thread.detachNewThread {
                let tag = "thread\(t)"
                for i in 0..<perSender {
                    let r = try? right.send(PCPortMessage(msgid: UInt32(i), strings: [tag]), timeout: .seconds(60))
                    if r != .sent { violations.withLock { $0 += 1 } }
                }
                group.leave()
            }
        }
        group.wait()
        for peer in peers { #expect(try peer.waitForExit(timeout: .seconds(120)) == 0, "\(peer.standardError)") }
        #expect(allIn.wait(timeout: .seconds(120)), "not every message arrived: \(total.withLock { $0 })")
        #expect(violations.withLock { $0 } == 0)
        #expect(total.withLock { $0 } == expectedTotal)
        let final = next.withLock { $0 }
        #expect(final.count == 8)
        #expect(final.values.allSatisfy { $0 == UInt32(perSender) })
    }

    // MARK: Check-in (the listings of Apple's Run Loops guide, 3-12 to 3-15)

    @Test func checkInBetweenTwoThreads() throws {
        let log = Recorder()
        let serverReady = Completion()
        let workerDone = Completion()
        let serverPort = PCPort()
        let server = LoopThread { loop in
            let checkIns = CheckInServer(loop: loop, mode: .default, onCheckIn: { w in
                log.add("server: \(w.name ?? "?") checked in")
                _ = try? w.port.send(PCPortMessage(msgid: 1, strings: ["work for \(w.name ?? "?")"]))
            })
            checkIns.serve(serverPort)
            try! serverPort.schedule(in: loop, forMode: .default)
            // No right exists yet: keep the mode from being empty until the first one.
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            serverReady.signal()
            loop.runInMode(.default, before: .distantFuture, returnAfterSourceHandled: true)
        }
        server.go()
        serverReady.wait()
        let toServer = try serverPort.makeSendRight()
        LoopThread.run { loop in
            let workerPort = PCPort { m in
                log.add("worker: got \(m.components.first?.string ?? "")")
                workerDone.signal()
                return nil
            }
            try! workerPort.schedule(in: loop, forMode: .default)
            #expect(try! toServer.checkIn(workerPort: workerPort, name: "worker-1") == .sent)
            loop.runInMode(.default, timeout: .seconds(10), returnAfterSourceHandled: true)
            workerPort.invalidate()
        }
        #expect(workerDone.wait(timeout: .seconds(30)))
        server.join()
        serverPort.invalidate()
        #expect(log.all == ["server: worker-1 checked in", "worker: got work for worker-1"])
    }

    @Test func checkInBetweenTwoProcessesAndAWorkerThatDies() throws {
        let log = Recorder()
        let serverPort = PCPort()
        let gone = Completion()
        let server = startCheckInServer(serverPort, onCheckIn: { w in
            log.add("in: \(w.name ?? "?") pid-matches=\(w.credentials?.pid != getpid())")
            if w.name == "alive" {
                _ = try? w.port.send(PCPortMessage(msgid: 1, strings: ["hello alive"]))
            }
        }, onWorkerGone: { w in
            log.add("gone: \(w.name ?? "?")")
            if w.name == "mortal" { gone.signal() }
        })
        // A worker process that checks in, gets a message, prints it.
        let alive = try spawnWorker(serverPort, "checkin", "alive")
        #expect(try alive.waitForExit() == 0, "\(alive.standardError)")
        #expect(alive.standardOutput == "hello alive\n")
        // A worker process that checks in and dies: the server is told.
        let r2 = try serverPort.makeSendRight()
        let mortal = try startPeer(["checkin-and-die", "mortal"], passing: r2)
        r2.invalidate()
        #expect(try mortal.waitForExit() == 0, "\(mortal.standardError)")
        #expect(gone.wait(timeout: .seconds(30)), "the server was not told the worker died")
        server.loop.stop()
        server.join()
        serverPort.invalidate()
        let all = log.all
        #expect(all.contains("in: alive pid-matches=true"))
        #expect(all.contains("in: mortal pid-matches=true"))
        #expect(all.contains("gone: mortal"))
    }

    @Test func aWorkerKilledWithSIGKILLIsReportedGone() throws {
        let serverPort = PCPort()
        let gone = Completion()
        let checkedIn = Completion()
        let workerRight = Mutex<SendRight?>(nil)
        let server = startCheckInServer(serverPort, onCheckIn: { w in
            workerRight.withLock { $0 = w.port }
            checkedIn.signal()
        }, onWorkerGone: { _ in gone.signal() })
        let worker = try spawnWorker(serverPort, "checkin-and-wait", "victim")
        // "ready\n" once it has checked in.
        try worker.waitForStandardOutput(containing: "\n")
        #expect(checkedIn.wait(timeout: .seconds(30)))
        worker.signal(SIGKILL)
        #expect(try worker.waitForExit() == 128 + SIGKILL)
        #expect(worker.standardOutput == "ready\n")
        #expect(gone.wait(timeout: .seconds(30)), "the server was not told the killed worker's port is gone")
        // And a send to it is an error at once, not a hang and not SIGPIPE.
        let right = try #require(workerRight.withLock { $0 })
        #expect(try right.send(PCPortMessage(msgid: 1), timeout: .seconds(5)) == .receiverGone)
        server.loop.stop()
        server.join()
        serverPort.invalidate()
    }

    /// A server keeps at most `maxWorkersPerUID` workers of one uid: any
    /// peer may check in, and each worker kept holds a descriptor, so one
    /// peer checking in again and again made it hold one per message. A
    /// worker that goes makes room for the next.
    @Test func aServerKeepsAtMostItsWorkersPerUIDAndAGoneOneMakesRoom() throws {
        let serverPort = PCPort()
        let log = Recorder()
        let gone = Completion()
        let server = LoopThread { loop in
            let checkIns = CheckInServer(
                loop: loop, mode: .default, maxWorkersPerUID: 2,
                onCheckIn: { w in log.add("in: \(w.name ?? "?")") }, onWorkerGone: { w in
                    log.add("gone: \(w.name ?? "?")")
                    gone.signal()
                },
                otherMessages: { _ in
                    // After the check-ins sent before it on the same connection.
                    PCPortMessage(msgid: 2, strings: ["\(checkInsKept())"])
                })
            CheckInServerBox.current.withLock { $0 = checkIns }
            checkIns.serve(serverPort)
            try! serverPort.schedule(in: loop, forMode: .default)
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(60))
        }
        server.go()
        defer {
            server.loop.stop()
            server.join()
            serverPort.invalidate()
        }
        let toServer = try serverPort.makeSendRight()
        let workers = (1...4).map { _ in PCPort() }
        for (i, w) in workers.enumerated() {
            #expect(try toServer.checkIn(workerPort: w, name: "w\(i + 1)") == .sent)
        }
        guard case .reply(let kept) = try toServer.request(PCPortMessage(msgid: 1), receiveTimeout: .seconds(30)) else {
            Issue.record("no answer after the check-ins")
            return
        }
        #expect(kept.components.first?.string == "2")
        #expect(log.all == ["in: w1", "in: w2"])
        // w1 goes: the server is told, and the next check-in is kept.
        workers[0].invalidate()
        #expect(gone.wait(timeout: .seconds(30)))
        let fifth = PCPort()
        #expect(try toServer.checkIn(workerPort: fifth, name: "w5") == .sent)
        guard case .reply(let after) = try toServer.request(PCPortMessage(msgid: 1), receiveTimeout: .seconds(30)) else {
            Issue.record("no answer after the fifth check-in")
            return
        }
        #expect(after.components.first?.string == "2")
        #expect(log.all == ["in: w1", "in: w2", "gone: w1", "in: w5"])
        (workers + [fifth]).forEach { $0.invalidate() }
    }

    @Test func anUnsealedMemfdIsRefusedAndOnlyThatConnectionClosed() throws {
        try expectRefusedAndServingOn(peer: ["unsealed-memfd"], error: "large component refused")
    }

    /// A sealed memfd of 1 GiB made by ftruncate alone (every byte a hole:
    /// it costs its sender nothing, and reading it would allocate 1 GiB of
    /// shared memory charged to the receiver) is refused from the length
    /// its record announces, beyond `maxLargeComponentBytes` (256 MiB),
    /// before anything is mapped; that connection is closed and the port
    /// serves on. Before the limit it was delivered.
    @Test func aLargeComponentBeyondTheLimitIsRefusedAndOnlyThatConnectionClosed() throws {
        try expectRefusedAndServingOn(peer: ["sparse-memfd", "\(1 << 30)"], error: "exceeds the limit of 268435456")
    }

    /// Within the limit, a sealed memfd made long by ftruncate alone (all
    /// hole) is refused too: reading its holes would allocate 64 MiB of
    /// shared memory charged to the receiver, which the sender never paid
    /// for. It was delivered.
    @Test func aSparseSharedMemoryComponentIsRefusedAndOnlyThatConnectionClosed() throws {
        try expectRefusedAndServingOn(peer: ["sparse-memfd", "\(64 << 20)"], error: "holes are refused")
    }

    /// A sealed memfd twice as long as announced, the announced half a
    /// hole and the other half written, has as many bytes allocated as
    /// announced; its announced range is still a hole, and it is refused.
    /// It was delivered.
    @Test func aSharedMemoryComponentWithAHoleInItsAnnouncedRangeIsRefused() throws {
        try expectRefusedAndServingOn(peer: ["long-memfd", "\(16 << 20)"], error: "has a hole at byte 0")
    }

    /// An O_PATH descriptor opens nothing: as a large-data component or as
    /// a check-in's reply port, every use of it (F_GET_SEALS, sendmsg)
    /// would fail with EBADF, which PortSystem traps on as its own bug. It
    /// is refused on receipt, that connection closed, and the port serves
    /// on.
    @Test(arguments: [["opath-large"], ["opath-checkin", "w"]])
    func aPathOnlyDescriptorIsRefusedAndOnlyThatConnectionClosed(_ peerArguments: [String]) throws {
        try expectRefusedAndServingOn(peer: peerArguments, error: "O_PATH")
    }

    /// A peer process (`port_peer.py` with `peer`) sends one hostile
    /// record: the port reports an error containing `error`, delivers
    /// nothing of it, and still serves a good right afterwards.
    private func expectRefusedAndServingOn(peer arguments: [String], error: String) throws {
        let errors = Recorder()
        let received = Recorder()
        let got = Completion()
        let failed = Completion()
        let served = try ServedPort { m in
            // Shared memory is not read: a hostile one may be all hole.
            if case .sharedMemory(let memory)? = m.components.first {
                received.add("shared memory of \(memory.count) bytes")
            } else {
                received.add(m.components.first?.string ?? "")
            }
            got.signal()
            // A check-in answers on the worker's port, as CheckInServer does.
            if let worker = m.replyPort { _ = try? worker.send(PCPortMessage(msgid: 1, strings: ["welcome"])) }
            return nil
        }
        served.port.onError { e in
            errors.add("\(e)")
            failed.signal()
        }
        defer { served.stop() }
        let hostile = try served.port.makeSendRight()
        let peer = try startPeer(arguments, passing: hostile)
        #expect(try peer.waitForExit() == 0, "\(peer.standardError)")
        #expect(failed.wait(timeout: .seconds(30)))
        #expect(errors.all.first?.contains(error) == true, "\(errors.all)")
        #expect(received.all.isEmpty)
        let good = try served.port.makeSendRight()
        #expect(try good.send(PCPortMessage(msgid: 1, strings: ["still served"])) == .sent)
        #expect(got.wait(timeout: .seconds(30)))
        #expect(received.all == ["still served"])
    }

    /// A check-in server on its own loop thread, running until stopped.
    private func startCheckInServer(
        _ port: PCPort, onCheckIn: @escaping @Sendable (CheckedInWorker) -> Void,
        onWorkerGone: @escaping @Sendable (CheckedInWorker) -> Void
    ) -> LoopThread {
        let server = LoopThread { loop in
            let checkIns = CheckInServer(loop: loop, mode: .default, onCheckIn: onCheckIn, onWorkerGone: onWorkerGone)
            checkIns.serve(port)
            try! port.schedule(in: loop, forMode: .default)
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(60))
        }
        server.go()
        return server
    }

    /// A Python worker process given a right to `port`.
    private func spawnWorker(_ port: PCPort, _ verb: String, _ name: String) throws -> ChildProcess {
        let right = try port.makeSendRight()
        defer { right.invalidate() }  // the child has its own copy
        return try startPeer([verb, name], passing: right)
    }

    /// Starts Fixtures/port_peer.py with `arguments`, `right` as its descriptor 3.
    private func startPeer(_ arguments: [String], passing right: SendRight) throws -> ChildProcess {
        try ChildProcess(
            executable: "python3", arguments: [SourceTree.path("Tests/PortMessagingTests/Fixtures/port_peer.py")] + arguments,
            passing: [3: right.fd])
    }

    // MARK: Swift concurrency

    @Test func messagesAsAnAsyncSequenceAndAnAsyncRequest() async throws {
        let port = PCPort()
        let stream = try port.messages()
        let right = try port.makeSendRight()
        for i in 0..<3 { try right.send(PCPortMessage(msgid: UInt32(i), strings: ["m\(i)"])) }
        var seen: [String] = []
        for await m in stream {
            seen.append(m.components.first?.string ?? "")
            if seen.count == 3 { break }
        }
        #expect(seen == ["m0", "m1", "m2"])
        port.invalidate()

        let replier = PCPort { m in PCPortMessage(msgid: m.msgid, strings: ["async reply"]) }
        try replier.schedule(in: BackgroundLoop.shared.loop, forMode: .default)
        let r = try await replier.makeSendRight().request(PCPortMessage(msgid: 9), receiveTimeout: .seconds(5))
        #expect(r.reply?.components.first?.string == "async reply")
        replier.invalidate()
    }
}

/// The check-in server of `aServerKeepsAtMostItsWorkersPerUIDAndAGoneOneMakesRoom`,
/// for its own handler to count its workers.
private enum CheckInServerBox {
    static let current = Mutex<CheckInServer?>(nil)
}

/// How many workers the test's check-in server keeps.
private func checkInsKept() -> Int {
    CheckInServerBox.current.withLock { $0?.workers.count ?? -1 }
}
