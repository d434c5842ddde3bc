// The decoder against hostile input: every prefix of a valid record, every
// header and table byte inverted, wrong descriptor counts, each limit, and
// random records. Each must end in the specific WireError the man page
// lists, or in a successful decode where the change is harmless; never in
// a crash.

import Testing
import PortTestSupport
@testable import PortWire

@Suite struct WireDecoderTests {
    let record = WireGoldenTests.mixed  // 46 bytes: 12 header + 4·8 table + 2 data; 3 descriptors
    let fds: [Int32] = [20, 21, 22]

    func decode(_ bytes: [UInt8], _ descriptors: [Int32]? = nil, limits: PortLimits = .default) -> Result<
        (msgid: UInt32, replyPort: Int32?, components: [PortComponent]), WireError
    > {
        Result { () throws(WireError) in try WireDecoder.decode(bytes, descriptors: descriptors ?? fds, limits: limits) }
    }

    func error(_ r: Result<(msgid: UInt32, replyPort: Int32?, components: [PortComponent]), WireError>) -> WireError? {
        if case .failure(let e) = r { return e }
        return nil
    }

    @Test func everyPrefixIsTruncated() {
        #expect(record.count == 46)
        for n in 0..<record.count {
            let expected: Int = n < 12 ? 12 : n < 44 ? 44 : 46
            #expect(error(decode(Array(record.prefix(n)))) == .truncated(expected: expected, actual: n), "prefix \(n)")
        }
        #expect(error(decode(record + [0])) == .trailingBytes(expected: 46, actual: 47))
        #expect(error(decode(record + Array(repeating: 0, count: 100))) == .trailingBytes(expected: 46, actual: 146))
    }

    @Test func everyHeaderAndTableByteInverted() throws {
        // offset -> the error inverting that byte (x ^ 0xFF) must give; nil: decodes.
        var expected: [Int: WireError?] = [:]
        for i in 0..<4 {
            var m = Array(record[0..<4])
            m[i] ^= 0xFF
            expected[i] = .badMagic(UInt32(m[0]) | UInt32(m[1]) << 8 | UInt32(m[2]) << 16 | UInt32(m[3]) << 24)
        }
        expected[4] = .unsupportedVersion(0xFE)
        expected[5] = .unknownFlags(0xFC)  // 0x01 REPLY_PORT and 0x02 REPLY_EXPECTED are known
        expected[6] = .truncated(expected: 12 + 8 * 0xFB, actual: 46)
        expected[7] = .tooManyComponents(count: 0xFF04, limit: 1024)
        for i in 8..<12 { expected[i] = .some(nil) }  // msgid: any value is valid
        let kinds: [UInt8] = [1, 2, 1, 3]
        for c in 0..<4 {
            let at = 12 + 8 * c
            expected[at] = .unknownComponentKind(component: c, kind: kinds[c] ^ 0xFF)
            for r in 1...3 { expected[at + r] = .reservedBytesSet(component: c) }
        }
        // Component 0: data, length 2.
        expected[16] = .truncated(expected: 44 + 0xFD, actual: 46)
        expected[17] = .truncated(expected: 44 + 0xFF02, actual: 46)
        expected[18] = .truncated(expected: 44 + 0xFF_0002, actual: 46)
        expected[19] = .truncated(expected: 44 + 0xFF00_0002, actual: 46)
        // Component 1: port, length 0.
        for (k, v) in [24: 0xFF, 25: 0xFF00, 26: 0xFF_0000, 27: 0xFF00_0000] as [Int: UInt64] {
            expected[k] = .invalidComponentLength(component: 1, kind: .port, length: v)
        }
        // Component 2: data, length 0.
        expected[32] = .truncated(expected: 46 + 0xFF, actual: 46)
        expected[33] = .truncated(expected: 46 + 0xFF00, actual: 46)
        expected[34] = .truncated(expected: 46 + 0xFF_0000, actual: 46)
        expected[35] = .truncated(expected: 46 + 0xFF00_0000, actual: 46)
        // Component 3: large data, 0x10000: other lengths are valid up to the limit.
        expected[40] = .some(nil)
        expected[41] = .some(nil)
        expected[42] = .some(nil)
        expected[43] = .largeComponentTooLarge(component: 3, length: 0xFF01_0000, limit: 1 << 28)

        #expect(expected.count == 44)
        for offset in 0..<44 {
            var bytes = record
            bytes[offset] ^= 0xFF
            let want = expected[offset]!
            let got = error(decode(bytes))
            #expect(got == want, "byte \(offset) inverted: \(String(describing: got))")
        }
    }

