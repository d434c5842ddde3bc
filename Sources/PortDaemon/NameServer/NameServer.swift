// NameServer: the glue between portd's control port and the NameRegistry.
// The control socket is a PCPort (adopting the listening descriptor) on the
// daemon's run loop; each request is admitted and parsed here
// (NameServerRequest), then served by its request handler
// (NameServer+Requests): access decided (RequestAccess, a pure function),
// the registry asked, the answer built (NameServerReply, the protocol's
// vocabulary shared with the client: no word is spelled in portd). What a
// decision entails beyond the reply, the consequences (socket files,
// NAME_ACQUIRED, NAME_LOST, the lookup deadline timer), is carried out in
// the same pass by NameServer+Consequences; what it makes portd send to
// many (NAME_OWNER_CHANGED to watchers, answers to waiting lookups) by the
// following passes, a bounded share each (NameServer+Fanout).
//
// Who a client is: the connection (`message.connectionID`); who sent a
// request: the kernel's SCM_CREDENTIALS (`message.sender`), never what a
// peer claims. A connection that closes (exit, crash, kill -9, or a
// malformed record, which makes the port drop it) is seen by
// `PCPort.onDisconnect` in the pass that sees the hang-up: its names go to
// their next queued owners or become free, their socket files are removed,
// watchers are told, its lookups and watches end. No polling anywhere.
//
// Invariants:
//   - everything here runs on the daemon loop's thread (handlers, the
//     disconnect callback and the deadline timer), so no lock is needed;
//   - the registry is the one record of who owns, waits, watches and looks
//     up: what the name server needs to act on a record (an owner's port
//     and socket file, a watcher's port, a waiting lookup's reply port, a
//     connection's groups) hangs on that record (`Handles`), so it goes
//     when the record goes, and no map beside the registry can disagree
//     with it;
//   - a name's owner has a socket file exactly while it received (or is
//     receiving in this pass) its listening socket;
//   - no pass does unbounded work for one change: its fan-out goes out
//     `fanoutPerPass` messages a pass, between the passes that serve the
//     clients' requests, and a name goes down its queue of owners at most
//     `handoversPerPass` owners a pass (NameServer+Handover);
//   - portd never blocks on a client: messages to watchers, queued owners
//     and waiting lookups are sent with a zero send timeout; a full queue
//     ends that owner's claim, logged, or that watch: the watcher is told
//     (WATCH_OVERFLOW, sent once its port takes a record again);
//   - a client that misbehaves affects only itself: a bad request gets an
//     error reply, a malformed record closes its own connection;
//   - every log line a client can cause goes through a RefusalLog limit,
//     the lines left out counted: refusals, bad requests and invalid
//     names through `refusalLog`; the events clients make happen (a deaf
//     owner's name released, a watch ended, a message not sent, a
//     check-in) through `eventLog`; malformed records on the control port
//     through the port's LimitedLogHandler. Only debug lines, off unless
//     asked for, are not limited.

import Logging
import PortCore

final class NameServer {
    /// A reply of the protocol, its ports send rights.
    typealias Reply = NameServerReply<SendRight>
    typealias Registry = NameRegistry<Handles>
    typealias OwnerChange = Registry.OwnerChange

    /// What the name server hangs on the registry's records.
    enum Handles: NameRegistryHandles {
        /// On an owner or a queued owner.
        struct Owner: Sendable {
            /// Its REGISTER's reply port: NAME_ACQUIRED goes there when a
            /// queued owner gets the name, NAME_LOST when another client
            /// replaces the owner. nil when the request carried none.
            var port: SendRight?
            /// The serial of that REGISTER (the events to `port` carry it).
            var serial: UInt32 = 0
            /// The name's socket file, once this owner was given the
            /// listening socket.
            var socket: PortSocketFile?
        }

        /// On a watch: where the events go, and who watches (each event is
        /// checked against the policy for the watcher).
        struct Watcher: Sendable {
            let port: SendRight
            /// The WATCH's serial (every event of the watch carries it).
            let serial: UInt32
            let caller: Caller
            let credentials: Credentials
        }

        /// On a waiting lookup: the reply port its answer goes to, and
        /// the LOOKUP's serial.
        struct Lookup: Sendable {
            let port: SendRight
            let serial: UInt32
        }

