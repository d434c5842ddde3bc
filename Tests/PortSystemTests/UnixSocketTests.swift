// UnixSocket, UnixSocketAddress and the sendmsg/recvmsg wrappers on real
// sockets: messages with descriptors and credentials through a socketpair,
// the outcomes that are values (would block, end of stream, peer closed),
// truncation, addresses and stale socket files.

import CPortSystem
import Glibc
import Testing
import PortTestSupport
@testable import PortSystem

@Suite struct UnixSocketTests {
    @Test func pairIsCloseOnExecAndNonBlocking() throws {
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        #expect(isCloseOnExec(a.rawValue) && isCloseOnExec(b.rawValue))
        #expect(isNonBlocking(a.rawValue) && isNonBlocking(b.rawValue))
        #expect(try UnixSocket.peerCredentials(a) == Credentials(pid: getpid(), uid: getuid(), gid: getgid()))
    }

    @Test func messageWithDescriptorsAndCredentials() throws {
        let t = TestWireTransport()
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        try UnixSocket.setPassCredentials(b, true)
        let portPair = try UnixSocket.makePair()
        let port = portPair.first
        let portPeer = portPair.second
        let replyPair = try UnixSocket.makePair()
        let reply = replyPair.first
        let replyPeer = replyPair.second

        let sent = try t.send(
            a, msgid: 7, replyPort: reply.rawValue, components: [.data(Array("hello".utf8)), .port(port.rawValue)])
        #expect(sent == .sent(12 + 16 + 5))
        let m = try t.receive(b)
        #expect(m.msgid == 7)
        #expect(m.credentials == Credentials(pid: getpid(), uid: getuid(), gid: getgid()))
        guard let rawR = m.replyPort, case .port(let rawP) = m.components[1] else {
            Issue.record("no reply port or port component: \(m)")
            return
        }
        let r = OwnedDescriptor(adopting: rawR)
        let p = OwnedDescriptor(adopting: rawP)
        #expect(m.components[0] == .data(Array("hello".utf8)))
        // Received descriptors are new numbers, CLOEXEC (MSG_CMSG_CLOEXEC),
        // and lead where the sent ones led.
        #expect(rawR != reply.rawValue && rawP != port.rawValue)
        #expect(isCloseOnExec(r.rawValue) && isCloseOnExec(p.rawValue))
        #expect(try t.send(p, msgid: 8, components: []) == .sent(12))
        #expect(try t.receive(portPeer).msgid == 8)
        #expect(try t.send(r, msgid: 9, components: []) == .sent(12))
        #expect(try t.receive(replyPeer).msgid == 9)
    }

    @Test func credentialsOnlyWithPassCred() throws {
        let t = TestWireTransport()
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        _ = try t.send(a, msgid: 1, components: [])
        #expect(try t.receive(b).credentials == nil)
        // Explicit credentials (our own, the only ones we may claim) arrive as sent.
        try UnixSocket.setPassCredentials(b, true)
        let me = Credentials(pid: getpid(), uid: getuid(), gid: getgid())
        _ = try t.send(a, msgid: 2, components: [], credentials: me)
        #expect(try t.receive(b).credentials == me)
    }

    @Test func outcomesAreValues() throws {
        let t = TestWireTransport()
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        #expect(throws: TestWireTransport.ReceiveError.outcome(.wouldBlock)) { try t.receive(b) }
        // A full queue is .wouldBlock, never a silent drop.
        var queued = 0
        while try t.send(a, msgid: UInt32(queued), components: [.data([1])]) != .wouldBlock {
            queued += 1
            if queued > 100_000 { break }
        }
        #expect(queued > 0 && queued < 100_000)
        for i in 0..<queued { #expect(try t.receive(b).msgid == UInt32(i)) }
        a.close()
        #expect(throws: TestWireTransport.ReceiveError.outcome(.endOfStream)) { try t.receive(b) }
        #expect(try t.send(b, msgid: 1, components: []) == .peerClosed)  // EPIPE, and no SIGPIPE
    }

    @Test func shutdownWriteEndsTheStream() throws {
        let t = TestWireTransport()
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        _ = try t.send(a, msgid: 5, components: [])
        try UnixSocket.shutdown(a, .write)
        #expect(try t.receive(b).msgid == 5)
        #expect(throws: TestWireTransport.ReceiveError.outcome(.endOfStream)) { try t.receive(b) }
        #expect(try t.send(a, msgid: 1, components: []) == .peerClosed)
    }

    @Test func oversizedRecordIsTruncatedNotSplit() throws {
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        let bytes = [UInt8](repeating: 0xAB, count: 100)
        _ = try bytes.withUnsafeBytes { try UnixSocket.send(a, $0) }
        let small = UnsafeMutableRawBufferPointer.allocate(byteCount: 50, alignment: 8)
        defer { small.deallocate() }
        #expect(
            try UnixSocket.receive(b, into: small, control: nil)
                == .record(.init(byteCount: 50, controlLength: 0, truncated: true, controlTruncated: false)))
        // The rest of that record is gone, not delivered as another one.
        #expect(try UnixSocket.receive(b, into: small, control: nil) == .wouldBlock)
    }

