// NameRegistryTests: the name server's rules without sockets or processes:
// names and their validation, D-Bus ownership (registered, queued,
// already owned, replaced), release by request and by a client going away,
// watches, lookups that wait with deadlines, every per-client limit, and
// the handles hung on records (here plain tags) coming back with them.

import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

private func name(_ s: String) -> PortName { try! PortName(validating: s) }
private func who(_ pid: Int32, uid: UInt32 = 1000) -> Credentials { Credentials(pid: pid, uid: uid, gid: uid) }
private func at(_ ms: UInt64) -> MonotonicInstant { MonotonicInstant(nanoseconds: ms * 1_000_000) }

/// The handles these tests hang on records: tags naming who hung them.
private enum Tags: NameRegistryHandles {
    typealias Owner = String
    typealias Watcher = String
    typealias Lookup = String
}

/// Handles whose owner says whether it holds a descriptor of portd's.
private enum Ported: NameRegistryHandles {
    typealias Owner = Bool
    typealias Watcher = String
    typealias Lookup = String
    static func holdsDescriptor(_ owner: Bool) -> Bool { owner }
}

private typealias Registry = NameRegistry<Tags>
private typealias OwnerChange = Registry.OwnerChange
private typealias PendingLookup = Registry.PendingLookup

/// A registry with clients 1, 2, 3 (pids 101, 102, 103) admitted.
private func registry(_ limits: NameRegistryLimits = NameRegistryLimits()) -> Registry {
    var r = Registry(limits: limits)
    for c: ClientID in 1...3 { #expect(r.admit(c, uid: 1000) == nil) }
    return r
}

private extension NameRegistry where Handles == Tags {
    /// A REGISTER whose handle is "N by C".
    mutating func register(
        _ n: String, by client: ClientID, _ options: RegistrationOptions = [], canQueue: Bool = true, now: UInt64 = 0
    ) -> RegisterOutcome {
        register(
            name(n), client: client, credentials: who(Int32(100 + client)), options: options, canQueue: canQueue,
            now: now, handle: "\(n) by \(client)")
    }

    /// A LOOKUP that waits until `deadline` (when given), its handle "lookup by C".
    mutating func lookUp(_ n: PortName, client: ClientID, until deadline: MonotonicInstant?) -> LookupOutcome {
        lookUp(n, client: client, waitUntil: deadline.map { ($0, "lookup by \(client)") })
    }

    /// A WATCH whose handle is "watch by C".
    mutating func watch(_ n: PortName?, client: ClientID) -> Result<WatchID, LimitExceeded> {
        watch(n, client: client, handle: "watch by \(client)")
    }
}

/// The change of a `.registered` outcome.
private func change(_ outcome: Registry.RegisterOutcome) -> OwnerChange? {
    if case .registered(let c) = outcome { return c }
    return nil
}

@Suite struct PortNameTests {
    @Test func acceptsTheAllowedAlphabetUpTo200Bytes() throws {
        for valid in ["a", "A", "0", "org.example.Service-2_x", "a..b", "a.", "-", "_", String(repeating: "z", count: 200)] {
            #expect(try PortName(validating: valid).value == valid)
        }
    }

    @Test func refusesEverythingElseWithAReason() {
        let cases: [(String, PortName.Invalid)] = [
            ("", .empty),
            (String(repeating: "z", count: 201), .tooLong(bytes: 201)),
            (".", .leadingDot), ("..", .leadingDot), (".hidden", .leadingDot),
            ("a/b", .forbiddenByte(UInt8(ascii: "/"), at: 1)),
            ("../x", .leadingDot),
            ("a b", .forbiddenByte(0x20, at: 1)),
            ("a\u{0}", .forbiddenByte(0, at: 1)),
            ("é", .forbiddenByte(0xC3, at: 0)),
            ("a:b", .forbiddenByte(UInt8(ascii: ":"), at: 1)),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text.debugDescription)") { try PortName(validating: text) }
        }
        #expect(PortName.Invalid.leadingDot.description == "a name must not start with a dot")
        #expect(PortName.Invalid.forbiddenByte(0x2F, at: 1).description.contains("0x2f"))
    }
}

