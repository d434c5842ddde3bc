// ImportSession: the importing bridge's end of one session — one
// connection a local client made to an imported name (through LOOKUP), and
// the exporting bridge that took it. The first record opens the session
// (a request to P.NAME in the exporters' queue group, so NATS picks one
// exporter); the records sent while it opens wait, then follow in order on
// the session subject the exporter answered with.
//
// Back-pressure: at most Window one-way records are unacknowledged; when
// the window is full the connection is held (PCPort.holdConnection): its
// records wait in the kernel's queue, and the local sender blocks, or
// times out, as it would with a slow local receiver. Requests are answered
// through the request's one-shot reply right, whenever the reply comes
// (the sender's own timeout applies at the sender).
//
// When the far side goes (closed, no responders, no answer in time) the
// connection is closed: its holders see the port invalidated.
//
// All of it runs on the bridge's loop thread.

import Logging
import PortCore

final class ImportSession {
    enum State {
        case opening
        case open(subject: String)
        case closed
    }
    let id: UInt64
    let name: String
    let connection: UInt64
    var state = State.opening
    /// Records waiting for the open: their bytes and reply rights.
    var waiting: [(bytes: [UInt8], reply: SendRight?, origin: String)] = []
    var unacknowledged = 0
    var held = false
    var lastHeard = MonotonicInstant.now()
    var pinging = false
    /// The tokens of its requests still pending in the bridge.
    var tokens: Set<UInt64> = []
    /// One-way records published on the session subject, and how many of
    /// them the exporter acknowledged (`Portd-Ack`, cumulative).
    var sentOneWay: UInt64 = 0
    var acknowledgedOneWay: UInt64 = 0
    /// When the exporter last made progress on them (an acknowledgement,
    /// or the first record sent with none outstanding): a session that
    /// makes none within RequestTimeout is closed.
    var lastProgress = MonotonicInstant.now()
    /// The origin last sent on the session (Portd-Origin goes when it changes).
    var sentOrigin: String?
    /// The last local sender and its origin text, so that the text is
    /// written once per sender rather than once per record.
    var lastSender: Credentials?
    var lastOrigin = ""

    init(id: UInt64, name: String, connection: UInt64) {
        self.id = id
        self.name = name
        self.connection = connection
    }
}

extension Bridge {
    /// Makes the local registration match the registry for `name`.
    func reconcileImport(_ name: String) {
        let live = !(remote[name]?.isEmpty ?? true)
        if live && imported[name] == nil && configuration.imports(name) {
            importName(name)
        } else if !live && imported[name] != nil {
            releaseImport(name, why: "no host exports it any more")
        }
    }

    private func importName(_ name: String) {
        guard exported[name] == nil else { return }  // a local owner shadows it
        let outcome: RegistrationOutcome
        do {
            outcome = try names.register(name, options: [.doNotQueue], remote: remoteHosts(name))
        } catch {
            logger.error("cannot import \(name): \(error)")
            return
        }
        switch outcome {
        case .registered(let port):
            port.setHandler { [unowned self, unowned port] message in
                importedMessage(name, port, message)
                return nil
            }
            port.onDisconnect { [weak self] cid in self?.importConnectionClosed(name, cid) }
            do {
                try port.schedule(in: loop, forMode: .common)
            } catch {
                logger.error("cannot serve the imported \(name): \(error)")
                port.invalidate()
                _ = try? names.release(name)
                return
            }
            imported[name] = Imported(port: port)
            shadowed.remove(name)
            let hosts = remote[name].map { $0.values.map(\.entry.host).sorted().joined(separator: ",") } ?? "-"
            logger.info("imported \(name)", metadata: ["from": "\(hosts)"])
        case .alreadyOwned(let owner):
            if shadowed.insert(name).inserted {
                logger.notice("not importing \(name): a local owner holds it (\(owner)); local names shadow remote ones")
            }
        case .queued:
            break
        }
    }

    /// The hosts exporting `name` now, for REGISTER's `remote=` (nil when
    /// this portd does not take it: an older one).
    private func remoteHosts(_ name: String) -> String? {
        guard portdTakesRemote else { return nil }
        let hosts = (remote[name] ?? [:]).keys.sorted()
        return hosts.isEmpty ? nil : hosts.joined(separator: ",")
    }

    func releaseImport(_ name: String, why: String) {
        guard let imp = imported.removeValue(forKey: name) else { return }
        for s in imp.sessions.values { endImportSession(s, why: why) }
        imp.port.invalidate()
        _ = try? names.release(name)
        logger.info("released the imported \(name): \(why)")
    }

