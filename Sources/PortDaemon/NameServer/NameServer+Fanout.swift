// NameServer+Fanout: what one owner change makes portd send to many
// clients, NAME_OWNER_CHANGED to each watcher and the answers of the
// lookups that waited for the name, is queued, not sent in the pass that
// made the change. Each pass of the loop sends at most `fanoutPerPass` of
// the queue (a custom source, signalled while work is left, performs once
// a pass: PCRunLoop's step 4), and in between the loop serves every ready
// connection its share, as the control port's fair service does for
// records; so a change with thousands of watchers or waiting lookups holds
// up nobody's request for the length of its fan-out (portd(8): no client
// can delay another). Before, with 8,000 watches, each change kept every
// other client waiting about 95 ms.
//
// Invariants:
//   - one FIFO queue: a watcher is told of the changes in the order they
//     happened, and WATCH_OVERFLOW comes after every change it was sent;
//   - queuing a change costs O(1) whatever its watchers: it holds the
//     registry's arrays of watch ids as they were (copy on write), never
//     a port, and each watch is looked up, checked against the policy and
//     told when its turn comes; a watch that ended by then is skipped;
//   - a queued answer holds only its client's id (the answers hang on
//     `Fanout.answers`, dropped when the client goes, so its reply rights
//     close at once); the lookups of a client whose answers are queued
//     still count against PendingLookupsPerClient= until they are sent;
//   - watches are paid by the watcher: the events queued count against
//     the uid of each watch that receives them (`Fanout.pending`, taken
//     from the registry's counts of watches by uid, O(uids) per change),
//     never against the uid that made the change, which is never refused
//     for them; a watch of a uid with more than `fanoutPerUID` events
//     queued falls behind when its turn comes, as a watcher whose queue is
//     full does (WATCH_OVERFLOW, then the watch ends), so the queue holds
//     at most about that many events per uid (root and portd's own uid
//     are not held to it);
//   - an answer names the name's owner when it is sent, and its port is a
//     connection to that owner's socket; a name that lost its owner before
//     the answer's turn makes the lookup wait again, until its deadline;
//   - a lookup whose deadline passed is queued like an answered one, and
//     answered `timeout` in its turn (unless the name has an owner by then);
//   - no answer is dropped for a full queue: `sendAnswer` keeps it until
//     its client has room.

import Logging
import PortCore

extension NameServer {
    /// What the fan-out has still to send, in order.
    struct Fanout {
        /// One change and the watchers still to be told of it.
        struct Telling {
            let name: PortName
            let reported: NameOwnerChange
            let watchers: Registry.WatcherIDs
            /// The watches by uid: what it counts against each uid until
            /// its last watch was taken.
            let watcherUIDs: Registry.WatcherUIDs
            /// Where the telling stands in `watchers`.
            var position = (0, 0)
        }

        enum Item {
            case tell(Telling)
            /// The oldest queued answer of the client (`answers`).
            case answer(ClientID)
        }

        private var items: [Item] = []
        private var head = 0
        /// The answered lookups of each client whose answers are queued,
        /// oldest first: their reply rights.
        private var answers: [ClientID: [Registry.PendingLookup]] = [:]
        /// Per uid, the NAME_OWNER_CHANGED queued for its watches (a telling
        /// counts in full until its last watch was taken).
        private(set) var pending: [UInt32: Int] = [:]

        var isEmpty: Bool { head == items.count }

        /// The answers `client` has queued.
        func answersQueued(for client: ClientID) -> Int { answers[client]?.count ?? 0 }

        mutating func tell(_ change: OwnerChange) {
            change.watcherUIDs.forEach { uid, n in pending[uid, default: 0] += n }
            items.append(
                .tell(
                    Telling(
                        name: change.name, reported: change.reported, watchers: change.watchers,
                        watcherUIDs: change.watcherUIDs)))
        }

        /// A telling's last watch was taken: its events no longer count.
        private mutating func told(_ telling: Telling) {
            telling.watcherUIDs.forEach { uid, n in
                let left = pending[uid, default: n] - n
                pending[uid] = left > 0 ? left : nil
            }
        }

        mutating func answer(_ lookup: Registry.PendingLookup) {
            answers[lookup.client, default: []].append(lookup)
            items.append(.answer(lookup.client))
        }

        /// The next watch to tell, and what of; the telling stays first
        /// until its last watch was taken.
        mutating func nextWatch() -> (WatchID, Telling)? {
            guard head < items.count, case .tell(var telling) = items[head] else { return nil }
            guard let (id, position) = telling.watchers.next(after: telling.position) else {
                told(telling)
                popFirst()
                return nil
            }
            telling.position = position
            if telling.watchers.next(after: position) == nil {
                told(telling)
                popFirst()
            } else {
                items[head] = .tell(telling)
            }
            return (id, telling)
        }