@Suite struct NameRegistryTests {
    // MARK: Ownership

    @Test func aFreeNameIsRegistered() throws {
        var r = registry()
        let c = try #require(change(r.register("svc", by: 1, [.allowReplacement], now: 5)))
        #expect(c.kind == .registered)
        #expect(c.old == nil)
        #expect(c.new?.client == 1)
        #expect(c.new?.credentials == who(101))
        #expect(c.new?.sinceMilliseconds == 5)
        #expect(c.new?.allowsReplacement == true)
        #expect(r.owner(of: name("svc")) == c.new)
        #expect(r.nameCount == 1)
        #expect(r.listing().map(\.name) == [name("svc")])
    }

    @Test func othersQueueInOrderUnlessTheyMayNot() throws {
        var r = registry()
        let first = try #require(change(r.register("svc", by: 1)))
        guard case .queued(let second, 1) = r.register("svc", by: 2, now: 7) else {
            Issue.record("client 2 should queue first")
            return
        }
        #expect(second.client == 2)
        guard case .queued(_, 2) = r.register("svc", by: 3) else {
            Issue.record("client 3 should queue second")
            return
        }
        #expect(r.queue(of: name("svc")).map(\.client) == [2, 3])
        // Asking again changes nothing: same place, same ticket.
        #expect(r.register("svc", by: 2) == .queued(second, position: 1))
        #expect(r.register("svc", by: 2, [.doNotQueue], canQueue: false) == .queued(second, position: 1))
        // The owner asking again is told it owns it.
        #expect(r.register("svc", by: 1) == .alreadyOwned(first.new!))
        // LIST shows the queue length.
        #expect(r.listing().first?.queued == 2)
    }

    @Test func doNotQueueOrNoPortToTellMeansAlreadyOwned() throws {
        var r = registry()
        let owner = try #require(change(r.register("svc", by: 1))).new!
        #expect(r.register("svc", by: 2, [.doNotQueue]) == .alreadyOwned(owner))
        #expect(r.register("svc", by: 2, canQueue: false) == .alreadyOwned(owner))
        #expect(r.queue(of: name("svc")).isEmpty)
    }

    @Test func releaseGivesTheNameToTheNextInLine() throws {
        var r = registry()
        let first = try #require(change(r.register("svc", by: 1))).new!
        guard case .queued(let second, _) = r.register("svc", by: 2, [.allowReplacement], now: 10) else {
            Issue.record("not queued")
            return
        }
        _ = r.register("svc", by: 3)
        guard case .released(let c) = r.release(name("svc"), client: 1, now: 50) else {
            Issue.record("the owner could not release")
            return
        }
        #expect(c.kind == .released)
        #expect(c.old == first)
        // The new owner is the queued one, owning since the hand-over.
        #expect(c.new?.client == 2)
        #expect(c.new?.ticket == second.ticket)
        #expect(c.new?.sinceMilliseconds == 50)
        #expect(c.new?.allowsReplacement == true)
        #expect(r.owner(of: name("svc"))?.client == 2)
        #expect(r.queue(of: name("svc")).map(\.client) == [3])
    }

    @Test func releaseByTheLastOwnerFreesTheName() throws {
        var r = registry()
        _ = r.register("svc", by: 1)
        guard case .released(let c) = r.release(name("svc"), client: 1, now: 0) else {
            Issue.record("not released")
            return
        }
        #expect(c.new == nil)
        #expect(r.owner(of: name("svc")) == nil)
        #expect(r.nameCount == 0)
        // Free again: anyone registers it.
        #expect(change(r.register("svc", by: 2))?.kind == .registered)
    }

    @Test func releaseByTheQueuedOthersAndStrangers() throws {
        var r = registry()
        let owner = try #require(change(r.register("svc", by: 1))).new!
        guard case .queued(let queued, _) = r.register("svc", by: 2) else {
            Issue.record("not queued")
            return
        }
        #expect(r.release(name("svc"), client: 2, now: 0) == .leftQueue(queued))
        #expect(r.queue(of: name("svc")).isEmpty)
        #expect(r.release(name("svc"), client: 3, now: 0) == .notOwner(owner))
        #expect(r.release(name("nothing"), client: 1, now: 0) == .notFound)
    }

