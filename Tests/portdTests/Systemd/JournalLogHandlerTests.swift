// JournalLogHandlerTests: the journal entry portd writes for a log event:
// its fields (metadata keys made journal field names, reserved ones
// prefixed) and the syslog priority of each level.

import Logging
import Testing

@testable import PortDaemon

@Suite struct JournalLogHandlerTests {
    @Test func fieldsOfAnEntry() {
        let fields = JournalLogHandler.fields(
            level: .warning, message: "two\nlines", error: "boom",
            metadata: ["peer-pid": "12", "message": "spoof", "_PID": "1", "9lives": "x"],
            identifier: "portd", file: "portd/Daemon.swift", function: "run()", line: 42)
        #expect(
            fields == [
                "MESSAGE=two\nlines", "PRIORITY=4", "SYSLOG_IDENTIFIER=portd", "CODE_FILE=portd/Daemon.swift",
                "CODE_LINE=42", "CODE_FUNC=run()", "ERROR=boom",
                "PORTD_9LIVES=x", "PID=1", "PORTD_MESSAGE=spoof", "PEER_PID=12",
            ])
    }

    @Test func fieldNames() {
        #expect(JournalLogHandler.fieldName(forMetadataKey: "client.uid") == "CLIENT_UID")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "__x") == "X")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "") == "PORTD_")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "priority") == "PORTD_PRIORITY")
        #expect(JournalLogHandler.fieldName(forMetadataKey: String(repeating: "a", count: 100)).count == 64)
    }

    @Test func priorities() {
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected { #expect(JournalLogHandler.priority(of: level) == priority) }
    }
}
