// PCPort: a local port, the receive endpoint of port messages (NSPort /
// NSMachPort; Foundation's Port, hence the prefix). A port is owned by one
// process; it is scheduled on a run loop in one or more modes like any
// port-based source, and calls its handler (or delegate) once per message,
// on that loop's thread, in the order each sender sent them.
//
// Kernel objects: every right to the port is a connected SOCK_SEQPACKET
// socket; the port holds the receiving end of each (one PortSource per
// connection) and, for a named port, the listening socket whose accepted
// connections are new rights. An anonymous port (NSMachPort) has no name and
// no path: `makeSendRight()` mints a right with socketpair().
//
// Failure rule: a connection whose peer sends a malformed record is closed
// (its descriptors too) and reported to `onError`; the port keeps serving
// every other connection. When accept fails for lack of descriptors
// (EMFILE/ENFILE) the listening socket leaves the loops, so a
// level-triggered listener cannot spin, and returns when a connection closes.
//
// Ownership: each connection is a SharedDescriptor held by its PortSource
// (and by the one-shot reply right of a request that came in on it), so it
// closes once both let go; the listening socket is held by the port and by
// its listener source until `invalidate()`. A listening socket replaced by
// a new name's (the port named again after its name was removed, or by a
// new portd) is held by its source alone, which stays in its loops only
// until the connections waiting on it are accepted, then closes it.
//
// Lifetime (NSRunLoop addPort:forMode: retains the port): while the port is
// scheduled, each (loop, mode) it is in holds an anchor, a custom source that
// never fires, whose closure holds the port. So a scheduled port lives, and
// keeps its mode non-empty (run() blocks) even with no connection yet, until
// it is removed from that mode, invalidated, or the loop itself goes. The
// port holds its anchors and loops weakly, so nothing cycles.
//
// Fair service: one pass of the loop handles at most `recordsPerPass`
// records of a connection (and accepts at most `acceptsPerPass` new
// ones); epoll is level-triggered, so what is left is reported in the next
// pass, after every other ready connection had its turn. A peer that sends
// without waiting for replies cannot make the port's other peers wait for
// more than one share per pass. A server that also bounds what one user's
// connections get in a pass, however many it opens, gives the port a
// pacing closure (`setPacing`), asked before a pass reads a connection:
// a connection it holds back stays ready and is reported in the next pass.
//
// Views: a port given a view handler (`PCPort(viewHandler:)`,
// `setViewHandler`) lends each message to it as a PortMessageView read in
// place from the receive buffer (MessageTransport.receiveView), valid for
// that call; the closure handler and the view handler exclude each other
// (setting one clears the other), and the delegate is called only when
// neither is set. Everything else (requests and their replies, monitors,
// fair service, errors, admission) is the same for both.
//
// Monitoring (PortMonitor, MonitorHub): a port its owner made monitorable
// copies each message it delivers to the monitors that subscribed; the
// delivery path pays one branch when the port is not monitorable, and a
// SUBSCRIBE is answered by the port itself, never seen by the handler.
//
// Threads: the port's mutable state is protected by `lock`; handlers run on
// the scheduled loop's thread only.

import Logging
import PortRunLoop
import PortSystem
import PortWire
import Synchronization

/// Receives the messages of a PCPort (NSPortDelegate; Foundation's
/// PortDelegate, hence the prefix).
public protocol PCPortDelegate: AnyObject {
    /// Called once per message on the port's run-loop thread. For a request
    /// (`message.replyPort` set by `SendRight.request`), the returned
    /// message is the reply; returning nil from a request sends an empty reply
    /// with the request's msgid.
    func handle(_ message: PCPortMessage, on port: PCPort) -> PCPortMessage?
}

/// One mode of one loop the port is scheduled in. Weak both ways: the
/// loop holds the anchor, the anchor holds the port.
private struct Scheduling {
    weak var loop: PCRunLoop?
    let mode: PCRunLoop.Mode
    weak var anchor: RunLoopSource?
}

public final class PCPort: @unchecked Sendable, CustomStringConvertible {
    // Safe to share: immutable fields are set in init; `connections`,
    // `listening`, `listener`, `schedulings`, `valid`, `delegate`, `handler`,
    // `onError`, `acceptPaused`, `monitors` and `pacing` are accessed with
    // `lock` held; `transport` only on the loop thread inside a handler (one
    // loop per port); `viewing` and `paced` are atomic.
    public typealias Handler = (PCPortMessage) -> PCPortMessage?
    /// A view handler: gets each message lent as a view, valid during the
    /// call (see `PortMessageView`); returns the reply to a request.
    public typealias ViewHandler = (borrowing PortMessageView) -> PCPortMessage?

