// LookUpFastPathTests: the LOOKUP read in place (`NameServerRequest.parseLookUp`,
// what the control port's view handler reads) answers only where the
// general parser (`NameServerRequest.parse`) answers a LOOKUP, with the same
// serial, name and wait; and the "found" reply written as bytes
// (`NameServer.foundReply`) is the vocabulary's `.found` reply byte for byte.
// Seeded random records around the edges (serials, names, waits, sizes,
// kinds, keys, order) and the usual form.

import Testing

import PortCore
@testable import PortDaemon
import PortTestSupport

private typealias ID = NameServerProtocol.MessageID

@Suite struct LookUpFastPathTests {
    /// A random component text or bytes near the forms `parseLookUp` reads.
    private static func randomField(_ g: inout SplitMix64, names: [String]) -> [UInt8] {
        let serials = [
            "1", "0", "7", "4294967295", "4294967296", "00000000001", "0000000000", "", "1a", "-1", "+1", "99999999999",
            "12345678901", " 1", "1 ",
        ]
        let waits = ["0", "1", "1500", "4294967295", "4294967296", "", "x", "-1", "0000000001", "3600001"]
        let keys = ["serial", "name", "wait_ms", "names", "nam", "Name", "after", "from", "option", "", "wait"]
        switch g.next() % 10 {
        case 0, 1, 2:
            return Array("name=\(names[Int(g.next() % UInt64(names.count))])".utf8)
        case 3:
            return Array("serial=\(serials[Int(g.next() % UInt64(serials.count))])".utf8)
        case 4:
            return Array("wait_ms=\(waits[Int(g.next() % UInt64(waits.count))])".utf8)
        case 5:
            let key = keys[Int(g.next() % UInt64(keys.count))]
            return Array("\(key)=\(names[Int(g.next() % UInt64(names.count))])".utf8)
        case 6:
            // A name with one byte changed to anything.
            var b = Array("name=\(names[Int(g.next() % UInt64(names.count))])".utf8)
            b[Int(g.next() % UInt64(b.count))] = UInt8(truncatingIfNeeded: g.next())
            return b
        case 7:
            return (0..<Int(g.next() % 12)).map { _ in UInt8(truncatingIfNeeded: g.next()) }
        case 8:
            return Array("name=".utf8) + [0xC3, 0xA9]
        default:
            return Array("name".utf8)
        }
    }

    private static let names: [String] = [
        "svc", "bench.scale.target", "a", "A-Z_0.9", ".hidden", "", "a/b", "a=b", "a b", "é",
        String(repeating: "n", count: 200), String(repeating: "n", count: 201), "org.example.Service-1",
    ]

    @Test func parseLookUpAnswersOnlyWhatParseAnswers() throws {
        var g = SplitMix64(seed: 0x1007_0013)
        let pair = try UnixSocket.makePair()
        let port = SendRight(descriptor: pair.first)
        var fast = 0
        var knownReused = 0
        for round in 0..<40_000 {
            var components: [PCPortMessage.Component] = []
            // Mostly the usual form, "serial=N" first; else anything.
            let usual = g.next() % 4 != 0
            if usual {
                components.append(.data(Array("serial=\(1 + g.next() % 5000)".utf8)))
                components.append(.data(Array("name=\(Self.names[Int(g.next() % UInt64(Self.names.count))])".utf8)))
            }
            let extra = usual ? Int(g.next() % 3) : Int(g.next() % 5)
            for _ in 0..<extra {
                if g.next() % 40 == 0 {
                    components.append(.port(port))
                } else {
                    components.append(.data(Self.randomField(&g, names: Self.names)))
                }
            }
            let msgid: UInt32 = g.next() % 10 == 0 ? [ID.owner, ID.release, ID.status, 0][Int(g.next() % 4)] : ID.lookup
            let maximumBytes = [4096, 24, 31, 200, 206][Int(g.next() % 5)]
            let knownText = Self.names[Int(g.next() % UInt64(Self.names.count))]
            let known = try? PortName(validating: knownText)
            let message = PCPortMessage(msgid: msgid, components: components)
            let general = NameServerRequest.parse(
                msgid: msgid, components: components, hasReplyPort: false, maximumBytes: maximumBytes)
            let answer = PortMessageView.lend(message) {
                NameServerRequest.parseLookUp($0, maximumBytes: maximumBytes, known: known)
            }
            guard let answer else { continue }
            fast += 1
            #expect(general.serial == answer.serial, "round \(round)")
            #expect(general.result == .success(.lookUp(answer.name, wait: answer.wait)), "round \(round)")
            if answer.name == known { knownReused += 1 }
        }
        // Not vacuous: the usual form is read in place.
        #expect(fast > 2_000)
        #expect(knownReused > 100)
        port.invalidate()
    }

