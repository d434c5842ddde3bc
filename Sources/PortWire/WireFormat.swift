// WireFormat: the constants of the port-message record, version 1. The
// format itself is specified byte by byte in man/portd-protocol.7, its one
// authoritative description; this file and the encoder/decoder implement it
// and the golden-byte tests pin it.
//
// The layout is deliberately not repeated here: read the man page. The
// names below follow its sections (header, flags, component table, kinds,
// message IDs).

/// Constants of the port-message wire format (see portd-protocol(7)).
public enum WireFormat {
    /// The first four bytes of every record: ASCII "port".
    public static let magicBytes: (UInt8, UInt8, UInt8, UInt8) = (0x70, 0x6F, 0x72, 0x74)
    /// `magicBytes` read as a little-endian UInt32.
    public static let magic: UInt32 = 0x7472_6F70
    /// The version this code writes and the only one it reads.
    public static let version: UInt8 = 1
    /// Bytes before the component table.
    public static let headerSize = 12
    /// Bytes per component table entry.
    public static let entrySize = 8
    /// The largest component count the header can express.
    public static let maxComponentCount = Int(UInt16.max)

    /// Header flag bits (byte 5).
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Descriptor 0 of the record is a send right for the reply.
        public static let replyPort = Flags(rawValue: 0x01)
        /// The sender waits for exactly one reply on this same connection
        /// (CFMessagePortSendRequest's one-shot reply right, without a
        /// descriptor): the receiver answers with one record on it, in order.
        public static let replyExpected = Flags(rawValue: 0x02)
        /// Every flag version 1 defines; any other bit set is an error.
        public static let known: Flags = [.replyPort, .replyExpected]
    }

    /// A component's kind (byte 0 of its table entry). 0 is never valid, so
    /// that zeroed memory does not decode as a component.
    public enum ComponentKind: UInt8, Sendable, Hashable, CustomStringConvertible {
        /// Inline bytes in the record's data area; length = their count.
        case data = 1
        /// A send right: the next descriptor; length must be 0.
        case port = 2
        /// Bytes in a sealed memfd: the next descriptor; length = bytes to
        /// read from it, at least 1.
        case largeData = 3

        public var description: String {
            switch self {
            case .data: "data"
            case .port: "port"
            case .largeData: "large-data"
            }
        }
    }

    /// Message IDs PortCore reserves for itself (the name-server protocol
    /// and future control messages). Applications use the rest; 100 is the
    /// check-in message by convention (kCheckinMessage of Apple's Run Loops guide).
    public static let reservedMessageIDs: ClosedRange<UInt32> = 0xFFFF_0000...0xFFFF_FFFF

    /// The check-in message ID of Apple's handshake.
    public static let checkInMessageID: UInt32 = 100
}
