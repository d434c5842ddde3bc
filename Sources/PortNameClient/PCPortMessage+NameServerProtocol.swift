// PCPortMessage+NameServerProtocol: the one adapter between port messages
// and the name server's vocabulary (PortNameProtocol), for both sides:
// portd turns the replies and notifications it builds into messages, the
// client turns the messages it receives into components to parse. A text
// is a data component holding its UTF-8 bytes; a port is a send right.
//
// Invariants: a received data or large-data component that is not UTF-8
// is `.binary`, never guessed at; nothing built by the vocabulary is
// `.binary`, so sending one is a programming error.

import PortMessaging
import PortNameProtocol
import PortWire

extension PCPortMessage {
    /// The reply `reply` (REPLY or ERROR).
    package init(reply: NameServerReply<SendRight>) {
        self.init(msgid: reply.msgid, components: Self.components(of: reply.record))
    }

    /// A request: `msgid`, then "serial=N" and `fields`.
    package init(request msgid: UInt32, serial: UInt32, _ fields: [NameServerField]) {
        let record = NameServerRecord<SendRight>([NameServerField(NameServerProtocol.Field.serial, serial)] + fields)
        self.init(msgid: msgid, components: Self.components(of: record))
    }

    /// `record.components.map(component)`, each field's bytes made at once
    /// (no "KEY=VALUE" string, no array of the vocabulary's components in
    /// between: every request the client sends is built here).
    private static func components(of record: NameServerRecord<SendRight>) -> [Component] {
        var all: [Component] = []
        all.reserveCapacity(record.fields.count + record.ports.count)
        for f in record.fields { all.append(.data(f.bytes)) }
        for p in record.ports { all.append(.port(p)) }
        return all
    }

    /// The notification `notification`, with its own msgid.
    package init(notification: NameServerNotification<SendRight>) {
        self.init(msgid: notification.msgid, components: Self.components(of: notification.record))
    }

    /// The components as the name server's vocabulary reads them.
    var nameServerComponents: [NameServerComponent<SendRight>] {
        components.map { component in
            switch component {
            case .port(let right): .port(right)
            case .data, .sharedMemory: component.string.map { .text($0) } ?? .binary
            }
        }
    }
}