        /// An owner holds a descriptor of portd's when its REGISTER gave a
        /// port to tell it later.
        static func holdsDescriptor(_ owner: Owner) -> Bool { owner.port != nil }
    }

    /// Counters for STATUS.
    struct Counters {
        var lookups = 0
        var refusals = 0
    }

    // The state below is the name server's own: used by this file and its
    // extensions (NameServer+Requests, NameServer+Consequences) only.

    /// Replaced by `reconfigure` (SIGHUP).
    var settings: NameServerSettings {
        didSet { current = Current(settings) }
    }
    /// `settings`, immutable in a box of its own: a request's access
    /// decisions read `current.value` in place, where passing `settings`
    /// copied it (retaining every closure and array in it) for each
    /// decision, since the policy closure called might change it.
    final class Current: Sendable {
        let value: NameServerSettings
        init(_ value: NameServerSettings) { self.value = value }
    }
    private(set) var current: Current
    let logger: Logger
    let loop: PCRunLoop
    let mode: PCRunLoop.Mode
    let port: PCPort
    let directory: PortDirectory
    let declared: DeclaredPorts
    private let store: DeclaredPortStore?
    let activator: PortActivator
    let startedAt: MonotonicInstant
    /// When serving began, Unix ms ("since" of the declared ports).
    private let startedAtWall = WallClock.unixMilliseconds()
    let ownPID = CurrentProcess.id
    let ownUID = CurrentProcess.userID
    var registry: Registry
    var refusalLog: RefusalLog
    /// The limit of the lines of events clients make happen.
    var eventLog: RefusalLog
    var deadlineTimer: (timer: PCTimer, fireAt: MonotonicInstant)?
    var counters = Counters()
    /// The kernel's word on ports clients hand portd to keep.
    let passedPortCheck: PassedPortCheck
    /// Watches whose watcher fell behind (its queue was full): each waits,
    /// told nothing more, for its port to take a record again, to be ended
    /// with WATCH_OVERFLOW (NameServer+Consequences, `overflow`). The
    /// source watches the port for writability; `missed` counts the changes
    /// not delivered. The watch stays in the registry (and counts against
    /// its client's quotas) until then.
    var overflowing: [WatchID: (source: PortSource, missed: Int)] = [:]
    /// NAME_OWNER_CHANGED and answers to waiting lookups not sent yet
    /// (NameServer+Fanout), and the source that sends a share a pass.
    var fanout = Fanout()
    var fanoutSource: RunLoopSource?
    /// Names waiting for their next queued owner to be told
    /// (NameServer+Handover), the source that tells a share a pass, and
    /// how many were handed over in this pass.
    var handovers = Handovers()
    var handoverSource: RunLoopSource?
    var handoversThisPass = 0
    /// Per declared port, the connections portd made into its backlog for
    /// each uid since it was last seen empty (NameServer+DeclaredBacklog).
    var declaredBacklog: [PortName: [UInt32: Int]] = [:]
    /// Clients whose queue was full for a waiting lookup's answer: the
    /// source that gives their answers turns again once it has room.
    var parkedAnswers: [ClientID: PortSource] = [:]
    /// The clients whose HELLO succeeded (protocol 1.0 agreed).
    var greeted: Set<ClientID> = []
    /// Where each client's last LIST stopped, when it stopped because it
    /// had looked at its share of names (NameServer+Requests, `list`).
    var listCursors: [ClientID: ListCursor] = [:]
    /// The names the LISTs of each uid looked at in this pass of the loop
    /// (NameServer+Requests, `list`).
    var listLookedAtThisPass: [UInt32: Int] = [:]
    /// The connections of each uid the control port read in this pass
    /// (`pace`).
    var turnsThisPass: [UInt32: Int] = [:]
    /// The source that clears the counts of this pass when the next one
    /// begins (`passBegins`), and whether it was signalled in this pass.
    var passSource: RunLoopSource?
    var passCounted = false
    /// The size of the registry (names and clients) when memory was last
    /// given back to the kernel, or its peak since (`clientGone`).
    var memoryMark = 0
    /// The name of the last LOOKUP read in place (`handleView`): the next
    /// LOOKUP of the same bytes takes it instead of making the String again.
    var lastLookedUp: PortName?
    /// The fields of the last "found" reply (`found`), for the next one
    /// of the same name and owner.
    var lastFoundFields: FoundFields?