    @Test func replacementNeedsBothSidesToAgree() throws {
        var r = registry()
        let stubborn = try #require(change(r.register("a", by: 1))).new!
        // The owner did not allow replacement: the request queues, or is refused.
        guard case .queued = r.register("a", by: 2, [.replaceExisting]) else {
            Issue.record("should queue")
            return
        }
        #expect(r.register("a", by: 3, [.replaceExisting, .doNotQueue]) == .alreadyOwned(stubborn))

        let lenient = try #require(change(r.register("b", by: 1, [.allowReplacement]))).new!
        // Without replace-existing nobody replaces.
        #expect(r.register("b", by: 2, [.doNotQueue]) == .alreadyOwned(lenient))
        let c = try #require(change(r.register("b", by: 2, [.replaceExisting], now: 9)))
        #expect(c.kind == .replaced)
        #expect(c.old == lenient)
        #expect(c.new?.client == 2)
        #expect(c.new?.sinceMilliseconds == 9)
        #expect(c.answeredLookups.isEmpty)
        // The replaced owner is out: it neither owns nor waits, and may not release.
        #expect(r.release(name("b"), client: 1, now: 0) == .notOwner(c.new!))
    }

    @Test func replacingFromTheQueueTakesTheQueuedPlace() throws {
        var r = registry(NameRegistryLimits(namesPerClient: 1))
        _ = r.register("b", by: 1, [.allowReplacement])
        guard case .queued = r.register("b", by: 2) else {
            Issue.record("not queued")
            return
        }
        // Client 2 is at its limit of one name, but this is that name.
        let c = try #require(change(r.register("b", by: 2, [.replaceExisting])))
        #expect(c.new?.client == 2)
        #expect(r.queue(of: name("b")).isEmpty)
    }

    // MARK: Clients going away

    @Test func aClientThatGoesReleasesEverythingItHeld() throws {
        var r = registry()
        _ = r.register("one", by: 1)
        _ = r.register("two", by: 1)
        _ = r.register("two", by: 2)  // queued behind 1
        _ = r.register("three", by: 2)
        guard case .queued(let waiting, _) = r.register("three", by: 1) else {
            Issue.record("not queued")
            return
        }
        let watchOwn = try r.watch(nil, client: 1).get()
        let watchOther = try r.watch(nil, client: 3).get()
        guard case .waiting(let lookup) = r.lookUp(name("four"), client: 1, until: at(100)) else {
            Issue.record("not waiting")
            return
        }

        let removal = r.removeClient(1, now: 77)
        #expect(removal.watches == [watchOwn])
        #expect(removal.lookups == [lookup])
        #expect(removal.queuedTickets == [waiting.ticket])
        #expect(removal.changes.map(\.name) == [name("one"), name("two")])
        #expect(removal.changes.allSatisfy { $0.kind == .released && $0.old?.client == 1 })
        #expect(removal.changes[0].new == nil)
        #expect(removal.changes[1].new?.client == 2)
        #expect(removal.changes[1].new?.sinceMilliseconds == 77)
        // Only the watchers that remain are told.
        #expect(removal.changes.allSatisfy { $0.watchers.all == [watchOther] })

        #expect(r.owner(of: name("one")) == nil)
        #expect(r.owner(of: name("two"))?.client == 2)
        #expect(r.queue(of: name("three")).isEmpty)
        #expect(r.pendingLookupCount == 0)
        #expect(r.watchCount == 1)
        #expect(r.clientCount == 2)
        #expect(!r.isKnown(1))
        // A second removal, or of a client never seen, does nothing.
        #expect(r.removeClient(1, now: 0) == Registry.ClientRemoval())
        #expect(r.removeClient(99, now: 0) == Registry.ClientRemoval())
    }

