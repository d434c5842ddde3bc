// PortComponent: one component of a port message as a plain value: bytes,
// a send right (descriptor) or a large component in a sealed memfd, for
// WireEncoder and for copying a decoded record out of its receive buffer in
// tests and tools. Descriptors here are plain numbers that this pure layer
// never owns (the encoder copies them; a copied-out record names the
// numbers it came with), which is why the type is `package`: PortCore's
// users see a message's components as PCPortMessage.Component, whose send
// rights and shared memory own their descriptors.

/// One component of a port message.
package enum PortComponent: Sendable, Hashable {
    /// Inline bytes.
    case data([UInt8])
    /// A send right: a connected SOCK_SEQPACKET descriptor.
    case port(Int32)
    /// `length` bytes held by a sealed memfd (see `MemFD.makeSealed`).
    case largeData(memfd: Int32, length: Int)

    /// The kind this component has on the wire.
    var kind: WireFormat.ComponentKind {
        switch self {
        case .data: .data
        case .port: .port
        case .largeData: .largeData
        }
    }
}
