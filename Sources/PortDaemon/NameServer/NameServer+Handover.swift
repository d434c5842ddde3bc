// NameServer+Handover: a name whose owner left goes to the next owner in
// its queue, who is told with NAME_ACQUIRED and a new listening socket
// (socket, bind, listen, a send, and an unlink when the send fails). A
// queue whose owners cannot be reached (their notification port's other
// end closed, or full) is walked owner by owner, so one release could cost
// thousands of those in one pass. Here each pass hands down at most
// `handoversPerPass` names; the rest wait in lanes, one per uid of the
// queued owner to be told, served in turn (a custom source that signals
// itself while work is left, as the fan-out's), and each hand-over is
// charged to that uid's share of the pass (`charge`). A queued owner whose
// notification port's receiver is already gone is passed over with one
// poll(2), before any socket is made.
//
// Invariants:
//   - a name waiting in a lane has an owner without a socket file (the
//     promoted queued owner, its `ticket` noted): LOOKUP answers not-found
//     ("being handed to its next owner") until its turn comes;
//   - an entry whose owner changed meanwhile (released, its client gone,
//     replaced) is dropped in its turn at the cost of a lookup;
//   - one uid's lane of thousands holds up another uid's hand-over by at
//     most one turn of the lanes.

import Logging
import PortCore

extension NameServer {
    /// Names waiting for their next owner to be told, by that owner's uid.
    struct Handovers {
        private struct Lane {
            var names: [(name: PortName, ticket: UInt64)] = []
            var head = 0
        }

        private var lanes: [UInt32: Lane] = [:]
        /// The uids with a lane, in the order they are served.
        private var order: [UInt32] = []
        private var turn = 0

        var isEmpty: Bool { order.isEmpty }

        /// How many names wait (for tests and STATUS's summary).
        var count: Int { lanes.values.reduce(0) { $0 + $1.names.count - $1.head } }

        mutating func add(_ name: PortName, ticket: UInt64, uid: UInt32) {
            if lanes[uid] == nil { order.append(uid) }
            lanes[uid, default: Lane()].names.append((name, ticket))
        }

        /// The next name, taking the lanes in turn.
        mutating func next() -> (name: PortName, ticket: UInt64)? {
            guard !order.isEmpty else { return nil }
            if turn >= order.count { turn = 0 }
            let uid = order[turn]
            var lane = lanes[uid]!
            let taken = lane.names[lane.head]
            lane.head += 1
            if lane.head == lane.names.count {
                lanes[uid] = nil
                order.remove(at: turn)
            } else {
                if lane.head >= 1024, lane.head * 2 >= lane.names.count {
                    lane.names.removeFirst(lane.head)
                    lane.head = 0
                }
                lanes[uid] = lane
                turn += 1
            }
            return taken
        }
    }

    /// The most names handed to their next queued owner in one pass of
    /// the loop (each a listening socket made and a NAME_ACQUIRED sent).
    static let handoversPerPass = 16

    /// Starts the hand-over's source on the loop (`start`).
    func startHandovers() {
        let source = RunLoopSource { [unowned self] _ in self.handOverQueued() }
        loop.add(source, forMode: mode)
        handoverSource = source
    }

    /// Whether this pass may hand a name over now; counts it when it may.
    func mayHandOverNow() -> Bool {
        guard handoversThisPass < Self.handoversPerPass else { return false }
        handoversThisPass += 1
        countedInThisPass()
        return true
    }

    /// `name`'s new owner (promoted from its queue, registration `ticket`,
    /// of `uid`) is told in a later pass.
    func queueHandover(_ name: PortName, ticket: UInt64, uid: UInt32) {
        handovers.add(name, ticket: ticket, uid: uid)
        handoverSource?.signal()
    }

    /// One pass's share of the waiting hand-overs; signals itself again
    /// while work is left.
    func handOverQueued() {
        while !handovers.isEmpty, mayHandOverNow() {
            guard let (name, ticket) = handovers.next() else { break }
            handOverNow(name, ticket: ticket)
        }
        if !handovers.isEmpty { handoverSource?.signal() }
    }

    /// Every waiting hand-over now (NameServerHarness: a name server whose
    /// loop does not run).
    func flushHandovers() {
        while let (name, ticket) = handovers.next() { handOverNow(name, ticket: ticket) }
    }

    /// Tells `name`'s owner, if it is still the registration `ticket` and
    /// has no socket yet; one that cannot be reached loses the name to the
    /// next in the queue (`apply`).
    private func handOverNow(_ name: PortName, ticket: UInt64) {
        guard let owner = registry.owner(of: name), owner.ticket == ticket, owner.handle.socket == nil else { return }
        charge(1, to: owner.credentials.uid)
        if let file = handOver(name, to: owner) {
            registry.updateOwner(of: name, ticket: ticket) { $0.socket = file }
        } else if case .released(let next) = registry.release(
            name, client: owner.client, now: WallClock.unixMilliseconds())
        {
            apply(next, requesterSocket: nil)
        }
    }
}