    @Test func aClientLeavingWithManyNamesLeavesTheListingInOrder() throws {
        var r = registry()
        // Client 1 holds every other name, client 2 the rest; client 3
        // waits for one of client 1's, which passes to it.
        // 100 names each: past the count from which the names leave in
        // one pass (`removeClient`).
        var limits = NameRegistryLimits()
        limits.namesPerClient = 1000
        r.limits = limits
        for i in 0..<200 { _ = r.register("n\(1000 + i)", by: i % 2 == 0 ? 1 : 2) }
        guard case .queued(_, 1) = r.register("n1010", by: 3) else {
            Issue.record("client 3 should queue")
            return
        }
        let removal = r.removeClient(1, now: 5)
        #expect(removal.changes.count == 100)
        let expected = (0..<200).filter { $0 % 2 == 1 || $0 == 10 }.map { name("n\(1000 + $0)") }
        #expect(r.listing().map(\.name) == expected)
        #expect(r.owner(of: name("n1010"))?.client == 3)
        // A freed name comes back in its place.
        _ = r.register("n1004", by: 2)
        #expect(r.listing().map(\.name) == (expected + [name("n1004")]).sorted())
        #expect(r.listing(after: name("n1003")).first.map(\.name) == name("n1004"))
    }

    @Test func compactingAfterAnExodusKeepsEverythingThatStays() throws {
        var limits = NameRegistryLimits()
        limits.clientsPerUID = 1000
        var r = Registry(limits: limits)
        for c: ClientID in 1...1000 {
            #expect(r.admit(c, uid: 1000) == nil)
            for n in 0..<10 { _ = r.register("c\(c).n\(n)", by: c) }
        }
        let all = try r.watch(nil, client: 1000).get()
        let one = try r.watch(name("c999.n3"), client: 1000).get()
        guard case .waiting(let lookup) = r.lookUp(name("later"), client: 999, until: at(100)) else {
            Issue.record("not waiting")
            return
        }
        for c: ClientID in 1...998 { _ = r.removeClient(c, now: 0) }
        let before = r.tableCapacity
        r.compact()
        // The storage shrank to what 2 clients and 20 names need...
        #expect(r.tableCapacity * 8 < before, "capacity \(before) -> \(r.tableCapacity)")
        // ...and everything that stayed is there, in byte order.
        #expect(r.clientCount == 2)
        #expect(r.nameCount == 20)
        #expect(r.listing().map(\.name) == [1000, 999].flatMap { c in (0..<10).map { name("c\(c).n\($0)") } })
        #expect(r.owner(of: name("c1000.n9"))?.client == 1000)
        #expect(r.watchCount == 2)
        guard case .registered(let later) = r.register("later", by: 1000) else {
            Issue.record("not registered")
            return
        }
        #expect(later.watchers.all == [all])
        #expect(later.answeredLookups.map(\.id) == [lookup.id])
        guard case .released(let released) = r.release(name("c999.n3"), client: 999, now: 0) else {
            Issue.record("not released")
            return
        }
        #expect(released.watchers.all == [all, one])
        // Compacting what is already compact changes nothing.
        let compacted = r.tableCapacity
        r.compact()
        #expect(r.tableCapacity == compacted)
    }

    @Test func theWholeQueueDrainsAsOwnersGo() throws {
        var r = registry()
        _ = r.register("svc", by: 1)
        _ = r.register("svc", by: 2)
        _ = r.register("svc", by: 3)
        #expect(r.removeClient(2, now: 0).changes.isEmpty, "a queued client going changes no owner")
        #expect(r.removeClient(1, now: 0).changes.first?.new?.client == 3)
        #expect(r.removeClient(3, now: 0).changes.first?.new == nil)
        #expect(r.nameCount == 0)
    }

    // MARK: Watches

    @Test func watchersOfTheNameAndOfAllNamesAreToldInOrder() throws {
        var r = registry()
        let all = try r.watch(nil, client: 3).get()
        let svc = try r.watch(name("svc"), client: 2).get()
        let other = try r.watch(name("other"), client: 2).get()
        let c = try #require(change(r.register("svc", by: 1)))
        #expect(c.watchers.all == [all, svc])
        #expect(change(r.register("other", by: 1))?.watchers.all == [all, other])
        r.unwatch(all)
        r.unwatch(all)  // twice is harmless
        guard case .released(let released) = r.release(name("svc"), client: 1, now: 0) else {
            Issue.record("not released")
            return
        }
        #expect(released.watchers.all == [svc])
        #expect(r.watchCount == 2)
    }

