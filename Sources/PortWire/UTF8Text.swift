// UTF8Text: received bytes as text, when they are UTF-8. The one place the
// layers above turn a data component into a String on a hot path (each
// field of every name-server request and reply is one).
//
// Why not String(validating:as:) alone: the standard library validates
// through a function generic over the encoding that callers outside it do
// not specialize, which costs more than the field's bytes. Text that is
// all ASCII (every field of the name server's vocabulary but non-ASCII
// values) is valid UTF-8 as it stands, so it is checked byte by byte here and
// made with String(decoding:as:); anything else still goes through
// String(validating:as:), so the answer is always that function's.

package enum UTF8Text {
    /// `bytes` as a String when they are valid UTF-8, nil otherwise: what
    /// `String(validating: bytes, as: UTF8.self)` returns.
    package static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        for b in bytes where b >= 0x80 {
            return String(validating: bytes, as: UTF8.self)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `string(_:)` of an array's bytes.
    package static func string(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { string($0) }
    }

    /// `string(_:)` of raw bytes (a mapping, a receive buffer).
    package static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        string(bytes.assumingMemoryBound(to: UInt8.self))
    }
}
