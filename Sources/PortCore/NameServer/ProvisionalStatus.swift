// ProvisionalStatus: the one request portd answers today, in a PROVISIONAL
// text format. The ports issue defines the real wire format (versioned,
// little-endian, portd-protocol(7)); this file then goes.
//
// Format: one SOCK_SEQPACKET record per message. The request is the record
// `STATUS` (a trailing newline is tolerated). The reply is lines of
// `key=value`, each ending in "\n": `version=`, `pid=`, `uptime_ms=`. Any
// other request gets the single line `error=unknown request`. Decoding
// ignores unknown keys (so the daemon may add some) and rejects a reply that
// lacks one of the three or has a malformed number.

/// What `portctl status` shows.
public struct DaemonStatus: Sendable, Equatable {
    public var version: String
    public var pid: Int32
    /// Time since the daemon started, on the monotonic clock.
    public var uptimeMilliseconds: UInt64

    public init(version: String, pid: Int32, uptimeMilliseconds: UInt64) {
        self.version = version
        self.pid = pid
        self.uptimeMilliseconds = uptimeMilliseconds
    }
}

public enum ProvisionalStatus {
    /// The request record.
    public static let request: [UInt8] = Array("STATUS".utf8)
    /// The reply to anything else.
    public static let unknownRequestReply: [UInt8] = Array("error=unknown request\n".utf8)

    /// Whether `record` is the status request.
    public static func isStatusRequest(_ record: ArraySlice<UInt8>) -> Bool {
        var body = record
        if body.last == UInt8(ascii: "\n") { body = body.dropLast() }
        return body.elementsEqual(request)
    }

    /// The reply record for `status`.
    public static func encode(_ status: DaemonStatus) -> [UInt8] {
        Array("version=\(status.version)\npid=\(status.pid)\nuptime_ms=\(status.uptimeMilliseconds)\n".utf8)
    }

    /// The daemon's answer: a status, or the daemon's own error line.
    public enum Reply: Sendable, Equatable {
        case status(DaemonStatus)
        case error(String)
    }

    /// Decodes a reply record, or nil when it is malformed.
    public static func decode(_ record: ArraySlice<UInt8>) -> Reply? {
        guard let text = String(validating: record, as: UTF8.self) else { return nil }
        var fields: [Substring: Substring] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let eq = line.firstIndex(of: "=") else { return nil }
            fields[line[..<eq]] = line[line.index(after: eq)...]
        }
        if let message = fields["error"] { return .error(String(message)) }
        guard let version = fields["version"], !version.isEmpty,
            let pidText = fields["pid"], let pid = Int32(pidText), pid > 0,
            let uptimeText = fields["uptime_ms"], let uptime = UInt64(uptimeText)
        else { return nil }
        return .status(DaemonStatus(version: String(version), pid: pid, uptimeMilliseconds: uptime))
    }
}
