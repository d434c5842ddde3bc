// PortNameServer: the client of portd, NSMessagePortNameServer's analogue
// (Foundation on Linux declares no PortNameServer, so no prefix): register
// a port under a name, look a port up by name (optionally waiting for it),
// release a name, watch owner changes, list names, ask who owns one, ask
// for portd's status, and claim a declared port (launchd's check-in).
//
// One instance is one client connection to portd's control socket (path
// from DaemonPaths). Names it registers belong to that connection: portd
// releases them the moment it closes (invalidate(), deinit, exit, crash).
// A client told to `reconnectAutomatically` replaces its connection when
// portd goes and comes back, and registers its names again
// (PortNameServer+Reconnect).
// Every request is a port message with REPLY_EXPECTED whose first field is
// its serial; the connection opens with HELLO (protocol 1.0). Requests from
// any number of threads overlap on the one connection (ControlChannel
// matches each reply to its request by serial), so a lookup that waits for
// a name does not hold up the others.
//
// Lookups ask portd every time: `lookup(_:)`, `port(forName:)` (as
// NSPortNameServer's portForName: asks the bootstrap server) and
// `send(_:to:)` reach whoever owns the name *now*, and a name removed is
// nil at once, even while its old owner's port lives on.
//
// Lookup cache, opt-in (`lookup(..., cached: true)`): a right found is kept
// per name and handed out again while its port lives; before reusing one,
// poll(2) asks the kernel whether the connection hung up (the port's owner
// invalidated it or died), and a dead one is dropped and looked up afresh.
// A right to an owner that gave the name up or was *replaced* but still
// lives keeps leading to that owner, which is why the cache is not the
// default: `forget(_:)` or an uncached lookup asks again. The cache only
// shares rights, never owns them for their holders: a right handed out
// lives as long as its holder keeps it, whatever becomes of this client
// (invalidate, deinit) or of the cache entry (forget, a newer lookup).
//
// The shared client (`PortNameServer.shared`, NSMessagePortNameServer's
// sharedInstance) is made on first use and kept for the process's life, so
// the names registered through it last until removed, their port is
// invalidated, or the process exits.
//
// Threads: safe from any thread. Mutable state (`cache`, `acquisitions`) is
// behind `state`'s lock; the control right is immutable and serialises its
// own requests.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire
import Synchronization

public final class PortNameServer: Sendable {
    /// The control socket's path.
    public let socketPath: String
    /// Where the socket is and how that was decided (for the directory check).
    let location: DaemonSocketLocation
    /// The bound of each request (and of the connect): no reply within it is `.timedOut`.
    public let timeout: Duration
    /// The connection to portd and the relay of its loss; replaced when
    /// the client reconnects (`reconnectAutomatically`).
    let connection: Mutex<Connection>
    let limits: PortLimits
    package let state = Mutex(State())

    struct Connection {
        var control: SendRight { channel.right }
        var channel: ControlChannel
        var lossRelay = ConnectionLossRelay()
    }

    /// What portd said in HELLO on this connection: the protocol version,
    /// its limits and features (says HELLO first if no request did yet).
    public func daemonHello() throws(NameServerError) -> NameServerHello {
        let channel = connection.withLockAnnotated { $0.channel }
        guard let hello = try channel.hello(timeout: timeout) else {
            throw .timedOut("portd at \(socketPath) did not answer HELLO within \(Self.seconds(timeout))")
        }
        return hello
    }

    /// The current connection to portd.
    private var control: SendRight { connection.withLockAnnotated { $0.control } }

    package struct State {
        var cache: [String: SendRight] = [:]
        /// Notification ports of queued registrations, until they get their name.
        var acquisitions: [ObjectIdentifier: PCPort] = [:]
        /// The ports of running watches (they end with the connection).
        var watches: [ObjectIdentifier: PCPort] = [:]
        /// The names this client owns or checked in, registered again after
        /// a reconnection (see PortNameServer+Reconnect).
        var kept: [String: KeptName] = [:]
        /// Set by `reconnectAutomatically`.
        var reconnection: Reconnection?
        /// `invalidate()` was called: never reconnect.
        var closed = false
    }

    /// Connects to portd at `location`. The per-user fallback directory
    /// under /tmp is checked to be private first (DaemonDirectory).
    public init(
        location: DaemonSocketLocation, timeout: Duration = .seconds(5), limits: PortLimits = .default
    ) throws(NameServerError) {
        self.location = location
        self.socketPath = location.path
        self.timeout = timeout
        self.limits = limits
        self.connection = Mutex(try Self.connect(checking: location, timeout: timeout, limits: limits))
    }

