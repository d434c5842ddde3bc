// PortName: a validated port name, the key of the name registry.
//
// Invariants (checked once, in `init(validating:)`, by the protocol's one
// naming rule; a PortName that exists is valid): 1 to 200 bytes, each of
// [A-Za-z0-9._-]; the first is not a dot (so neither "." nor ".." nor a
// hidden-file name). No "/" can occur, and
// portd never uses a name as a path anyway (PortDirectory numbers its
// socket files), so no name can reach outside the port directory.

import PortCore

struct PortName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The longest name, in bytes.
    static let maximumLength = NameServerProtocol.maximumNameLength

    /// Why a string is not a port name (its description is the text of
    /// the "invalid-name" reply's "message=").
    typealias Invalid = NameServerProtocol.NameProblem

    let value: String

    /// Checks `text` against the protocol's naming rule (NameServerProtocol.nameProblem(of:)).
    init(validating text: String) throws(Invalid) {
        if let problem = NameServerProtocol.nameProblem(of: text) { throw problem }
        value = text
    }

    var description: String { value }

    static func < (a: PortName, b: PortName) -> Bool { a.value < b.value }
}
