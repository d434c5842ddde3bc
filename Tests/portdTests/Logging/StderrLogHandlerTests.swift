// StderrLogHandlerTests: one line on standard error per log event, with
// newlines escaped and metadata in key order.

import Testing

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
}