    @Test func controlTruncationIsDetected() throws {
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        let pipes = try (0..<3).map { _ in try makePipe() }
        defer { for (r, w) in pipes { close(r); close(w) } }
        let sendControl = ControlMessage.Buffer(descriptors: 3, credentials: false)
        let fds = pipes.map { $0.0 }
        let payload: [UInt8] = [1, 2, 3]
        func sendThree() throws {
            sendControl.reset()
            for fd in fds { sendControl.append(number: fd) }
            let n = sendControl.finish()
            let r = try payload.withUnsafeBytes { try UnixSocket.send(a, $0, control: sendControl, controlLength: n) }
            #expect(r == .sent(3))
        }
        let data = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 8)
        defer { data.deallocate() }
        var out = OwnedDescriptors(capacity: 8)

        // Room for one descriptor of three (CMSG_SPACE rounds it up to two):
        // MSG_CTRUNC; as many as fit are installed (ours to close), the
        // kernel closes the rest.
        try sendThree()
        let tooSmall = ControlMessage.Buffer(descriptors: 1, credentials: false)
        guard case .record(let r1) = try UnixSocket.receive(b, into: data, control: tooSmall) else {
            Issue.record("no record")
            return
        }
        #expect(r1.controlTruncated && !r1.truncated && r1.byteCount == 3)
        let parsed = ControlMessage.parse(tooSmall, length: r1.controlLength, truncated: r1.controlTruncated, into: &out)
        #expect(parsed.truncated)
        #expect(parsed.descriptorCount == (tooSmall.capacity - port_cmsg_len(0)) / 4)
        #expect(parsed.descriptorCount == 2 && out.count == 2)
        for i in 0..<parsed.descriptorCount { #expect(out.withDescriptor(at: i) { isCloseOnExec($0) }) }
        out.closeAll()

        // No control buffer at all: MSG_CTRUNC, the kernel closes them all.
        try sendThree()
        guard case .record(let r2) = try UnixSocket.receive(b, into: data, control: nil) else {
            Issue.record("no record")
            return
        }
        #expect(r2.controlTruncated && r2.controlLength == 0)

        // Enough room: all three, in order, no truncation.
        try sendThree()
        let enough = ControlMessage.Buffer(descriptors: 3, credentials: false)
        guard case .record(let r3) = try UnixSocket.receive(b, into: data, control: enough) else {
            Issue.record("no record")
            return
        }
        let all = ControlMessage.parse(enough, length: r3.controlLength, truncated: r3.controlTruncated, into: &out)
        #expect(!all.truncated && all.descriptorCount == 3 && all.unexpected == 0)
        out.closeAll()
    }