    /// Checks the socket's directory (the per-user fallback under /tmp must
    /// be private: DaemonDirectory), connects, and checks it again. Every
    /// connection, the first and each reconnection, goes through here: a
    /// directory someone else made while portd was away is refused, not
    /// trusted. The second check closes the window between the first and
    /// the connect: a directory made public before a portd listened in it
    /// is seen by at least one of the two.
    static func connect(
        checking location: DaemonSocketLocation, timeout: Duration, limits: PortLimits
    ) throws(NameServerError) -> Connection {
        func check() throws(NameServerError) {
            do {
                try DaemonDirectory.check(location, userID: CurrentProcess.userID)
            } catch {
                throw .untrustedDirectory(error.description)
            }
        }
        try check()
        let right = try connect(location.path, timeout: timeout, limits: limits)
        do {
            try check()
        } catch {
            right.invalidate()
            throw error
        }
        return Connection(channel: ControlChannel(right: right, limits: limits, timeout: timeout))
    }

    /// Connects to the portd this process's environment names: PORTD_SOCKET,
    /// else the system instance (`instance: .system`), else the per-user one.
    public convenience init(
        instance: DaemonInstance? = nil, timeout: Duration = .seconds(5), limits: PortLimits = .default
    ) throws(NameServerError) {
        try self.init(
            location: DaemonPaths.resolve(
                explicitPath: nil, instance: instance, userID: CurrentProcess.userID,
                environment: CurrentProcess.environment),
            timeout: timeout, limits: limits)
    }

    /// Connects to portd at the socket `path`.
    public convenience init(
        socketPath path: String, timeout: Duration = .seconds(5), limits: PortLimits = .default
    ) throws(NameServerError) {
        try self.init(location: DaemonSocketLocation(path: path, origin: .option), timeout: timeout, limits: limits)
    }

    deinit { invalidate() }

    /// Closes the connection: portd releases every name it registered and
    /// drops its queue places and watches; local watches end (their
    /// AsyncSequences finish). Rights it looked up keep working for whoever
    /// holds them. Idempotent.
    public func invalidate() {
        let ports = state.withLockAnnotated { s in
            defer {
                s.cache.removeAll()
                s.acquisitions.removeAll()
                s.watches.removeAll()
                s.kept.removeAll()
                s.reconnection = nil
                s.closed = true
            }
            return Array(s.acquisitions.values) + Array(s.watches.values)
        }
        for port in ports { port.invalidate() }
        control.invalidate()
    }

    /// Whether the connection is open on our side.
    public var isValid: Bool { control.isValid }

    /// Calls `handler` on `loop`'s thread, once, when portd closes this
    /// client's connection (it stopped, or dropped this client): the names
    /// it held are gone then, and its watches and queue places ended.
    /// Any number of handlers may wait; not called after `invalidate()`.
    /// Registered after the loss was seen on that loop and mode, `handler`
    /// runs at once, on the calling thread.
    public func onConnectionLoss(
        in loop: PCRunLoop, forMode mode: PCRunLoop.Mode = .common, _ handler: @escaping () -> Void
    ) throws(NameServerError) {
        let key = ConnectionLossRelay.Key(loop: ObjectIdentifier(loop), mode: mode)
        let (control, lossRelay) = connection.withLockAnnotated { ($0.control, $0.lossRelay) }
        guard lossRelay.add(handler, for: key) else { return }
        do {
            try control.onInvalidation(in: loop, forMode: mode) { [lossRelay] in lossRelay.fire(key) }
        } catch {
            lossRelay.remove(key)
            throw .transport(.system(error))
        }
    }

    /// Lends the connection to portd (nil once it is closed on our side),
    /// for a program that waits for its hang-up with poll(2) instead of a
    /// run loop (`portctl register` while its command runs).
    package func withConnection<R: ~Copyable, E: Error>(_ body: (borrowing OwnedDescriptor) throws(E) -> R) throws(E) -> R? {
        try control.withDescriptor(body)
    }

    // MARK: Connecting

