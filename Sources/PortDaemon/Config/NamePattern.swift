// NamePattern: a shell-style glob over port names, as fnmatch(3) without
// flags reads it: "*" matches any run of characters (dots included, since
// port names are flat), "?" one character, "[a-z0-9]" one character of a
// set, "[!x]" or "[^x]" one character not in it ("-" first or last in a
// set is literal), and "\c" the character c itself.
//
// Invariants: a pattern is checked when it is made, so matching never
// fails: it is not empty, its sets are closed, and every literal character
// is one a port name may contain ([A-Za-z0-9._-]); anything else (a "/", a
// blank, a POSIX class such as [[:alpha:]]) is an error at load time rather
// than a pattern that silently never matches. Matching is on bytes (names
// are ASCII) by the usual backtracking over the last "*", linear in
// practice and never worse than the product of the two lengths. Pure.

import PortCore

package struct NamePattern: Equatable, Hashable, Sendable, CustomStringConvertible {
    private enum Token: Equatable, Hashable, Sendable {
        case byte(UInt8)
        case anyByte
        case anyRun
        case set(negated: Bool, ranges: [ClosedRange<UInt8>])

        func matches(_ b: UInt8) -> Bool {
            switch self {
            case .byte(let x): x == b
            case .anyByte: true
            case .anyRun: true
            case .set(let negated, let ranges): ranges.contains { $0.contains(b) } != negated
            }
        }
    }

    /// The pattern as written.
    package let text: String
    private let tokens: [Token]

    /// The pattern that matches every name.
    static let everything = try! NamePattern("*")

    package init(_ text: String) throws(InvalidValue) {
        self.text = text
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw InvalidValue("an empty name pattern") }
        var tokens: [Token] = []
        var i = 0

        func literal(_ b: UInt8) throws(InvalidValue) -> UInt8 {
            guard Self.isNameByte(b) else {
                throw InvalidValue("'\(text)' has '\(Character(Unicode.Scalar(b)))', which no port name contains "
                        + "(names are letters, digits, '.', '_' and '-')")
            }
            return b
        }

        while i < bytes.count {
            let b = bytes[i]
            i += 1
            switch b {
            case UInt8(ascii: "*"):
                if tokens.last != .anyRun { tokens.append(.anyRun) }  // "**" is "*"
            case UInt8(ascii: "?"):
                tokens.append(.anyByte)
            case UInt8(ascii: "\\"):
                guard i < bytes.count else { throw InvalidValue("'\(text)' ends in a backslash") }
                tokens.append(.byte(try literal(bytes[i])))
                i += 1
            case UInt8(ascii: "["):
                var negated = false
                if i < bytes.count, bytes[i] == UInt8(ascii: "!") || bytes[i] == UInt8(ascii: "^") {
                    negated = true
                    i += 1
                }
                var ranges: [ClosedRange<UInt8>] = []
                var first = true
                var closed = false
                while i < bytes.count {
                    var c = bytes[i]
                    i += 1
                    if c == UInt8(ascii: "]") && !first {
                        closed = true
                        break
                    }
                    first = false
                    if c == UInt8(ascii: "\\") {
                        guard i < bytes.count else { break }
                        c = bytes[i]
                        i += 1
                    }
                    let low = try literal(c)
                    // "a-z": a range, unless the "-" is the set's last character.
                    if i + 1 < bytes.count, bytes[i] == UInt8(ascii: "-"), bytes[i + 1] != UInt8(ascii: "]") {
                        var high = bytes[i + 1]
                        i += 2
                        if high == UInt8(ascii: "\\") {
                            guard i < bytes.count else { break }
                            high = bytes[i]
                            i += 1
                        }
                        _ = try literal(high)
                        guard low <= high else {
                            throw InvalidValue("'\(text)' has a backward range in a set")
                        }
                        ranges.append(low...high)
                    } else {
                        ranges.append(low...low)
                    }
                }
                guard closed else { throw InvalidValue("'\(text)' has a '[' without its ']'") }
                tokens.append(.set(negated: negated, ranges: ranges))
            default:
                tokens.append(.byte(try literal(b)))
            }
        }
        self.tokens = tokens
    }

    /// Whether `name` matches the whole pattern.
    package func matches(_ name: String) -> Bool {
        // The name's bytes are read in place: a copy of them per call
        // showed in the profile of a LIST (the policy asked per name).
        if let matched = name.utf8.withContiguousStorageIfAvailable({ matches(bytes: $0) }) { return matched }
        return Array(name.utf8).withUnsafeBufferPointer { matches(bytes: $0) }
    }

    private func matches(bytes s: UnsafeBufferPointer<UInt8>) -> Bool {
        var p = 0  // next token
        var n = 0  // next byte of the name
        var star: Int? = nil  // token index just after the last "*" seen
        var starName = 0  // where that "*" began to match
        while n < s.count {
            if p < tokens.count, tokens[p] == .anyRun {
                star = p + 1
                starName = n
                p += 1
            } else if p < tokens.count, tokens[p].matches(s[n]) {
                p += 1
                n += 1
            } else if let resume = star {
                // Let the last "*" take one more byte and try again from there.
                starName += 1
                n = starName
                p = resume
            } else {
                return false
            }
        }
        while p < tokens.count, tokens[p] == .anyRun { p += 1 }
        return p == tokens.count
    }

    package var description: String { text }

    private static func isNameByte(_ b: UInt8) -> Bool { NameServerProtocol.isNameByte(b) }
}
