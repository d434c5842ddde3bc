// PortRequestIdentityTests: what a port's handler learns about a request
// beyond its components: the reply port the sender passed (kept apart from
// the one-shot reply right, `passedReplyPort`), and who made the connection
// (`connectionCredentials`, SO_PEERCRED at accept) for a listening port;
// a connection the port refuses when it accepts it (`setAdmission`) is
// closed at once, and a request on it reads the refusal as its reply,
// whether it was sent before the refusal or after; the refused peer's
// groups are never asked for, an admitted one's are (SO_PEERGROUPS).

import Glibc
import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
import PortWire
@testable import PortMessaging

/// Serves `port` on a loop thread of its own (kept alive by a far timer).
private func serve(_ port: PCPort) throws -> LoopThread {
    let thread = LoopThread { loop in
        loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
        loop.runInMode(.default, timeout: .seconds(60))
    }
    try port.schedule(in: thread.loop, forMode: .default)
    thread.go()
    return thread
}

private func stop(_ port: PCPort, _ thread: LoopThread) {
    port.invalidate()
    thread.loop.stop()
    thread.join()
}

@Suite struct PortRequestIdentityTests {
    @Test func aRequestKeepsThePassedReplyPortBesideTheReplyRight() throws {
        let address = try UnixSocketAddress(abstract: "portd-identity-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        let listening = try UnixSocket.makeSocket()
        try UnixSocket.bind(listening, to: address)
        try UnixSocket.listen(listening)
        let seen = Mutex<(passed: SendRight?, reply: SendRight?, connector: Credentials?, sender: Credentials?)?>(nil)
        let port = try PCPort(listeningDescriptor: listening) { m in
            seen.withLock { $0 = (m.passedReplyPort, m.replyPort, m.connectionCredentials, m.sender) }
            // Answer through the passed port too: it is a right to the sender's port.
            _ = try? m.passedReplyPort?.send(PCPortMessage(msgid: 9, strings: ["to your port"]), timeout: .seconds(20))
            return PCPortMessage(msgid: m.msgid, strings: ["reply"])
        }
        let thread = try serve(port)
        defer { stop(port, thread) }

        let fd = try UnixSocket.makeSocket()
        #expect(try UnixSocket.connect(fd, to: address) == .connected)
        let right = SendRight(descriptor: fd)
        let replyPair = try UnixSocket.makePair()
        let mine = replyPair.first
        var request = PCPortMessage(msgid: 5, strings: ["hi"])
        request.replyPort = SendRight(descriptor: replyPair.second)
        let reply = try #require(try right.request(request, receiveTimeout: .seconds(20)).reply)
        #expect(reply.components.first?.string == "reply")

        let got = try #require(seen.withLock { $0 })
        #expect(got.passed != nil)
        #expect(got.reply != nil && got.reply !== got.passed)
        #expect(got.connector == Credentials(pid: getpid(), uid: getuid(), gid: getgid()))
        #expect(got.sender?.pid == getpid())
        // The message sent through the passed reply port arrived at our end of it.
        #expect(waitReadable(mine.rawValue))
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(mine.rawValue, &buffer, buffer.count)
        let decoded = try WireDecoder.decode(Array(buffer[0..<max(n, 0)]))
        #expect(decoded.msgid == 9)
    }

    @Test func aPlainMessageHasNoPassedReplyPortAndAMintedRightNoConnector() throws {
        let seen = Mutex<(passed: Bool, reply: Bool, connector: Credentials?)?>(nil)
        let done = Completion()
        let served = try ServedPort { m in
            seen.withLock { $0 = (m.passedReplyPort != nil, m.replyPort != nil, m.connectionCredentials) }
            done.signal()
            return nil
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        let other = PCPort()
        defer { other.invalidate() }
        #expect(try right.send(PCPortMessage(msgid: 1), timeout: .seconds(20), replyPort: other) == .sent)
        #expect(done.wait(timeout: .seconds(20)))
        let got = try #require(seen.withLock { $0 })
        #expect(!got.passed, "only requests have a separate passed reply port")
        #expect(got.reply, "a plain message's reply port is the one passed")
        #expect(got.connector == nil, "a right minted with socketpair has no accept-time credentials")
    }

    @Test func aRefusedConnectionReadsTheRefusalAsItsReply() throws {
        let address = try UnixSocketAddress(abstract: "portd-admission-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        let listening = try UnixSocket.makeSocket()
        try UnixSocket.bind(listening, to: address)
        try UnixSocket.listen(listening)
        let handled = Mutex(0)
        let admitted = Mutex<[UInt64]>([])
        let port = try PCPort(listeningDescriptor: listening) { m in
            handled.withLock { $0 += 1 }
            return PCPortMessage(msgid: m.msgid, strings: ["served"])
        }
        // The first connection is served, every later one refused.
        port.setAdmission { id, peer in
            #expect(peer?.uid == getuid())
            let first = admitted.withLock { list -> Bool in
                if list.isEmpty { list.append(id) }
                return list.first == id
            }
            return first ? nil : PCPortMessage(msgid: 0, strings: ["refused"])
        }
        let thread = try serve(port)
        defer { stop(port, thread) }
        func connect() throws -> SendRight {
            let fd = try UnixSocket.makeSocket()
            #expect(try UnixSocket.connect(fd, to: address) == .connected)
            return SendRight(descriptor: fd)
        }
        let served = try connect()
        #expect(try served.request(PCPortMessage(msgid: 1), receiveTimeout: .seconds(20)).reply?.components.first?.string == "served")
        let id = try #require(admitted.withLock { $0.first })
        #expect(try port.peerGroups(ofConnection: id) != nil, "an admitted connection's groups can be read")

        // Sent at once: the request is likely queued before the refusal.
        let early = try connect()
        #expect(try early.request(PCPortMessage(msgid: 2), receiveTimeout: .seconds(20)).reply?.components.first?.string == "refused")
        // Sent after the port hung up: the send fails, the refusal is read.
        let late = try connect()
        let gone = Completion()
        try late.onInvalidation(in: thread.loop) { gone.signal() }
        #expect(gone.wait(timeout: .seconds(20)))
        #expect(try late.request(PCPortMessage(msgid: 3), receiveTimeout: .seconds(20)).reply?.components.first?.string == "refused")
        // Nothing more comes on a refused connection; the served one goes on.
        guard case .invalidPort = try late.request(PCPortMessage(msgid: 4), receiveTimeout: .seconds(20)) else {
            Issue.record("a refused connection answered again")
            return
        }
        #expect(try served.request(PCPortMessage(msgid: 5), receiveTimeout: .seconds(20)).reply != nil)
        #expect(handled.withLock { $0 } == 2)
        #expect(port.connectionCount == 1)
    }

    /// A peer that answers and closes while a record of ours is still unread
    /// in its queue: Linux reports ECONNRESET once, before the answer. The
    /// answer is still read, on the request's send path (the send finds the
    /// peer gone) and on its read path (the transport reading on).
    @Test func aPartingRecordIsReadPastTheConnectionReset() throws {
        let pair = try UnixSocket.makePair()
        let client = SendRight(descriptor: pair.first)
        let server = SendRight(descriptor: pair.second)
        #expect(try server.send(PCPortMessage(msgid: 0, strings: ["refused"])) == .sent)
        #expect(try client.send(PCPortMessage(msgid: 1)) == .sent)  // left unread
        server.invalidate()
        #expect(try client.request(PCPortMessage(msgid: 2), receiveTimeout: .seconds(20)).reply?.components.first?.string == "refused")

        let again = try UnixSocket.makePair()
        let reader = again.first
        let writer = SendRight(descriptor: again.second)
        #expect(try writer.send(PCPortMessage(msgid: 7, strings: ["last"])) == .sent)
        let ours: [UInt8] = [0x70]
        _ = try ours.withUnsafeBytes { bytes in try UnixSocket.send(reader, bytes) }  // left unread
        writer.invalidate()
        let transport = MessageTransport(limits: .default)
        guard case .message(let m, _) = try transport.receive(on: reader) else {
            Issue.record("the parting record was not read past ECONNRESET")
            return
        }
        #expect(m.msgid == 7)
        guard case .closed = try transport.receive(on: reader) else {
            Issue.record("the connection did not end after the parting record")
            return
        }
    }
}
