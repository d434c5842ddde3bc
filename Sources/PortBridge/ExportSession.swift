// ExportSession: the exporting bridge's end of one session — a connection
// to the local owner of an exported name (LOOKUP'ed when the session
// opened) and the records that came for it over NATS, delivered in the
// order they came, one at a time: a one-way record is acknowledged once
// the local send returned "sent" (the importer's window moves on), a
// request is answered with the owner's reply. The local send never waits
// on the loop's thread: a full queue is tried again shortly (the record
// stays first in line, so order holds).
//
// A call without a session (a plain NATS request from any client) is the
// same delivery on a connection used once.
//
// All of it runs on the bridge's loop thread.

import Logging
import PortCore

final class ExportSession {
    let id: UInt64
    let name: String
    let right: SendRight
    /// The importing bridge's subject for this session (P._c.A.SID); nil
    /// for a one-shot call.
    let peer: String?
    var lastHeard = MonotonicInstant.now()
    var pinging = false
    /// Records waiting their turn: the message, and the NATS reply subject
    /// to answer.
    var queue: [(message: PCPortMessage, request: Bool, reply: String?, sessionHeader: String?, origin: String)] = []
    /// The origin the owner was last told of on this connection (an origin
    /// notice goes before a record whose origin differs).
    var toldOrigin: String?
    var busy = false
    var retryDelay: Duration = .milliseconds(1)
    /// One-way records of the session delivered in all, and how many of
    /// them the importer was told of (`Portd-Ack`).
    var delivered: UInt64 = 0
    var acknowledged: UInt64 = 0
    /// The origin the importer last gave (it sends it when it changes).
    var origin: String

    init(id: UInt64, name: String, right: SendRight, peer: String?, origin: String) {
        self.origin = origin
        self.id = id
        self.name = name
        self.right = right
        self.peer = peer
    }
}

extension Bridge {
    /// A message on P.NAME: a session's first record, or a one-shot call.
    func exportCall(_ name: String, _ m: NatsMessage) {
        guard exported[name] != nil else {
            answerError(m.reply, BridgeRefusal(404, "\(name) is not exported here"))
            return
        }
        let decoded: (message: PCPortMessage, request: Bool)
        do {
            decoded = try BridgeRecord.decode(m.data, maxPayload: maxPayload)
        } catch {
            refused += 1
            logRefusal(name, m, error)
            answerError(m.reply, error)
            return
        }
        let right: SendRight
        do {
            guard case .found(let r, _) = try names.resolve(name) else {
                answerError(m.reply, BridgeRefusal(503, "\(name) has no owner here any more"))
                return
            }
            right = r
        } catch {
            answerError(m.reply, BridgeRefusal(503, "cannot look \(name) up here: \(error)"))
            return
        }
        let sid = nextSession
        nextSession += 1
        let opening = m.session == "open"
        let session = ExportSession(id: sid, name: name, right: right, peer: opening ? m.peer : nil, origin: origin(of: m))
        exportSessions[sid] = session
        do {
            try right.onInvalidation(in: loop, forMode: .common) { [weak self] in
                self?.closeExportSession(sid, notifyPeer: true, why: "the owner of \(name) went away")
            }
        } catch {
            closeExportSession(sid, notifyPeer: false, why: "cannot watch the owner: \(error)")
            answerError(m.reply, BridgeRefusal(503, "cannot watch the owner of \(name)"))
            return
        }
        let header = opening ? "\(prefix)._s.\(bridgeID).\(String(sid, radix: 36))" : nil
        logger.trace("export session \(sid) of \(name) opened", metadata: ["origin": "\(m.origin ?? "-")"])
        session.queue.append((decoded.message, decoded.request, m.reply, header, origin(of: m)))
        runExportQueue(session)
    }