    private let lock = Lock()
    /// The handler closure, boxed once when set: reading a class reference
    /// under the lock costs a retain, where reading the closure itself made
    /// a reabstraction thunk, a heap allocation per message.
    private var handler: HandlerBox?
    /// The view handler, boxed the same way; nil when `handler` is set.
    private var viewHandler: ViewHandlerBox?
    /// Whether `viewHandler` is set, for `serve` to choose how to receive
    /// a pass's records (and `deliver` whether to look for a view handler)
    /// without taking the lock; written with `lock` held.
    private let viewing = Atomic<Bool>(false)
    /// The lock every one-shot reply right of this port shares (see
    /// SendRight's `lock`): no allocation for it per request.
    private let replyLock = Lock()
    private weak var delegate: PCPortDelegate?
    private var errorHandler: ((PortError) -> Void)?
    private var connections: [UInt64: PortSource] = [:]  // by connection id
    /// The listening socket of a named port; nil for an anonymous port and
    /// once invalidated.
    private var listening: SharedDescriptor?
    private var listener: PortSource?
    private var schedulings: [Scheduling] = []
    /// The (loop, mode) pairs the port is in, live loops only; lock held.
    private var scheduled: [(loop: PCRunLoop, mode: PCRunLoop.Mode)] {
        schedulings.compactMap { s in s.loop.map { ($0, s.mode) } }
    }
    private var valid = true
    private var invalidationHandlers: [() -> Void] = []
    private var disconnectHandler: ((UInt64) -> Void)?
    private var admission: ((UInt64, Credentials?) -> PCPortMessage?)?
    /// `setPacing`'s closure, boxed as `handler` is.
    private var pacing: PacingBox?
    /// Whether `pacing` is set, for `serve` to skip the lock without it;
    /// written with `lock` held.
    private let paced = Atomic<Bool>(false)
    private var nextConnectionID: UInt64 = 1
    private var acceptPaused = false
    /// The listening socket's name was given up (`retireListeningSocket`):
    /// the socket still serves what was connected to it, and the next
    /// name adopted replaces it.
    private var listeningRetired = false
    /// Listening sockets replaced by a new name's while connections made
    /// to them were still waiting to be accepted: each stays in its loops
    /// until its backlog is accepted (`acceptAll`), then closes.
    private var replacedListeners: [PortSource] = []
    /// `recordsPerPass`: an atomic, read on every pass of every
    /// connection without taking `lock`.
    private let fairShare = Atomic<Int>(PCPort.defaultRecordsPerPass)
    /// The monitors, when the port is monitorable (`allowsMonitoring`).
    private var monitors: MonitorHub?
    private let transport: MessageTransport
    /// "listening fd N" for a named port, for `description`.
    private let listeningDescription: String?
    public let limits: PortLimits
    /// Where problems with peers are logged (malformed records and the like).
    public let logger: Logger

    /// An anonymous port; messages go to `handler`.
    public init(limits: PortLimits = .default, logger: Logger = Logger(label: "PortCore.port"), handler: Handler? = nil) {
        self.limits = limits
        self.logger = logger
        self.handler = handler.map(HandlerBox.init)
        self.transport = MessageTransport(limits: limits)
        self.listeningDescription = nil
    }

    /// An anonymous port whose messages are lent to `viewHandler` as views
    /// read in place from the receive buffer (see `PortMessageView`).
    /// Pass it labelled: an unlabelled trailing closure that would type-check
    /// as either kind of handler makes the closure-handler port.
    @_disfavoredOverload  // so that `PCPort { _ in nil }` stays a closure-handler port
    public convenience init(
        limits: PortLimits = .default, logger: Logger = Logger(label: "PortCore.port"),
        viewHandler: @escaping ViewHandler
    ) {
        self.init(limits: limits, logger: logger)
        setViewHandler(viewHandler)
    }

    /// A port whose rights are connections to the listening socket
    /// `listeningDescriptor` (the receive right the name server hands out),
    /// which it takes over (and closes when it fails).
    public init(
        listeningDescriptor: consuming OwnedDescriptor, limits: PortLimits = .default,
        logger: Logger = Logger(label: "PortCore.port"), handler: Handler? = nil
    ) throws(SystemCallError) {
        try UnixSocket.setPassCredentials(listeningDescriptor, true)
        self.limits = limits
        self.logger = logger
        self.handler = handler.map(HandlerBox.init)
        self.transport = MessageTransport(limits: limits)
        self.listeningDescription = "listening fd \(listeningDescriptor.description)"
        self.listening = SharedDescriptor(listeningDescriptor)
    }

