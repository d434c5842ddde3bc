// PortMessageView: a received port message lent to a port's view handler
// (`PCPort(viewHandler:)`, `setViewHandler`) for the length of that one call,
// read in place: its data components are the bytes of the receive buffer,
// never copied into arrays. What the handler wants to keep beyond the call
// it copies out: `bytes(ofComponent:)` (one component) or `copy()` (the whole
// message, exactly the PCPortMessage a closure handler would have got).
//
// Invariants: a view is non-copyable and only ever lent `borrowing`, so it
// cannot outlive the handler call (nor be stored, captured by an escaping
// closure or sent to another thread); the receive buffer and the component
// table it points into belong to the port's MessageTransport and are not
// reused before the call returns. Pointers handed to `withUnsafeBytes` and
// `withSpan` are valid only inside their closure. Send rights, shared memory
// and the reply ports are objects the view holds (created once per record,
// exactly as the array path creates them), so their ownership is the
// ordinary one: a handler that keeps one keeps it open, and `copy()`
// carries the same objects. The name has no `PC` prefix: Foundation has no
// `PortMessageView` (README, "PortCore in code").

import PortSystem
import PortWire

/// A received message, lent to a port's view handler for the duration of
/// the call: data components are read in place from the port's receive
/// buffer, without copying. Copy out what you keep (`bytes(ofComponent:)`,
/// `copy()`); send rights, shared memory and reply ports are ordinary
/// objects that may be kept as they are.
public struct PortMessageView: ~Copyable {
    /// What a component is.
    public enum ComponentKind: Sendable, Hashable {
        /// Inline bytes, in the receive buffer.
        case data
        /// A send right to a port.
        case port
        /// Bytes in sealed, read-only shared memory (a large component).
        case sharedMemory
    }

    /// One component as the transport laid it out: its bytes (inline data
    /// in the receive buffer, or a shared-memory mapping), and for a port
    /// or shared memory the position of its object in `objects`.
    @usableFromInline
    package struct Slot {
        /// The bytes; empty for a port.
        @usableFromInline var bytes: UnsafeRawBufferPointer
        /// The index in `objects`, or -1 for inline data.
        @usableFromInline var object: Int

        package init(bytes: UnsafeRawBufferPointer, object: Int) {
            self.bytes = bytes
            self.object = object
        }
    }

    /// The message identifier (application-defined).
    public let msgid: UInt32
    /// The components in order (points into the transport's table).
    /// Usable from inline: the accessors below are inlined into the
    /// handler's module, where they are specialized for its closure
    /// (across modules a call is unspecialized and costs more).
    @usableFromInline let slots: UnsafeBufferPointer<Slot>
    /// The send rights and shared memory of the record, in order.
    @usableFromInline let objects: [PCPortMessage.Component]
    /// Where to send a reply (`PCPortMessage.replyPort`): on a request, the
    /// one-shot reply right, which the handler may keep to answer later.
    public internal(set) var replyPort: SendRight?
    /// On a request that also carried a reply port: that port
    /// (`PCPortMessage.passedReplyPort`). Nil otherwise.
    public internal(set) var passedReplyPort: SendRight?
    /// Whether the record was a request (`PCPortMessage.expectsReply`).
    package internal(set) var expectsReply = false
    /// Who sent the message, as the kernel reported it.
    public let sender: Credentials?
    /// The connection the message came in on (`PCPortMessage.connectionID`).
    public internal(set) var connectionID: UInt64?
    /// Who made that connection (`PCPortMessage.connectionCredentials`).
    public internal(set) var connectionCredentials: Credentials?
    /// The origin of a relayed message (`PCPortMessage.origin`).
    public internal(set) var origin: MessageOrigin?

    package init(
        msgid: UInt32, slots: UnsafeBufferPointer<Slot>, objects: [PCPortMessage.Component], replyPort: SendRight?,
        sender: Credentials?
    ) {
        self.msgid = msgid
        self.slots = slots
        self.objects = objects
        self.replyPort = replyPort
        self.passedReplyPort = nil
        self.sender = sender
        self.connectionID = nil
        self.connectionCredentials = nil
        self.origin = nil
    }

