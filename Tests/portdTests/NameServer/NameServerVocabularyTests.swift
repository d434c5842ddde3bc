// NameServerVocabularyTests: the protocol is spelled once, in
// PortNameProtocol (NameServerProtocol), and portd builds and parses its
// messages through it. This check reads every Swift file of portd and
// fails on a string literal that spells a word of the vocabulary itself:
// an error word, a REGISTER option or result word, an owner event, a
// feature, a protocol version, or a field key (bare, or as "key=…"). Log text is
// free: only a literal that *is* such a word, or starts with "key=", counts,
// and a literal followed by ":" outside a `case` pattern is a dictionary key
// (log metadata), not a protocol word. Comments are skipped.

import Foundation
import PortCore
import PortTestSupport
import Testing

@Suite struct NameServerVocabularyTests {
    static let portdSources = SourceTree.path("Sources/PortDaemon")

    /// The words no portd source may spell as a literal.
    static let words: Set<String> = {
        var all = Set(NameServerProtocol.ErrorWord.allCases.map(\.rawValue))
        all.formUnion(NameServerProtocol.RegisterOption.allCases.map(\.rawValue))
        all.formUnion(NameServerProtocol.RegisterResult.allCases.map(\.rawValue))
        all.formUnion(NameServerProtocol.OwnerEvent.allCases.map(\.rawValue))
        all.formUnion(NameServerProtocol.Feature.allCases.map(\.rawValue))
        all.formUnion(NameServerProtocol.Field.all)
        all.formUnion(NameServerProtocol.versions)
        return all
    }()

    @Test func portdSpellsNoWordOfTheProtocol() throws {
        let files = try Self.swiftFiles(under: Self.portdSources)
        #expect(files.count > 20, "found portd's sources")
        var found: [String] = []
        for file in files {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            for literal in StringLiterals.scan(text) where Self.spellsAWord(literal) {
                found.append("\(file.dropFirst(Self.portdSources.count + 1)):\(literal.line): \"\(literal.leadingText)\"")
            }
        }
        #expect(found.isEmpty, "words of NameServerProtocol spelled in portd:\n\(found.joined(separator: "\n"))")
    }

    @Test func theCheckFindsWhatItLooksFor() {
        let sample = """
            // "ok" in a comment is fine
            let a = "denied"
            let b = "pid=\\(pid)"
            let c = ["uid": "\\(uid)"]
            who["name"] = name
            logger.info("registered \\(name) for \\(who)")
            let d = "released"  // "denied"
            let e = "a \\("not-owner") b"
            switch word { case "do-not-queue": break }
            let f = \"""
                help text may say more
                \"""
            """
        let flagged = StringLiterals.scan(sample).filter(Self.spellsAWord).map(\.leadingText)
        #expect(flagged == ["denied", "pid=", "released", "not-owner", "do-not-queue"])
    }

    static func spellsAWord(_ literal: StringLiterals.Literal) -> Bool {
        if literal.isDictionaryKey { return false }
        let text = literal.leadingText
        if literal.isWhole && words.contains(text) { return true }
        guard let eq = text.firstIndex(of: "=") else { return false }
        return NameServerProtocol.Field.all.contains(String(text[..<eq]))
    }

    static func swiftFiles(under directory: String) throws -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted().map { "\(directory)/\($0)" }
    }
}

/// A small scanner of Swift string literals: enough for portd's sources
/// (line comments, block comments, escapes, interpolations with nested
/// literals, multi-line literals), not a Swift parser.
enum StringLiterals {
    struct Literal {
        /// The text before the first interpolation (all of it when there is none).
        var leadingText: String
        /// No interpolation: the literal is exactly `leadingText`.
        var isWhole: Bool
        /// Followed by ":" and not after `case` on its line, or a subscript
        /// `["…"]` (a dictionary key, as in log metadata).
        var isDictionaryKey: Bool
        var line: Int
    }

    static func scan(_ source: String) -> [Literal] {
        let c = Array(source.unicodeScalars)
        var literals: [Literal] = []
        var i = 0
        var line = 1

        func at(_ k: Int, _ s: String) -> Bool {
            let u = Array(s.unicodeScalars)
            return k + u.count <= c.count && Array(c[k..<k + u.count]) == u
        }

        // Scans code from `i` until an unmatched ")" (inside an
        // interpolation, `depth` 1) or the end.
        func code(interpolation: Bool) {
            var depth = 0
            while i < c.count {
                if c[i] == "\n" { line += 1 }
                if at(i, "//") {
                    while i < c.count && c[i] != "\n" { i += 1 }
                    continue
                }
                if at(i, "/*") {
                    while i < c.count && !at(i, "*/") {
                        if c[i] == "\n" { line += 1 }
                        i += 1
                    }
                    i += 2
                    continue
                }
                if c[i] == "\"" {
                    string()
                    continue
                }
                if c[i] == "(" { depth += 1 }
                if c[i] == ")" {
                    if interpolation && depth == 0 {
                        i += 1
                        return
                    }
                    depth -= 1
                }
                i += 1
            }
        }

        // Scans a literal starting at `i` (its opening quote).
        func string() {
            let startLine = line
            let start = i
            let multiline = at(i, "\"\"\"")
            i += multiline ? 3 : 1
            var leading = ""
            var whole = true
            while i < c.count {
                if multiline ? at(i, "\"\"\"") : c[i] == "\"" {
                    i += multiline ? 3 : 1
                    break
                }
                if c[i] == "\n" { line += 1 }
                if c[i] == "\\" {
                    if i + 1 < c.count && c[i + 1] == "(" {
                        whole = false
                        i += 2
                        code(interpolation: true)
                        continue
                    }
                    if whole { leading.unicodeScalars.append(c[min(i + 1, c.count - 1)]) }
                    i += 2
                    continue
                }
                if whole { leading.unicodeScalars.append(c[i]) }
                i += 1
            }
            var k = i
            while k < c.count && (c[k] == " " || c[k] == "\t") { k += 1 }
            var lineStart = start
            while lineStart > 0 && c[lineStart - 1] != "\n" { lineStart -= 1 }
            let linePrefix = String(String.UnicodeScalarView(c[lineStart..<start]))
            let inCase = linePrefix.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "{" }).contains("case")
            let subscriptKey = k < c.count && c[k] == "]" && start > 0 && c[start - 1] == "["
            let key = (k < c.count && c[k] == ":" && !inCase) || subscriptKey
            literals.append(Literal(leadingText: leading, isWhole: whole, isDictionaryKey: key, line: startLine))
        }

        code(interpolation: false)
        return literals.sorted { $0.line < $1.line }
    }
}
