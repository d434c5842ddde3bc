// NameServerNotification: the messages portd sends on its own, not as a
// reply, to a port a client gave it: NAME_OWNER_CHANGED to a watcher,
// NAME_ACQUIRED to a queued registrant that got the name, NAME_LOST to an
// owner another client replaced, WATCH_OVERFLOW to a watcher that fell
// behind (the last message of its watch). portd builds them here (`msgid`,
// `components`); the client reads them with `init(msgid:components:)`.
//
// Invariants: the message id alone says which one it is; the first field
// is "serial=N", the serial of the request that set the event up (the
// WATCH, or the REGISTER); NAME_ACQUIRED carries the name and the
// listening socket, NAME_LOST the name and "new=" (the new owner). Pure:
// generic over the port type, no I/O.

/// A message portd sends to a client's port on its own.
package enum NameServerNotification<Port> {
    /// NAME_OWNER_CHANGED, to a watcher.
    case ownerChanged(serial: UInt32, NameOwnerChange)
    /// NAME_ACQUIRED: a queued registrant owns `name` now; `listening` is its socket.
    case acquired(serial: UInt32, name: String, listening: Port)
    /// NAME_LOST: `owner` replaced the receiver as the owner of `name`.
    case lost(serial: UInt32, name: String, to: NameOwner.Process)
    /// WATCH_OVERFLOW: the watcher's queue was full, `missed` changes were
    /// not delivered, and the watch has ended.
    case watchOverflow(serial: UInt32, missed: Int)

    package typealias Component = NameServerComponent<Port>
    typealias F = NameServerProtocol.Field

    package var msgid: UInt32 {
        switch self {
        case .ownerChanged: NameServerProtocol.MessageID.nameOwnerChanged
        case .acquired: NameServerProtocol.MessageID.nameAcquired
        case .lost: NameServerProtocol.MessageID.nameLost
        case .watchOverflow: NameServerProtocol.MessageID.watchOverflow
        }
    }

    /// The serial of the request the event belongs to.
    package var serial: UInt32 {
        switch self {
        case .ownerChanged(let s, _), .acquired(let s, _, _), .lost(let s, _, _), .watchOverflow(let s, _): s
        }
    }

    /// The message as a record: its fields and ports, in the protocol's order.
    package var record: NameServerRecord<Port> {
        let head = NameServerField(F.serial, serial)
        switch self {
        case .ownerChanged(_, let change):
            return NameServerRecord([head] + change.fields)
        case .acquired(_, let name, let listening):
            return NameServerRecord([head, .init(F.name, name)], ports: [listening])
        case .lost(_, let name, let owner):
            return NameServerRecord([head, .init(F.name, name), .init(F.new, owner.encoded)])
        case .watchOverflow(_, let missed):
            return NameServerRecord([head, .init(F.missed, missed)])
        }
    }

    /// The message's components, in the protocol's order.
    package var components: [Component] { record.components }

    /// Reads a message that came to a client's port.
    package init(msgid: UInt32, components: [Component]) throws(NameServerProtocol.Violation) {
        typealias ID = NameServerProtocol.MessageID
        guard [ID.nameOwnerChanged, ID.nameAcquired, ID.nameLost, ID.watchOverflow].contains(msgid) else {
            throw .init("msgid 0x\(String(msgid, radix: 16)) is not an event of portd")
        }
        let r = try NameServerRecord(parsing: components, what: "an event of portd")
        guard let serial = r.serial else { throw .init("an event of portd does not start with serial=N") }
        switch msgid {
        case ID.nameOwnerChanged:
            self = .ownerChanged(serial: serial, try NameOwnerChange(record: r))
        case ID.nameAcquired:
            guard let port = r.ports.first else { throw .init("NAME_ACQUIRED without a port") }
            guard let name = r.value(F.name) else { throw .init("NAME_ACQUIRED lacks name=") }
            self = .acquired(serial: serial, name: name, listening: port)
        case ID.nameLost:
            guard let name = r.value(F.name) else { throw .init("NAME_LOST lacks name=") }
            self = .lost(serial: serial, name: name, to: try r.owner(F.new, in: "NAME_LOST"))
        default:
            self = .watchOverflow(serial: serial, missed: try r.integer(F.missed, in: "WATCH_OVERFLOW"))
        }
    }
}

extension NameServerNotification: Sendable where Port: Sendable {}
