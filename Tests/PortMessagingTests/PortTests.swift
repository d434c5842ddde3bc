// Ports and rights: messages with components and credentials, request and
// reply, deadlines, invalidation, malformed peers, large components.

import Foundation
import Glibc
import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
import PortWire
@testable import PortMessaging

/// A port served on its own loop thread until `stop()`.
final class ServedPort: @unchecked Sendable {
    // Safe to share: both fields are written once in init.
    let port: PCPort
    let thread: LoopThread

    convenience init(limits: PortLimits = .default, handler: @escaping PCPort.Handler) throws {
        try self.init(port: PCPort(limits: limits, handler: handler))
    }

    /// Serves `port` (one made with a view handler, say).
    init(port: PCPort) throws {
        self.port = port
        thread = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(120))
        }
        try port.schedule(in: thread.loop, forMode: .default)
        thread.go()
    }

    func stop() {
        thread.loop.stop()
        thread.join()
        port.invalidate()
    }
}

@Suite(.serialized) struct PortTests {
    @Test func messageWithComponentsCredentialsAndARight() throws {
        let got = Mutex<PCPortMessage?>(nil)
        let done = Completion()
        let served = try ServedPort { m in
            got.withLock { $0 = m }
            done.signal()
            return nil
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        let other = PCPort()
        let passed = try other.makeSendRight()
        let msg = PCPortMessage(msgid: 42, components: [.data(Array("hello".utf8)), .data([0, 1, 0, 255]), .port(passed)])
        #expect(try right.send(msg, timeout: .seconds(5)) == .sent)
        #expect(done.wait(timeout: .seconds(60)))
        let m = try #require(got.withLock { $0 })
        #expect(m.msgid == 42)
        #expect(m.components.count == 3)
        #expect(m.components[0].string == "hello")
        #expect(m.components[1].bytes == [0, 1, 0, 255])
        guard case .port = m.components[2] else { Issue.record("not a port"); return }
        #expect(m.sender == Credentials(pid: getpid(), uid: getuid(), gid: getgid()))
        other.invalidate()
    }

    @Test func aPassedRightReachesItsPort() throws {
        // A right received inside a message can be used to send to its port.
        let second = Mutex<[String]>([])
        let done = Completion()
        let target = try ServedPort { m in
            second.withLock { $0.append(m.components[0].string ?? "?") }
            done.signal()
            return nil
        }
        defer { target.stop() }
        let relay = try ServedPort { m in
            if case .port(let r) = m.components[0] {
                _ = try? r.send(PCPortMessage(msgid: 1, strings: ["via relay"]), timeout: .seconds(5))
            }
            return nil
        }
        defer { relay.stop() }
        let toRelay = try relay.port.makeSendRight()
        try toRelay.send(PCPortMessage(msgid: 7, components: [.port(try target.port.makeSendRight())]))
        #expect(done.wait(timeout: .seconds(60)))
        #expect(second.withLock { $0 } == ["via relay"])
    }

    @Test func requestAndReply() throws {
        let served = try ServedPort { m in
            PCPortMessage(msgid: m.msgid + 1, strings: ["re: " + (m.components.first?.string ?? "")])
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        for i in 0..<100 {
            let r = try right.request(PCPortMessage(msgid: UInt32(i), strings: ["q\(i)"]), receiveTimeout: .seconds(5))
            let reply = try #require(r.reply)
            #expect(reply.msgid == UInt32(i + 1))
            #expect(reply.sender?.pid == getpid(), "a reply carries the replier's kernel credentials")
            #expect(reply.components.first?.string == "re: q\(i)")
        }
    }

    /// The transport reuses a received message's arrays once the receiver
    /// let go of them (MessageTransport, "Reuse"): messages a handler keeps
    /// and replies a requester keeps must keep their own bytes while later
    /// messages, some dropped and so reused, arrive after them.
    @Test func keptMessagesAndRepliesKeepTheirBytesWhileLaterOnesReuseStorage() throws {
        func payload(_ i: Int, _ part: Int) -> [UInt8] {
            (0..<(1 + (i * 37 + part * 11) % 300)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i &+ part) }
        }
        let kept = Mutex<[PCPortMessage]>([])
        let served = try ServedPort { m in
            if m.msgid % 3 != 0 { kept.withLock { $0.append(m) } }
            // The reply: the request's components in reverse order.
            return PCPortMessage(msgid: m.msgid, components: m.components.reversed())
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        var replies: [PCPortMessage] = []
        for i in 0..<60 {
            let parts = 1 + i % 3
            let request = PCPortMessage(msgid: UInt32(i), components: (0..<parts).map { .data(payload(i, $0)) })
            let reply = try #require(try right.request(request, receiveTimeout: .seconds(5)).reply)
            if i % 2 == 0 { replies.append(reply) }
        }
        for reply in replies {
            let i = Int(reply.msgid)
            #expect(reply.components.map(\.bytes) == (0..<(1 + i % 3)).reversed().map { payload(i, $0) })
        }
        let messages = kept.withLock { $0 }
        #expect(messages.count == 40)
        for m in messages {
            let i = Int(m.msgid)
            #expect(m.components.map(\.bytes) == (0..<(1 + i % 3)).map { payload(i, $0) })
        }
    }

    @Test func aHandlerMayAnswerLaterThroughTheReplyPort() throws {
        let kept = Mutex<SendRight?>(nil)
        let served = try ServedPort { m in
            kept.withLock { $0 = m.replyPort }
            let right = m.replyPort!
            PCRunLoop.current.perform(after: .milliseconds(5), inModes: [.default]) {
                _ = try? right.send(PCPortMessage(msgid: 99, strings: ["later"]), timeout: .seconds(5))
            }
            return nil
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        let r = try right.request(PCPortMessage(msgid: 1), receiveTimeout: .seconds(5))
        #expect(r.reply?.components.first?.string == "later")
    }

    @Test func noReplyIsAnEmptyReply() throws {
        let served = try ServedPort { _ in nil }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        let r = try right.request(PCPortMessage(msgid: 5), receiveTimeout: .seconds(5))
        #expect(r.reply?.msgid == 5)
        #expect(r.reply?.components.isEmpty == true)
    }

    @Test func receiveTimeoutAndTheLateReplyIsDiscarded() throws {
        let gate = Completion()
        let served = try ServedPort { m in
            if m.msgid == 1 { gate.wait() }  // held until the requester has timed out
            return PCPortMessage(msgid: m.msgid)
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        guard case .receiveTimedOut = try right.request(PCPortMessage(msgid: 1), receiveTimeout: .milliseconds(10)) else {
            Issue.record("expected a receive timeout"); return
        }
        gate.signal()
        let r = try right.request(PCPortMessage(msgid: 2), receiveTimeout: .seconds(5))
        #expect(r.reply?.msgid == 2)  // not the late reply to msgid 1
    }

    @Test func aRequestToAFullQueueIsASendTimeout() throws {
        let port = PCPort { _ in nil }  // never scheduled: nobody reads
        defer { port.invalidate() }
        let right = try port.makeSendRight()
        let filler = PCPortMessage(msgid: 1, components: [.data([UInt8](repeating: 1, count: 4096))])
        while try right.send(filler, timeout: .milliseconds(5)) == .sent {}
        guard case .sendTimedOut = try right.request(PCPortMessage(msgid: 2), sendTimeout: .milliseconds(20)) else {
            Issue.record("expected a send timeout"); return
        }
    }

    @Test func onlyTheReplyIsServicedWhileARequestWaits() throws {
        let served = try ServedPort { m in PCPortMessage(msgid: m.msgid) }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        let log = Recorder()
        LoopThread.run { loop in
            let other = RunLoopSource { _ in log.add("other source") }
            loop.add(other, forMode: .default)
            loop.add(PCTimer(fireAt: loop.clock.now()) { _ in log.add("timer") }, forMode: .default)
            other.signal()
            let r = try! right.request(PCPortMessage(msgid: 3), receiveTimeout: .seconds(5))
            log.add("reply \(r.reply?.msgid ?? 0)")
            loop.runInMode(.default, timeout: .zero)
        }
        // The request ran the loop in its private mode: the default mode's
        // signalled source and due timer waited until the default mode ran.
        #expect(log.all.first == "reply 3")
        #expect(Set(log.all.dropFirst()) == ["other source", "timer"])
    }

    @Test func aRequesterThatNeverReadsItsRepliesIsDisconnectedNotWaitedFor() throws {
        let disconnected = Completion()
        let served = try ServedPort { m in PCPortMessage(msgid: m.msgid, strings: ["reply"]) }
        served.port.onError { e in
            if "\(e)".contains("does not read its replies") { disconnected.signal() }
        }
        defer { served.stop() }
        let greedy = try served.port.makeSendRight()
        // Requests (REPLY_EXPECTED) written raw, never reading a reply.
        let request: [UInt8] = Array("port".utf8) + [1, 0x02, 0, 0, 1, 0, 0, 0]
        // Keep requesting (waiting for room when the port's queue is full)
        // until the port hangs up on us, or a deadline says it never did.
        let deadline = MonotonicInstant.now() + .seconds(60)
        var hungUp = false
        while !hungUp && MonotonicInstant.now() < deadline {
            let n = request.withUnsafeBytes { send(greedy.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n > 0 { continue }
            switch errno {
            case EAGAIN:
                var p = pollfd(fd: greedy.fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 100)
            case EPIPE, ECONNRESET: hungUp = true
            default: Issue.record("send: errno \(errno)"); hungUp = true
            }
        }
        #expect(hungUp, "the port never dropped a requester that does not read")
        // Everyone else is still served, promptly.
        let good = try served.port.makeSendRight()
        let r = try good.request(PCPortMessage(msgid: 9), receiveTimeout: .seconds(2))
        #expect(r.reply?.components.first?.string == "reply")
        // And the greedy one is dropped once a reply finds its queue full.
        #expect(disconnected.wait(timeout: .seconds(60)))
    }

    @Test func sendingToAnInvalidatedPortFailsAtOnce() throws {
        let port = PCPort { _ in nil }
        let right = try port.makeSendRight()
        port.invalidate()
        port.invalidate()
        #expect(try right.send(PCPortMessage(msgid: 1), timeout: .seconds(5)) == .receiverGone)
        guard case .invalidPort = try right.request(PCPortMessage(msgid: 1)) else {
            Issue.record("expected invalidPort"); return
        }
        #expect(throws: PortError.self) { try port.makeSendRight() }
    }

    @Test func holdersLearnOfInvalidationWithoutSending() throws {
        let port = PCPort { _ in nil }
        let right = try port.makeSendRight()
        let told = Mutex(false)
        LoopThread.run { loop in
            try! right.onInvalidation(in: loop, forMode: .default) {
                told.withLock { $0 = true }
            }
            loop.perform(after: .milliseconds(1), inModes: [.default]) { port.invalidate() }
            loop.runInMode(.default, timeout: .seconds(10), returnAfterSourceHandled: true)
        }
        #expect(told.withLock { $0 })
    }

    @Test func aFullQueueMakesTheSenderWaitThenTimeOut() throws {
        let port = PCPort { _ in nil }  // never scheduled: nobody reads
        defer { port.invalidate() }
        let right = try port.makeSendRight()
        var sent = 0
        while true {
            let r = try right.send(PCPortMessage(msgid: 1, components: [.data([UInt8](repeating: 7, count: 4096))]),
                                   timeout: .milliseconds(20))
            if r == .timedOut { break }
            #expect(r == .sent)
            sent += 1
            if sent > 100_000 { Issue.record("queue never filled"); break }
        }
        #expect(sent > 0)
    }

    @Test func aMalformedRecordClosesOnlyThatConnection() throws {
        let errors = Recorder()
        let received = Recorder()
        let done = Completion()
        let served = try ServedPort { m in
            received.add(m.components.first?.string ?? "")
            done.signal()
            return nil
        }
        served.port.onError { e in errors.add("\(e)") }
        defer { served.stop() }
        let bad = try served.port.makeSendRight()
        let good = try served.port.makeSendRight()
        let garbage: [UInt8] = Array("not a port message".utf8)
        _ = garbage.withUnsafeBytes { send(bad.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // The port closes the bad connection: its holder is told, without sending.
        LoopThread.run { loop in
            try! bad.onInvalidation(in: loop, forMode: .default) {}
            #expect(loop.runInMode(.default, timeout: .seconds(10), returnAfterSourceHandled: true) == .handledSource)
        }
        #expect(try bad.send(PCPortMessage(msgid: 1), timeout: .seconds(1)) == .receiverGone)
        #expect(try good.send(PCPortMessage(msgid: 2, strings: ["still served"])) == .sent)
        #expect(done.wait(timeout: .seconds(60)))
        #expect(received.all.contains("still served"))
        #expect(errors.all.first?.contains("bad magic") == true)
    }

    @Test func largeComponentTravelsAsSealedSharedMemory() throws {
        // One byte more than a whole record holds: the smallest data
        // component that cannot go inline, so it must travel as a sealed
        // memfd. (Hundreds of MiB are scripts/bench's business.) Every byte
        // differs, so the digest notices any byte out of place.
        let size = PortLimits.default.maxRecordSize + 1
        var x: UInt32 = 2_463_534_242
        var big = (0..<size).map { _ in
            x ^= x << 13; x ^= x >> 17; x ^= x << 5
            return UInt8(truncatingIfNeeded: x)
        }
        let expected = fnv1a(big)
        let arrived = Mutex<(digest: UInt64, count: Int, sealed: Bool)?>(nil)
        let done = Completion()
        let served = try ServedPort { m in
            // The memfd path: a mapped memfd, not inline bytes.
            if case .sharedMemory(let shm) = m.components[1] {
                let sealed = (try? MemFD.seals(shm.descriptor))?.isSuperset(of: .all) ?? false
                arrived.withLock { $0 = (shm.withUnsafeBytes { fnv1a($0) }, shm.count, sealed) }
            }
            done.signal()
            return nil
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        #expect(try right.send(PCPortMessage(msgid: 3, components: [.data([1, 2, 3]), .data(big)]), timeout: .seconds(30)) == .sent)
        big = []
        #expect(done.wait(timeout: .seconds(60)))
        let a = try #require(arrived.withLock { $0 }, "the large component arrived as shared memory")
        #expect(a.sealed, "sealed against writes, shrinking, growing and further seals")
        #expect(a.count == size)
        #expect(a.digest == expected)
    }
}

func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return h
}

func fnv1a(_ raw: UnsafeRawBufferPointer) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in raw { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return h
}
