// Bridge: names across hosts. An ordinary client of the local portd
// (PortNameServer) and of NATS (NatsConnection), on one run loop: every
// field below is the loop thread's, so none needs a lock; what libnats and
// the registry report from their threads comes in through `loop.perform`.
//
// Export: a local name the configuration exports, while it has a local
// owner (a WATCH of every name says when), is subscribed on P.NAME in queue
// group "portd" and put in the registry. A request there opens a session:
// the bridge LOOKUPs the name (so it always reaches the current owner), and
// delivers each record of the session on that connection, in order, one
// at a time (ExportSession).
//
// Import: a name the configuration imports that another bridge exports
// (the registry says so, and has said so within LeaseTime) is registered
// in the local portd by the bridge; each connection a local client makes
// to it (a LOOKUP) is one session with an exporting bridge
// (ImportSession): its records go there in order, at most Window one-way
// records unacknowledged (the connection is held meanwhile, so the sender
// blocks as on a full local queue), requests answered through the one-shot
// reply right. When the far side goes, the connection is closed, so its
// holders see the port invalidated.
//
// Liveness: a session idle for SessionCheck is pinged; a "no responders"
// (503) or a timeout closes it. A bridge that dies leaves registry entries
// that stop being refreshed: the importers release the name after
// LeaseTime. The bridge never exports a name it imported.

import CNats
import Logging
import PortCore
import PortDaemon
import Synchronization

public final class Bridge: @unchecked Sendable {
    // Safe to share: everything mutable is touched on `loop`'s thread only
    // (handlers, timers, performs); other threads reach the bridge only
    // through `loop.perform` (NATS callbacks, the registry's watcher) and
    // `stop()`, which performs too.
    let loop: PCRunLoop
    private(set) var configuration: BridgeConfiguration
    let logger: Logger
    let names: PortNameServer
    let hostName: String
    private(set) var nats: NatsConnection?
    private(set) var registry: NatsRegistry?
    private var connected = false

    // Subjects.
    var prefix: String { configuration.subjectPrefix }
    var bridgeID: String { configuration.bridgeID }
    let inboxPrefix: String
    private var inbox: NatsSubscription?
    private var sessionSubscription: NatsSubscription?
    private var controlSubscription: NatsSubscription?

    // Export.
    struct Exported {
        var subscription: NatsSubscription?
        var owner: NameOwner.Process
        var since: UInt64
    }
    var exported: [String: Exported] = [:]
    var exportSessions: [UInt64: ExportSession] = [:]
    /// Export sessions that delivered one-way records since their last
    /// acknowledgement, acknowledged together after the read event that
    /// brought the records (`flushAcknowledgements`).
    var acknowledgementsDue: Set<UInt64> = []
    /// True while the messages of one read event are handed out.
    var draining = false
    private var localWatch: NameWatch?

    // Import.
    struct RemoteEntry {
        var entry: RegistryEntry
        var lastSeen: MonotonicInstant
    }
    /// name → exporting bridge → its entry.
    var remote: [String: [String: RemoteEntry]] = [:]
    struct Imported {
        let port: PCPort
        var sessions: [UInt64: ImportSession] = [:]
    }
    var imported: [String: Imported] = [:]
    /// Every open import session by its id (also in its name's `sessions`).
    var importSessionsByID: [UInt64: ImportSession] = [:]
    /// Imports skipped because a local owner holds the name (logged once).
    var shadowed: Set<String> = []

    // Requests this bridge made, by the token at the end of their reply subject.
    enum Pending {
        case open(session: UInt64)
        case record(session: UInt64, reply: SendRight?)
        case ping(session: UInt64, export: Bool)
    }
    struct PendingEntry {
        let what: Pending
        let deadline: MonotonicInstant?
    }
    var pending: [UInt64: PendingEntry] = [:]
    var nextToken: UInt64 = 1
    var nextSession: UInt64 = 1
    private var timers: [PCTimer] = []
    /// portd states the feature `remote` (REGISTER's remote=).
    lazy var portdTakesRemote: Bool = {
        (try? names.daemonHello().features.contains(NameServerProtocol.Feature.remote.rawValue)) ?? false
    }()

