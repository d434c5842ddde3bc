// LimitedLogHandler: a log handler that passes every line through a
// RefusalLog, so at most RefusalLog.burst lines a second reach the
// logger underneath, each at its own level, and the rest are counted (the count is logged with the
// next second's first line). portd gives it to its control port, whose
// lines (a malformed record closing a client's connection, accept errors)
// a client can cause at will.
//
// Invariants: the RefusalLog is behind a Mutex, so the handler may be
// copied and used from any thread (the control port logs on the daemon
// loop's thread only); the clock is the loop's.

import Logging
import PortCore
import Synchronization

struct LimitedLogHandler: LogHandler {
    /// The shared limit: one RefusalLog for every copy of the handler.
    final class Limit: Sendable {
        let log: Mutex<RefusalLog>
        init(_ log: consuming RefusalLog) { self.log = Mutex(log) }
    }

    let limit: Limit
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level

    /// Lines of at least `logger`'s level go to `logger`, at most
    /// `burst` a second on `clock`.
    init(logger: Logger, clock: any RunLoopClock, burst: Int = RefusalLog.burst) {
        limit = Limit(RefusalLog(logger: logger, clock: clock, burst: burst))
        logLevel = logger.logLevel
    }

    /// A logger for `label` with this limit.
    static func logger(over logger: Logger, clock: any RunLoopClock) -> Logger {
        let handler = LimitedLogHandler(logger: logger, clock: clock)
        return Logger(label: logger.label) { _ in handler }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        let text = event.error.map { "\(event.message): \($0)" } ?? "\(event.message)"
        limit.log.withLock { $0.log(text, merged, level: event.level) }
    }
}
