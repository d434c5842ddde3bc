// SendRight: the right to send to a port (a remote NSPort). It is a
// connected AF_UNIX SOCK_SEQPACKET socket leading to the port, obtained only
// from the port's owner (PCPort.makeSendRight), from the name server, or
// inside a message. Whoever holds it can send, and can pass it on in a
// message (the receiver gets its own descriptor for the same connection).
//
// Requests (CFMessagePortSendRequest) flag the record `replyExpected`; the
// receiver answers with exactly one record on the same connection. While
// waiting, the requesting thread runs its run loop in a mode private to this
// right, in which only the reply is serviced (or in a mode the caller
// names). Requests on one right are serialized (by a request mutex, not by
// the right's lock, which is never held while the loop runs); a reply that arrives after its request timed out is discarded
// by the next request (replies come back in order).
//
// Invalidation: when the port's owner invalidates it or dies, the connection
// hangs up; `onInvalidation` delivers that on a run loop without a send.
//
// Ownership: the right holds its socket through a SharedDescriptor, shared
// with the port's source when it is the one-shot reply right of a request
// (the request came in on that very connection) and with the sources that
// watch it for replies or a hang-up; `invalidate()` lets go of the right's
// share, and the socket closes when the last holder does.

import PortRunLoop
import PortSystem
import PortWire
import Synchronization

public final class SendRight: @unchecked Sendable, Hashable, CustomStringConvertible {
    // Safe to share: every mutable field is accessed only with `lock` held,
    // but `connection`, which is written with both `lock` and
    // `connectionLock` held and read with either: the send paths hold
    // `lock`; a transport lending this right's socket to a message it sends
    // on another connection takes only `connectionLock`, which is never held
    // while calling out (so sending a right over itself cannot deadlock).
    // The reply sources run only inside `request`, on the requesting thread,
    // and take `lock` to touch `reply`/`pendingReplies`/`peerGone`.
    // The one-shot reply rights a port makes (one per request it serves)
    // share one lock per port instead of allocating one each: no code
    // takes a right's `lock` while holding another right's `lock` (the
    // transport reaches the rights it lends through `connectionLock`), so
    // sharing it only serializes those rights' short critical sections.
    private let lock: Lock
    /// Serializes requests on this right; held across the run-loop wait,
    /// never taken with `lock` held. Inline in the object (a futex word), so
    /// a right that never requests (a request's one-shot reply right, one
    /// per request a port serves) does not pay an allocation for it.
    private let requestMutex = Mutex<Void>(())
    /// The mode private to this right that a request waits in, made by the
    /// first request that needs it (lock held); nil until then.
    private var privateReplyMode: PCRunLoop.Mode?
    private let connectionLock = Mutex<Void>(())
    /// The socket; nil once this right is closed.
    private var connection: SharedDescriptor?
    private var closed: Bool { connection == nil }
    /// A one-shot reply right: invalid after its first send.
    private let isOneShotReply: Bool
    private var transport: MessageTransport?
    private var pendingReplies = 0
    private var reply: PCPortMessage?
    private var peerGone = false
    private var answered = false
    /// An async request is waiting for its reply on the background loop.
    private var asyncInFlight = false
    /// SO_PASSCRED is on for this right's socket (for replies).
    private var passesCredentials = false
    private var replyError: PortError?
    /// The source reading replies on each loop that made a request, and
    /// whether it is in this right's private mode there already.
    /// Not checked for exclusivity at run time (a one-shot reply right,
    /// one per request a port serves, paid two checks in its deinit), nor
    /// is `invalidationSources`: every other access holds `lock`, which is
    /// not recursive, and what those sections call out to (a loop's
    /// `discardMode`) cannot take it, so no two accesses can overlap.
    @exclusivity(unchecked)
    private var replySources: [ObjectIdentifier: (loop: PCRunLoop, source: PortSource, inPrivateMode: Bool)] = Dictionary()
    /// The entry of `replySources` the last request in the private mode
    /// used, with that mode's state on its loop (for `PCRunLoop.waitAlone`):
    /// requests mostly come from one thread, and this spares them the
    /// lookups. Cleared with `replySources`.
    private var lastPrivateWait: (loop: PCRunLoop, source: PortSource, state: ModeState)?
    @exclusivity(unchecked) private var invalidationSources: [PortSource] = []
    private static let nextID = Atomic<UInt64>(1)
    private let id = SendRight.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    package let limits: PortLimits

