// NameServer+Consequences: what a decision of the registry entails beyond
// the reply, carried out in the pass that made it: an owner change
// (`apply`) removes the old owner's socket file, tells a replaced owner
// (NAME_LOST), gives the new owner its socket (the requester's, or a new
// one sent to a promoted queued owner with NAME_ACQUIRED), and queues
// NAME_OWNER_CHANGED for the watchers and the answers of the lookups
// waiting for the name (sent by the following passes, a share each:
// NameServer+Fanout); a client that goes releases everything it held;
// waiting lookups time out on one timer armed for the earliest deadline.
// A name handed down its queue is handed at most `handoversPerPass` times
// a pass; the rest waits for later passes (NameServer+Handover).
//
// Invariants: every port a consequence uses hangs on the registry's record
// it concerns (NameServer.Handles), so a record the registry dropped has no
// port left to use; every send is without waiting (zero timeout) and its
// failure is logged, never fatal; a promoted owner that cannot be reached
// loses the name in turn, as a further change applied here too.

import Logging
import PortCore

extension NameServer {
    /// Carries out one owner change: the old owner's socket file goes; the
    /// new owner gets its socket (the requester's, made by the caller, or a
    /// new one sent to a promoted queued owner); watchers are told; lookups
    /// waiting for the name are answered. A promoted owner that cannot be
    /// reached loses the name in turn (a further change, applied here too).
    func apply(_ first: OwnerChange, requesterSocket: PortSocketFile?) {
        var changes = [first]
        var socketForNew = requesterSocket
        while !changes.isEmpty {
            let change = changes.removeFirst()
            let name = change.name
            if let old = change.old {
                if let file = old.handle.socket { directory.remove(file) }
                if change.kind == .replaced, let new = change.new, let lost = old.handle.port {
                    let message = PCPortMessage(
                        notification: .lost(serial: old.handle.serial, name: name.value, to: new.process))
                    send(message, to: lost, what: "NAME_LOST for \(name)")
                }
            }
            var unreachable: Registry.Ownership?
            if let new = change.new {
                if let file = socketForNew {
                    registry.updateOwner(of: name, ticket: new.ticket) { $0.socket = file }
                } else if !mayHandOverNow() {
                    // This pass handed over its share: a later one tells it
                    // (NameServer+Handover).
                    queueHandover(name, ticket: new.ticket, uid: new.credentials.uid)
                } else {
                    charge(1, to: new.credentials.uid)
                    if let file = handOver(name, to: new) {
                        registry.updateOwner(of: name, ticket: new.ticket) { $0.socket = file }
                    } else {
                        unreachable = new
                    }
                }
            }
            socketForNew = nil
            log(change)
            // Sent by later passes, a share each (NameServer+Fanout).
            queueForWatchers(change)
            queueAnswers(change)
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
    /// cannot be reached (no port, port gone, queue full). A port whose
    /// receiver is gone is seen with one poll(2), before a socket is made.
    func handOver(_ name: PortName, to owner: Registry.Ownership) -> PortSocketFile? {
        let metadata: Logger.Metadata = [
            "name": "\(name)", "client": "\(owner.client)", "pid": "\(owner.credentials.pid)",
            "uid": "\(owner.credentials.uid)",
        ]
        guard let notifyPort = owner.handle.port else {
            logger.warning("the next owner of \(name) left no port to tell; passing it on", metadata: metadata)
            return nil
        }
        if PassedPortCheck.receiverIsGone(notifyPort) {
            logger.debug("the next owner of \(name) is gone; passing it on", metadata: metadata)
            return nil
        }
        let socket: (fd: SharedDescriptor, file: PortSocketFile)
        do {
            socket = try directory.makeListeningSocket()
        } catch {
            logger.error("cannot create a port socket for \(name): \(error)", metadata: metadata)
            return nil
        }
        let message = PCPortMessage(
            notification: .acquired(serial: owner.handle.serial, name: name.value, listening: SendRight(sharing: socket.fd)))
        if send(message, to: notifyPort, what: "NAME_ACQUIRED for \(name)") { return socket.file }
        directory.remove(socket.file)
        return nil
    }

    /// A watcher fell behind (`why`: its queue is full, or its uid has
    /// more events queued than its share): the change just tried is its
    /// first missed one. Its port is watched for room; then WATCH_OVERFLOW
    /// goes (`endOverflowed`) and the watch ends. portd never waits for it
    /// meanwhile, and tells it nothing else.
    func fellBehind(_ watch: Registry.Watch, why: String) {
        let metadata: Logger.Metadata = [
            "pid": "\(watch.handle.credentials.pid)", "uid": "\(watch.handle.credentials.uid)",
        ]
        guard let connection = watch.handle.port.currentConnection() else {
            registry.unwatch(watch.id)
            return
        }
        let id = watch.id
        let source = PortSource(sharing: connection, events: .writable) { [unowned self] _ in
            self.endOverflowed(id)
        }
        do {
            try loop.add(source, forMode: mode)
        } catch {
            // Cannot wait for room: the watch ends here, and the watcher
            // sees its connection hang up once it reads what was queued.
            logger.error("cannot watch a watcher's port for room: \(error)", metadata: metadata)
            source.invalidate()
            registry.unwatch(id)
            return
        }
        overflowing[id] = (source, 1)
        refusalLog.log("watch fell behind: \(why); it ends with WATCH_OVERFLOW", metadata)
    }

    /// The port of a watcher that fell behind has room (or hung up): it
    /// gets WATCH_OVERFLOW, then the watch ends and portd's end of the
    /// port closes.
    private func endOverflowed(_ id: WatchID) {
        guard let pending = overflowing[id] else { return }
        guard let watch = registry.watch(id) else {
            overflowing[id] = nil
            pending.source.invalidate()
            return
        }
        let message = PCPortMessage(notification: .watchOverflow(serial: watch.handle.serial, missed: pending.missed))
        if deliver(message, to: watch.handle.port, what: "WATCH_OVERFLOW") == .timedOut { return }  // room comes later
        overflowing[id] = nil
        pending.source.invalidate()
        registry.unwatch(id)
    }

    /// Sends without waiting; false (logged, within `eventLog`'s limit) when
    /// the receiver is gone or full.
    @discardableResult
    func send(_ message: PCPortMessage, to right: SendRight, what: String) -> Bool {
        deliver(message, to: right, what: what) == .sent
    }

    /// Sends without waiting; the outcome, nil (logged) when the send failed.
    /// `keptWhenFull`: the caller keeps the message for later when the
    /// receiver's queue is full, so that is not logged as "not sent".
    func deliver(_ message: PCPortMessage, to right: SendRight, what: String, keptWhenFull: Bool = false) -> SendResult? {
        do {
            let outcome = try right.send(message, timeout: .zero)
            switch outcome {
            case .sent:
                break
            case .timedOut:
                if !keptWhenFull { eventLog.log("not sent: \(what): the receiver's queue is full", [:]) }
            case .receiverGone:
                logger.debug("not sent: \(what): the receiver is gone")
            }
            return outcome
        } catch {
            eventLog.log("not sent: \(what): \(error)", [:])
            return nil
        }
    }

    private func log(_ change: OwnerChange) {
        var metadata: Logger.Metadata = ["name": "\(change.name)", "event": "\(change.kind.rawValue)"]
        if let old = change.old { metadata["old_pid"] = "\(old.credentials.pid)" }
        if let new = change.new { metadata["new_pid"] = "\(new.credentials.pid)"; metadata["new_uid"] = "\(new.credentials.uid)" }
        logger.debug("\(change.name) \(change.kind.rawValue)", metadata: metadata)
    }

    // MARK: - Clients that go, lookups that expire

    /// A connection closed: everything it held goes (with its handles), and
    /// each name it owned changes owner.
    func clientGone(_ client: ClientID) {
        greeted.remove(client)
        listCursors[client] = nil
        activator.clientGone(client)
        memoryMark = max(memoryMark, registry.nameCount + registry.clientCount)
        let removal = registry.removeClient(client, now: WallClock.unixMilliseconds())
        for id in removal.watches { overflowing.removeValue(forKey: id)?.source.invalidate() }
        fanout.forget(client)
        parkedAnswers.removeValue(forKey: client)?.invalidate()
        logger.debug(
            "client gone", metadata: ["client": "\(client)", "released": "\(removal.changes.count)"])
        for change in removal.changes { apply(change, requesterSocket: nil) }
        // Each name released removed its socket file (lstat and unlink).
        charge(removal.changes.count / Self.namesReleasedPerTurn, to: removal.uid)
        rearmDeadlineTimer()
        returnMemoryIfShrunk()
    }

    /// Once the registry (names and clients) has shrunk to less than half
    /// of its size when memory was last returned (or its peak), gives the
    /// freed heap back to the kernel: at most a logarithmic number of heap
    /// walks however many clients leave, and none for a small registry.
    private func returnMemoryIfShrunk() {
        let size = registry.nameCount + registry.clientCount
        guard memoryMark >= Self.memoryReturnFloor, size * 2 < memoryMark else { return }
        registry.compact()
        Memory.returnFreePages()
        memoryMark = size
    }

    /// Below this many names and clients, memory is not worth returning.
    static let memoryReturnFloor = 1000

    /// Keeps one timer armed for the earliest deadline of a waiting lookup.
    func rearmDeadlineTimer() {
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

    /// Queues the answers of the lookups whose deadline passed: each is
    /// answered `timeout` in its turn of the fan-out (NameServer+Fanout),
    /// kept, like every waiting lookup's answer, while its client's queue
    /// is full.
    private func expireLookups() {
        queueAnswers(registry.expireLookups(now: loop.clock.now()))
        rearmDeadlineTimer()
    }
}
