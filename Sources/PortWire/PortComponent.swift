// PortComponent: one component of a port message as an owned value: bytes,
// a send right (descriptor) or a large component in a sealed memfd. Used to
// encode and to copy a decoded record out of its receive buffer. Descriptors
// here are plain numbers: who closes them is decided by the layer above
// (the encoder only reads them; a copied-out record hands them to the caller).

/// One component of a port message.
public enum PortComponent: Sendable, Hashable {
    /// Inline bytes.
    case data([UInt8])
    /// A send right: a connected SOCK_SEQPACKET descriptor.
    case port(Int32)
    /// `length` bytes held by a sealed memfd (see `MemFD.makeSealed`).
    case largeData(memfd: Int32, length: Int)

    /// The kind this component has on the wire.
    public var kind: WireFormat.ComponentKind {
        switch self {
        case .data: .data
        case .port: .port
        case .largeData: .largeData
        }
    }
}