    @Test func everySingleBitFlipDecodesOrThrows() {
        // Any outcome but a crash is acceptable here; the typed errors are
        // pinned above. Count both so that the test sees it ran.
        var ok = 0
        var failed = 0
        for offset in 0..<record.count {
            for bit in 0..<8 {
                var bytes = record
                bytes[offset] ^= 1 << bit
                switch decode(bytes) {
                case .success: ok += 1
                case .failure: failed += 1
                }
            }
        }
        #expect(ok + failed == 46 * 8)
        #expect(failed > 0 && ok > 0)
    }

    @Test func descriptorCountMustMatch() {
        #expect(error(decode(record, [20, 21])) == .descriptorCountMismatch(expected: 3, received: 2))
        #expect(error(decode(record, [20, 21, 22, 23])) == .descriptorCountMismatch(expected: 3, received: 4))
        #expect(error(decode(record, [])) == .descriptorCountMismatch(expected: 3, received: 0))
        #expect(error(decode(WireGoldenTests.empty, [5])) == .descriptorCountMismatch(expected: 0, received: 1))
    }

    @Test func limitsAreEnforced() throws {
        #expect(
            error(decode(record, limits: PortLimits(maxRecordSize: 45))) == .recordTooLarge(size: 46, limit: 45))
        #expect(error(decode(record, limits: PortLimits(maxComponents: 3))) == .tooManyComponents(count: 4, limit: 3))
        #expect(
            error(decode(record, limits: PortLimits(maxDescriptors: 2))) == .tooManyDescriptors(count: 3, limit: 2))
        #expect(
            error(decode(record, limits: PortLimits(maxLargeDataBytes: 0xFFFF)))
                == .largeDataTooLarge(total: 0x10000, limit: 0xFFFF))
        // One component beyond maxLargeComponentBytes, as the encoder refuses
        // to write it (the fuzzer's round trip found the decoder taking it).
        #expect(
            error(decode(record, limits: PortLimits(maxLargeComponentBytes: 0xFFFF)))
                == .largeComponentTooLarge(component: 3, length: 0x10000, limit: 0xFFFF))
        // At the limits exactly, it decodes.
        let exact = PortLimits(maxRecordSize: 46, maxComponents: 4, maxDescriptors: 3, maxLargeDataBytes: 0x10000)
        #expect(error(decode(record, limits: exact)) == nil)
        // Limits are clamped to what the kernel and the format allow.
        #expect(PortLimits(maxComponents: 1 << 20, maxDescriptors: 1000).maxComponents == 65535)
        #expect(PortLimits(maxDescriptors: 1000).maxDescriptors == 253)
    }

    @Test func zeroLengthLargeDataAndPortLengthAreRefused() {
        var bytes = Hex.bytes("70 6f 72 74 01 00 01 00 00 00 00 00  03 00 00 00 00 00 00 00")
        #expect(error(decode(bytes, [3])) == .invalidComponentLength(component: 0, kind: .largeData, length: 0))
        bytes[12] = 0  // kind 0 is never valid
        #expect(error(decode(bytes, [3])) == .unknownComponentKind(component: 0, kind: 0))
    }

    @Test func viewReadsInPlace() throws {
        try record.withUnsafeBytes { raw in
            try fds.withUnsafeBufferPointer { d in
                let view = try WireDecoder.decode(raw, descriptorCount: d.count)
                var seen: [String] = []
                for c in view.components {
                    switch c {
                    case .data(let slice):
                        // A slice of the record, not a copy.
                        if let s = slice.baseAddress, slice.count > 0 {
                            #expect(s >= raw.baseAddress! && s + slice.count <= raw.baseAddress! + raw.count)
                        }
                        seen.append("data:" + String(decoding: slice, as: UTF8.self))
                    case .port(let i): seen.append("port:\(d[i])")
                    case .largeData(let i, let n): seen.append("large:\(d[i]):\(n)")
                    }
                }
                #expect(seen == ["data:hi", "port:21", "data:", "large:22:65536"])
                #expect(view.replyPortDescriptorIndex.map { d[$0] } == 20)
                #expect(view.componentCount == 4)
            }
        }
    }

    @Test func randomRecordsNeverCrash() {
        // A fixed-seed generator: reproducible "fuzzing" of the header area.
        var rng = SplitMix64(seed: 0x706f_7274)
        var outcomes = [0, 0]
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 80)
            var bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            // Mostly valid magic and version, so that the deeper checks are reached.
            if n >= 6 && rng.next() % 4 != 0 {
                bytes.replaceSubrange(0..<5, with: [0x70, 0x6f, 0x72, 0x74, 0x01])
                bytes[5] &= 0x01
                if n >= 8 { bytes[7] = 0; bytes[6] &= 0x07 }
            }
            let fdCount = Int(rng.next() % 4)
            switch decode(bytes, Array(repeating: 3, count: fdCount)) {
            case .success: outcomes[0] += 1
            case .failure: outcomes[1] += 1
            }
        }
        #expect(outcomes[0] + outcomes[1] == 20_000)
        #expect(outcomes[1] > 0)
    }
}
