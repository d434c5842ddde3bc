// WireDecoderFuzz: the fuzz target of PortWire's record decoder. One input
// is one received record: its first byte says how many descriptors came
// with it (low 4 bits), which limits the receiver has (bit 4: a small
// receiver's, otherwise the defaults), and whether each large component of
// up to `memfdLimit` bytes is then backed by a real sealed memfd (bit 5),
// laid out as bits 6-7 say (`Layout`); the rest is the record.
//
// What must hold for every input (a violation traps, which libFuzzer
// reports as a crash and the replay as a failed input):
//   - `WireDecoder.decode` returns or throws a WireError; it never reads
//     outside the record (AddressSanitizer) nor traps;
//   - a decoded view names only descriptors that came with the record,
//     data slices inside the record, sizes within the limits, and as many
//     components as its header says;
//   - re-encoding the decoded message (WireEncoder) gives the same bytes
//     (REPLY_EXPECTED, which the encoder leaves to the transport, aside)
//     and decodes again to the same components: one encoding per message;
//   - every error has a description;
//   - with bit 5, the receiver's check of each memfd keeps the promise of
//     portd-protocol(7), "Large components": a memfd MemFD.checkSealed
//     accepts costs nothing to read over the announced range (its
//     allocation does not grow), and one it refuses for holes would have.

import PortSystem
import PortWire

enum WireDecoderFuzz {
    static let smallLimits = PortLimits(maxRecordSize: 4096, maxComponents: 16, maxDescriptors: 4, maxLargeDataBytes: 1 << 20)

    static func run(_ input: UnsafeRawBufferPointer) {
        guard let first = input.first else { return }
        let record = UnsafeRawBufferPointer(rebasing: input[1...])
        let descriptorCount = Int(first & 0x0F)
        let limits: PortLimits = first & 0x10 == 0 ? .default : smallLimits
        let view: WireMessageView
        do {
            view = try WireDecoder.decode(record, descriptorCount: descriptorCount, limits: limits)
        } catch {
            precondition(!"\(error)".isEmpty, "an error without a description")
            return
        }
        check(view, record: record, descriptorCount: descriptorCount, limits: limits)
        if first & 0x20 != 0 {
            checkMemfds(view, layout: Layout(rawValue: first >> 6)!)
        }
    }

    /// Where the bytes read from memfds go (the fuzzing thread's only).
    nonisolated(unsafe) private static var sink: UInt8 = 0

    /// Large components backed by memfds (bit 5) up to this length.
    static let memfdLimit = 1 << 20

    /// How a memfd behind a large component of `length` bytes is written
    /// (bits 6-7 of the first byte); every one is sealed afterwards.
    enum Layout: UInt8 {
        /// Exactly `length` bytes, all written: what PortCore sends.
        case written
        /// Twice as long, the announced range a hole, the rest written.
        case holeBeforeLength
        /// `length` long, only its first half written.
        case shortOfLength
        /// Twice as long, the first half of the range and the part beyond
        /// it written: the file's allocation covers `length`, the range has
        /// a hole.
        case holeInside
    }

    private static func checkMemfds(_ view: WireMessageView, layout: Layout) {
        for c in view.components {
            guard case .largeData(_, let length) = c, length <= memfdLimit else { continue }
            do {
                let fd = try makeMemfd(length: length, layout: layout)
                let accepted: Bool
                do {
                    try MemFD.checkSealed(fd, length: length)
                    accepted = true
                } catch {
                    switch error {
                    case .sparse, .hole: accepted = false
                    default: preconditionFailure("a memfd of ours refused: \(error)")
                    }
                }
                let before = try MemFD.allocatedBytes(fd)
                let region = try MemFD.mapReadOnly(fd, length: length)
                var sum: UInt8 = 0  // one byte of every page read, kept so the reads stay
                for offset in stride(from: 0, to: length, by: 4096) { sum &+= region[offset] }
                sink &+= sum
                MemFD.unmap(region)
                let after = try MemFD.allocatedBytes(fd)
                if accepted {
                    precondition(after == before, "an accepted memfd grew from \(before) to \(after) bytes when read")
                } else {
                    precondition(after > before, "a refused memfd had no hole in its announced range")
                }
            } catch {
                preconditionFailure("memfd: \(error)")
            }
        }
    }

    private static func makeMemfd(length: Int, layout: Layout) throws -> OwnedDescriptor {
        let fd = try MemFD.create(name: "fuzz")
        let bytes = [UInt8](repeating: 0x78, count: length)
        try bytes.withUnsafeBytes { raw in
            switch layout {
            case .written:
                try MemFD.write(fd, raw)
            case .holeBeforeLength:
                try MemFD.resize(fd, to: 2 * length)
                try MemFD.write(fd, raw, at: length)
            case .shortOfLength:
                try MemFD.resize(fd, to: length)
                try MemFD.write(fd, UnsafeRawBufferPointer(rebasing: raw[..<(length / 2)]), at: 0)
            case .holeInside:
                try MemFD.resize(fd, to: 2 * length)
                try MemFD.write(fd, UnsafeRawBufferPointer(rebasing: raw[..<(length / 2)]), at: 0)
                try MemFD.write(fd, raw, at: length)
            }
        }
        try MemFD.addSeals(fd, .all)
        return fd
    }

    private static func check(
        _ view: WireMessageView, record: UnsafeRawBufferPointer, descriptorCount: Int, limits: PortLimits
    ) {
        precondition(record.count <= limits.maxRecordSize)
        precondition(view.componentCount <= limits.maxComponents)
        var count = 0
        var largeTotal = 0
        let recordStart = UInt(bitPattern: record.baseAddress)
        for c in view.components {
            count += 1
            switch c {
            case .data(let bytes):
                if bytes.count > 0 {
                    let start = UInt(bitPattern: bytes.baseAddress)
                    precondition(start >= recordStart && start + UInt(bytes.count) <= recordStart + UInt(record.count))
                    _ = bytes.reduce(0 as UInt8, &+)  // every byte readable
                }
            case .port(let i):
                precondition(i >= 0 && i < descriptorCount)
                precondition(i != view.replyPortDescriptorIndex)
            case .largeData(let i, let length):
                precondition(i >= 0 && i < descriptorCount && length > 0)
                largeTotal += length
            }
        }
        precondition(count == view.componentCount)
        precondition(UInt64(largeTotal) <= limits.maxLargeDataBytes)

        // One encoding per message: encode what was decoded, compare.
        let fds = (0..<Int32(descriptorCount)).map { 100 + $0 }
        let components = fds.withUnsafeBufferPointer { view.copyComponents(descriptors: $0) }
        let replyPort: Int32? = view.replyPortDescriptorIndex.map { fds[$0] }
        let encoded: (bytes: [UInt8], descriptors: [Int32])
        do {
            encoded = try WireEncoder.encode(msgid: view.msgid, replyPort: replyPort, components: components, limits: limits)
        } catch {
            preconditionFailure("a decoded record does not encode again: \(error)")
        }
        var expected = [UInt8](record)
        expected[5] &= ~WireFormat.Flags.replyExpected.rawValue
        precondition(encoded.bytes == expected, "the encoder writes this message differently")
        precondition(encoded.descriptors.count == descriptorCount, "the record came with descriptors it does not use")
        let again = encoded.bytes.withUnsafeBytes { raw -> [PortComponent]? in
            guard let v = try? WireDecoder.decode(raw, descriptorCount: descriptorCount, limits: limits) else { return nil }
            return fds.withUnsafeBufferPointer { v.copyComponents(descriptors: $0) }
        }
        precondition(again == components, "the re-encoded record decodes differently")
    }
}