    // MARK: Lookups

    @Test func lookupsFindOrMissOrWait() throws {
        var r = registry()
        let owner = try #require(change(r.register("svc", by: 1))).new!
        #expect(r.lookUp(name("svc"), client: 2, until: nil) == .found(owner))
        #expect(r.lookUp(name("svc"), client: 2, until: at(5)) == .found(owner))
        #expect(r.lookUp(name("none"), client: 2, until: nil) == .notFound)
        guard case .waiting(let w) = r.lookUp(name("later"), client: 2, until: at(5)) else {
            Issue.record("not waiting")
            return
        }
        #expect(w.name == name("later"))
        #expect(w.client == 2)
        #expect(r.pendingLookupCount == 1)
    }

    @Test func aRegistrationAnswersTheLookupsWaitingForItOldestFirst() throws {
        var r = registry()
        var waiting: [PendingLookup] = []
        for (client, deadline) in [(ClientID(2), 50), (3, 10), (2, 30)] as [(ClientID, UInt64)] {
            guard case .waiting(let w) = r.lookUp(name("svc"), client: client, until: at(deadline)) else {
                Issue.record("not waiting")
                return
            }
            waiting.append(w)
        }
        guard case .waiting(let unrelated) = r.lookUp(name("other"), client: 2, until: at(20)) else {
            Issue.record("not waiting")
            return
        }
        let c = try #require(change(r.register("svc", by: 1)))
        #expect(c.answeredLookups == waiting)
        #expect(r.pendingLookupCount == 1)
        #expect(r.nextLookupDeadline == unrelated.deadline)
    }

