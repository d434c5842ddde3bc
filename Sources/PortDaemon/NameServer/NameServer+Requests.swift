// NameServer+Requests: one handler per request of portd-protocol(7)
// (STATUS, REGISTER, RELEASE, LOOKUP, WATCH, LIST, OWNER, CHECKIN). Each
// asks RequestAccess whether the caller may, asks the registry, hangs what
// it will need later on the registry's record (an owner's port, a
// watcher's port, a waiting lookup's reply port), builds its reply with the
// protocol's vocabulary, and leaves what the decision entails beyond the
// reply to the consequences (NameServer+Consequences: `apply`).
//
// Invariants: a handler answers with exactly one reply, except a LOOKUP
// that waits (answered later, by `apply` or `expireLookups`); a refusal is
// counted and logged through `refuse`; nothing here blocks.

import Logging
import PortCore

extension NameServer {
    /// Decides `access` for the request in `c`; the refusal to send when it is denied.
    private func refusal(_ access: RequestAccess, _ c: Context) -> PCPortMessage? {
        let current = self.current
        guard case .deny(let why) = access.decide(by: c.caller, under: current.value) else { return nil }
        return refuse(c, .denied, why)
    }

    func status(_ c: Context) -> PCPortMessage {
        let uptime = max(0, (MonotonicInstant.now() - startedAt).nanosecondsClamped / 1_000_000)
        let status = NameServerStatus(
            version: PortdVersion.current, pid: ownPID, uptimeMilliseconds: UInt64(uptime),
            names: UInt64(registry.nameCount), clients: UInt64(registry.clientCount), lookups: UInt64(counters.lookups),
            refusals: UInt64(counters.refusals), declared: UInt64(declared.count))
        return reply(.status(serial: c.serial, status))
    }

    func register(
        _ name: PortName, _ options: RegistrationOptions, _ c: Context, notifyPort: SendRight?, remote: String? = nil
    ) -> PCPortMessage {
        if let refused = refusal(.register(name, declared: declared[name] != nil), c) { return refused }
        // The socket comes first, so that a registration never has to be
        // undone for lack of one; when the name is not granted it goes again.
        let socket: (fd: SharedDescriptor, file: PortSocketFile)
        do {
            socket = try directory.makeListeningSocket()
        } catch {
            logger.error("cannot create a port socket: \(error)", metadata: c.who)
            return reply(.error(serial: c.serial, .internal, "portd cannot create the port's socket: \(error)"))
        }
        let outcome = registry.register(
            name, client: c.client, credentials: c.sender, options: options, canQueue: notifyPort != nil,
            now: WallClock.unixMilliseconds(), handle: Handles.Owner(port: notifyPort, serial: c.serial), remote: remote)
        guard case .registered(let change) = outcome else {
            directory.remove(socket.file)  // the socket closes on return
            switch outcome {
            case .queued(_, let position):
                logger.debug("\(name) queued at position \(position)", metadata: c.who)
                return reply(.queued(serial: c.serial, name: name.value, place: position))
            case .alreadyOwned(let owner):
                return reply(.alreadyOwned(serial: c.serial, name: name.value, by: owner.process))
            case .limit(let exceeded):
                return refuse(c, .limit, exceeded.description)
            case .registered:
                preconditionFailure("handled above")
            }
        }
        let listening = SendRight(sharing: socket.fd)  // closes portd's copy once the reply is sent
        apply(change, requesterSocket: socket.file)  // tells a replaced owner first
        return reply(.registered(serial: c.serial, name: name.value, listening: listening))
    }

    func release(_ name: PortName, _ c: Context) -> PCPortMessage {
        let notOwner = reply(.error(serial: c.serial, .notOwner, "this client does not own \(name) and is not queued for it"))
        if declared[name] != nil {
            return reply(.error(serial: c.serial, .notOwner, "\(name) is a declared port: portd owns it"))
        }
        switch registry.release(name, client: c.client, now: WallClock.unixMilliseconds()) {
        case .released(let change):
            apply(change, requesterSocket: nil)
            return reply(.done(serial: c.serial, name: name.value))
        case .leftQueue:
            logger.debug("left the queue of \(name)", metadata: c.who)
            return reply(.done(serial: c.serial, name: name.value))
        case .notOwner, .notFound:
            // Nobody owning the name is not the client owning it either.
            return notOwner
        }
    }

