// NameServer: the glue between portd's control port and the NameRegistry.
// The control socket is a PCPort (adopting the listening descriptor) on the
// daemon's run loop; each request is parsed (NameServerRequest), decided
// (NameRegistry, policy, limits) and answered (NameServerReply), and every
// consequence of a decision (socket files, NAME_ACQUIRED, NAME_OWNER_CHANGED,
// answers to waiting lookups) is carried out in the same pass.
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
//   - a name has a socket file in `sockets` exactly while it has an owner
//     that received (or is receiving in this pass) its listening socket;
//   - `acquirePorts`, `watchers` and `waitingLookups` hold exactly the
//     rights of queued registrations, watches and waiting lookups the
//     registry knows; whatever the registry drops, they drop in the same call;
//   - portd never blocks on a client: messages to watchers, queued owners
//     and waiting lookups are sent with a zero send timeout; a full queue
//     ends that watch (or that owner's claim), logged;
//   - a client that misbehaves affects only itself: a bad request gets an
//     error reply, a malformed record closes its own connection.

import Logging
import PortCore

final class NameServer {
    /// Counters for STATUS.
    struct Counters {
        var lookups = 0
        var refusals = 0
    }

    /// Replaced by `reconfigure` (SIGHUP).
    private var settings: NameServerSettings
    private let logger: Logger
    private let loop: PCRunLoop
    private let mode: PCRunLoop.Mode
    private let port: PCPort
    private let directory: PortDirectory
    private let declared: DeclaredPorts
    private let store: DeclaredPortStore?
    private let activator: PortActivator
    private let startedAt: MonotonicInstant
    /// When serving began, Unix ms ("since" of the declared ports).
    private let startedAtWall = WallClock.unixMilliseconds()
    private let ownPID = CurrentProcess.id
    private let ownUID = CurrentProcess.userID
    private var registry: NameRegistry
    private var sockets: [PortName: PortSocketFile] = [:]
    private var acquirePorts: [UInt64: SendRight] = [:]
    /// The port of each owner that gave one (its REGISTER's reply port),
    /// told with NAME_LOST when another client replaces it.
    private var ownerPorts: [PortName: (client: ClientID, port: SendRight)] = [:]
    private var watchers: [WatchID: (port: SendRight, who: Credentials, groups: [UInt32])] = [:]
    private var waitingLookups: [LookupID: SendRight] = [:]
    /// Supplementary groups of each client connection (SO_PEERGROUPS).
    private var connectionGroups: [ClientID: [UInt32]] = [:]
    private var deadlineTimer: (timer: PCTimer, fireAt: MonotonicInstant)?
    private(set) var counters = Counters()

    /// The limits of the control port: small requests, no large data, few
    /// descriptors; up to 65535 components so that a LIST reply can name
    /// many ports (its size is checked before sending).
    static let controlPortLimits = PortLimits(
        maxRecordSize: PortLimits.defaultMaxRecordSize, maxComponents: 65535, maxDescriptors: 4, maxLargeDataBytes: 0)

