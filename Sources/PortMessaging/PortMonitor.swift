// PortMonitor: the vocabulary of port monitoring, in which a monitorable
// port (PCPort.allowsMonitoring) copies each message it delivers to the
// monitors that subscribed to it, and portd stays out of the data path.
//
// The exchange (msgids in the range reserved for PortCore and portd):
//   SUBSCRIBE (request, msgid 0xffff_f001): no component; its reply port is
//     a right to the monitor's own port, where the copies go. The reply
//     (msgid 0xffff_f001) is one word: "monitoring", or "refused",
//     "not-monitorable", "limit" or "bad-request" followed by a reason.
//   COPY (msgid 0xffff_f002, sent to the monitor's port): two data
//     components, a header and the bytes shown (see `copy(of:...)`); never
//     a descriptor and never a reply port. A copy of a delivered message,
//     or (the reply flag) of the reply the port sent for a request when
//     its handler returned, whose sequence is then its request's. A reply
//     sent later, through a reply right the handler kept, is not copied.
//   MISSED (msgid 0xffff_f003, sent to the monitor's port once it has room
//     again after copies were dropped): one data component, the number of
//     copies dropped and the owner's time (two u64, little-endian).
//
// Privacy rules, enforced by the owner's port (MonitorHub), never by the
// monitor: a port copies nothing unless its owner made it monitorable; a
// subscription is accepted only when the kernel's credentials of the
// SUBSCRIBE record (SCM_CREDENTIALS, which a process cannot forge without
// privilege) name the owner's own uid, or root. SO_PEERCRED cannot be the
// check: portd makes every looked-up connection on its clients' behalf, so
// it names portd. Descriptors of a monitored message (rights, shared
// memory, a reply port) are never passed on: the copy says how many there
// were. A copy holds at most `copyByteBudget` bytes of the message's data;
// the header gives every component's full length.
//
// Invariants of the header (little-endian), checked by `MonitoredMessage`
// before anything is read: 48 fixed bytes, then 16 per component; the
// shown lengths add up to the second component's length, and each is at
// most its component's length.

import PortSystem
import PortWire

/// The constants of port monitoring (a caseless namespace).
public enum PortMonitor {
    /// The SUBSCRIBE request a monitor sends to a port.
    public static let subscribeMessageID: UInt32 = 0xFFFF_F001
    /// A copy of a delivered message, sent to a monitor's port.
    public static let copyMessageID: UInt32 = 0xFFFF_F002
    /// Tells a monitor how many copies were dropped since the last one it got.
    public static let missedMessageID: UInt32 = 0xFFFF_F003
    /// The most monitors one port serves at once.
    public static let maxMonitors = 8
    /// The most bytes of a message's data one copy carries (the rest is
    /// counted, not copied), so a copy fits one record and costs the owner
    /// a bounded copy whatever the message's size.
    public static let copyByteBudget = 65_536

    /// The first word of SUBSCRIBE's reply.
    public enum Answer: String, Sendable, CaseIterable {
        /// Subscribed: copies follow.
        case monitoring
        /// The subscriber is not the owner's uid (nor root).
        case refused
        /// The port's owner did not allow monitoring.
        case notMonitorable = "not-monitorable"
        /// The port has `maxMonitors` monitors already.
        case limit
        /// SUBSCRIBE without a port for the copies.
        case badRequest = "bad-request"
    }

    /// The reply to SUBSCRIBE: `answer`, then `reason` when given.
    static func reply(_ answer: Answer, _ reason: String? = nil) -> PCPortMessage {
        PCPortMessage(msgid: subscribeMessageID, strings: [answer.rawValue] + (reason.map { [$0] } ?? []))
    }