    /// Lends `message` to `body` as a view (its data copied into one
    /// temporary buffer): for a port switched to a view handler between
    /// receiving a record as a message and delivering it. The view's
    /// `copy()` is `message` again, data in new arrays.
    package static func lend<R>(_ message: PCPortMessage, _ body: (borrowing PortMessageView) -> R) -> R {
        var total = 0
        for c in message.components { if case .data(let b) = c { total += b.count } }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 1)
        let slots = UnsafeMutableBufferPointer<Slot>.allocate(capacity: max(message.components.count, 1))
        defer {
            storage.deallocate()
            slots.deallocate()
        }
        var objects: [PCPortMessage.Component] = []
        var offset = 0
        for (n, c) in message.components.enumerated() {
            switch c {
            case .data(let b):
                let area = UnsafeMutableRawBufferPointer(rebasing: storage[offset..<(offset + b.count)])
                b.withUnsafeBytes { area.copyMemory(from: $0) }
                slots.initializeElement(at: n, to: Slot(bytes: UnsafeRawBufferPointer(area), object: -1))
                offset += b.count
            case .port:
                slots.initializeElement(at: n, to: Slot(bytes: UnsafeRawBufferPointer(start: nil, count: 0), object: objects.count))
                objects.append(c)
            case .sharedMemory(let m):
                slots.initializeElement(at: n, to: Slot(bytes: m.region, object: objects.count))
                objects.append(c)
            }
        }
        var view = PortMessageView(
            msgid: message.msgid, slots: UnsafeBufferPointer(rebasing: slots[0..<message.components.count]),
            objects: objects, replyPort: message.replyPort, sender: message.sender)
        view.passedReplyPort = message.passedReplyPort
        view.expectsReply = message.expectsReply
        view.connectionID = message.connectionID
        view.connectionCredentials = message.connectionCredentials
        view.origin = message.origin
        return body(view)
    }

    /// The number of components.
    @inlinable public var componentCount: Int { slots.count }

    /// What component `i` is (`0..<componentCount`, else a trap).
    public func kind(ofComponent i: Int) -> ComponentKind {
        let s = slots[i]
        guard s.object >= 0 else { return .data }
        if case .port = objects[s.object] { return .port }
        return .sharedMemory
    }

    /// Lends the bytes of component `i` to `body` without copying: inline
    /// data in the receive buffer, or the read-only mapping of a
    /// shared-memory component. The pointer is valid only inside `body`.
    /// Nil for a port component.
    @inlinable
    public func withUnsafeBytes<R, E: Error>(
        ofComponent i: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R? {
        let s = slots[i]
        if s.object >= 0, case .port = objects[s.object] { return nil }
        return try body(s.bytes)
    }

    /// The bytes of component `i` (as `withUnsafeBytes(ofComponent:_:)`
    /// lends them; nil for a port), for a reader in the package that looks
    /// at several components without a generic call per component (the
    /// name-server client's LOOKUP reply). Valid only while the view is.
    package func unsafeBytes(ofComponent i: Int) -> UnsafeRawBufferPointer? {
        let s = slots[i]
        if s.object >= 0, case .port = objects[s.object] { return nil }
        return s.bytes
    }

    /// Lends the bytes of component `i` to `body` as a `RawSpan` (bounds
    /// checked, and it cannot escape `body`); nil for a port component.
    @inlinable
    public func withSpan<R, E: Error>(ofComponent i: Int, _ body: (RawSpan) throws(E) -> R) throws(E) -> R? {
        let s = slots[i]
        if s.object >= 0, case .port = objects[s.object] { return nil }
        return try body(s.bytes.bytes)
    }

    /// The bytes of component `i`, copied (for keeping beyond the handler
    /// call); nil for a port component.
    public func bytes(ofComponent i: Int) -> [UInt8]? {
        withUnsafeBytes(ofComponent: i) { Array($0) }
    }

    /// The bytes of component `i` as UTF-8 text (a copy), if they are.
    public func string(ofComponent i: Int) -> String? {
        withUnsafeBytes(ofComponent: i) { UTF8Text.string($0) } ?? nil
    }

    /// The send right of port component `i` (the same object each time, and
    /// the one `copy()` carries); nil for a data or shared-memory component.
    public func sendRight(ofComponent i: Int) -> SendRight? {
        let s = slots[i]
        guard s.object >= 0, case .port(let right) = objects[s.object] else { return nil }
        return right
    }

    /// The shared memory of component `i`, which may be kept (it stays
    /// mapped while referenced); nil for a data or port component.
    public func sharedMemory(ofComponent i: Int) -> SharedMemory? {
        let s = slots[i]
        guard s.object >= 0, case .sharedMemory(let m) = objects[s.object] else { return nil }
        return m
    }

    /// The whole message as a `PCPortMessage`, to keep: exactly what a
    /// closure handler would have been given (data copied into new arrays;
    /// the same send rights, shared memory, reply ports, sender and
    /// connection). A kept reply port of a request answers it later, as
    /// with `replyPort`.
    public func copy() -> PCPortMessage {
        var components: [PCPortMessage.Component] = []
        components.reserveCapacity(slots.count)
        for s in slots {
            components.append(s.object >= 0 ? objects[s.object] : .data(Array(s.bytes)))
        }
        var message = PCPortMessage(msgid: msgid, components: components, replyPort: replyPort)
        message.setReceived(
            sender: sender, connectionID: connectionID, connectionCredentials: connectionCredentials,
            passedReplyPort: passedReplyPort, expectsReply: expectsReply)
        message.origin = origin
        return message
    }
}