    /// The limits of the control port: small requests, no large data, few
    /// descriptors; up to 65535 components so that a LIST reply can name
    /// many ports (its size is checked before sending).
    static let controlPortLimits = PortLimits(
        maxRecordSize: PortLimits.defaultMaxRecordSize, maxComponents: PortLimits.default.maxComponents,
        maxDescriptors: 4, maxLargeDataBytes: 0)

    /// Serves the listening control socket `controlDescriptor` (taking
    /// ownership) on `loop` in `mode` once `start()` is called. Creates
    /// the declared ports, taking the sockets in `restored` (passed back by
    /// the service manager, by port name) for theirs, and hands each to
    /// `store`. Units of declared ports with Unit= are started through
    /// `unitStarter` (nil: SystemctlUnitStarter, `--user` for a per-user
    /// instance; portd passes it, hosted tests take the default).
    init(
        controlDescriptor: consuming OwnedDescriptor, directory: PortDirectory, settings: NameServerSettings, logger: Logger,
        loop: PCRunLoop, mode: PCRunLoop.Mode = .default, startedAt: MonotonicInstant = .now(),
        restored: [String: DeclaredPorts.Restored] = [:], clearStored: Set<String> = [],
        store: DeclaredPortStore? = nil, unitStarter: (any UnitStarter)? = nil
    ) throws(SystemCallError) {
        self.settings = settings
        self.current = Current(settings)
        self.logger = logger
        self.loop = loop
        self.mode = mode
        self.directory = directory
        self.startedAt = startedAt
        self.registry = Registry(limits: settings.limits)
        self.refusalLog = RefusalLog(logger: logger, clock: loop.clock)
        self.eventLog = RefusalLog(logger: logger, clock: loop.clock, what: "event lines")
        let controlSocketPath = (try? UnixSocket.boundPath(controlDescriptor)).flatMap { $0 } ?? ""
        self.passedPortCheck = PassedPortCheck(
            controlSocketPath: controlSocketPath, portDirectoryPath: directory.path)
        self.port = try PCPort(
            listeningDescriptor: controlDescriptor, limits: Self.controlPortLimits,
            logger: LimitedLogHandler.logger(over: logger, clock: loop.clock))
        self.store = store
        self.activator = PortActivator(
            loop: loop, mode: mode, logger: logger,
            controlSocketPath: controlSocketPath,
            unitStarter: unitStarter ?? SystemctlUnitStarter(userInstance: settings.onlyUID != nil))
        self.declared = DeclaredPorts(in: directory)
        // Entries of the store that were bad or extra go first; the socket
        // in use is stored again below.
        for name in clearStored.sorted() {
            do {
                try store?.remove(declaredPort: name)
            } catch {
                logger.warning("cannot clear \(name) in the file-descriptor store: \(error)", metadata: ["name": "\(name)"])
            }
        }
        let changes: DeclaredPorts.Changes
        do throws(SystemCallError) {
            changes = try declared.reconcile(settings.declaredPorts, restored: restored, now: startedAtWall)
        } catch {
            declared.close()
            port.invalidate()
            throw error
        }
        applyToStore(changes)
    }

    /// Records of one connection the control port handles in one pass of
    /// the loop. A request ends its connection's share anyway (its sender
    /// waits for the reply); with one, a record sent without REPLY_EXPECTED
    /// costs a pass what a request does. With PCPort's default of 16, 200
    /// connections of one uid kept full of one-way LOOKUPs made each pass
    /// serve 3,200 records, and another client's STATUS waited 19 ms on
    /// average, up to 231 ms (scripts/fair-attack --attack oneway).
    static let controlRecordsPerPass = 1

    /// The connections of one uid the control port reads in one pass of
    /// the loop, together (`pace`): each has one request (or one record
    /// without REPLY_EXPECTED) read in its turn, so this many requests of
    /// the uid a pass, however many connections it keeps busy (up to
    /// ClientsPerUID=, 256 by default). Without it, uid 65534 pipelining
    /// requests on 200 connections had 200 served in every pass before
    /// another client's turn came round.
    static let connectionsPerUIDPerPass = 16

