// PCPortMessage: a port message (NSPortMessage; Foundation's PortMessage,
// hence the prefix): a msgid, ordered components (bytes, send rights, or
// large bytes in sealed shared memory), an optional reply port, and, on
// receipt, the sender's credentials as the kernel saw them (SCM_CREDENTIALS),
// not as the sender claims.
//
// Ownership: a message owns the send rights and shared memory in its
// components; they close when the last reference goes.

import PortRunLoop
import PortSystem
import PortWire

public struct PCPortMessage: Sendable {
    /// One component of a message.
    public enum Component: Sendable {
        /// Bytes. On sending, bytes too large for one record travel as a
        /// sealed memfd and arrive as `.sharedMemory`.
        case data([UInt8])
        /// A send right to a port.
        case port(SendRight)
        /// Bytes in sealed, read-only shared memory (a memfd), mapped without copying.
        case sharedMemory(SharedMemory)

        /// The bytes of a data or shared-memory component (a copy), nil for a port.
        public var bytes: [UInt8]? {
            switch self {
            case .data(let b): b
            case .sharedMemory(let m): m.withUnsafeBytes { Array($0) }
            case .port: nil
            }
        }

        /// The component's bytes as UTF-8 text, if they are.
        public var string: String? {
            switch self {
            case .data(let b): UTF8Text.string(b)
            case .sharedMemory(let m): m.withUnsafeBytes { UTF8Text.string($0) }
            case .port: nil
            }
        }
    }

    /// The message identifier (application-defined; 100 is the check-in).
    public var msgid: UInt32
    /// The components, in order.
    public var components: [Component]
    /// Where to send a reply: `sendPort` of Apple's check-in example. On receipt of a request
    /// (`SendRight.request`) this is the one-shot reply right.
    public var replyPort: SendRight?
    /// On receipt of a request (REPLY_EXPECTED) that also carried a reply
    /// port (REPLY_PORT): that port, which `replyPort` (the one-shot reply
    /// right) would otherwise hide. The name server keeps it, e.g. as a
    /// watcher's port. Nil otherwise.
    public internal(set) var passedReplyPort: SendRight?
    /// Whether the message arrived as a request (REPLY_EXPECTED), so that
    /// `replyPort` is the one-shot reply right on its own connection. On a
    /// one-way message `replyPort` is the REPLY_PORT it carried, a port of
    /// the sender's choosing: a server that answers requests later (portd's
    /// waiting lookups) takes its reply right only from a request. False on
    /// messages built locally.
    package internal(set) var expectsReply = false
    /// Who sent the message, as the kernel reported it. Nil on messages built locally.
    public internal(set) var sender: Credentials?
    /// Which of the receiving port's connections (rights) the message came
    /// in on; unique per port for the port's lifetime. See
    /// `PCPort.onDisconnect`. Nil on messages built locally.
    public internal(set) var connectionID: UInt64?
    /// Who made that connection (SO_PEERCRED when the port accepted it on
    /// its listening socket): not necessarily the sender. Nil for rights the
    /// port minted itself (socketpair) and on messages built locally.
    public internal(set) var connectionCredentials: Credentials?
    /// For a message relayed from another host: its origin as the relay
    /// asserted it (`MessageOrigin`: the last origin notice on this
    /// connection). Nil otherwise.
    public internal(set) var origin: MessageOrigin?

    public init(msgid: UInt32, components: [Component] = [], replyPort: SendRight? = nil) {
        self.msgid = msgid
        self.components = components
        self.replyPort = replyPort
        self.sender = nil
        self.connectionID = nil
        self.connectionCredentials = nil
        self.origin = nil
        self.passedReplyPort = nil
    }

    /// A received message, built in one go (no copy to set `sender` after).
    package init(msgid: UInt32, components: [Component], replyPort: SendRight?, sender: Credentials?) {
        self.msgid = msgid
        self.components = components
        self.replyPort = replyPort
        self.sender = sender
        self.connectionID = nil
        self.connectionCredentials = nil
        self.origin = nil
        self.passedReplyPort = nil
    }

    /// A message with data components from strings (UTF-8).
    public init(msgid: UInt32, strings: [String]) {
        self.init(msgid: msgid, components: strings.map { .data(Array($0.utf8)) })
    }
}

/// Bytes in a sealed memfd, mapped read-only. Unmapped and closed on deinit.
public final class SharedMemory: @unchecked Sendable {
    // Safe to share: the mapping is read-only (PROT_READ of a memfd sealed
    // against writes), and every field is immutable.
    /// The memfd, owned; lent to the control message of each send.
    package let descriptor: OwnedDescriptor
    package let region: UnsafeRawBufferPointer

    /// Copies `bytes` into a new sealed memfd (to send a large component).
    public convenience init(copying bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        try self.init(mapping: MemFD.makeSealed(bytes), length: bytes.count)
    }

    /// Copies `bytes` into a new sealed memfd.
    public convenience init(copying bytes: [UInt8]) throws(SystemCallError) {
        var memfd: OwnedDescriptor?
        var failure: SystemCallError?
        bytes.withUnsafeBytes { raw in
            do throws(SystemCallError) { memfd = try MemFD.makeSealed(raw) } catch { failure = error }
        }
        if let failure { throw failure }
        try self.init(mapping: memfd.take()!, length: bytes.count)
    }

    /// Maps a memfd that was checked to be sealed, taking it over (it is
    /// closed again when mapping fails).
    package init(mapping descriptor: consuming OwnedDescriptor, length: Int) throws(SystemCallError) {
        region = length == 0 ? UnsafeRawBufferPointer(start: nil, count: 0) : try MemFD.mapReadOnly(descriptor, length: length)
        self.descriptor = descriptor
    }

    deinit {
        if region.count > 0 { MemFD.unmap(region) }
        // `descriptor` closes after this, with the object.
    }

    /// The number of bytes.
    public var count: Int { region.count }

    /// Reads the bytes in place, without copying.
    public func withUnsafeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try body(region)
    }
}
