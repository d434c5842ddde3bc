// PortName: a validated port name, the key of the name registry.
//
// Invariants (checked once, in `init(validating:)`; a PortName that exists
// is valid): 1 to 200 bytes, each of [A-Za-z0-9._-]; the first is not a dot
// (so neither "." nor ".." nor a hidden-file name). No "/" can occur, and
// portd never uses a name as a path anyway (PortDirectory numbers its
// socket files), so no name can reach outside the port directory.

import PortCore

struct PortName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The longest name, in bytes.
    static let maximumLength = 200

    /// Why a string is not a port name (text for the "message=" component).
    enum Invalid: Error, Equatable, CustomStringConvertible {
        case empty
        case tooLong(bytes: Int)
        case leadingDot
        case forbiddenByte(UInt8, at: Int)

        var description: String {
            switch self {
            case .empty: "a name is 1 to \(PortName.maximumLength) bytes; this one is empty"
            case .tooLong(let n): "a name is 1 to \(PortName.maximumLength) bytes; this one has \(n)"
            case .leadingDot: "a name must not start with a dot"
            case .forbiddenByte(let b, let i):
                "byte \(i) (0x\(String(b, radix: 16))) is not one of A-Z a-z 0-9 . _ -"
            }
        }
    }

    let value: String

    init(validating text: String) throws(Invalid) {
        let bytes = text.utf8
        if bytes.isEmpty { throw .empty }
        if bytes.count > Self.maximumLength { throw .tooLong(bytes: bytes.count) }
        if bytes.first == UInt8(ascii: ".") { throw .leadingDot }
        for (i, b) in bytes.enumerated() where !Self.isAllowed(b) {
            throw .forbiddenByte(b, at: i)
        }
        value = text
    }

    private static func isAllowed(_ b: UInt8) -> Bool { NameServerProtocol.isNameByte(b) }

    var description: String { value }

    static func < (a: PortName, b: PortName) -> Bool { a.value < b.value }
}