    /// A record from a local client to an imported name.
    private func importedMessage(_ name: String, _ port: PCPort, _ message: PCPortMessage) {
        guard let cid = message.connectionID, imported[name] != nil else { return }
        let session: ImportSession
        if let s = imported[name]?.sessions[cid] {
            session = s
        } else {
            session = ImportSession(id: nextSession, name: name, connection: cid)
            nextSession += 1
            imported[name]?.sessions[cid] = session
            importSessionsByID[session.id] = session
        }
        let request = message.expectsReply
        let bytes: [UInt8]
        do {
            bytes = try BridgeRecord.encode(
                message, request: request, hasPassedPort: request ? message.passedReplyPort != nil : message.replyPort != nil,
                maxBytes: maxPayload - BridgeRecord.headerRoom)
        } catch {
            refused += 1
            refusalLog.log(
                "closing a connection to the imported \(name): \(error)",
                ["pid": "\(message.sender?.pid ?? 0)", "uid": "\(message.sender?.uid ?? 0)"], level: .warning)
            closeImportSession(session.id, why: error.text)
            return
        }
        let reply = request ? message.replyPort : nil
        if session.lastOrigin.isEmpty || message.sender != session.lastSender {
            session.lastSender = message.sender
            session.lastOrigin = originHeader(message.sender)
        }
        let origin = session.lastOrigin
        switch session.state {
        case .closed:
            return
        case .opening:
            // The first record opens the session; it stays first in
            // `waiting` (sent already) until the open is answered.
            if session.waiting.isEmpty {
                do {
                    try self.request(
                        "\(prefix).\(name)", .open(session: session.id),
                        headers: [
                            BridgeHeader.session: "open", BridgeHeader.peer: "\(prefix)._c.\(bridgeID).\(String(session.id, radix: 36))",
                            BridgeHeader.origin: origin,
                        ], payload: bytes, timeout: configuration.requestTimeout)
                    session.waiting.append(([], reply, origin))  // the first record, sent; its reply right kept
                    session.sentOrigin = origin
                    if reply == nil { session.unacknowledged += 1 }
                } catch {
                    closeImportSession(session.id, why: "cannot reach NATS: \(error)")
                }
            } else {
                session.waiting.append((bytes, reply, origin))
                if reply == nil { session.unacknowledged += 1 }
            }
        case .open(let subject):
            if reply == nil { session.unacknowledged += 1 }
            send(session, subject, bytes, reply, origin)
        }
        holdIfFull(session, port)
    }

    /// Sends one record on an open session (counted in the window already
    /// when one-way). A request waits for its reply without a deadline
    /// here: the sender's own timeout applies at the sender, and pings say
    /// whether the far end still lives. A one-way record is published
    /// without a reply subject: the exporter acknowledges them together
    /// (`Portd-Ack`). Portd-Origin goes only when it changed.
    private func send(_ session: ImportSession, _ subject: String, _ bytes: [UInt8], _ reply: SendRight?, _ origin: String) {
        let changed = origin != session.sentOrigin
        do {
            if let reply {
                try request(
                    subject, .record(session: session.id, reply: reply),
                    headers: changed ? [BridgeHeader.origin: origin] : [:], payload: bytes, timeout: nil)
            } else {
                if session.sentOneWay == session.acknowledgedOneWay { session.lastProgress = .now() }
                if changed {
                    try nats?.publish(subject, headers: [BridgeHeader.origin: origin], payload: bytes)
                } else {
                    try nats?.publish(subject, payload: bytes)
                }
                session.sentOneWay += 1
            }
            session.sentOrigin = origin
        } catch {
            closeImportSession(session.id, why: "cannot reach NATS: \(error)")
        }
    }

    /// The exporter delivered `count` one-way records of the session in all.
    func importAcknowledged(_ session: ImportSession, _ count: UInt64) {
        guard count > session.acknowledgedOneWay, count <= session.sentOneWay else { return }
        session.unacknowledged -= Int(count - session.acknowledgedOneWay)
        session.acknowledgedOneWay = count
        session.lastProgress = .now()
        session.lastHeard = .now()
        release(session)
    }

    /// Reads the connection again once the window has room.
    private func release(_ session: ImportSession) {
        if session.held && session.unacknowledged < configuration.window, let port = imported[session.name]?.port {
            session.held = false
            port.holdConnection(session.connection, false)
        }
    }

    /// Closes the sessions whose one-way records have seen no
    /// acknowledgement for RequestTimeout (the exporter or the way to it
    /// is gone without a word).
    func expireUnacknowledged() {
        let now = MonotonicInstant.now()
        let stale = importSessionsByID.values.filter {
            $0.sentOneWay > $0.acknowledgedOneWay && $0.lastProgress + configuration.requestTimeout <= now
        }
        for s in stale { closeImportSession(s.id, why: "no acknowledgement within \(configuration.requestTimeout)") }
    }

