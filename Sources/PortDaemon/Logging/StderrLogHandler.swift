// StderrLogHandler: portd's plain log lines on standard error, used when it
// is not running under the journal (in a terminal, under a test, under a
// supervisor other than systemd).
//
// Format, one line per event: `portd: LEVEL: message key=value key=value`,
// metadata sorted by key so lines are stable; control characters inside a
// message or a value (newlines, ESC, bidirectional controls: much of the
// text comes from clients) are escaped (TextEscape.controls), so one event
// stays one line and nothing in it acts on the terminal that shows it. No timestamp: whatever collects
// standard error adds its own. Writes go straight to STDERR_FILENO (Swift
// 6 has no usable `stderr` global) in one write per line, so lines from
// different threads do not interleave mid-line.

import Logging
import PortCore
import PortWire

struct StderrLogHandler: PortdLogHandler {
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level
    let identifier: String

    init(identifier: String = "portd", logLevel: Logger.Level = .info, metadataProvider: Logger.MetadataProvider? = nil) {
        self.identifier = identifier
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
    }

    func log(event: LogEvent) {
        let merged = mergedMetadata(event)
        CurrentProcess.writeStandardError(
            Self.line(
                identifier: identifier, level: event.level, message: event.message.description,
                error: event.error.map { "\($0)" }, metadata: merged))
    }

    /// One formatted line, with its newline. Pure.
    static func line(
        identifier: String, level: Logger.Level, message: String, error: String?, metadata: Logger.Metadata
    ) -> String {
        var text = "\(identifier): \(level): \(escaped(message))"
        if let error { text += ": \(escaped(error))" }
        for key in metadata.keys.sorted() {
            text += " \(key)=\(escaped(metadata[key]!.description))"
        }
        return text + "\n"
    }

    private static func escaped(_ text: String) -> String { TextEscape.controls(text) }
}
