// NatsConnection: the bridge's one connection to NATS, through libnats (the
// official C client), hosted on the bridge's run loop. libnats is wrapped
// thinly here and nowhere else: every call's status is checked and becomes
// a NatsError naming the call, and nothing outside this file and
// NatsMessage/NatsRegistry touches a libnats pointer.
//
// Threads. The connection's socket lives on the bridge's PCRunLoop
// (natsOptions_SetEventLoop): libnats asks, from whatever thread it is on,
// for read and write interest, and the loop calls
// natsConnection_ProcessReadEvent/WriteEvent on its own thread, so a message
// that arrives is parsed there and, for the synchronous subscriptions
// ("drained"), handed to the bridge on that same thread with no thread hop:
// after each read event every drained subscription is emptied with
// natsSubscription_NextMsg(…, 0). Publishing writes at once (SendAsap), from
// the loop's thread. The subscriptions for exported names (session opens,
// one-shot calls: rare next to session traffic) are asynchronous: libnats's
// one global delivery thread calls them, and they go to the loop through
// `perform`. Blocking calls (JetStream, the KV watcher) never run on the
// loop's thread: their replies come through the loop (NatsRegistry).
//
// libnats 3.4.1 runs a reconnect's connect under the connection lock, so a
// short connect timeout keeps other calls from waiting long on it.

import CNats
import Logging
import PortCore
import Synchronization

/// A libnats call that failed.
public struct NatsError: Error, Sendable, CustomStringConvertible {
    public let call: String
    public let status: UInt32
    public let text: String

    init(_ call: String, _ status: natsStatus) {
        self.call = call
        self.status = status.rawValue
        var last = NATS_OK
        let detail = nats_GetLastError(&last).map { String(cString: $0) } ?? ""
        let name = natsStatus_GetText(status).map { String(cString: $0) } ?? "status \(status.rawValue)"
        text = detail.isEmpty || detail == name ? name : "\(name): \(detail)"
    }

    public var description: String { "\(call): \(text)" }

    var isTimeout: Bool { status == NATS_TIMEOUT.rawValue }
}

/// Checks a libnats status.
@inline(__always)
func natsCheck(_ call: String, _ status: natsStatus) throws(NatsError) {
    if status != NATS_OK { throw NatsError(call, status) }
}

/// How to reach NATS ([NATS] in bridge.conf).
public struct NatsSettings: Sendable, Equatable {
    public var urls: [String] = ["nats://127.0.0.1:4222"]
    public var name = "portd-bridge"
    public var user: String?
    public var password: String?
    public var token: String?
    public var credentialsFile: String?
    public var nkeySeedFile: String?
    public var connectTimeout: Duration = .milliseconds(500)
    public var pingInterval: Duration = .seconds(2)
    public var reconnectWait: Duration = .milliseconds(200)

    public init() {}
}

/// A received NATS message, copied out of libnats (which frees its own at once).
struct NatsMessage: Sendable {
    let subject: String
    let reply: String?
    let data: [UInt8]
    /// A "no responders" status (503): nobody is subscribed to the subject
    /// the request went to.
    let noResponders: Bool
    let session: String?
    let peer: String?
    let origin: String?
    let error: String?
    /// A cumulative acknowledgement: how many one-way records of the
    /// session the exporter has delivered in all.
    let ack: UInt64?

    init(_ msg: OpaquePointer) {
        subject = natsMsg_GetSubject(msg).map { String(cString: $0) } ?? ""
        reply = natsMsg_GetReply(msg).flatMap { $0.pointee == 0 ? nil : String(cString: $0) }
        let count = Int(natsMsg_GetDataLength(msg))
        if count > 0, let p = natsMsg_GetData(msg) {
            data = Array(UnsafeRawBufferPointer(start: p, count: count))
        } else {
            data = []
        }
        noResponders = natsMsg_IsNoResponders(msg)
        func header(_ key: String) -> String? {
            var value: UnsafePointer<CChar>?
            guard natsMsgHeader_Get(msg, key, &value) == NATS_OK, let value else { return nil }
            return String(cString: value)
        }
        session = header(BridgeHeader.session)
        peer = header(BridgeHeader.peer)
        origin = header(BridgeHeader.origin)
        error = header(BridgeHeader.error)
        ack = header(BridgeHeader.ack).flatMap { UInt64($0) }
    }
}

/// The headers of the bridge's NATS messages (portd-bridge(8), NATS MAPPING).
enum BridgeHeader {
    static let session = "Portd-Session"
    static let peer = "Portd-Peer"
    static let origin = "Portd-Origin"
    static let error = "Portd-Error"
    static let ack = "Portd-Ack"
    static let serviceError = "Nats-Service-Error"
    static let serviceErrorCode = "Nats-Service-Error-Code"
}

