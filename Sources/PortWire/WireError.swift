// WireError: why a record cannot be decoded (or a message cannot be
// encoded). One error per rule of portd-protocol(7), each naming what was
// found and what was allowed, so that a log line is enough to see which side
// is wrong. A receiver treats any of them as a broken connection.

/// A record breaks the wire format or a limit.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The record ends before its header, table or data does.
    case truncated(expected: Int, actual: Int)
    /// The record goes on after the data its table accounts for.
    case trailingBytes(expected: Int, actual: Int)
    /// The first four bytes are not "port".
    case badMagic(UInt32)
    /// A version this code does not speak.
    case unsupportedVersion(UInt8)
    /// Header flag bits version 1 does not define.
    case unknownFlags(UInt8)
    /// A table entry's bytes 1 to 3 are not zero.
    case reservedBytesSet(component: Int)
    /// A table entry's kind is not data, port or large-data.
    case unknownComponentKind(component: Int, kind: UInt8)
    /// A port with a non-zero length, a large-data component of length 0,
    /// or a length above what the format holds.
    case invalidComponentLength(component: Int, kind: WireFormat.ComponentKind, length: UInt64)
    /// The record carried a different number of descriptors than its reply
    /// flag and port/large-data components call for.
    case descriptorCountMismatch(expected: Int, received: Int)
    /// The record is longer than `PortLimits.maxRecordSize`.
    case recordTooLarge(size: Int, limit: Int)
    /// More components than `PortLimits.maxComponents`.
    case tooManyComponents(count: Int, limit: Int)
    /// More descriptors than `PortLimits.maxDescriptors`.
    case tooManyDescriptors(count: Int, limit: Int)
    /// Large-data components add up to more than `PortLimits.maxLargeDataBytes`.
    case largeDataTooLarge(total: UInt64, limit: UInt64)
    /// Encoding: one large-data component is longer than
    /// `PortLimits.maxLargeComponentBytes` (a receiver refuses it).
    case largeComponentTooLarge(component: Int, length: UInt64, limit: UInt64)
    /// Encoding: the caller's byte or descriptor buffer is too small.
    case bufferTooSmall(needed: Int, capacity: Int)
    /// Encoding: a `WireWriter` finished with a different number of
    /// components than it announced, or was given more.
    case componentCountMismatch(declared: Int, written: Int)

    public var description: String {
        switch self {
        case .truncated(let e, let a): "truncated record: \(a) bytes, format requires \(e)"
        case .trailingBytes(let e, let a): "trailing bytes: record has \(a) bytes, components account for \(e)"
        case .badMagic(let m): "bad magic 0x\(String(m, radix: 16)) (expected \"port\")"
        case .unsupportedVersion(let v): "unsupported wire version \(v) (this side speaks \(WireFormat.version))"
        case .unknownFlags(let f): "unknown header flags 0x\(String(f, radix: 16))"
        case .reservedBytesSet(let i): "component \(i): reserved bytes are not zero"
        case .unknownComponentKind(let i, let k): "component \(i): unknown kind \(k)"
        case .invalidComponentLength(let i, let k, let l): "component \(i): invalid length \(l) for a \(k) component"
        case .descriptorCountMismatch(let e, let r): "record carried \(r) descriptors, header calls for \(e)"
        case .recordTooLarge(let s, let l): "record of \(s) bytes exceeds the limit of \(l)"
        case .tooManyComponents(let c, let l): "\(c) components exceed the limit of \(l)"
        case .tooManyDescriptors(let c, let l): "\(c) descriptors exceed the limit of \(l)"
        case .largeDataTooLarge(let t, let l): "large components of \(t) bytes exceed the limit of \(l)"
        case .largeComponentTooLarge(let i, let n, let l): "component \(i): large component of \(n) bytes exceeds the limit of \(l)"
        case .bufferTooSmall(let n, let c): "buffer too small: \(n) needed, \(c) available"
        case .componentCountMismatch(let d, let w): "\(w) components written, \(d) declared"
        }
    }
}
