// PortNameServer+Watch: subscriptions to owner changes (WATCH), D-Bus's
// NameOwnerChanged. The watcher's own anonymous port is the WATCH request's
// reply port; portd sends NAME_OWNER_CHANGED to it for every change of the
// watched name (or of every name), until the port goes (NameWatch.cancel,
// or the end of the client connection).
//
// Invariants: the port is scheduled before the request is sent, so no
// change that portd reports after "watching" can be missed (messages that
// arrive before the loop runs wait in the kernel queue); a message the
// watcher cannot parse is reported to `onError` and skipped, never fatal.
// A watcher that falls behind is told, never dropped silently: portd never
// waits for a watcher, so when the watcher's queue is full it ends the
// watch with WATCH_OVERFLOW (sent once the watcher reads again, after the
// changes already queued); the handler sees every change before it, then
// `onError` gets `.watchOverflow` and the watch ends (its port is
// invalidated, an `ownerChanges` stream finishes).

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

/// A running subscription to owner changes; cancel it to stop.
public final class NameWatch: Sendable {
    /// The watched name, nil for every name.
    public let name: String?
    package let port: PCPort

    package init(name: String?, port: PCPort) {
        self.name = name
        self.port = port
    }

    /// Stops the subscription (portd drops it when it next tries to send).
    /// Idempotent; safe from any thread.
    public func cancel() { port.invalidate() }

    /// Whether the subscription still runs.
    public var isActive: Bool { port.isValid }
}

extension PortNameServer {
    /// Subscribes to owner changes of `name` (nil: every name). `handler`
    /// runs on `loop`'s thread in `mode` (the background loop by default),
    /// once per change, in portd's order. When the watcher falls behind
    /// (its queue is full: portd never waits for it), portd ends the watch:
    /// after the changes already queued, `onError` gets
    /// `NameServerError.watchOverflow` and the watch is no longer active.
    public func watch(
        _ name: String?, loop: PCRunLoop? = nil, mode: PCRunLoop.Mode = .default,
        onError: (@Sendable (NameServerError) -> Void)? = nil,
        handler: @escaping @Sendable (NameOwnerChange) -> Void
    ) throws(NameServerError) -> NameWatch {
        if let name { try Self.checkName(name) }
        let port = PCPort()
        port.setHandler { [weak port] message in
            if message.msgid == NameServerProtocol.MessageID.watchOverflow {
                var missed = 0
                if case .watchOverflow(_, let n)? = try? NameServerNotification(message) { missed = n }
                port?.invalidate()
                onError?(.watchOverflow(missed: missed))
                return nil
            }
            do throws(NameServerError) {
                guard case .ownerChanged(_, let change) = try NameServerNotification(message) else {
                    throw .protocolError("msgid 0x\(String(message.msgid, radix: 16)) on a watcher's port")
                }
                handler(change)
            } catch {
                onError?(error)
            }
            return nil
        }
        let right: SendRight
        do {
            try port.schedule(in: loop ?? BackgroundLoop.shared.loop, forMode: mode)
            right = try port.makeSendRight()
        } catch {
            port.invalidate()
            throw .transport(error)
        }
        let reply: NameServerReply<SendRight>
        do {
            reply = try exchange(
                NameServerProtocol.MessageID.watch, name.map { [NameServerField(NameServerProtocol.Field.name, $0)] } ?? [],
                replyPort: right, what: "WATCH \(name ?? "(all names)")")
        } catch {
            port.invalidate()
            throw error
        }
        guard !reply.isError else {
            port.invalidate()
            throw reply.unexpected(for: "WATCH")
        }
        let id = ObjectIdentifier(port)
        state.withLockAnnotated { $0.watches[id] = port }
        port.onInvalidation { [weak self] in _ = self?.state.withLockAnnotated { $0.watches.removeValue(forKey: id) } }
        if !isValid { port.invalidate() }  // invalidated meanwhile: the watch ends with the connection
        return NameWatch(name: name, port: port)
    }

    /// Owner changes of `name` (nil: every name) as an AsyncSequence, read
    /// on the background loop. The subscription ends when the consumer stops
    /// iterating (the watch is cancelled then); portd's side of it ends with
    /// this client's connection (`invalidate()`), after which no more
    /// changes come. The stream also finishes when the consumer fell
    /// behind and portd ended the watch (`watch`'s `.watchOverflow`); use
    /// `watch(_:loop:mode:onError:handler:)` to tell that apart.
    public func ownerChanges(of name: String?) throws(NameServerError) -> AsyncStream<NameOwnerChange> {
        let (stream, continuation) = AsyncStream<NameOwnerChange>.makeStream()
        let watch = try watch(name) { change in continuation.yield(change) }
        watch.port.onInvalidation { continuation.finish() }
        continuation.onTermination = { _ in watch.cancel() }
        return stream
    }
}
