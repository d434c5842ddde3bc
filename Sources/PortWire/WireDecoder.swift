// WireDecoder: validates one received record against portd-protocol(7) and
// the receiver's PortLimits, and returns a view of it.
//
// Invariants: every count and length is checked before anything is read
// past it or allocated for it, in the order the man page lists under
// ERRORS; lengths are summed in 64-bit so that no peer-chosen value can
// overflow. The decoder reads only the bytes and the number of descriptors
// that came with them: it performs no I/O and owns no descriptor. On any
// error the caller closes every descriptor it received with the record
// (and should drop the connection). Large components are checked for size
// limits here; whether their memfds are really sealed is `MemFD.checkSealed`.

/// Decodes port-message records (see portd-protocol(7)).
public enum WireDecoder {
    /// Validates `record` (the bytes of one SOCK_SEQPACKET record) with the
    /// number of descriptors that arrived with it, and returns a view of the
    /// message that reads from `record` without copying. The view is valid
    /// only as long as the buffer is.
    public static func decode(
        _ record: UnsafeRawBufferPointer, descriptorCount: Int, limits: PortLimits = .default
    ) throws(WireError) -> WireMessageView {
        let size = record.count
        if size > limits.maxRecordSize { throw .recordTooLarge(size: size, limit: limits.maxRecordSize) }
        if size < WireFormat.headerSize { throw .truncated(expected: WireFormat.headerSize, actual: size) }
        let magic = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
        if magic != WireFormat.magic { throw .badMagic(magic) }
        let version = record[4]
        if version != WireFormat.version { throw .unsupportedVersion(version) }
        let flags = WireFormat.Flags(rawValue: record[5])
        if !WireFormat.Flags.known.isSuperset(of: flags) {
            throw .unknownFlags(flags.subtracting(.known).rawValue)
        }
        let count = Int(UInt16(littleEndian: record.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        let msgid = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        if count > limits.maxComponents { throw .tooManyComponents(count: count, limit: limits.maxComponents) }
        let tableEnd = WireFormat.headerSize + WireFormat.entrySize * count
        if size < tableEnd { throw .truncated(expected: tableEnd, actual: size) }

        var expected = tableEnd  // header + table + inline data, at most 12 + 8·65535 + 65535·(2^32-1) < 2^63
        var needed = flags.contains(.replyPort) ? 1 : 0
        var largeTotal: UInt64 = 0
        for i in 0..<count {
            let at = WireFormat.headerSize + WireFormat.entrySize * i
            let word = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: at, as: UInt32.self))
            let length = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: at + 4, as: UInt32.self))
            if word & 0xFFFF_FF00 != 0 { throw .reservedBytesSet(component: i) }
            guard let kind = WireFormat.ComponentKind(rawValue: UInt8(word)) else {
                throw .unknownComponentKind(component: i, kind: UInt8(word))
            }
            switch kind {
            case .data:
                expected += Int(length)
            case .port:
                if length != 0 { throw .invalidComponentLength(component: i, kind: .port, length: UInt64(length)) }
                needed += 1
            case .largeData:
                if length == 0 { throw .invalidComponentLength(component: i, kind: .largeData, length: 0) }
                if UInt64(length) > limits.maxLargeComponentBytes {
                    throw .largeComponentTooLarge(component: i, length: UInt64(length), limit: limits.maxLargeComponentBytes)
                }
                needed += 1
                largeTotal += UInt64(length)
            }
        }
        if needed > limits.maxDescriptors { throw .tooManyDescriptors(count: needed, limit: limits.maxDescriptors) }
        if descriptorCount != needed { throw .descriptorCountMismatch(expected: needed, received: descriptorCount) }
        if largeTotal > limits.maxLargeDataBytes {
            throw .largeDataTooLarge(total: largeTotal, limit: limits.maxLargeDataBytes)
        }
        if expected > size { throw .truncated(expected: expected, actual: size) }
        if expected < size { throw .trailingBytes(expected: expected, actual: size) }
        return WireMessageView(
            msgid: msgid, flags: flags, componentCount: count, record: record, descriptorCount: descriptorCount)
    }

    /// As `decode(_:descriptorCount:limits:)`, for arrays, with the
    /// descriptors as the numbers that came with the record: for tests and
    /// tools that read records without owning descriptors.
    package static func decode(
        _ record: [UInt8], descriptors: [Int32] = [], limits: PortLimits = .default
    ) throws(WireError) -> (msgid: UInt32, replyPort: Int32?, components: [PortComponent]) {
        let result = record.withUnsafeBytes { raw in
            descriptors.withUnsafeBufferPointer { fds in
                Result { () throws(WireError) in
                    let view = try decode(raw, descriptorCount: fds.count, limits: limits)
                    return (view.msgid, view.replyPortDescriptorIndex.map { fds[$0] }, view.copyComponents(descriptors: fds))
                }
            }
        }
        return try result.get()
    }
}