    /// A port on the listening socket `listeningDescriptor` (as above)
    /// whose messages are lent to `viewHandler` as views (see
    /// `PortMessageView`).
    @_disfavoredOverload  // as the anonymous one: a closure handler wins a tie
    public convenience init(
        listeningDescriptor: consuming OwnedDescriptor, limits: PortLimits = .default,
        logger: Logger = Logger(label: "PortCore.port"), viewHandler: @escaping ViewHandler
    ) throws(SystemCallError) {
        try self.init(listeningDescriptor: listeningDescriptor, limits: limits, logger: logger)
        setViewHandler(viewHandler)
    }

    deinit {
        invalidate()
    }

    public var description: String { "PCPort(\(listeningDescription ?? "anonymous"))" }

    /// The delegate called for each message when neither a handler closure
    /// nor a view handler is set.
    public func setDelegate(_ d: PCPortDelegate?) { lock.withLock { delegate = d } }

    /// Sets the closure called for each message (a view handler is cleared).
    public func setHandler(_ h: Handler?) {
        let box = h.map(HandlerBox.init)
        lock.withLock {
            handler = box
            if box != nil {
                viewHandler = nil
                viewing.store(false, ordering: .relaxed)
            }
        }
    }

    /// Sets the closure each message is lent to as a view, read in place
    /// from the receive buffer without copying its data (a closure handler
    /// is cleared). The view is valid only during the call: what the
    /// handler keeps it copies out (`PortMessageView.copy()`,
    /// `bytes(ofComponent:)`). For a request the returned message is the
    /// reply (nil: an empty reply), and a kept `view.replyPort` answers
    /// later, as with `setHandler`. Monitors get `view.copy()`.
    public func setViewHandler(_ h: ViewHandler?) {
        let box = h.map(ViewHandlerBox.init)
        lock.withLock {
            viewHandler = box
            if box != nil { handler = nil }
            viewing.store(box != nil, ordering: .relaxed)
        }
    }

    /// Called on the loop thread when a connection misbehaves (it is closed).
    public func onError(_ h: ((PortError) -> Void)?) { lock.withLock { errorHandler = h } }

    /// Called on the loop thread, in the pass that sees it, when a
    /// connection (a right's holder) hangs up or is closed for misbehaving,
    /// with the `connectionID` its messages carried.
    public func onDisconnect(_ h: ((UInt64) -> Void)?) { lock.withLock { disconnectHandler = h } }

    /// Decides, for each connection accepted, whether it is served: `h`
    /// gets the connection's id and who made it (SO_PEERCRED) and returns
    /// nil to serve it, or a refusal: that message is sent on the
    /// connection (never waiting: a new connection's queue is empty) and
    /// the connection closed, so a refused peer costs no descriptor. A
    /// requester then finds the refusal as the reply to its request (see
    /// `SendRight.request`). Called on the loop thread; no disconnect
    /// event follows for a refused connection.
    public func setAdmission(_ h: ((_ connectionID: UInt64, _ peer: Credentials?) -> PCPortMessage?)?) {
        lock.withLock { admission = h }
    }

    /// Decides, before a pass reads a connection's share, whether it is
    /// read in this pass: `h` gets the connection's id and who made it
    /// (SO_PEERCRED) and returns false to leave its records (and a
    /// hang-up) where they are; epoll is level-triggered, so the
    /// connection is reported again in the next pass. For a server that
    /// bounds what the connections of one user get in one pass, however
    /// many it opens (portd). nil, the default: every ready connection is
    /// read in its turn. Called on the loop thread.
    package func setPacing(_ h: ((_ connectionID: UInt64, _ peer: Credentials?) -> Bool)?) {
        let box = h.map(PacingBox.init)
        lock.withLock {
            pacing = box
            paced.store(box != nil, ordering: .relaxed)
        }
    }

    /// The default of `recordsPerPass`.
    public static let defaultRecordsPerPass = 16

    /// New connections a named port accepts in one pass of its loop.
    public static let acceptsPerPass = 64

    /// The most records of one connection handled in one pass of the
    /// loop (at least 1): the rest wait for the next pass, after every
    /// other ready connection had its turn (epoll is level-triggered).
    /// Safe from any thread.
    public var recordsPerPass: Int {
        get { fairShare.load(ordering: .relaxed) }
        set { fairShare.store(max(1, newValue), ordering: .relaxed) }
    }

    /// Whether processes of the owner's uid (or root) may watch the
    /// messages this port delivers (`portctl monitor`): each subscribed
    /// monitor gets a copy of every message delivered to the handler or
    /// delegate, without its descriptors and with at most
    /// `PortMonitor.copyByteBudget` bytes of its data; the port never waits
    /// for a monitor (a copy that does not fit is dropped and counted).
    /// Off by default; turning it off ends every subscription. Safe from
    /// any thread.
    public var allowsMonitoring: Bool {
        get { lock.withLock { monitors != nil } }
        set {
            let dropped: MonitorHub? = lock.withLock {
                guard newValue != (monitors != nil), valid || !newValue else { return nil }
                let old = monitors
                monitors = newValue ? MonitorHub(port: self) : nil
                return old
            }
            dropped?.closeAll()
        }
    }

