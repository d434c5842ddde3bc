// TextEscape: bytes made safe to print for people. Text stays text; every
// byte that is not part of printable UTF-8 becomes an escape, so output
// never carries a raw control byte (no terminal escape sequences, no
// carriage returns rewriting a line, no NUL), and different bytes never
// print alike:
//   \\ and \" for the backslash and the quote; \n \r \t \0 for those;
//   \xNN for any other byte below 0x20, for 0x7f, and for every byte that
//   is not valid UTF-8; \u{NNNN} for the C1 controls (U+0080 to U+009F) and
//   the Unicode line separators and bidirectional controls, which
//   terminals also act on.
// Used for what portctl prints, and (`controls`) for the text of portd's
// log lines, much of which comes from clients.

package enum TextEscape {
    /// `bytes` as a printable string, without quotes around it.
    package static func escape(_ bytes: UnsafeRawBufferPointer) -> String {
        var out = ""
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                switch b {
                case UInt8(ascii: "\\"): out += "\\\\"
                case UInt8(ascii: "\""): out += "\\\""
                case 0x0a: out += "\\n"
                case 0x0d: out += "\\r"
                case 0x09: out += "\\t"
                case 0x00: out += "\\0"
                case 0x20..<0x7f: out.unicodeScalars.append(Unicode.Scalar(b))
                default: out += hex(b)
                }
                i += 1
                continue
            }
            if let (scalar, length) = decodeScalar(bytes, at: i) {
                if isControl(scalar) {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
                i += length
            } else {
                out += hex(b)
                i += 1
            }
        }
        return out
    }

    package static func escape(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { escape($0) } }

    /// `bytes` escaped and between double quotes.
    package static func quoted(_ bytes: UnsafeRawBufferPointer) -> String { "\"" + escape(bytes) + "\"" }

    /// A string from somewhere else (a name, a message from portd), escaped the same way.
    package static func escape(_ s: String) -> String { escape(Array(s.utf8)) }

    /// `text` with only its control characters escaped, as `escape` writes
    /// them (a newline is `\n`, ESC `\x1b`, U+202E `\u{202e}`); quotes,
    /// backslashes and all printable text stay as they are. For log lines:
    /// one event stays one line, and nothing a client wrote acts on the
    /// terminal or the log viewer that shows it.
    package static func controls(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f || isControl($0) }) else {
            return text
        }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0a: out += "\\n"
            case 0x0d: out += "\\r"
            case 0x09: out += "\\t"
            case 0x00: out += "\\0"
            case 0x01..<0x20, 0x7f: out += hex(UInt8(scalar.value))
            default:
                if isControl(scalar) {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    private static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return "\\x" + String(decoding: [digits[Int(b >> 4)], digits[Int(b & 15)]], as: UTF8.self)
    }

    private static func isControl(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x80...0x9f, 0x2028, 0x2029, 0x200e, 0x200f, 0x202a...0x202e, 0x2066...0x2069, 0x061c, 0xfeff: true
        default: false
        }
    }

    /// One well-formed UTF-8 sequence (shortest form, no surrogates, at most U+10FFFF) at `i`.
    private static func decodeScalar(_ bytes: UnsafeRawBufferPointer, at i: Int) -> (Unicode.Scalar, Int)? {
        let b0 = bytes[i]
        let length: Int
        var value: UInt32
        switch b0 {
        case 0xc2...0xdf: length = 2; value = UInt32(b0 & 0x1f)
        case 0xe0...0xef: length = 3; value = UInt32(b0 & 0x0f)
        case 0xf0...0xf4: length = 4; value = UInt32(b0 & 0x07)
        default: return nil
        }
        guard i + length <= bytes.count else { return nil }
        for k in 1..<length {
            let b = bytes[i + k]
            guard b & 0xc0 == 0x80 else { return nil }
            value = value << 6 | UInt32(b & 0x3f)
        }
        let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard value >= minimum, let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }
}
