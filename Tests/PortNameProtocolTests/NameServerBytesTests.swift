// NameServerBytesTests: the vocabulary read from bytes in place
// (NameServerBytes) answers what its String counterpart answers: integers
// against FixedWidthInteger's parse, fields against NameServerField(text:),
// owners against the split-at-":" reading they replaced, and the naming
// rule against the `enumerated()` loop it replaced; seeded random inputs
// (reproducible) and edge cases.

import Testing

@testable import PortNameProtocol

@Suite struct NameServerBytesTests {
    /// SplitMix64, seeded: the same inputs every run.
    private struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Text made of pieces that matter to these parsers, and some that do not.
    private static func text(_ g: inout Seeded, pieces: [String], maxPieces: Int = 6) -> String {
        var s = ""
        for _ in 0..<Int.random(in: 0...maxPieces, using: &g) { s += pieces.randomElement(using: &g)! }
        return s
    }

    private static let numberPieces = [
        "0", "1", "7", "9", "42", "00", "-", "+", "2147483647", "2147483648", "4294967295", "4294967296",
        "18446744073709551615", "18446744073709551616", "-2147483648", "-2147483649", "127", "128", "255", "256",
        " ", "x", "é", "\u{301}", "٣", "\0", ":", "=",
    ]

    private static func bytes<R>(_ s: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var s = s
        return s.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    private static let edgeNumbers = [
        "", "+", "-", "0", "-0", "+0", "--1", "+-1", "00012", "1 ", " 1", "4294967295", "4294967296", "-1",
        "2147483647", "-2147483648", "2147483648", "18446744073709551615", "18446744073709551616", "１", "1_000",
    ]

    @Test func integersAsFixedWidthIntegerParses() {
        var g = Seeded(state: 13)
        var inputs = Self.edgeNumbers
        for _ in 0..<20_000 { inputs.append(Self.text(&g, pieces: Self.numberPieces)) }
        var parsed = 0
        for s in inputs {
            Self.bytes(s) { b in
                #expect(NameServerProtocol.integer(b, as: UInt32.self) == UInt32(s), "UInt32 \(s.debugDescription)")
                #expect(NameServerProtocol.integer(b, as: Int32.self) == Int32(s), "Int32 \(s.debugDescription)")
                #expect(NameServerProtocol.integer(b, as: UInt64.self) == UInt64(s), "UInt64 \(s.debugDescription)")
                #expect(NameServerProtocol.integer(b, as: Int8.self) == Int8(s), "Int8 \(s.debugDescription)")
                if UInt32(s) != nil { parsed += 1 }
            }
        }
        #expect(parsed > 1_000)  // not only refusals
    }

    @Test func fieldsAsNameServerFieldSplitsThem() {
        var g = Seeded(state: 7)
        let pieces = ["serial", "owner", "a", "z", "_", "0", "9", "=", "==", "A", "-", " ", "é", "x=y", "\u{301}", "\0", ":"]
        var inputs = ["", "=", "a=", "=a", "a", "ab=cd=ef", "A=b", "a-b=c", "a=\u{301}"]
        for _ in 0..<20_000 { inputs.append(Self.text(&g, pieces: pieces)) }
        var fields = 0
        for s in inputs {
            let expected = NameServerField(text: s)
            Self.bytes(s) { b in
                let got = NameServerProtocol.field(b).map {
                    NameServerField(String(decoding: $0.key, as: UTF8.self), String(decoding: $0.value, as: UTF8.self))
                }
                #expect(got == expected, "\(s.debugDescription)")
                if let got {
                    fields += 1
                    #expect(NameServerProtocol.equals(NameServerProtocol.field(b)!.key, got.key))
                    #expect(!NameServerProtocol.equals(NameServerProtocol.field(b)!.key, got.key + "x"))
                }
            }
        }
        #expect(fields > 1_000)
    }

    /// What `NameOwner.Process(encoded:)` did before it read bytes.
    private static func splitOwner(_ text: String) -> NameOwner.Process? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let pid = Int32(parts[0]), let uid = UInt32(parts[1]), let client = UInt64(parts[2])
        else { return nil }
        return NameOwner.Process(pid: pid, uid: uid, client: client)
    }

    @Test func ownersAsTheSplitReadThem() {
        var g = Seeded(state: 2026)
        var inputs = ["", ":", "::", ":::", "1:2:3", "1:2:3:", "-1:0:0", "+1:+2:+3", "1:-0:3", "1:-1:3", "2147483648:0:0",
            "1:2:18446744073709551615", "1:2:18446744073709551616", "1:\u{301}2:3", "1::3", "12:1000:7", "1:2:3\u{301}",
            ":\u{301}1:2:3", "1\u{600}:2:3"]
        for _ in 0..<20_000 { inputs.append(Self.text(&g, pieces: Self.numberPieces, maxPieces: 8)) }
        for _ in 0..<5_000 {
            inputs.append("\(Int32.random(in: .min ... .max, using: &g)):\(UInt32.random(in: 0 ... .max, using: &g)):\(UInt64.random(in: 0 ... .max, using: &g))")
        }
        var owners = 0
        for s in inputs {
            let expected = Self.splitOwner(s)
            #expect(NameOwner.Process(encoded: s) == expected, "\(s.debugDescription)")
            Self.bytes(s) { b in #expect(NameOwner.Process(encodedBytes: b) == expected, "\(s.debugDescription)") }
            if expected != nil { owners += 1 }
        }
        #expect(owners > 5_000)
    }

    /// What `nameProblem(of:)` did before it counted bytes by hand.
    private static func enumeratedProblem(_ name: String) -> NameServerProtocol.NameProblem? {
        let bytes = name.utf8
        if bytes.isEmpty { return .empty }
        if bytes.count > NameServerProtocol.maximumNameLength { return .tooLong(bytes: bytes.count) }
        if bytes.first == UInt8(ascii: ".") { return .leadingDot }
        for (i, b) in bytes.enumerated() where !NameServerProtocol.isNameByte(b) { return .forbiddenByte(b, at: i) }
        return nil
    }

    @Test func theNamingRuleAsBefore() {
        var g = Seeded(state: 99)
        let pieces = ["a", "Z", "0", ".", "_", "-", "/", " ", "é", "bench.scale.target", String(repeating: "n", count: 60), "\0"]
        var inputs = ["", ".", "..", "a", ".a", "a.", String(repeating: "x", count: 200), String(repeating: "x", count: 201)]
        for _ in 0..<20_000 { inputs.append(Self.text(&g, pieces: pieces)) }
        for s in inputs {
            #expect(NameServerProtocol.nameProblem(of: s) == Self.enumeratedProblem(s), "\(s.debugDescription)")
        }
    }
}