    /// The (loop, mode) pairs the port is scheduled in (for MonitorHub).
    var loopTargets: [(PCRunLoop, PCRunLoop.Mode)] { lock.withLock { scheduled.map { ($0.loop, $0.mode) } } }

    /// Whether the port can receive.
    public var isValid: Bool { lock.withLock { valid } }

    /// How many rights (connections) lead to the port now.
    public var connectionCount: Int { lock.withLock { connections.count } }

    // MARK: Rights

    /// Mints a new send right to this port (socketpair). Safe from any thread.
    public func makeSendRight() throws(PortError) -> SendRight {
        let pair: UnixSocket.Pair
        do {
            pair = try UnixSocket.makePair()
        } catch {
            throw .system(error)
        }
        let mine = pair.first
        let right = SendRight(descriptor: pair.second, limits: limits)
        do {
            try UnixSocket.setPassCredentials(mine, true)
        } catch {
            throw .system(error)
        }
        try addConnection(SharedDescriptor(mine), peer: nil)
        return right
    }

    /// Sends `refusal` on a connection not served, then closes it. What
    /// the peer sent is read and dropped first (`discardUnread`): closing
    /// an AF_UNIX socket with unread records makes the peer's next receive
    /// fail with ECONNRESET instead of returning the refusal.
    private func refuse(_ fd: consuming OwnedDescriptor, with refusal: PCPortMessage) {
        // `fd` closes on return.
        discardUnread(fd)
        do {
            _ = try transport.send(refusal, on: fd, replyPort: nil, replyExpected: false, before: .now())
        } catch {
            logger.debug("cannot send a refusal on \(self): \(error)")
        }
    }

    /// `peer`: who connected (SO_PEERCRED), for an accepted connection.
    private func addConnection(_ connection: SharedDescriptor, peer: Credentials?, id given: UInt64? = nil) throws(PortError) {
        // The source holds the connection (so does its closure, for the
        // reply rights of requests): the descriptor closes when the source
        // is gone and no reply right still holds it.
        let id =
            given
            ?? lock.withLock { () -> UInt64 in
                defer { nextConnectionID += 1 }
                return nextConnectionID
            }
        let source = PortSource(sharing: connection, events: .readable) { [weak self] s in
            self?.serve(s, connection, id, peer)
        }
        let targets: [(PCRunLoop, PCRunLoop.Mode)]? = lock.withLock {
            guard valid else { return nil }
            connections[id] = source
            return scheduled.map { ($0.loop, $0.mode) }
        }
        guard let targets else {
            source.invalidate()
            throw .invalidated
        }
        for (loop, mode) in targets {
            do {
                try loop.add(source, forMode: mode)
            } catch {
                dropConnection(source, id: id, notify: false)
                throw .system(error)
            }
        }
    }

    /// Closes connection `id`; `notify`: tell the disconnect handler.
    private func dropConnection(_ source: PortSource, id: UInt64, notify: Bool = true) {
        let (h, resume): (((UInt64) -> Void)?, (PortSource, [(PCRunLoop, PCRunLoop.Mode)])?) = lock.withLock {
            if connections[id] === source { connections[id] = nil }
            var resume: (PortSource, [(PCRunLoop, PCRunLoop.Mode)])?
            if acceptPaused, valid, let l = listener {
                acceptPaused = false
                resume = (l, scheduled.map { ($0.loop, $0.mode) })
            }
            return (disconnectHandler, resume)
        }
        source.invalidate()
        if let (listener, targets) = resume {
            for (loop, mode) in targets {
                do {
                    try loop.add(listener, forMode: mode)
                } catch {
                    logger.error("cannot resume accepting on \(self): \(error)")
                }
            }
        }
        if notify { h?(id) }
    }

    /// Closes connection `id` as if its peer had hung up (the disconnect
    /// handler is told); nothing when there is no such connection. For a
    /// server that ends a client's connection after answering it. Any thread.
    /// Records the peer sent that were not read yet are read and dropped
    /// first (`discardUnread`): closing a socket with unread records would
    /// make the peer's next read fail with ECONNRESET before the records
    /// this port sent it last. Loop thread only.
    package func closeConnection(_ id: UInt64) {
        guard let source = lock.withLock({ connections[id] }) else { return }
        _ = source.withDescriptor { (fd: borrowing OwnedDescriptor) -> Void in discardUnread(fd) }
        dropConnection(source, id: id)
    }

