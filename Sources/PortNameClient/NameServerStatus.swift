// NameServerStatus: what STATUS reports: portd's version, pid and uptime,
// and its counters. Every "key=value" field of the reply is also kept as
// is, in order, so a tool can show counters a newer portd adds.

import PortMessaging
import PortNameProtocol
import PortWire

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
    }

    package init(_ reply: NameServerReply) throws(NameServerError) {
        typealias F = NameServerProtocol.Field
        guard let version = reply.field(F.version) else { throw .protocolError("the status reply lacks version=") }
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
