// LookupReplyTests: the client's per-request paths that read and write
// bytes in place answer what the general ones answer: a LOOKUP reply read
// in place (PortNameServer.lookupOutcomeInPlace, on the message lent as a
// view, as the control channel lends the receive buffer) against the reply
// taken apart (NameServerReply, then lookupOutcome), the serial a reply is
// filed under against the field read as text, and a request's components
// against PCPortMessage(request:serial:_:). Seeded random messages
// (reproducible) and edge cases.

import Testing

import PortCore
import PortTestSupport
@testable import PortNameClient

@Suite struct LookupReplyTests {
    private static func d(_ s: String) -> PCPortMessage.Component { .data(Array(s.utf8)) }

    /// The same outcome: the same right (the very object) and owner.
    private static func same(_ a: LookupOutcome, _ b: LookupOutcome) -> Bool {
        switch (a, b) {
        case (.found(let r1, let o1), .found(let r2, let o2)): r1 === r2 && o1 == o2
        case (.notFound, .notFound), (.timedOut, .timedOut): true
        default: false
        }
    }

    private static let texts = [
        "serial=1", "serial=4294967295", "serial=4294967296", "serial=+3", "serial=-0", "serial=x", "serial=",
        "Serial=1", "name=bench.scale.target", "owner=12:1000:7", "owner=1:2", "owner=-5:0:18446744073709551615",
        "owner=1:2:3:4", "owner=é", "owner=+1:+2:+3", "error=not-found", "error=timeout", "error=denied", "error=nope",
        "error=", "message=no such name", "message=é", "x", "=x", "", "owner", "a-b=1", "queued=1:2:3", "é=1",
        "name=\u{301}", "wait_ms=5",
    ]

    @Test func aLookupReplyReadInPlaceIsTheReplyTakenApart() throws {
        let rights = [try PCPort().makeSendRight(), try PCPort().makeSendRight()]
        let memory = try SharedMemory(copying: Array("owner=1:2:3".utf8))
        let reply = NameServerProtocol.MessageID.reply
        let error = NameServerProtocol.MessageID.error
        var g = SplitMix64(seed: 13)
        var messages: [PCPortMessage] = [
            PCPortMessage(msgid: reply, components: [Self.d("serial=4"), Self.d("name=svc"), Self.d("owner=12:1000:7"), .port(rights[0])]),
            PCPortMessage(msgid: error, components: [Self.d("serial=4"), Self.d("error=not-found"), Self.d("message=m")]),
            PCPortMessage(msgid: error, components: [Self.d("serial=4"), Self.d("error=timeout")]),
            PCPortMessage(msgid: reply, components: [Self.d("serial=4"), Self.d("owner=12:1000:7")]),
            PCPortMessage(msgid: reply, components: [.port(rights[0]), Self.d("serial=4"), Self.d("owner=1:2:3")]),
            PCPortMessage(msgid: reply, components: [Self.d("serial=4"), Self.d("owner=1:2:3"), .port(rights[0]), Self.d("x=1")]),
            PCPortMessage(msgid: reply, components: [Self.d("serial=4"), .sharedMemory(memory), .port(rights[0])]),
            PCPortMessage(msgid: reply, components: [Self.d("serial=4"), Self.d("owner=1:2:3"), Self.d("owner=x"), .port(rights[1])]),
            PCPortMessage(msgid: reply, components: [Self.d("serial=4"), Self.d("owner=x"), Self.d("owner=1:2:3"), .port(rights[1])]),
            PCPortMessage(msgid: error, components: [Self.d("serial=4"), Self.d("error=limit"), Self.d("error=not-found")]),
            PCPortMessage(msgid: error, components: [Self.d("serial=4"), Self.d("error=not-found"), .data([0xff])]),
            PCPortMessage(msgid: 7, components: [Self.d("serial=4"), Self.d("owner=1:2:3"), .port(rights[0])]),
            PCPortMessage(msgid: reply, components: []),
        ]
        // Well-formed replies as portd sends them, half of them with one
        // component then replaced by anything.
        for _ in 0..<15_000 {
            let serial = Self.d("serial=\(UInt32.random(in: 0...5, using: &g))")
            var msgid = reply
            var components: [PCPortMessage.Component]
            switch Int.random(in: 0..<4, using: &g) {
            case 0, 1:
                let owner = "owner=\(Int32.random(in: -2...70_000, using: &g)):\(UInt32.random(in: 0...1000, using: &g)):\(UInt64.random(in: 0...9, using: &g))"
                components = [serial, Self.d("name=svc"), Self.d(owner), .port(rights.randomElement(using: &g)!)]
            default:
                msgid = error
                let word = ["not-found", "timeout", "denied", "limit"].randomElement(using: &g)!
                components = [serial, Self.d("error=\(word)"), Self.d("message=m")]
            }
            if Bool.random(using: &g) {
                let i = Int.random(in: 0..<components.count, using: &g)
                switch Int.random(in: 0..<6, using: &g) {
                case 0: components[i] = .port(rights.randomElement(using: &g)!)
                case 1: components[i] = .sharedMemory(memory)
                case 2: components.remove(at: i)
                default: components[i] = Self.d(Self.texts.randomElement(using: &g)!)
                }
            }
            if Int.random(in: 0..<10, using: &g) == 0 { msgid = [reply, error, 7].randomElement(using: &g)! }
            messages.append(PCPortMessage(msgid: msgid, components: components))
        }
        for _ in 0..<15_000 {
            let msgid = [reply, reply, error, error, 7].randomElement(using: &g)!
            var components: [PCPortMessage.Component] = []
            // Mostly a serial first, as portd sends.
            if Int.random(in: 0..<8, using: &g) > 0 { components.append(Self.d("serial=\(UInt32.random(in: 0...9, using: &g))")) }
            for _ in 0..<Int.random(in: 0...5, using: &g) {
                switch Int.random(in: 0..<20, using: &g) {
                case 0: components.append(.port(rights.randomElement(using: &g)!))
                case 1: components.append(.sharedMemory(memory))
                case 2: components.append(.data([0xc3, 0xa9, 0x3d, 0x31, 0xff].shuffled(using: &g)))
                default: components.append(Self.d(Self.texts.randomElement(using: &g)!))
                }
            }
            // Often a port at the end, as a "found" carries.
            if Bool.random(using: &g) { components.append(.port(rights.randomElement(using: &g)!)) }
            messages.append(PCPortMessage(msgid: msgid, components: components))
        }
        var inPlace = 0
        for m in messages {
            let general: Result<LookupOutcome, NameServerError> = Result { () throws(NameServerError) in
                try PortNameServer.lookupOutcome(NameServerReply(m))
            }
            let inPlaceOutcome = PortMessageView.lend(m) { PortNameServer.lookupOutcomeInPlace($0) }
            if let fast = inPlaceOutcome {
                inPlace += 1
                switch general {
                case .success(let outcome): #expect(Self.same(fast, outcome), "\(m.components)")
                case .failure(let e): Issue.record("read in place as \(fast), the general parser throws \(e): \(m.components)")
                }
            }
            // The path resolve takes answers as the general one, always.
            let both = Result { () throws(NameServerError) in
                if let inPlaceOutcome { return inPlaceOutcome }
                return try PortNameServer.lookupOutcome(NameServerReply(m))
            }
            switch (both, general) {
            case (.success(let a), .success(let b)): #expect(Self.same(a, b))
            case (.failure(let a), .failure(let b)): #expect("\(a)" == "\(b)")
            default: Issue.record("\(both) against \(general): \(m.components)")
            }
        }
        #expect(inPlace > 5_000)  // the fast path is taken, not only declined
    }

