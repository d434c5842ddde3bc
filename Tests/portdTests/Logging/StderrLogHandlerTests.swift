// StderrLogHandlerTests: one line on standard error per log event, with
// control characters escaped (much of a line's text comes from clients:
// nothing in it may act on the terminal that shows it) and metadata in key
// order; and a real portd logging a client's escape sequence escaped.

import Foundation
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct StderrLogHandlerTests {
    @Test func oneLinePerEvent() {
        #expect(
            StderrLogHandler.line(identifier: "portd", level: .info, message: "listening on /x", error: nil, metadata: [:])
                == "portd: info: listening on /x\n")
        #expect(
            StderrLogHandler.line(
                identifier: "portd", level: .error, message: "a\nb", error: "e", metadata: ["z": "1", "a": "2"])
                == "portd: error: a\\nb: e a=2 z=1\n")
    }

    @Test func controlCharactersAreEscapedAndTheRestIsKept() {
        let hostile = "a\u{1b}[2J\rb\tc\u{7}\u{0}d\u{7f}\u{85}\u{202e}e \"q\" \\ grüße ✓"
        #expect(
            StderrLogHandler.line(identifier: "portd", level: .notice, message: hostile, error: nil, metadata: ["k": "\u{1b}x"])
                == #"portd: notice: a\x1b[2J\rb\tc\x07\0d\x7f\u{85}\u{202e}e "q" \ grüße ✓ k=\x1bx"# + "\n")
    }

    /// portd's log of a client's bad REGISTER option: the option's escape
    /// sequence is written escaped, no raw control byte reaches stderr.
    @Test func aClientsEscapeSequenceIsLoggedEscaped() throws {
        let portd = try DaemonProcess.started()
        let client = try NameClient(socket: portd.socketPath)
        #expect(try client.register("org.example.escape", ["\u{1b}[2J\u{202e}x"]).outcome == "bad-request")
        try portd.child.waitForStandardError(containing: #"\x1b[2J\u{202e}x"#)
        #expect(try portd.stop() == 0)
        let controls = portd.child.standardError.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7f || (0x80...0x9f).contains($0.value) || $0.value == 0x202e
        }
        #expect(controls.isEmpty, "raw control characters on portd's stderr: \(controls.map { $0.value })")
    }
}