    /// Serves the listening control socket `controlDescriptor` (taking
    /// ownership) on `loop` in `mode` once `start()` is called. Creates
    /// the declared ports, taking the sockets in `restored` (passed back by
    /// the service manager, by port name) for theirs, and hands each to
    /// `store`.
    init(
        controlDescriptor: consuming OwnedDescriptor, directory: PortDirectory, settings: NameServerSettings, logger: Logger,
        loop: PCRunLoop, mode: PCRunLoop.Mode = .default, startedAt: MonotonicInstant = .now(),
        restored: [String: DeclaredPorts.Restored] = [:], clearStored: Set<String> = [],
        store: DeclaredPortStore? = nil
    ) throws(SystemCallError) {
        self.settings = settings
        self.logger = logger
        self.loop = loop
        self.mode = mode
        self.directory = directory
        self.startedAt = startedAt
        self.registry = NameRegistry(limits: settings.limits)
        let controlSocketPath = (try? UnixSocket.boundPath(controlDescriptor)).flatMap { $0 } ?? ""
        self.port = try PCPort(
            listeningDescriptor: controlDescriptor, limits: Self.controlPortLimits, logger: logger)
        self.store = store
        self.activator = PortActivator(
            loop: loop, mode: mode, logger: logger, controlSocketPath: controlSocketPath,
            userInstance: settings.onlyUID != nil)
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

    /// Starts serving: the control port joins the loop.
    func start() throws(PortError) {
        port.setHandler { [unowned self] message in self.handle(message) }
        port.onDisconnect { [unowned self] client in self.clientGone(client) }
        port.setAdmission { [unowned self] client, peer in self.admit(client, peer) }
        try port.schedule(in: loop, forMode: mode)
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
        waitingLookups.removeAll()
        watchers.removeAll()
        acquirePorts.removeAll()
        ownerPorts.removeAll()
        for file in sockets.values { directory.remove(file) }
        sockets.removeAll()
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
                if try store.store(declaredPort: name.value, fileDescriptor: d.descriptor.descriptor) { declared.markStored(name) }
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

    // MARK: - Requests

    /// Refusal log lines, at most `refusalLogBurst` a second: a client
    /// hammering portd with refused requests or connections cannot flood
    /// the journal. The lines left out are counted in one line when the
    /// next second's first refusal is logged (every refusal still counts in
    /// STATUS `refusals=`).
    private static let refusalLogBurst = 20
    private var refusalLogWindow = (start: MonotonicInstant.now(), logged: 0, suppressed: 0)

    private func logRefusal(_ line: @autoclosure () -> String, _ who: Logger.Metadata) {
        let now = MonotonicInstant.now()
        if now - refusalLogWindow.start >= .seconds(1) {
            if refusalLogWindow.suppressed > 0 {
                logger.notice("\(refusalLogWindow.suppressed) more refusals were not logged (at most \(Self.refusalLogBurst) a second)")
            }
            refusalLogWindow = (now, 0, 0)
        }
        if refusalLogWindow.logged < Self.refusalLogBurst {
            refusalLogWindow.logged += 1
            logger.notice("\(line())", metadata: who)
        } else {
            refusalLogWindow.suppressed += 1
        }
    }

    /// A new connection counts against MaxClients= and ClientsPerUID= from
    /// the start, by the uid that made it (SO_PEERCRED), so idle
    /// connections cannot use up portd's descriptors. A refused one gets a
    /// "limit" error record (msgid 0) and is closed at once: portd keeps no
    /// descriptor for it, and its requester reads the refusal as its reply.
    private func admit(_ client: ClientID, _ peer: Credentials?) -> PCPortMessage? {
        guard let peer else { return nil }  // AF_UNIX always has one; the first request admits otherwise
        guard let exceeded = registry.admit(client, uid: peer.uid) else { return nil }
        let who: Logger.Metadata = ["client": "\(client)", "pid": "\(peer.pid)", "uid": "\(peer.uid)"]
        return refuse(0, .limit, exceeded.description, request: "connection", who: who)
    }

    private func handle(_ message: PCPortMessage) -> PCPortMessage? {
        let msgid = message.msgid
        // A record queued before SO_PASSCRED was set on the listening socket
        // has no SCM_CREDENTIALS: the first request that made the service
        // manager start portd (socket activation). Whoever made the
        // connection (SO_PEERCRED) sent it then.
        guard let client = message.connectionID, let sender = message.sender ?? message.connectionCredentials else {
            return NameServerReply.error(msgid, .internal, "no credentials came with the request")
        }
        var who: Logger.Metadata = ["client": "\(client)", "pid": "\(sender.pid)", "uid": "\(sender.uid)"]
        if let only = settings.onlyUID {
            // The sender of this request, and whoever made the connection (SO_PEERCRED).
            for uid in [sender.uid, message.connectionCredentials?.uid ?? only] where uid != only {
                return refuse(
                    msgid, .denied, "this portd serves uid \(only) only, not uid \(uid)", request: "request", who: who)
            }
        }
        if let exceeded = registry.admit(client, uid: sender.uid) {
            return refuse(msgid, .limit, exceeded.description, request: "connection", who: who)
        }
        let request: NameServerRequest
        switch NameServerRequest.parse(
            msgid: msgid, components: message.components, hasReplyPort: message.passedReplyPort != nil,
            maximumBytes: settings.maximumRequestBytes)
        {
        case .success(let r):
            request = r
        case .failure(.badRequest(let why)):
            logger.info("bad request: \(why)", metadata: who)
            return NameServerReply.error(msgid, .badRequest, why)
        case .failure(.invalidName(let why)):
            logger.info("invalid name: \(why)", metadata: who)
            return NameServerReply.error(msgid, .invalidName, why.description)
        case .failure(.tooLarge(let bytes, let limit)):
            return refuse(
                msgid, .limit, "the request has more than \(limit) bytes of data (\(bytes) so far)", request: "request",
                who: who)
        }
        if let name = request.name { who["name"] = "\(name)" }
        let context = Context(
            msgid: msgid, client: client, sender: sender,
            groups: groups(of: client, sender: sender, connector: message.connectionCredentials), who: who,
            request: request.verb)

        switch request {
        case .status:
            return status(context)
        case .register(let name, let options):
            return register(name, options, context, notifyPort: message.passedReplyPort)
        case .release(let name):
            return release(name, context)
        case .lookUp(let name, let wait):
            return lookUp(name, wait: wait, context, replyPort: message.replyPort)
        case .watch(let name):
            // The parser checked that the request carried the watcher's port.
            return watch(name, context, watcherPort: message.passedReplyPort!)
        case .list(let after):
            return list(after: after, context)
        case .owner(let name):
            return owner(name, context)
        case .checkIn(let name):
            return checkIn(name, context)
        }
    }

    /// What every request handler needs to know about its request.
    private struct Context {
        let msgid: UInt32
        let client: ClientID
        let sender: Credentials
        /// The sender's primary gid and, when the sender is the user who
        /// made the connection, that process's supplementary groups.
        let groups: [UInt32]
        let who: Logger.Metadata
        let request: String

        func may(_ policy: NameServerSettings.Policy, _ name: PortName) -> Bool {
            policy(name, sender.uid, groups)
        }
    }

    /// The groups a request is judged with: the sender's primary gid
    /// (SCM_CREDENTIALS) and the supplementary groups of the process that
    /// made the connection (SO_PEERGROUPS, read once per connection), the
    /// latter only when the sender has the connector's uid: a descriptor
    /// passed to another user does not carry its maker's groups.
    private func groups(of client: ClientID, sender: Credentials, connector: Credentials?) -> [UInt32] {
        guard let connector, connector.uid == sender.uid else { return [sender.gid] }
        let supplementary: [UInt32]
        if let known = connectionGroups[client] {
            supplementary = known
        } else {
            do {
                supplementary = try port.peerGroups(ofConnection: client) ?? []
            } catch {
                logger.warning("cannot read the groups of client \(client): \(error)", metadata: ["client": "\(client)"])
                supplementary = []
            }
            connectionGroups[client] = supplementary
        }
        return supplementary.contains(sender.gid) ? supplementary : [sender.gid] + supplementary
    }

    private func refuse(
        _ msgid: UInt32, _ word: NameServerReply.ErrorWord, _ why: String, request: String, who: Logger.Metadata
    ) -> PCPortMessage {
        counters.refusals += 1
        logRefusal("refused \(request): \(why)", who)
        return NameServerReply.error(msgid, word, why)
    }

    private func refuse(_ c: Context, _ word: NameServerReply.ErrorWord, _ why: String) -> PCPortMessage {
        refuse(c.msgid, word, why, request: c.request, who: c.who)
    }

    private func status(_ c: Context) -> PCPortMessage {
        let uptime = max(0, (MonotonicInstant.now() - startedAt).nanosecondsClamped / 1_000_000)
        return NameServerReply.words(
            c.msgid, "ok", "version=\(PortdVersion.current)", "pid=\(ownPID)", "uptime_ms=\(uptime)",
            "names=\(registry.nameCount)", "clients=\(registry.clientCount)", "lookups=\(counters.lookups)",
            "refusals=\(counters.refusals)", "declared=\(declared.count)")
    }

    private func register(
        _ name: PortName, _ options: RegisterOptions, _ c: Context, notifyPort: SendRight?
    ) -> PCPortMessage {
        if declared[name] != nil {
            return refuse(c, .denied, "\(name) is a declared port; its service claims it with CHECKIN")
        }
        guard c.may(settings.mayRegister, name) else {
            return refuse(c, .denied, "uid \(c.sender.uid) may not register \(name)")
        }
        // The socket comes first, so that a registration never has to be
        // undone for lack of one; when the name is not granted it goes again.
        let socket: (fd: SharedDescriptor, file: PortSocketFile)
        do {
            socket = try directory.makeListeningSocket()
        } catch {
            logger.error("cannot create a port socket: \(error)", metadata: c.who)
            return NameServerReply.error(c.msgid, .internal, "portd cannot create the port's socket: \(error)")
        }
        // A client that waited in the queue and now replaces the owner leaves the queue.
        let queuedTicket = registry.queue(of: name).first { $0.client == c.client }?.ticket
        let outcome = registry.register(
            name, client: c.client, credentials: c.sender, options: options, canQueue: notifyPort != nil,
            now: WallClock.unixMilliseconds())
        guard case .registered(let change) = outcome else {
            directory.remove(socket.file)  // the socket closes on return
            switch outcome {
            case .queued(let entry, let position):
                if acquirePorts[entry.ticket] == nil { acquirePorts[entry.ticket] = notifyPort }
                logger.debug("\(name) queued at position \(position)", metadata: c.who)
                return NameServerReply.words(c.msgid, "queued")
            case .alreadyOwned(let owner):
                return NameServerReply.words(
                    c.msgid, "already-owned", "pid=\(owner.credentials.pid)", "uid=\(owner.credentials.uid)")
            case .limit(let exceeded):
                return refuse(c, .limit, exceeded.description)
            case .registered:
                preconditionFailure("handled above")
            }
        }
        if let queuedTicket { acquirePorts[queuedTicket] = nil }
        let listening = SendRight(sharing: socket.fd)  // closes portd's copy once the reply is sent
        apply(change, requesterSocket: socket.file)  // tells a replaced owner first
        if let notifyPort { ownerPorts[name] = (c.client, notifyPort) }
        return NameServerReply.make(c.msgid, [.text("registered"), .port(listening)])
    }

    private func release(_ name: PortName, _ c: Context) -> PCPortMessage {
        if declared[name] != nil { return NameServerReply.words(c.msgid, "not-owner") }
        switch registry.release(name, client: c.client, now: WallClock.unixMilliseconds()) {
        case .released(let change):
            apply(change, requesterSocket: nil)
            return NameServerReply.words(c.msgid, "released")
        case .leftQueue(let entry):
            acquirePorts[entry.ticket] = nil
            logger.debug("left the queue of \(name)", metadata: c.who)
            return NameServerReply.words(c.msgid, "released")
        case .notOwner, .notFound:
            // Nobody owning the name is not the client owning it either (the contract's two words).
            return NameServerReply.words(c.msgid, "not-owner")
        }
    }

    private func lookUp(_ name: PortName, wait: Duration?, _ c: Context, replyPort: SendRight?) -> PCPortMessage? {
        counters.lookups += 1
        guard c.may(settings.mayLookUp, name) else {
            return refuse(c, .denied, "uid \(c.sender.uid) may not look up \(name)")
        }
        if let port = declared[name] {
            return found(c.msgid, name, file: port.file, owner: Credentials(pid: ownPID, uid: ownUID, gid: 0))
        }
        let deadline = wait.map { loop.clock.now() + min($0, settings.maximumLookupWait) }
        switch registry.lookUp(name, client: c.client, waitUntil: replyPort == nil ? nil : deadline) {
        case .found(let owner):
            return found(c.msgid, name, owner: owner.credentials)
        case .notFound:
            return NameServerReply.error(c.msgid, .notFound, "no port is registered as \(name)")
        case .waiting(let lookup):
            waitingLookups[lookup.id] = replyPort  // answered later: the reply right stays with us
            rearmDeadlineTimer()
            logger.debug("lookup waits for \(name)", metadata: c.who)
            return nil
        case .limit(let exceeded):
            return refuse(c, .limit, exceeded.description)
        }
    }

    /// "found", a new connection to the name's port, and its owner.
    private func found(_ msgid: UInt32, _ name: PortName, file: PortSocketFile? = nil, owner: Credentials) -> PCPortMessage {
        guard let file = file ?? sockets[name] else {
            logger.error("\(name) has an owner but no socket file", metadata: ["name": "\(name)"])
            return NameServerReply.error(msgid, .internal, "\(name) has no socket")
        }
        switch directory.connect(to: file) {
        case .connected(let fd):
            return NameServerReply.make(
                msgid, [.text("found"), .port(SendRight(sharing: fd)), .text("pid=\(owner.pid)"), .text("uid=\(owner.uid)")])
        case .backlogFull:
            return refuse(
                msgid, .limit, "the port \(name) accepts no more connections now (backlog full)", request: "LOOKUP",
                who: ["name": "\(name)"])
        case .refused:
            return NameServerReply.error(msgid, .notFound, "the owner of \(name) no longer listens on it")
        case .failed(let error):
            logger.error("cannot connect to \(name): \(error)", metadata: ["name": "\(name)"])
            return NameServerReply.error(msgid, .internal, "portd cannot connect to \(name): \(error)")
        }
    }

    private func watch(_ name: PortName?, _ c: Context, watcherPort: SendRight) -> PCPortMessage {
        if let name, !c.may(settings.mayLookUp, name) {
            return refuse(c, .denied, "uid \(c.sender.uid) may not watch \(name)")
        }
        switch registry.watch(name, client: c.client) {
        case .success(let id):
            watchers[id] = (watcherPort, c.sender, c.groups)
            return NameServerReply.words(c.msgid, "watching")
        case .failure(let exceeded):
            return refuse(c, .limit, exceeded.description)
        }
    }

    /// "ok" and one line per name after `after` the client may look up, as
    /// many as fit in one record of at most PortLimits.default.maxComponents
    /// components; "more" at the end when some did not (the client asks
    /// again with after=LAST-NAME).
    private func list(after: PortName?, _ c: Context) -> PCPortMessage {
        var lines: [(PortName, String)] = []
        for entry in registry.listing() where after.map({ entry.name > $0 }) ?? true && c.may(settings.mayLookUp, entry.name) {
            let o = entry.owner
            lines.append(
                (entry.name, "\(entry.name)\t\(o.credentials.pid)\t\(o.credentials.uid)\t\(o.sinceMilliseconds)\t\(entry.queued)"))
        }
        for d in declared.all where after.map({ d.name > $0 }) ?? true && c.may(settings.mayLookUp, d.name) {
            lines.append((d.name, "\(d.name)\t\(ownPID)\t\(ownUID)\t\(d.sinceMilliseconds)\t0"))
        }
        lines.sort { $0.0 < $1.0 }
        // Header, table and data must fit in one record, with room for "more".
        let room = Self.controlPortLimits.maxRecordSize - WireFormat.headerSize - 2 * WireFormat.entrySize - 6
        var words = ["ok"]
        var size = 0
        for (_, line) in lines {
            let cost = WireFormat.entrySize + line.utf8.count
            // Components are capped at what a client decodes by default
            // (PortLimits.default), not at what portd itself accepts.
            if size + cost > room || words.count + 1 >= PortLimits.default.maxComponents {
                words.append("more")
                break
            }
            size += cost
            words.append(line)
        }
        return NameServerReply.make(c.msgid, words.map { .text($0) })
    }

    private func owner(_ name: PortName, _ c: Context) -> PCPortMessage {
        guard c.may(settings.mayLookUp, name) else {
            return refuse(c, .denied, "uid \(c.sender.uid) may not look up \(name)")
        }
        if let d = declared[name] {
            return NameServerReply.words(c.msgid, "ok", "pid=\(ownPID)", "uid=\(ownUID)", "since_ms=\(d.sinceMilliseconds)")
        }
        guard let owner = registry.owner(of: name) else {
            return NameServerReply.error(c.msgid, .notFound, "no port is registered as \(name)")
        }
        var words = [
            "ok", "pid=\(owner.credentials.pid)", "uid=\(owner.credentials.uid)", "since_ms=\(owner.sinceMilliseconds)",
        ]
        words += registry.queue(of: name).map { "queued=\($0.credentials.pid):\($0.credentials.uid)" }
        return NameServerReply.make(c.msgid, words.map { .text($0) })
    }

    private func checkIn(_ name: PortName, _ c: Context) -> PCPortMessage {
        guard let port = declared[name] else { return NameServerReply.words(c.msgid, "not-declared") }
        guard port.checkInUIDs.contains(c.sender.uid) || c.groups.contains(where: port.checkInGIDs.contains) else {
            return refuse(c, .denied, "uid \(c.sender.uid) may not check in for \(name)")
        }
        declared.recordCheckIn(name)
        activator.checkedIn(name, by: c.client)
        logger.info("service checked in for \(name) (check-in \(port.checkIns + 1))", metadata: c.who)
        return NameServerReply.make(c.msgid, [.text("checked-in"), .port(port.listening)])
    }

    // MARK: - Consequences

    /// Carries out one owner change: the old owner's socket file goes; the
    /// new owner gets its socket (the requester's, made by the caller, or a
    /// new one sent to a promoted queued owner); watchers are told; lookups
    /// waiting for the name are answered. A promoted owner that cannot be
    /// reached loses the name in turn (a further change, applied here too).
    private func apply(_ first: OwnerChange, requesterSocket: PortSocketFile?) {
        var changes = [first]
        var socketForNew = requesterSocket
        while !changes.isEmpty {
            let change = changes.removeFirst()
            let name = change.name
            if change.old != nil, let file = sockets.removeValue(forKey: name) { directory.remove(file) }
            if let old = change.old, let lost = ownerPorts[name], lost.client == old.client {
                ownerPorts[name] = nil
                if change.kind == .replaced, let new = change.new {
                    _ = send(NameServerReply.nameLost(name, to: new.credentials), to: lost.port, what: "NAME_LOST for \(name)")
                }
            }
            var unreachable: NameOwner?
            if let new = change.new {
                if let file = socketForNew {
                    sockets[name] = file
                } else if let file = handOver(name, to: new) {
                    sockets[name] = file
                } else {
                    unreachable = new
                }
            }
            socketForNew = nil
            log(change)
            tellWatchers(change)
            for lookup in change.answeredLookups {
                guard let reply = waitingLookups.removeValue(forKey: lookup.id) else { continue }
                let answer = found(NameServerRequest.MessageID.lookUp, name, owner: change.new!.credentials)
                send(answer, to: reply, what: "the answer to a waiting lookup of \(name)")
            }
            if let unreachable,
                case .released(let next) = registry.release(
                    name, client: unreachable.client, now: WallClock.unixMilliseconds())
            {
                changes.append(next)
            }
        }
        rearmDeadlineTimer()
    }

    /// Sends NAME_ACQUIRED with a new listening socket to a queued owner
    /// that just got `name`; returns the socket file, or nil when the owner
    /// cannot be reached (no port, port gone, queue full).
    private func handOver(_ name: PortName, to owner: NameOwner) -> PortSocketFile? {
        let metadata: Logger.Metadata = [
            "name": "\(name)", "client": "\(owner.client)", "pid": "\(owner.credentials.pid)",
            "uid": "\(owner.credentials.uid)",
        ]
        guard let notifyPort = acquirePorts.removeValue(forKey: owner.ticket) else {
            logger.warning("the next owner of \(name) left no port to tell; passing it on", metadata: metadata)
            return nil
        }
        let socket: (fd: SharedDescriptor, file: PortSocketFile)
        do {
            socket = try directory.makeListeningSocket()
        } catch {
            logger.error("cannot create a port socket for \(name): \(error)", metadata: metadata)
            return nil
        }
        let message = NameServerReply.nameAcquired(name, listening: SendRight(sharing: socket.fd))
        if send(message, to: notifyPort, what: "NAME_ACQUIRED for \(name)") {
            ownerPorts[name] = (owner.client, notifyPort)
            return socket.file
        }
        directory.remove(socket.file)
        return nil
    }

    private func tellWatchers(_ change: OwnerChange) {
        var event: PCPortMessage?
        for id in change.watchers {
            guard let watcher = watchers[id] else { continue }
            if !settings.mayLookUp(change.name, watcher.who.uid, watcher.groups) { continue }
            let message = event ?? NameServerReply.ownerChanged(change)
            event = message
            if !send(message, to: watcher.port, what: "NAME_OWNER_CHANGED for \(change.name)") {
                watchers[id] = nil
                registry.unwatch(id)
                logger.notice(
                    "watch ended: the watcher's port is gone or full",
                    metadata: ["pid": "\(watcher.who.pid)", "uid": "\(watcher.who.uid)"])
            }
        }
    }

    /// Sends without waiting; false (logged) when the receiver is gone or full.
    @discardableResult
    private func send(_ message: PCPortMessage, to right: SendRight, what: String) -> Bool {
        do {
            switch try right.send(message, timeout: .zero) {
            case .sent:
                return true
            case .timedOut:
                logger.notice("not sent: \(what): the receiver's queue is full")
            case .receiverGone:
                logger.debug("not sent: \(what): the receiver is gone")
            }
        } catch {
            logger.notice("not sent: \(what): \(error)")
        }
        return false
    }

    private func log(_ change: OwnerChange) {
        var metadata: Logger.Metadata = ["name": "\(change.name)", "event": "\(change.kind.rawValue)"]
        if let old = change.old { metadata["old_pid"] = "\(old.credentials.pid)" }
        if let new = change.new { metadata["new_pid"] = "\(new.credentials.pid)"; metadata["new_uid"] = "\(new.credentials.uid)" }
        logger.debug("\(change.name) \(change.kind.rawValue)", metadata: metadata)
    }

    // MARK: - Clients that go, lookups that expire

    private func clientGone(_ client: ClientID) {
        activator.clientGone(client)
        connectionGroups[client] = nil
        let removal = registry.removeClient(client, now: WallClock.unixMilliseconds())
        for ticket in removal.queuedTickets { acquirePorts[ticket] = nil }
        for id in removal.watches { watchers[id] = nil }
        for lookup in removal.lookups { waitingLookups[lookup.id] = nil }
        logger.debug(
            "client gone", metadata: ["client": "\(client)", "released": "\(removal.changes.count)"])
        for change in removal.changes { apply(change, requesterSocket: nil) }
        rearmDeadlineTimer()
    }

    /// Keeps one timer armed for the earliest deadline of a waiting lookup.
    private func rearmDeadlineTimer() {
        let next = registry.nextLookupDeadline
        if deadlineTimer?.fireAt == next { return }
        deadlineTimer?.timer.invalidate()
        deadlineTimer = nil
        guard let next else { return }
        let timer = PCTimer(fireAt: next) { [unowned self] _ in
            self.deadlineTimer = nil
            self.expireLookups()
        }
        loop.add(timer, forMode: mode)
        deadlineTimer = (timer, next)
    }

    private func expireLookups() {
        for lookup in registry.expireLookups(now: loop.clock.now()) {
            guard let reply = waitingLookups.removeValue(forKey: lookup.id) else { continue }
            send(
                NameServerReply.error(
                    NameServerRequest.MessageID.lookUp, .timeout, "no port was registered as \(lookup.name) in time"),
                to: reply, what: "the timeout of a lookup of \(lookup.name)")
        }
        rearmDeadlineTimer()
    }
}