    /// What the channel did before it read the serial in place.
    private static func textSerial(_ record: PCPortMessage) -> UInt32? {
        record.components.first?.string.flatMap(NameServerField.init(text:)).flatMap {
            $0.key == NameServerProtocol.Field.serial ? UInt32($0.value) : nil
        }
    }

    @Test func aReplyIsFiledUnderTheSerialItsTextSays() throws {
        let right = try PCPort().makeSendRight()
        let memory = try SharedMemory(copying: Array("serial=12".utf8))
        var g = SplitMix64(seed: 7)
        var records: [PCPortMessage] = [
            PCPortMessage(msgid: 1, components: []), PCPortMessage(msgid: 1, components: [.port(right)]),
            PCPortMessage(msgid: 1, components: [.sharedMemory(memory)]),
        ]
        let pieces = ["serial", "=", "1", "0", "+", "-", "4294967295", "4294967296", "é", "x", "Serial", " ", "\u{301}"]
        for _ in 0..<20_000 {
            var s = Bool.random(using: &g) ? "serial=" : ""
            for _ in 0..<Int.random(in: 0...5, using: &g) { s += pieces.randomElement(using: &g)! }
            var bytes = Array(s.utf8)
            if Int.random(in: 0..<10, using: &g) == 0 { bytes.append(0xff) }
            records.append(PCPortMessage(msgid: 1, components: [.data(bytes)]))
        }
        var serials = 0
        for r in records {
            #expect(PortMessageView.lend(r) { ControlChannel.serial(of: $0) } == Self.textSerial(r), "\(r.components)")
            if Self.textSerial(r) != nil { serials += 1 }
        }
        #expect(serials > 300)  // read, not only refused
    }

    @Test func aRequestIsTheBytesOfItsFields() {
        typealias F = NameServerProtocol.Field
        var g = SplitMix64(seed: 2026)
        var scratch: [PCPortMessage.Component] = []
        var scratchName: String?
        let names = ["bench.scale.target", "a", "org.example.Service_2", String(repeating: "n", count: 200), "é"]
        for _ in 0..<5_000 {
            let serial = [0, 1, 9, 10, 4_294_967_295, UInt32.random(in: 0 ... .max, using: &g)].randomElement(using: &g)!
            let body: ControlChannel.Body
            let fields: [NameServerField]
            if Bool.random(using: &g) {
                let name = names.randomElement(using: &g)!
                let wait: Int? = [nil, 1, 999, Int.max, -3].randomElement(using: &g)!
                body = .lookup(name: name, waitMilliseconds: wait)
                fields = [NameServerField(F.name, name)] + (wait.map { [NameServerField(F.waitMilliseconds, $0)] } ?? [])
            } else {
                var f: [NameServerField] = []
                for _ in 0..<Int.random(in: 0...4, using: &g) {
                    f.append(NameServerField(["name", "option", "after"].randomElement(using: &g)!, names.randomElement(using: &g)!))
                }
                fields = f
                body = .fields(f)
            }
            let expected = PCPortMessage(request: 1, serial: serial, fields).components.map { $0.bytes }
            let got = ControlChannel.requestComponents(serial: serial, body, scratch: &scratch, name: &scratchName)
                .map { $0.bytes }
            #expect(got == expected)
        }
    }
}