    /// Whether the control port reads connection `client`, made by `peer`
    /// (SO_PEERCRED), in this pass: the connections of one uid get
    /// `connectionsPerUIDPerPass` turns a pass together, the first ready;
    /// the others stay ready and are read in a later pass (epoll is
    /// level-triggered), when the count starts again. Root and portd's own
    /// uid are not held back (so neither is anyone in a per-user instance).
    func pace(_ client: ClientID, _ peer: Credentials?) -> Bool {
        guard let uid = peer?.uid, !settings.limits.privilegedUIDs.contains(uid) else { return true }
        let turns = turnsThisPass[uid] ?? 0
        if turns >= Self.connectionsPerUIDPerPass { return false }
        turnsThisPass[uid] = turns + 1
        countedInThisPass()
        return true
    }

    /// Counts `turns` more against `uid`'s share of this pass (`pace`), for
    /// work beyond what a request costs: a REGISTER (`registerTurns`), a
    /// client gone with its names (`namesReleasedPerTurn`). A uid whose
    /// share is used has no more connection read in this pass. Root and
    /// portd's own uid are not counted.
    func charge(_ turns: Int, to uid: UInt32?) {
        guard turns > 0, let uid, !settings.limits.privilegedUIDs.contains(uid) else { return }
        turnsThisPass[uid, default: 0] += turns
        countedInThisPass()
    }

    /// What a REGISTER counts in `pace`: its listening socket and file
    /// (socket, bind, listen, lstat) cost several requests' worth; as
    /// uid 65534 registering and releasing names without pause on 200
    /// connections, 24,600 requests a second, another client's STATUS
    /// waited 7.8 ms on average.
    static let registerTurns = 4

    /// The names a client gone releases per turn counted in `pace`: each
    /// costs an lstat and an unlink of its socket file and the registry's
    /// work, 2 to 3.5 µs, so a client with the 256 names NamesPerClient=
    /// allows by default costs up to a millisecond; with 16 turns a pass,
    /// 16 such clients of one uid hanging up could take 14 ms of one pass
    /// (uid 65534 closing 200 connections holding 51,200 names took portd
    /// about 100 ms: scripts/fair-attack --attack exit).
    static let namesReleasedPerTurn = 4

    /// Something was counted in this pass: the counts are cleared when the
    /// next pass begins (step 4 of PCRunLoop's pass: a signalled source).
    func countedInThisPass() {
        guard !passCounted else { return }
        passCounted = true
        passSource?.signal()
    }

    /// A new pass of the loop: what was served in the last one no longer
    /// counts (`pace`, `list`).
    func passBegins() {
        passCounted = false
        handoversThisPass = 0
        if !turnsThisPass.isEmpty { turnsThisPass.removeAll(keepingCapacity: true) }
        if !listLookedAtThisPass.isEmpty { listLookedAtThisPass.removeAll(keepingCapacity: true) }
    }

    /// Starts serving: the control port joins the loop.
    func start() throws(PortError) {
        port.recordsPerPass = Self.controlRecordsPerPass
        port.setPacing { [unowned self] client, peer in self.pace(client, peer) }
        // A view handler: a LOOKUP is read in place (`handleView`), any
        // other request as the message a closure handler gets.
        port.setViewHandler { [unowned self] view in self.handleView(view) }
        port.onDisconnect { [unowned self] client in self.clientGone(client) }
        port.setAdmission { [unowned self] client, peer in self.admit(client, peer) }
        try port.schedule(in: loop, forMode: mode)
        startFanout()
        startHandovers()
        let pass = RunLoopSource { [unowned self] _ in self.passBegins() }
        loop.add(pass, forMode: mode)
        passSource = pass
        configureActivation()
    }

    /// Hands the declared ports with Exec= or Unit= to the activator.
    private func configureActivation() {
        var ports: [PortName: (descriptor: SharedDescriptor, starter: PortActivator.Starter)] = [:]
        for d in settings.declaredPorts {
            guard let starter = d.activation, let port = declared[d.name] else { continue }
            ports[d.name] = (port.descriptor, starter)
        }
        activator.configure(ports)
    }