    /// A blocking connect bounded by SO_SNDTIMEO (the only way AF_UNIX
    /// offers to wait for room in a full backlog). The socket stays
    /// blocking: the control channel's reader sleeps in recvmsg on it
    /// (ControlChannel); every other send and receive of the port layer
    /// says MSG_DONTWAIT, and the rest only polls it.
    private static func connect(_ path: String, timeout: Duration, limits: PortLimits) throws(NameServerError) -> SendRight {
        func mapped(_ error: SystemCallError) -> NameServerError {
            switch error.errno {
            case .noSuchFileOrDirectory, .notDirectory, .connectionRefused: .notRunning(socket: path)
            case .protocolWrongTypeForSocket: .notPortd(socket: path)
            case .permissionDenied, .notPermitted: .permissionDenied(socket: path)
            default: .transport(.system(error))
            }
        }
        let fd: OwnedDescriptor  // closed on any failure below
        do {
            fd = try LocalSocket.make(.seqPacket, nonBlocking: false)
        } catch {
            throw .transport(.system(error))
        }
        let outcome: LocalSocket.ConnectResult
        do throws(SystemCallError) {
            try LocalSocket.setSendTimeout(fd, timeout)
            outcome = try LocalSocket.connect(fd, path: path)
        } catch {
            throw mapped(error)
        }
        if outcome == .wouldBlock {
            throw .timedOut("connecting to portd at \(path) (its backlog stayed full)")
        }
        return SendRight(descriptor: fd, limits: limits)
    }

    // MARK: The exchange

    /// Sends one request (`msgid`, its serial, `fields`) and returns
    /// portd's reply, taken apart.
    package func exchange(
        _ msgid: UInt32, _ fields: [NameServerField], replyPort: SendRight? = nil, what: @autoclosure () -> String,
        receiveTimeout: Duration? = nil
    ) throws(NameServerError) -> NameServerReply<SendRight> {
        switch try exchangeReply(msgid, .fields(fields), replyPort: replyPort, what: what(), receiveTimeout: receiveTimeout) {
        case .message(let message): return try NameServerReply(message)
        case .lookup: preconditionFailure("only a LOOKUP's reply is read in place")
        }
    }

    /// `exchange`'s reply, before it is taken apart. `what` (for the
    /// error messages) is made only when one is thrown.
    func exchangeReply(
        _ msgid: UInt32, _ body: ControlChannel.Body, replyPort: SendRight? = nil, what: @autoclosure () -> String,
        receiveTimeout: Duration? = nil
    ) throws(NameServerError) -> ControlChannel.Reply {
        let channel = connection.withLockAnnotated { $0.channel }
        let receiveTimeout = receiveTimeout ?? timeout
        switch try channel.request(msgid, body, replyPort: replyPort, sendTimeout: timeout, receiveTimeout: receiveTimeout) {
        case .reply(let reply): return reply
        case .greeted: preconditionFailure("only HELLO alone is answered by the greeting")
        case .sendTimedOut:
            throw .timedOut("portd at \(socketPath) took no request within \(Self.seconds(timeout)) (sending \(what()))")
        case .receiveTimedOut:
            throw .timedOut("portd at \(socketPath) did not answer \(what()) within \(Self.seconds(receiveTimeout))")
        }
    }

    private func request(
        _ msgid: UInt32, _ fields: [NameServerField], what: @autoclosure () -> String, replyPort: SendRight? = nil,
        receiveTimeout: Duration? = nil
    ) throws(NameServerError) -> NameServerReply<SendRight> {
        try exchange(msgid, fields, replyPort: replyPort, what: what(), receiveTimeout: receiveTimeout)
    }

    private typealias F = NameServerProtocol.Field

    /// "5 s", "0.25 s": a duration for messages.
    package static func seconds(_ d: Duration) -> String {
        let ms = d.nanosecondsClamped / 1_000_000
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(Double(ms) / 1000) s"
    }

    package static func checkName(_ name: String) throws(NameServerError) {
        if let problem = NameServerProtocol.nameProblem(name) { throw .invalidName("\"\(name)\": \(problem)") }
    }

    /// A local port for the receive right of `name` that came in a reply
    /// (the PORT component decodes as a SendRight; it is a listening socket here).
    package static func receivePort(from right: SendRight, name: String, limits: PortLimits) throws(NameServerError) -> PCPort {
        do throws(SystemCallError) {
            // The port gets its own duplicate; the right keeps (and closes) the one that came.
            let duplicate = try right.withDescriptor { (fd) throws(SystemCallError) in try Descriptor.duplicate(fd) }
            guard let duplicate else { throw SystemCallError(call: "fcntl(F_DUPFD_CLOEXEC)", errno: .badFileDescriptor) }
            let port = try PCPort(listeningDescriptor: duplicate, limits: limits)
            port.nameListeningSocket(name)
            return port
        } catch {
            throw .transport(.system(error))
        }
    }

