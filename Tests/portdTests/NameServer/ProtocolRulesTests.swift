// ProtocolRulesTests: every malformed or over-limit request of
// portd-protocol(7), NAME SERVER, sent to a real portd, gets exactly the
// reaction the page documents: an ERROR with the word (and the request's
// serial, or 0 when it had none) while the connection goes on; or, for a
// record that is not valid on the control socket and after
// "unsupported-version", the end of the connection (and of its names).

import Foundation
import Glibc
import Testing

import PortCore
import PortMessaging
import PortTestSupport
@testable import PortDaemon

/// Sender limits large enough to send records portd must refuse.
private let generous = PortLimits(maxRecordSize: 196608, maxComponents: 4096, maxDescriptors: 16, maxLargeDataBytes: 1 << 24)

@Suite struct ProtocolRulesTests {
    /// STATUS with `n` port components (each one end of a new socketpair).
    static func withPorts(_ n: Int) throws -> PCPortMessage {
        var m = PCPortMessage(msgid: MessageID.status, strings: ["serial=2"])
        for _ in 0..<n {
            let pair = try UnixSocket.makePair()
            m.components.append(.port(SendRight(descriptor: pair.first)))
        }
        return m
    }

    @Test func helloComesFirstAndAgreesOnAVersion() throws {
        let portd = try DaemonProcess.started()
        let c = try NameClient(socket: portd.socketPath, hello: false, limits: generous)
        let early = try #require(try c.raw(MessageID.status, ["serial=5"]))
        #expect(early.msgid == MessageID.error && early.serial == 5 && early.outcome == "hello-required")
        let hello = try #require(try c.raw(MessageID.hello, ["serial=6", "protocol=1.7", "protocol=2.0"]))
        #expect(hello.msgid == MessageID.reply && hello.serial == 6)
        #expect(hello.field("protocol") == "1.0", "a minor version of the same major: portd answers with its own")
        #expect(hello.field("version") == PortdVersion.current)
        #expect(hello.field("max_request_bytes") == "4096" && hello.field("max_request_fields") == "16")
        #expect(hello.field("list_page") == "\(NameServer.listPageSize)" && hello.field("owner_page") == "\(NameServer.ownerPageSize)")
        #expect(hello.words.filter { $0.hasPrefix("feature=") } == NameServerProtocol.Feature.allCases.map { "feature=\($0.rawValue)" })
        #expect(try c.raw(MessageID.status, ["serial=7"])?.outcome == "ok", "the connection went on after hello-required")
        #expect(try c.raw(MessageID.hello, ["serial=8", "protocol=1.0"])?.outcome == "bad-request", "HELLO once")
        let fresh = try NameClient(socket: portd.socketPath, hello: false, limits: generous)
        for malformed in ["1", "1.0.1", "1.x", "v1.0", ""] {
            #expect(try fresh.raw(MessageID.hello, ["serial=1", "protocol=\(malformed)"])?.outcome == "bad-request", "\(malformed)")
        }
        #expect(try fresh.raw(MessageID.hello, ["serial=2", "protocol=01.00"])?.field("protocol") == "1.0", "leading zeros are digits")

        // A client of the protocol before 1.0 (no serial) is told in the form it reads.
        let old = try NameClient(socket: portd.socketPath, hello: false, limits: generous)
        let legacy = try #require(try old.raw(MessageID.status, []))
        #expect(legacy.msgid == MessageID.status && legacy.words.first == "bad-request")
        #expect(legacy.words.dropFirst().first?.hasPrefix("message=portd speaks protocol 1.0: send HELLO") == true, "\(legacy.words)")
        #expect(try old.raw(MessageID.lookup, ["org.example.x"])?.words.first == "bad-request", "and the connection stays")

        let other = try NameClient(socket: portd.socketPath, hello: false, limits: generous)
        let refused = try #require(try other.raw(MessageID.hello, ["serial=1", "protocol=2.0", "protocol=0.9"]))
        #expect(refused.msgid == MessageID.error && refused.outcome == "unsupported-version")
        #expect(refused.words.filter { $0.hasPrefix("protocol=") } == ["protocol=1.0"], "the versions portd speaks")
        #expect(try other.raw(MessageID.hello, ["serial=2", "protocol=1.0"]) == nil, "then portd closed the connection")
        #expect(try portd.stop() == 0)
    }