    /// Reads and drops every record queued on a connection about to close.
    /// Reading is shut down first, so nothing can arrive between the last
    /// read and the close (a record that did would be left unread, and the
    /// peer would read ECONNRESET instead of what this port sent it last):
    /// the peer's sends from then on fail (EPIPE, its "receiver gone"), and
    /// the queue, which the socket's buffers bound, is read to its end.
    /// Should the shutdown fail, a pass's share is read, as before.
    private func discardUnread(_ fd: borrowing OwnedDescriptor) {
        let shut = (try? UnixSocket.shutdown(fd, .read)) != nil
        var left = shut ? Int.max : fairShare.load(ordering: .relaxed)
        while left > 0, case .message? = try? transport.receive(on: fd) {
            left -= 1
        }
    }

    /// Makes this port receive, from now on, the connections made to the
    /// listening socket of `other` (a port the name server created), which
    /// `other` gives up (it is invalidated without closing the socket). So
    /// an existing port can be given a name (NSPortNameServer
    /// registerPort:name:). With `replacing`, a listening socket the port
    /// already has is closed and leaves its loops first (a name registered
    /// again with a new portd); its accepted connections stay. So is a
    /// listening socket whose name was given up (`retireListeningSocket`).
    /// Fails with `.invalidated` when either port is invalid or, without
    /// `replacing`, this one already has a listening socket still named.
    package func adoptListeningSocket(of other: PCPort, replacing: Bool = false) throws(PortError) {
        guard other !== self, let socket = other.lock.withLock({ () -> SharedDescriptor? in
            guard other.valid, let l = other.listening, other.connections.isEmpty else { return nil }
            other.listening = nil
            return l
        }) else { throw .invalidated }
        other.invalidate()
        let outcome: (targets: [(PCRunLoop, PCRunLoop.Mode)], old: PortSource?)? = lock.withLock {
            guard valid, listening == nil || replacing || listeningRetired else { return nil }
            let old = listener
            listening = socket
            listeningRetired = false
            acceptPaused = false
            listener = makeListener(socket)
            return (scheduled, old)
        }
        guard let (targets, old) = outcome else { throw .invalidated }
        if let old { retire(old, scheduled: !targets.isEmpty) }
        guard let l = lock.withLock({ listener }) else { return }
        for (loop, mode) in targets {
            do { try loop.add(l, forMode: mode) } catch { throw .system(error) }
        }
    }

    /// The source accepting the connections of `socket`.
    private func makeListener(_ socket: SharedDescriptor) -> PortSource {
        PortSource(sharing: socket, events: .readable) { [weak self, weak socket] s in
            guard let self, let socket else { return }
            self.acceptAll(socket, s)
        }
    }

    /// A listening socket just replaced by another: connections made to it
    /// and not accepted yet (a right its name server handed out before the
    /// name moved) are still accepted and served, by the loops it is in,
    /// and it closes once its backlog is empty; with nothing waiting, or
    /// no loop to accept on, it closes now (the source holds the socket).
    private func retire(_ old: PortSource, scheduled: Bool) {
        let waiting = scheduled && !((try? old.withDescriptor { (fd) throws(SystemCallError) in
            try Poll.wait(fd, for: .readable, timeout: .zero)
        }) ?? nil ?? []).isEmpty
        let kept = waiting && lock.withLock { () -> Bool in
            guard valid else { return false }
            replacedListeners.append(old)
            return true
        }
        if !kept { old.invalidate() }
    }

    /// The name of this port's listening socket was given up
    /// (removePortForName:): the socket stays, so connections made to it
    /// before are still accepted and served, until a name adopted later
    /// (`adoptListeningSocket`) replaces it. Any thread.
    package func retireListeningSocket() {
        lock.withLock { if listening != nil { listeningRetired = true } }
    }

    /// Lends the listening socket of a named port (nil for an anonymous or
    /// invalidated port); it stays open until `body` returns.
    package func withListeningDescriptor<R: ~Copyable, E: Error>(_ body: (borrowing OwnedDescriptor) throws(E) -> R) throws(E) -> R? {
        guard let socket = lock.withLock({ valid ? listening : nil }) else { return nil }
        return try body(socket.descriptor)
    }

    /// The supplementary groups of the process that made connection `id`
    /// (the `connectionID` of its messages), as of connect time; nil when
    /// that connection is gone. Costs one system call: ask once per
    /// connection. See `UnixSocket.peerGroups`.
    public func peerGroups(ofConnection id: UInt64) throws(SystemCallError) -> [UInt32]? {
        // The source lends its share of the connection, which stays open
        // meanwhile even if the connection is dropped.
        guard let source = lock.withLock({ connections[id] }) else { return nil }
        return try source.withDescriptor { (fd) throws(SystemCallError) in try UnixSocket.peerGroups(fd) }
    }