    /// Counters for STATUS and the log.
    var lostInFlight = 0
    var refused = 0
    /// What peers on NATS can cause is logged at most RefusalLog.burst
    /// lines a second, the rest counted: refused messages, and libnats's
    /// asynchronous errors (a slow consumer, a lost heartbeat).
    var refusalLog: RefusalLog
    var natsErrorLog: RefusalLog

    public init(configuration: BridgeConfiguration, names: PortNameServer, loop: PCRunLoop, logger: Logger) {
        self.configuration = configuration
        self.names = names
        self.loop = loop
        self.logger = logger
        self.hostName = (try? CurrentProcess.hostName()) ?? configuration.bridgeID
        refusalLog = RefusalLog(logger: logger, clock: loop.clock, what: "refused messages")
        natsErrorLog = RefusalLog(logger: logger, clock: loop.clock, what: "NATS errors")
        var random: UInt64 = 0
        for _ in 0..<2 { random = random << 32 | UInt64(UInt32.random(in: 0...UInt32.max)) }
        inboxPrefix = "_INBOX.\(configuration.bridgeID).\(String(random, radix: 36))."
    }

    // MARK: Start and stop

    /// Starts on the loop's thread: watches local names, connects to NATS
    /// (in the background when no server answers yet), arms the timers.
    public func start() throws {
        // The bridge lives as long as its process: the closures below hold
        // it without a cycle that matters.
        localWatch = try names.watch(nil, loop: loop, onError: { [self] error in
            loop.perform { self.localWatchFailed(error) }
        }) { [self] change in localChange(change) }
        let events = NatsEvents(
            connected: { [self] in loop.perform { self.natsConnected() } },
            disconnected: { [self] in loop.perform { self.natsDisconnected() } },
            closed: {},
            error: { [self] text in loop.perform { self.natsErrorLog.log("nats: \(text)", [:], level: .warning) } })
        let connection = try NatsConnection(settings: configuration.nats, loop: loop, events: events)
        nats = connection
        connection.afterDrain = { [unowned self] in flushAcknowledgements() }
        registry = NatsRegistry(
            connection: connection, bucket: configuration.bucket, leaseTime: configuration.leaseTime, loop: loop,
            logger: logger
        ) { [self] change in registryChanged(change) }
        try subscribeShared()
        armTimers()
        // The names owned now (the watch reports only changes from here on).
        for entry in try names.list() { considerExport(entry.name, owner: entry.owner, since: entry.sinceMilliseconds) }
    }

    /// Stops, while the loop still runs (the registry's deletes are
    /// answered through it): exports withdrawn (registry keys deleted),
    /// imports released, every session closed; then `done` runs on the
    /// loop's thread, once the deletes are through or after RequestTimeout.
    public func shutdown(then done: @escaping @Sendable () -> Void) {
        for t in timers { t.invalidate() }
        timers = []
        localWatch?.cancel()
        for name in Array(exported.keys) { unexport(name) }
        for name in Array(imported.keys) { releaseImport(name, why: "the bridge stops") }
        registry?.stop()
        let finished = DoneFlag()
        let once: @Sendable () -> Void = {
            guard !finished.isSet else { return }
            finished.set()
            done()
        }
        loop.perform(after: configuration.requestTimeout, inModes: [.common]) { once() }
        if let registry {
            registry.afterQueued { [loop] in loop.perform { once() } }
        } else {
            once()
        }
    }

    /// After `shutdown`: closes the connection to NATS.
    public func close() { nats?.close() }

