// MessageLineTests: the fast path of send and request (MessageLine) reads
// command lines exactly as swift-argument-parser does, or leaves them to it.
// For every line of a corpus (every option of send and request in every
// spelling, values at the edges, options of other verbs, help, `--`, `-`)
// and of thousands of random lines from a fixed seed: when
// swift-argument-parser refuses the line (or answers it with help, or with
// another verb), MessageLine returns nil; when it accepts it as send or
// request, MessageLine returns nil or the same MessageCall, every field
// equal. And MessageLine does take the lines people type: the examples of
// the README and portctl(1), and most valid random lines.

import Testing

import PortCore
import PortTestSupport
@testable import portctl

@Suite struct MessageLineTests {
    /// What swift-argument-parser makes of `line`: a send or request call,
    /// or nil when it refuses the line or it is anything else.
    static func argumentParser(_ line: [String]) -> MessageCall? {
        switch try? PortctlCommand.parseAsRoot(line) {
        case let send as Send: send.call
        case let request as Request: request.call
        default: nil
        }
    }

    /// The disagreement of the two parsers on `line`, or nil when they agree.
    static func disagreement(_ line: [String]) -> String? {
        let fast = MessageLine.parse(line)
        guard let fast else { return nil }  // "not mine" is always allowed
        guard let expected = argumentParser(line) else {
            return "\(line): swift-argument-parser refuses it, the fast path took it as \(fast)"
        }
        if fast != expected { return "\(line): fast path \(fast), swift-argument-parser \(expected)" }
        return nil
    }

    /// The lines of the README and portctl(1), and the usual spellings of
    /// every option: the fast path takes each of them.
    static let commonLines: [[String]] = [
        ["request", "upper", "--msgid", "1", "--data", "hello"],
        ["request", "upper", "--msgid", "2", "--data", "hello"],
        ["send", "sink", "--msgid", "0x10", "--hex", "00 ff", "-", "--file", "big.bin"],
        ["send", "org.example.db", "--msgid", "1", "--data", "ping"],
        ["send", "--socket", "/tmp/s", "bench.echo", "--msgid", "1", "--data", "0123456789abcdef"],
        ["request", "--socket", "/tmp/s", "bench.echo", "--msgid", "1", "--data", "0123456789abcdef"],
        ["send", "svc", "--msgid", "7", "--wait", "--timeout", "2.5", "--json"],
        ["request", "svc", "--msgid=0x2a", "--data=x", "--raw", "-q", "--system"],
        ["request", "svc", "--msgid", "3", "--json", "--max-bytes", "64", "--user", "--quiet"],
        ["--user", "send", "svc", "--msgid", "1", "--data", "a", "--hex", "0x00ff", "--file=/etc/hostname"],
        ["--socket", "/run/portd/portd.sock", "--json", "request", "svc", "--msgid", "4294901759"],
        ["send", "svc", "--msgid", "0", "--data", "", "--", "-"],
    ]

    @Test func theFastPathTakesTheCommonLines() {
        for line in Self.commonLines {
            let fast = MessageLine.parse(line)
            #expect(fast != nil, "\(line)")
            #expect(fast == Self.argumentParser(line), "\(line)")
        }
    }

    /// The spelling the benchmarks use to force swift-argument-parser's
    /// path (docs/BENCHMARKS.md): valid, and not the fast path's.
    @Test func aRepeatedMsgidIsLeftToArgumentParser() {
        let line = ["send", "--socket", "/tmp/s", "bench.echo", "--msgid", "1", "--msgid", "1", "--data", "x"]
        #expect(MessageLine.parse(line) == nil)
        #expect(Self.argumentParser(line) != nil)
    }

    /// A negative --timeout or --max-bytes: the fast path leaves the line
    /// alone, and swift-argument-parser takes the number as the value
    /// (`.unconditional`) and refuses it with the check both parsers share.
    @Test func negativeNumbersAreLeftToArgumentParserWhichRefusesThem() {
        let lines: [([String], String)] = [
            (["send", "svc", "--msgid", "1", "--timeout", "-1"], ConnectionValues.problem(socket: nil, timeout: "-1")!),
            (["--timeout", "-1", "request", "svc", "--msgid", "1"], ConnectionValues.problem(socket: nil, timeout: "-1")!),
            (["request", "svc", "--msgid", "1", "--max-bytes", "-1"], MessageRendering.problem(maxBytes: -1)!),
        ]
        for (line, problem) in lines {
            #expect(MessageLine.parse(line) == nil, "\(line)")
            #expect(Self.argumentParser(line) == nil, "\(line)")
            do {
                _ = try PortctlCommand.parseAsRoot(line)
                Issue.record("\(line): accepted")
            } catch {
                #expect(PortctlCommand.message(for: error) == problem, "\(line)")
            }
        }
    }

