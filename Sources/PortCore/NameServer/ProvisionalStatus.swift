// ProvisionalStatus: the STATUS request of the name-server protocol
// (portd-protocol(7), NAME SERVER), as raw records for ControlClient's
// one-shot exchange. PROVISIONAL: it keeps `portctl status` working until
// the name-server client (PortCore ports) replaces ControlClient; it then goes.
//
// Format: the request is a port message with msgid 0xFFFF0001 (STATUS), no
// components, and the REPLY_EXPECTED flag. The reply is a port message of
// UTF-8 data components: "ok", then "key=value" components (version, pid,
// uptime_ms and counters). An error reply starts with an error word and a
// "message=..." component instead. Decoding ignores unknown keys (so the
// daemon may add some) and rejects a reply that lacks version, pid or
// uptime_ms or has a malformed number.

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
    /// The STATUS msgid of the name-server protocol.
    public static let statusMessageID: UInt32 = 0xFFFF_0001

    /// The request record: STATUS, no components, REPLY_EXPECTED.
    public static let request: [UInt8] = {
        var bytes = try! WireEncoder.encode(msgid: statusMessageID, components: []).bytes
        bytes[5] |= WireFormat.Flags.replyExpected.rawValue
        return bytes
    }()

    /// The reply record for `status` (what portd sends, for tests).
    public static func encode(_ status: DaemonStatus) -> [UInt8] {
        let strings = [
            "ok", "version=\(status.version)", "pid=\(status.pid)", "uptime_ms=\(status.uptimeMilliseconds)",
        ]
        return try! WireEncoder.encode(msgid: statusMessageID, components: strings.map { .data(Array($0.utf8)) }).bytes
    }

    /// The daemon's answer: a status, or the daemon's own error.
    public enum Reply: Sendable, Equatable {
        case status(DaemonStatus)
        case error(String)
    }

    /// Decodes a reply record, or nil when it is malformed.
    public static func decode(_ record: ArraySlice<UInt8>) -> Reply? {
        guard let decoded = try? WireDecoder.decode(Array(record)) else { return nil }
        var strings: [String] = []
        for component in decoded.components {
            guard case .data(let bytes) = component, let text = String(validating: bytes, as: UTF8.self) else {
                return nil
            }
            strings.append(text)
        }
        guard let word = strings.first else { return nil }
        var fields: [Substring: Substring] = [:]
        for item in strings.dropFirst() {
            guard let eq = item.firstIndex(of: "=") else { return nil }
            fields[item[..<eq]] = item[item.index(after: eq)...]
        }
        guard word == "ok" else {
            return .error(fields["message"].map { "\(word): \($0)" } ?? word)
        }
        guard let version = fields["version"], !version.isEmpty,
            let pidText = fields["pid"], let pid = Int32(pidText), pid > 0,
            let uptimeText = fields["uptime_ms"], let uptime = UInt64(uptimeText)
        else { return nil }
        return .status(DaemonStatus(version: String(version), pid: pid, uptimeMilliseconds: uptime))
    }
}