    private func subscribeShared() throws(NatsError) {
        guard let nats else { return }
        inbox = try nats.subscribeDrained(inboxPrefix + "*") { [unowned self] m in inboxMessage(m) }
        sessionSubscription = try nats.subscribeDrained("\(prefix)._s.\(bridgeID).*") { [unowned self] m in
            draining = true
            exportSessionMessage(m)
        }
        controlSubscription = try nats.subscribeDrained("\(prefix)._c.\(bridgeID).*") { [unowned self] m in
            importControlMessage(m)
        }
    }

    private func armTimers() {
        let refresh = configuration.leaseTime / 3
        let sweep = min(configuration.sessionCheck, .milliseconds(250))
        let t1 = PCTimer(interval: refresh, repeats: true) { [unowned self] _ in refreshLeases() }
        let t2 = PCTimer(interval: sweep, repeats: true) { [unowned self] _ in sweepPending() }
        let t3 = PCTimer(interval: configuration.sessionCheck, repeats: true) { [unowned self] _ in pingIdleSessions() }
        for t in [t1, t2, t3] { loop.add(t, forMode: .common) }
        timers = [t1, t2, t3]
    }

    private func natsConnected() {
        let first = !connected
        connected = true
        logger.info("nats: connected", metadata: ["url": "\(configuration.nats.urls.joined(separator: ","))"])
        registry?.restartWatch()
        // The registry may have missed our entries while we were away.
        if !first || !exported.isEmpty { refreshLeases() }
    }

    private func natsDisconnected() {
        guard connected else { return }
        connected = false
        logger.warning("nats: disconnected; reconnecting")
    }

    private func localWatchFailed(_ error: NameServerError) {
        logger.error("the watch of local names ended: \(error)")
    }

    /// STATUS= for the service manager.
    public var statusLine: String {
        let sessions = exportSessions.count + imported.values.reduce(0) { $0 + $1.sessions.count }
        return "nats: \(connected ? "connected" : "connecting"); \(exported.count) exported, \(imported.count) imported, \(sessions) sessions"
    }

    // MARK: Requests to NATS

    /// Publishes a request whose reply comes to the inbox with `what`.
    func request(
        _ subject: String, _ what: Pending, headers: KeyValuePairs<String, String> = [:], payload: [UInt8] = [],
        timeout: Duration?
    ) throws(NatsError) {
        guard let nats else { throw NatsError("natsConnection_PublishMsg", NATS_CONNECTION_CLOSED) }
        let token = nextToken
        nextToken += 1
        try nats.publish(subject, reply: inboxPrefix + String(token, radix: 36), headers: headers, payload: payload)
        pending[token] = PendingEntry(what: what, deadline: timeout.map { .now() + $0 })
        switch what {
        case .open(let sid), .record(let sid, _), .ping(let sid, false): importSessionsByID[sid]?.tokens.insert(token)
        case .ping(_, true): break
        }
    }

    private func inboxMessage(_ m: NatsMessage) {
        guard let dot = m.subject.lastIndex(of: "."), let token = UInt64(m.subject[m.subject.index(after: dot)...], radix: 36),
            let entry = pending.removeValue(forKey: token)
        else { return }  // a late answer to something given up
        forgetToken(token, of: entry.what)
        switch entry.what {
        case .open(let sid): importOpened(sid, m)
        case .record(let sid, let reply): importAnswered(sid, reply, m)
        case .ping(let sid, let export):
            if m.noResponders || m.error != nil {
                if export {
                    closeExportSession(sid, notifyPeer: false, why: "the importing bridge is gone")
                } else {
                    closeImportSession(sid, why: "the exporting bridge is gone")
                }
            }
        }
    }

    /// A request of an import session was answered or given up.
    private func forgetToken(_ token: UInt64, of what: Pending) {
        switch what {
        case .open(let sid), .record(let sid, _), .ping(let sid, false): importSessionsByID[sid]?.tokens.remove(token)
        case .ping(_, true): break
        }
    }