/// The loop's side of natsOptions_SetEventLoop: one read source and one
/// write source over the connection's current socket (each a duplicate,
/// PortSource(watchingForeign:)), added to and removed from the loop as
/// libnats asks, from any thread.
///
/// Writing. libnats asks for write interest whenever it has buffered
/// something (every publish), and drops it once the buffer is written.
/// Rather than add the write source to epoll and take it out again for
/// each message, a custom source (`flush`) is signalled, and the loop
/// writes the buffer in the same pass (natsConnection_ProcessWriteEvent);
/// only when the socket does not take it all is the write source added,
/// until libnats says the buffer is empty.
final class NatsLoopHost: @unchecked Sendable {
    // Safe to share: `loop` is immutable and `flush` set once in init;
    // `state` is accessed only with `lock` held; `afterRead` is set once
    // before the connection is made.
    let loop: PCRunLoop
    private struct State {
        var connection: OpaquePointer?
        var read: PortSource?
        var write: PortSource?
        var reading = false
        /// libnats has data to write (between its ADD and REMOVE).
        var writing = false
        /// `write` is in the loop (the socket was full).
        var writeArmed = false
    }
    private let lock = Lock()
    private var state = State()
    private var flush: RunLoopSource!
    /// Called on the loop's thread after each read event (drains the
    /// synchronous subscriptions).
    nonisolated(unsafe) var afterRead: () -> Void = {}

    init(loop: PCRunLoop) {
        self.loop = loop
        let flush = RunLoopSource(order: 0) { [weak self] _ in self?.flushPending() }
        self.flush = flush
        loop.add(flush, forMode: .common)
    }

    /// Takes the flush source out of the loop (the connection is gone).
    func invalidate() { flush.invalidate() }

    /// On the loop's thread: writes what libnats has buffered; arms the
    /// write source if the socket did not take it all.
    private func flushPending() {
        guard let nc = lock.withLock({ state.writing ? state.connection : nil }) else { return }
        natsConnection_ProcessWriteEvent(nc)
        lock.withLock {
            guard state.writing, !state.writeArmed, let write = state.write else { return }
            do {
                try loop.add(write, forMode: .common)
                state.writeArmed = true
            } catch {
                // Left to the next publish's flush (the loop cannot watch it).
            }
        }
    }

    func attach(_ nc: OpaquePointer?, socket: Int32) -> natsStatus {
        let read: PortSource
        let write: PortSource
        do {
            read = try PortSource(watchingForeign: socket, for: .readable) { [unowned self] _ in
                guard let nc = self.lock.withLock({ self.state.connection }) else { return }
                natsConnection_ProcessReadEvent(nc)
                self.afterRead()
            }
            write = try PortSource(watchingForeign: socket, for: .writable) { [unowned self] _ in
                guard let nc = self.lock.withLock({ self.state.connection }) else { return }
                natsConnection_ProcessWriteEvent(nc)
            }
        } catch {
            return NATS_SYS_ERROR
        }
        let old = lock.withLock {
            defer { state = State(connection: nc, read: read, write: write) }
            return (state.read, state.write)
        }
        old.0?.invalidate()
        old.1?.invalidate()
        return setReading(true)
    }

    func setReading(_ on: Bool) -> natsStatus {
        change(\.reading, \.read, on)
    }

    func setWriting(_ on: Bool) -> natsStatus {
        // Under the state lock, as `change` (the loop's lock comes after).
        lock.withLock {
            guard state.writing != on else { return }
            state.writing = on
            if !on, state.writeArmed, let write = state.write {
                loop.remove(write, forMode: .common)
                state.writeArmed = false
            }
        }
        if on { flush.signal() }
        return NATS_OK
    }

    private func change(_ flag: WritableKeyPath<State, Bool>, _ source: KeyPath<State, PortSource?>, _ on: Bool) -> natsStatus {
        // Under the state lock, so two threads asking at once leave the
        // source where the last one asked (the loop's lock comes after).
        lock.withLock {
            guard let src = state[keyPath: source], state[keyPath: flag] != on else { return NATS_OK }
            state[keyPath: flag] = on
            if on {
                do { try loop.add(src, forMode: .common) } catch { return NATS_SYS_ERROR }
            } else {
                loop.remove(src, forMode: .common)
            }
            return NATS_OK
        }
    }

    func detach() -> natsStatus {
        let old = lock.withLock {
            defer { state = State() }
            return (state.read, state.write)
        }
        old.0?.invalidate()
        old.1?.invalidate()
        return NATS_OK
    }
}