    // MARK: Status, list, owner

    /// portd's version, pid, uptime and counters.
    public func status() throws(NameServerError) -> NameServerStatus {
        let reply = try request(NameServerProtocol.MessageID.status, [], what: "STATUS")
        guard !reply.isError else { throw reply.unexpected(for: "STATUS") }
        return try NameServerError.parsing { () throws(NameServerProtocol.Violation) in try NameServerStatus(reply) }
    }

    /// Every registered name with its owner, in portd's order.
    public func list() throws(NameServerError) -> [NameEntry] {
        var entries: [NameEntry] = []
        var after: [NameServerField] = []
        while true {
            let reply = try request(NameServerProtocol.MessageID.list, after, what: "LIST")
            guard !reply.isError else { throw reply.unexpected(for: "LIST") }
            let page = try NameServerError.parsing { () throws(NameServerProtocol.Violation) in try reply.listPage() }
            entries += page.entries
            // The reply did not hold every name: ask for those after the
            // last one. A page may be empty (portd looked at its share of
            // names this client may not see): ask again with the same
            // `after=`, and portd goes on where it stopped.
            guard page.more else { return entries }
            if let last = entries.last { after = [NameServerField(F.after, last.name)] }
        }
    }

    /// Who owns `name`, since when, and who waits for it; nil when nobody
    /// owns it. A long queue comes in pages (OWNER with "from=N"), which
    /// this follows to the end; when the owner changes between two pages,
    /// it starts again (at most `ownerAttempts` times, then the last
    /// owner's pages are returned as they came). The queue is read a page
    /// at a time, not at one instant: a process that joins or leaves it
    /// meanwhile may be missed or named twice.
    public func owner(_ name: String) throws(NameServerError) -> NameOwner? {
        try Self.checkName(name)
        var attempt = 0
        restart: while true {
            attempt += 1
            var result: NameOwner?
            while true {
                let from = result?.queued.count ?? 0
                let fields = [NameServerField(F.name, name)] + (from == 0 ? [] : [NameServerField(F.from, from)])
                let reply = try request(NameServerProtocol.MessageID.owner, fields, what: "OWNER \(name)")
                switch reply.errorWord {
                case nil where !reply.isError:
                    break
                case .notFound:
                    if result == nil || attempt >= Self.ownerAttempts { return nil }
                    continue restart  // the owner went between two pages
                default:
                    throw reply.unexpected(for: "OWNER")
                }
                let page = try NameServerError.parsing { () throws(NameServerProtocol.Violation) in
                    try NameOwner(reply: reply)
                }
                if let first = result {
                    if first.owner != page.owner || first.sinceMilliseconds != page.sinceMilliseconds {
                        if attempt < Self.ownerAttempts { continue restart }
                        return page
                    }
                    result!.queued += page.queued
                } else {
                    result = page
                }
                // A page that names nobody cannot move on: the queue ended.
                guard reply.more, !page.queued.isEmpty else { return result }
            }
        }
    }

    /// How many times `owner(_:)` starts again when the owner changes
    /// between two pages.
    static let ownerAttempts = 4

    // MARK: Register, release, declared check-in