    /// A message on P._s.B.SID: a record of an open session, or its control.
    func exportSessionMessage(_ m: NatsMessage) {
        guard let dot = m.subject.lastIndex(of: "."), let sid = UInt64(m.subject[m.subject.index(after: dot)...], radix: 36),
            let session = exportSessions[sid]
        else {
            answerError(m.reply, BridgeRefusal(503, "no such session here (it was closed)"))
            return
        }
        session.lastHeard = .now()
        switch m.session {
        case "close":
            closeExportSession(sid, notifyPeer: false, why: nil)
            return
        case "ping":
            if let reply = m.reply { try? nats?.publish(reply) }
            return
        default: break
        }
        do {
            let decoded = try BridgeRecord.decode(m.data, maxPayload: maxPayload)
            if m.origin != nil { session.origin = origin(of: m) }
            session.queue.append((decoded.message, decoded.request, m.reply, nil, session.origin))
            runExportQueue(session)
        } catch {
            refused += 1
            logRefusal(session.name, m, error)
            answerError(m.reply, error)
            closeExportSession(sid, notifyPeer: true, why: "a malformed record")
        }
    }

    /// Delivers the session's next record unless one is on its way.
    func runExportQueue(_ session: ExportSession) {
        // Whatever stops the run (a request on its way, a full queue), what
        // it delivered is acknowledged.
        defer {
            if session.delivered > session.acknowledged {
                if draining { acknowledgementsDue.insert(session.id) } else { acknowledge(session) }
            }
        }
        while !session.busy, let next = session.queue.first {
            if session.toldOrigin != next.origin {
                // The owner hears where what follows comes from (MessageOrigin).
                let notice = MessageOrigin(text: next.origin)?.notice ?? Self.unknownOrigin.notice
                guard sendNow(session, notice) else { return }
                session.toldOrigin = next.origin
            }
            var headers: KeyValuePairs<String, String> = [:]
            if let h = next.sessionHeader { headers = [BridgeHeader.session: h] }
            if next.request {
                session.busy = true
                let sid = session.id
                let outcome: RequestResult?
                do {
                    outcome = try session.right.request(
                        next.message, sendTimeout: .zero, receiveTimeout: .seconds(600), on: loop, mode: .common
                    ) { [weak self] result in
                        self?.exportReplied(sid, result)
                    }
                } catch {
                    exportReplied(sid, .failure(error))
                    return
                }
                switch outcome {
                case nil: return  // the reply comes to exportReplied
                case .sendTimedOut?:
                    session.busy = false
                    retryLater(session)
                    return
                case let done?:
                    exportReplied(sid, .success(done))
                }
            } else {
                guard sendNow(session, next.message) else { return }
                session.queue.removeFirst()
                session.retryDelay = .milliseconds(1)
                if let reply = next.reply {
                    try? nats?.publish(reply, headers: headers)
                } else {
                    session.delivered += 1  // acknowledged with the others (`acknowledge`)
                }
                if session.peer == nil && session.queue.isEmpty { closeExportSession(session.id, notifyPeer: false, why: nil) }
            }
        }
    }

    /// Tells the importer how many one-way records of the session were
    /// delivered in all: one acknowledgement for every record a read event
    /// brought, not one a record.
    func acknowledge(_ session: ExportSession) {
        guard session.delivered > session.acknowledged, let peer = session.peer else { return }
        session.acknowledged = session.delivered
        try? nats?.publish(peer, headers: [BridgeHeader.ack: String(session.delivered)])
    }

    /// After a read event: the acknowledgements its records made due.
    func flushAcknowledgements() {
        draining = false
        guard !acknowledgementsDue.isEmpty else { return }
        for sid in acknowledgementsDue {
            if let s = exportSessions[sid] { acknowledge(s) }
        }
        acknowledgementsDue.removeAll(keepingCapacity: true)
    }

    /// Sends `message` to the session's owner without waiting: true once
    /// it is in the owner's queue. When the queue is full the session tries
    /// again shortly (`retryLater`), when the owner is gone or the send
    /// failed the session ends: false either way.
    private func sendNow(_ session: ExportSession, _ message: PCPortMessage) -> Bool {
        let result: SendResult
        do {
            result = try session.right.send(message, before: .now())
        } catch {
            finishExport(session, error: BridgeRefusal(503, "the local send failed: \(error)"))
            return false
        }
        switch result {
        case .sent: return true
        case .timedOut:
            retryLater(session)
            return false
        case .receiverGone:
            finishExport(session, error: BridgeRefusal(503, "the owner of \(session.name) went away"))
            return false
        }
    }

