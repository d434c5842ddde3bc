// NameServerHello: the HELLO exchange that opens every connection to portd.
// The client names the protocol versions it speaks ("protocol=", one or
// more); portd answers with the one it chose, its software version, the client's id
// (as in owners, "PID:UID:CLIENT"), its limits and its features. portd
// builds the reply here (`reply(serial:)`); the client reads it
// (`init(reply:)`), keeping every field as is so that a tool can show
// limits a newer portd adds.

/// portd's answer to HELLO.
public struct NameServerHello: Sendable, Hashable {
    /// One limit portd states ("max_request_bytes=4096").
    public struct Limit: Sendable, Hashable {
        public var key: String
        public var value: UInt64
    }

    /// The protocol version of the connection ("1.0").
    public var version: String
    /// portd's software version.
    public var portdVersion: String
    /// This connection's client id.
    public var client: UInt64
    /// The limits portd states, in its order.
    public var limitList: [Limit]
    /// The features portd states (NameServerProtocol.Feature raw values, or newer).
    public var features: [String]

    /// The limits by key ("max_request_bytes" …).
    public var limits: [String: UInt64] {
        Dictionary(limitList.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    package init(version: String, portdVersion: String, client: UInt64, limits: [(String, UInt64)], features: [String]) {
        self.version = version
        self.portdVersion = portdVersion
        self.client = client
        self.limitList = limits.map { Limit(key: $0.0, value: $0.1) }
        self.features = features
    }

    /// The fields of HELLO's reply after the serial, in the page's order.
    package var fields: [NameServerField] {
        typealias F = NameServerProtocol.Field
        var f: [NameServerField] = [.init(F.protocol, version), .init(F.version, portdVersion), .init(F.client, client)]
        for l in limitList { f.append(.init(l.key, l.value)) }
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
