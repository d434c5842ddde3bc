// JournalLogHandler: a swift-log LogHandler that writes structured entries
// to the systemd journal with sd_journal_sendv(3), chosen when portd's
// standard error is the journal (LogDestination checks JOURNAL_STREAM).
//
// Every entry carries MESSAGE=, PRIORITY= (syslog levels), SYSLOG_IDENTIFIER=portd,
// CODE_FILE=, CODE_LINE=, CODE_FUNC=, ERROR= when the event has one, and each
// metadata item as its own field, named by `fieldName(forMetadataKey:)`:
// upper case, [A-Z0-9_] only, no leading underscore (those are trusted
// fields journald sets itself), at most 64 characters, and prefixed with
// PORTD_ when it would collide with a field this handler writes. Values may
// contain newlines: sd_journal_sendv is binary-safe. Entries are built in
// pure code (`fields`) and handed to libsystemd in one call; a journal that
// is not running drops them (libsystemd returns 0), which is fine.

import PortCore
import CSystemd
import Logging

struct JournalLogHandler: PortdLogHandler {
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
        Self.send(
            Self.fields(
                level: event.level, message: event.message.description, error: event.error.map { "\($0)" },
                metadata: merged, identifier: identifier, file: event.file, function: event.function, line: event.line))
    }

    // MARK: - Fields (pure)

    /// The fields this handler writes itself; metadata never overrides them.
    static let ownFields: Set<String> = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "ERROR",
    ]

    /// The journal entry for one event, as `NAME=value` strings, own fields first.
    static func fields(
        level: Logger.Level, message: String, error: String?, metadata: Logger.Metadata,
        identifier: String, file: String, function: String, line: UInt
    ) -> [String] {
        var result = [
            "MESSAGE=\(message)",
            "PRIORITY=\(priority(of: level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(file)",
            "CODE_LINE=\(line)",
            "CODE_FUNC=\(function)",
        ]
        if let error { result.append("ERROR=\(error)") }
        for key in metadata.keys.sorted() {
            result.append("\(fieldName(forMetadataKey: key))=\(metadata[key]!)")
        }
        return result
    }

    /// syslog(3) priorities: swift-log's trace and debug are both LOG_DEBUG.
    static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// A journal field name for a metadata key (see the rules at the top of this file).
    static func fieldName(forMetadataKey key: String) -> String {
        var name = String(
            key.uppercased().unicodeScalars.map { scalar -> Character in
                switch scalar {
                case "A"..."Z", "0"..."9", "_": Character(scalar)
                default: "_"
                }
            })
        while name.hasPrefix("_") { name.removeFirst() }
        if name.isEmpty || name.first!.isNumber || ownFields.contains(name) { name = "PORTD_" + name }
        return String(name.prefix(64))
    }

    // MARK: - Sending

    /// Hands one entry to the journal. The corresponding C function is `sd_journal_sendv`.
    private static func send(_ fields: [String]) {
        // One contiguous buffer and iovecs into it; both live for the call.
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        for field in fields {
            let start = buffer.count
            buffer.append(contentsOf: field.utf8)
            ranges.append(start..<buffer.count)
        }
        buffer.withUnsafeMutableBytes { raw in
            var vectors = ranges.map { range in
                iovec(iov_base: raw.baseAddress.map { $0 + range.lowerBound }, iov_len: range.count)
            }
            // The result is ignored on purpose: a log line has nowhere else to go.
            _ = sd_journal_sendv(&vectors, Int32(vectors.count))
        }
    }
}