    @Test func parseClosesDescriptorsBeyondTheCallersArray() throws {
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        let (r, w) = try makePipe()
        defer { close(r) }
        let control = ControlMessage.Buffer(descriptors: 2, credentials: false)
        control.reset()
        control.append(number: w)
        control.append(number: w)
        let n = control.finish()
        _ = try [UInt8(0)].withUnsafeBytes { try UnixSocket.send(a, $0, control: control, controlLength: n) }
        close(w)
        let data = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 8)
        defer { data.deallocate() }
        let receive = ControlMessage.Buffer(descriptors: 2, credentials: false)
        guard case .record(let rec) = try UnixSocket.receive(b, into: data, control: receive) else {
            Issue.record("no record")
            return
        }
        var out = OwnedDescriptors(capacity: 1)
        let parsed = ControlMessage.parse(receive, length: rec.controlLength, truncated: false, into: &out)
        #expect(parsed.descriptorCount == 1 && parsed.unexpected == 1)
        out.closeAll()
        // Every write end is closed now (ours, the parser's extra, the one we
        // closed): the pipe reads end-of-file instead of blocking.
        var byte: UInt8 = 0
        #expect(read(r, &byte, 1) == 0)
    }

    @Test func addressLengthsAreChecked() throws {
        let limit = UnixSocketAddress.maxNameBytes
        #expect(limit == 107)
        #expect(throws: UnixSocketAddress.Error.tooLong(bytes: 108, limit: 107)) {
            try UnixSocketAddress(path: "/" + String(repeating: "x", count: 107))
        }
        #expect(throws: UnixSocketAddress.Error.tooLong(bytes: 108, limit: 107)) {
            try UnixSocketAddress("@" + String(repeating: "x", count: 108))
        }
        #expect(throws: UnixSocketAddress.Error.containsNul) { try UnixSocketAddress(path: "/tmp/a\u{0}b") }
        #expect(throws: UnixSocketAddress.Error.empty) { try UnixSocketAddress(path: "") }
        #expect(throws: UnixSocketAddress.Error.empty) { try UnixSocketAddress("@") }
        #expect(try UnixSocketAddress(path: "/" + String(repeating: "x", count: 106)).path?.utf8.count == 107)
        #expect(try UnixSocketAddress("@abc").description == "@abc")
    }

    @Test func listenAcceptConnectOnAnAbstractName() throws {
        let address = try UnixSocketAddress(abstract: "portd-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        let listener = try UnixSocket.makeSocket()
        try UnixSocket.bind(listener, to: address)
        try UnixSocket.listen(listener, backlog: 8)
        #expect(try UnixSocket.accept(listener) == nil)
        let client = try UnixSocket.makeSocket()
        let connected = try UnixSocket.connect(client, to: address)
        #expect(connected == .connected)
        #expect(waitReadable(listener.rawValue))
        guard let server = try UnixSocket.accept(listener) else {
            Issue.record("nothing to accept")
            return
        }
        #expect(isCloseOnExec(server.rawValue) && isNonBlocking(server.rawValue))
        let t = TestWireTransport()
        _ = try t.send(client, msgid: 3, components: [.data([7])])
        #expect(try t.receive(server).components == [.data([7])])
        // A second bind of the same name fails: abstract names are unique.
        let other = try UnixSocket.makeSocket()
        #expect(throws: SystemCallError(call: "bind(\(address))", errno: .addressInUse)) {
            try UnixSocket.bind(other, to: address)
        }
    }

    @Test func staleSocketFilesAreRemovedAndLiveOnesKept() throws {
        var template = Array("/tmp/portd-wire-XXXXXX".utf8CString)
        let dir = String(cString: try #require(mkdtemp(&template)))
        defer { rmdir(dir) }
        let address = try UnixSocketAddress(path: dir + "/port.sock")
        defer { unlink(dir + "/port.sock") }
        #expect(try UnixSocket.removeStale(at: address) == .absent)

        let listener = try UnixSocket.makeSocket()
        try UnixSocket.bind(listener, to: address)
        try UnixSocket.listen(listener)
        #expect(try UnixSocket.removeStale(at: address) == .inUse)
        listener.close()  // the file stays behind
        let client = try UnixSocket.makeSocket()
        #expect(throws: SystemCallError(call: "connect(\(address))", errno: .connectionRefused)) {
            try UnixSocket.connect(client, to: address)
        }
        #expect(try UnixSocket.removeStale(at: address) == .removed)
        #expect(try UnixSocket.removeStale(at: address) == .absent)
        let again = try UnixSocket.makeSocket()
        try UnixSocket.bind(again, to: address)  // the path is usable again

        let plain = dir + "/plain"
        let f = open(plain, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        close(f)
        defer { unlink(plain) }
        #expect(try UnixSocket.removeStale(at: UnixSocketAddress(path: plain)) == .notASocket)
    }

    @Test func bufferSizes() throws {
        let pair = try UnixSocket.makePair()
        let a = pair.first
        try UnixSocket.setSendBufferSize(a, 65_536)
        let sendBuffer = try UnixSocket.sendBufferSize(a)
        #expect(sendBuffer == 131_072)  // the kernel doubles it (socket(7))
        try UnixSocket.setReceiveBufferSize(a, 65_536)
        let receiveBuffer = try UnixSocket.receiveBufferSize(a)
        #expect(receiveBuffer == 131_072)
    }
}

/// A pipe, both ends CLOEXEC.
func makePipe() throws -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    let r = fds.withUnsafeMutableBufferPointer { port_pipe2($0.baseAddress!, O_CLOEXEC) }
    if r != 0 { throw SystemCallError(call: "pipe2", errno: .init(rawValue: errno)) }
    return (fds[0], fds[1])
}
