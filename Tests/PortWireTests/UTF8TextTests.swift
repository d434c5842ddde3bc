// UTF8TextTests: UTF8Text.string answers exactly what
// String(validating:as:) answers, on its ASCII path and off it: every
// field of the name server's vocabulary goes through it.

import PortTestSupport
import PortWire
import Testing

@Suite struct UTF8TextTests {
    static let corpus: [[UInt8]] = [
        [],
        Array("serial=1".utf8),
        Array("name=org.example.a_b-c".utf8),
        Array("message=née à Zürich ✓ 🚀".utf8),  // 2-, 3- and 4-byte sequences
        [0x7f, 0x00, 0x41],  // DEL and NUL are ASCII
        [0x80],  // a lone continuation byte
        [0x41, 0xc3],  // truncated 2-byte sequence at the end
        [0xc0, 0xaf],  // overlong "/"
        [0xe0, 0x80, 0xaf],  // overlong, 3 bytes
        [0xed, 0xa0, 0x80],  // a UTF-16 surrogate
        [0xf4, 0x90, 0x80, 0x80],  // above U+10FFFF
        [0xff, 0xfe],
        Array("key=".utf8) + [0xe2, 0x82],  // valid prefix, truncated tail
    ]

    @Test func itAnswersWhatStringValidatingAnswers() {
        for bytes in Self.corpus {
            #expect(UTF8Text.string(bytes) == String(validating: bytes, as: UTF8.self), "\(bytes)")
        }
    }

    @Test func randomBytesToo() {
        // Seeded, so a failure names its input; biased towards ASCII so
        // both paths are taken often.
        var g = SplitMix64(seed: 0x5eed_0077)
        var ascii = 0
        var other = 0
        for _ in 0..<20_000 {
            let n = Int(g.next() % 12)
            let bytes = (0..<n).map { _ -> UInt8 in
                let r = g.next()
                return r % 4 == 0 ? UInt8(truncatingIfNeeded: r >> 8) : UInt8(truncatingIfNeeded: r >> 8) & 0x7f
            }
            if bytes.allSatisfy({ $0 < 0x80 }) { ascii += 1 } else { other += 1 }
            let expected = String(validating: bytes, as: UTF8.self)
            #expect(UTF8Text.string(bytes) == expected, "\(bytes)")
            #expect(bytes.withUnsafeBytes { UTF8Text.string($0) } == expected, "\(bytes)")
        }
        #expect(ascii > 1_000 && other > 1_000, "both paths taken: \(ascii) ASCII, \(other) not")
    }
}