    @Test func requestsPipelinedBehindARefusedHelloDoNotHideTheRefusal() throws {
        let portd = try DaemonProcess.started()
        let fd = try UnixSocket.makeSocket()
        guard try UnixSocket.connect(fd, to: UnixSocketAddress(path: portd.socketPath)) == .connected else {
            throw HarnessError.unexpected("backlog full")
        }
        let transport = MessageTransport()
        let records = [PCPortMessage(msgid: MessageID.hello, strings: ["serial=1", "protocol=2.0"])]
            + (2...9).map { PCPortMessage(msgid: MessageID.status, strings: ["serial=\($0)"]) }
        // The HELLO goes; portd may refuse it and close before the rest are
        // sent (a loaded machine runs portd between two sends): those then
        // find the receiver gone, which is what the test is not about.
        #expect(try transport.send(records[0], on: fd, replyPort: nil, replyExpected: true, before: .now() + HarnessTimeout) == .sent)
        for r in records.dropFirst() {
            let sent = try transport.send(r, on: fd, replyPort: nil, replyExpected: true, before: .now() + HarnessTimeout)
            #expect(sent == .sent || sent == .receiverGone, "\(sent)")
        }
        // portd answers HELLO, drops what came behind it unread, and closes:
        // the first read is the refusal (not ECONNRESET), the next the end.
        _ = try Poll.wait(fd, for: .readable, timeout: HarnessTimeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd.rawValue, $0.baseAddress, $0.count, 0) }
        #expect(n > 0, "errno \(errno)")
        let refusal = try WireDecoder.decode(Array(buffer.prefix(max(n, 0))))
        #expect(refusal.msgid == MessageID.error)
        _ = try Poll.wait(fd, for: .readable, timeout: HarnessTimeout)
        let end = buffer.withUnsafeMutableBytes { Glibc.recv(fd.rawValue, $0.baseAddress, $0.count, 0) }
        #expect(end == 0, "the end of the connection, not a reset (errno \(errno))")
        #expect(try portd.stop() == 0)
    }

    @Test func everyMalformedRequestGetsItsErrorAndTheConnectionGoesOn() throws {
        let portd = try DaemonProcess.started()
        let c = try NameClient(socket: portd.socketPath, limits: generous)
        let badRequests: [(UInt32, [String], UInt32)] = [
            (0xFFFF_00FE, ["serial=10"], 10),  // unknown msgid
            (MessageID.lookup, ["serial=11", "org.example.x"], 11),  // not a field
            (MessageID.lookup, ["name=org.example.x"], 0),  // no serial first
            (MessageID.lookup, ["name=org.example.x", "serial=12"], 0),
            (MessageID.status, ["serial=0"], 0),
            (MessageID.status, ["serial=+3"], 0),
            (MessageID.status, ["serial=4294967296"], 0),
            (MessageID.lookup, ["serial=13", "name=a", "name=b"], 13),  // twice
            (MessageID.lookup, ["serial=14"], 14),  // missing
            (MessageID.lookup, ["serial=15", "name=a", "colour=red"], 15),  // unknown field
            (MessageID.lookup, ["serial=16", "Name=a"], 16),  // a key is a-z 0-9 _
            (MessageID.lookup, ["serial=17", "name=a", "wait_ms=4294967296"], 17),  // out of range
            (MessageID.lookup, ["serial=18", "name=a", "wait_ms=-1"], 18),
            (MessageID.owner, ["serial=19", "name=a", "from=+1"], 19),
            (MessageID.register, ["serial=20", "name=a", "option=please"], 20),  // unknown option
            (MessageID.watch, ["serial=21"], 21),  // WATCH without a reply port
            (MessageID.status, ["serial=22"] + (1...16).map { "x\($0)=1" }, 22),  // 17 fields
            // A value is text without NUL: these are not fields (they were invalid-name).
            (MessageID.lookup, ["serial=30", "name=org.example\u{0}x"], 30),
            (MessageID.register, ["serial=31", "name=org.example.nul\u{0}"], 31),
            (MessageID.lookup, ["serial=32", "name=org.example.x", "wait_ms=5\u{0}"], 32),
            (MessageID.register, ["serial=33", "name=org.example.x", "option=do-not-queue\u{0}"], 33),
        ]
        for (msgid, texts, serial) in badRequests {
            let reply = try #require(try c.raw(msgid, texts), "\(texts)")
            #expect(reply.msgid == MessageID.error && reply.outcome == "bad-request", "\(texts): \(reply.words)")
            #expect(reply.serial == serial, "\(texts)")
            #expect(reply.field("message")?.isEmpty == false)
        }
        var withPort = PCPortMessage(msgid: MessageID.register, strings: ["serial=23", "name=a"])
        let pair = try UnixSocket.makePair()
        withPort.components.append(.port(SendRight(descriptor: pair.first)))
        #expect(try c.raw(withPort)?.outcome == "bad-request", "a port component")
        var notUTF8 = PCPortMessage(msgid: MessageID.lookup, strings: ["serial=24"])
        notUTF8.components.append(.data([0x6E, 0x3D, 0xFF]))
        #expect(try c.raw(notUTF8)?.outcome == "bad-request", "not UTF-8")
        #expect(try c.raw(MessageID.lookup, ["serial=25", "name=../etc"])?.outcome == "invalid-name")
        let big = try #require(try c.raw(MessageID.lookup, ["serial=26", "name=" + String(repeating: "x", count: 4100)]))
        #expect(big.outcome == "limit" && big.serial == 26, "more than MaxRequestBytes")
        #expect(try c.raw(MessageID.status, ["serial=27"])?.outcome == "ok", "and the connection goes on")
        #expect(try portd.stop() == 0)
    }

    @Test func aRecordThatIsNotValidOnTheControlSocketEndsTheConnectionAndItsNames() throws {
        let portd = try DaemonProcess.started()
        let loop = TestLoop()
        defer { loop.stop() }
        let watcher = try NameClient(socket: portd.socketPath)
        let events = try Inbox(on: loop)
        #expect(try watcher.watch(nil, inbox: events).outcome == "ok")
        let cases: [(String, PCPortMessage)] = [
            ("1025 components", PCPortMessage(msgid: MessageID.status, strings: ["serial=2"] + (1...1024).map { "x\($0)=1" })),
            ("5 descriptors", try Self.withPorts(5)),
            ("large data", PCPortMessage(msgid: MessageID.status, components: [.data(Array("serial=2".utf8)), .data([UInt8](repeating: 0x61, count: 200_000))])),
        ]
        for (i, (what, record)) in cases.enumerated() {
            let c = try NameClient(socket: portd.socketPath, limits: generous)
            let name = "org.example.doomed\(i)"
            let registered = try #require(try c.raw(MessageID.register, ["serial=3", "name=\(name)"]))
            #expect(registered.outcome == "registered", "\(what)")
            #expect(events.next()?.nameAndEvent == [name, "registered"])
            #expect(try c.raw(record) == nil, "\(what): portd closed the connection")
            #expect(events.next()?.nameAndEvent == [name, "released"], "\(what): and its names went with it")
        }
        #expect(try watcher.request(MessageID.status).outcome == "ok", "everyone else is served")
        #expect(try portd.stop() == 0)
    }
}
