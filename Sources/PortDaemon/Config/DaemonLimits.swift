// DaemonLimits: the bounds portd puts on what its clients control, set in
// the [Limits] section of portd.conf(5). Each has a name (its key), a
// default (below, and in the man page: keep the two in step) and a range;
// reaching one refuses that one request with the error word "limit", and
// the daemon keeps serving everyone else.
//
// Invariants: every value is within its range (checked at load time), so
// the daemon never sees 0 or a value that overflows. The table `keys` is
// the single list of keys, defaults and ranges the parser, the tests and
// the man page follow.

import PortCore

struct DaemonLimits: Equatable, Sendable {
    /// Names one client connection may own at once (queued requests count).
    var namesPerClient = 256
    /// LOOKUP requests with wait_ms that one client may have waiting at once.
    var pendingLookupsPerClient = 64
    /// WATCH subscriptions one client may hold.
    var watchesPerClient = 64
    /// Client connections of one uid at once.
    var clientsPerUID = 256
    /// The largest request record portd reads, in bytes.
    var maxRequestBytes = 4096
    /// Client connections in all.
    var maxClients = 1024

    /// All the defaults.
    static let `default` = DaemonLimits()

    /// One key of [Limits]: its name, its range, and the field it sets.
    struct Key: Sendable {
        let name: String
        let range: ClosedRange<Int>
        /// Whether the value may carry a K/M suffix (1024-based).
        let isByteSize: Bool
        let field: WritableKeyPath<DaemonLimits, Int> & Sendable
    }

    /// Every key of [Limits], in the order of the man page.
    static let keys: [Key] = [
        Key(name: "NamesPerClient", range: 1...1_000_000, isByteSize: false, field: \.namesPerClient),
        Key(name: "PendingLookupsPerClient", range: 1...1_000_000, isByteSize: false, field: \.pendingLookupsPerClient),
        Key(name: "WatchesPerClient", range: 1...1_000_000, isByteSize: false, field: \.watchesPerClient),
        Key(name: "ClientsPerUID", range: 1...1_000_000, isByteSize: false, field: \.clientsPerUID),
        // At least room for a request with a 200-byte name; at most one record.
        Key(name: "MaxRequestBytes", range: 512...PortLimits.defaultMaxRecordSize, isByteSize: true, field: \.maxRequestBytes),
        Key(name: "MaxClients", range: 1...1_000_000, isByteSize: false, field: \.maxClients),
    ]

    /// Reads the value of `key`: decimal digits, with an optional K or M
    /// (times 1024 or 1024²) for byte sizes.
    static func parse(_ value: String, for key: Key) throws(InvalidValue) -> Int {
        var digits = Substring(value)
        var multiplier = 1
        if key.isByteSize, let last = digits.last {
            switch last {
            case "K", "k": multiplier = 1024
            case "M", "m": multiplier = 1024 * 1024
            default: break
            }
            if multiplier != 1 { digits = digits.dropLast() }
        }
        let unit = key.isByteSize ? " (bytes; K and M suffixes allowed)" : ""
        let problem = InvalidValue(
            "\(key.name)= must be a whole number from \(key.range.lowerBound) to \(key.range.upperBound)\(unit), not '\(value)'")
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let number = Int(digits)
        else { throw problem }
        let (total, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow, key.range.contains(total) else { throw problem }
        return total
    }
}
