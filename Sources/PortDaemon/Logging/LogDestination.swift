// LogDestination: where portd's logs go, decided once at start-up: the
// journal (structured, JournalLogHandler) when standard error *is* the
// journal, plain lines on standard error (StderrLogHandler) otherwise.
//
// "Is the journal" follows systemd.exec(5): JOURNAL_STREAM holds
// "DEVICE:INODE" of the stream systemd connected, and it only counts when it
// matches fstat(2) of our standard error now (a child of a service inherits
// the variable but may have its stderr redirected elsewhere). The level is
// `info` unless PORTD_LOG_LEVEL names another swift-log level.

import Logging
import PortCore

package enum LogDestination: Equatable {
    case journal
    case standardError

    /// The destination for this process.
    static func detect() -> LogDestination {
        let stderrStatus = try? StandardStream.error.withDescriptor { (stream) throws(SystemCallError) in
            try FileSystem.status(ofDescriptor: stream)
        }
        return detect(
            journalStream: CurrentProcess.environment("JOURNAL_STREAM"),
            standardError: stderrStatus.map { ($0.device, $0.inode) })
    }

    /// Pure: `journalStream` is the variable's value, `standardError` the
    /// device and inode of descriptor 2.
    static func detect(journalStream: String?, standardError: (device: UInt64, inode: UInt64)?) -> LogDestination {
        guard let journalStream, let standardError else { return .standardError }
        let parts = journalStream.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .standardError }
        return device == standardError.device && inode == standardError.inode ? .journal : .standardError
    }

    /// The level from PORTD_LOG_LEVEL (trace, debug, info, notice, warning, error, critical), else info.
    static func level(from value: String?) -> Logger.Level {
        value.flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
    }

    /// Installs the handler for the whole process; call once, first thing.
    /// `identifier` names the program in every line (portd, portd-bridge).
    package static func bootstrap(identifier: String = "portd") -> Logger {
        let destination = detect()
        let given = CurrentProcess.environment("PORTD_LOG_LEVEL")
        let level = level(from: given)
        LoggingSystem.bootstrap { _ -> any LogHandler in
            switch destination {
            case .journal: JournalLogHandler(identifier: identifier, logLevel: level)
            case .standardError: StderrLogHandler(identifier: identifier, logLevel: level)
            }
        }
        let logger = Logger(label: identifier)
        if let given, Logger.Level(rawValue: given.lowercased()) == nil {
            logger.warning(
                "PORTD_LOG_LEVEL=\(given) is not a level (trace, debug, info, notice, warning, error, critical); logging at info")
        }
        return logger
    }
}
