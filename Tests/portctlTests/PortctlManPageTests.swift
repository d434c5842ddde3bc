// PortctlManPageTests: man/portctl.1 against `portctl --help`: every
// subcommand has its entry, every long option a verb's help lists is
// described (as `Fl -option`), and the exit statuses of the page are the
// ones --help prints, which come from ExitStatus; and `portctl status`
// prints the fields the README's sample and the page list. (mandoc's lint
// runs in scripts/lint-man.)

import Foundation
import PortTestSupport
import Testing

@Suite struct PortctlManPageTests {
    static let page = (try? String(contentsOfFile: SourceTree.path("man/portctl.1"), encoding: .utf8)) ?? ""

    static let verbs = ["register", "listen", "send", "request", "checkin", "list", "lookup", "watch", "monitor", "status", "wait"]

    @Test func everySubcommandHasAnEntry() throws {
        let help = try runPortctl(["--help"]).standardOutput
        let listed = help.components(separatedBy: "SUBCOMMANDS:").last!.split(separator: "\n").compactMap {
            $0.hasPrefix("  ") && !$0.hasPrefix("   ") ? $0.split(separator: " ").first.map(String.init) : nil
        }.filter { $0 != "See" }  // "  See 'portctl help <subcommand>' ..."
        #expect(Set(listed) == Set(Self.verbs))
        for verb in Self.verbs { #expect(Self.page.contains(".It Cm \(verb)"), "\(verb)") }
    }

    @Test(arguments: verbs) func everyOptionIsDescribed(_ verb: String) throws {
        let help = try runPortctl([verb, "--help"]).standardOutput
        let options = help.components(separatedBy: "OPTIONS:").last!
        let regex = try NSRegularExpression(pattern: "^  (?:-[a-z], )?--([a-z-]+)", options: [.anchorsMatchLines])
        let names = regex.matches(in: options, range: NSRange(options.startIndex..., in: options)).map {
            String(options[Range($0.range(at: 1), in: options)!])
        }
        #expect(!names.isEmpty)
        for name in names {
            #expect(Self.page.contains("Fl -\(name)"), "portctl \(verb) --\(name) is not in portctl(1)")
        }
    }

    /// What `portctl VERB --help` says of an option: its lines, joined.
    static func optionHelp(_ verb: String, _ option: String) throws -> String {
        let help = try runPortctl([verb, "--help"]).standardOutput
        let lines = help.components(separatedBy: "OPTIONS:").last!.split(separator: "\n")
        guard let first = lines.firstIndex(where: { $0.hasPrefix("  \(option) ") }) else { return "" }
        let rest = lines[(first + 1)...].prefix { $0.hasPrefix("      ") }
        return ([lines[first]] + rest).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }

    /// --allow-replacement says what becomes of each verb when its name is
    /// taken, as the page's "Ownership options" does.
    @Test func allowReplacementIsDescribedForEachVerb() throws {
        let listen = try Self.optionHelp("listen", "--allow-replacement")
        let register = try Self.optionHelp("register", "--allow-replacement")
        #expect(listen.contains("listen then handles what already arrived and exits with status 74"), "\(listen)")
        #expect(register.contains("COMMAND then keeps running"), "\(register)")
        #expect(!register.contains("74") && !register.contains("listen"), "\(register)")
        #expect(Self.page.contains("command keeps running with the connections it has"))
    }

    /// The keys of a JSON object's text, in order (no key or string value
    /// of status's contains `":`).
    static func jsonKeys(_ line: Substring) throws -> [String] {
        let regex = try NSRegularExpression(pattern: #""([a-z_]+)":"#)
        let text = String(line)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
            String(text[Range($0.range(at: 1), in: text)!])
        }
    }

    @Test func statusPrintsTheFieldsTheReadmeAndThePageList() throws {
        let d = try DaemonProcess.started()
        let text = try d.portctl(["status"])
        let json = try d.portctl(["status", "--json"])
        #expect(text.status == 0 && json.status == 0, "\(text.standardError)\(json.standardError)")
        let labels = text.standardOutput.split(separator: "\n").map { String($0.prefix { $0 != ":" }) }
        let keys = try Self.jsonKeys(json.standardOutput.split(separator: "\n").first ?? "")
        #expect(labels.contains("protocol") && keys.contains("protocol"))

        // The README's sample: the lines after `portctl status` up to the
        // next command, and the line after `portctl status --json`.
        let readme = try String(contentsOfFile: SourceTree.path("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n")
        let start = try #require(lines.firstIndex(of: "$ .build/debug/portctl status"))
        let sample = lines[(start + 1)...].prefix { !$0.hasPrefix("$ ") }
        #expect(sample.map { String($0.prefix { $0 != ":" }) } == labels)
        let jsonStart = try #require(lines.firstIndex(of: "$ .build/debug/portctl status --json"))
        #expect(try Self.jsonKeys(lines[jsonStart + 1]) == keys)

        // portctl(1)'s entry for status names every JSON member.
        let entry = Self.page.components(separatedBy: ".It Cm status\n").last!.components(separatedBy: ".It Cm wait").first!
        for key in keys { #expect(entry.contains(".Li \(key)"), "portctl(1) status does not list \(key)") }
    }

    @Test func exitStatusesMatchTheHelp() throws {
        let help = try runPortctl(["--help"]).standardOutput
        let fromHelp = help.split(separator: "\n").compactMap { line -> Int? in
            let t = line.trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix("  "), let first = t.split(separator: "\t").first, t.contains("\t") else { return nil }
            return Int(first)
        }
        let section = Self.page.components(separatedBy: ".Sh EXIT STATUS").last!.components(separatedBy: ".Sh EXAMPLES").first!
        let fromPage = section.split(separator: "\n").compactMap { $0.hasPrefix(".It ") ? Int($0.dropFirst(4)) : nil }
        #expect(fromHelp == [0, 1, 64, 67, 69, 74, 75, 76, 77])
        #expect(fromPage == fromHelp)
    }
}
