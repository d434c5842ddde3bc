// NameServerReply: the body of every name-server message (NameServerRecord:
// "key=value" fields in order, then ports) and one reply of portd to a
// request, the one type both sides use: portd builds replies with the
// constructors below (one per answer of portd-protocol(7)), the client
// parses what came back with `init(msgid:components:)` and reads its
// fields and ports.
//
// Invariants: every data component is one field, "KEY=VALUE", KEY one or
// more of a-z, 0-9 and "_" (a component without "=", with another key, or
// that is not UTF-8 is a violation, never guessed at); the first field of
// a reply is "serial=N"; an ERROR reply's second field is "error=WORD" and
// its third "message=TEXT"; port components come after every field; field
// lookups take the first field with the key; the constructors put fields
// in the order the page and the golden bytes fix. Pure: generic over the
// port type, no I/O.

/// One "key=value" field of a name-server message.
public struct NameServerField: Sendable, Hashable, CustomStringConvertible {
    public var key: String
    public var value: String

    public init(_ key: String, _ value: some CustomStringConvertible) {
        self.key = key
        self.value = value.description
    }

    /// "KEY=VALUE", the component's text.
    public var description: String { "\(key)=\(value)" }

    /// "KEY=VALUE" as the component's bytes (UTF-8), made without the
    /// text in between.
    package var bytes: [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(key.utf8.count + 1 + value.utf8.count)
        b.append(contentsOf: key.utf8)
        b.append(UInt8(ascii: "="))
        b.append(contentsOf: value.utf8)
        return b
    }

    /// Reads "KEY=VALUE"; nil when the text is not a field.
    package init?(text: String) {
        // On the text's UTF-8 bytes in place (a received component's text
        // is native, so contiguous): the key checked and both halves made
        // in one pass, without the String.Index and Substring steps.
        var text = text
        let halves = text.withUTF8 { (utf8) -> (key: String, value: String)? in
            guard let eq = utf8.firstIndex(of: UInt8(ascii: "=")), eq > 0 else { return nil }
            for b in utf8[..<eq] where !Self.isKeyByte(b) { return nil }
            return (
                String(decoding: UnsafeBufferPointer(rebasing: utf8[..<eq]), as: UTF8.self),
                String(decoding: UnsafeBufferPointer(rebasing: utf8[(eq + 1)...]), as: UTF8.self)
            )
        }
        guard let halves else { return nil }
        self.key = halves.key
        self.value = halves.value
    }

    private static func isKeyByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
            || b == UInt8(ascii: "_")
    }
}

/// The fields and ports of a name-server message.
package struct NameServerRecord<Port> {
    package typealias Component = NameServerComponent<Port>

    /// The fields, in order.
    package var fields: [NameServerField]
    /// The port components, in order.
    package var ports: [Port]

    package init(_ fields: [NameServerField], ports: [Port] = []) {
        self.fields = fields
        self.ports = ports
    }

    /// Takes apart the components of a message that came in.
    package init(parsing components: [Component], what: String) throws(NameServerProtocol.Violation) {
        var fields: [NameServerField] = []
        var ports: [Port] = []
        fields.reserveCapacity(components.count)
        // Unspecialized here (generic over the port), so the loop keeps to
        // what needs no run-time metadata: counted by hand (`enumerated()`
        // looks up the tuple's and the iterator's metadata on every step),
        // and a flag for "a port came" (each
        // `ports.isEmpty` looks up `[Port]`'s).
        var index = -1
        var sawPort = false
        for component in components {
            index += 1
            switch component {
            case .port(let port):
                ports.append(port)
                sawPort = true
            case .text(let text):
                guard !sawPort else { throw .init("component \(index) of \(what) is a field after a port") }
                guard let field = NameServerField(text: text) else {
                    throw .init("component \(index) of \(what) (\"\(text.prefix(64))\") is not a key=value field")
                }
                fields.append(field)
            case .binary:
                throw .init("component \(index) of \(what) is not UTF-8 text")
            }
        }
        self.fields = fields
        self.ports = ports
    }

    /// The components to send: every field, then every port.
    package var components: [Component] {
        var all: [Component] = []
        all.reserveCapacity(fields.count + ports.count)
        for f in fields { all.append(.text(f.description)) }
        for p in ports { all.append(.port(p)) }
        return all
    }

    /// The value of the first field with this key.
    package func value(_ key: String) -> String? {
        for f in fields where f.key == key { return f.value }
        return nil
    }

    /// The values of every field with this key, in order.
    package func values(_ key: String) -> [String] {
        fields.compactMap { $0.key == key ? $0.value : nil }
    }

    /// A required integer field.
    package func integer<T: FixedWidthInteger>(
        _ key: String, as: T.Type = T.self, in what: String
    ) throws(NameServerProtocol.Violation) -> T {
        guard let text = value(key) else { throw .init("\(what) lacks \(key)=") }
        guard let value = T(text) else { throw .init("\(key)=\(text) in \(what) is not a number") }
        return value
    }

    /// A required owner field ("PID:UID:CLIENT").
    package func owner(_ key: String, in what: String) throws(NameServerProtocol.Violation) -> NameOwner.Process {
        guard let text = value(key) else { throw .init("\(what) lacks \(key)=") }
        guard let p = NameOwner.Process(encoded: text) else { throw .init("\(key)=\(text) in \(what) is not PID:UID:CLIENT") }
        return p
    }

    /// The serial ("serial=N"), when the first field is one.
    package var serial: UInt32? {
        guard let first = fields.first, first.key == NameServerProtocol.Field.serial else { return nil }
        return UInt32(first.value)
    }
}