    func lookUp(_ name: PortName, wait: Duration?, _ c: Context, replyPort: SendRight?) -> PCPortMessage? {
        counters.lookups += 1
        if let refused = refusal(.lookUp(name), c) { return refused }
        if let port = declared[name] {
            if let refused = declaredBacklogRefusal(name, port, c) { return refused }
            return found(c.serial, name, file: port.file, owner: .init(pid: ownPID, uid: ownUID, client: 0))
        }
        var deadline: MonotonicInstant?
        if let wait { deadline = loop.clock.now() + min(wait, current.value.maximumLookupWait) }
        // Only a request that expects a reply can wait for one later.
        let waiting = replyPort.flatMap { port in
            deadline.map { (deadline: $0, handle: Handles.Lookup(port: port, serial: c.serial)) }
        }
        switch registry.lookUp(
            name, client: c.client, waitUntil: waiting, answersQueued: fanout.answersQueued(for: c.client))
        {
        case .found(let owner):
            return found(c.serial, name, owner: owner.process, releaseIfDeaf: true, ownersSocket: owner.handle.socket)
        case .notFound:
            return reply(.error(serial: c.serial, .notFound, "no port is registered as \(name)"))
        case .waiting:
            // Answered later: the reply right hangs on the registry's lookup.
            rearmDeadlineTimer()
            logger.debug("lookup waits for \(name)", metadata: c.who)
            return nil
        case .limit(let exceeded):
            return refuse(c, .limit, exceeded.description)
        }
    }

    /// "found", a new connection to the name's port (its owner's socket
    /// file, or `file`), and its owner. With `releaseIfDeaf`, an owner
    /// whose port no longer listens (the connect is refused) loses the
    /// name, so LIST, OWNER and LOOKUP agree; its queue and watchers learn
    /// it as a release.
    /// `ownersSocket`: the owner's socket file (or nil, none) when the
    /// caller has the registry's answer of this pass, so that it is not
    /// looked up again.
    func found(
        _ serial: UInt32, _ name: PortName, file: PortSocketFile? = nil, owner: NameOwner.Process, releaseIfDeaf: Bool = false,
        ownersSocket: PortSocketFile?? = nil
    ) -> PCPortMessage {
        let ownersFile = file == nil  // not a declared port's
        guard let file = file ?? (ownersSocket ?? registry.owner(of: name)?.handle.socket) else {
            // Its owner left, and the next in its queue is told in a later
            // pass (NameServer+Handover): nobody listens on it yet.
            return reply(.error(
                serial: serial, .notFound, "\(name) is being handed to the next owner in its queue; try again"))
        }
        switch directory.connect(to: file) {
        case .connected(let fd):
            let fields: FoundFields
            if let last = lastFoundFields, last.name == name, last.owner == owner {
                fields = last
            } else {
                fields = FoundFields(name: name, owner: owner)
                lastFoundFields = fields
            }
            return Self.foundReply(serial: serial, fields, connection: SendRight(sharing: fd))
        case .backlogFull:
            return refuse(
                serial, .limit, "the port \(name) accepts no more connections now (backlog full)", request: "LOOKUP",
                who: ["name": "\(name)"])
        case .refused:
            if releaseIfDeaf, ownersFile, let deaf = registry.owner(of: name),
                case .released(let change) = registry.release(name, client: deaf.client, now: WallClock.unixMilliseconds())
            {
                eventLog.log("\(name) released: its owner's port no longer listens", ["name": "\(name)"], level: .info)
                apply(change, requesterSocket: nil)
            }
            return reply(.error(serial: serial, .notFound, "the owner of \(name) no longer listens on it"))
        case .failed(let error):
            logger.error("cannot connect to \(name): \(error)", metadata: ["name": "\(name)"])
            return reply(.error(serial: serial, .internal, "portd cannot connect to \(name): \(error)"))
        }
    }