    // MARK: Scheduling

    /// Adds the port to `loop` in `mode` (NSPort scheduleInRunLoop:forMode:,
    /// NSRunLoop addPort:forMode:): its messages are handled when the loop
    /// runs in that mode. The loop retains the port until it is removed from
    /// that mode or invalidated, and the port counts as a source of the mode
    /// even before any right to it exists, so `run()` blocks. Scheduling
    /// again in the same loop and mode does nothing. Safe from any thread.
    public func schedule(in loop: PCRunLoop, forMode mode: PCRunLoop.Mode) throws(PortError) {
        // The anchor's closure holds the port: the loop retains the port.
        let anchor = RunLoopSource(perform: { _ in withExtendedLifetime(self) {} })
        let sources: [PortSource]?? = lock.withLock { () -> [PortSource]?? in
            guard valid else { return .none }
            if schedulings.contains(where: { $0.loop === loop && $0.mode == mode }) { return .some(.none) }
            schedulings.append(Scheduling(loop: loop, mode: mode, anchor: anchor))
            if let listening, listener == nil {
                listener = makeListener(listening)
            }
            var all = Array(connections.values)
            if let l = listener, !acceptPaused { all.append(l) }
            return .some(all)
        }
        guard let outcome = sources else { throw .invalidated }
        guard let sources = outcome else { return }
        loop.add(anchor, forMode: mode)
        for s in sources {
            do { try loop.add(s, forMode: mode) } catch { throw .system(error) }
        }
    }

    /// Removes the port from `loop`'s `mode` (NSPort removeFromRunLoop:forMode:,
    /// NSRunLoop removePort:forMode:); the loop lets go of it.
    public func remove(from loop: PCRunLoop, forMode mode: PCRunLoop.Mode) {
        let (sources, anchors): ([PortSource], [RunLoopSource]) = lock.withLock {
            let leaving = schedulings.filter { $0.loop === loop && $0.mode == mode }
            schedulings.removeAll { $0.loop == nil || ($0.loop === loop && $0.mode == mode) }
            var all = Array(connections.values)
            if let l = listener { all.append(l) }
            return (all, leaving.compactMap(\.anchor))
        }
        for s in sources { loop.remove(s, forMode: mode) }
        // Last: the anchor may hold the last reference to the port.
        for a in anchors { a.invalidate() }
    }

    // MARK: Invalidation

    /// Calls `handler` when the port is invalidated (on the invalidating
    /// thread). On a port already invalid, `handler` runs at once, on the
    /// calling thread (CFMessagePortSetInvalidationCallBack: "If the port
    /// is already invalid, callout is invoked immediately"), so a handler
    /// added just after another thread invalidated the port is not lost.
    public func onInvalidation(_ handler: @escaping () -> Void) {
        let added = lock.withLock { () -> Bool in
            guard valid else { return false }
            invalidationHandlers.append(handler)
            return true
        }
        if !added { handler() }
    }

    /// Closes every descriptor of the port and removes it from every run
    /// loop; holders of rights see their connection hang up. Idempotent;
    /// safe from any thread.
    public func invalidate() {
        var monitorsLeft: MonitorHub?
        let (sources, handlers, listeningSocket, anchors):
            ([PortSource], [() -> Void], SharedDescriptor?, [RunLoopSource]) = lock.withLock {
            guard valid else { return ([], [], nil, []) }
            valid = false
            var all = Array(connections.values)
            if let l = listener { all.append(l) }
            all += replacedListeners
            connections.removeAll()
            listener = nil
            replacedListeners.removeAll()
            let socket = listening
            listening = nil
            let anchors = schedulings.compactMap(\.anchor)
            schedulings.removeAll()
            let h = invalidationHandlers
            invalidationHandlers.removeAll()
            monitorsLeft = monitors
            monitors = nil
            return (all, h, socket, anchors)
        }
        monitorsLeft?.closeAll()
        for s in sources { s.invalidate() }
        // The listening socket closes here, after its source left every loop.
        withExtendedLifetime(listeningSocket) {}
        for h in handlers { h() }
        // Last: the loops let go of the port (maybe its last reference).
        withExtendedLifetime(self) {
            for a in anchors { a.invalidate() }
        }
    }

    // MARK: Serving (loop thread)