    /// The deadline heap against the plain rule, over a seeded random run of
    /// lookups that wait, are answered, expire and go with their clients:
    /// the next deadline is always the earliest of those still waiting, and
    /// an expiry returns exactly the lookups due, earliest first.
    @Test func theNextDeadlineIsAlwaysTheEarliestOfTheLookupsWaiting() throws {
        var limits = NameRegistryLimits()
        limits.pendingLookupsPerClient = 1000
        limits.clientsPerUID = 1000
        var r = Registry(limits: limits)
        var rng = SplitMix64(seed: 13)
        var waiting: [LookupID: (deadline: MonotonicInstant, client: ClientID, name: PortName)] = [:]
        var now: UInt64 = 0
        var nextClient: ClientID = 1
        var clients: [ClientID] = []
        for _ in 0..<20 {
            #expect(r.admit(nextClient, uid: 1000) == nil)
            clients.append(nextClient)
            nextClient += 1
        }
        let owner: ClientID = 1_000_000  // never one of the clients that come and go
        #expect(r.admit(owner, uid: 1000) == nil)
        for step in 0..<5000 {
            switch rng.next() % 10 {
            case 0...5:
                let client = clients[Int(rng.next() % UInt64(clients.count))]
                let n = name("n\(rng.next() % 20)")
                let deadline = at(now + 1 + rng.next() % 500)
                if case .waiting(let w) = r.lookUp(n, client: client, until: deadline) { waiting[w.id] = (deadline, client, n) }
            case 6:
                // A name appears: its lookups are answered; then it goes again.
                let n = "n\(rng.next() % 20)"
                let c = try #require(change(r.register(n, by: owner)))
                for answered in c.answeredLookups { #expect(waiting.removeValue(forKey: answered.id) != nil) }
                _ = r.release(name(n), client: owner, now: 0)
            case 7:
                let i = Int(rng.next() % UInt64(clients.count))
                let gone = clients.remove(at: i)
                let removal = r.removeClient(gone, now: 0)
                for lookup in removal.lookups { #expect(waiting.removeValue(forKey: lookup.id) != nil) }
                #expect(r.admit(nextClient, uid: 1000) == nil)
                clients.append(nextClient)
                nextClient += 1
            default:
                now += rng.next() % 100
                let due = waiting.filter { $0.value.deadline <= at(now) }
                    .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }.map(\.key)
                #expect(r.expireLookups(now: at(now)).map(\.id) == due, "step \(step)")
                for id in due { waiting[id] = nil }
            }
            #expect(r.nextLookupDeadline == waiting.values.map(\.deadline).min(), "step \(step)")
            #expect(r.pendingLookupCount == waiting.count)
        }
    }

    @Test func lookupsExpireAtTheirDeadlineEarliestFirst() throws {
        var r = registry()
        var ids: [UInt64: LookupID] = [:]
        for deadline: UInt64 in [30, 10, 20] {
            guard case .waiting(let w) = r.lookUp(name("n\(deadline)"), client: 2, until: at(deadline)) else {
                Issue.record("not waiting")
                return
            }
            ids[deadline] = w.id
        }
        #expect(r.nextLookupDeadline == at(10))
        #expect(r.expireLookups(now: at(9)).isEmpty)
        #expect(r.expireLookups(now: at(20)).map(\.id) == [ids[10], ids[20]])
        #expect(r.nextLookupDeadline == at(30))
        #expect(r.expireLookups(now: at(1000)).map(\.id) == [ids[30]])
        #expect(r.nextLookupDeadline == nil)
        // An expired lookup is not answered by a later registration.
        #expect(change(r.register("n10", by: 1))?.answeredLookups == [])
    }

    // MARK: Handles

    @Test func anOwnersHandleStaysWithItFromTheQueueToTheName() throws {
        var r = registry()
        let first = try #require(change(r.register("svc", by: 1))).new!
        #expect(first.handle == "svc by 1")
        guard case .queued(let queued, _) = r.register("svc", by: 2) else {
            Issue.record("not queued")
            return
        }
        #expect(queued.handle == "svc by 2")
        // Asking again keeps the first handle.
        #expect(r.register(name("svc"), client: 2, credentials: who(102), options: [], now: 0, handle: "again")
            == .queued(queued, position: 1))
        // The owner's handle changes for its own registration only.
        #expect(r.updateOwner(of: name("svc"), ticket: first.ticket) { $0 += " with a socket" })
        #expect(!r.updateOwner(of: name("svc"), ticket: queued.ticket) { $0 = "wrong" })
        #expect(!r.updateOwner(of: name("none"), ticket: first.ticket) { $0 = "wrong" })
        #expect(r.owner(of: name("svc"))?.handle == "svc by 1 with a socket")
        guard case .released(let c) = r.release(name("svc"), client: 1, now: 0) else {
            Issue.record("not released")
            return
        }
        #expect(c.old?.handle == "svc by 1 with a socket", "the change hands the old owner's handle back")
        #expect(c.new?.handle == "svc by 2", "the promoted owner keeps the handle it queued with")
        #expect(r.owner(of: name("svc"))?.handle == "svc by 2")
    }

    @Test func watchAndLookupHandlesComeBackWithTheirChanges() throws {
        var r = registry()
        _ = try r.watch(nil, client: 3).get()
        guard case .waiting(let lookup) = r.lookUp(name("svc"), client: 2, until: at(10)) else {
            Issue.record("not waiting")
            return
        }
        #expect(lookup.handle == "lookup by 2")
        let c = try #require(change(r.register("svc", by: 1)))
        #expect(c.watchers.all.map { r.watch($0)?.handle } == ["watch by 3"])
        #expect(c.answeredLookups.map(\.handle) == ["lookup by 2"])
        guard case .waiting = r.lookUp(name("other"), client: 2, until: at(10)) else {
            Issue.record("not waiting")
            return
        }
        #expect(r.expireLookups(now: at(10)).map(\.handle) == ["lookup by 2"])
        #expect(r.isWatching(c.watchers.all[0]))
        r.unwatch(c.watchers.all[0])
        #expect(!r.isWatching(c.watchers.all[0]))
    }

