// NameOwnerChange: a change of a name's owner, D-Bus's NameOwnerChanged,
// as portd tells a watcher in NAME_OWNER_CHANGED: the fields "name=",
// "event=", and "old=" and "new=" (each an owner, "PID:UID:CLIENT", absent
// when there is none). Written (`fields`) and read (`init(record:)`) here
// only.

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

    /// The fields of NAME_OWNER_CHANGED after the serial.
    var fields: [NameServerField] {
        typealias F = NameServerProtocol.Field
        var f: [NameServerField] = [.init(F.name, name), .init(F.event, event.description)]
        if let oldOwner { f.append(.init(F.old, oldOwner.encoded)) }
        if let newOwner { f.append(.init(F.new, newOwner.encoded)) }
        return f
    }

    /// Reads the fields of NAME_OWNER_CHANGED.
    package init<Port>(record r: NameServerRecord<Port>) throws(NameServerProtocol.Violation) {
        typealias F = NameServerProtocol.Field
        guard let name = r.value(F.name), let event = r.value(F.event) else {
            throw .init("NAME_OWNER_CHANGED needs name= and event=")
        }
        func owner(_ key: String) throws(NameServerProtocol.Violation) -> NameOwner.Process? {
            guard r.value(key) != nil else { return nil }
            return try r.owner(key, in: "NAME_OWNER_CHANGED")
        }
        self.init(
            name: name, event: NameServerProtocol.OwnerEvent(rawValue: event).map(Event.known) ?? .other(event),
            oldOwner: try owner(F.old), newOwner: try owner(F.new))
    }
}