        /// Whether the first item is a telling.
        var firstIsTelling: Bool {
            guard head < items.count, case .tell = items[head] else { return false }
            return true
        }

        /// Takes the first item if it is an answer: the oldest queued answer
        /// of its client, nil when that client went.
        mutating func nextAnswer() -> Registry.PendingLookup?? {
            guard head < items.count, case .answer(let client) = items[head] else { return nil }
            popFirst()
            guard var queue = answers[client], !queue.isEmpty else { return .some(nil) }
            let lookup = queue.removeFirst()
            answers[client] = queue.isEmpty ? nil : queue
            return lookup
        }

        private mutating func popFirst() {
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: items.capacity <= 1024)
                head = 0
            } else if head >= 1024, head * 2 >= items.count {
                items.removeFirst(head)  // amortized: each item moves at most once per halving
                head = 0
            }
        }

        /// A client went: its queued answers (and their reply rights) go.
        mutating func forget(_ client: ClientID) { answers[client] = nil }

        /// An answer its client's full queue did not take: first again among
        /// the client's answers, with no turn in the queue until `resume`.
        mutating func putBack(_ lookup: Registry.PendingLookup) {
            answers[lookup.client, default: []].insert(lookup, at: 0)
        }

        /// The client's queue has room again: each of its answers gets a
        /// turn (a turn that finds none left is passed over).
        mutating func resume(_ client: ClientID) {
            for _ in 0..<(answers[client]?.count ?? 0) { items.append(.answer(client)) }
        }
    }

    /// The most NAME_OWNER_CHANGED and answers one pass of the loop sends.
    static let fanoutPerPass = 64
    /// The most queued watches one pass looks at (those that ended, or
    /// may not see the name, are passed over without a send).
    static let fanoutLookedAtPerPass = 4096
    /// Beyond this many NAME_OWNER_CHANGED queued for the watches of one
    /// uid, each of its watches falls behind when its turn comes
    /// (WATCH_OVERFLOW), whoever made the changes.
    static let fanoutPerUID = 1 << 16

    /// Starts the fan-out's source on the loop (`start`).
    func startFanout() {
        let source = RunLoopSource { [unowned self] _ in self.sendFanout() }
        loop.add(source, forMode: mode)
        fanoutSource = source
    }

    /// Queues NAME_OWNER_CHANGED of `change` for its watchers, counted
    /// against each watch's uid.
    func queueForWatchers(_ change: OwnerChange) {
        guard !change.watchers.isEmpty else { return }
        fanout.tell(change)
        fanoutSource?.signal()
    }

    /// Queues the answers of `lookups`: those a change took, or those whose
    /// deadline passed.
    func queueAnswers(_ lookups: [Registry.PendingLookup]) {
        guard !lookups.isEmpty else { return }
        for lookup in lookups { fanout.answer(lookup) }
        fanoutSource?.signal()
    }

    /// Queues the answers of the lookups `change` took.
    func queueAnswers(_ change: OwnerChange) {
        queueAnswers(change.answeredLookups)
    }

    /// One pass's share of the fan-out; signals itself again while work is left.
    func sendFanout() {
        sendFanout(atMost: Self.fanoutPerPass, lookingAt: Self.fanoutLookedAtPerPass)
        if !fanout.isEmpty { fanoutSource?.signal() }
    }

    /// Sends all of the fan-out now (NameServerHarness: a name server whose
    /// loop does not run).
    func flushFanout() {
        while !fanout.isEmpty { sendFanout(atMost: .max, lookingAt: .max) }
    }

    private func sendFanout(atMost sends: Int, lookingAt looks: Int) {
        var sent = 0
        var lookedAt = 0
        while sent < sends, lookedAt < looks, !fanout.isEmpty {
            lookedAt += 1
            if fanout.firstIsTelling {
                guard let (id, telling) = fanout.nextWatch() else { continue }
                // A watch that ended, fell behind (told nothing more but
                // WATCH_OVERFLOW) or may not see the name is passed over.
                guard let watch = registry.watch(id) else { continue }
                if overflowing[id] != nil {
                    overflowing[id]!.missed += 1
                    continue
                }
                if !RequestAccess.maySee(telling.name, by: watch.handle.caller, under: settings) { continue }
                // Its uid has more events queued than its share: it is
                // told nothing more but WATCH_OVERFLOW, as when its queue
                // is full.
                if let queued = fanout.pending[watch.uid], queued > Self.fanoutPerUID,
                    !settings.limits.privilegedUIDs.contains(watch.uid)
                {
                    sent += 1  // a source added to the loop: it costs what a send does
                    fellBehind(watch, why: "uid \(watch.uid) has \(queued) events queued for its watches")
                    continue
                }
                sent += 1
                notify(watch, of: telling)
            } else if let answer = fanout.nextAnswer() {
                guard let lookup = answer else { continue }  // its client went
                if parkedAnswers[lookup.client] != nil {
                    fanout.putBack(lookup)  // its turn comes when its queue has room
                    continue
                }
                sent += 1
                self.answer(lookup)
            }
        }
    }

    /// NAME_OWNER_CHANGED to one watcher: a watcher whose port is gone
    /// stops watching; one whose queue is full falls behind.
    private func notify(_ watch: Registry.Watch, of telling: Fanout.Telling) {
        let message = PCPortMessage(notification: .ownerChanged(serial: watch.handle.serial, telling.reported))
        switch deliver(message, to: watch.handle.port, what: "NAME_OWNER_CHANGED for \(telling.name)") {
        case .sent:
            break
        case .timedOut:
            fellBehind(watch, why: "the watcher's queue is full")
        case .receiverGone, nil:
            registry.unwatch(watch.id)
            eventLog.log(
                "watch ended: the watcher's port is gone",
                ["pid": "\(watch.handle.credentials.pid)", "uid": "\(watch.handle.credentials.uid)"])
        }
    }

    /// The answer to a lookup that waited: the name's owner now, and a
    /// connection to its port. A name that has no owner again makes the
    /// lookup wait again, until its deadline; once that has passed, the
    /// answer is `timeout`. Every answer goes through `sendAnswer`, so a
    /// full queue keeps it whatever it says.
    private func answer(_ lookup: Registry.PendingLookup) {
        let name = lookup.name
        if let owner = registry.owner(of: name) {
            sendAnswer(found(lookup.handle.serial, name, owner: owner.process), of: lookup)
            return
        }
        if lookup.deadline <= loop.clock.now() {
            sendAnswer(
                reply(.error(serial: lookup.handle.serial, .timeout, "no port was registered as \(name) in time")),
                of: lookup)
            return
        }
        let outcome = registry.lookUp(
            name, client: lookup.client, waitUntil: (lookup.deadline, lookup.handle),
            answersQueued: fanout.answersQueued(for: lookup.client))
        switch outcome {
        case .waiting:
            rearmDeadlineTimer()
        case .limit(let exceeded):
            sendAnswer(reply(.error(serial: lookup.handle.serial, .limit, exceeded.description)), of: lookup)
        case .found(let owner):  // not without an owner; answered as found all the same
            sendAnswer(found(lookup.handle.serial, name, owner: owner.process), of: lookup)
        case .notFound:  // not with a deadline; answered as not found all the same
            sendAnswer(
                reply(.error(serial: lookup.handle.serial, .notFound, "no port is registered as \(name)")), of: lookup)
        }
    }

    /// Sends a waiting lookup's answer. A client whose queue is full (it
    /// asked for more answers at once than its socket holds, and reads
    /// them slower than they come) keeps the answer: it is put back, and
    /// the client's answers wait, with no turn in the fan-out, until its
    /// socket is writable again (a one-shot source on it); nothing is
    /// dropped, and nobody else waits meanwhile.
    private func sendAnswer(_ message: PCPortMessage, of lookup: Registry.PendingLookup) {
        let outcome = deliver(
            message, to: lookup.handle.port, what: "the answer to a waiting lookup of \(lookup.name)", keptWhenFull: true)
        guard outcome == .timedOut else { return }
        fanout.putBack(lookup)
        let client = lookup.client
        guard parkedAnswers[client] == nil else { return }
        // A duplicate of the client's socket: its own entry in the loop's
        // epoll set, beside the control port's source on the original.
        let duplicate: OwnedDescriptor?
        do {
            duplicate = try lookup.handle.port.withDescriptor { (fd) throws(SystemCallError) in try Descriptor.duplicate(fd) }
        } catch {
            duplicate = nil
        }
        guard let duplicate else {
            // Closed meanwhile, or out of descriptors: the client cannot be
            // told when there is room, so it is told nothing more.
            eventLog.log("closing a client whose answers cannot wait for room", ["client": "\(client)"])
            loop.perform(inModes: [mode]) { [port] in port.closeConnection(client) }
            return
        }
        let source = PortSource(descriptor: duplicate, events: .writable) { [unowned self] s in
            s.invalidate()
            self.parkedAnswers[client] = nil
            self.fanout.resume(client)
            self.fanoutSource?.signal()
        }
        parkedAnswers[client] = source
        do {
            try loop.add(source, forMode: mode)
        } catch {
            source.invalidate()
            eventLog.log("closing a client whose answers cannot wait for room: \(error)", ["client": "\(client)"])
            loop.perform(inModes: [mode]) { [port] in port.closeConnection(client) }
        }
    }
}