    @Test func aClientsGroupsGoWithIt() {
        var r = registry()
        #expect(r.supplementaryGroups(of: 1) == nil)
        r.setSupplementaryGroups([10, 20], of: 1)
        r.setSupplementaryGroups([30], of: 99)  // unknown: ignored
        #expect(r.supplementaryGroups(of: 1) == [10, 20])
        #expect(r.supplementaryGroups(of: 99) == nil)
        _ = r.removeClient(1, now: 0)
        #expect(r.admit(1, uid: 1000) == nil)
        #expect(r.supplementaryGroups(of: 1) == nil, "a new connection with the same id starts afresh")
    }

    // MARK: Limits

    @Test func namesPerClientCountsOwnedAndQueued() throws {
        var r = registry(NameRegistryLimits(namesPerClient: 2))
        _ = r.register("a", by: 2)
        _ = r.register("a", by: 1)  // queued: counts
        _ = r.register("b", by: 1)
        #expect(r.register("c", by: 1) == .limit(.namesPerClient(2)))
        #expect(r.register("b", by: 3).isQueued)
        #expect(r.register("b", by: 1) == .alreadyOwned(r.owner(of: name("b"))!), "its own name is no new name")
        // Leaving a queue frees a place.
        _ = r.release(name("a"), client: 1, now: 0)
        #expect(change(r.register("c", by: 1)) != nil)
    }

    @Test func pendingLookupsPerClient() {
        var r = registry(NameRegistryLimits(pendingLookupsPerClient: 1))
        #expect(r.lookUp(name("x"), client: 1, until: at(1)).isWaiting)
        #expect(r.lookUp(name("y"), client: 1, until: at(1)) == .limit(.pendingLookupsPerClient(1)))
        #expect(r.lookUp(name("y"), client: 1, until: nil) == .notFound, "a lookup that does not wait is not limited")
        #expect(r.lookUp(name("y"), client: 2, until: at(1)).isWaiting, "the limit is per client")
        _ = r.expireLookups(now: at(1))
        #expect(r.lookUp(name("y"), client: 1, until: at(2)).isWaiting)
    }

    @Test func watchesPerClient() throws {
        var r = registry(NameRegistryLimits(watchesPerClient: 2))
        let first = try r.watch(nil, client: 1).get()
        _ = try r.watch(name("a"), client: 1).get()
        #expect(throws: LimitExceeded.watchesPerClient(2)) { try r.watch(nil, client: 1).get() }
        r.unwatch(first)
        _ = try r.watch(nil, client: 1).get()
    }

    @Test func clientsPerUID() {
        var r = Registry(limits: NameRegistryLimits(clientsPerUID: 2))
        #expect(r.admit(1, uid: 7) == nil)
        #expect(r.admit(2, uid: 7) == nil)
        #expect(r.admit(2, uid: 7) == nil, "a known client is not counted twice")
        #expect(r.admit(3, uid: 7) == .clientsPerUID(uid: 7, limit: 2))
        #expect(r.admit(3, uid: 8) == nil, "the limit is per uid")
        _ = r.removeClient(1, now: 0)
        #expect(r.admit(4, uid: 7) == nil)
        #expect(r.clientCount == 3)
        #expect(LimitExceeded.clientsPerUID(uid: 7, limit: 2).description == "uid 7 already has 2 clients connected")
    }

    @Test func clientsInAll() {
        var r = Registry(limits: NameRegistryLimits(clientsPerUID: 10, clients: 2))
        #expect(r.admit(1, uid: 7) == nil)
        #expect(r.admit(2, uid: 8) == nil)
        #expect(r.admit(3, uid: 9) == LimitExceeded.clients(2), "MaxClients counts every uid")
        _ = r.removeClient(1, now: 0)
        #expect(r.admit(3, uid: 9) == nil)
        #expect(LimitExceeded.clients(2).description == "portd already serves 2 clients")
    }