extension NameServerRecord: Sendable where Port: Sendable {}

/// A reply of the name server, taken apart or to be sent.
package struct NameServerReply<Port> {
    package typealias Component = NameServerComponent<Port>
    typealias F = NameServerProtocol.Field

    /// ERROR (true) or REPLY.
    package let isError: Bool
    /// The request's serial, echoed (0: portd's own, a connection refusal).
    package let serial: UInt32
    /// Every field (the serial first) and port.
    package let record: NameServerRecord<Port>

    /// The reply's msgid.
    package var msgid: UInt32 { isError ? NameServerProtocol.MessageID.error : NameServerProtocol.MessageID.reply }
    /// The components to send.
    package var components: [Component] { record.components }
    /// The port components, in order.
    package var ports: [Port] { record.ports }

    /// Takes apart a reply that came in.
    package init(msgid: UInt32, components: [Component]) throws(NameServerProtocol.Violation) {
        switch msgid {
        case NameServerProtocol.MessageID.reply: isError = false
        case NameServerProtocol.MessageID.error: isError = true
        default: throw .init("msgid 0x\(String(msgid, radix: 16)) is not a reply of portd")
        }
        record = try NameServerRecord(parsing: components, what: isError ? "an error reply" : "a reply")
        guard let serial = record.serial else { throw .init("the reply does not start with serial=N") }
        self.serial = serial
        if isError && record.value(F.error) == nil { throw .init("an error reply without error=") }
    }

    private init(isError: Bool, serial: UInt32, _ fields: [NameServerField], ports: [Port] = []) {
        self.isError = isError
        self.serial = serial
        self.record = NameServerRecord([NameServerField(F.serial, serial)] + fields, ports: ports)
    }

    /// The value of the first field with this key.
    package func value(_ key: String) -> String? { record.value(key) }

    /// The error word, when this is an ERROR reply (nil for a word this code does not know).
    package var errorWord: NameServerProtocol.ErrorWord? {
        guard isError, let w = record.value(F.error) else { return nil }
        return NameServerProtocol.ErrorWord(rawValue: w)
    }

    /// An ERROR reply's "error=" and "message=" (the word again when there is no message).
    package var error: (word: String, message: String)? {
        guard isError, let w = record.value(F.error) else { return nil }
        return (w, record.value(F.message) ?? w)
    }

    // MARK: Replies portd sends

    /// A successful reply: the serial, then `fields`, then `port`.
    package static func success(serial: UInt32, _ fields: [NameServerField], port: Port? = nil) -> Self {
        Self(isError: false, serial: serial, fields, ports: port.map { [$0] } ?? [])
    }

    /// An error reply: the serial, "error=WORD", "message=TEXT", then `extra`.
    package static func error(
        serial: UInt32, _ word: NameServerProtocol.ErrorWord, _ message: String, _ extra: [NameServerField] = []
    ) -> Self {
        Self(isError: true, serial: serial, [NameServerField(F.error, word.rawValue), NameServerField(F.message, message)] + extra)
    }

    /// REGISTER: the client owns `name`; the name's listening socket.
    package static func registered(serial: UInt32, name: String, listening: Port) -> Self {
        success(serial: serial, [.init(F.name, name), .init(F.result, NameServerProtocol.RegisterResult.registered.rawValue)], port: listening)
    }

    /// REGISTER: the client waits for `name` at `place` (1: next).
    package static func queued(serial: UInt32, name: String, place: Int) -> Self {
        success(serial: serial, [.init(F.name, name), .init(F.result, NameServerProtocol.RegisterResult.queued.rawValue), .init(F.place, place)])
    }

    /// REGISTER: "already-owned", with the owner.
    package static func alreadyOwned(serial: UInt32, name: String, by owner: NameOwner.Process) -> Self {
        error(serial: serial, .alreadyOwned, "\(name) is owned by pid \(owner.pid) (uid \(owner.uid))", [.init(F.owner, owner.encoded)])
    }

    /// A reply naming only the name the request was about (RELEASE, WATCH).
    package static func done(serial: UInt32, name: String?) -> Self {
        success(serial: serial, name.map { [NameServerField(F.name, $0)] } ?? [])
    }

    /// LOOKUP: the name, its owner, and a connection to its port.
    package static func found(serial: UInt32, name: String, owner: NameOwner.Process, connection: Port) -> Self {
        success(serial: serial, [.init(F.name, name), .init(F.owner, owner.encoded)], port: connection)
    }

    /// CHECKIN: the name and the declared port's listening socket.
    package static func checkedIn(serial: UInt32, name: String, listening: Port) -> Self {
        success(serial: serial, [.init(F.name, name)], port: listening)
    }

    /// OWNER: the owner, since when, the queue's length, whether another
    /// page follows, then one "queued=" per client of this page.
    package static func owner(serial: UInt32, _ owner: NameOwner, more: Bool) -> Self {
        var fields: [NameServerField] = [
            .init(F.name, owner.name), .init(F.owner, owner.owner.encoded), .init(F.since, owner.sinceMilliseconds),
            .init(F.queueLength, owner.queueLength),
        ]
        fields += owner.declaredFields
        fields.append(.init(F.more, more ? 1 : 0))
        for q in owner.queued { fields.append(.init(F.queued, q.encoded)) }
        return success(serial: serial, fields)
    }

    /// LIST: whether another page follows, then each entry's fields.
    package static func list(serial: UInt32, entries: [NameEntry], more: Bool) -> Self {
        var fields: [NameServerField] = [.init(F.more, more ? 1 : 0)]
        fields.reserveCapacity(1 + entries.count * 4)
        for e in entries { fields += e.fields }
        return success(serial: serial, fields)
    }

    /// STATUS: every field of `status`, in order.
    package static func status(serial: UInt32, _ status: NameServerStatus) -> Self {
        success(serial: serial, status.fields.map { NameServerField($0.key, $0.value) })
    }

    // MARK: Reading a reply that came in

    /// Whether a LIST or OWNER reply says another page follows.
    package var more: Bool { record.value(F.more) == "1" }

    /// The entries of a LIST reply: one per "name=" field and the fields after it.
    package func listPage() throws(NameServerProtocol.Violation) -> (entries: [NameEntry], more: Bool) {
        var entries: [NameEntry] = []
        var group: [NameServerField] = []
        func flush() throws(NameServerProtocol.Violation) {
            guard !group.isEmpty else { return }
            entries.append(try NameEntry(fields: group))
            group = []
        }
        for f in record.fields.dropFirst() {
            if f.key == F.name { try flush() }
            if f.key == F.name || !group.isEmpty { group.append(f) }
        }
        try flush()
        return (entries, more)
    }
}

extension NameServerReply: Sendable where Port: Sendable {}