    /// Asks for `name`. With `onAcquire`, a taken name may queue us: the
    /// handler then gets the port on `loop` (the background loop by
    /// default) when the owners before us go. Without it, the request is
    /// made with do-not-queue: a taken name is `.alreadyOwned`. With
    /// `onLost`, a name we own (now or once acquired) that another client
    /// replaces (we registered with `.allowReplacement`) is reported on
    /// `loop`'s thread with the new owner (NAME_LOST); our port then
    /// receives nothing more from new senders.
    /// `remote`: the host(s) the name is served for, for a bridge that
    /// registers a name it imports (REGISTER's `remote=`, where portd
    /// states the feature `remote`): LIST and OWNER show it.
    public func register(
        _ name: String, options: RegistrationOptions = [], loop: PCRunLoop? = nil, remote: String? = nil,
        onAcquire: (@Sendable (PCPort) -> Void)? = nil, onLost: ((NameOwner.Process) -> Void)? = nil
    ) throws(NameServerError) -> RegistrationOutcome {
        try Self.checkName(name)
        var options = options
        if onAcquire == nil { options.insert(.doNotQueue) }
        var notifier: PCPort?
        var notifierRight: SendRight?
        if onAcquire != nil || onLost != nil {
            let port = PCPort(limits: limits)
            let limits = self.limits
            port.setHandler { [weak self, weak port] message in
                switch try? NameServerNotification(message) {
                case .acquired(_, _, let right):
                    guard let onAcquire, let acquired = try? Self.receivePort(from: right, name: name, limits: limits) else { return nil }
                    if onLost == nil, let port {
                        _ = self?.state.withLockAnnotated { $0.acquisitions.removeValue(forKey: ObjectIdentifier(port)) }
                        port.invalidate()
                    }
                    onAcquire(acquired)
                case .lost(_, _, let newOwner):
                    guard let onLost else { return nil }
                    if let port {
                        _ = self?.state.withLockAnnotated { $0.acquisitions.removeValue(forKey: ObjectIdentifier(port)) }
                        port.invalidate()
                    }
                    onLost(newOwner)
                case .ownerChanged, .watchOverflow, nil:
                    break
                }
                return nil
            }
            do {
                notifierRight = try port.makeSendRight()
            } catch {
                throw .transport(error)
            }
            notifier = port
        }
        let reply = try request(
            NameServerProtocol.MessageID.register,
            [NameServerField(F.name, name)] + options.words.map { NameServerField(F.option, $0) }
                + (remote.map { [NameServerField(F.remote, $0)] } ?? []), what: "REGISTER \(name)",
            replyPort: notifierRight)
        notifierRight = nil
        let result = reply.isError ? nil : reply.value(F.result).flatMap(NameServerProtocol.RegisterResult.init(rawValue:))
        switch result {
        case .registered:
            guard let right = reply.ports.first else {
                notifier?.invalidate()
                throw .protocolError("a REGISTER reply without a port")
            }
            if onLost != nil, let notifier {
                // Kept to hear NAME_LOST, until it comes or this client closes.
                state.withLockAnnotated { $0.acquisitions[ObjectIdentifier(notifier)] = notifier }
                do {
                    try notifier.schedule(in: loop ?? BackgroundLoop.shared.loop, forMode: .default)
                } catch {
                    throw .transport(error)
                }
            } else {
                notifier?.invalidate()
            }
            let port = try Self.receivePort(from: right, name: name, limits: limits)
            keep(name, port, .registered(options.union(.doNotQueue)))
            return .registered(port)
        case .queued:
            guard let notifier else { throw .protocolError("queued although the request said do-not-queue") }
            state.withLockAnnotated { $0.acquisitions[ObjectIdentifier(notifier)] = notifier }
            do {
                try notifier.schedule(in: loop ?? BackgroundLoop.shared.loop, forMode: .default)
            } catch {
                throw .transport(error)
            }
            return .queued
        case nil:
            notifier?.invalidate()
            guard reply.errorWord == .alreadyOwned else { throw reply.unexpected(for: "REGISTER") }
            return .alreadyOwned(
                try NameServerError.parsing { () throws(NameServerProtocol.Violation) in
                    try reply.record.owner(F.owner, in: "already-owned")
                })
        }
    }

    /// Gives `name` up (or leaves its queue).
    public func release(_ name: String) throws(NameServerError) -> ReleaseOutcome {
        try Self.checkName(name)
        let reply = try request(NameServerProtocol.MessageID.release, [NameServerField(F.name, name)], what: "RELEASE \(name)")
        switch reply.errorWord {
        case nil where !reply.isError:
            let kept = state.withLockAnnotated { $0.kept.removeValue(forKey: name) }
            // The port may be named again, under this name or another.
            kept?.port?.retireListeningSocket(name: name)
            return .released
        case .notOwner: return .notOwner
        default: throw reply.unexpected(for: "RELEASE")
        }
    }

    /// Claims the receive right of a port declared in portd.conf (launchd's
    /// check-in). Only the declared owner may; anyone else gets `.denied`.
    public func checkIn(declaredName name: String) throws(NameServerError) -> DeclaredCheckInOutcome {
        try Self.checkName(name)
        let reply = try request(NameServerProtocol.MessageID.checkIn, [NameServerField(F.name, name)], what: "CHECKIN \(name)")
        switch reply.errorWord {
        case nil where !reply.isError:
            guard let right = reply.ports.first else { throw .protocolError("a CHECKIN reply without a port") }
            let port = try Self.receivePort(from: right, name: name, limits: limits)
            keep(name, port, .checkedIn)
            return .checkedIn(port)
        case .notDeclared:
            return .notDeclared
        default:
            throw reply.unexpected(for: "CHECKIN")
        }
    }

