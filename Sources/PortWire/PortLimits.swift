// PortLimits: bounds on everything a peer controls in one message. The
// decoder enforces them before it reads or allocates; the encoder enforces
// the same ones so that a sender fails at once instead of having its
// connection dropped by the receiver.
//
// Where the record limit comes from (measured, not guessed): on Linux the
// kernel refuses a SOCK_SEQPACKET record longer than the sender's
// sk_sndbuf minus a small overhead with EMSGSIZE (unix_dgram_sendmsg). At the
// default SO_SNDBUF of 212,992 bytes the largest record that goes through is
// 212,960 bytes on Linux 6.18 (this machine; overhead 32) and was 212,892 on
// an older kernel (overhead 100). RecordLimitTests (PortSystemTests)
// measures it again on every run and checks that `maxRecordSize` fits. The
// default keeps 16 KiB of margin below the smallest figure so that a record
// PortCore accepts can be sent by any peer at default buffer sizes; larger
// payloads go as sealed memfds.
//
// Where the limit on one large component comes from: a receiver maps a
// sealed memfd read-only, and what it reads of it is charged to it, not to
// the sender, wherever the sender left a hole: a sender that only
// ftruncate(2)s a memfd to 1 GiB and seals it pays nothing, and a receiver
// that reads the component allocates that 1 GiB of shared memory. PortCore's
// own senders never send a hole (`send` spills each data component of 4 KiB
// or more of a message too large for one record into a memfd it fills, and
// `SharedMemory(copying:)` fills one too), and portd takes no large data at
// all on its control socket. The default, 256 MiB, bounds what one
// component costs a receiver while leaving room for the largest payloads
// the project documents and measures (portctl's 100 MiB file, the 64 MiB
// benchmark); a service that expects small messages lowers it (and
// `maxLargeDataBytes`, which bounds the sum over one message).

/// Limits on one port message. The defaults suit the default socket buffer
/// sizes; both ends of a connection should use the same values.
public struct PortLimits: Sendable, Hashable {
    /// The kernel's cap on descriptors in one SCM_RIGHTS message (SCM_MAX_FD).
    public static let kernelMaxDescriptors = 253

    /// The largest SOCK_SEQPACKET record measured at the default SO_SNDBUF
    /// (212,992) on the development machine (Linux 6.18). For reference only:
    /// tests re-measure it.
    public static let measuredRecordLimitAtDefaultSendBuffer = 212_960

    /// The default `maxRecordSize`: 192 KiB, 16,352 bytes below the
    /// measured limit.
    public static let defaultMaxRecordSize = 196_608

    /// The default `maxLargeComponentBytes`: 256 MiB (see the top of this file).
    public static let defaultMaxLargeComponentBytes: UInt64 = 256 << 20

    /// Bytes in one record: header, table and inline data.
    public var maxRecordSize: Int
    /// Components in one message (at most 65,535, what the header can say).
    public var maxComponents: Int
    /// Descriptors in one record, reply port included (at most 253).
    public var maxDescriptors: Int
    /// Sum of the lengths of the large-data components of one message.
    public var maxLargeDataBytes: UInt64
    /// The length of one large-data (shared-memory) component: a longer
    /// one is `WireError.largeComponentTooLarge`, for a receiver when it
    /// decodes the record, before it maps anything (that connection
    /// closed), for a sender before it sends.
    public var maxLargeComponentBytes: UInt64

    /// Limits with the given values; each is clamped to what the format and
    /// the kernel allow.
    public init(
        maxRecordSize: Int = PortLimits.defaultMaxRecordSize,
        maxComponents: Int = 1024,
        maxDescriptors: Int = PortLimits.kernelMaxDescriptors,
        maxLargeDataBytes: UInt64 = 1 << 30,
        maxLargeComponentBytes: UInt64 = PortLimits.defaultMaxLargeComponentBytes
    ) {
        self.maxRecordSize = max(maxRecordSize, WireFormat.headerSize)
        self.maxComponents = min(max(maxComponents, 0), WireFormat.maxComponentCount)
        self.maxDescriptors = min(max(maxDescriptors, 0), Self.kernelMaxDescriptors)
        self.maxLargeDataBytes = maxLargeDataBytes
        self.maxLargeComponentBytes = maxLargeComponentBytes
    }

    /// 192 KiB records, 1,024 components, 253 descriptors, 1 GiB of large
    /// data, at most 256 MiB of it in one component.
    public static let `default` = PortLimits()

    /// The largest inline data a single-component message can carry: what
    /// is left of `maxRecordSize` after the header and one table entry.
    public var maxInlineDataOfOneComponent: Int {
        maxRecordSize - WireFormat.headerSize - WireFormat.entrySize
    }
}
