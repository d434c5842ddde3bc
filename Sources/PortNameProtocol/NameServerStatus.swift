// NameServerStatus: what STATUS reports: portd's version, pid and uptime,
// and its counters. portd fills one and sends its fields
// (NameServerReply.status); the client reads them back, keeping every
// "key=value" field of the reply as is, in order, so a tool can show
// counters a newer portd adds.

/// portd's answer to STATUS.
public struct NameServerStatus: Sendable, Hashable {
    public var version: String
    public var pid: Int32
    /// Time since portd started (monotonic clock), in milliseconds.
    public var uptimeMilliseconds: UInt64
    /// Names registered now.
    public var names: UInt64
    /// Client connections now.
    public var clients: UInt64
    /// Lookups served since start.
    public var lookups: UInt64
    /// Requests refused (policy, limits) since start.
    public var refusals: UInt64
    /// Declared ports.
    public var declared: UInt64
    /// Every field of the reply, in order, including the ones above.
    public var fields: [Field]

    public struct Field: Sendable, Hashable {
        public var key: String
        public var value: String

        package init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    /// portd's status, its fields in the protocol's order.
    package init(
        version: String, pid: Int32, uptimeMilliseconds: UInt64, names: UInt64, clients: UInt64, lookups: UInt64,
        refusals: UInt64, declared: UInt64
    ) {
        typealias F = NameServerProtocol.Field
        self.version = version
        self.pid = pid
        self.uptimeMilliseconds = uptimeMilliseconds
        self.names = names
        self.clients = clients
        self.lookups = lookups
        self.refusals = refusals
        self.declared = declared
        fields = [
            (F.version, version), (F.protocol, NameServerProtocol.version), (F.pid, "\(pid)"), (F.uptime, "\(uptimeMilliseconds)"), (F.names, "\(names)"),
            (F.clients, "\(clients)"), (F.lookups, "\(lookups)"), (F.refusals, "\(refusals)"),
            (F.declared, "\(declared)"),
        ].map { Field(key: $0.0, value: $0.1) }
    }

    /// Reads a successful STATUS reply.
    package init<Port>(_ reply: NameServerReply<Port>) throws(NameServerProtocol.Violation) {
        typealias F = NameServerProtocol.Field
        let r = reply.record
        let what = "the STATUS reply"
        guard let version = r.value(F.version) else { throw .init("\(what) lacks \(F.version)=") }
        self.version = version
        pid = try r.integer(F.pid, in: what)
        uptimeMilliseconds = try r.integer(F.uptime, in: what)
        names = try r.integer(F.names, in: what)
        clients = try r.integer(F.clients, in: what)
        lookups = try r.integer(F.lookups, in: what)
        refusals = try r.integer(F.refusals, in: what)
        declared = try r.integer(F.declared, in: what)
        fields = r.fields.dropFirst().map { Field(key: $0.key, value: $0.value) }
    }
}
