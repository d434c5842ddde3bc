// WireDecoderFuzz: the fuzz target of PortWire's record decoder. One input
// is one received record: its first byte says how many descriptors came
// with it (low 4 bits) and which limits the receiver has (bit 4: a small
// receiver's, otherwise the defaults); the rest is the record.
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
//   - every error has a description.

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
