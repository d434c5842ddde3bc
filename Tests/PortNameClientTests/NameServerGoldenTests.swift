// NameServerGoldenTests: portd-protocol(7)'s byte examples of the name
// server (section "Byte examples") are the bytes this code sends. Each
// example in the page is marked `.\" golden: TAG`; this test builds the same
// message with the vocabulary portd and the client use (requests as the
// client builds them, replies and events with portd's constructors) and
// compares it with the page's hex, byte for byte. If one fails, either the
// page or the protocol changed: the page is the contract.

import Foundation
import Testing

import PortCore
import PortTestSupport
@testable import PortNameClient
@testable import PortWire

private typealias ID = NameServerProtocol.MessageID
private typealias Reply = NameServerReply<Int32>
private typealias F = NameServerField

/// The hex blocks of the page, by tag.
private func pageExamples() throws -> [String: [UInt8]] {
    let page = try String(contentsOfFile: SourceTree.path("man/portd-protocol.7"), encoding: .utf8)
    var examples: [String: [UInt8]] = [:]
    let lines = page.components(separatedBy: "\n")
    var i = 0
    while i < lines.count {
        guard lines[i].hasPrefix(".\\\" golden: ") else {
            i += 1
            continue
        }
        let tag = String(lines[i].dropFirst(".\\\" golden: ".count))
        i += 2  // the tag, then .Bd
        var hex = ""
        while i < lines.count && lines[i] != ".Ed" {
            // The bytes, then an optional "text" for people.
            hex += " " + (lines[i].components(separatedBy: "\"").first ?? "")
            i += 1
        }
        examples[tag] = Hex.bytes(hex)
    }
    return examples
}

/// A record of `components` (text and ports) with these flags.
private func record(_ msgid: UInt32, _ components: [NameServerComponent<Int32>], replyPort: Bool = false, request: Bool = false)
    throws -> [UInt8]
{
    let wire: [PortComponent] = components.map {
        switch $0 {
        case .text(let s): .data(Array(s.utf8))
        case .port(let fd): .port(fd)
        case .binary: .data([])
        }
    }
    var bytes = try WireEncoder.encode(msgid: msgid, replyPort: replyPort ? 3 : nil, components: wire).bytes
    // REPLY_EXPECTED is set by the transport for every request (SendRight.request, the control channel).
    if request { bytes[5] |= 0x02 }
    return bytes
}

/// A request as the client builds it: "serial=N" first, then `fields`.
private func request(_ msgid: UInt32, serial: UInt32, _ fields: [F], replyPort: Bool = false) throws -> [UInt8] {
    let message = PCPortMessage(request: msgid, serial: serial, fields)
    let texts = message.components.map { NameServerComponent<Int32>.text($0.string ?? "") }
    return try record(msgid, texts, replyPort: replyPort, request: true)
}

@Suite struct NameServerGoldenTests {
    let echo = "org.example.echo"
    let owner = NameOwner.Process(pid: 4300, uid: 1000, client: 5)
    let heir = NameOwner.Process(pid: 4301, uid: 1000, client: 6)