    /// Accepts what waits on `listening`, whose source is `source`: the
    /// port's listener, or one replaced (`retire`), which is let go of
    /// once its backlog is empty or accepting from it fails.
    private func acceptAll(_ listening: SharedDescriptor, _ source: PortSource) {
        let replaced = lock.withLock { listener !== source }
        // The backlog's rest is reported again in the next pass.
        for _ in 0..<Self.acceptsPerPass {
            let accepted: OwnedDescriptor?
            do {
                accepted = try UnixSocket.accept(listening.descriptor)
            } catch where !replaced && (error.errno == .tooManyOpenFiles || error.errno == .tooManyOpenFilesInSystem) {
                logger.error("accept on \(self): \(error); pausing until a connection closes")
                pauseAccepting()
                return
            } catch {
                logger.error("accept on \(self): \(error)")
                if replaced { dropReplaced(source) }
                return
            }
            guard let fd = accepted else {
                if replaced { dropReplaced(source) }
                return
            }
            do {
                let peer = try? UnixSocket.peerCredentials(fd)
                let (id, admit) = lock.withLock { () -> (UInt64, ((UInt64, Credentials?) -> PCPortMessage?)?) in
                    defer { nextConnectionID += 1 }
                    return (nextConnectionID, admission)
                }
                if let refusal = admit?(id, peer) {
                    refuse(fd, with: refusal)
                    continue
                }
                try addConnection(SharedDescriptor(fd), peer: peer, id: id)
            } catch .invalidated {
                // Invalidated by another thread meanwhile: the connection
                // closed with it, as the rest of the backlog does.
                return
            } catch {
                logger.error("cannot serve a new connection: \(error)")
            }
        }
    }

    /// A replaced listening socket whose backlog was accepted: it leaves
    /// its loops and closes.
    private func dropReplaced(_ source: PortSource) {
        lock.withLock { replacedListeners.removeAll { $0 === source } }
        source.invalidate()
    }

    /// Takes the listening socket out of every loop until a connection closes.
    private func pauseAccepting() {
        let paused: (PortSource, [(PCRunLoop, PCRunLoop.Mode)])? = lock.withLock {
            guard valid, !acceptPaused, let l = listener else { return nil }
            acceptPaused = true
            return (l, scheduled.map { ($0.loop, $0.mode) })
        }
        guard let (listener, targets) = paused else { return }
        for (loop, mode) in targets { loop.remove(listener, forMode: mode) }
    }

    /// Reads the records queued on one connection, at most its share of
    /// a pass (`recordsPerPass`), and delivers each; what is left is
    /// reported again in the next pass (level-triggered epoll).
    private func serve(_ source: PortSource, _ connection: SharedDescriptor, _ id: UInt64, _ peer: Credentials?) {
        if paced.load(ordering: .relaxed), let pace = lock.withLock({ pacing }), !pace.call(id, peer) { return }
        let share = fairShare.load(ordering: .relaxed)
        // Chosen once per pass, so that the array path's loop is what it
        // was before views; a handler switched within the pass is still
        // the one called (`deliver` and `deliverView` each fall back).
        if viewing.load(ordering: .relaxed) {
            for _ in 0..<share where source.isValid {
                if !serveView(source, connection, id, peer) { return }
            }
            return
        }
        for _ in 0..<share where source.isValid {
            let received: MessageTransport.Received
            do {
                received = try transport.receive(on: connection.descriptor)
            } catch {
                fail(source, error, id, peer)
                return
            }
            // Consumed: the message moves out of the enum instead of being
            // copied (retaining every reference it holds) and destroyed.
            switch consume received {
            case .wouldBlock:
                return
            case .closed:
                dropConnection(source, id: id)
                return
            case .message(var message, let replyExpected):
                message.connectionID = id
                message.connectionCredentials = peer
                if replyExpected {
                    deliverRequest(consume message, source, connection, id)
                    // A requester waits for this reply before it sends again,
                    // so the connection is most likely empty: skip the read
                    // that would only say EAGAIN. If more is queued after all,
                    // level-triggered epoll reports it in the next pass.
                    return
                } else {
                    _ = deliver(message)
                }
            }
        }
    }