private func hostOf(_ p: UnsafeMutableRawPointer?) -> NatsLoopHost {
    Unmanaged<NatsLoopHost>.fromOpaque(p!).takeUnretainedValue()
}

/// A subscription's Swift side for libnats's C callback.
private final class MessageHandlerBox: Sendable {
    let handler: @Sendable (NatsMessage) -> Void
    init(_ handler: @escaping @Sendable (NatsMessage) -> Void) { self.handler = handler }
}

/// A subscription; `cancel()` unsubscribes.
final class NatsSubscription: @unchecked Sendable {
    // Safe to share: `sub` is written at creation and cleared by
    // `cancel()`, read and written with `lock` held; libnats's
    // subscription calls are thread-safe; `box` is set once at creation.
    private let lock = Lock()
    private var sub: OpaquePointer?
    let subject: String
    fileprivate var box: Unmanaged<MessageHandlerBox>?

    fileprivate init(_ sub: OpaquePointer?, subject: String) {
        self.sub = sub
        self.subject = subject
    }

    /// The next queued message of a synchronous subscription, without waiting.
    func next() -> NatsMessage? {
        lock.withLock { () -> NatsMessage? in
            guard let sub else { return nil }
            var msg: OpaquePointer?
            guard natsSubscription_NextMsg(&msg, sub, 0) == NATS_OK, let msg else { return nil }
            defer { natsMsg_Destroy(msg) }
            return NatsMessage(msg)
        }
    }

    func cancel() {
        let sub = lock.withLock {
            defer { self.sub = nil }
            return self.sub
        }
        guard let sub else { return }
        _ = natsSubscription_Unsubscribe(sub)
        natsSubscription_Destroy(sub)
        // The handler box stays: a callback may be running on the delivery
        // thread still (its message was dispatched before the unsubscribe).
    }
}

/// Connection events, on whatever thread libnats reports them.
struct NatsEvents: Sendable {
    var connected: @Sendable () -> Void = {}
    var disconnected: @Sendable () -> Void = {}
    var closed: @Sendable () -> Void = {}
    var error: @Sendable (String) -> Void = { _ in }
}

private final class EventsBox: Sendable {
    let events: NatsEvents
    init(_ e: NatsEvents) { events = e }
}

public final class NatsConnection: @unchecked Sendable {
    // Safe to share: `nc`, `host` and `eventsBox` are set in init and
    // immutable after; libnats's connection calls are thread-safe;
    // `drained` is accessed with `drainedLock` held.
    let nc: OpaquePointer
    let host: NatsLoopHost
    private let eventsBox: Unmanaged<EventsBox>
    private let hostRef: Unmanaged<NatsLoopHost>
    private let drainedLock = Lock()
    private var drained: [ObjectIdentifier: (NatsSubscription, @Sendable (NatsMessage) -> Void)] = [:]

