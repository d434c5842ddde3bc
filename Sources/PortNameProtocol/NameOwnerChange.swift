// NameOwnerChange: a change of a name's owner, D-Bus's NameOwnerChanged,
// as portd tells a watcher in NAME_OWNER_CHANGED: four text components,
// NAME, EVENT, OLD and NEW, an owner written "pid=P,uid=U" or "" for none.
// Written (`texts`) and read (`init(msgid:texts:)`) here only.

/// A change of a name's owner (NAME_OWNER_CHANGED), D-Bus's NameOwnerChanged.
public struct NameOwnerChange: Sendable, Hashable {
    /// What happened: registered, released, replaced; or a word a newer portd uses.
    public enum Event: Sendable, Hashable, CustomStringConvertible {
        case known(NameServerProtocol.OwnerEvent)
        case other(String)

        public var description: String {
            switch self {
            case .known(let e): e.rawValue
            case .other(let s): s
            }
        }
    }

    public var name: String
    public var event: Event
    /// The owner before the change (nil when the name was free).
    public var oldOwner: NameOwner.Process?
    /// The owner after the change (nil when the name is now free).
    public var newOwner: NameOwner.Process?

    public init(name: String, event: Event, oldOwner: NameOwner.Process?, newOwner: NameOwner.Process?) {
        self.name = name
        self.event = event
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }

    /// NAME, EVENT, OLD, NEW: the components of NAME_OWNER_CHANGED.
    var texts: [String] {
        [name, event.description, oldOwner?.ownerField ?? "", newOwner?.ownerField ?? ""]
    }

    /// Parses the message portd sends a watcher; `texts` are its
    /// components, nil for one that is not text.
    package init(msgid: UInt32, texts: [String?]) throws(NameServerProtocol.Violation) {
        guard msgid == NameServerProtocol.MessageID.nameOwnerChanged else {
            throw .init("msgid \(msgid) is not NAME_OWNER_CHANGED")
        }
        guard texts.count >= 4, let name = texts[0], let event = texts[1], let old = texts[2], let new = texts[3] else {
            throw .init("NAME_OWNER_CHANGED needs four text components (NAME, EVENT, OLD, NEW)")
        }
        func owner(_ text: String) throws(NameServerProtocol.Violation) -> NameOwner.Process? {
            if text.isEmpty { return nil }
            guard let p = NameOwner.Process(ownerField: text) else { throw .init("owner \"\(text)\"") }
            return p
        }
        self.init(
            name: name, event: NameServerProtocol.OwnerEvent(rawValue: event).map(Event.known) ?? .other(event),
            oldOwner: try owner(old), newOwner: try owner(new))
    }
}