    /// `PCPortMessage(reply: .found(...))`, the "found" reply, with each
    /// field's bytes written at once: no NameServerReply, field Strings or
    /// "PID:UID:CLIENT" text in between (8,000 of a LOOKUP's 36,700
    /// instructions in portd). NameServerRequestTests compares the two.
    static func foundReply(serial: UInt32, name: PortName, owner: NameOwner.Process, connection: SendRight) -> PCPortMessage {
        foundReply(serial: serial, FoundFields(name: name, owner: owner), connection: connection)
    }

    /// The "found" reply with `fields` made beforehand.
    static func foundReply(serial: UInt32, _ fields: FoundFields, connection: SendRight) -> PCPortMessage {
        let serialField = field(NameServerProtocol.Field.serial, capacity: 10) { w in w.decimal(UInt64(serial)) }
        return PCPortMessage(
            msgid: NameServerProtocol.MessageID.reply,
            components: [.data(serialField), .data(fields.nameField), .data(fields.ownerField), .port(connection)])
    }

    /// The "name=" and "owner=" fields of a "found" reply, as bytes.
    /// `found` keeps the last ones (`lastFoundFields`) and sends them again
    /// while the name and its owner are the same: the arrays are values,
    /// shared, never written again.
    struct FoundFields {
        let name: PortName
        let owner: NameOwner.Process
        let nameField: [UInt8]
        let ownerField: [UInt8]

        init(name: PortName, owner: NameOwner.Process) {
            typealias F = NameServerProtocol.Field
            self.name = name
            self.owner = owner
            var value = name.value
            nameField = value.withUTF8 { text in NameServer.field(F.name, capacity: text.count) { w in w.bytes(text) } }
            ownerField = NameServer.field(F.owner, capacity: 11 + 1 + 10 + 1 + 20) { w in
                if owner.pid < 0 { w.byte(UInt8(ascii: "-")) }
                w.decimal(UInt64(owner.pid.magnitude))
                w.byte(UInt8(ascii: ":"))
                w.decimal(UInt64(owner.uid))
                w.byte(UInt8(ascii: ":"))
                w.decimal(owner.client)
            }
        }
    }

    /// Writes a field's bytes into a buffer it was made with room for.
    fileprivate struct FieldWriter {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var count: Int

        mutating func byte(_ b: UInt8) {
            buffer[count] = b
            count += 1
        }

        mutating func bytes(_ b: UnsafeBufferPointer<UInt8>) {
            guard let base = b.baseAddress, !b.isEmpty else { return }
            UnsafeMutableBufferPointer(rebasing: buffer[count..<(count + b.count)]).baseAddress!.update(from: base, count: b.count)
            count += b.count
        }

        /// `n` in decimal, as `"\(n)"` writes it.
        mutating func decimal(_ n: UInt64) {
            count += NameServerProtocol.writeDecimal(n, into: buffer, at: count)
        }
    }