    /// A right over a connected SOCK_SEQPACKET socket, which it takes over.
    public convenience init(descriptor: consuming OwnedDescriptor, limits: PortLimits = .default) {
        self.init(connection: SharedDescriptor(descriptor), oneShotReply: false, limits: limits)
    }

    /// A right over a socket held by `descriptor`, which it shares (portd's
    /// listening sockets and new connections, kept in Copyable values).
    package convenience init(sharing descriptor: SharedDescriptor, limits: PortLimits = .default) {
        self.init(connection: descriptor, oneShotReply: false, limits: limits)
    }

    /// `lock`: the lock to share (a port's reply rights'); a new one when nil.
    package init(connection: SharedDescriptor, oneShotReply: Bool, limits: PortLimits, lock: Lock? = nil) {
        self.lock = lock ?? Lock()
        self.connection = connection
        self.isOneShotReply = oneShotReply
        self.limits = limits
    }

    deinit {
        // Most rights never requested nor watched (a right looked up, used
        // and dropped; every one-shot reply right): no iterator made for them.
        if !replySources.isEmpty {
            for (_, r) in replySources {
                r.source.invalidate()
                if let m = privateReplyMode { r.loop.discardMode(m) }
            }
        }
        if !invalidationSources.isEmpty { for s in invalidationSources { s.invalidate() } }
    }

    /// Lock held: the private mode a request runs the loop in (its name,
    /// and so its hash, made once per right).
    private func privateReplyModeLocked() -> PCRunLoop.Mode {
        if let m = privateReplyMode { return m }
        let m = PCRunLoop.Mode("org.portd.reply.\(id)")
        privateReplyMode = m
        return m
    }