    @Test func theUsualFormIsReadInPlace() {
        func fast(_ texts: [String], maximumBytes: Int = 4096, known: PortName? = nil) -> (UInt32, PortName, Duration?)? {
            let message = PCPortMessage(msgid: ID.lookup, components: texts.map { .data(Array($0.utf8)) })
            return PortMessageView.lend(message) {
                NameServerRequest.parseLookUp($0, maximumBytes: maximumBytes, known: known)
            }
        }
        let svc = try! PortName(validating: "svc")
        #expect(fast(["serial=9", "name=svc"]).map { $0.0 == 9 && $0.1 == svc && $0.2 == nil } == true)
        #expect(fast(["serial=9", "name=svc", "wait_ms=0"]).map { $0.2 == nil } == true)
        #expect(fast(["serial=9", "wait_ms=250", "name=svc"]).map { $0.2 == .milliseconds(250) } == true)
        #expect(fast(["serial=4294967295", "name=svc"], known: svc).map { $0.0 == 4_294_967_295 && $0.1 == svc } == true)
        // Left to the general parser (which refuses, or reads something else).
        #expect(fast(["serial=0", "name=svc"]) == nil)
        #expect(fast(["serial=4294967296", "name=svc"]) == nil)
        #expect(fast(["serial=1"]) == nil)
        #expect(fast(["serial=1", "name=svc", "name=svc"]) == nil)
        #expect(fast(["serial=1", "name=svc", "wait_ms=1", "wait_ms=1"]) == nil)
        #expect(fast(["serial=1", "name=.svc"]) == nil)
        #expect(fast(["serial=1", "name=svc"], maximumBytes: 15) == nil)
        #expect(fast(["serial=1", "name=svc"], maximumBytes: 16) != nil)
        #expect(fast(["name=svc", "serial=1"]) == nil)
    }

    @Test func theFoundReplyIsTheVocabularys() throws {
        var g = SplitMix64(seed: 0xF0_0D)
        let pair = try UnixSocket.makePair()
        let port = SendRight(descriptor: pair.first)
        let pids: [Int32] = [0, 1, 9, 10, 99_999, Int32.max, -1, Int32.min]
        let uids: [UInt32] = [0, 1, 1000, 65534, UInt32.max]
        let clients: [UInt64] = [0, 1, 10, 1_000_000, UInt64.max]
        let validNames = Self.names.compactMap { try? PortName(validating: $0) }
        for _ in 0..<5_000 {
            let serial = g.next() % 3 == 0 ? UInt32(truncatingIfNeeded: g.next()) : [1, 9, 10, UInt32.max][Int(g.next() % 4)]
            let owner = NameOwner.Process(
                pid: g.next() % 2 == 0 ? pids[Int(g.next() % UInt64(pids.count))] : Int32(truncatingIfNeeded: g.next()),
                uid: g.next() % 2 == 0 ? uids[Int(g.next() % UInt64(uids.count))] : UInt32(truncatingIfNeeded: g.next()),
                client: g.next() % 2 == 0 ? clients[Int(g.next() % UInt64(clients.count))] : g.next())
            let name = validNames[Int(g.next() % UInt64(validNames.count))]
            let written = NameServer.foundReply(serial: serial, name: name, owner: owner, connection: port)
            let general = PCPortMessage(reply: .found(serial: serial, name: name.value, owner: owner, connection: port))
            #expect(written.msgid == general.msgid)
            #expect(written.components.count == general.components.count)
            for (a, b) in zip(written.components, general.components) {
                switch (a, b) {
                case (.data(let x), .data(let y)): #expect(x == y)
                case (.port(let x), .port(let y)): #expect(x === y)
                default: Issue.record("component kinds differ")
                }
            }
        }
        port.invalidate()
    }
}