    /// Lines written out: each option in each spelling, values at the
    /// edges, and what the fast path must leave alone.
    static let corpus: [[String]] = {
        var lines: [[String]] = []
        let base = ["svc", "--msgid", "1"]
        for verb in ["send", "request"] {
            // Each option, with a separate and an attached value, at the edges.
            let values: [(String, [String])] = [
                ("--msgid", ["0", "1", "0x10", "0X1f", "0xFFFEFFFF", "0xffff0000", "4294901759", "4294901760",
                             "4294967295", "4294967296", "-1", "+1", " 1", "1 ", "0x", "x", "", "1e3", "01", "0x-1"]),
                ("--data", ["x", "", "-", "a=b", "--json", "-q", "--help", "-h", "--", "send", "é", "--data"]),
                ("--file", ["/etc/hostname", "", "-", "rel/path", "--file"]),
                ("--hex", ["00ff", "0x00", "0X", "abc", "", " 0a ", "zz", "0x 0a", "-1", "0a\n0b"]),
                ("--socket", ["/tmp/s", "", "-", "-x", "send", "a=b"]),
                ("--timeout", ["1", "0", "-1", "0.5", "86400", "86400.0001", "1e-9", "inf", "nan", "1e2", "abc",
                               "0x10", "", " 1", "+3", "-0"]),
                ("--max-bytes", ["0", "-1", "10", "+5", "x", "", "9223372036854775807", "9223372036854775808", "0x10"]),
            ]
            for (option, list) in values {
                for value in list {
                    let head = option == "--msgid" ? ["svc"] : base
                    lines.append([verb] + head + [option, value])
                    lines.append([verb] + head + ["\(option)=\(value)"])
                    lines.append([verb, option, value] + head)
                    lines.append([option, value, verb] + head)
                    lines.append([verb] + head + [option])  // the value missing
                    lines.append([verb] + head + [option, value, option, value])  // twice
                }
            }
            // Flags, alone, twice, with a value, before the verb.
            for flag in ["--wait", "--raw", "--json", "--quiet", "-q", "--user", "--system", "-qq", "-qj"] {
                lines.append([verb] + base + [flag])
                lines.append([verb] + base + [flag, flag])
                lines.append([verb] + base + ["\(flag)=true"])
                lines.append([flag, verb] + base)
                lines.append([flag, verb] + base + [flag])
            }
            lines.append([verb] + base + ["--user", "--system"])
            lines.append(["--user", verb] + base + ["--system"])
            lines.append([verb] + base + ["--raw", "--json"])
            lines.append(["--json", verb] + base + ["--raw"])
            // Positionals, `-` and `--`.
            for tail in [
                ["-"], ["-", "-"], ["extra"], ["--", "-"], ["--", "--"], ["--", "-q"], ["--", "--json"],
                ["--", "-", "-"], ["--"], ["-", "--", "x"],
            ] {
                lines.append([verb] + base + tail)
            }
            lines.append([verb, "--", "svc", "--msgid", "1"])
            lines.append([verb, "--msgid", "1", "--", "svc"])
            lines.append([verb, "--msgid", "1", "--", "svc", "-"])
            lines.append([verb, "-", "--msgid", "1"])
            lines.append([verb, "--msgid", "1"])
            lines.append([verb, "svc"])
            lines.append([verb])
            lines.append(["--", verb] + base)
            // Names.
            for name in ["a.b", "", "a/b", ".hidden", "bad name", String(repeating: "n", count: 201), "send", "help", "-"] {
                lines.append([verb, name, "--msgid", "1"])
            }
            // Help, version, completions, other verbs' options, unknown options.
            for other in [
                "--help", "-h", "-help", "--version", "--generate-completion-script", "--generate-completion-script=bash",
                "--experimental-dump-help", "--count", "--exec", "--name", "--declared", "--no-queue", "-x", "-1",
                "---x", "--msgid-x", "--dat", "--DATA", "help",
            ] {
                lines.append([verb] + base + [other])
                lines.append([verb, other] + base)
                lines.append([other, verb] + base)
            }
        }
        lines += [
            ["help", "send"], ["send", "help"], ["list"], ["lookup", "svc"], ["--version"], ["--help"], ["-h"], [],
            ["send", "request", "--msgid", "1"], ["request", "send", "--msgid", "1"], ["checkin", "svc", "--msgid", "1"],
            ["--generate-completion-script", "bash"], ["send", "svc", "--msgid", "1", "--data=", "x"],
            ["send", "svc", "--msgid=", "1"], ["send", "svc", "--msgid", "1", "--socket=", "/s"],
        ]
        return lines
    }()

