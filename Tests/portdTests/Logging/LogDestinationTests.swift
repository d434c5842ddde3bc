// LogDestinationTests: where portd's logs go (the journal only when
// standard error is the stream JOURNAL_STREAM names) and the level
// PORTD_LOG_LEVEL asks for.

import Glibc
import Testing

import PortTestSupport
@testable import PortDaemon

@Suite struct LogDestinationTests {
    @Test func journalOnlyWhenStandardErrorIsTheJournalStream() {
        #expect(LogDestination.detect(journalStream: "8:12345", standardError: (8, 12345)) == .journal)
        #expect(LogDestination.detect(journalStream: "8:12345", standardError: (8, 999)) == .standardError)
        #expect(LogDestination.detect(journalStream: nil, standardError: (8, 12345)) == .standardError)
        #expect(LogDestination.detect(journalStream: "garbage", standardError: (8, 12345)) == .standardError)
        #expect(LogDestination.detect(journalStream: "8:12345", standardError: nil) == .standardError)
    }

    @Test func levels() {
        #expect(LogDestination.level(from: nil) == .info)
        #expect(LogDestination.level(from: "DEBUG") == .debug)
        #expect(LogDestination.level(from: "nonsense") == .info)
    }

    /// A level portd does not know is said, not silently ignored (issue 14).
    @Test func anUnknownLevelIsReported() throws {
        let d = try DaemonProcess.started(environment: ["PORTD_LOG_LEVEL": "loud"])
        #expect(try d.stop() == 0)
        #expect(d.child.standardError.contains("PORTD_LOG_LEVEL=loud is not a level"), "\(d.child.standardError)")
    }
}
