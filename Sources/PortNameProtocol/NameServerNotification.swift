// NameServerNotification: the messages portd sends on its own, not as a
// reply, to a port a client gave it: NAME_OWNER_CHANGED to a watcher,
// NAME_ACQUIRED to a queued registrant that got the name, NAME_LOST to an
// owner another client replaced, WATCH_OVERFLOW to a watcher that fell
// behind (the last message of its watch). portd builds them here (`msgid`,
// `components`); the client reads them with `init(msgid:components:)`.
//
// Invariants: the message id alone says which one it is; NAME_ACQUIRED
// carries the name and the listening socket, NAME_LOST the name and the new
// owner's "pid=" and "uid=". Reading is lenient where the client always
// was: NAME_LOST's missing fields read as 0, NAME_ACQUIRED's name as "".
// Pure: generic over the port type, no I/O.

/// A message portd sends to a client's port on its own.
package enum NameServerNotification<Port> {
    /// NAME_OWNER_CHANGED, to a watcher.
    case ownerChanged(NameOwnerChange)
    /// NAME_ACQUIRED: a queued registrant owns `name` now; `listening` is its socket.
    case acquired(name: String, listening: Port)
    /// NAME_LOST: `owner` replaced the receiver as the owner of `name`.
    case lost(name: String, to: NameOwner.Process)
    /// WATCH_OVERFLOW: the watcher's queue was full, `missed` changes were
    /// not delivered, and the watch has ended.
    case watchOverflow(missed: Int)

    package typealias Component = NameServerComponent<Port>

    package var msgid: UInt32 {
        switch self {
        case .ownerChanged: NameServerProtocol.MessageID.nameOwnerChanged
        case .acquired: NameServerProtocol.MessageID.nameAcquired
        case .lost: NameServerProtocol.MessageID.nameLost
        case .watchOverflow: NameServerProtocol.MessageID.watchOverflow
        }
    }

    /// The message's components, in the protocol's order.
    package var components: [Component] {
        switch self {
        case .ownerChanged(let change): change.texts.map(Component.text)
        case .acquired(let name, let listening): [.text(name), .port(listening)]
        case .lost(let name, let owner): ([name] + owner.fields).map(Component.text)
        case .watchOverflow(let missed): [.text(NameServerProtocol.field(NameServerProtocol.Field.missed, missed))]
        }
    }

    /// Reads a message that came to a client's port.
    package init(msgid: UInt32, components: [Component]) throws(NameServerProtocol.Violation) {
        let texts = components.map(\.text)
        switch msgid {
        case NameServerProtocol.MessageID.nameOwnerChanged:
            self = .ownerChanged(try NameOwnerChange(msgid: msgid, texts: texts))
        case NameServerProtocol.MessageID.nameAcquired:
            guard let port = components.lazy.compactMap({ if case .port(let p) = $0 { p } else { nil } }).first else {
                throw .init("NAME_ACQUIRED without a port")
            }
            self = .acquired(name: texts.first.flatMap { $0 } ?? "", listening: port)
        case NameServerProtocol.MessageID.nameLost:
            let words = texts.compactMap { $0 }
            func field(_ key: String) -> Substring? {
                words.lazy.compactMap { NameServerProtocol.value(ofField: key, in: $0) }.first
            }
            typealias F = NameServerProtocol.Field
            self = .lost(
                name: words.first ?? "",
                to: .init(pid: field(F.pid).flatMap { Int32($0) } ?? 0, uid: field(F.uid).flatMap { UInt32($0) } ?? 0))
        case NameServerProtocol.MessageID.watchOverflow:
            let missed = texts.lazy.compactMap { $0.flatMap { NameServerProtocol.value(ofField: NameServerProtocol.Field.missed, in: $0) } }.first
            self = .watchOverflow(missed: missed.flatMap { Int($0) } ?? 0)
        default:
            throw .init("msgid \(msgid) is not a notification of portd")
        }
    }
}

extension NameServerNotification: Sendable where Port: Sendable {}