    /// Connects (or, when no server answers, keeps trying in the
    /// background: `events.connected` says when it made it).
    init(settings: NatsSettings, loop: PCRunLoop, events: NatsEvents) throws(NatsError) {
        _ = nats_Open(-1)
        var opts: OpaquePointer?
        try natsCheck("natsOptions_Create", natsOptions_Create(&opts))
        guard let opts else { throw NatsError("natsOptions_Create", NATS_NO_MEMORY) }
        defer { natsOptions_Destroy(opts) }
        let host = NatsLoopHost(loop: loop)
        let hostRef = Unmanaged.passRetained(host)
        let eventsBox = Unmanaged.passRetained(EventsBox(events))
        var ok = false
        defer {
            if !ok {
                hostRef.release()
                eventsBox.release()
            }
        }
        // natsOptions_SetURL takes a comma-separated list of servers.
        try natsCheck("natsOptions_SetURL", natsOptions_SetURL(opts, settings.urls.joined(separator: ",")))
        try natsCheck("natsOptions_SetName", natsOptions_SetName(opts, settings.name))
        try natsCheck("natsOptions_SetTimeout", natsOptions_SetTimeout(opts, settings.connectTimeout.milliseconds))
        try natsCheck("natsOptions_SetPingInterval", natsOptions_SetPingInterval(opts, settings.pingInterval.milliseconds))
        try natsCheck("natsOptions_SetMaxPingsOut", natsOptions_SetMaxPingsOut(opts, 2))
        try natsCheck("natsOptions_SetMaxReconnect", natsOptions_SetMaxReconnect(opts, -1))
        try natsCheck("natsOptions_SetReconnectWait", natsOptions_SetReconnectWait(opts, settings.reconnectWait.milliseconds))
        try natsCheck("natsOptions_SetSendAsap", natsOptions_SetSendAsap(opts, true))
        try natsCheck("natsOptions_UseGlobalMessageDelivery", natsOptions_UseGlobalMessageDelivery(opts, true))
        if let user = settings.user {
            try natsCheck("natsOptions_SetUserInfo", natsOptions_SetUserInfo(opts, user, settings.password))
        }
        if let token = settings.token { try natsCheck("natsOptions_SetToken", natsOptions_SetToken(opts, token)) }
        if let creds = settings.credentialsFile {
            try natsCheck(
                "natsOptions_SetUserCredentialsFromFiles", natsOptions_SetUserCredentialsFromFiles(opts, creds, nil))
        }
        if let seed = settings.nkeySeedFile {
            try natsCheck("natsOptions_SetNKeyFromSeed", natsOptions_SetNKeyFromSeed(opts, nil, seed))
        }
        let eventsPointer = eventsBox.toOpaque()
        try natsCheck(
            "natsOptions_SetRetryOnFailedConnect",
            natsOptions_SetRetryOnFailedConnect(
                opts, true, { _, closure in Unmanaged<EventsBox>.fromOpaque(closure!).takeUnretainedValue().events.connected() },
                eventsPointer))
        try natsCheck(
            "natsOptions_SetReconnectedCB",
            natsOptions_SetReconnectedCB(
                opts, { _, closure in Unmanaged<EventsBox>.fromOpaque(closure!).takeUnretainedValue().events.connected() },
                eventsPointer))
        try natsCheck(
            "natsOptions_SetDisconnectedCB",
            natsOptions_SetDisconnectedCB(
                opts, { _, closure in Unmanaged<EventsBox>.fromOpaque(closure!).takeUnretainedValue().events.disconnected() },
                eventsPointer))
        try natsCheck(
            "natsOptions_SetClosedCB",
            natsOptions_SetClosedCB(
                opts, { _, closure in Unmanaged<EventsBox>.fromOpaque(closure!).takeUnretainedValue().events.closed() },
                eventsPointer))
        try natsCheck(
            "natsOptions_SetErrorHandler",
            natsOptions_SetErrorHandler(
                opts,
                { _, sub, status, closure in
                    let subject = sub.flatMap { natsSubscription_GetSubject($0) }.map { String(cString: $0) } ?? "-"
                    let text = natsStatus_GetText(status).map { String(cString: $0) } ?? "status \(status.rawValue)"
                    Unmanaged<EventsBox>.fromOpaque(closure!).takeUnretainedValue().events.error("\(text) (subject \(subject))")
                }, eventsPointer))
        try natsCheck(
            "natsOptions_SetEventLoop",
            natsOptions_SetEventLoop(
                opts, hostRef.toOpaque(),
                { userData, loop, nc, socket in
                    userData!.pointee = loop
                    return hostOf(loop).attach(nc, socket: socket)
                },
                { userData, add in hostOf(userData).setReading(add) },
                { userData, add in hostOf(userData).setWriting(add) },
                { userData in hostOf(userData).detach() }))
        var nc: OpaquePointer?
        let status = natsConnection_Connect(&nc, opts)
        guard status == NATS_OK || status == NATS_NOT_YET_CONNECTED, let nc else {
            throw NatsError("natsConnection_Connect", status)
        }
        self.nc = nc
        self.host = host
        self.hostRef = hostRef
        self.eventsBox = eventsBox
        ok = true
        host.afterRead = { [unowned self] in self.drainAll() }
        if status == NATS_OK { events.connected() }
    }

    deinit {
        natsConnection_Destroy(nc)
        host.invalidate()
        hostRef.release()
        eventsBox.release()
    }

    /// Whether the connection is up now.
    var isConnected: Bool { natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED }

    /// The largest payload the server takes (0 before the first connect).
    var maxPayload: Int { Int(natsConnection_GetMaxPayload(nc)) }

    /// Closes the connection (flushing what is buffered, within the loop's reach).
    func close() { natsConnection_Close(nc) }

    // MARK: Publishing

