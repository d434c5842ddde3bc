// PortRequestIdentityTests: what a port's handler learns about a request
// beyond its components: the reply port the sender passed (kept apart from
// the one-shot reply right, `passedReplyPort`), and who made the connection
// (`connectionCredentials`, SO_PEERCRED at accept) for a listening port.

import Glibc
import Synchronization
import Testing
@testable import PortCore

@Suite struct PortRequestIdentityTests {
    @Test func aRequestKeepsThePassedReplyPortBesideTheReplyRight() throws {
        let address = try UnixSocketAddress(abstract: "portd-identity-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        let listening = try UnixSocket.makeSocket()
        try UnixSocket.bind(listening, to: address)
        try UnixSocket.listen(listening)
        let seen = Mutex<(passed: SendRight?, reply: SendRight?, connector: Credentials?, sender: Credentials?)?>(nil)
        let port = try PCPort(adoptingListeningDescriptor: listening) { m in
            seen.withLock { $0 = (m.passedReplyPort, m.replyPort, m.connectionCredentials, m.sender) }
            // Answer through the passed port too: it is a right to the sender's port.
            _ = try? m.passedReplyPort?.send(PCPortMessage(msgid: 9, strings: ["to your port"]), timeout: .seconds(20))
            return PCPortMessage(msgid: m.msgid, strings: ["reply"])
        }
        let thread = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(60))
        }
        try port.schedule(in: thread.loop, forMode: .default)
        thread.go()
        defer {
            port.invalidate()
            thread.loop.stop()
            thread.join()
        }

        let fd = try UnixSocket.makeSocket()
        #expect(try UnixSocket.connect(fd, to: address) == .connected)
        let right = SendRight(adopting: fd)
        let (mine, theirs) = try UnixSocket.makePair()
        defer { SystemCall.close(mine) }
        var request = PCPortMessage(msgid: 5, strings: ["hi"])
        request.replyPort = SendRight(adopting: theirs)
        let reply = try #require(try right.request(request, receiveTimeout: .seconds(20)).reply)
        #expect(reply.components.first?.string == "reply")

        let got = try #require(seen.withLock { $0 })
        #expect(got.passed != nil)
        #expect(got.reply != nil && got.reply !== got.passed)
        #expect(got.connector == Credentials(pid: getpid(), uid: getuid(), gid: getgid()))
        #expect(got.sender?.pid == getpid())
        // The message sent through the passed reply port arrived at our end of it.
        #expect(waitReadable(mine))
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(mine, &buffer, buffer.count)
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
}