    /// MISSED: `missed` copies were dropped.
    static func missedNotice(_ missed: UInt64, time: UInt64) -> PCPortMessage {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: missed.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: time.littleEndian) { bytes.append(contentsOf: $0) }
        return PCPortMessage(msgid: missedMessageID, components: [.data(bytes)])
    }

    /// The count of a MISSED notice; nil when `message` is not one.
    static func missedCount(_ message: PCPortMessage) -> UInt64? {
        guard message.msgid == missedMessageID, message.components.count == 1,
            case .data(let b) = message.components[0], b.count == 16
        else { return nil }
        var v: UInt64 = 0
        for i in (0..<8).reversed() { v = v << 8 | UInt64(b[i]) }
        return v
    }

    // MARK: The copy

    static let headerVersion: UInt8 = 1
    static let fixedHeaderSize = 48
    static let entrySize = 16

    enum Flag {
        static let request: UInt8 = 1
        static let replyPort: UInt8 = 2
        static let sender: UInt8 = 4
        static let reply: UInt8 = 8
    }

    enum Kind: UInt8 {
        case data = 1
        case port = 2
        case sharedMemory = 3
    }

    /// The bytes of a copy of `message`, shared by every monitor's copy:
    /// at most `copyByteBudget` bytes, taken from the components in order.
    /// Returns them with each component's kind, length and shown length.
    static func copyBody(of message: PCPortMessage) -> (bytes: [UInt8], entries: [(Kind, UInt64, UInt32)]) {
        var bytes: [UInt8] = []
        var entries: [(Kind, UInt64, UInt32)] = []
        entries.reserveCapacity(message.components.count)
        func take(_ raw: UnsafeRawBufferPointer) -> UInt32 {
            let n = min(raw.count, copyByteBudget - bytes.count)
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[..<n]))
            return UInt32(n)
        }
        for c in message.components {
            switch c {
            case .data(let b):
                entries.append((.data, UInt64(b.count), b.withUnsafeBytes(take)))
            case .sharedMemory(let m):
                entries.append((.sharedMemory, UInt64(m.count), m.withUnsafeBytes(take)))
            case .port:
                entries.append((.port, 0, 0))
            }
        }
        return (bytes, entries)
    }

    /// The copy of a delivered message for one monitor: `sequence` counts
    /// the messages the port delivered since this monitor subscribed (so
    /// the first copy is 1), `missed` the copies dropped since the last
    /// one that reached it. With `reply`, the copy of the reply the port
    /// sent, and `sequence` that of the request it answers.
    static func copy(
        of message: PCPortMessage, body: (bytes: [UInt8], entries: [(Kind, UInt64, UInt32)]), request: Bool,
        reply: Bool = false, descriptors: Int, sequence: UInt64, missed: UInt64, time: UInt64
    ) -> PCPortMessage {
        var h: [UInt8] = []
        h.reserveCapacity(fixedHeaderSize + entrySize * body.entries.count)
        func le<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { h.append(contentsOf: $0) } }
        var flags: UInt8 = 0
        if request { flags |= Flag.request }
        if reply { flags |= Flag.reply }
        // A request's `replyPort` is the port's own one-shot reply right;
        // what the sender passed is `passedReplyPort`.
        if (request ? message.passedReplyPort : message.replyPort) != nil { flags |= Flag.replyPort }
        if message.sender != nil { flags |= Flag.sender }
        let sender = message.sender ?? Credentials(pid: 0, uid: 0, gid: 0)
        le(headerVersion)
        le(flags)
        le(UInt16(0))
        le(message.msgid)
        le(sender.pid)
        le(sender.uid)
        le(sender.gid)
        le(UInt32(descriptors))
        le(sequence)
        le(missed)
        le(time)
        for (kind, length, shown) in body.entries {
            le(kind.rawValue)
            le(UInt8(0))
            le(UInt16(0))
            le(shown)
            le(length)
        }
        return PCPortMessage(msgid: copyMessageID, components: [.data(h), .data(body.bytes)])
    }
}