    /// Publishes `payload` to `subject` with `reply` and `headers`. Never
    /// waits: libnats buffers what the socket does not take, and the loop
    /// writes it when the socket has room.
    func publish(
        _ subject: String, reply: String? = nil, headers: KeyValuePairs<String, String> = [:],
        payload: UnsafeRawBufferPointer
    ) throws(NatsError) {
        let data = payload.baseAddress?.assumingMemoryBound(to: CChar.self)
        if headers.isEmpty {
            // No natsMsg on the heap: libnats hands every one it frees to
            // its garbage-collector thread, and waking that thread costs a
            // context switch per message (acknowledgements, replies).
            if let reply {
                try natsCheck(
                    "natsConnection_PublishRequest",
                    natsConnection_PublishRequest(nc, subject, reply, data, Int32(payload.count)))
            } else {
                try natsCheck("natsConnection_Publish", natsConnection_Publish(nc, subject, data, Int32(payload.count)))
            }
            return
        }
        var msg: OpaquePointer?
        try natsCheck(
            "natsMsg_Create",
            natsMsg_Create(&msg, subject, reply, data, Int32(payload.count)))
        guard let msg else { throw NatsError("natsMsg_Create", NATS_NO_MEMORY) }
        defer { natsMsg_Destroy(msg) }
        for (k, v) in headers { try natsCheck("natsMsgHeader_Set", natsMsgHeader_Set(msg, k, v)) }
        try natsCheck("natsConnection_PublishMsg", natsConnection_PublishMsg(nc, msg))
    }

    func publish(
        _ subject: String, reply: String? = nil, headers: KeyValuePairs<String, String> = [:], payload: [UInt8] = []
    ) throws(NatsError) {
        let r: Result<Void, NatsError> = payload.withUnsafeBytes { p in
            Result { () throws(NatsError) in try publish(subject, reply: reply, headers: headers, payload: p) }
        }
        try r.get()
    }

    // MARK: Subscribing

    /// A synchronous subscription drained on the loop's thread after each
    /// read event: `handler` runs there, once per message, in order.
    func subscribeDrained(
        _ subject: String, queue: String? = nil, handler: @escaping @Sendable (NatsMessage) -> Void
    ) throws(NatsError) -> NatsSubscription {
        var sub: OpaquePointer?
        if let queue {
            try natsCheck("natsConnection_QueueSubscribeSync", natsConnection_QueueSubscribeSync(&sub, nc, subject, queue))
        } else {
            try natsCheck("natsConnection_SubscribeSync", natsConnection_SubscribeSync(&sub, nc, subject))
        }
        // No pending limit: the bridge reads every message on the read
        // event that brought it, and its windows bound what can be in flight.
        _ = natsSubscription_SetPendingLimits(sub, -1, -1)
        let s = NatsSubscription(sub, subject: subject)
        drainedLock.withLock { drained[ObjectIdentifier(s)] = (s, handler) }
        return s
    }

    /// Stops draining `s` and unsubscribes it.
    func cancelDrained(_ s: NatsSubscription) {
        drainedLock.withLock { _ = drained.removeValue(forKey: ObjectIdentifier(s)) }
        s.cancel()
    }

    /// Called on the loop's thread once the messages of a read event were
    /// all handed out (the bridge acknowledges them together). Set once,
    /// before the connection is made.
    nonisolated(unsafe) var afterDrain: () -> Void = {}

    private func drainAll() {
        let subs = drainedLock.withLock { Array(drained.values) }
        for (s, handler) in subs {
            while let m = s.next() { handler(m) }
        }
        afterDrain()
    }

    /// An asynchronous subscription: `handler` runs on libnats's delivery
    /// thread (one for the whole process: UseGlobalMessageDelivery).
    func subscribe(
        _ subject: String, queue: String? = nil, handler: @escaping @Sendable (NatsMessage) -> Void
    ) throws(NatsError) -> NatsSubscription {
        let box = Unmanaged.passRetained(MessageHandlerBox(handler))
        var sub: OpaquePointer?
        let callback: natsMsgHandler = { _, _, msg, closure in
            guard let msg else { return }
            let m = NatsMessage(msg)
            natsMsg_Destroy(msg)
            Unmanaged<MessageHandlerBox>.fromOpaque(closure!).takeUnretainedValue().handler(m)
        }
        let status =
            if let queue {
                natsConnection_QueueSubscribe(&sub, nc, subject, queue, callback, box.toOpaque())
            } else {
                natsConnection_Subscribe(&sub, nc, subject, callback, box.toOpaque())
            }
        guard status == NATS_OK else {
            box.release()
            throw NatsError(queue == nil ? "natsConnection_Subscribe" : "natsConnection_QueueSubscribe", status)
        }
        _ = natsSubscription_SetPendingLimits(sub, -1, -1)
        let s = NatsSubscription(sub, subject: subject)
        s.box = box
        return s
    }
}

extension Duration {
    /// Whole milliseconds, for libnats's int64 millisecond arguments.
    var milliseconds: Int64 {
        let (s, a) = components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}