    /// "KEY=" and what `value` writes (at most `capacity` bytes), written
    /// on the stack and copied into an array of their size (an array made
    /// with `unsafeUninitializedCapacity` was allocated unspecialized, 530
    /// instructions).
    fileprivate static func field(_ key: String, capacity: Int, _ value: (inout FieldWriter) -> Void) -> [UInt8] {
        var key = key
        return key.withUTF8 { k in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: k.count + 1 + capacity) { buffer in
                var w = FieldWriter(buffer: buffer, count: 0)
                w.bytes(k)
                w.byte(UInt8(ascii: "="))
                value(&w)
                return Array(UnsafeBufferPointer(rebasing: buffer[0..<w.count]))
            }
        }
    }

    func watch(_ name: PortName?, _ c: Context, watcherPort: SendRight) -> PCPortMessage {
        if let refused = refusal(.watch(name), c) { return refused }
        let watcher = Handles.Watcher(port: watcherPort, serial: c.serial, caller: c.caller, credentials: c.sender)
        switch registry.watch(name, client: c.client, handle: watcher) {
        case .success:
            return reply(.done(serial: c.serial, name: name?.value))
        case .failure(let exceeded):
            return refuse(c, .limit, exceeded.description)
        }
    }

    /// "ok" and one line per name after `after` the client may look up, at
    /// most `listPageSize` and as many as fit in one record; the
    /// continuation word at the end when some did not (the client asks
    /// again after the last name). The registry keeps its names sorted, so
    /// a page costs O(page + log n), never a sort of every name. A LIST
    /// looks at no more than `listLookedAtPerRequest` names, those the
    /// policy hides from this client included, and the LISTs of one uid
    /// together no more than `listLookedAtPerUIDPerPass` in one pass of
    /// portd's loop, however many connections it pipelines them on: where
    /// a LIST stops is kept for the client (`listCursors`, never told: it
    /// may be a hidden name), and its next LIST with the `after=` it will
    /// send (the last name of this page, or this request's own when the
    /// page is empty) goes on from there. A LIST whose uid has used its
    /// share of the pass answers an empty page and the continuation word.
    /// So what a uid's LISTs add to a pass is bounded (fair service),
    /// however many names are hidden and however many connections ask.
    func list(after: PortName?, _ c: Context) -> PCPortMessage {
        var start = after
        if let cursor = listCursors.removeValue(forKey: c.client), cursor.after == after { start = cursor.resume }
        let allowance = min(Self.listLookedAtPerRequest, listAllowance(of: c.sender.uid))
        // Read once: each use of the stored property copied the settings
        // (retaining every closure and array in them) per name.
        let settings = self.settings
        var registered = registry.namesInOrder(after: start)
        var declaredPorts = declared.all.filter { d in start.map { d.name > $0 } ?? true }[...]
        // Header, table and data must fit in one record, with room for the
        // serial and "more=".
        let room = Self.controlPortLimits.maxRecordSize - WireFormat.headerSize - 2 * WireFormat.entrySize - 32
        var entries: [NameEntry] = []
        var more = false
        var size = 0
        var lookedAt = 0
        var lastLookedAt: PortName?
        var lastShown: PortName?
        while true {
            // The next name in order, registered or declared.
            let name: PortName
            var declaredPort: DeclaredPorts.Port?
            if let r = registered.first, declaredPorts.first.map({ r < $0.name }) ?? true {
                name = r
                registered = registered.dropFirst()
            } else if let d = declaredPorts.popFirst() {
                name = d.name
                declaredPort = d
            } else {
                break
            }
            if lookedAt == allowance {
                more = true
                // Nothing looked at (the uid's share was used): the cursor
                // this LIST resumed from stays.
                if let resume = lastLookedAt ?? start {
                    listCursors[c.client] = ListCursor(after: lastShown ?? after, resume: resume)
                }
                break
            }
            lookedAt += 1
            lastLookedAt = name
            // Decided before the entry is made: most names may be hidden.
            guard RequestAccess.maySee(name, by: c.caller, under: settings) else { continue }
            let entry: NameEntry
            if let d = declaredPort {
                entry = NameEntry(
                    name: d.name.value, owner: .init(pid: ownPID, uid: ownUID, client: 0),
                    sinceMilliseconds: d.sinceMilliseconds, queuedCount: 0, isDeclared: true,
                    checkedInPID: d.lastCheckInPID)
            } else if let r = registry.listed(name) {
                entry = NameEntry(
                    name: r.name.value, owner: r.owner, sinceMilliseconds: r.sinceMilliseconds, queuedCount: r.queued,
                    remote: r.remote)
            } else {
                continue
            }
            let fields = entry.fields
            var cost = 0
            for f in fields { cost += WireFormat.entrySize + f.key.utf8.count + 1 + f.value.utf8.count }
            if size + cost > room || entries.count >= Self.listPageSize {
                more = true
                break
            }
            size += cost
            entries.append(entry)
            lastShown = name
        }
        chargeList(lookedAt, to: c.sender.uid)
        return reply(.list(serial: c.serial, entries: entries, more: more))
    }

    /// Where a LIST that looked at its `listLookedAtPerRequest` names
    /// stopped: the client's next LIST with `after=` `after` goes on after
    /// `resume`.
    struct ListCursor {
        let after: PortName?
        let resume: PortName
    }

    /// The most names one LIST looks at, shown or hidden by the policy: four
    /// pages' worth, so that a LIST costs a pass about what a full page
    /// does, even for a client from whom the policy hides most names.
    static let listLookedAtPerRequest = 4 * listPageSize

    /// The most names the LISTs of one uid look at in one pass of portd's
    /// loop, together: one LIST's worth. Without it, a uid pipelining LISTs
    /// on 200 connections had 200 times that looked at in every pass (as
    /// uid 65534 with 50,000 names hidden from it, another client's STATUS
    /// waited 82 ms on average, 118 ms at worst).
    static let listLookedAtPerUIDPerPass = listLookedAtPerRequest

    /// The names a LIST of `uid` may still look at in this pass.
    private func listAllowance(of uid: UInt32) -> Int {
        max(0, Self.listLookedAtPerUIDPerPass - (listLookedAtThisPass[uid] ?? 0))
    }

    /// Counts `names` looked at by a LIST of `uid` in this pass; the counts
    /// are cleared when the next pass begins (`passBegins`).
    private func chargeList(_ names: Int, to uid: UInt32) {
        guard names > 0 else { return }
        listLookedAtThisPass[uid, default: 0] += names
        countedInThisPass()
    }

    /// The most names one LIST reply holds: well within what a client
    /// decodes by default (PortLimits.default.maxComponents), and small
    /// enough that a page costs a fraction of a millisecond.
    static let listPageSize = 128

    /// "ok", the owner, since when, and the page of the queue that starts
    /// at place `from`: as many "queued=PID:UID" as fit in one record of
    /// at most PortLimits.default.maxComponents components (and at most
    /// `ownerPageSize`), then the continuation word when the queue goes on
    /// (the client asks again from the place after the last one it got).
    /// Costs O(page), whatever the queue's length.
    func owner(_ name: PortName, from: Int, _ c: Context) -> PCPortMessage {
        if let refused = refusal(.lookUp(name), c) { return refused }
        if let d = declared[name] {
            let owner = NameOwner(
                name: name.value, owner: .init(pid: ownPID, uid: ownUID, client: 0), sinceMilliseconds: d.sinceMilliseconds,
                queued: [], isDeclared: true, checkedInPID: d.lastCheckInPID)
            return reply(.owner(serial: c.serial, owner, more: false))
        }
        guard let owner = registry.owner(of: name) else {
            return reply(.error(serial: c.serial, .notFound, "no port is registered as \(name)"))
        }
        let queue = registry.queue(of: name)
        var page: [NameOwner.Process] = []
        var index = min(from, queue.count)
        // The owner's fields, the word and the continuation word take
        // 5 components and well under 256 bytes.
        let room = Self.controlPortLimits.maxRecordSize - WireFormat.headerSize - 5 * WireFormat.entrySize - 256
        var size = 0
        while index < queue.count, page.count < Self.ownerPageSize {
            let process = queue[index].process
            let cost = WireFormat.entrySize + NameServerProtocol.Field.queued.utf8.count + 1 + process.encoded.utf8.count
            if size + cost > room { break }
            size += cost
            page.append(process)
            index += 1
        }
        let reported = NameOwner(
            name: name.value, owner: owner.process, sinceMilliseconds: owner.sinceMilliseconds, queued: page,
            queueLength: queue.count, remote: owner.remote)
        return reply(.owner(serial: c.serial, reported, more: index < queue.count))
    }

    /// The most queued processes one OWNER page names: with the five other
    /// components, within what a client decodes by default
    /// (PortLimits.default.maxComponents).
    static let ownerPageSize = 256

    func checkIn(_ name: PortName, _ c: Context) -> PCPortMessage {
        guard let port = declared[name] else {
            return reply(.error(serial: c.serial, .notDeclared, "\(name) is not a declared port"))
        }
        if let refused = refusal(.checkIn(name, uids: port.checkInUIDs, gids: port.checkInGIDs), c) { return refused }
        declared.recordCheckIn(name, pid: c.sender.pid)
        activator.checkedIn(name, by: c.client)
        eventLog.log("service checked in for \(name) (check-in \(port.checkIns + 1))", c.who, level: .info)
        return reply(.checkedIn(serial: c.serial, name: name.value, listening: port.listening))
    }
}
