// ConfigSyntaxTests: the pieces of portd.conf's syntax on their own: the
// INI document (sections, comments, continuations, line numbers, errors),
// word splitting with quotes, and name patterns, which are checked against
// glibc's fnmatch(3) so that "fnmatch-style" is a fact, not a claim.

import Glibc
import Testing

@testable import PortDaemon

@Suite struct IniDocumentTests {
    @Test func sectionsAssignmentsAndLineNumbers() throws {
        let text = """
            # a comment
            ; another
            [Limits]
            NamesPerClient = 12
            MaxClients=

            [Port]
            Name=org.example.a
            [Port]
              Exec = /bin/true   a\\
               b
            X-Ignored=yes
            """
        let document = try IniDocument(parsing: text, file: "t.conf")
        #expect(document.sections.map(\.name) == ["Limits", "Port", "Port"])
        #expect(document.sections.map(\.line) == [3, 7, 9])
        #expect(
            document.sections[0].assignments == [
                .init(key: "NamesPerClient", value: "12", line: 4), .init(key: "MaxClients", value: "", line: 5),
            ])
        #expect(
            document.sections[2].assignments == [
                .init(key: "Exec", value: "/bin/true   a b", line: 10), .init(key: "X-Ignored", value: "yes", line: 12),
            ])
    }

    @Test func continuationSkipsCommentLinesAndKeepsTheFirstLineNumber() throws {
        let text = "[Policy]\nAllowLookUp=* \\\n# inside\n  user:0\nDefaultRegister=deny\n"
        let document = try IniDocument(parsing: text, file: "t.conf")
        #expect(
            document.sections[0].assignments == [
                .init(key: "AllowLookUp", value: "*  user:0", line: 2), .init(key: "DefaultRegister", value: "deny", line: 5),
            ])
    }

    @Test func carriageReturnsAndByteOrderMarkAreIgnored() throws {
        let document = try IniDocument(parsing: "\u{FEFF}[Limits]\r\nMaxClients=5\r\n", file: "t.conf")
        #expect(document.sections == [.init(name: "Limits", line: 1, assignments: [.init(key: "MaxClients", value: "5", line: 2)])])
    }

    @Test func valueKeepsEqualsSigns() throws {
        let document = try IniDocument(parsing: "[Port]\nExec=/bin/env A=B\n", file: "t.conf")
        #expect(document.sections[0].assignments[0].value == "/bin/env A=B")
    }

    @Test(arguments: [
        ("MaxClients=1\n", 1, "'MaxClients=' comes before any [Section]"),
        ("[Limits]\njust words\n", 2, "expected 'Key=Value' or '[Section]', not 'just words'"),
        ("[Limits\n", 1, "a section header is '[Name]', not '[Limits'"),
        ("[]\n", 1, "a section header is '[Name]', not '[]'"),
        ("[Limits]\n\n\n=5\n", 4, "'' is not a key (letters, digits and '-')"),
        ("[Limits]\nMax Clients=5\n", 2, "'Max Clients' is not a key (letters, digits and '-')"),
        ("[Limits]\n1Max=5\n", 2, "'1Max' is not a key (letters, digits and '-')"),
    ])
    func errorsNameTheLine(text: String, line: Int, message: String) {
        #expect(throws: ConfigurationError(file: "x.conf", line: line, message)) {
            try IniDocument(parsing: text, file: "x.conf")
        }
    }

    @Test func errorDescriptionReadsLikeACompilerMessage() {
        #expect("\(ConfigurationError(file: "portd.conf", line: 12, "unknown key 'Foo' in [Limits]"))"
            == "portd.conf:12: unknown key 'Foo' in [Limits]")
        #expect("\(ConfigurationError(file: "/etc/portd/portd.conf", line: nil, "not UTF-8 text"))"
            == "/etc/portd/portd.conf: not UTF-8 text")
    }
}

@Suite struct QuotedWordsTests {
    @Test(arguments: [
        ("", []),
        ("   ", []),
        ("a b\tc", ["a", "b", "c"]),
        ("  a   b  ", ["a", "b"]),
        ("\"a b\" c", ["a b", "c"]),
        ("'a \"b' c", ["a \"b", "c"]),
        ("a\"b c\"d", ["ab cd"]),
        ("\"\" x", ["", "x"]),
        ("a\\ b", ["a b"]),
        ("\"a\\\"b\\\\\"", ["a\"b\\"]),
        ("'a\\b'", ["a\\b"]),
    ] as [(String, [String])])
    func splits(value: String, words: [String]) throws {
        #expect(try QuotedWords.split(value) == words)
    }

    @Test(arguments: ["\"abc", "'abc", "abc\\", "\"abc\\"])
    func rejectsUnterminated(value: String) {
        #expect(throws: InvalidValue.self) { try QuotedWords.split(value) }
    }
}

@Suite struct NamePatternTests {
    @Test(arguments: [
        ("*", "org.example.a", true),
        ("org.example.*", "org.example.a", true),
        ("org.example.*", "org.example.", true),
        ("org.example.*", "org.example", false),
        ("org.*.a", "org.x.y.a", true),
        ("org.?", "org.a", true),
        ("org.?", "org.ab", false),
        ("org.[abc]", "org.b", true),
        ("org.[abc]", "org.d", false),
        ("org.[!abc]", "org.d", true),
        ("org.[^abc]", "org.a", false),
        ("[a-c]x", "bx", true),
        ("[a-c]x", "dx", false),
        ("[-a]x", "-x", true),
        ("[a-]x", "-x", true),
        ("*a*b*c*", "xxaxxbxxcxx", true),
        ("*a*b*c*", "xxaxxcxxbxx", false),
        ("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("exact", "exact", true),
        ("exact", "exactly", false),
    ])
    func matches(pattern: String, name: String, expected: Bool) throws {
        #expect(try NamePattern(pattern).matches(name) == expected)
    }

    /// The same answers as glibc's fnmatch(3) without flags, over every pair.
    @Test func agreesWithFnmatch() throws {
        let patterns = [
            "*", "a*", "*a", "a*b", "a?c", "[ab]*", "[!ab]*", "[a-z]?[0-9]", "*.*", "org.*.a", "*-*_*", "??",
            "a**b", "[a-c-]x", "*[!.]", "a\\.b",
        ]
        let names = [
            "a", "b", "ab", "abc", "acb", "a.b", "axb", "z9", "q.r", "org.x.a", "org.x.y.a", "x-y_z", "-x", "cx",
            "a.", "aab", "b.a", "a1", "z1z",
        ]
        for pattern in patterns {
            let compiled = try NamePattern(pattern)
            for name in names {
                let expected = fnmatch(pattern, name, 0) == 0
                #expect(compiled.matches(name) == expected, "pattern \(pattern) name \(name)")
            }
        }
    }

    @Test(arguments: ["", "org/x", "a b", "[abc", "[[:alpha:]]", "a\\", "[z-a]", "a\\*", "ä"])
    func rejectsWhatCanNeverMatchAName(pattern: String) {
        #expect(throws: InvalidValue.self) { try NamePattern(pattern) }
    }
}