    /// Gives up what has waited past its deadline.
    private func sweepPending() {
        expireUnacknowledged()
        let now = MonotonicInstant.now()
        let expired = pending.filter { $0.value.deadline.map { $0 <= now } ?? false }
        for (token, entry) in expired {
            pending.removeValue(forKey: token)
            forgetToken(token, of: entry.what)
            switch entry.what {
            case .open(let sid), .record(let sid, _):
                closeImportSession(sid, why: "no answer within \(configuration.requestTimeout)")
            case .ping(let sid, let export):
                if export {
                    closeExportSession(sid, notifyPeer: false, why: "the importing bridge did not answer a ping")
                } else {
                    closeImportSession(sid, why: "the exporting bridge did not answer a ping")
                }
            }
        }
    }

    private func pingIdleSessions() {
        let now = MonotonicInstant.now()
        func idle(_ lastHeard: MonotonicInstant) -> Bool { lastHeard + configuration.sessionCheck <= now }
        for (name, imp) in imported {
            for (_, s) in imp.sessions where idle(s.lastHeard) && !s.pinging {
                guard case .open(let subject) = s.state else { continue }
                s.pinging = true
                _ = name
                do {
                    try request(
                        subject, .ping(session: s.id, export: false), headers: [BridgeHeader.session: "ping"],
                        timeout: configuration.requestTimeout)
                } catch {
                    closeImportSession(s.id, why: "cannot ping: \(error)")
                }
            }
        }
        for (_, s) in exportSessions where idle(s.lastHeard) && !s.pinging {
            guard let peer = s.peer else { continue }  // a one-shot call
            s.pinging = true
            do {
                try request(
                    peer, .ping(session: s.id, export: true), headers: [BridgeHeader.session: "ping"],
                    timeout: configuration.requestTimeout)
            } catch {
                closeExportSession(s.id, notifyPeer: false, why: "cannot ping: \(error)")
            }
        }
    }

    /// Answers a NATS request (`reply` subject) with an error.
    func answerError(_ reply: String?, _ refusal: BridgeRefusal) {
        guard let reply, let nats else { return }
        try? nats.publish(
            reply,
            headers: [
                BridgeHeader.error: refusal.description, BridgeHeader.serviceErrorCode: "\(refusal.code)",
                BridgeHeader.serviceError: refusal.text,
            ])
    }

    var maxPayload: Int {
        let m = nats?.maxPayload ?? 0
        return m > 0 ? m : 1 << 20
    }

    /// "host=B; uid=U; gid=G; pid=P" for a local sender.
    func originHeader(_ c: Credentials?) -> String {
        MessageOrigin(host: bridgeID, uid: c?.uid, gid: c?.gid, pid: c?.pid, natsUser: configuration.nats.user).text
    }

    // MARK: The registry

    private func refreshLeases() {
        guard let registry else { return }
        for (name, e) in exported {
            registry.put(entry(name, e))
        }
        expireRemote()
    }

    func entry(_ name: String, _ e: Exported) -> RegistryEntry {
        RegistryEntry(bridge: bridgeID, name: name, host: hostName, pid: e.owner.pid, uid: e.owner.uid, since: e.since)
    }

    private func registryChanged(_ change: RegistryChange) {
        // "BRIDGE.NAME": the bridge is one token.
        guard let dot = change.key.firstIndex(of: ".") else { return }
        let bridge = String(change.key[..<dot])
        let name = String(change.key[change.key.index(after: dot)...])
        if bridge == bridgeID {
            // Ours: what a crashed run of this bridge left behind goes.
            if change.value != nil, exported[name] == nil { registry?.delete(change.key) }
            return
        }
        guard configuration.imports(name) else { return }
        if let value = change.value, let e = RegistryEntry.parse(value), e.name == name, e.bridge == bridge {
            remote[name, default: [:]][bridge] = RemoteEntry(entry: e, lastSeen: .now())
        } else {
            remote[name]?.removeValue(forKey: bridge)
            if remote[name]?.isEmpty == true { remote.removeValue(forKey: name) }
        }
        reconcileImport(name)
    }