    /// One record of `serve`, lent as a view (MessageTransport.receiveView);
    /// false when `serve` must stop for this pass (nothing more to read, the
    /// connection closed or failed, or a request was answered: see `serve`).
    @inline(never)  // out of `serve`'s array loop
    private func serveView(_ source: PortSource, _ connection: SharedDescriptor, _ id: UInt64, _ peer: Credentials?) -> Bool {
        // A request's reply, worked out inside the closure, sent once the
        // view (which holds the reply right while it lives) is gone.
        var request: (right: SendRight, msgid: UInt32, reply: PCPortMessage?)?
        let outcome: MessageTransport.ReceivedView
        do {
            outcome = try transport.receiveView(on: connection.descriptor) { view, replyExpected in
                view.connectionID = id
                view.connectionCredentials = peer
                guard replyExpected else {
                    _ = deliverView(view)
                    return
                }
                let replyRight = SendRight(connection: connection, oneShotReply: true, limits: limits, lock: replyLock)
                view.passedReplyPort = view.replyPort
                view.replyPort = replyRight
                view.expectsReply = true
                let reply =
                    view.msgid == PortMonitor.subscribeMessageID
                    ? answerSubscription(view.copy()) : deliverView(view, request: true)
                view.replyPort = nil
                request = (replyRight, view.msgid, reply)
            }
        } catch {
            fail(source, error, id, peer)
            return false
        }
        switch outcome {
        case .wouldBlock:
            return false
        case .closed:
            dropConnection(source, id: id)
            return false
        case .viewed:
            guard var replyRight = request?.right, let msgid = request?.msgid else { return true }
            let reply = request?.reply
            request = nil
            // Kept by the handler (to answer later) unless we hold the only reference.
            let deferred = !isKnownUniquelyReferenced(&replyRight)
            if let error = replyRight.answer(reply, requestID: msgid, deferred: deferred, using: transport) {
                fail(source, error, id)
            }
            // As in `serve`: a requester waits for this reply before it sends again.
            return false
        }
    }

    /// The one place a received message is handed to the application
    /// (handler closure, else view handler, else delegate), on the loop
    /// thread; a monitor, when there is one, gets its copy first.
    private func deliver(_ message: PCPortMessage, request: Bool = false) -> PCPortMessage? {
        let (h, d, m) = lock.withLock { (handler, handler == nil ? delegate : nil, monitors) }
        if let m { m.copy(message, request: request) }
        if let h { return h.call(message) }
        // A view handler set since `serve` chose to receive an array (by
        // another thread, or by a handler earlier in the pass): the
        // message is lent to it as a view after all.
        if viewing.load(ordering: .relaxed), let v = lock.withLock({ viewHandler }) {
            return PortMessageView.lend(message) { v.call($0) }
        }
        return d?.handle(message, on: self)
    }

    /// `deliver` for a view: the view handler, or (when the port was
    /// switched back to closures since the record was read) `deliver` of
    /// the view's copy; a monitor, when there is one, gets `view.copy()`.
    private func deliverView(_ view: borrowing PortMessageView, request: Bool = false) -> PCPortMessage? {
        let (v, m) = lock.withLock { (viewHandler, monitors) }
        guard let v else { return deliver(view.copy(), request: request) }
        if let m { m.copy(view.copy(), request: request) }
        return v.call(view)
    }

    /// A request: its one-shot reply right is this very connection.
    private func deliverRequest(
        _ request: consuming PCPortMessage, _ source: PortSource, _ connection: SharedDescriptor, _ id: UInt64
    ) {
        var replyRight = SendRight(connection: connection, oneShotReply: true, limits: limits, lock: replyLock)
        var message = request
        message.passedReplyPort = message.replyPort
        message.replyPort = replyRight
        message.expectsReply = true
        let msgid = message.msgid
        let reply = msgid == PortMonitor.subscribeMessageID ? answerSubscription(message) : deliver(message, request: true)
        message.replyPort = nil
        // Kept by the handler (to answer later) unless we hold the only reference.
        let deferred = !isKnownUniquelyReferenced(&replyRight)
        if let error = replyRight.answer(reply, requestID: msgid, deferred: deferred, using: transport) {
            fail(source, error, id)
        }
    }

    /// The port's own answer to a monitor's SUBSCRIBE.
    private func answerSubscription(_ request: PCPortMessage) -> PCPortMessage {
        guard let m = lock.withLock({ monitors }) else {
            return PortMonitor.reply(.notMonitorable, "the owner of this port does not allow monitoring")
        }
        return m.subscribe(request)
    }

    private func fail(_ source: PortSource, _ error: PortError, _ id: UInt64, _ peer: Credentials? = nil) {
        var metadata: Logger.Metadata = ["connection": "\(id)"]
        if let peer {
            metadata["pid"] = "\(peer.pid)"
            metadata["uid"] = "\(peer.uid)"
        }
        logger.warning("closing a client's connection: \(error)", metadata: metadata)
        dropConnection(source, id: id)
        let h = lock.withLock { errorHandler }
        h?(error)
    }
}

/// A port's handler closure in a box of its own (see `PCPort.handler`).
private final class HandlerBox {
    let call: PCPort.Handler
    init(_ call: @escaping PCPort.Handler) { self.call = call }
}

/// A port's pacing closure in a box of its own, for the same reason.
private final class PacingBox {
    let call: (UInt64, Credentials?) -> Bool
    init(_ call: @escaping (UInt64, Credentials?) -> Bool) { self.call = call }
}

/// A port's view handler in a box of its own, for the same reason.
private final class ViewHandlerBox {
    let call: PCPort.ViewHandler
    init(_ call: @escaping PCPort.ViewHandler) { self.call = call }
}
