// NameServerReply: one reply of portd to a name-server request, the one
// type both sides use: portd builds it with the constructors below (one
// per answer of portd-protocol(7)), the client parses what came back with
// `init(parsing:)` and reads its word, fields and ports. A reply is its
// components in order: the word, then "key=value" fields, free strings or
// ports, per request; an error reply is an error word and one "message=…".
//
// Invariants: the first component is a text word (a reply starting with a
// port, or holding data that is not UTF-8, is a violation, never guessed
// at); "key=value" lookups take the first component with that key; the
// constructors put components in the order the protocol and the golden
// bytes fix. Pure: generic over the port type, no I/O.

/// A reply of the name server, taken apart or to be sent.
package struct NameServerReply<Port> {
    package typealias Component = NameServerComponent<Port>

    /// Every component, in order, the word first.
    package let components: [Component]
    /// The first component: a `NameServerProtocol.ReplyWord` raw value, or something newer.
    package let word: String
    /// The text components after the word, in order.
    package let strings: [String]
    /// The port components, in order.
    package let ports: [Port]

    /// Takes apart a reply that came in (`msgid` only names it in a violation).
    package init(parsing components: [Component], msgid: UInt32) throws(NameServerProtocol.Violation) {
        var strings: [String] = []
        var ports: [Port] = []
        for (index, component) in components.enumerated() {
            switch component {
            case .port(let port):
                if index == 0 { throw .init("the reply starts with a port, not a word") }
                ports.append(port)
            case .text(let text):
                strings.append(text)
            case .binary:
                throw .init("component \(index) of the reply is not UTF-8 text")
            }
        }
        guard !strings.isEmpty else { throw .init("an empty reply (msgid \(msgid))") }
        self.components = components
        self.word = strings.removeFirst()
        self.strings = strings
        self.ports = ports
    }

    /// A reply to send: `word` followed by `rest`.
    private init(_ word: NameServerProtocol.ReplyWord, _ rest: [Component] = []) {
        components = [.text(word.rawValue)] + rest
        self.word = word.rawValue
        // Plain loops: a LIST page has a thousand components, and key-path
        // closures cost a metadata lookup each.
        var strings: [String] = []
        var ports: [Port] = []
        strings.reserveCapacity(rest.count)
        for component in rest {
            switch component {
            case .text(let text): strings.append(text)
            case .port(let port): ports.append(port)
            case .binary: break
            }
        }
        self.strings = strings
        self.ports = ports
    }

    // MARK: Replies portd sends

    /// A reply that is one word: "queued", "released", "not-owner",
    /// "watching", "not-declared".
    package static func word(_ word: NameServerProtocol.ReplyWord) -> Self {
        precondition(!word.isError, "an error reply carries a message: use error(_:_:)")
        return Self(word)
    }

    /// An error reply: an error word, then "message=…".
    package static func error(_ word: NameServerProtocol.ReplyWord, _ message: String) -> Self {
        precondition(word.isError, "\(word.rawValue) is not an error word")
        return Self(word, [.text(NameServerProtocol.field(NameServerProtocol.Field.message, message))])
    }

    /// REGISTER: "registered" and the name's listening socket.
    package static func registered(listening: Port) -> Self {
        Self(.registered, [.port(listening)])
    }

    /// REGISTER: "already-owned" and the owner.
    package static func alreadyOwned(by owner: NameOwner.Process) -> Self {
        Self(.alreadyOwned, owner.fields.map(Component.text))
    }

    /// LOOKUP: "found", a connection to the name's port, and its owner.
    package static func found(_ connection: Port, owner: NameOwner.Process) -> Self {
        Self(.found, [.port(connection)] + owner.fields.map(Component.text))
    }

    /// CHECKIN: "checked-in" and the declared port's listening socket.
    package static func checkedIn(listening: Port) -> Self {
        Self(.checkedIn, [.port(listening)])
    }

    /// OWNER: "ok", the owner, since when, one "queued=PID:UID" per
    /// process of this page of the queue (`owner.queued`), and "more" when
    /// the page did not reach the end of the queue.
    package static func owner(_ owner: NameOwner, more: Bool = false) -> Self {
        typealias F = NameServerProtocol.Field
        let queued = owner.queued.map { NameServerProtocol.field(F.queued, $0.colonPair) }
        return Self(
            .ok,
            (owner.owner.fields + [NameServerProtocol.field(F.since, owner.sinceMilliseconds)] + queued
                + (more ? [NameServerProtocol.listContinues] : []))
                .map(Component.text))
    }

    /// LIST: "ok", one line per entry (`NameEntry.listLine`), and "more"
    /// when the reply could not hold every name.
    package static func list(lines: [String], more: Bool) -> Self {
        Self(.ok, (lines + (more ? [NameServerProtocol.listContinues] : [])).map(Component.text))
    }

    /// STATUS: "ok" and every field of `status`, in order.
    package static func status(_ status: NameServerStatus) -> Self {
        Self(.ok, status.fields.map { .text(NameServerProtocol.field($0.key, $0.value)) })
    }

    // MARK: Reading a reply that came in

    /// The value of the first "key=value" component with this key.
    package func field(_ key: String) -> String? {
        strings.lazy.compactMap { NameServerProtocol.value(ofField: key, in: $0) }.first.map(String.init)
    }

    /// The values of every "key=value" component with this key, in order.
    package func fields(_ key: String) -> [String] {
        strings.compactMap { NameServerProtocol.value(ofField: key, in: $0) }.map(String.init)
    }

    /// Every "key=value" component, in order (components without "=" are skipped).
    package var keyValuePairs: [(key: String, value: String)] {
        strings.compactMap { s in
            guard let eq = s.firstIndex(of: "=") else { return nil }
            return (String(s[..<eq]), String(s[s.index(after: eq)...]))
        }
    }

    /// A required integer field.
    package func integer<T: FixedWidthInteger>(
        _ key: String, as: T.Type = T.self
    ) throws(NameServerProtocol.Violation) -> T {
        guard let text = field(key) else { throw .init("the \"\(word)\" reply lacks \(key)=") }
        guard let value = T(text) else { throw .init("\(key)=\(text) is not a number") }
        return value
    }

    /// The word as the protocol's, or nil for a word this code does not know.
    package var replyWord: NameServerProtocol.ReplyWord? { NameServerProtocol.ReplyWord(rawValue: word) }

    /// The error word and its message when this is an error reply of
    /// portd-protocol(7)'s Errors list; the message is the word itself
    /// when the reply has no "message=".
    package var error: (word: NameServerProtocol.ReplyWord, message: String)? {
        guard let known = replyWord, known.isError else { return nil }
        return (known, field(NameServerProtocol.Field.message) ?? word)
    }

    /// The owner in a "found" or "already-owned" reply (pid= and uid=).
    package func process() throws(NameServerProtocol.Violation) -> NameOwner.Process {
        typealias F = NameServerProtocol.Field
        return NameOwner.Process(pid: try integer(F.pid), uid: try integer(F.uid))
    }

    /// Whether an OWNER reply is one page of several: the queue goes on
    /// ("more" ends it); the client asks again with "from=N".
    package var ownerContinues: Bool { strings.last == NameServerProtocol.listContinues }

    /// The lines of a LIST reply, and whether more names follow ("more").
    package func listPage() throws(NameServerProtocol.Violation) -> (entries: [NameEntry], more: Bool) {
        var lines = strings[...]
        let more = lines.last == NameServerProtocol.listContinues
        if more { lines = lines.dropLast() }
        var entries: [NameEntry] = []
        for line in lines {
            guard let entry = NameEntry(listLine: line) else { throw .init("LIST line \"\(line)\"") }
            entries.append(entry)
        }
        return (entries, more)
    }
}

extension NameServerReply: Sendable where Port: Sendable {}
