// portd-bridge(8)'s OPTIONS and the binary's --help list the same long
// options, so the page cannot promise an option the bridge lacks, nor the
// bridge grow one the page does not describe.

import Foundation
import PortTestSupport
import Testing

@Suite struct BridgeManPageTests {
    @Test func theOptionsOfThePageAreThoseOfHelp() throws {
        let page = try String(contentsOfFile: SourceTree.path("man/portd-bridge.8"), encoding: .utf8)
        let start = try #require(page.range(of: "\n.Sh OPTIONS\n"))
        let end = try #require(page.range(of: "\n.Sh ", range: start.upperBound..<page.endIndex))
        let documented = Set(
            page[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix(".It Fl -") else { return nil }
                return "--" + (line.dropFirst(".It Fl -".count).split(separator: " ").first.map(String.init) ?? "")
            })
        let child = try ChildProcess(executable: try Binaries.path("portd-bridge"), arguments: ["--help"])
        #expect(try child.waitForExit() == 0)
        let help = child.standardOutput
        let optionsStart = try #require(help.range(of: "OPTIONS:"))
        let offered = Set(
            help[optionsStart.upperBound...].split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ")
                // "  --config <file>  …" or "  -h, --help  …"
                return words.prefix(2).map(String.init).first { $0.hasPrefix("--") }?
                    .trimmingCharacters(in: CharacterSet(charactersIn: ","))
            })
        #expect(offered.contains("--check-config"), "\(help)")
        #expect(documented == offered, "the page: \(documented.sorted()), --help: \(offered.sorted())")
    }
}
