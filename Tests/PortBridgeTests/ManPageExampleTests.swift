// portd-bridge(8)'s EXAMPLES call an exported name from nats-py with a
// plain NATS request, building the portd-protocol(7) record by hand: this
// runs that example as written (only its server URL changed) against a
// real nats-server, portd, portd-bridge and `portctl listen --exec cat`,
// so the page's NATS MAPPING and the bridge cannot drift apart.

import Foundation
import PortTestSupport
import Testing

@Suite struct ManPageExampleTests {
    /// The nats-py example of portd-bridge(8), as written.
    static func manPageExample() throws -> String {
        let page = try String(contentsOfFile: SourceTree.path("man/portd-bridge.8"), encoding: .utf8)
        let start = try #require(page.range(of: "In Python with nats-py, a request with one data component:\n.Bd -literal -offset indent\n"))
        let end = try #require(page.range(of: "\n.Ed\n", range: start.upperBound..<page.endIndex))
        // mdoc's escape of a backslash.
        return page[start.upperBound..<end.lowerBound].replacingOccurrences(of: "\\e", with: "\\")
    }

    @Test func theManPagesNatsPyExampleCallsAnExportedName() throws {
        let example = try Self.manPageExample()
        #expect(example.contains("nats.connect(\"nats://127.0.0.1:4222\")"))
        let nats = try NatsTopology(leaves: 0)
        let portd = try DaemonProcess.started()
        let config = portd.directory.appending("bridge.conf")
        try """
            [Bridge]
            BridgeID=a
            [NATS]
            URL=\(nats.hub.url)
            [Export]
            Name=org.example.echo

            """.write(toFile: config, atomically: true, encoding: .utf8)
        let listener = try portd.startPortctl(["listen", "org.example.echo", "--exec", "cat"])
        defer { listener.killAndReap() }
        try listener.waitForStandardError(containing: "listening on")
        let bridge = try ChildProcess(
            executable: try Binaries.path("portd-bridge"), arguments: ["--config", config, "--socket", portd.socketPath],
            collectingStandardError: true)
        defer { bridge.killAndReap() }
        try bridge.waitForStandardError(containing: "exported org.example.echo")

        let script = example.replacingOccurrences(of: "nats://127.0.0.1:4222", with: nats.hub.url)
        let result = try PythonVenv.run("-c", [script])  // python -u -c SCRIPT
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "[b'hello']\n")
    }
}
