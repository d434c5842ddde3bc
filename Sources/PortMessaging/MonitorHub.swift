// MonitorHub: the monitors of one monitorable port (PCPort.allowsMonitoring):
// who subscribed, and the copy of every message the port delivers to its
// handler and of the reply the port sends for a request when its handler
// returns (PortMonitor describes the exchange and the privacy rules).
//
// Invariants: a subscription is accepted only when the SUBSCRIBE record's
// kernel credentials name the uid of the owning process or root; at most
// `PortMonitor.maxMonitors` monitors (hung-up ones are pruned first). The
// owner never waits for a monitor: each copy is sent with a deadline of now,
// and when a monitor's queue is full the copy is dropped and counted. The
// monitor is told the count as soon as it has room again: a source in the
// port's loops waits for its socket to become writable and then sends
// MISSED (or the next copy that gets through carries the count first,
// whichever comes first); so a monitor learns what it missed even when the
// port receives nothing more. A monitor that went away is dropped on the
// next copy. Dropping the hub (monitoring
// turned off, the port invalidated) closes every monitor's right, so the
// monitors see their subscription end.
//
// A copy's sequence is the port's count of delivered messages since the
// monitor subscribed: the hub counts deliveries (`delivered`) and each
// monitor keeps the count it subscribed at (`base`), so a reply names the
// sequence of its request for every monitor that saw that request.
//
// Threads: `lock` protects `monitors` and `delivered`; copies, subscriptions and catch-up
// sources run on the port's loop thread, `closeAll` from any thread. A send
// under the lock never blocks (deadline now). Lock order: this lock, then
// the port's or a loop's, never the reverse (the port calls the hub with
// its own lock released).

import PortRunLoop
import PortSystem

final class MonitorHub: @unchecked Sendable {
    // Safe to share: `ownerUID` and `port` are immutable (`port` is weak,
    // and PCPort is Sendable); `monitors` is accessed with `lock` held.
    private struct Monitor {
        let right: SendRight
        /// `delivered` when it subscribed.
        let base: UInt64
        var missed: UInt64 = 0
        /// Waits for room to send MISSED, while `missed` > 0.
        var catchUp: PortSource?
        /// The origin (MessageOrigin) the monitor's port was last told of:
        /// a copy of a relayed message goes after an origin notice when
        /// its origin differs, so the monitor's copy carries it too.
        var toldOrigin: String?

        /// Lets go of the monitor: its subscription ends.
        func drop() {
            catchUp?.invalidate()
            right.invalidate()
        }
    }

    private let lock = Lock()
    private var monitors: [Monitor] = []
    /// Messages copied since the hub was made.
    private var delivered: UInt64 = 0
    /// The uid of the process that owns the port (real uid, what
    /// SCM_CREDENTIALS names by default).
    private let ownerUID = CurrentProcess.userID
    /// The port, for the loops its catch-up sources go in.
    private weak let port: PCPort?

    init(port: PCPort) { self.port = port }

    /// The answer to a SUBSCRIBE (`request`, as the port received it).
    func subscribe(_ request: PCPortMessage) -> PCPortMessage {
        guard let sender = request.sender else {
            return PortMonitor.reply(.refused, "the request carried no credentials")
        }
        guard sender.uid == ownerUID || sender.uid == 0 else {
            return PortMonitor.reply(
                .refused, "only uid \(ownerUID) (the owner's) or root may monitor this port, not uid \(sender.uid)")
        }
        guard let right = request.passedReplyPort else {
            return PortMonitor.reply(.badRequest, "SUBSCRIBE carries the monitor's port as its reply port")
        }
        return lock.withLock {
            monitors.removeAll { m in
                guard !m.right.isValid || Self.hungUp(m.right) else { return false }
                m.drop()
                return true
            }
            guard monitors.count < PortMonitor.maxMonitors else {
                return PortMonitor.reply(.limit, "this port has \(PortMonitor.maxMonitors) monitors already")
            }
            monitors.append(Monitor(right: right, base: delivered))
            return PortMonitor.reply(.monitoring)
        }
    }

    /// Copies a message the port is delivering to every monitor, never
    /// waiting. `request`: it came as a request. Returns the delivery's
    /// number, for `copyReply`.
    func copy(_ message: PCPortMessage, request: Bool) -> UInt64 {
        lock.withLock {
            delivered += 1
            let delivery = delivered
            send(message, request: request) { delivery - $0.base }
            return delivery
        }
    }

