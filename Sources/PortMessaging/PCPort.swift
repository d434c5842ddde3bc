// PCPort: a local port, the receive endpoint of port messages (NSPort /
// NSMachPort; Foundation's Port, hence the prefix). A port is owned by one
// process; it is scheduled on a run loop in one or more modes like any
// port-based source, and calls its handler (or delegate) once per message,
// on that loop's thread, in the order each sender sent them.
//
// Kernel objects: every right to the port is a connected SOCK_SEQPACKET
// socket; the port holds the receiving end of each (one PortSource per
// connection) and, for a named port, the listening socket whose accepted
// connections are new rights: one per name, since a port may carry several
// (launchd's bootstrap_register refuses a name in use, never a port that
// already has one; each name is a listening socket portd made). An anonymous port (NSMachPort) has no name and
// no path: `makeSendRight()` mints a right with socketpair().
//
// Failure rule: a connection whose peer sends a malformed record is closed
// (its descriptors too) and reported to `onError`; the port keeps serving
// every other connection. When accept fails for lack of descriptors
// (EMFILE/ENFILE) every listening socket of the port (one per name, and
// the replaced ones still draining, below) leaves the loops, so a
// level-triggered listener cannot spin, and all return when a connection
// closes; a listener that replaces another meanwhile waits with them.
//
// Ownership: each connection is a SharedDescriptor held by its PortSource
// (and by the one-shot reply right of a request that came in on it), so it
// closes once both let go; each listening socket is held by the port and by
// its listener source until `invalidate()`. A listening socket replaced by
// a new name's (the port named again after a name was removed, or the same
// name registered again with a new portd) is held by its source alone,
// which stays in its loops only
// until the connections waiting on it are accepted, then closes it (also
// when it was replaced while accepting was paused: it waits for the
// resumption with the rest, then drains).
//
// Lifetime (NSRunLoop addPort:forMode: retains the port): while the port is
// scheduled, each (loop, mode) it is in holds an anchor, a custom source that
// never fires, whose closure holds the port. So a scheduled port lives, and
// keeps its mode non-empty (run() blocks) even with no connection yet, until
// it is removed from that mode, invalidated, or the loop itself goes. The
// port holds its anchors and loops weakly, so nothing cycles. Joining and
// leaving a mode is observable (`onSchedule`, `onRemove`: what a subclass
// of Foundation's Port sees in `schedule(in:forMode:)` and
// `remove(from:forMode:)`), and `scheduledModes(in:)` lists the modes.
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
    // `listening` (and its entries), `replacedListeners`, `schedulings`,
    // `readAheadWaiting`, `servingLoop`, `valid`, `delegate`, `handler`,
    // `onError`, `acceptPaused`, `monitors`, `pacing`, `scheduleObserver`
    // and `removeObserver` are accessed with `lock` held; `transport` only on the loop thread inside a handler (one
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
    /// By connection id. Not checked for exclusivity at run time (a
    /// connection made and closed checked it four times): every access is
    /// inside a `lock` section that calls out to nothing, so no two can
    /// overlap.
    @exclusivity(unchecked) private var connections: [UInt64: PortSource] = [:]
    /// The listening sockets of a named port, one per name, the one it was
    /// made with first; empty for an anonymous port and once invalidated.
    private var listening: [Listening] = []
    /// Not checked for exclusivity at run time, as `connections`: only
    /// inside `lock` sections that call out to nothing.
    @exclusivity(unchecked) private var schedulings: [Scheduling] = []
    /// The (loop, mode) pairs the port is in, live loops only; lock held.
    private var scheduled: [(loop: PCRunLoop, mode: PCRunLoop.Mode)] {
        schedulings.compactMap { s in s.loop.map { ($0, s.mode) } }
    }
    private var valid = true
    private var invalidationHandlers: [() -> Void] = []
    /// `onSchedule`'s and `onRemove`'s closures.
    private var scheduleObserver: SchedulingObserver?
    private var removeObserver: SchedulingObserver?
    private var disconnectHandler: ((UInt64) -> Void)?
    private var admission: ((UInt64, Credentials?) -> PCPortMessage?)?
    /// `setPacing`'s closure, boxed as `handler` is.
    private var pacing: PacingBox?
    /// Whether `pacing` is set, for `serve` to skip the lock without it;
    /// written with `lock` held.
    private let paced = Atomic<Bool>(false)
    private var nextConnectionID: UInt64 = 1
    /// The origin each connection's last origin notice gave
    /// (MessageOrigin), by connection id; lock held.
    private var origins: [UInt64: MessageOrigin] = [:]
    /// Whether `origins` has entries, for the delivery path to skip the
    /// lock without them; written with `lock` held.
    private let relaying = Atomic<Bool>(false)
    private var acceptPaused = false
    /// `acceptPaused`, for a closing connection to look at without the
    /// lock: set true under the lock before the listeners leave their
    /// loops, false under it when they are back. A connection that sees
    /// false while another thread pauses leaves the resume to the pause's
    /// own retry (`acceptRetryDelay`), as one that closed just before the
    /// pause would.
    private let acceptMayBePaused = Atomic<Bool>(false)
    /// Listening sockets replaced by a new name's while connections made
    /// to them were still waiting to be accepted: each stays in its loops
    /// until its backlog is accepted (`acceptAll`), then closes.
    private var replacedListeners: [PortSource] = []
    /// The connection whose records were read ahead (`noteReadAhead`).
    private var readAheadWaiting: (source: PortSource, id: UInt64)?
    /// The loop the port was last scheduled in (a port is served by one
    /// loop): where `invalidate()` from another thread has the records
    /// read ahead given up, since only that loop's thread uses `transport`.
    private weak var servingLoop: PCRunLoop?
    /// `recordsPerPass`: an atomic, read on every pass of every
    /// connection without taking `lock`.
    private let fairShare = Atomic<Int>(PCPort.defaultRecordsPerPass)
    /// The monitors, when the port is monitorable (`allowsMonitoring`).
    private var monitors: MonitorHub?
    private let transport: MessageTransport
    /// The port, weakly, for its connections' source handlers: a `[weak
    /// self]` capture is a mutable box, checked for exclusivity at every
    /// message received.
    private let weakSelf = WeakPort()
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
        weakSelf.port = self
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
        self.listening = [Listening(name: nil, socket: SharedDescriptor(listeningDescriptor))]
        weakSelf.port = self
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

    /// What `onSchedule` and `onRemove` are given: the loop and the mode.
    public typealias SchedulingObserver = (PCRunLoop, PCRunLoop.Mode) -> Void

    /// Calls `observer` each time the port joins a mode of a loop
    /// (`schedule(in:forMode:)`, `loop.add(port, forMode:)`): once per loop
    /// and mode, not again while it stays there, as Foundation calls
    /// `-[NSPort scheduleInRunLoop:forMode:]` when a loop adds the port. On
    /// the thread that schedules, once the port is in the mode, with no
    /// lock held. Replaces the earlier observer; nil removes it. A
    /// subclass of Foundation's `Port` that overrides `schedule(in:forMode:)`
    /// to see this ports to this (`PCPort` is final).
    public func onSchedule(_ observer: SchedulingObserver?) { lock.withLock { scheduleObserver = observer } }

    /// Calls `observer` each time the port leaves a mode of a loop it was
    /// in: `remove(from:forMode:)`, `loop.remove(port, forMode:)`
    /// (`-[NSPort removeFromRunLoop:forMode:]`), and `invalidate()` for
    /// every mode it was still in (as a custom source's cancel routine). On
    /// the thread that removes or invalidates, with no lock held, before
    /// the loop lets go of the port. Replaces the earlier observer; nil
    /// removes it. Invalidation drops both observers once it called this one.
    public func onRemove(_ observer: SchedulingObserver?) { lock.withLock { removeObserver = observer } }

    /// The modes of `loop` the port is in, in the order it joined them
    /// (`.common` when it was scheduled in the common modes); empty once it
    /// is invalidated. Safe from any thread.
    public func scheduledModes(in loop: PCRunLoop) -> [PCRunLoop.Mode] {
        lock.withLock { schedulings.filter { $0.loop === loop }.map(\.mode) }
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
    /// read in its turn. Called on the loop thread. A connection held back
    /// with records read ahead (MessageTransport, "Reading ahead") is
    /// brought back by the port's anchors, so the loop does not sleep
    /// while `h` keeps refusing it: a pacing that refuses only within a
    /// pass's share (as portd's) costs a pass, never a spin. portd reads
    /// one record a turn, so nothing is read ahead there.
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

    /// How long a port stops accepting when its process is out of
    /// descriptors (EMFILE, ENFILE), unless one of its connections closes
    /// first: then it tries again.
    public static let acceptRetryDelay: Duration = .milliseconds(100)

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
        let weakSelf = self.weakSelf
        let source = PortSource(sharing: connection, events: .readable) { s in
            weakSelf.port?.serve(s, connection, id, peer)
        }
        // Most ports are in one loop and mode: that one is taken without
        // an array of them (two allocations a connection).
        var loop: PCRunLoop?
        var mode = PCRunLoop.Mode.default
        var others: [(PCRunLoop, PCRunLoop.Mode)] = []
        let added = lock.withLock {
            guard valid else { return false }
            connections[id] = source
            if schedulings.count == 1 {
                loop = schedulings[0].loop
                mode = schedulings[0].mode
            } else {
                others = scheduled.map { ($0.loop, $0.mode) }
            }
            return true
        }
        guard added else {
            source.invalidate()
            throw .invalidated
        }
        if let loop { try add(source, id, to: loop, mode) }
        for (loop, mode) in others { try add(source, id, to: loop, mode) }
    }

    /// Puts connection `id`'s source in `loop`'s `mode`; closes the
    /// connection when the loop cannot watch it.
    private func add(_ source: PortSource, _ id: UInt64, to loop: PCRunLoop, _ mode: PCRunLoop.Mode) throws(PortError) {
        do {
            try loop.add(source, forMode: mode)
        } catch {
            dropConnection(source, id: id, notify: false)
            throw .system(error)
        }
    }

    /// Closes connection `id`; `notify`: tell the disconnect handler.
    private func dropConnection(_ source: PortSource, id: UInt64, notify: Bool = true) {
        let h: ((UInt64) -> Void)? = lock.withLock {
            // One lookup: the entry is found once and removed where it is.
            if let i = connections.index(forKey: id), connections.values[i] === source { connections.remove(at: i) }
            if relaying.load(ordering: .relaxed), origins.removeValue(forKey: id) != nil, origins.isEmpty {
                relaying.store(false, ordering: .relaxed)
            }
            return disconnectHandler
        }
        source.invalidate()
        if acceptMayBePaused.load(ordering: .relaxed) { resumeAccepting() }
        if notify { h?(id) }
    }

    /// Puts the listening sockets back in the loops when accepting was
    /// paused (`pauseAccepting`): when a connection closes, and at the
    /// retry `acceptRetryDelay` after the pause.
    private func resumeAccepting() {
        let resume: ([PortSource], [(PCRunLoop, PCRunLoop.Mode)])? = lock.withLock {
            guard acceptPaused, valid else { return nil }
            acceptPaused = false
            acceptMayBePaused.store(false, ordering: .relaxed)
            return (listeningSources, scheduled.map { ($0.loop, $0.mode) })
        }
        guard let (listeners, targets) = resume else { return }
        for (loop, mode) in targets {
            for l in listeners {
                do {
                    try loop.add(l, forMode: mode)
                } catch {
                    logger.error("cannot resume accepting on \(self): \(error)")
                }
            }
        }
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
        _ = source.withDescriptor { (fd: borrowing OwnedDescriptor) -> Void in discardUnread(fd, id: id) }
        dropConnection(source, id: id)
    }

    /// Stops (`held`) or resumes reading connection `id`: a held
    /// connection's records wait in the kernel's queue, so its sender is
    /// held back once that queue is full, as by a slow receiver (a bridge
    /// holds a connection while its window of unacknowledged messages is
    /// full). Records already read ahead are still delivered. Nothing when
    /// there is no such connection. Any thread.
    package func holdConnection(_ id: UInt64, _ held: Bool) {
        let (source, targets) = lock.withLock { (connections[id], scheduled) }
        guard let source else { return }
        for (loop, mode) in targets {
            if held {
                loop.remove(source, forMode: mode)
            } else {
                do {
                    try loop.add(source, forMode: mode)
                } catch {
                    logger.error("cannot resume reading connection \(id) of \(self): \(error)")
                }
            }
        }
    }

    /// Reads and drops every record queued on a connection about to close.
    /// Reading is shut down first, so nothing can arrive between the last
    /// read and the close (a record that did would be left unread, and the
    /// peer would read ECONNRESET instead of what this port sent it last):
    /// the peer's sends from then on fail (EPIPE, its "receiver gone"), and
    /// the queue, which the socket's buffers bound, is read to its end.
    /// Should the shutdown fail, a pass's share is read, as before.
    /// Records of connection `id` read ahead are given up too.
    private func discardUnread(_ fd: borrowing OwnedDescriptor, id: UInt64? = nil) {
        if let id { transport.dropReadAhead(of: id) }
        let shut = (try? UnixSocket.shutdown(fd, .read)) != nil
        var left = shut ? Int.max : fairShare.load(ordering: .relaxed)
        while left > 0, case .message? = try? transport.receive(on: fd) {
            left -= 1
        }
    }

    /// Makes this port receive, from now on, the connections made to the
    /// listening socket of `other` (a port the name server created for
    /// `name`), which `other` gives up (it is invalidated without closing
    /// the socket). So an existing port can be given a name (NSPortNameServer
    /// registerPort:name:), and another (a port may carry several names,
    /// each its own listening socket). A listening socket the port already
    /// has for `name` is replaced (the name was given up and registered
    /// again, or registered again with a new portd: portd makes one socket
    /// per name, so the older one is stale); so is every listening socket
    /// whose name was given up (`retireListeningSocket`), whatever its name
    /// (see `retireLocked` for what becomes of one replaced). The accepted
    /// connections stay. Fails with `.invalidated` when either port is
    /// invalid.
    package func adoptListeningSocket(of other: PCPort, name: String) throws(PortError) {
        guard other !== self, let socket = other.lock.withLock({ () -> SharedDescriptor? in
            guard other.valid, other.listening.count == 1, other.connections.isEmpty else { return nil }
            // Held by us from here: the invalidation below lets go of other's share only.
            return other.listening[0].socket
        }) else { throw .invalidated }
        other.invalidate()
        let outcome: (targets: [(PCRunLoop, PCRunLoop.Mode)], new: PortSource, paused: Bool, closing: [PortSource])? =
            lock.withLock {
                guard valid else { return nil }
                let new = makeListener(socket)
                let targets = scheduled
                var closing: [PortSource] = []
                // Replaced: the name's own socket, and every one whose name was given up.
                for old in listening where old.name == name || old.retired {
                    if let source = old.source, !retireLocked(source, scheduled: !targets.isEmpty) { closing.append(source) }
                }
                listening.removeAll { $0.name == name || $0.retired }
                listening.append(Listening(name: name, socket: socket, source: new))
                return (targets, new, acceptPaused, closing)
            }
        guard let (targets, new, paused, closing) = outcome else { throw .invalidated }
        for c in closing { c.invalidate() }
        // Accepting is paused (no descriptor was left): the new listener
        // joins the loops with the others when a connection closes
        // (`dropConnection`), not now, where it would only fail again.
        if paused { return }
        for (loop, mode) in targets {
            do { try loop.add(new, forMode: mode) } catch { throw .system(error) }
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
    /// and it closes once its backlog is empty. While accepting is paused
    /// it is in no loop: it returns to them with the others when a
    /// connection closes (`dropConnection`), then drains. True when it is
    /// kept; false when nothing waits on it or there is no loop to accept
    /// on: the caller invalidates it, which closes it (the source holds
    /// the socket). Lock held (the poll does not wait).
    private func retireLocked(_ old: PortSource, scheduled: Bool) -> Bool {
        guard scheduled, valid else { return false }
        let ready = (try? old.withDescriptor { (fd) throws(SystemCallError) in
            try Poll.wait(fd, for: .readable, timeout: .zero)
        }) ?? nil ?? []
        guard !ready.isEmpty else { return false }
        replacedListeners.append(old)
        return true
    }

    /// `name` was given up (removePortForName:): its listening socket
    /// stays, so connections made to it before are still accepted and
    /// served, until a name adopted later (`adoptListeningSocket`) replaces
    /// it; the port's other names are untouched. Any thread.
    package func retireListeningSocket(name: String) {
        lock.withLock {
            for l in listening where l.name == name { l.retired = true }
        }
    }

    /// Records that the listening socket the port was made with
    /// (`init(listeningDescriptor:)`) is `name`'s, for
    /// `retireListeningSocket` and `adoptListeningSocket`. Any thread.
    package func nameListeningSocket(_ name: String) {
        lock.withLock {
            for l in listening where l.name == nil { l.name = name }
        }
    }

    /// Lends the listening socket of a named port, the one it was made
    /// with or named with first (nil for an anonymous or invalidated
    /// port); it stays open until `body` returns.
    package func withListeningDescriptor<R: ~Copyable, E: Error>(_ body: (borrowing OwnedDescriptor) throws(E) -> R) throws(E) -> R? {
        guard let socket = lock.withLock({ valid ? listening.first?.socket : nil }) else { return nil }
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
        // Signalled, it serves records read ahead (`noteReadAhead`).
        let anchor = RunLoopSource(perform: { _ in self.serveReadAhead() })
        var waiting = false
        var observer: SchedulingObserver?
        let sources: [PortSource]?? = lock.withLock { () -> [PortSource]?? in
            guard valid else { return .none }
            if schedulings.contains(where: { $0.loop === loop && $0.mode == mode }) { return .some(.none) }
            waiting = readAheadWaiting != nil
            observer = scheduleObserver
            servingLoop = loop
            schedulings.append(Scheduling(loop: loop, mode: mode, anchor: anchor))
            for l in listening where l.source == nil { l.source = makeListener(l.socket) }
            var all = Array(connections.values)
            if !acceptPaused { all += listeningSources }
            return .some(all)
        }
        guard let outcome = sources else { throw .invalidated }
        guard let sources = outcome else { return }
        loop.add(anchor, forMode: mode)
        // In the mode from here (its anchor holds it there), also when a
        // connection's descriptor is refused below.
        defer { observer?(loop, mode) }
        for s in sources {
            do { try loop.add(s, forMode: mode) } catch { throw .system(error) }
        }
        if waiting { anchor.signal() }
    }

    /// Removes the port from `loop`'s `mode` (NSPort removeFromRunLoop:forMode:,
    /// NSRunLoop removePort:forMode:); the loop lets go of it.
    public func remove(from loop: PCRunLoop, forMode mode: PCRunLoop.Mode) {
        var observer: SchedulingObserver?
        let (sources, anchors): ([PortSource], [RunLoopSource]) = lock.withLock {
            let leaving = schedulings.filter { $0.loop === loop && $0.mode == mode }
            schedulings.removeAll { $0.loop == nil || ($0.loop === loop && $0.mode == mode) }
            if !leaving.isEmpty { observer = removeObserver }
            return (Array(connections.values) + listeningSources, leaving.compactMap(\.anchor))
        }
        for s in sources { loop.remove(s, forMode: mode) }
        observer?(loop, mode)
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
        var readAheadLoop: PCRunLoop?
        var left: [(loop: PCRunLoop, mode: PCRunLoop.Mode)] = []
        var observer: SchedulingObserver?
        let (sources, handlers, listeningSockets, anchors):
            ([PortSource], [() -> Void], [SharedDescriptor], [RunLoopSource]) = lock.withLock {
            guard valid else { return ([], [], [], []) }
            valid = false
            let all = Array(connections.values) + listeningSources
            connections.removeAll()
            replacedListeners.removeAll()
            let sockets = listening.map(\.socket)
            listening.removeAll()
            let anchors = schedulings.compactMap(\.anchor)
            left = scheduled
            schedulings.removeAll()
            observer = removeObserver
            scheduleObserver = nil
            removeObserver = nil
            let h = invalidationHandlers
            invalidationHandlers.removeAll()
            monitorsLeft = monitors
            monitors = nil
            // Records read ahead and left for a later pass (`noteReadAhead`).
            if readAheadWaiting != nil { readAheadLoop = servingLoop }
            readAheadWaiting = nil
            return (all, h, sockets, anchors)
        }
        monitorsLeft?.closeAll()
        for s in sources { s.invalidate() }
        // Given up with their descriptors now (no pass serves them any
        // more), not when the port object goes: on the loop's thread,
        // which alone uses the transport (a handler of this port may be
        // running there; it holds no read-ahead slot but the one it was
        // lent, which this leaves alone).
        if let loop = readAheadLoop {
            if loop.isCurrent {
                transport.dropReadAhead()
            } else {
                let t = LoopThreadTransport(transport: transport)
                loop.perform(inModes: [.common]) { t.transport.dropReadAhead() }
            }
        }
        // The listening sockets close here, after their sources left every loop.
        withExtendedLifetime(listeningSockets) {}
        for h in handlers { h() }
        if let observer { for (loop, mode) in left { observer(loop, mode) } }
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
        let replaced = lock.withLock { !self.listening.contains { $0.source === source } }
        // The backlog's rest is reported again in the next pass.
        for _ in 0..<Self.acceptsPerPass {
            let accepted: OwnedDescriptor?
            do {
                accepted = try UnixSocket.accept(listening.descriptor)
            } catch where error.errno == .tooManyOpenFiles || error.errno == .tooManyOpenFilesInSystem {
                // A replaced listener too: its backlog waits, it is not lost.
                logger.error("accept on \(self): \(error); pausing until a connection closes")
                pauseAccepting(source)
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

    /// Records of connection `id` were read ahead (MessageTransport,
    /// "Reading ahead"): epoll no longer reports them, so the anchors are
    /// signalled to serve them, once per batch and again whenever a
    /// request ends the connection's turn with some left. A run nested in a handler
    /// then serves them, in order, as it would serve records still in the
    /// socket; so does the next pass when a request ended the connection's
    /// turn (at step 4, after the perform requests the handler queued, as
    /// CF runs blocks before the next message). When the pass itself took
    /// them all, the signal finds nothing to do.
    private func noteReadAhead(_ source: PortSource, _ id: UInt64) {
        // Most ports are in one mode: no array is made for that one.
        let (first, others) = lock.withLock { () -> (RunLoopSource?, [RunLoopSource]?) in
            // Invalidated meanwhile (by a handler, another thread): `serve`
            // gives them up; the port must not hold the connection.
            guard valid else { return (nil, nil) }
            readAheadWaiting = (source, id)
            let others = schedulings.count > 1 ? schedulings.dropFirst().compactMap { $0.anchor } : nil
            return (schedulings.first?.anchor, others)
        }
        first?.signal()
        if let others { for a in others { a.signal() } }
    }

    /// An anchor's perform: the turn of the connection `noteReadAhead`
    /// noted, when records of it are still waiting.
    private func serveReadAhead() {
        let waiting = lock.withLock { () -> (source: PortSource, id: UInt64)? in
            defer { readAheadWaiting = nil }
            return readAheadWaiting
        }
        guard let (source, id) = waiting, transport.hasReadAhead(of: id) else { return }
        // A connection closed since: its records are given up, as `serve` does.
        guard source.isValid else { return transport.dropReadAhead(of: id) }
        source.handler(source)
    }

    /// A replaced listening socket whose backlog was accepted: it leaves
    /// its loops and closes.
    private func dropReplaced(_ source: PortSource) {
        lock.withLock { replacedListeners.removeAll { $0 === source } }
        source.invalidate()
    }

    /// Takes every listening socket (the listener and the replaced ones
    /// still draining) out of every loop until a connection closes
    /// (`dropConnection` puts them back) or `acceptRetryDelay` has passed:
    /// a port with no connection to close, or whose process freed
    /// descriptors elsewhere, tries again then (and pauses again if
    /// accepting still fails). `failed`, the source whose accept failed,
    /// leaves too when accepting is already paused (it was put in a loop
    /// meanwhile by another thread), so it cannot spin.
    private func pauseAccepting(_ failed: PortSource) {
        let paused: ([PortSource], [(PCRunLoop, PCRunLoop.Mode)])? = lock.withLock {
            guard valid else { return nil }
            acceptPaused = true
            acceptMayBePaused.store(true, ordering: .relaxed)
            return (listeningSources + [failed], scheduled.map { ($0.loop, $0.mode) })
        }
        guard let (sources, targets) = paused else { return }
        for (loop, mode) in targets {
            for s in sources { loop.remove(s, forMode: mode) }
        }
        // One retry per loop, in the modes the port is in there.
        var retried: [ObjectIdentifier] = []
        for (loop, _) in targets where !retried.contains(ObjectIdentifier(loop)) {
            retried.append(ObjectIdentifier(loop))
            let modes = targets.filter { $0.0 === loop }.map { $0.1 }
            loop.perform(after: Self.acceptRetryDelay, inModes: modes) { [weak self] in self?.resumeAccepting() }
        }
    }

    /// The sources of every listening socket: one per name and the
    /// replaced ones still draining; lock held.
    private var listeningSources: [PortSource] {
        listening.compactMap(\.source) + replacedListeners
    }

    /// Reads the records queued on one connection, at most its share of
    /// a pass (`recordsPerPass`), and delivers each; what is left is
    /// reported again in the next pass (level-triggered epoll).
    private func serve(_ source: PortSource, _ connection: SharedDescriptor, _ id: UInt64, _ peer: Credentials?) {
        if paced.load(ordering: .relaxed), let pace = lock.withLock({ pacing }), !pace.call(id, peer) {
            // Records read ahead are not in the socket for epoll to report:
            // the anchors bring the connection back in the next pass.
            if transport.hasReadAhead(of: id) { noteReadAhead(source, id) }
            return
        }
        let share = fairShare.load(ordering: .relaxed)
        // Records read ahead for a connection that went (or a port
        // invalidated) in the pass are given up (MessageTransport,
        // "Reading ahead"); otherwise the share leaves none.
        defer { if !source.isValid { transport.dropReadAhead(of: id) } }
        // Chosen once per pass, so that the array path's loop is what it
        // was before views; a handler switched within the pass is still
        // the one called (`deliver` and `deliverView` each fall back).
        if viewing.load(ordering: .relaxed) {
            for i in 0..<share where source.isValid {
                if !serveView(source, connection, id, peer, limit: i == 0 ? 1 : share - i) { return }
            }
            return
        }
        for i in 0..<share where source.isValid {
            let received: MessageTransport.Received
            do {
                // The first record of a turn is read alone: most often it
                // is a request, and the only one (MessageTransport, "Reading
                // ahead"); the rest of the share is read ahead.
                received = try transport.receive(
                    on: connection.descriptor,
                    readingAhead: MessageTransport.ReadAhead(connectionID: id, limit: i == 0 ? 1 : share - i))
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
                if transport.takeNewReadAhead() { noteReadAhead(source, id) }
                message.connectionID = id
                message.connectionCredentials = peer
                if replyExpected {
                    deliverRequest(consume message, source, connection, id)
                    // A request ends the connection's turn. A requester
                    // waits for this reply before it sends again, so the
                    // connection is most likely empty: skip the read that
                    // would only say EAGAIN. If more is queued after all,
                    // level-triggered epoll reports it in the next pass, and
                    // what was read ahead is served then (`noteReadAhead`).
                    if transport.hasReadAhead(of: id) { noteReadAhead(source, id) }
                    return
                } else {
                    deliverOneWay(consume message, id)
                }
            }
        }
    }

    /// One record of `serve`, lent as a view (MessageTransport.receiveView);
    /// false when `serve` must stop for this pass (nothing more to read, the
    /// connection closed or failed, or a request was answered: see `serve`).
    @inline(never)  // out of `serve`'s array loop
    private func serveView(
        _ source: PortSource, _ connection: SharedDescriptor, _ id: UInt64, _ peer: Credentials?, limit: Int
    ) -> Bool {
        // A request's reply, worked out inside the closure, sent once the
        // view (which holds the reply right while it lives) is gone.
        var request: (right: SendRight, msgid: UInt32, reply: PCPortMessage?)?
        var monitored: MonitoredDelivery?
        let outcome: MessageTransport.ReceivedView
        do {
            outcome = try transport.receiveView(
                on: connection.descriptor, readingAhead: MessageTransport.ReadAhead(connectionID: id, limit: limit)
            ) { view, replyExpected in
                if transport.takeNewReadAhead() { noteReadAhead(source, id) }
                view.connectionID = id
                view.connectionCredentials = peer
                if view.msgid == MessageOrigin.noticeMessageID && !replyExpected {
                    noteOrigin(view.copy().components.first?.string, sender: view.sender, connection: id)
                    return
                }
                if relaying.load(ordering: .relaxed) { view.origin = origin(of: id) }
                guard replyExpected else {
                    _ = deliverView(view, request: false, monitored: &monitored)
                    return
                }
                let replyRight = SendRight(connection: connection, oneShotReply: true, limits: limits, lock: replyLock)
                view.passedReplyPort = view.replyPort
                view.replyPort = replyRight
                view.expectsReply = true
                let reply =
                    view.msgid == PortMonitor.subscribeMessageID
                    ? answerSubscription(view.copy()) : deliverView(view, request: true, monitored: &monitored)
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
            // Taken: the reply moves on to `answer` without a copy.
            guard case (var replyRight, let msgid, let reply)? = request.take() else { return true }
            // Kept by the handler (to answer later) unless we hold the only reference.
            let deferred = !isKnownUniquelyReferenced(&replyRight)
            let answered = monitored != nil && !replyRight.isValid  // by the handler, through the right
            if let error = replyRight.answer(reply, requestID: msgid, deferred: deferred, using: transport) {
                fail(source, error, id)
            }
            if !answered { copyReply(reply, to: monitored, requestID: msgid, deferred: deferred) }
            // As in `serve`: a request ends the connection's turn.
            if transport.hasReadAhead(of: id) { noteReadAhead(source, id) }
            return false
        }
    }

    /// The one place a received message is handed to the application
    /// (handler closure, else view handler, else delegate), on the loop
    /// thread; a monitor, when there is one, gets its copy first.
    private func deliver(_ message: PCPortMessage) -> PCPortMessage? {
        var monitored: MonitoredDelivery?
        return deliver(message, request: false, monitored: &monitored)
    }

    /// `deliver`, for a request too; `monitored` is set when monitors got
    /// the message's copy, so that the reply's copy can follow it.
    private func deliver(
        _ message: PCPortMessage, request: Bool, monitored: inout MonitoredDelivery?
    ) -> PCPortMessage? {
        let (h, d, m) = lock.withLock { (handler, handler == nil ? delegate : nil, monitors) }
        if let m { monitored = MonitoredDelivery(hub: m, delivery: m.copy(message, request: request)) }
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
    private func deliverView(
        _ view: borrowing PortMessageView, request: Bool, monitored: inout MonitoredDelivery?
    ) -> PCPortMessage? {
        let (v, m) = lock.withLock { (viewHandler, monitors) }
        guard let v else { return deliver(view.copy(), request: request, monitored: &monitored) }
        if let m { monitored = MonitoredDelivery(hub: m, delivery: m.copy(view.copy(), request: request)) }
        return v.call(view)
    }

    /// A one-way message: an origin notice is read here and never
    /// delivered; anything else is delivered with its connection's origin.
    private func deliverOneWay(_ received: consuming PCPortMessage, _ id: UInt64) {
        var message = received
        if message.msgid == MessageOrigin.noticeMessageID {
            noteOrigin(message.components.first?.string, sender: message.sender, connection: id)
            return
        }
        if relaying.load(ordering: .relaxed) { message.origin = origin(of: id) }
        _ = deliver(message)
    }

    /// The origin connection `id`'s last notice gave.
    private func origin(of id: UInt64) -> MessageOrigin? { lock.withLock { origins[id] } }

    /// An origin notice (MessageOrigin): what follows on connection `id`
    /// comes from that origin, asserted by `sender`. A notice that cannot
    /// be read clears the connection's origin (nothing relayed is passed
    /// off as local, nor as the previous origin) and is logged.
    private func noteOrigin(_ text: String?, sender: Credentials?, connection id: UInt64) {
        var origin = text.flatMap(MessageOrigin.init(text:))
        origin?.relayedBy = sender
        // "-" clears the origin (a relay's next message is not relayed).
        if origin == nil && text != "-" {
            logger.warning("an origin notice that cannot be read on connection \(id) of \(self)")
        }
        lock.withLock {
            origins[id] = origin
            relaying.store(!origins.isEmpty, ordering: .relaxed)
        }
    }

    /// A request's reply, as the port sends it when its handler returned
    /// (`reply`, or an empty one with the request's msgid), to the
    /// monitors that got the request's copy; not when the handler kept
    /// the reply right to answer later, nor when it answered through it.
    private func copyReply(_ reply: PCPortMessage?, to monitored: MonitoredDelivery?, requestID: UInt32, deferred: Bool) {
        guard let monitored, reply != nil || !deferred else { return }
        monitored.hub.copyReply(reply ?? PCPortMessage(msgid: requestID), answering: monitored.delivery)
    }

    /// A request: its one-shot reply right is this very connection.
    private func deliverRequest(
        _ request: consuming PCPortMessage, _ source: PortSource, _ connection: SharedDescriptor, _ id: UInt64
    ) {
        var replyRight = SendRight(connection: connection, oneShotReply: true, limits: limits, lock: replyLock)
        var message = request
        // Set here, not before the consuming call (this compiler cannot
        // consume a message whose non-trivial field was just written).
        if relaying.load(ordering: .relaxed) { message.origin = origin(of: id) }
        message.passedReplyPort = message.replyPort
        message.replyPort = replyRight
        message.expectsReply = true
        let msgid = message.msgid
        var monitored: MonitoredDelivery?
        let reply =
            msgid == PortMonitor.subscribeMessageID
            ? answerSubscription(message) : deliver(message, request: true, monitored: &monitored)
        message.replyPort = nil
        // Kept by the handler (to answer later) unless we hold the only reference.
        let deferred = !isKnownUniquelyReferenced(&replyRight)
        let answered = monitored != nil && !replyRight.isValid  // by the handler, through the right
        if let error = replyRight.answer(reply, requestID: msgid, deferred: deferred, using: transport) {
            fail(source, error, id)
        }
        if !answered { copyReply(reply, to: monitored, requestID: msgid, deferred: deferred) }
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

/// One listening socket of a named port (`PCPort.listening`): the one the
/// port was made with, or one adopted for a name. Every field is read and
/// written with the port's lock held.
private final class Listening {
    /// The name it is for; nil for the socket the port was made with until
    /// the name server client says whose it is (`nameListeningSocket`).
    var name: String?
    let socket: SharedDescriptor
    /// Its source: made at adoption, or for the one the port was made
    /// with, when the port is first scheduled.
    var source: PortSource?
    /// Its name was given up (`retireListeningSocket`): it still serves
    /// what was connected to it, and the next name adopted replaces it.
    var retired = false

    init(name: String?, socket: SharedDescriptor, source: PortSource? = nil) {
        self.name = name
        self.socket = socket
        self.source = source
    }
}

/// A port's transport handed to its loop's thread (`PCPort.invalidate`).
/// @unchecked Sendable: the transport is used only on that thread, where
/// the closure it is captured by runs.
private struct LoopThreadTransport: @unchecked Sendable {
    let transport: MessageTransport
}

/// A port held weakly (`PCPort.weakSelf`), one per port.
private final class WeakPort {
    /// Not checked for exclusivity at run time: written once, by the
    /// port's designated init before the port can be shared, and only read
    /// after that (no access can overlap the write).
    @exclusivity(unchecked) weak var port: PCPort?
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