    /// Stops serving: closes every connection and the control socket,
    /// removes every socket file portd made. Idempotent.
    func stop() {
        activator.stop()
        port.invalidate()
        deadlineTimer?.timer.invalidate()
        deadlineTimer = nil
        for (_, pending) in overflowing { pending.source.invalidate() }
        overflowing.removeAll()
        fanoutSource?.invalidate()
        fanoutSource = nil
        handoverSource?.invalidate()
        handoverSource = nil
        handovers = Handovers()
        passSource?.invalidate()
        passSource = nil
        fanout = Fanout()
        for entry in registry.listing() {
            if let file = entry.owner.handle.socket { directory.remove(file) }
        }
        // The records go with their handles: every port portd held for a
        // client (queued owners, owners, watchers, waiting lookups) closes.
        registry = Registry(limits: settings.limits)
        declared.close()
        directory.removeIfEmpty()
    }

    /// Applies a reloaded configuration: policy and limits take effect for
    /// the next request; names already owned stay. Declared ports follow
    /// the new list: new ones are created (and stored), removed ones closed
    /// (with whatever waits in them), changed check-in rights apply to the
    /// next CHECKIN. A newly declared name that a client owns now is not
    /// created (logged; the next reload or start tries again).
    func reconfigure(_ new: NameServerSettings) {
        settings = new
        registry.limits = new.limits
        do {
            let changes = try declared.reconcile(
                new.declaredPorts, isOwned: { registry.owner(of: $0) != nil }, now: WallClock.unixMilliseconds())
            applyToStore(changes)
        } catch {
            logger.error("cannot create a declared port: \(error)")
        }
        declaredBacklog = declaredBacklog.filter { declared[$0.key] != nil }
        if port.isValid { configureActivation() }
    }

    /// Logs what `reconcile` did and tells the store: new sockets are
    /// stored, removed ports' copies dropped.
    private func applyToStore(_ changes: DeclaredPorts.Changes) {
        for name in changes.added {
            guard let d = declared[name] else { continue }
            let how = changes.restored.contains(name) ? " (socket restored from the file-descriptor store)" : ""
            logger.info("declared port \(name) at \(d.file.path)\(how)", metadata: ["name": "\(name)"])
            guard let store else { continue }
            do {
                if try store.store(declaredPort: name.value, fileDescriptor: d.descriptor) { declared.markStored(name) }
            } catch {
                logger.warning(
                    "cannot hand the socket of \(name) to the file-descriptor store; messages waiting in it are lost if portd restarts: \(error)",
                    metadata: ["name": "\(name)"])
            }
        }
        for name in changes.updated {
            logger.info("declared port \(name): check-in rights changed", metadata: ["name": "\(name)"])
        }
        for name in changes.removed {
            logger.notice("declared port \(name) is no longer declared; closed it", metadata: ["name": "\(name)"])
        }
        for name in changes.discarded {
            logger.notice(
                "closed the stored socket of \(name): no such declared port (any more)", metadata: ["name": "\(name)"])
        }
        for name in changes.deferred {
            logger.warning(
                "declared port \(name) not created: a client owns the name; it is created at the next reload or start after the name is released",
                metadata: ["name": "\(name)"])
        }
        guard let store else { return }
        for name in changes.removed.map(\.value) + changes.discarded {
            do {
                try store.remove(declaredPort: name)
            } catch {
                logger.warning("cannot drop \(name) from the file-descriptor store: \(error)", metadata: ["name": "\(name)"])
            }
        }
    }

    /// One line for the service manager's STATUS=.
    var summary: String {
        "\(registry.nameCount) names, \(registry.clientCount) clients, \(declared.count) declared ports"
    }

    // MARK: - Admission and dispatch

    /// A new connection counts against MaxClients= and ClientsPerUID= from
    /// the start, by the uid that made it (SO_PEERCRED), so idle
    /// connections cannot use up portd's descriptors. A refused one gets a
    /// "limit" error record (msgid 0) and is closed at once: portd keeps no
    /// descriptor for it, and its requester reads the refusal as its reply.
    private func admit(_ client: ClientID, _ peer: Credentials?) -> PCPortMessage? {
        guard let peer else { return nil }  // AF_UNIX always has one; the first request admits otherwise
        guard let exceeded = registry.admit(client, uid: peer.uid) else { return nil }
        return refuse(0, .limit, exceeded.description, request: "connection", who: Who(client, peer).metadata)
    }