    private func built() throws -> [String: [UInt8]] {
        let hello = NameServerHello(
            version: "1.0", portdVersion: "0.1.0", client: 7,
            limits: [
                ("max_record_bytes", 196608), ("max_request_bytes", 4096), ("max_request_fields", 16), ("max_names", 256),
                ("max_pending_lookups", 64), ("max_watches", 64), ("max_wait_ms", 3_600_000), ("list_page", 128),
                ("owner_page", 256),
            ],
            features: NameServerProtocol.Feature.allCases.map(\.rawValue))
        let status = NameServerStatus(
            version: "0.1.0", pid: 4242, uptimeMilliseconds: 1500, names: 1, clients: 2, lookups: 3, refusals: 0, declared: 0)
        let entries = [
            NameEntry(name: echo, owner: owner, sinceMilliseconds: 1_795_500_000_000, queuedCount: 1),
            NameEntry(
                name: "org.example.spool", owner: .init(pid: 4242, uid: 0, client: 0), sinceMilliseconds: 1_795_490_000_000,
                queuedCount: 0, isDeclared: true, checkedInPID: 4400),
        ]
        let owned = NameOwner(name: echo, owner: owner, sinceMilliseconds: 1_795_500_000_000, queued: [heir])
        func reply(_ r: Reply) throws -> [UInt8] { try record(r.msgid, r.components) }
        func event(_ n: NameServerNotification<Int32>) throws -> [UInt8] { try record(n.msgid, n.components) }
        return [
            "hello-request": try request(ID.hello, serial: 1, [F("protocol", "1.0")]),
            "hello-reply": try reply(.success(serial: 1, hello.fields)),
            "status-request": try request(ID.status, serial: 2, []),
            "status-reply": try reply(.status(serial: 2, status)),
            "register-request": try request(
                ID.register, serial: 3, [F("name", echo), F("option", "allow-replacement")], replyPort: true),
            "register-reply": try reply(.registered(serial: 3, name: echo, listening: 9)),
            "queued-reply": try reply(.queued(serial: 3, name: echo, place: 1)),
            "already-owned-error": try reply(.alreadyOwned(serial: 3, name: echo, by: owner)),
            "release-request": try request(ID.release, serial: 4, [F("name", echo)]),
            "release-reply": try reply(.done(serial: 4, name: echo)),
            "lookup-request": try request(ID.lookup, serial: 5, [F("name", echo), F("wait_ms", 2000)]),
            "lookup-reply": try reply(.found(serial: 5, name: echo, owner: owner, connection: 9)),
            "not-found-error": try reply(.error(serial: 5, .notFound, "no port is registered as \(echo)")),
            "watch-request": try request(ID.watch, serial: 6, [F("name", echo)], replyPort: true),
            "watch-reply": try reply(.done(serial: 6, name: echo)),
            "list-request": try request(ID.list, serial: 7, [F("after", "org.example.a")]),
            "list-reply": try reply(.list(serial: 7, entries: entries, more: false)),
            "owner-request": try request(ID.owner, serial: 8, [F("name", echo), F("from", 0)]),
            "owner-reply": try reply(.owner(serial: 8, owned, more: false)),
            "checkin-request": try request(ID.checkIn, serial: 9, [F("name", "org.example.spool")]),
            "checkin-reply": try reply(.checkedIn(serial: 9, name: "org.example.spool", listening: 9)),
            "name-owner-changed": try event(
                .ownerChanged(serial: 6, NameOwnerChange(name: echo, event: .known(.replaced), oldOwner: owner, newOwner: heir))),
            "name-acquired": try event(.acquired(serial: 3, name: echo, listening: 9)),
            "name-lost": try event(.lost(serial: 3, name: echo, to: heir)),
            "watch-overflow": try event(.watchOverflow(serial: 6, missed: 40)),
            "hello-required-error": try reply(
                .error(serial: 2, .helloRequired, "send HELLO with protocol=1.0 first (portd-protocol(7), NAME SERVER)")),
            "unsupported-version-error": try reply(
                .error(serial: 1, .unsupportedVersion, "portd speaks protocol 1.0, not 2.0", [F("protocol", "1.0")])),
        ]
    }

    @Test func everyByteExampleOfThePageIsWhatTheCodeSends() throws {
        let page = try pageExamples()
        let code = try built()
        #expect(Set(page.keys) == Set(code.keys), "the page's examples and this test's")
        for (tag, bytes) in code.sorted(by: { $0.key < $1.key }) {
            #expect(page[tag] == bytes, "\(tag): the page has \(page[tag].map { Hex.string($0) } ?? "nothing")")
        }
    }

    @Test func theExamplesReadBackAsTheyWereMeant() throws {
        let page = try pageExamples()
        let found = try WireDecoder.decode(try #require(page["lookup-reply"]), descriptors: [11])
        #expect(found.msgid == ID.reply)
        let texts = found.components.compactMap { c -> NameServerComponent<Int32>? in
            switch c {
            case .data(let b): .text(String(decoding: b, as: UTF8.self))
            case .port(let fd): .port(fd)
            case .largeData: nil
            }
        }
        let reply = try Reply(msgid: found.msgid, components: texts)
        #expect(reply.serial == 5 && reply.ports == [11])
        #expect(try reply.record.owner("owner", in: "example") == owner)
    }
}