    /// Copies the reply the port sends to the request `delivery` (what
    /// `copy` returned) to every monitor that got that request's copy.
    func copyReply(_ reply: PCPortMessage, answering delivery: UInt64) {
        lock.withLock {
            send(reply, reply: true) { delivery > $0.base ? delivery - $0.base : nil }
        }
    }

    /// Lock held: sends `message`'s copy to each monitor `sequence` gives a
    /// number for, never waiting; counts a copy that does not fit, drops a
    /// monitor that went away.
    private func send(
        _ message: PCPortMessage, request: Bool = false, reply: Bool = false, sequence: (Monitor) -> UInt64?
    ) {
        guard !monitors.isEmpty else { return }
        let body = PortMonitor.copyBody(of: message)
        // A request's replyPort is the port's own one-shot reply right,
        // not a descriptor the sender passed.
        var descriptors = message.replyPort != nil && !request ? 1 : 0
        if message.passedReplyPort != nil { descriptors += 1 }
        for c in message.components {
            switch c {
            case .port, .sharedMemory: descriptors += 1
            case .data: break
            }
        }
        let now = WallClock.unixMilliseconds()
        var gone: [Int] = []
        for i in monitors.indices {
            guard let number = sequence(monitors[i]) else { continue }
            let copy = PortMonitor.copy(
                of: message, body: body, request: request, reply: reply, descriptors: descriptors,
                sequence: number, missed: monitors[i].missed, time: now)
            let origin = message.origin?.text
            if origin != monitors[i].toldOrigin {
                // A notice that is not an origin ("-") clears the monitor's.
                let notice = message.origin?.notice ?? PCPortMessage(msgid: MessageOrigin.noticeMessageID, strings: ["-"])
                if case .sent? = try? monitors[i].right.send(notice, before: .now()) {
                    monitors[i].toldOrigin = origin
                }
            }
            switch try? monitors[i].right.send(copy, before: .now()) {
            case .sent:
                monitors[i].missed = 0
                monitors[i].catchUp?.invalidate()
                monitors[i].catchUp = nil
            case .timedOut:
                monitors[i].missed += 1
                if monitors[i].catchUp == nil { monitors[i].catchUp = waitForRoom(monitors[i].right) }
            case .receiverGone, nil:
                gone.append(i)
            }
        }
        for i in gone.reversed() { monitors.remove(at: i).drop() }
    }

    /// Closes every monitor's right: their subscriptions end.
    func closeAll() {
        let all = lock.withLock { () -> [Monitor] in
            defer { monitors.removeAll() }
            return monitors
        }
        for m in all { m.drop() }
    }

    /// Lock held: a source, in every loop and mode the port is in, that
    /// sends MISSED once `right`'s socket is writable again (the monitor
    /// read its queue). Nil when it cannot watch (the copy after then says it).
    private func waitForRoom(_ right: SendRight) -> PortSource? {
        guard let connection = right.currentConnection(), let targets = port?.loopTargets, !targets.isEmpty else {
            return nil
        }
        let id = ObjectIdentifier(right)
        let source = PortSource(sharing: connection, events: .writable) { [weak self] _ in self?.catchUp(id) }
        for (loop, mode) in targets {
            do { try loop.add(source, forMode: mode) } catch {
                source.invalidate()
                return nil
            }
        }
        return source
    }

    /// The monitor whose right is `id` has room: tell it what it missed.
    private func catchUp(_ id: ObjectIdentifier) {
        lock.withLock {
            guard let i = monitors.firstIndex(where: { ObjectIdentifier($0.right) == id }) else { return }
            let notice = PortMonitor.missedNotice(monitors[i].missed, time: WallClock.unixMilliseconds())
            switch monitors[i].missed == 0 ? .sent : try? monitors[i].right.send(notice, before: .now()) {
            case .sent:
                monitors[i].missed = 0
                monitors[i].catchUp?.invalidate()
                monitors[i].catchUp = nil
            case .timedOut:
                break  // reported again while there is room
            case .receiverGone, nil:
                monitors.remove(at: i).drop()
            }
        }
    }

    /// Whether the monitor's end of `right` hung up (it went away).
    private static func hungUp(_ right: SendRight) -> Bool {
        let ready = try? right.withDescriptor { (fd) throws(SystemCallError) in
            try Poll.wait(fd, for: .readHangUp, timeout: .zero)
        }
        guard let ready else { return true }
        return !ready.isDisjoint(with: [.hangUp, .error, .readHangUp])
    }
}

/// A message whose copy the monitors got (`MonitorHub.copy`): the copy of
/// the request's reply names it.
struct MonitoredDelivery {
    let hub: MonitorHub
    let delivery: UInt64
}
