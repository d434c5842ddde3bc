// WireWriter: writes one record into a caller-provided buffer, component by
// component, without allocating. The header and table slots are placed up
// front (the component count is announced first); each append fills its
// table entry and copies inline bytes to the data area. Every limit is
// checked as it is reached, before a byte goes past the buffer or the limit.
//
// Descriptors are not the writer's business: the caller passes them in
// SCM_RIGHTS in the order of portd-protocol(7) (reply port first, then one per
// port or large-data component). `descriptorCount` says how many the record
// calls for. `WireEncoder` does both from a list of `PortComponent`s.

/// An allocation-free writer of one port-message record.
public struct WireWriter {
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private let limits: PortLimits
    /// The number of components announced in the header.
    public let componentCount: Int
    private var written = 0
    private var dataEnd: Int
    private var largeTotal: UInt64 = 0
    /// Descriptors the record calls for so far (reply port included).
    public private(set) var descriptorCount: Int

    /// Starts a record in `buffer` with its header and room for
    /// `componentCount` table entries.
    public init(
        into buffer: UnsafeMutableRawBufferPointer, msgid: UInt32, hasReplyPort: Bool,
        componentCount: Int, limits: PortLimits = .default
    ) throws(WireError) {
        precondition(componentCount >= 0)
        if componentCount > limits.maxComponents {
            throw .tooManyComponents(count: componentCount, limit: limits.maxComponents)
        }
        let tableEnd = WireFormat.headerSize + WireFormat.entrySize * componentCount
        if tableEnd > limits.maxRecordSize { throw .recordTooLarge(size: tableEnd, limit: limits.maxRecordSize) }
        if tableEnd > buffer.count { throw .bufferTooSmall(needed: tableEnd, capacity: buffer.count) }
        if hasReplyPort && limits.maxDescriptors < 1 { throw .tooManyDescriptors(count: 1, limit: limits.maxDescriptors) }
        base = buffer.baseAddress!
        capacity = buffer.count
        self.limits = limits
        self.componentCount = componentCount
        dataEnd = tableEnd
        descriptorCount = hasReplyPort ? 1 : 0
        base.storeBytes(of: WireFormat.magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        base.storeBytes(of: WireFormat.version, toByteOffset: 4, as: UInt8.self)
        let flags: WireFormat.Flags = hasReplyPort ? .replyPort : []
        base.storeBytes(of: flags.rawValue, toByteOffset: 5, as: UInt8.self)
        base.storeBytes(of: UInt16(componentCount).littleEndian, toByteOffset: 6, as: UInt16.self)
        base.storeBytes(of: msgid.littleEndian, toByteOffset: 8, as: UInt32.self)
    }

    /// The record written so far is this long; after the last append, the
    /// record's length.
    public var byteCount: Int { dataEnd }

    private mutating func entry(_ kind: WireFormat.ComponentKind, length: UInt32) throws(WireError) {
        if written >= componentCount {
            throw .componentCountMismatch(declared: componentCount, written: written + 1)
        }
        let at = WireFormat.headerSize + WireFormat.entrySize * written
        // kind, three zero bytes, length: one little-endian UInt32 then another.
        base.storeBytes(of: UInt32(kind.rawValue).littleEndian, toByteOffset: at, as: UInt32.self)
        base.storeBytes(of: length.littleEndian, toByteOffset: at + 4, as: UInt32.self)
        written += 1
    }

    /// Appends a data component with a copy of `bytes`.
    public mutating func appendData(_ bytes: UnsafeRawBufferPointer) throws(WireError) {
        let n = bytes.count
        if n > Int(UInt32.max) {
            throw .invalidComponentLength(component: written, kind: .data, length: UInt64(n))
        }
        let end = dataEnd + n
        if end > limits.maxRecordSize { throw .recordTooLarge(size: end, limit: limits.maxRecordSize) }
        if end > capacity { throw .bufferTooSmall(needed: end, capacity: capacity) }
        try entry(.data, length: UInt32(n))
        if n > 0 { (base + dataEnd).copyMemory(from: bytes.baseAddress!, byteCount: n) }
        dataEnd = end
    }

    /// Appends a data component with a copy of `bytes`.
    public mutating func appendData(_ bytes: [UInt8]) throws(WireError) {
        // Array's closure-taking methods rethrow untyped errors: carry the
        // typed one out in a Result.
        let r = bytes.withUnsafeBytes { raw in Result { () throws(WireError) in try appendData(raw) } }
        try r.get()
    }

    /// Appends a port component; the record calls for one more descriptor.
    public mutating func appendPort() throws(WireError) {
        if descriptorCount + 1 > limits.maxDescriptors {
            throw .tooManyDescriptors(count: descriptorCount + 1, limit: limits.maxDescriptors)
        }
        try entry(.port, length: 0)
        descriptorCount += 1
    }

    /// Appends a large-data component of `length` bytes (at least 1, at most
    /// UInt32.max); the record calls for one more descriptor, the sealed memfd.
    public mutating func appendLargeData(length: Int) throws(WireError) {
        if length < 1 || length > Int(UInt32.max) {
            throw .invalidComponentLength(component: written, kind: .largeData, length: UInt64(max(length, 0)))
        }
        if descriptorCount + 1 > limits.maxDescriptors {
            throw .tooManyDescriptors(count: descriptorCount + 1, limit: limits.maxDescriptors)
        }
        let total = largeTotal + UInt64(length)
        if total > limits.maxLargeDataBytes { throw .largeDataTooLarge(total: total, limit: limits.maxLargeDataBytes) }
        if UInt64(length) > limits.maxLargeComponentBytes {
            throw .largeComponentTooLarge(component: written, length: UInt64(length), limit: limits.maxLargeComponentBytes)
        }
        try entry(.largeData, length: UInt32(length))
        largeTotal = total
        descriptorCount += 1
    }

    /// Checks that every announced component was appended and returns the
    /// record's length in bytes.
    public func finish() throws(WireError) -> Int {
        if written != componentCount { throw .componentCountMismatch(declared: componentCount, written: written) }
        return dataEnd
    }
}
