// NameServerComponent: one component of a name-server message as the
// protocol sees it: text (a data component holding UTF-8), a port, or data
// that is not text. Generic over the port's type, so that the vocabulary
// needs no ports of its own: the client and portd use their send rights,
// tests whatever they like. The one adapter to port messages is in
// PortNameClient (PCPortMessage+NameServerProtocol).

/// One component of a name-server message.
package enum NameServerComponent<Port> {
    /// A data component holding UTF-8.
    case text(String)
    /// A port (a send right on the wire).
    case port(Port)
    /// A data component that is not UTF-8: never part of a valid message.
    case binary

    /// The text, or nil for a port or binary data.
    var text: String? {
        if case .text(let s) = self { return s }
        return nil
    }
}

extension NameServerComponent: Sendable where Port: Sendable {}