    @Test func theCorpusParsesAlikeOrIsLeftToArgumentParser() {
        var taken = 0
        for line in Self.corpus {
            if let problem = Self.disagreement(line) { Issue.record(Comment(rawValue: problem)) }
            if MessageLine.parse(line) != nil { taken += 1 }
        }
        // Not a vacuous comparison: the fast path took a good part of the corpus.
        #expect(taken > Self.corpus.count / 5, "\(taken) of \(Self.corpus.count)")
    }

    /// A random line: mostly the pieces of valid send and request lines in
    /// random order and spelling, with a wrong piece now and then (a value
    /// at an edge, an option of another verb, help, a misplaced `-` or `--`).
    static func randomLine(_ g: inout SplitMix64) -> [String] {
        let valid: [String: [String]] = [
            "--msgid": ["1", "0x10", "0XfF", "4294901759", "0"],
            "--data": ["x", "", "hello world", "a=b", "send", "-"],
            "--file": ["/etc/hostname", "f"],
            "--hex": ["00ff", "", "0x12 34"],
            "--socket": ["/tmp/s", "send", "s"],
            "--timeout": ["1", "0.25", "86400", "1e1"],
            "--max-bytes": ["0", "10", "+7"],
        ]
        let edges: [String: [String]] = [
            "--msgid": ["-1", "x", "", "0xffff0000", "4294967296", "+1"],
            "--data": ["--json", "-q", "--", "-h", "--msgid"],
            "--file": ["", "--wait"],
            "--hex": ["abc", "zz", "-1"],
            "--socket": ["", "-", "-x", "--json"],
            "--timeout": ["0", "-1", "nan", "inf", "86401", "", "x"],
            "--max-bytes": ["-1", "x", "", "0x1"],
        ]
        let options = valid.keys.sorted()
        let flags = ["--wait", "--raw", "--json", "--quiet", "-q", "--user", "--system"]
        let odd = [
            "-", "--", "-h", "--help", "--version", "--count", "-x", "extra", "send", "request", "help", "-qq",
            "--json=1", "--data=", "svc", "--generate-completion-script", "--exec", "---x",
        ]
        func pick<T>(_ list: [T]) -> T { list[Int.random(in: 0..<list.count, using: &g)] }
        func chance(_ n: Int) -> Bool { Int.random(in: 0..<n, using: &g) == 0 }
        func option(_ name: String) -> [String] {
            let value = chance(12) ? pick(edges[name]!) : chance(40) ? pick(odd) : pick(valid[name]!)
            return chance(3) ? ["\(name)=\(value)"] : [name, value]
        }

        var line: [String] = []
        for _ in 0..<Int.random(in: 0...3, using: &g) where chance(2) {  // options before the verb
            line += chance(2) ? [pick(["--json", "--quiet", "-q", "--user", "--system"])] : option(pick(["--socket", "--timeout"]))
        }
        line.append(chance(30) ? pick(["list", "lookup", "help", "--", "svc", "-q"]) : pick(["send", "request"]))
        var pieces: [[String]] = [[chance(15) ? pick(["", "-", "bad name", "a/b", "help", "--x"]) : pick(["svc", "a.b"])]]
        pieces.append(option("--msgid"))
        if chance(10) { pieces.append(option("--msgid")) }  // twice: left to swift-argument-parser
        for _ in 0..<Int.random(in: 0...5, using: &g) {
            switch Int.random(in: 0..<20, using: &g) {
            case 0..<10: pieces.append(option(pick(options)))
            case 10..<17: pieces.append([pick(flags)])
            case 17, 18: pieces.append(["-"])
            default: pieces.append([pick(odd)])
            }
        }
        if chance(15) { pieces.remove(at: Int.random(in: 0..<pieces.count, using: &g)) }
        pieces.shuffle(using: &g)
        if chance(6) { pieces.insert(["--"], at: Int.random(in: 0...pieces.count, using: &g)) }
        return line + pieces.joined()
    }

    /// 2,400 random lines in four parts (run in parallel): wherever the
    /// fast path takes one, swift-argument-parser takes it the same way.
    @Test(arguments: 0..<4) func randomLinesParseAlikeOrAreLeftToArgumentParser(part: Int) {
        var g = SplitMix64(seed: 0x5eed_13 &+ UInt64(part))
        var taken = 0
        var disagreements: [String] = []
        for _ in 0..<600 {
            let line = Self.randomLine(&g)
            if let problem = Self.disagreement(line) { disagreements.append(problem) }
            if MessageLine.parse(line) != nil { taken += 1 }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) lines, the first: \(disagreements.prefix(5))")
        // Not a vacuous comparison: the fast path took many of the lines.
        #expect(taken > 100, "the fast path took \(taken) of 600 lines")
    }
}