    private func holdIfFull(_ session: ImportSession, _ port: PCPort) {
        if !session.held && session.unacknowledged >= configuration.window {
            session.held = true
            port.holdConnection(session.connection, true)
        }
    }

    /// The answer to a session's open (which carried its first record).
    func importOpened(_ sid: UInt64, _ m: NatsMessage) {
        guard let session = importSession(sid) else { return }
        if m.noResponders || m.error != nil {
            closeImportSession(sid, why: m.noResponders ? "no host exports \(session.name) now" : "refused: \(m.error!)")
            return
        }
        guard let subject = m.session, subject.hasPrefix("\(prefix)._s.") else {
            closeImportSession(sid, why: "the exporting bridge gave no session")
            return
        }
        session.state = .open(subject: subject)
        session.lastHeard = .now()
        let first = session.waiting.removeFirst()
        answerLocal(session, first.reply, m)
        // The ones sent while opening, in order: already counted in the window.
        let rest = session.waiting
        session.waiting = []
        for w in rest {
            send(session, subject, w.bytes, w.reply, w.origin)
            if case .closed = session.state { return }
        }
    }

    /// The answer to one record of a session.
    func importAnswered(_ sid: UInt64, _ reply: SendRight?, _ m: NatsMessage) {
        guard let session = importSession(sid) else { return }
        session.lastHeard = .now()
        if m.noResponders || m.error != nil {
            closeImportSession(sid, why: m.noResponders ? "the exporting bridge is gone" : "refused: \(m.error!)")
            return
        }
        answerLocal(session, reply, m)
    }

    /// An acknowledgement moves the window; a reply goes to the local requester.
    private func answerLocal(_ session: ImportSession, _ reply: SendRight?, _ m: NatsMessage) {
        guard let reply else {
            session.unacknowledged -= 1
            release(session)
            return
        }
        do {
            let (message, _) = try BridgeRecord.decode(m.data, maxPayload: maxPayload)
            _ = try reply.send(message, before: .now())
        } catch {
            logger.warning("a reply for \(session.name) could not be delivered: \(error)")
            reply.invalidate()
        }
    }

    /// A message on P._c.A.SID: the exporter closed the session, or pings it.
    func importControlMessage(_ m: NatsMessage) {
        guard let dot = m.subject.lastIndex(of: "."), let sid = UInt64(m.subject[m.subject.index(after: dot)...], radix: 36)
        else { return }
        let session = importSession(sid)
        if let count = m.ack {
            if let session { importAcknowledged(session, count) }
            return
        }
        switch m.session {
        case "closed":
            if session != nil { closeImportSession(sid, why: "the far owner went away") }
        case "ping":
            if session != nil {
                if let reply = m.reply { try? nats?.publish(reply) }
            } else {
                answerError(m.reply, BridgeRefusal(503, "no such session here"))
            }
        default:
            break
        }
    }

    func importSession(_ sid: UInt64) -> ImportSession? { importSessionsByID[sid] }

    /// Closes the local connection of session `sid` (its holders see the
    /// port invalidated) and tells the exporter.
    func closeImportSession(_ sid: UInt64, why: String) {
        guard let session = importSession(sid) else { return }
        imported[session.name]?.sessions.removeValue(forKey: session.connection)
        endImportSession(session, why: why)
        imported[session.name]?.port.closeConnection(session.connection)
    }

    private func endImportSession(_ session: ImportSession, why: String) {
        importSessionsByID.removeValue(forKey: session.id)
        if case .open(let subject) = session.state {
            try? nats?.publish(subject, headers: [BridgeHeader.session: "close"])
        }
        session.state = .closed
        var lost = 0
        for token in session.tokens {
            guard let entry = pending.removeValue(forKey: token) else { continue }
            switch entry.what {
            case .record(_, let reply?): reply.invalidate()
            case .record(_, nil), .open: lost += 1
            case .ping: break
            }
        }
        session.tokens = []
        lost += Int(session.sentOneWay - session.acknowledgedOneWay)
        session.acknowledgedOneWay = session.sentOneWay
        lostInFlight += lost
        let waiting = max(session.waiting.count - 1, 0)
        if lost + waiting > 0 {
            logger.warning(
                "session \(session.id) to \(session.name) closed with messages in flight: \(why)",
                metadata: ["in-flight": "\(lost + waiting)"])
        } else {
            logger.debug("session \(session.id) to \(session.name) closed: \(why)")
        }
        lostInFlight += waiting
        session.waiting = []
    }

    /// A local client closed its connection to an imported name.
    private func importConnectionClosed(_ name: String, _ cid: UInt64) {
        guard let session = imported[name]?.sessions.removeValue(forKey: cid) else { return }
        endImportSession(session, why: "the local client closed")
    }
}