    // MARK: Lookup

    /// Asks portd for a send right to `name`'s port, waiting up to `wait`
    /// for the name to appear (nil or zero: no wait). Not cached.
    public func resolve(_ name: String, wait: Duration? = nil) throws(NameServerError) -> LookupOutcome {
        try Self.checkName(name)
        var waitMilliseconds: Int?
        var receiveTimeout = timeout
        if let wait, wait > .zero {
            waitMilliseconds = Int(max(1, (wait.nanosecondsClamped + 999_999) / 1_000_000))
            receiveTimeout = wait + timeout
        }
        // A plain "found", "not-found" or "timeout" is read in place from
        // the receive buffer (ControlChannel, `lookupOutcomeInPlace`); any
        // other reply is taken apart as every reply is.
        switch try exchangeReply(
            NameServerProtocol.MessageID.lookup, .lookup(name: name, waitMilliseconds: waitMilliseconds),
            what: "LOOKUP \(name)", receiveTimeout: receiveTimeout)
        {
        case .lookup(let outcome): return outcome
        case .message(let message): return try Self.lookupOutcome(NameServerReply(message))
        }
    }

    /// The outcome a LOOKUP reply, taken apart, stands for.
    static func lookupOutcome(_ reply: NameServerReply<SendRight>) throws(NameServerError) -> LookupOutcome {
        switch reply.errorWord {
        case nil where !reply.isError:
            guard let right = reply.ports.first else { throw .protocolError("a LOOKUP reply without a port") }
            return .found(
                right,
                owner: try NameServerError.parsing { () throws(NameServerProtocol.Violation) in
                    try reply.record.owner(F.owner, in: "the LOOKUP reply")
                })
        case .notFound: return .notFound
        case .timeout: return .timedOut
        default: throw reply.unexpected(for: "LOOKUP")
        }
    }

    /// A send right to `name`'s port, or nil when nobody owns it (within
    /// `wait`, when given): portd is asked each time. With `cached`, a right
    /// found earlier is reused while its port lives, even if its owner has
    /// given the name up since (see the top of this file).
    public func lookup(_ name: String, wait: Duration? = nil, cached: Bool = false) throws(NameServerError) -> SendRight? {
        if cached, let right = cachedRight(name) { return right }
        switch try resolve(name, wait: wait) {
        case .found(let right, _):
            // A right this replaces in the cache stays with its holders.
            if cached { state.withLockAnnotated { $0.cache[name] = right } }
            return right
        case .notFound, .timedOut:
            return nil
        }
    }

    /// Drops the cached right for `name`, if any (holders of it keep it).
    public func forget(_ name: String) {
        _ = state.withLockAnnotated { $0.cache.removeValue(forKey: name) }
    }

    /// The cached right for `name` when its connection has not hung up.
    private func cachedRight(_ name: String) -> SendRight? {
        guard let right = state.withLockAnnotated({ $0.cache[name] }) else { return nil }
        if right.isValid,
            let ready = try? right.withDescriptor({ (fd) throws(SystemCallError) in
                try Poll.wait(fd, for: .readHangUp, timeout: .zero)
            }),
            ready.isDisjoint(with: [.hangUp, .error, .readHangUp])
        {
            return right
        }
        state.withLockAnnotated { s in
            if s.cache[name] === right { s.cache[name] = nil }
        }
        return nil  // its holders, if any, find it hung up
    }

    /// Sends `message` to `name`'s port, to whoever owns the name now:
    /// looks it up, and when the port turns out to be gone by the time of
    /// the send (its owner left in between), looks it up once more.
    /// Returns nil when nobody owns the name.
    @discardableResult
    public func send(_ message: PCPortMessage, to name: String, timeout sendTimeout: Duration? = nil) throws(NameServerError)
        -> SendResult?
    {
        for attempt in 0..<2 {
            guard let right = try lookup(name) else { return nil }
            let result: SendResult
            do {
                result = try right.send(message, timeout: sendTimeout ?? timeout)
            } catch {
                throw .transport(error)
            }
            if result == .receiverGone && attempt == 0 {
                forget(name)
                continue
            }
            return result
        }
        return .receiverGone
    }
}
