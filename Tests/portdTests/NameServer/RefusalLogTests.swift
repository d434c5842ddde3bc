// RefusalLogTests: the refusal log's limit of lines a second, on a manual
// clock: the burst is logged, the rest counted, the count reported with the
// next second's first refusal, and a quiet second reports nothing; a line
// keeps its level, and one below the logger's level neither shows nor counts.

import Testing

import PortCore
@testable import PortDaemon

@Suite struct RefusalLogTests {
    @Test func atMostABurstASecondAndTheRestCounted() {
        let clock = ManualClock()
        let capture = LogCapture()
        var log = RefusalLog(logger: capture.logger, clock: clock, burst: 3)
        for i in 0..<5 { log.log("refused \(i)", ["n": "\(i)"]) }
        #expect(capture.all.filter { $0.contains("refused") }.count == 3)
        clock.advance(by: .milliseconds(999))
        log.log("refused 5", [:])
        #expect(capture.all.count == 3, "still the same second")
        clock.advance(by: .milliseconds(1))
        log.log("refused 6", [:])
        #expect(capture.all.count == 5)
        #expect(capture.all[3].contains("3 more refusal lines were not logged (at most 3 a second)"))
        #expect(capture.all[4].contains("refused 6"))
        clock.advance(by: .seconds(5))
        log.log("refused 7", [:])
        #expect(capture.all.count == 6, "nothing was left out, nothing to report")
        #expect(capture.all[5].contains("refused 7"))
    }

    @Test func theDefaultBurstIsTwenty() {
        let clock = ManualClock()
        let capture = LogCapture()
        var log = RefusalLog(logger: capture.logger, clock: clock)
        for i in 0..<100 { log.log("refused \(i)", [:]) }
        #expect(capture.all.count == 20)
    }

    @Test func linesKeepTheirLevelAndThoseBelowTheLoggersDoNotCount() {
        let clock = ManualClock()
        let capture = LogCapture()
        var logger = capture.logger
        logger.logLevel = .info
        var log = RefusalLog(logger: logger, clock: clock, burst: 2, what: "event lines")
        for i in 0..<10 { log.log("debug \(i)", [:], level: .debug) }
        #expect(capture.all.isEmpty, "below the logger's level")
        for i in 0..<5 { log.log("released \(i)", [:], level: .info) }
        #expect(capture.all.count == 2)
        #expect(capture.all.allSatisfy { $0.contains("info") }, "\(capture.all)")
        clock.advance(by: .seconds(1))
        log.log("released 5", [:], level: .info)
        #expect(capture.all[2].contains("3 more event lines were not logged (at most 2 a second)"), "\(capture.all)")
    }
}
