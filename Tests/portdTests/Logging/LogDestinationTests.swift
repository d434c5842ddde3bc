// LogDestinationTests: where portd's logs go (the journal only when
// standard error is the stream JOURNAL_STREAM names) and the level
// PORTD_LOG_LEVEL asks for.

import Testing

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
}