    /// What the control port lends: a LOOKUP in its usual form is read
    /// from the record in place (`NameServerRequest.parseLookUp`, which
    /// answers only what `parse` would); every other record is the message
    /// a closure handler is given (`handle`).
    func handleView(_ view: borrowing PortMessageView) -> PCPortMessage? {
        guard
            let lookUp = NameServerRequest.parseLookUp(
                view, maximumBytes: current.value.maximumRequestBytes, known: lastLookedUp)
        else { return handle(view.copy()) }
        lastLookedUp = lookUp.name
        return handle(
            (lookUp.serial, .success(.lookUp(lookUp.name, wait: lookUp.wait))), msgid: view.msgid,
            client: view.connectionID, sender: view.sender, connector: view.connectionCredentials,
            passedReplyPort: view.passedReplyPort, requestReplyPort: view.expectsReply ? view.replyPort : nil)
    }

    /// Admits, checks and parses a request, then hands it to its handler.
    func handle(_ message: PCPortMessage) -> PCPortMessage? {
        let parsed = NameServerRequest.parse(
            msgid: message.msgid, components: message.components, hasReplyPort: message.passedReplyPort != nil,
            maximumBytes: settings.maximumRequestBytes)
        return handle(
            parsed, msgid: message.msgid, client: message.connectionID, sender: message.sender,
            connector: message.connectionCredentials, passedReplyPort: message.passedReplyPort,
            requestReplyPort: message.expectsReply ? message.replyPort : nil)
    }

    /// A request parsed (`parsed`: its serial, and the request or why it is
    /// refused), admitted, checked and handed to its handler. `client`,
    /// `sender`, `connector` and `passedReplyPort` are the message's
    /// `connectionID`, `sender`, `connectionCredentials` and
    /// `passedReplyPort`; `requestReplyPort` its `replyPort` when it is a
    /// request (`expectsReply`), else nil.
    private func handle(
        _ parsed: (serial: UInt32, result: Result<NameServerRequest, NameServerRequest.Refusal>), msgid: UInt32,
        client: ClientID?, sender: Credentials?, connector: Credentials?, passedReplyPort: SendRight?,
        requestReplyPort: SendRight?
    ) -> PCPortMessage? {
        let serial = parsed.serial
        // A record queued before SO_PASSCRED was set on the listening socket
        // has no SCM_CREDENTIALS: the first request that made the service
        // manager start portd (socket activation). Whoever made the
        // connection (SO_PEERCRED) sent it then.
        guard let client, let sender = sender ?? connector else {
            return reply(.error(serial: serial, .internal, "no credentials came with the request"))
        }
        // The log's metadata is made only when something is logged (a
        // dictionary of formatted strings per request showed in profiles).
        let who = Who(client, sender)
        // Its decision reads the sender's uid alone (no array of groups made per request).
        let anyRequest = RequestAccess.anyRequest(connectorUID: connector?.uid)
        let current = self.current
        if case .deny(let why) = anyRequest.decide(by: Caller(uid: sender.uid, groups: []), under: current.value) {
            return refuse(serial, .denied, why, request: "request", who: who.metadata)
        }
        if let exceeded = registry.admit(client, uid: sender.uid) {
            return refuse(serial, .limit, exceeded.description, request: "connection", who: who.metadata)
        }
        // Before HELLO, only HELLO is served. A request without a serial
        // there is a client of the protocol before 1.0: it is told so in
        // the form it reads (its msgid, an error word, "message=…").
        if !greeted.contains(client) && msgid != NameServerProtocol.MessageID.hello {
            refusalLog.log("request before HELLO", who.metadata)
            let text = "portd speaks protocol \(NameServerProtocol.version): send HELLO with protocol=\(NameServerProtocol.version) first (portd-protocol(7), NAME SERVER)"
            if serial == 0 {
                return PCPortMessage(
                    msgid: msgid,
                    strings: [NameServerProtocol.ErrorWord.badRequest.rawValue, NameServerField(NameServerProtocol.Field.message, text).description])
            }
            return reply(.error(serial: serial, .helloRequired, text))
        }
        let request: NameServerRequest
        switch parsed.result {
        case .success(let r):
            request = r
        case .failure(.badRequest(let why)):
            refusalLog.log("bad request: \(why)", who.metadata)
            return reply(.error(serial: serial, .badRequest, why))
        case .failure(.invalidName(let why)):
            refusalLog.log("invalid name: \(why)", who.metadata)
            return reply(.error(serial: serial, .invalidName, why.description))
        case .failure(.tooLarge(let bytes, let limit)):
            return refuse(
                serial, .limit, "the request has more than \(limit) bytes of data (\(bytes) so far)", request: "request",
                who: who.metadata)
        }
        // HELLO first: nothing else is served before the client and portd
        // agree on a version.
        if case .hello(let versions) = request {
            return hello(versions, serial: serial, client: client, who: who.metadata)
        }
        let groups = groups(of: client, sender: sender, connector: connector)
        let context = Context(
            serial: serial, client: client, sender: sender, caller: Caller(uid: sender.uid, groups: groups), name: request.name,
            request: request.verb)

        // A port portd keeps and later sends to must be the client's own.
        if let passed = passedReplyPort {
            let role: String? =
                switch request {
                case .register: "notification port"
                case .watch: "watcher port"
                default: nil
                }
            if let role, let why = passedPortCheck.refusal(of: passed, role: role, sender: sender) {
                return refuse(context, .badRequest, why)
            }
        }

        switch request {
        case .status:
            return status(context)
        case .register(let name, let options, let remote):
            // Its turn was counted for whoever made the connection (`pace`).
            charge(Self.registerTurns - 1, to: connector?.uid)
            return register(name, options, context, notifyPort: passedReplyPort, remote: remote)
        case .release(let name):
            return release(name, context)
        case .lookUp(let name, let wait):
            // Only a request has a reply right. A one-way record's
            // `replyPort` is the REPLY_PORT it carried, a port of the
            // client's choosing that no check here vetted: a lookup that
            // waited on it would make portd send its answer there (to
            // another user's port, or to the client's own control
            // connection, which portd would then hold, keeping the
            // client's names after it exits).
            return lookUp(name, wait: wait, context, replyPort: requestReplyPort)
        case .watch(let name):
            // The parser checked that the request carried the watcher's port.
            return watch(name, context, watcherPort: passedReplyPort!)
        case .list(let after):
            return list(after: after, context)
        case .owner(let name, let from):
            return owner(name, from: from, context)
        case .checkIn(let name):
            return checkIn(name, context)
        case .hello:
            preconditionFailure("answered above")
        }
    }

