// NameServerBytes: the vocabulary read from a component's UTF-8 bytes in
// place, for the paths that run once per request (the serial of every
// reply the client reads, a LOOKUP's answer, an owner): no String, no
// Substring, no array in between; and the one writer of a number's
// digits, for the requests the client writes and the replies portd writes
// as bytes.
//
// Invariants: each function answers exactly what its String counterpart
// answers for the same bytes taken as text: `integer` what
// `T(String)` (FixedWidthInteger's parse: an optional "+" or "-", then
// one or more ASCII digits, nil on overflow; "-0" is 0 even unsigned),
// `field` what `NameServerField(text:)` splits and refuses, `equals` what
// `==` on the key says. NameServerBytesTests compares each with its
// counterpart on seeded random inputs and edge cases.

extension NameServerProtocol {
    /// `T(text)` for the text these bytes spell.
    @inlinable
    package static func integer<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, as: T.Type = T.self) -> T? {
        let n = bytes.count
        guard n > 0 else { return nil }
        var i = 0
        var negative = false
        let first = bytes[0]
        if first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            guard n > 1 else { return nil }
            negative = first == UInt8(ascii: "-")
            i = 1
        }
        var value: T = 0
        while i < n {
            let digit = bytes[i] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) =
                negative ? times10.subtractingReportingOverflow(T(digit)) : times10.addingReportingOverflow(T(digit))
            guard !o1, !o2 else { return nil }
            value = next
            i += 1
        }
        return value
    }

    /// The key and the value of a "KEY=VALUE" component, split at its
    /// first "=" (`NameServerField(text:)`); nil when it is not a field
    /// (no "=", an empty key, a byte in the key outside a-z, 0-9, "_").
    /// The caller makes sure the bytes are UTF-8 (this looks at ASCII only).
    @inlinable
    package static func field(_ bytes: UnsafeRawBufferPointer) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        var eq = 0
        let n = bytes.count
        while eq < n {
            let b = bytes[eq]
            if b == UInt8(ascii: "=") { break }
            guard (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
                || b == UInt8(ascii: "_")
            else { return nil }
            eq += 1
        }
        guard eq > 0, eq < n else { return nil }
        return (UnsafeRawBufferPointer(rebasing: bytes[0..<eq]), UnsafeRawBufferPointer(rebasing: bytes[(eq + 1)...]))
    }

    /// Whether `bytes` are `key`'s UTF-8.
    @inlinable
    package static func equals(_ bytes: UnsafeRawBufferPointer, _ key: String) -> Bool {
        let utf8 = key.utf8
        guard bytes.count == utf8.count else { return false }
        // The key's bytes in place (a native or small string is contiguous);
        // stepping its UTF-8 view is several times slower.
        let same = utf8.withContiguousStorageIfAvailable { (k) -> Bool in
            for i in 0..<k.count where bytes[i] != k[i] { return false }
            return true
        }
        if let same { return same }
        var i = 0
        for b in utf8 {
            if bytes[i] != b { return false }
            i += 1
        }
        return true
    }

    /// Whether every byte is ASCII (so the bytes are UTF-8 text).
    @inlinable
    package static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for b in bytes where b >= 0x80 { return false }
        return true
    }
}

extension NameServerProtocol {
    /// Writes `n` in decimal, as `"\(n)"` spells it, into `buffer` from
    /// index `start` (room for 20 digits is enough); returns how many
    /// bytes it wrote.
    @inlinable
    package static func writeDecimal(_ n: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        var digits = 1
        var rest = n
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        rest = n
        for i in stride(from: start + digits - 1, through: start, by: -1) {
            buffer[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        return digits
    }

    /// Appends `n` in decimal, as `"\(n)"` spells it (`writeDecimal`).
    @inlinable
    package static func appendDecimal(_ n: UInt64, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            let count = writeDecimal(n, into: buffer, at: 0)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<count]))
        }
    }
}

extension NameOwner.Process {
    /// Reads "PID:UID:CLIENT" from its UTF-8 bytes: the same answer as
    /// `init?(encoded:)` for the text these bytes spell.
    package init?(encodedBytes bytes: UnsafeRawBufferPointer) {
        // Exactly two ":" (three parts, none omitted); any byte other than
        // a digit or a sign in a part fails its number, as it fails
        // FixedWidthInteger's parse.
        var first = -1
        var second = -1
        for i in 0..<bytes.count where bytes[i] == UInt8(ascii: ":") {
            if first < 0 {
                first = i
            } else if second < 0 {
                second = i
            } else {
                return nil
            }
        }
        guard second >= 0,
            let pid = NameServerProtocol.integer(UnsafeRawBufferPointer(rebasing: bytes[0..<first]), as: Int32.self),
            let uid = NameServerProtocol.integer(UnsafeRawBufferPointer(rebasing: bytes[(first + 1)..<second]), as: UInt32.self),
            let client = NameServerProtocol.integer(UnsafeRawBufferPointer(rebasing: bytes[(second + 1)...]), as: UInt64.self)
        else { return nil }
        self.init(pid: pid, uid: uid, client: client)
    }
}