    public var description: String {
        currentConnection().map { "SendRight(fd: \($0.descriptor.description))" } ?? "SendRight(invalidated)"
    }
    public static func == (a: SendRight, b: SendRight) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(ObjectIdentifier(self)) }

    /// Whether this right was invalidated by its holder. (Whether the port
    /// is still alive is learned by sending, or through `onInvalidation`.)
    public var isValid: Bool { lock.withLock { !closed } }

    /// Closes this right. Idempotent; safe from any thread.
    public func invalidate() {
        // A right that never requested nor was watched (most: one looked
        // up, used and dropped) has nothing to take down: it is closed at once.
        var done = false
        let sources: [PortSource] = lock.withLock {
            guard !closed else { return [] }
            if replySources.isEmpty && invalidationSources.isEmpty && lastPrivateWait == nil {
                closeLocked()
                done = true
                return []
            }
            var all = invalidationSources
            for (_, r) in replySources { all.append(r.source) }
            return all
        }
        if done { return }
        for s in sources { s.invalidate() }
        lock.withLock {
            if let m = privateReplyMode { for (_, r) in replySources { r.loop.discardMode(m) } }
            replySources.removeAll()
            lastPrivateWait = nil
            invalidationSources.removeAll()
            closeLocked()  // closes the descriptor unless a port still serves it
        }
    }

    /// Lock held: lets go of the connection.
    private func closeLocked() {
        let released = connectionLock.withLockAnnotated { _ in
            defer { connection = nil }
            return connection
        }
        withExtendedLifetime(released) {}  // closes (if last) outside connectionLock
    }

    /// The connection while the right is open, for whatever must hold it
    /// (a source watching it, a message lending it). Any thread.
    package func currentConnection() -> SharedDescriptor? {
        connectionLock.withLockAnnotated { _ in connection }
    }

    /// Lends the right's socket to `body`, or returns nil once the right is
    /// closed. The socket stays open until `body` returns. Any thread.
    package func withDescriptor<R: ~Copyable, E: Error>(_ body: (borrowing OwnedDescriptor) throws(E) -> R) throws(E) -> R? {
        guard let c = currentConnection() else { return nil }
        return try body(c.descriptor)
    }

    /// The peer's credentials as of connect time (SO_PEERCRED): for a right
    /// made by the name server, that is the name server.
    public func connectionCredentials() throws(SystemCallError) -> Credentials {
        let credentials = try withDescriptor { (fd) throws(SystemCallError) in try UnixSocket.peerCredentials(fd) }
        guard let credentials else { throw SystemCallError(call: "getsockopt(SO_PEERCRED)", errno: .badFileDescriptor) }
        return credentials
    }

    // MARK: Sending

    /// Sends `message`, waiting until `deadline` for room in a full receiver
    /// queue ("send before date"). Nothing is dropped: a full queue is
    /// `.timedOut`, a gone receiver `.receiverGone`, never SIGPIPE.
    @discardableResult
    public func send(
        _ message: PCPortMessage, before deadline: MonotonicInstant, replyPort: PCPort? = nil
    ) throws(PortError) -> SendResult {
        try send(message, until: deadline, replyPort: replyPort)
    }

    /// Sends `message`, waiting at most `timeout` for room.
    @discardableResult
    public func send(
        _ message: PCPortMessage, timeout: Duration = .seconds(30), replyPort: PCPort? = nil
    ) throws(PortError) -> SendResult {
        // The deadline is worked out only if the queue is full: the wait for
        // room is at most `timeout` from then (most sends read no clock).
        try send(message, until: .now() + timeout, replyPort: replyPort)
    }

    /// Both `send`s: `deadline` is evaluated only when the receiver's queue
    /// is full.
    private func send(
        _ message: PCPortMessage, until deadline: @autoclosure () -> MonotonicInstant, replyPort: PCPort?
    ) throws(PortError) -> SendResult {
        var replyRight: SendRight?
        if let replyPort { replyRight = try replyPort.makeSendRight() }
        return try lock.withLock { () throws(PortError) -> SendResult in
            guard let connection else { throw .invalidated }
            let t = transport ?? MessageTransport(limits: limits)
            transport = t
            let result = try t.send(
                message, on: connection.descriptor, replyPort: replyRight ?? message.replyPort, replyExpected: false,
                before: deadline())
            if isOneShotReply && result == .sent {
                answered = true
                closeLocked()
            }
            return result
        }
    }

    // MARK: Request / reply

    /// Sends `message` as a request and waits for the reply
    /// (CFMessagePortSendRequest), running the calling thread's run loop
    /// meanwhile in `replyMode`: by default a mode private to this right, so
    /// that only the reply is serviced; pass a mode of your own (`.default`,
    /// as CF's replyMode kCFRunLoopDefaultMode) to keep that mode's timers
    /// and sources running while waiting. Requests on one right are
    /// serialized, but the right's lock is not held while the loop runs:
    /// other threads' `send` and `isValid` on the right proceed meanwhile.
    /// A `stop()` of the loop that arrives during the wait is passed on to
    /// the run this request was nested in, once the request returns.
    ///
    /// A zero (or negative) `receiveTimeout` without a `replyMode` is CF's
    /// one-way request (`CFMessagePortSendRequest` with a NULL replyMode and
    /// a receive timeout of 0): the message goes as a plain message, no
    /// reply is asked for or waited for, and the result is `.sent` (CF's
    /// kCFMessagePortSuccess) once it is in the receiver's queue.
    public func request(
        _ message: PCPortMessage, sendTimeout: Duration = .seconds(30), receiveTimeout: Duration = .seconds(30),
        replyMode: PCRunLoop.Mode? = nil
    ) throws(PortError) -> RequestResult {
        if replyMode == nil && receiveTimeout <= .zero { return try sendOneWay(message, sendTimeout: sendTimeout) }
        let loop = PCRunLoop.current
        let waitsInPrivateMode = replyMode == nil
        return try requestMutex.withLockAnnotated { _ throws(PortError) -> RequestResult in
            var alone: (source: PortSource, state: ModeState)?
            var mode = PCRunLoop.Mode.default
            let early = try lock.withLock { () throws(PortError) -> RequestResult? in
                mode = replyMode ?? privateReplyModeLocked()
                if let early = try sendRequestLocked(message, sendTimeout: sendTimeout) { return early }
                // Level-triggered: a reply that is already there is reported at once.
                alone = try ensureReplySource(on: loop, mode: mode, private: waitsInPrivateMode)
                return nil
            }
            if let early { return early }
            var stopped = false
            defer {
                if !waitsInPrivateMode { leaveReplyMode(mode, of: loop) }
                if stopped { loop.stop() }  // for the run we were nested in
            }
            let deadline = loop.clock.now() + receiveTimeout
            // The outcome is set only by the reply source, which runs inside
            // the loop: run first, then look.
            while true {
                // The private mode holds only the reply source: its run is
                // a wait until that source is ready (PCRunLoop.waitAlone),
                // after which the reply is read and taken under one lock,
                // unless something else was put in the mode.
                let waited = alone.flatMap {
                    loop.waitAlone($0.source, in: $0.state, before: deadline, callingSource: false)
                }
                let result = waited ?? loop.runInMode(mode, before: deadline, returnAfterSourceHandled: true)
                let outcome = try lock.withLock { () throws(PortError) -> RequestResult? in
                    if waited == .handledSource { readReply() }
                    return try takeOutcomeLocked()
                }
                if let outcome { return outcome }
                switch result {
                case .timedOut: return .receiveTimedOut
                case .finished: return .invalidPort
                case .stopped: stopped = true
                case .handledSource: continue
                }
            }
        }
    }

    /// A one-way request: `message` sent as a plain message (the receiver
    /// sends no reply), its outcome in a request's terms.
    package func sendOneWay(_ message: PCPortMessage, sendTimeout: Duration) throws(PortError) -> RequestResult {
        switch try send(message, timeout: sendTimeout) {
        case .sent: .sent
        case .timedOut: .sendTimedOut
        case .receiverGone: .invalidPort
        }
    }

    /// Lock held: the reply, error or hang-up a request waits for, if it came.
    private func takeOutcomeLocked() throws(PortError) -> RequestResult? {
        if let r = reply {
            reply = nil
            return .reply(r)
        }
        if let e = replyError {
            replyError = nil
            throw e
        }
        if peerGone { return .invalidPort }
        return nil
    }

    /// Takes the reply source out of a mode that is not this right's own
    /// once a request that waited in it is over, so it keeps nothing alive.
    private func leaveReplyMode(_ mode: PCRunLoop.Mode, of loop: PCRunLoop) {
        guard let source = lock.withLock({ replySources[ObjectIdentifier(loop)]?.source }) else { return }
        loop.remove(source, forMode: mode)
    }

    /// Sends the request half of an async request; returns a result when
    /// there is nothing to wait for.
    package func beginAsyncRequest(_ message: PCPortMessage, sendTimeout: Duration) throws(PortError) -> RequestResult? {
        try lock.withLock { () throws(PortError) -> RequestResult? in
            if let early = try sendRequestLocked(message, sendTimeout: sendTimeout) { return early }
            asyncInFlight = true
            return nil
        }
    }

    /// Lock held: sends the request half of a request; a result when there
    /// is no reply to wait for, nil when one is now awaited.
    private func sendRequestLocked(_ message: PCPortMessage, sendTimeout: Duration) throws(PortError) -> RequestResult? {
        guard let connection else { throw .invalidated }
        if asyncInFlight { throw .requestInProgress }
        let t = transport ?? MessageTransport(limits: limits)
        transport = t
        if peerGone { return .invalidPort }
        if !passesCredentials {
            // Replies carry the replier's kernel credentials too (set before
            // the first request goes out, so its reply has them).
            do { try UnixSocket.setPassCredentials(connection.descriptor, true) } catch { throw .system(error) }
            passesCredentials = true
        }
        switch try t.send(
            message, on: connection.descriptor, replyPort: message.replyPort, replyExpected: true,
            before: .now() + sendTimeout)
        {
        case .sent: break
        case .timedOut: return .sendTimedOut
        case .receiverGone:
            // A record the peer left before it hung up, while no earlier
            // reply is outstanding, answers this request (a server's
            // refusal of the connection: PCPort.setAdmission).
            guard pendingReplies == 0, case .message(let parting, _)? = try? t.receive(on: connection.descriptor) else {
                return .invalidPort
            }
            peerGone = true
            return .reply(parting)
        }
        pendingReplies += 1
        reply = nil
        replyError = nil
        return nil
    }

    /// On the background loop: reads what is there; a result once the reply
    /// (or the end) came.
    package func readAsyncReply() -> Result<RequestResult, PortError>? {
        lock.withLock { () -> Result<RequestResult, PortError>? in
            readReply()
            if let r = reply {
                reply = nil
                return .success(.reply(r))
            }
            if let e = replyError {
                replyError = nil
                return .failure(e)
            }
            if peerGone { return .success(.invalidPort) }
            return nil
        }
    }

    package func endAsyncRequest() { lock.withLock { asyncInFlight = false } }

    /// Lock held: the source that reads replies on `loop`, added to `mode`
    /// (once for good when `mode` is this right's private mode); for the
    /// private mode, the source and the mode's state, to wait for it alone.
    private func ensureReplySource(
        on loop: PCRunLoop, mode: PCRunLoop.Mode, private isPrivate: Bool
    ) throws(PortError) -> (source: PortSource, state: ModeState)? {
        if isPrivate, let last = lastPrivateWait, last.loop === loop { return (last.source, last.state) }
        let key = ObjectIdentifier(loop)
        let source: PortSource
        if let existing = replySources[key] {
            if isPrivate && existing.inPrivateMode {
                let state = loop.stateForWaiting(in: mode)
                lastPrivateWait = (loop, existing.source, state)
                return (existing.source, state)
            }
            source = existing.source
        } else {
            guard let connection else { throw .invalidated }
            source = PortSource(sharing: connection, events: .readable) { [unowned self] _ in
                // Runs inside `request`, on its thread.
                self.lock.withLock { self.readReply() }
            }
            replySources[key] = (loop, source, false)
        }
        do {
            try loop.add(source, forMode: mode)
        } catch {
            throw .system(error)
        }
        guard isPrivate else { return nil }
        replySources[key]?.inPrivateMode = true
        let state = loop.stateForWaiting(in: mode)
        lastPrivateWait = (loop, source, state)
        return (source, state)
    }

    /// Lock held: reads one record from the connection: a reply, or a stale one to drop.
    private func readReply() {
        guard let t = transport, let connection else { return }
        do {
            switch try t.receive(on: connection.descriptor) {
            case .wouldBlock: return
            case .closed: peerGone = true
            case .message(let m, _):
                if pendingReplies > 1 {
                    pendingReplies -= 1  // the answer to a request that timed out
                } else {
                    pendingReplies = 0
                    reply = m
                }
            }
        } catch {
            replyError = error
            peerGone = true
        }
    }

    /// For a one-shot reply right, on the port's loop thread: sends `reply`
    /// with the port's transport unless the handler already answered
    /// through this right; with `reply` nil, sends an empty reply only when
    /// nobody kept the right to answer later (`deferred` false).
    package func answer(
        _ reply: PCPortMessage?, requestID msgid: UInt32, deferred: Bool, using transport: MessageTransport
    ) -> PortError? {
        // The right is closed under the lock (a later send on it is
        // `.invalidated`), so the reply is sent after it, by the thread
        // that closed it; `reply` is read where it is (a `??` copied it).
        let hasReply = reply != nil
        let taken = lock.withLock { () -> SharedDescriptor? in
            guard !answered, let conn = connection else { return nil }
            guard hasReply || !deferred else { return nil }
            answered = true
            closeLocked()
            return conn
        }
        guard let conn = taken else { return nil }
        return withExtendedLifetime(conn) { () -> PortError? in
            do throws(PortError) {
                // Never wait on the loop's thread: a requester whose
                // queue is full is not reading its replies, and waiting
                // for it would stall everyone else the loop serves.
                let outcome: SendResult
                switch reply {
                case .some(let r):
                    outcome = try transport.send(
                        r, on: conn.descriptor, replyPort: r.replyPort, replyExpected: false, before: .now())
                case .none:
                    outcome = try transport.send(
                        PCPortMessage(msgid: msgid), on: conn.descriptor, replyPort: nil, replyExpected: false,
                        before: .now())
                }
                switch outcome {
                case .sent, .receiverGone: return nil  // a gone peer's connection ends by itself
                case .timedOut: return .peerNotReading
                }
            } catch {
                return error
            }
        }
    }

    // MARK: Invalidation

    /// Calls `handler` on `loop`'s thread once the port this right leads to
    /// is gone (its owner invalidated it or exited), without having to send.
    /// Costs one descriptor while the right is watched.
    public func onInvalidation(
        in loop: PCRunLoop, forMode mode: PCRunLoop.Mode = .common, _ handler: @escaping () -> Void
    ) throws(SystemCallError) {
        // EPOLLRDHUP without EPOLLIN: replies arriving do not trigger it, a
        // hang-up does (epoll also always reports EPOLLHUP/EPOLLERR).
        guard let connection = currentConnection() else {
            throw SystemCallError(call: "epoll_ctl(ADD)", errno: .badFileDescriptor)  // an invalidated right
        }
        // The source watches a duplicate of the connection (closed with the
        // source, which `invalidate()` takes down first): epoll holds one
        // entry per descriptor and open file in a set, so the duplicate lets
        // a request's reply source watch the same connection in the same
        // mode (a server on one loop that watches its rights and requests
        // on them, `request(_:on:completion:)`).
        let watched = SharedDescriptor(try Descriptor.duplicate(connection.descriptor))
        let source = PortSource(sharing: watched, events: [.readHangUp]) { s in
            s.invalidate()
            handler()
        }
        lock.withLock { invalidationSources.append(source) }
        try loop.add(source, forMode: mode)
    }
}
