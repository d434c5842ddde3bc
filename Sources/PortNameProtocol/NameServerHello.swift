// NameServerHello: the HELLO exchange that opens every connection to portd.
// The client names the protocol versions it speaks ("protocol=", one or
// more); portd answers with the one it chose, its software version, the client's id
// (as in owners, "PID:UID:CLIENT"), its limits and its features. portd
// builds the reply here (`reply(serial:)`); the client reads it
// (`init(reply:)`), keeping every field as is so that a tool can show
// limits a newer portd adds.

/// portd's answer to HELLO.
public struct NameServerHello: Sendable, Hashable {
    /// The protocol version of the connection ("1.0").
    public var version: String
    /// portd's software version.
    public var portdVersion: String
    /// This connection's client id.
    public var client: UInt64
    /// The limits portd states, by key ("max_request_bytes" …).
    public var limits: [String: UInt64]
    /// The features portd states (NameServerProtocol.Feature raw values, or newer).
    public var features: [String]

    package init(version: String, portdVersion: String, client: UInt64, limits: [(String, UInt64)], features: [String]) {
        self.version = version
        self.portdVersion = portdVersion
        self.client = client
        self.limits = Dictionary(limits, uniquingKeysWith: { a, _ in a })
        self.orderedLimits = limits
        self.features = features
    }

    /// The limits in the order portd sent them.
    package var orderedLimits: [(String, UInt64)] = []

    public static func == (a: Self, b: Self) -> Bool {
        a.version == b.version && a.portdVersion == b.portdVersion && a.client == b.client && a.limits == b.limits
            && a.features == b.features
    }

    public func hash(into h: inout Hasher) {
        h.combine(version)
        h.combine(client)
    }

    /// The fields of HELLO's reply after the serial, in the page's order.
    package var fields: [NameServerField] {
        typealias F = NameServerProtocol.Field
        var f: [NameServerField] = [.init(F.protocol, version), .init(F.version, portdVersion), .init(F.client, client)]
        for (k, v) in orderedLimits { f.append(.init(k, v)) }
        for feature in features { f.append(.init(F.feature, feature)) }
        return f
    }

    /// Reads a successful HELLO reply.
    package init<Port>(reply: NameServerReply<Port>) throws(NameServerProtocol.Violation) {
        typealias F = NameServerProtocol.Field
        let r = reply.record
        guard let version = r.value(F.protocol), let portd = r.value(F.version) else {
            throw .init("the HELLO reply lacks protocol= or version=")
        }
        var limits: [(String, UInt64)] = []
        for f in r.fields where f.key.hasPrefix("max_") || f.key.hasSuffix("_page") {
            if let v = UInt64(f.value) { limits.append((f.key, v)) }
        }
        self.init(
            version: version, portdVersion: portd, client: try r.integer(F.client, in: "the HELLO reply"), limits: limits,
            features: r.values(F.feature))
    }
}
