// PortMonitorSubscription: the monitor's side of port monitoring
// (PortMonitor): an anonymous port of the monitor's own, whose right goes
// to the monitored port in SUBSCRIBE; the copies arrive there and are
// handed to the monitor's handler on its loop's thread.
//
// Invariants: the monitor keeps no right to its own port once SUBSCRIBE is
// answered, so the port's only connection is the one the monitored port
// holds, and its hang-up (the owner went, turned monitoring off or
// dropped the monitor) ends the subscription: the handler gets `.ended`
// once, and nothing after it. A copy that is not well formed is reported
// (`.malformed`) and skipped. Nothing the copies say is trusted for
// identity: the sender they name is what the owner's kernel reported.

import PortRunLoop
import PortSystem

/// A running subscription to the messages a port delivers; cancel it to stop.
public final class PortMonitorSubscription: Sendable {
    /// What a subscription reports to its handler.
    public enum Event: Sendable {
        /// A copy of a message the port delivered.
        case message(MonitoredMessage)
        /// Copies were dropped because this monitor's queue was full; it
        /// has room again (the count of the copies since the last one it got).
        case missed(UInt64)
        /// A copy that could not be parsed (skipped).
        case malformed
        /// The subscription ended: the monitored port is gone, stopped
        /// allowing monitoring, or dropped this monitor. Reported once.
        case ended
    }

    /// How a SUBSCRIBE ended.
    public enum Outcome: Sendable {
        /// Subscribed; the handler gets the copies from now on.
        case monitoring(PortMonitorSubscription)
        /// The port answered no: its word (`PortMonitor.Answer`, or nil for an
        /// answer that is not one, as from a port that knows nothing of
        /// monitoring) and its reason.
        case declined(PortMonitor.Answer?, String)
        /// The port went away before it answered.
        case portGone
        /// No answer within the timeout.
        case timedOut
    }

    private let port: PCPort

    private init(port: PCPort) { self.port = port }

    /// Stops the subscription: the monitored port drops this monitor when
    /// it next copies a message. Idempotent; safe from any thread. (Letting
    /// go of this object does not stop it: the loop keeps the monitor's
    /// port, as it keeps a `NameWatch`'s.)
    public func cancel() { port.invalidate() }

    /// Whether the subscription still runs.
    public var isActive: Bool { port.isValid }

    /// Asks the port `right` leads to for a copy of every message it
    /// delivers from now on. `handler` runs on `loop`'s thread in `mode`,
    /// once per copy, in the port's order; `timeout` bounds each wait of
    /// SUBSCRIBE (for room, for the answer): a zero (or negative) one
    /// leaves no time for the answer, `.timedOut` at once.
    public static func subscribe(
        to right: SendRight, loop: PCRunLoop, mode: PCRunLoop.Mode = .default, timeout: Duration = .seconds(5),
        handler: @escaping @Sendable (Event) -> Void
    ) throws(PortError) -> Outcome {
        // Not sent: a request with no time to wait is a one-way message,
        // which the port would hand its handler instead of answering.
        guard timeout > .zero else { return .timedOut }
        let port = PCPort()
        port.setHandler { [weak port] message in
            guard port?.isValid == true else { return nil }
            if let copy = MonitoredMessage(copy: message) {
                handler(.message(copy))
            } else if let missed = PortMonitor.missedCount(message) {
                handler(.missed(missed))
            } else {
                handler(.malformed)
            }
            return nil
        }
        port.onDisconnect { [weak port] _ in
            guard let port, port.isValid else { return }
            port.invalidate()
            handler(.ended)
        }
        let mine: SendRight
        do {
            try port.schedule(in: loop, forMode: mode)
            mine = try port.makeSendRight()
        } catch {
            port.invalidate()
            throw error
        }
        // Ours closes once the request is answered: the monitored port's
        // copy is then the only right to `port`.
        defer { mine.invalidate() }
        let subscribe = PCPortMessage(msgid: PortMonitor.subscribeMessageID, replyPort: mine)
        let result: RequestResult
        do {
            result = try right.request(subscribe, sendTimeout: timeout, receiveTimeout: timeout)
        } catch {
            port.invalidate()
            throw error
        }
        let outcome: Outcome
        switch result {
        case .reply(let reply):
            let words = reply.components.compactMap(\.string)
            let answer = words.first.flatMap(PortMonitor.Answer.init(rawValue:))
            if reply.msgid == PortMonitor.subscribeMessageID && answer == .monitoring {
                return .monitoring(PortMonitorSubscription(port: port))
            }
            let reason = words.dropFirst().first ?? (words.isEmpty ? "the port does not support monitoring" : words[0])
            outcome = .declined(answer, reason)
        case .sendTimedOut, .receiveTimedOut, .sent: outcome = .timedOut  // `.sent`: not with a timeout (above)
        case .invalidPort: outcome = .portGone
        }
        port.invalidate()
        return outcome
    }
}