    private func expireRemote() {
        let now = MonotonicInstant.now()
        var touched: [String] = []
        for (name, byBridge) in remote {
            let live = byBridge.filter { $0.value.lastSeen + configuration.leaseTime > now }
            if live.count != byBridge.count {
                for b in byBridge.keys where live[b] == nil {
                    logger.info("registry: \(name) from \(b) not refreshed for \(configuration.leaseTime); gone")
                }
                remote[name] = live.isEmpty ? nil : live
                touched.append(name)
            }
        }
        for name in touched { reconcileImport(name) }
    }

    // MARK: Local names

    private func localChange(_ change: NameOwnerChange) {
        let name = change.name
        if let owner = change.newOwner {
            considerExport(name, owner: owner, since: WallClock.unixMilliseconds())
        } else {
            if exported[name] != nil { unexport(name) }
            // A local owner that shadowed an import went.
            if shadowed.contains(name) {
                shadowed.remove(name)
                reconcileImport(name)
            }
        }
    }

    /// Exports `name` if the configuration says so and it is not ours.
    func considerExport(_ name: String, owner: NameOwner.Process, since: UInt64) {
        guard configuration.exports(name), imported[name] == nil else { return }
        if var e = exported[name] {
            e.owner = owner
            exported[name] = e
            registry?.put(entry(name, e))
            return
        }
        guard Self.isSubjectTokens(name) else {
            logger.warning("not exporting \(name): a NATS subject cannot hold an empty token (two dots in a row, or one at the end)")
            return
        }
        guard let nats else { return }
        let subscription: NatsSubscription
        do {
            subscription = try nats.subscribe("\(prefix).\(name)", queue: "portd") { [weak self] m in
                guard let self else { return }
                self.loop.perform { self.exportCall(name, m) }
            }
        } catch {
            logger.error("cannot export \(name): \(error)")
            return
        }
        let e = Exported(subscription: subscription, owner: owner, since: since)
        exported[name] = e
        registry?.put(entry(name, e))
        logger.info("exported \(name)", metadata: ["owner": "\(owner)"])
    }

    func unexport(_ name: String) {
        guard let e = exported.removeValue(forKey: name) else { return }
        e.subscription?.cancel()
        registry?.delete(RegistryEntry.key(bridge: bridgeID, name: name))
        logger.info("no longer exported: \(name)")
    }

    /// Whether every dot-separated token of `name` is non-empty.
    static func isSubjectTokens(_ name: String) -> Bool {
        !name.isEmpty && !name.split(separator: ".", omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    // MARK: Reload

    /// Applies a new configuration (SIGHUP): exports and imports follow the
    /// new patterns. NATS settings, the bridge ID and the prefix take a
    /// restart (said in the log).
    public func reload(_ new: BridgeConfiguration) {
        if new.nats != configuration.nats || new.bridgeID != configuration.bridgeID
            || new.subjectPrefix != configuration.subjectPrefix || new.bucket != configuration.bucket
        {
            logger.warning("[NATS] and BridgeID changes take effect at the next start; exports and imports are reloaded now")
        }
        var kept = new
        kept.nats = configuration.nats
        kept.bridgeID = configuration.bridgeID
        kept.subjectPrefix = configuration.subjectPrefix
        kept.bucket = configuration.bucket
        configuration = kept
        for name in Array(exported.keys) where !configuration.exports(name) { unexport(name) }
        for name in Array(imported.keys) where !configuration.imports(name) { releaseImport(name, why: "no longer imported") }
        if let list = try? names.list() {
            for e in list { considerExport(e.name, owner: e.owner, since: e.sinceMilliseconds) }
        }
        for name in Array(remote.keys) { reconcileImport(name) }
        registry?.restartWatch()  // names newly imported are in its replay
    }
}

/// A flag set on one thread and read on another.
final class DoneFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