/// A message another process's port delivered, as its copy to a monitor
/// shows it: never the descriptors (only how many there were), and at
/// most `PortMonitor.copyByteBudget` bytes of data.
public struct MonitoredMessage: Sendable {
    /// One component of the monitored message.
    public struct Component: Sendable {
        public enum Kind: Sendable { case data, port, sharedMemory }
        public let kind: Kind
        /// The component's full length (0 for a port).
        public let length: UInt64
        /// Its first bytes (at most `length`; fewer when the copy's budget ran out).
        public let bytes: [UInt8]
    }

    public let msgid: UInt32
    /// Who sent it, as the kernel told the owner's port (nil when it did not).
    public let sender: Credentials?
    /// The message was a request (its sender waits for a reply).
    public let isRequest: Bool
    /// The message is the reply the port sent to the request whose
    /// `sequence` this copy carries.
    public let isReply: Bool
    /// The message carried a reply port.
    public let hasReplyPort: Bool
    /// How many descriptors (rights, shared memory, a reply port) it
    /// carried; none reached the monitor.
    public let descriptorCount: Int
    /// Messages the port delivered since this monitor subscribed, this one
    /// included; for a reply, the request's.
    public let sequence: UInt64
    /// Copies dropped before this one because the monitor's queue was full.
    public let missed: UInt64
    /// When the owner's port delivered it, or sent it for a reply (Unix
    /// milliseconds, the owner's clock).
    public let deliveredAt: UInt64
    public let components: [Component]
    /// The origin of a message a bridge relayed from another host, as the
    /// monitored port was told it (`PCPortMessage.origin`); nil otherwise.
    public let origin: MessageOrigin?

    /// Parses a COPY; nil when `message` is not a well-formed one.
    public init?(copy message: PCPortMessage) {
        origin = message.origin
        guard message.msgid == PortMonitor.copyMessageID, message.components.count == 2,
            case .data(let header) = message.components[0], let body = message.components[1].bytes,
            header.count >= PortMonitor.fixedHeaderSize, header[0] == PortMonitor.headerVersion,
            (header.count - PortMonitor.fixedHeaderSize) % PortMonitor.entrySize == 0
        else { return nil }
        func le<T: FixedWidthInteger>(_ type: T.Type, _ at: Int) -> T {
            var v: T = 0
            for i in (0..<MemoryLayout<T>.size).reversed() { v = v << 8 | T(header[at + i]) }
            return v
        }
        let flags = header[1]
        msgid = le(UInt32.self, 4)
        sender = flags & PortMonitor.Flag.sender != 0
            ? Credentials(pid: le(Int32.self, 8), uid: le(UInt32.self, 12), gid: le(UInt32.self, 16)) : nil
        isRequest = flags & PortMonitor.Flag.request != 0
        isReply = flags & PortMonitor.Flag.reply != 0
        hasReplyPort = flags & PortMonitor.Flag.replyPort != 0
        descriptorCount = Int(le(UInt32.self, 20))
        sequence = le(UInt64.self, 24)
        missed = le(UInt64.self, 32)
        deliveredAt = le(UInt64.self, 40)
        var components: [Component] = []
        var offset = 0
        var at = PortMonitor.fixedHeaderSize
        while at < header.count {
            let shown = Int(le(UInt32.self, at + 4))
            let length = le(UInt64.self, at + 8)
            guard UInt64(shown) <= length, shown <= body.count - offset else { return nil }
            let kind: Component.Kind
            switch PortMonitor.Kind(rawValue: header[at]) {
            case .data: kind = .data
            case .sharedMemory: kind = .sharedMemory
            case .port:
                guard length == 0 else { return nil }
                kind = .port
            case nil: return nil
            }
            components.append(Component(kind: kind, length: length, bytes: Array(body[offset..<offset + shown])))
            offset += shown
            at += PortMonitor.entrySize
        }
        guard offset == body.count else { return nil }
        self.components = components
    }
}