    /// The owner's queue was full: the first record is tried again after a
    /// short, growing pause (at most 50 ms), in order.
    private func retryLater(_ session: ExportSession) {
        let sid = session.id
        let delay = session.retryDelay
        session.retryDelay = min(delay * 2, .milliseconds(50))
        session.busy = true
        loop.perform(after: delay, inModes: [.common]) { [weak self] in
            guard let self, let s = self.exportSessions[sid] else { return }
            s.busy = false
            self.runExportQueue(s)
        }
    }

    private func exportReplied(_ sid: UInt64, _ result: Result<RequestResult, PortError>) {
        logger.trace("export session \(sid): the owner answered: \(result)")
        guard let session = exportSessions[sid], let next = session.queue.first else { return }
        session.busy = false
        session.queue.removeFirst()
        var headers: [(String, String)] = []
        if let h = next.sessionHeader { headers.append((BridgeHeader.session, h)) }
        switch result {
        case .success(.reply(let reply)):
            do {
                let bytes = try BridgeRecord.encode(reply, request: false, hasPassedPort: false, maxBytes: maxPayload - BridgeRecord.headerRoom)
                if let r = next.reply { try? publish(r, headers, bytes) }
            } catch {
                answerError(next.reply, error)
            }
        case .success(.receiveTimedOut):
            answerError(next.reply, BridgeRefusal(504, "the owner of \(session.name) did not answer"))
        case .success(.sendTimedOut):
            answerError(next.reply, BridgeRefusal(504, "the owner of \(session.name) did not take the request"))
        case .success(.sent):
            // Not asked for (the request waits for its reply): an empty answer.
            if let r = next.reply { try? publish(r, headers, []) }
        case .success(.invalidPort), .failure:
            finishExport(session, error: BridgeRefusal(503, "the owner of \(session.name) went away"))
            return
        }
        if session.peer == nil && session.queue.isEmpty {
            closeExportSession(sid, notifyPeer: false, why: nil)
        } else {
            runExportQueue(session)
        }
    }

    private func publish(_ subject: String, _ headers: [(String, String)], _ payload: [UInt8]) throws(NatsError) {
        guard let nats else { return }
        switch headers.count {
        case 0: try nats.publish(subject, payload: payload)
        default: try nats.publish(subject, headers: [BridgeHeader.session: headers[0].1], payload: payload)
        }
    }

    /// Fails what is queued with `error` and closes the session.
    private func finishExport(_ session: ExportSession, error: BridgeRefusal) {
        for q in session.queue { answerError(q.reply, error) }
        session.queue = []
        closeExportSession(session.id, notifyPeer: true, why: error.text)
    }

    func closeExportSession(_ sid: UInt64, notifyPeer: Bool, why: String?) {
        guard let session = exportSessions.removeValue(forKey: sid) else { return }
        if !session.queue.isEmpty {
            lostInFlight += session.queue.count
            for q in session.queue { answerError(q.reply, BridgeRefusal(503, why ?? "the session closed")) }
        }
        session.right.invalidate()
        if notifyPeer, let peer = session.peer { try? nats?.publish(peer, headers: [BridgeHeader.session: "closed"]) }
        if let why { logger.debug("export session \(sid) of \(session.name) closed: \(why)") }
    }

    /// A NATS message's origin as the sending bridge asserted it, checked
    /// and written anew (never relayed as it came); a plain NATS client's
    /// message, which asserts nothing, is from `unknownOrigin`.
    func origin(of m: NatsMessage) -> String {
        m.origin.flatMap(MessageOrigin.init(text:))?.text ?? Self.unknownOrigin.text
    }

    static let unknownOrigin = MessageOrigin(host: "nats-client")

    func logRefusal(_ name: String, _ m: NatsMessage, _ refusal: BridgeRefusal) {
        refusalLog.log("refused a message for \(name): \(refusal)", ["origin": "\(m.origin ?? "-")"], level: .warning)
    }
}
