// Hex: byte arrays written and read as hex, for golden-byte tests and for
// the Python interop test's stdout.

package enum Hex {
    /// Parses hex digits, ignoring whitespace: "70 6f 72 74" -> [0x70, 0x6f, 0x72, 0x74].
    package static func bytes(_ text: String) -> [UInt8] {
        let digits = text.filter { !$0.isWhitespace }
        precondition(digits.count % 2 == 0, "odd number of hex digits")
        var out: [UInt8] = []
        var i = digits.startIndex
        while i < digits.endIndex {
            let j = digits.index(i, offsetBy: 2)
            out.append(UInt8(digits[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    package static func string(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
