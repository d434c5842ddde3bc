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
            (F.version, version), (F.pid, "\(pid)"), (F.uptime, "\(uptimeMilliseconds)"), (F.names, "\(names)"),
            (F.clients, "\(clients)"), (F.lookups, "\(lookups)"), (F.refusals, "\(refusals)"),
            (F.declared, "\(declared)"),
        ].map { Field(key: $0.0, value: $0.1) }
    }

    /// Reads a STATUS reply whose word is "ok".
    package init<Port>(_ reply: NameServerReply<Port>) throws(NameServerProtocol.Violation) {
        typealias F = NameServerProtocol.Field
        guard let version = reply.field(F.version) else { throw .init("the status reply lacks \(F.version)=") }
        self.version = version
        pid = try reply.integer(F.pid)
        uptimeMilliseconds = try reply.integer(F.uptime)
        names = try reply.integer(F.names)
        clients = try reply.integer(F.clients)
        lookups = try reply.integer(F.lookups)
        refusals = try reply.integer(F.refusals)
        declared = try reply.integer(F.declared)
        fields = reply.keyValuePairs.map { Field(key: $0.key, value: $0.value) }
    }
}
