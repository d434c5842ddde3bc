// RefusalLog: a limit of log lines a second for lines a client can cause.
// The name server keeps two: one for refused requests and connections
// (and bad requests, invalid names, and through LimitedLogHandler the
// control port's own lines), one for the events clients make happen (a
// name released because its owner stopped listening, a watch that ended,
// a message not sent because its receiver's queue was full, a check-in),
// so a client hammering portd with either cannot flood the journal, and a
// flood of one kind does not hide the other. At most `burst` lines a
// second; the lines left out are counted in one line when the next
// second's first line is logged (every refusal still counts in STATUS
// `refusals=`; that count is the name server's). A line below the
// logger's level is not logged and does not count.
//
// Invariants: the second is measured on the run loop's clock (the name
// server passes `loop.clock`; tests a ManualClock), never read from the
// system directly; used on the name server's loop thread only.

import Logging
import PortCore

package struct RefusalLog {
    /// The most lines a second.
    package static let burst = 20

    private let logger: Logger
    private let clock: any RunLoopClock
    private let burst: Int
    /// What the lines are, as the count of those left out names them.
    private let what: String
    private var window: (start: MonotonicInstant, logged: Int, suppressed: Int)

    package init(logger: Logger, clock: any RunLoopClock, burst: Int = RefusalLog.burst, what: String = "refusal lines") {
        self.logger = logger
        self.clock = clock
        self.burst = burst
        self.what = what
        window = (clock.now(), 0, 0)
    }

    /// Logs `line` at `level` unless `burst` lines were logged this second.
    /// The line and its metadata are made only when it is logged (a
    /// refused request built both, a dictionary of formatted strings, for
    /// each refusal of a flood, most of them not logged).
    package mutating func log(
        _ line: @autoclosure () -> String, _ metadata: @autoclosure () -> Logger.Metadata, level: Logger.Level = .notice
    ) {
        guard level >= logger.logLevel else { return }
        let now = clock.now()
        if now - window.start >= .seconds(1) {
            if window.suppressed > 0 {
                logger.notice("\(window.suppressed) more \(what) were not logged (at most \(burst) a second)")
            }
            window = (now, 0, 0)
        }
        if window.logged < burst {
            window.logged += 1
            logger.log(level: level, "\(line())", metadata: metadata())
        } else {
            window.suppressed += 1
        }
    }
}
