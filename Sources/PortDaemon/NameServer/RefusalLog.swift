// RefusalLog: the log lines of refused requests and connections (and of
// bad requests, invalid names, and through LimitedLogHandler the control
// port's own lines: whatever a client can cause), at most
// `burst` a second, so a client hammering portd with refused requests
// cannot flood the journal. The lines left out are counted in one line
// when the next second's first refusal is logged (every refusal still
// counts in STATUS `refusals=`; that count is the name server's).
//
// Invariants: the second is measured on the run loop's clock (the name
// server passes `loop.clock`; tests a ManualClock), never read from the
// system directly; used on the name server's loop thread only.

import Logging
import PortCore

struct RefusalLog {
    /// The most refusal lines a second.
    static let burst = 20

    private let logger: Logger
    private let clock: any RunLoopClock
    private let burst: Int
    private var window: (start: MonotonicInstant, logged: Int, suppressed: Int)

    init(logger: Logger, clock: any RunLoopClock, burst: Int = RefusalLog.burst) {
        self.logger = logger
        self.clock = clock
        self.burst = burst
        window = (clock.now(), 0, 0)
    }

    /// Logs `line` (notice) unless `burst` lines were logged this second.
    mutating func log(_ line: @autoclosure () -> String, _ metadata: Logger.Metadata) {
        let now = clock.now()
        if now - window.start >= .seconds(1) {
            if window.suppressed > 0 {
                logger.notice("\(window.suppressed) more refusals were not logged (at most \(burst) a second)")
            }
            window = (now, 0, 0)
        }
        if window.logged < burst {
            window.logged += 1
            logger.notice("\(line())", metadata: metadata)
        } else {
            window.suppressed += 1
        }
    }
}