    @Test func anEighthOfTheClientsIsKeptForPrivilegedUIDs() {
        var r = Registry(limits: NameRegistryLimits(clientsPerUID: 100, clients: 16, privilegedUIDs: [0, 5]))
        #expect(r.limits.privilegedClientReserve == 2)
        for c in 1...7 { #expect(r.admit(ClientID(c), uid: 7) == nil) }
        for c in 8...14 { #expect(r.admit(ClientID(c), uid: 8) == nil) }
        #expect(r.admit(15, uid: 9) == LimitExceeded.unprivilegedClients(14), "the other uids have all but the reserve")
        #expect(r.admit(15, uid: 0) == nil, "root takes the reserve")
        #expect(r.admit(16, uid: 5) == nil, "so does portd's own uid")
        #expect(r.admit(17, uid: 0) == LimitExceeded.clients(16), "MaxClients still bounds everyone")
        _ = r.removeClient(15, now: 0)
        #expect(r.admit(17, uid: 9) == LimitExceeded.unprivilegedClients(14), "a privileged client's place is not the others'")
        _ = r.removeClient(1, now: 0)
        #expect(r.admit(17, uid: 9) == nil)
        // Privileged clients beyond the reserve take places of the pool:
        // what is left of MaxClients= is then the bound.
        var p = Registry(limits: NameRegistryLimits(clientsPerUID: 100, clients: 16, privilegedUIDs: [0]))
        for c in 1...10 { #expect(p.admit(ClientID(c), uid: 0) == nil) }
        for c in 11...16 { #expect(p.admit(ClientID(c), uid: 7) == nil) }
        #expect(p.admit(17, uid: 7) == LimitExceeded.clients(16))
        // The reserve at the smallest limits.
        #expect(NameRegistryLimits(clients: 1, privilegedUIDs: [0]).privilegedClientReserve == 0)
        #expect(NameRegistryLimits(clients: 2, privilegedUIDs: [0]).privilegedClientReserve == 1)
        #expect(NameRegistryLimits(clients: 1024, privilegedUIDs: [0]).privilegedClientReserve == 128)
        #expect(NameRegistryLimits(clients: 1024).privilegedClientReserve == 0, "no privileged uids, no reserve")
    }
}

private extension NameRegistry.RegisterOutcome {
    var isQueued: Bool {
        if case .queued = self { return true }
        return false
    }
}

private extension NameRegistry.LookupOutcome {
    var isWaiting: Bool {
        if case .waiting = self { return true }
        return false
    }

}

@Suite struct NameRegistryDescriptorTests {
    @Test func onlyRegistrationsThatGavePortdAPortCountAsItsDescriptors() {
        var limits = NameRegistryLimits()
        limits.descriptorsPerUID = 3
        var r = NameRegistry<Ported>(limits: limits)
        #expect(r.admit(1, uid: 1000) == nil)
        #expect(r.admit(2, uid: 1000) == nil)
        func register(_ n: String, client: ClientID = 1, port: Bool) -> NameRegistry<Ported>.RegisterOutcome {
            r.register(name(n), client: client, credentials: who(101), options: [], canQueue: port, now: 1, handle: port)
        }
        // Without a port, a name holds nothing of portd's: any number fit.
        for i in 0..<20 {
            guard case .registered = register("plain\(i)", port: false) else {
                Issue.record("plain\(i) refused")
                return
            }
        }
        // Two connections (2) and one name with a port (1) reach 3.
        guard case .registered = register("ported0", port: true) else {
            Issue.record("ported0 refused")
            return
        }
        guard case .limit(.descriptorsPerUID(uid: 1000, limit: 3)) = register("ported1", port: true) else {
            Issue.record("the fourth descriptor was not refused")
            return
        }
        guard case .registered = register("plain-after", port: false) else {
            Issue.record("a name without a port was refused")
            return
        }
        // Queued behind client 1 with a port: refused too; released, room again.
        guard case .limit = register("plain0", client: 2, port: true) else {
            Issue.record("a queue place with a port was not refused")
            return
        }
        guard case .released = r.release(name("ported0"), client: 1, now: 2) else {
            Issue.record("not released")
            return
        }
        guard case .queued = register("plain0", client: 2, port: true) else {
            Issue.record("no room after the release")
            return
        }
    }
}
