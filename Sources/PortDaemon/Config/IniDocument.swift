// IniDocument: the syntax of portd.conf, the "INI" style of systemd unit
// files (systemd.syntax(7)), parsed into sections of assignments and
// nothing more: what the keys mean is PortdConfiguration's business.
//
// Rules, all of them:
//   - a line is split at "\n"; a "\r" before it and a UTF-8 byte-order mark
//     at the start of the file are ignored;
//   - blank lines and lines whose first non-blank character is "#" or ";"
//     are comments;
//   - "[Name]" starts a section (Name is not empty and has no "[" or "]");
//     sections may repeat;
//   - "Key=Value" is an assignment: blanks around the key and around the
//     value are dropped; a key is letters, digits and "-", starting with a
//     letter; the value may be empty (an empty assignment, which resets a
//     list);
//   - a line ending in "\" continues on the next one: the backslash becomes
//     a space; comment lines inside a continuation are skipped, as systemd
//     does; the assignment has the line number of its first line;
//   - an assignment before the first section, or any other line, is an
//     error naming the line.
// Pure: text in, document or ConfigurationError out. `parse` reads on past
// an error, for `portd --check-config`, which reports every error of a
// file: a bad line is left out, and so are the assignments after a bad
// section header, up to the next good one (they belong to no section).

package struct IniDocument: Equatable, Sendable {
    package struct Assignment: Equatable, Sendable {
        package let key: String
        package let value: String
        /// 1-based number of the line the assignment starts on.
        package let line: Int
    }

    package struct Section: Equatable, Sendable {
        package let name: String
        /// 1-based number of the header line.
        package let line: Int
        package var assignments: [Assignment]
    }

    /// The file the text came from, for error messages.
    package let file: String
    package var sections: [Section]

    /// Parses `text`; `file` only names it in errors. Throws the first error.
    package init(parsing text: String, file: String) throws(ConfigurationError) {
        let (document, errors) = Self.parse(text, file: file)
        if let first = errors.first { throw first }
        self = document
    }

    private init(file: String) {
        self.file = file
        sections = []
    }

    /// Parses `text` to its end: the document of every good line, and the
    /// error of every bad one, in order.
    package static func parse(_ text: String, file: String) -> (document: IniDocument, errors: [ConfigurationError]) {
        var document = IniDocument(file: file)
        var errors: [ConfigurationError] = []
        // After a bad section header: its assignments are nobody's.
        var inBadSection = false
        // "\r\n" is one Character in Swift, so split on both.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = first.dropFirst() }

        var index = 0
        while index < lines.count {
            let number = index + 1
            var line = Self.trimmed(lines[index])
            index += 1
            if line.isEmpty || Self.isComment(line) { continue }

            // Continuations: "\" at the end joins the next non-comment line.
            while line.hasSuffix("\\") {
                line = String(line.dropLast()) + " "
                while index < lines.count, Self.isComment(Self.trimmed(lines[index])) { index += 1 }
                guard index < lines.count else { break }
                line += Self.trimmed(lines[index])
                index += 1
            }
            line = Self.trimmed(line[...])

            if line.hasPrefix("[") {
                let name = String(line.dropFirst().dropLast())
                guard line.hasSuffix("]"), line.count > 2, !name.contains("["), !name.contains("]") else {
                    errors.append(ConfigurationError(file: file, line: number, "a section header is '[Name]', not '\(line)'"))
                    inBadSection = true
                    continue
                }
                document.sections.append(Section(name: name, line: number, assignments: []))
                inBadSection = false
                continue
            }

            guard let equals = line.firstIndex(of: "=") else {
                errors.append(ConfigurationError(file: file, line: number, "expected 'Key=Value' or '[Section]', not '\(line)'"))
                continue
            }
            let key = Self.trimmed(line[..<equals])
            let value = Self.trimmed(line[line.index(after: equals)...])
            guard Self.isValidKey(key) else {
                errors.append(ConfigurationError(file: file, line: number, "'\(key)' is not a key (letters, digits and '-')"))
                continue
            }
            if inBadSection { continue }
            guard !document.sections.isEmpty else {
                errors.append(ConfigurationError(file: file, line: number, "'\(key)=' comes before any [Section]"))
                continue
            }
            document.sections[document.sections.count - 1].assignments.append(Assignment(key: key, value: value, line: number))
        }
        return (document, errors)
    }

    private static func trimmed(_ s: Substring) -> String {
        String(s.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }

    private static func isComment(_ line: String) -> Bool {
        line.hasPrefix("#") || line.hasPrefix(";")
    }

    private static func isValidKey(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, ("A"..."Z").contains(first) || ("a"..."z").contains(first) else {
            return false
        }
        return key.unicodeScalars.allSatisfy { s in
            ("A"..."Z").contains(s) || ("a"..."z").contains(s) || ("0"..."9").contains(s) || s == "-"
        }
    }
}