    /// HELLO: agrees on the newest version both speak (same major version;
    /// portd speaks its minor versions' union), and states portd's limits
    /// and features. No common version: "unsupported-version", and the
    /// connection closes once the reply is out.
    private func hello(_ versions: [String], serial: UInt32, client: ClientID, who: Logger.Metadata) -> PCPortMessage {
        typealias F = NameServerProtocol.Field
        if greeted.contains(client) {
            return reply(.error(serial: serial, .badRequest, "HELLO was already answered on this connection"))
        }
        // "MAJOR.MINOR", digits only: anything else is not a version.
        func isVersion(_ v: String) -> Bool {
            let parts = v.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 2 && parts.allSatisfy { p in !p.isEmpty && p.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
        }
        if let bad = versions.first(where: { !isVersion($0) }) {
            return reply(.error(serial: serial, .badRequest, "\(NameServerField(F.protocol, bad)) is not a version (MAJOR.MINOR, digits)"))
        }
        func major(_ v: String) -> Int? { Int(v.prefix { $0 != "." }) }
        let majors = Set(NameServerProtocol.versions.compactMap(major))
        guard let agreed = versions.first(where: { major($0).map(majors.contains) ?? false })
        else {
            refusalLog.log("unsupported protocol version(s) \(versions.joined(separator: ", "))", who)
            // Closed after this pass, once the reply below has been sent.
            loop.perform(inModes: [mode]) { [port] in port.closeConnection(client) }
            return reply(.error(
                serial: serial, .unsupportedVersion,
                "portd speaks protocol \(NameServerProtocol.versions.joined(separator: ", ")), not \(versions.joined(separator: ", "))",
                NameServerProtocol.versions.map { NameServerField(F.protocol, $0) }))
        }
        _ = agreed
        greeted.insert(client)
        let limits = settings.limits
        let hello = NameServerHello(
            version: NameServerProtocol.version, portdVersion: PortdVersion.current, client: client,
            limits: [
                (F.maxRecordBytes, UInt64(Self.controlPortLimits.maxRecordSize)),
                (F.maxRequestBytes, UInt64(settings.maximumRequestBytes)),
                (F.maxRequestFields, UInt64(NameServerProtocol.maximumRequestFields)),
                (F.maxNames, UInt64(limits.namesPerClient)), (F.maxPending, UInt64(limits.pendingLookupsPerClient)),
                (F.maxWatches, UInt64(limits.watchesPerClient)),
                (F.maxWaitMilliseconds, UInt64(settings.maximumLookupWait.nanosecondsClamped / 1_000_000)),
                (F.listPage, UInt64(Self.listPageSize)), (F.ownerPage, UInt64(Self.ownerPageSize)),
            ],
            features: NameServerProtocol.Feature.allCases.map(\.rawValue))
        return reply(.success(serial: serial, hello.fields))
    }

    /// What every request handler needs to know about its request.
    struct Context {
        /// The request's serial, echoed in its reply.
        let serial: UInt32
        let client: ClientID
        let sender: Credentials
        /// The sender's uid and the groups it is judged with.
        let caller: Caller
        /// The name the request is about, if any.
        let name: PortName?
        let request: String
        /// The request's metadata for the log.
        var who: Logger.Metadata { Who(client, sender, name: name).metadata }
    }

    /// Who sent a request, and the name it is about: the log's metadata,
    /// made only when something is logged.
    struct Who {
        let client: ClientID
        let sender: Credentials
        let name: PortName?

        init(_ client: ClientID, _ sender: Credentials, name: PortName? = nil) {
            self.client = client
            self.sender = sender
            self.name = name
        }

        var metadata: Logger.Metadata {
            var m: Logger.Metadata = ["client": "\(client)", "pid": "\(sender.pid)", "uid": "\(sender.uid)"]
            if let name { m["name"] = "\(name)" }
            return m
        }
    }

    /// The groups a request is judged with: the sender's primary gid
    /// (SCM_CREDENTIALS) and the supplementary groups of the process that
    /// made the connection (SO_PEERGROUPS, read once per connection and
    /// kept on the registry's client), the latter only when the sender has
    /// the connector's uid: a descriptor passed to another user does not
    /// carry its maker's groups.
    private func groups(of client: ClientID, sender: Credentials, connector: Credentials?) -> [UInt32] {
        guard let connector, connector.uid == sender.uid else { return [sender.gid] }
        // Kept on the client: an array made per request otherwise.
        if let known = registry.judgedGroups(of: client, gid: sender.gid) { return known }
        let supplementary: [UInt32]
        if let known = registry.supplementaryGroups(of: client) {
            supplementary = known
        } else {
            do {
                supplementary = try port.peerGroups(ofConnection: client) ?? []
            } catch {
                logger.warning("cannot read the groups of client \(client): \(error)", metadata: ["client": "\(client)"])
                supplementary = []
            }
            registry.setSupplementaryGroups(supplementary, of: client)
        }
        let judged = supplementary.contains(sender.gid) ? supplementary : [sender.gid] + supplementary
        registry.setJudgedGroups(judged, gid: sender.gid, of: client)
        return judged
    }

    // MARK: - Replies and refusals

    /// The message of `reply`.
    func reply(_ reply: Reply) -> PCPortMessage {
        PCPortMessage(reply: reply)
    }

    /// A refusal: counted (STATUS refusals=), logged (at most
    /// RefusalLog.burst lines a second), and answered with `word`.
    func refuse(
        _ serial: UInt32, _ word: NameServerProtocol.ErrorWord, _ why: String, request: String,
        who: @autoclosure () -> Logger.Metadata
    ) -> PCPortMessage {
        counters.refusals += 1
        refusalLog.log("refused \(request): \(why)", who())
        return reply(.error(serial: serial, word, why))
    }

    func refuse(_ c: Context, _ word: NameServerProtocol.ErrorWord, _ why: String) -> PCPortMessage {
        refuse(c.serial, word, why, request: c.request, who: c.who)
    }
}
