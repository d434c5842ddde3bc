// NameRegistry: the name server's state and rules, as plain values: no
// sockets, no run loop, no clock of its own (callers pass the time), so
// every rule is tested without a process (NameRegistryTests).
//
// What it holds: for each name, one owner and a FIFO queue of waiting
// owners (D-Bus semantics); the clients (connections to portd) and what each
// holds; watches (one name or all names); lookups waiting for a name to
// appear, each with a deadline. On each ownership, watch and waiting lookup
// hangs the handle the name server needs to act on it (where to send
// NAME_ACQUIRED, NAME_LOST, an event or an answer; the owner's socket
// file), as dbus-broker hangs an owner's connection on its ownership: the
// registry is generic over those handles (NameRegistryHandles), keeps each
// with its record, hands it back in its results and drops it with the
// record, and never looks inside, so the name server keeps no map of its own
// beside the registry.
//
// Invariants:
//   - a name is in `entries` exactly while it has an owner; an owner or a
//     queued owner is never the same client twice for one name;
//   - `sortedNames` is exactly the keys of `entries`, in byte order, so a
//     LIST page starts by binary search and costs O(page + log n), never a
//     sort of every name;
//   - a client's `names` is exactly the names it owns or waits for, and
//     counts against `namesPerClient`; its `lookups` and `watches` are
//     exactly its pending lookups and watches;
//   - a handle lives exactly as long as its record: whatever ends a
//     registration, a queue place, a watch or a lookup ends its handle;
//   - a lookup waits only for a name without an owner: the change that gives
//     the name an owner takes every lookup waiting for it (oldest first);
//   - every mutation that changes an owner returns an `OwnerChange` naming
//     the watchers to tell, computed after the mutation (a client that goes
//     is not told about its own departure);
//   - the registry never calls out: what to send to whom is in its results.

import PortCore

/// One connection to portd's control socket (`PCPortMessage.connectionID`).
typealias ClientID = UInt64

/// What the name server hangs on the registry's records; the registry
/// stores these values and hands them back, never looking inside.
protocol NameRegistryHandles {
    /// On an owner or a queued owner.
    associatedtype Owner: Sendable
    /// On a watch.
    associatedtype Watcher: Sendable
    /// On a lookup waiting for a name.
    associatedtype Lookup: Sendable
    /// Whether an owner's handle holds a descriptor of portd's (a port to
    /// tell it later), counted against the descriptor quotas.
    static func holdsDescriptor(_ owner: Owner) -> Bool
}

extension NameRegistryHandles {
    /// Counted, unless the handles say otherwise.
    static func holdsDescriptor(_ owner: Owner) -> Bool { true }
}

struct WatchID: Hashable, Comparable, Sendable {
    let raw: UInt64
    static func < (a: WatchID, b: WatchID) -> Bool { a.raw < b.raw }
}

struct LookupID: Hashable, Comparable, Sendable {
    let raw: UInt64
    static func < (a: LookupID, b: LookupID) -> Bool { a.raw < b.raw }
}

/// A per-client or per-uid limit that a request would exceed.
enum LimitExceeded: Error, Equatable, Sendable, CustomStringConvertible {
    case namesPerClient(Int)
    case pendingLookupsPerClient(Int)
    case watchesPerClient(Int)
    case clientsPerUID(uid: UInt32, limit: Int)
    case clients(Int)
    /// The clients of uids other than the privileged ones, together.
    case unprivilegedClients(Int)
    case descriptorsPerUID(uid: UInt32, limit: Int)
    case descriptors(Int)

    var description: String {
        switch self {
        case .namesPerClient(let n): "a client may own or wait for at most \(n) names"
        case .pendingLookupsPerClient(let n): "a client may have at most \(n) lookups waiting"
        case .watchesPerClient(let n): "a client may have at most \(n) watches"
        case .clientsPerUID(let uid, let n): "uid \(uid) already has \(n) clients connected"
        case .clients(let n): "portd already serves \(n) clients"
        case .unprivilegedClients(let n):
            "portd already serves \(n) clients of uids other than root and its own (the rest of MaxClients= is kept for those)"
        case .descriptorsPerUID(let uid, let n):
            "uid \(uid) already has portd hold \(n) descriptors (connections, watches, registrations)"
        case .descriptors(let n): "portd already holds \(n) descriptors for its clients"
        }
    }
}

/// Bounds on what one client (or one uid) may hold.
struct NameRegistryLimits: Equatable, Sendable {
    /// Names a client owns or waits for in a queue.
    var namesPerClient = 512
    /// Lookups of a client waiting for a name.
    var pendingLookupsPerClient = 64
    /// Watches of a client.
    var watchesPerClient = 64
    /// Clients (connections) of one uid.
    var clientsPerUID = 256
    /// Clients (connections) in all, those of `privilegedUIDs` included;
    /// the other uids together get `clients - privilegedClientReserve`.
    var clients = 1024
    /// Descriptors portd may hold for one uid: its connections, watches
    /// and registrations that gave portd a port to tell them later (owned
    /// or queued) each count one. Derived from
    /// RLIMIT_NOFILE (DescriptorBudget); unbounded by default.
    var descriptorsPerUID = Int.max
    /// Descriptors portd may hold for all the uids that are not
    /// `privilegedUIDs` together.
    var descriptors = Int.max
    /// Descriptors portd may hold for all clients, privileged uids included:
    /// what it keeps for itself is the rest.
    var descriptorsInAll = Int.max
    /// uids held only to `descriptorsInAll` (root, portd's own uid), and
    /// to `clients` without the reserve below.
    var privilegedUIDs: Set<UInt32> = []

    /// Of `clients`, the connections kept for `privilegedUIDs`: an eighth,
    /// at least one while `clients` is 2 or more, none without privileged
    /// uids. So uids that fill every connection they may (ClientsPerUID=
    /// each) never lock root out.
    var privilegedClientReserve: Int {
        privilegedUIDs.isEmpty ? 0 : min(clients - 1, max(1, clients / 8))
    }
}

struct NameRegistry<Handles: NameRegistryHandles> {
    typealias Limits = NameRegistryLimits

    /// A client's claim on a name: it owns the name, or waits in its queue
    /// (dbus-broker's NameOwnership, between a name and its owner).
    struct Ownership: Sendable {
        let client: ClientID
        /// Who asked, as the kernel reported it (SCM_CREDENTIALS).
        let credentials: Credentials
        /// Since when it owns the name, Unix milliseconds; while queued, when it asked.
        let sinceMilliseconds: UInt64
        /// It accepts being replaced by a request with the option `replaceExisting`.
        let allowsReplacement: Bool
        /// Identifies the registration request, from the queue to the name.
        let ticket: UInt64
        /// What the name server hung on it (`register`, `updateOwner`).
        var handle: Handles.Owner
        /// The host(s) the owner serves the name for, as it said when it
        /// registered (a bridge's import, `remote=`); nil for a local name.
        var remote: String? = nil

        /// The process as the protocol reports an owner.
        var process: NameOwner.Process { NameOwner.Process(pid: credentials.pid, uid: credentials.uid, client: client) }
    }

    /// A watch of one name, or of every name.
    struct Watch: Sendable {
        let id: WatchID
        let client: ClientID
        /// The uid its client was admitted as: the uid its events count against.
        let uid: UInt32
        /// nil: every name.
        let name: PortName?
        let handle: Handles.Watcher
    }

    /// A lookup waiting for a name to get an owner.
    struct PendingLookup: Sendable {
        let id: LookupID
        let client: ClientID
        let name: PortName
        let deadline: MonotonicInstant
        /// Where its answer goes.
        let handle: Handles.Lookup
    }

    /// A name changed owner: what watchers are told (NAME_OWNER_CHANGED).
    struct OwnerChange: Sendable {
        /// registered (`old` is nil), released (`new` is the next queued
        /// owner, or nil), replaced (`new` took it from `old`, which allowed
        /// replacement).
        typealias Kind = NameServerProtocol.OwnerEvent

        let name: PortName
        let kind: Kind
        let old: Ownership?
        let new: Ownership?
        /// The watches to tell (`WatcherIDs`): those of every name and those
        /// of this name, as they were at the change. O(1) to take, whatever
        /// their number: the name server tells them over later passes.
        let watchers: WatcherIDs
        /// How many of `watchers` each uid holds, in two tables shared with
        /// the registry (copy on write): what the change's events cost each
        /// receiving uid, taken in O(1).
        let watcherUIDs: WatcherUIDs
        /// Lookups that were waiting for the name: `new` answers them.
        let answeredLookups: [PendingLookup]

        /// The change as NAME_OWNER_CHANGED reports it.
        var reported: NameOwnerChange {
            NameOwnerChange(name: name.value, event: .known(kind), oldOwner: old?.process, newOwner: new?.process)
        }
    }

    /// The watches told of one change, in the order they were made (ids
    /// grow): two sorted arrays shared with the registry until it changes
    /// them (copy on write), so taking them costs nothing per watch.
    struct WatcherIDs: Equatable, Sendable {
        let ofAllNames: [WatchID]
        let ofTheName: [WatchID]

        var count: Int { ofAllNames.count + ofTheName.count }
        var isEmpty: Bool { count == 0 }

        /// The id after `position` in the order the watches were made (a
        /// merge of the two arrays; a position is an index into each, (0, 0)
        /// first), and the position after it; nil after the last.
        func next(after position: (Int, Int)) -> (id: WatchID, position: (Int, Int))? {
            let (i, j) = position
            if i < ofAllNames.count, j >= ofTheName.count || ofAllNames[i] < ofTheName[j] {
                return (ofAllNames[i], (i + 1, j))
            }
            if j < ofTheName.count { return (ofTheName[j], (i, j + 1)) }
            return nil
        }

        /// Every id, in the order the watches were made.
        var all: [WatchID] {
            var ids: [WatchID] = []
            var position = (0, 0)
            while let (id, next) = next(after: position) {
                ids.append(id)
                position = next
            }
            return ids
        }
    }

    /// The watches of one change counted by uid: those of every name and
    /// those of the name.
    struct WatcherUIDs: Equatable, Sendable {
        let ofAllNames: [UInt32: Int]
        let ofTheName: [UInt32: Int]

        /// Each uid with its count (a uid in both tables comes twice).
        func forEach(_ body: (UInt32, Int) -> Void) {
            for (uid, n) in ofAllNames { body(uid, n) }
            for (uid, n) in ofTheName { body(uid, n) }
        }
    }

    enum RegisterOutcome: Sendable {
        /// The requester owns the name now (`change.new`).
        case registered(OwnerChange)
        /// The requester waits in the queue, at `position` (1 is next); a
        /// client already waiting is told so again, whatever its options,
        /// and keeps the handle it gave first.
        case queued(Ownership, position: Int)
        /// Someone owns the name (possibly the requester itself) and the
        /// request may not queue or replace.
        case alreadyOwned(Ownership)
        case limit(LimitExceeded)
    }

    enum ReleaseOutcome: Sendable {
        /// The requester owned the name and let it go.
        case released(OwnerChange)
        /// The requester only waited in the queue and left it.
        case leftQueue(Ownership)
        /// Someone else owns the name and the requester does not wait for it.
        case notOwner(Ownership)
        /// Nobody owns the name.
        case notFound
    }

    enum LookupOutcome: Sendable {
        case found(Ownership)
        case notFound
        /// Waiting; the change that registers the name answers it, or
        /// `expireLookups` when the deadline passes.
        case waiting(PendingLookup)
        case limit(LimitExceeded)
    }

    /// What went with a client (its handles with it).
    struct ClientRemoval: Sendable {
        /// The uid the client was admitted as (nil: there was no such client).
        var uid: UInt32?
        var changes: [OwnerChange] = []
        var lookups: [PendingLookup] = []
        var watches: [WatchID] = []
        /// The tickets of its queued registrations.
        var queuedTickets: [UInt64] = []
    }

    private struct Entry {
        var owner: Ownership
        var queue: [Ownership]
    }

    private struct Client {
        let uid: UInt32
        var names: Set<PortName> = []
        /// How many of `names` hold a descriptor of portd's (their
        /// handle's port: `Handles.holdsDescriptor`).
        var namesHoldingDescriptors = 0
        var lookups: Set<LookupID> = []
        var watches: Set<WatchID> = []
        /// The supplementary groups of the process that made the connection,
        /// once the name server read them (`setSupplementaryGroups`).
        var supplementaryGroups: [UInt32]?
        /// The groups its last request was judged with, and that request's
        /// primary gid (`judgedGroups`).
        var judged: (gid: UInt32, groups: [UInt32])?
    }

    /// Replaced on reload; counts already admitted stay.
    var limits: Limits
    private var entries: [PortName: Entry] = [:] {
        // Any change ends the answer `lookUp` kept.
        didSet { lastFound = nil }
    }
    /// The name `lookUp` last found, and its owner then: asked again (a
    /// client looking the same name up again and again), `lookUp` answers
    /// without hashing the name (700 of a LOOKUP's instructions). Every
    /// change of `entries` clears it, so it always says what `entries`
    /// says, and it holds nothing `entries` does not hold.
    private var lastFound: (name: PortName, owner: Ownership)?
    /// The keys of `entries`, in byte order (an insertion or removal moves
    /// the tail: a memmove, no sort).
    private var sortedNames: [PortName] = []
    private var clients: [ClientID: Client] = [:]
    private var clientsByUID: [UInt32: Int] = [:]
    /// Sorted: ids grow, so a new watch goes at the end.
    private var watchesOfAllNames: [WatchID] = []
    /// Each sorted likewise.
    private var watchesByName: [PortName: [WatchID]] = [:]
    private var watches: [WatchID: Watch] = [:]
    /// The watches of every name by uid, and of each name by uid: what a
    /// change's events cost each receiving uid (`OwnerChange.watcherUIDs`).
    private var watchUIDsOfAllNames: [UInt32: Int] = [:]
    private var watchUIDsByName: [PortName: [UInt32: Int]] = [:]
    private var lookups: [LookupID: PendingLookup] = [:]
    /// The lookups waiting for each name (oldest first: the smallest ids).
    private var lookupsByName: [PortName: Set<LookupID>] = [:]
    /// A binary min-heap of the waiting lookups' deadlines, earliest first
    /// (ties by id): the next deadline in O(1) and each expiry in
    /// O(log n), instead of a scan of every lookup on each LOOKUP that
    /// waits, each change and each timer. Entries are deleted lazily: one
    /// whose lookup ended (answered, its client gone) is dropped when it
    /// comes to the top, and the heap is rebuilt from `lookups` when such
    /// entries are more than half of it.
    private var deadlines: [(deadline: MonotonicInstant, id: LookupID)] = []
    private var nextID: UInt64 = 1

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// How many elements the tables have room for (their storage, for
    /// tests of `compact()`).
    var tableCapacity: Int {
        entries.capacity + sortedNames.capacity + clients.capacity + clientsByUID.capacity
            + watchesOfAllNames.capacity + watchesByName.capacity + watches.capacity + lookups.capacity
            + lookupsByName.capacity + deadlines.capacity
    }

    /// Gives back the storage the tables keep from when they were larger
    /// (a Swift dictionary, set or array never shrinks by itself): each one
    /// filled to at most a quarter of its capacity is copied into one that
    /// fits. O(size); called before freed heap goes back to the kernel.
    mutating func compact() {
        func fitted<K, V>(_ d: inout [K: V]) {
            guard d.capacity > 64, d.count * 4 < d.capacity else { return }
            var fresh = [K: V](minimumCapacity: d.count)
            for (k, v) in d { fresh[k] = v }
            d = fresh
        }
        func fitted<E>(_ s: inout Set<E>) {
            guard s.capacity > 64, s.count * 4 < s.capacity else { return }
            var fresh = Set<E>(minimumCapacity: s.count)
            for e in s { fresh.insert(e) }
            s = fresh
        }
        fitted(&entries)
        fitted(&clients)
        fitted(&clientsByUID)
        if watchesOfAllNames.capacity > 64, watchesOfAllNames.count * 4 < watchesOfAllNames.capacity {
            var fresh: [WatchID] = []
            fresh.reserveCapacity(watchesOfAllNames.count)
            fresh.append(contentsOf: watchesOfAllNames)
            watchesOfAllNames = fresh
        }
        fitted(&watchesByName)
        fitted(&watchUIDsByName)
        fitted(&watches)
        fitted(&lookups)
        fitted(&lookupsByName)
        if deadlines.capacity > 64, deadlines.count * 4 < deadlines.capacity {
            var fresh: [(deadline: MonotonicInstant, id: LookupID)] = []
            fresh.reserveCapacity(deadlines.count)
            fresh.append(contentsOf: deadlines)
            deadlines = fresh
        }
        if sortedNames.capacity > 64, sortedNames.count * 4 < sortedNames.capacity {
            var fresh: [PortName] = []
            fresh.reserveCapacity(sortedNames.count)
            fresh.append(contentsOf: sortedNames)
            sortedNames = fresh
        }
    }

    // MARK: Reading

    /// Clients admitted and not yet removed.
    var clientCount: Int { clients.count }
    /// Names with an owner.
    var nameCount: Int { entries.count }
    /// Lookups waiting for a name.
    var pendingLookupCount: Int { lookups.count }
    /// Watches in force.
    var watchCount: Int { watches.count }

    func isKnown(_ client: ClientID) -> Bool { clients[client] != nil }

    /// Whether the watch `id` is still in force.
    func isWatching(_ id: WatchID) -> Bool { watches[id] != nil }

    /// The watch `id`, while it is in force.
    func watch(_ id: WatchID) -> Watch? { watches[id] }

    func owner(of name: PortName) -> Ownership? { entries[name]?.owner }

    /// The owners waiting for `name`, next first.
    func queue(of name: PortName) -> [Ownership] { entries[name]?.queue ?? [] }

    /// Every owned name in byte order, with its owner and queue length.
    func listing() -> [(name: PortName, owner: Ownership, queued: Int)] {
        sortedNames.map { ($0, entries[$0]!.owner, entries[$0]!.queue.count) }
    }

    /// A LIST line's facts about an owned name.
    struct Listed {
        let name: PortName
        let owner: NameOwner.Process
        let sinceMilliseconds: UInt64
        let queued: Int
        let remote: String?
    }

    /// The owned names that sort after `after` (every one when nil), in
    /// byte order, each with its owner, since when and queue length,
    /// computed as the caller reads them: O(log n) to start, O(1) a name
    /// (no owner record or handle is copied).
    func listing(after: PortName?) -> LazyMapSequence<ArraySlice<PortName>, Listed> {
        let start = after.map { insertionIndex(of: $0, orAfter: true) } ?? 0
        return sortedNames[start...].lazy.map { [entries] name in
            entries[name].map { entry in
                Listed(
                    name: name, owner: entry.owner.process,
                    sinceMilliseconds: entry.owner.sinceMilliseconds, queued: entry.queue.count, remote: entry.owner.remote)
            }!
        }
    }

    /// The owned names that sort after `after` (every one when nil), in
    /// byte order: O(log n) to find. `listed(_:)` says the rest of a name
    /// the caller shows.
    func namesInOrder(after: PortName?) -> ArraySlice<PortName> {
        sortedNames[(after.map { insertionIndex(of: $0, orAfter: true) } ?? 0)...]
    }

    /// A LIST line's facts about `name`, nil when it has no owner.
    func listed(_ name: PortName) -> Listed? {
        entries[name].map { entry in
            Listed(
                name: name, owner: entry.owner.process, sinceMilliseconds: entry.owner.sinceMilliseconds,
                queued: entry.queue.count, remote: entry.owner.remote)
        }
    }

    /// Where `name` is, or would go, in `sortedNames`; with `orAfter`, the
    /// index after it when it is there.
    private func insertionIndex(of name: PortName, orAfter: Bool = false) -> Int {
        var low = 0
        var high = sortedNames.count
        while low < high {
            let mid = (low + high) / 2
            if sortedNames[mid] < name || (orAfter && sortedNames[mid] == name) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Adds an entry for a name that had none, keeping `sortedNames`.
    private mutating func addEntry(_ name: PortName, _ entry: Entry) {
        entries[name] = entry
        sortedNames.insert(name, at: insertionIndex(of: name))
    }

    /// Records that `client` owns or waits for `name` through `ownership`.
    private mutating func addName(_ name: PortName, to client: ClientID, _ ownership: Ownership) {
        guard clients[client]?.names.insert(name).inserted == true else { return }
        if Handles.holdsDescriptor(ownership.handle) { clients[client]!.namesHoldingDescriptors += 1 }
    }

    /// Records that `client` no longer owns or waits for `name` (it did
    /// through `ownership`).
    private mutating func removeName(_ name: PortName, from client: ClientID, _ ownership: Ownership) {
        guard clients[client]?.names.remove(name) != nil else { return }
        if Handles.holdsDescriptor(ownership.handle) { clients[client]!.namesHoldingDescriptors -= 1 }
    }

    /// Removes the entry of `name`, and the name from `sortedNames` unless
    /// the caller takes it out itself (`removeClient`, in one pass).
    private mutating func removeEntry(_ name: PortName, keepingSortedName: Bool = false) {
        guard entries.removeValue(forKey: name) != nil else { return }
        if !keepingSortedName { removeSortedName(name) }
    }

    private mutating func removeSortedName(_ name: PortName) {
        let i = insertionIndex(of: name)
        if i < sortedNames.count, sortedNames[i] == name { sortedNames.remove(at: i) }
    }

    /// The earliest deadline of a waiting lookup (entries of lookups that
    /// ended are dropped from the top of the heap on the way).
    var nextLookupDeadline: MonotonicInstant? {
        mutating get {
            dropEndedDeadlines()
            return deadlines.first?.deadline
        }
    }

    // MARK: The deadline heap

    private static func precedes(
        _ a: (deadline: MonotonicInstant, id: LookupID), _ b: (deadline: MonotonicInstant, id: LookupID)
    ) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }

    private mutating func pushDeadline(_ entry: (deadline: MonotonicInstant, id: LookupID)) {
        deadlines.append(entry)
        var i = deadlines.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.precedes(deadlines[i], deadlines[parent]) else { break }
            deadlines.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func popDeadline() {
        let last = deadlines.removeLast()
        guard !deadlines.isEmpty else { return }
        deadlines[0] = last
        siftDown(from: 0)
    }

    private mutating func siftDown(from start: Int) {
        var i = start
        while true {
            let left = 2 * i + 1
            let right = left + 1
            var first = i
            if left < deadlines.count, Self.precedes(deadlines[left], deadlines[first]) { first = left }
            if right < deadlines.count, Self.precedes(deadlines[right], deadlines[first]) { first = right }
            if first == i { return }
            deadlines.swapAt(i, first)
            i = first
        }
    }

    /// Drops the entries of ended lookups from the top; rebuilds the heap
    /// from the waiting lookups when most of it is such entries.
    private mutating func dropEndedDeadlines() {
        if deadlines.count > 64, deadlines.count > 2 * lookups.count {
            deadlines = lookups.values.map { ($0.deadline, $0.id) }
            for i in stride(from: deadlines.count / 2 - 1, through: 0, by: -1) { siftDown(from: i) }
        }
        while let top = deadlines.first, lookups[top.id] == nil { popDeadline() }
    }

    // MARK: Descriptors

    /// Descriptors portd holds for the client `record`: its connection, one
    /// per watch, one per name it owns or waits for with a notification
    /// port (a name registered without one holds nothing of portd's: its
    /// listening socket went to the client, its socket file is a path).
    private static func descriptors(of record: Client) -> Int {
        1 + record.watches.count + record.namesHoldingDescriptors
    }

    /// The quota one more descriptor for `uid` would break, if any.
    /// O(clients): at most MaxClients= records.
    func descriptorQuota(uid: UInt32) -> LimitExceeded? {
        let privileged = limits.privilegedUIDs.contains(uid)
        var ofUID = 0
        var ofUnprivileged = 0
        var inAll = 0
        for record in clients.values {
            let n = Self.descriptors(of: record)
            inAll += n
            if record.uid == uid { ofUID += n }
            if !limits.privilegedUIDs.contains(record.uid) { ofUnprivileged += n }
        }
        if inAll >= limits.descriptorsInAll { return .descriptors(limits.descriptorsInAll) }
        if privileged { return nil }
        if ofUID >= limits.descriptorsPerUID { return .descriptorsPerUID(uid: uid, limit: limits.descriptorsPerUID) }
        if ofUnprivileged >= limits.descriptors { return .descriptors(limits.descriptors) }
        return nil
    }

    // MARK: Clients

    /// Admits `client` (a new connection of `uid`) unless its uid has
    /// `clientsPerUID` clients already, portd has `clients`, or, for a uid
    /// that is not privileged, the other uids have all but the privileged
    /// reserve. Admitting a known client does nothing.
    mutating func admit(_ client: ClientID, uid: UInt32) -> LimitExceeded? {
        if clients[client] != nil { return nil }
        if clients.count >= limits.clients { return .clients(limits.clients) }
        if !limits.privilegedUIDs.contains(uid) {
            var privileged = 0
            for p in limits.privilegedUIDs { privileged += clientsByUID[p, default: 0] }
            let pool = limits.clients - limits.privilegedClientReserve
            if clients.count - privileged >= pool { return .unprivilegedClients(pool) }
        }
        let count = clientsByUID[uid, default: 0]
        if count >= limits.clientsPerUID { return .clientsPerUID(uid: uid, limit: limits.clientsPerUID) }
        if let exceeded = descriptorQuota(uid: uid) { return exceeded }
        clientsByUID[uid] = count + 1
        clients[client] = Client(uid: uid)
        return nil
    }

    /// The supplementary groups recorded for `client`, nil when none were.
    func supplementaryGroups(of client: ClientID) -> [UInt32]? { clients[client]?.supplementaryGroups }

    /// The groups a request of `client` with primary gid `gid` was last
    /// judged with (`setJudgedGroups`), nil when none was or with another gid.
    func judgedGroups(of client: ClientID, gid: UInt32) -> [UInt32]? {
        guard let judged = clients[client]?.judged, judged.gid == gid else { return nil }
        return judged.groups
    }

    /// Records the groups a request of `client` with primary gid `gid` is
    /// judged with: a function of `gid` and the supplementary groups, which
    /// are read once per connection, so the same again for that gid.
    mutating func setJudgedGroups(_ groups: [UInt32], gid: UInt32, of client: ClientID) {
        clients[client]?.judged = (gid, groups)
    }

    /// Records the supplementary groups of the process that made `client`
    /// (read once per connection). Unknown clients are ignored.
    mutating func setSupplementaryGroups(_ groups: [UInt32], of client: ClientID) {
        clients[client]?.supplementaryGroups = groups
    }

    /// Removes `client` and everything it held: its watches and lookups
    /// end, it leaves every queue, and each name it owned goes to the next
    /// queued owner or becomes free. `now` dates the new owners.
    mutating func removeClient(_ client: ClientID, now: UInt64) -> ClientRemoval {
        guard let record = clients.removeValue(forKey: client) else { return ClientRemoval() }
        if let n = clientsByUID[record.uid] { clientsByUID[record.uid] = n > 1 ? n - 1 : nil }
        var removal = ClientRemoval(uid: record.uid)
        // The client's watches of every name leave their array in one pass
        // when they are many (each removal alone moves the array's tail).
        let inOnePass = record.watches.count > 64
        var leavingAllNames = false
        for id in record.watches.sorted() {
            if inOnePass, watches[id]?.name == nil { leavingAllNames = true }
            dropWatch(id, keepingAllNamesEntry: inOnePass)
            removal.watches.append(id)
        }
        if leavingAllNames { watchesOfAllNames.removeAll { record.watches.contains($0) } }
        for id in record.lookups.sorted() {
            if let lookup = dropLookup(id) { removal.lookups.append(lookup) }
        }
        let names = record.names.sorted()
        for name in names where entries[name]?.owner.client != client {
            guard var entry = entries[name], let i = entry.queue.firstIndex(where: { $0.client == client }) else {
                continue
            }
            removal.queuedTickets.append(entry.queue.remove(at: i).ticket)
            entries[name] = entry
        }
        // Names that lose their entry leave `sortedNames` together below:
        // one move of its tail per name made a client leaving with k of n
        // names cost O(k·n).
        var leaving: [PortName] = []
        for name in names where entries[name]?.owner.client == client {
            let change = removeOwner(of: name, now: now, keepingSortedName: true)
            if change.new == nil { leaving.append(name) }  // no one was queued: the entry went
            removal.changes.append(change)
        }
        if !leaving.isEmpty {
            // One removal moves the tail with a memmove (16 bytes per name
            // moved, tens of bytes a nanosecond); the one pass below costs
            // about 30 instructions per name of the array (callgrind), so it
            // pays only for many names: from 64 on (an estimate).
            if leaving.count <= 64 {
                for name in leaving { removeSortedName(name) }
            } else {
                // Found by binary search, removed in one pass that moves
                // each remaining name at most once (no hashing of names).
                var places: [Range<Int>] = []
                places.reserveCapacity(leaving.count)
                for name in leaving {
                    let i = insertionIndex(of: name)
                    if i < sortedNames.count, sortedNames[i] == name { places.append(i..<i + 1) }
                }
                sortedNames.removeSubranges(RangeSet(places))
            }
        }
        return removal
    }

    // MARK: Names

    /// A REGISTER of `name` by `client`, hanging `handle` on the new
    /// ownership or queue place. `canQueue` is false when the request gave
    /// no port to tell it later (it is then treated as `doNotQueue`). `now`
    /// (Unix ms) dates the registration.
    mutating func register(
        _ name: PortName, client: ClientID, credentials: Credentials, options: RegistrationOptions,
        canQueue: Bool = true, now: UInt64, handle: Handles.Owner, remote: String? = nil
    ) -> RegisterOutcome {
        // No copy of the client's record is held: a name is added in place
        // (`clients[client]!.names`), so its set is never copied (a copy
        // made each REGISTER quadratic in the names a client holds).
        guard let uid = clients[client]?.uid else { preconditionFailure("admit client \(client) first") }
        let candidate = Ownership(
            client: client, credentials: credentials, sinceMilliseconds: now,
            allowsReplacement: options.contains(.allowReplacement), ticket: takeID(), handle: handle, remote: remote)
        guard var entry = entries[name] else {
            if clients[client]!.names.count >= limits.namesPerClient { return .limit(.namesPerClient(limits.namesPerClient)) }
            if Handles.holdsDescriptor(handle), let exceeded = descriptorQuota(uid: uid) { return .limit(exceeded) }
            addName(name, to: client, candidate)
            addEntry(name, Entry(owner: candidate, queue: []))
            let answered = takeLookups(waitingFor: name)
            return .registered(
                OwnerChange(
                    name: name, kind: .registered, old: nil, new: candidate, watchers: watchers(of: name), watcherUIDs: watcherUIDs(of: name),
                    answeredLookups: answered))
        }
        if entry.owner.client == client { return .alreadyOwned(entry.owner) }
        let queuedAt = entry.queue.firstIndex { $0.client == client }
        if options.contains(.replaceExisting) && entry.owner.allowsReplacement {
            if queuedAt == nil && clients[client]!.names.count >= limits.namesPerClient {
                return .limit(.namesPerClient(limits.namesPerClient))
            }
            if queuedAt == nil, Handles.holdsDescriptor(handle), let exceeded = descriptorQuota(uid: uid) {
                return .limit(exceeded)
            }
            if let queuedAt { removeName(name, from: client, entry.queue.remove(at: queuedAt)) }
            let old = entry.owner
            removeName(name, from: old.client, old)
            addName(name, to: client, candidate)
            entry.owner = candidate
            entries[name] = entry
            return .registered(
                OwnerChange(
                    name: name, kind: .replaced, old: old, new: candidate, watchers: watchers(of: name), watcherUIDs: watcherUIDs(of: name),
                    answeredLookups: []))
        }
        if let queuedAt { return .queued(entry.queue[queuedAt], position: queuedAt + 1) }
        if options.contains(.doNotQueue) || !canQueue { return .alreadyOwned(entry.owner) }
        if clients[client]!.names.count >= limits.namesPerClient { return .limit(.namesPerClient(limits.namesPerClient)) }
        if Handles.holdsDescriptor(handle), let exceeded = descriptorQuota(uid: uid) { return .limit(exceeded) }
        addName(name, to: client, candidate)
        entry.queue.append(candidate)
        entries[name] = entry
        return .queued(candidate, position: entry.queue.count)
    }

    /// Changes the handle of `name`'s owner, if that is still the
    /// registration `ticket`; returns whether it was.
    @discardableResult
    mutating func updateOwner(of name: PortName, ticket: UInt64, _ update: (inout Handles.Owner) -> Void) -> Bool {
        guard entries[name]?.owner.ticket == ticket else { return false }
        update(&entries[name]!.owner.handle)
        return true
    }

    /// A RELEASE of `name` by `client` (also used when an owner turns out
    /// unreachable). `now` dates the next owner.
    mutating func release(_ name: PortName, client: ClientID, now: UInt64) -> ReleaseOutcome {
        guard var entry = entries[name] else { return .notFound }
        if entry.owner.client == client { return .released(removeOwner(of: name, now: now)) }
        guard let i = entry.queue.firstIndex(where: { $0.client == client }) else { return .notOwner(entry.owner) }
        let left = entry.queue.remove(at: i)
        entries[name] = entry
        removeName(name, from: client, left)
        return .leftQueue(left)
    }

    /// The owner leaves `name`: the next queued owner gets it, dated `now`.
    private mutating func removeOwner(of name: PortName, now: UInt64, keepingSortedName: Bool = false) -> OwnerChange {
        guard var entry = entries[name] else { preconditionFailure("\(name) has no owner") }
        let old = entry.owner
        removeName(name, from: old.client, old)
        var new: Ownership?
        if !entry.queue.isEmpty {
            let next = entry.queue.removeFirst()
            let promoted = Ownership(
                client: next.client, credentials: next.credentials, sinceMilliseconds: now,
                allowsReplacement: next.allowsReplacement, ticket: next.ticket, handle: next.handle)
            entry.owner = promoted
            entries[name] = entry
            new = promoted
        } else {
            removeEntry(name, keepingSortedName: keepingSortedName)
        }
        return OwnerChange(
            name: name, kind: .released, old: old, new: new, watchers: watchers(of: name), watcherUIDs: watcherUIDs(of: name), answeredLookups: [])
    }

    // MARK: Lookups

    /// A LOOKUP of `name` by `client`: found, or not found, or, with a
    /// deadline and a handle for its answer, waiting for the name until then.
    /// `answersQueued`: lookups of the client that were answered but whose
    /// answers are not sent yet; they count as waiting.
    mutating func lookUp(
        _ name: PortName, client: ClientID, waitUntil waiting: (deadline: MonotonicInstant, handle: Handles.Lookup)?,
        answersQueued: Int = 0
    ) -> LookupOutcome {
        if let last = lastFound, last.name == name { return .found(last.owner) }
        if let owner = entries[name]?.owner {
            lastFound = (name, owner)
            return .found(owner)
        }
        guard let waiting else { return .notFound }
        guard var record = clients[client] else { preconditionFailure("admit client \(client) first") }
        if record.lookups.count + answersQueued >= limits.pendingLookupsPerClient {
            return .limit(.pendingLookupsPerClient(limits.pendingLookupsPerClient))
        }
        let lookup = PendingLookup(
            id: LookupID(raw: takeID()), client: client, name: name, deadline: waiting.deadline, handle: waiting.handle)
        record.lookups.insert(lookup.id)
        clients[client] = record
        lookups[lookup.id] = lookup
        lookupsByName[name, default: []].insert(lookup.id)
        pushDeadline((lookup.deadline, lookup.id))
        return .waiting(lookup)
    }

    /// Removes and returns the lookups whose deadline is at or before `now`,
    /// earliest first.
    mutating func expireLookups(now: MonotonicInstant) -> [PendingLookup] {
        var due: [PendingLookup] = []
        while let top = deadlines.first, top.deadline <= now {
            popDeadline()
            if let lookup = dropLookup(top.id) { due.append(lookup) }
        }
        return due
    }

    private mutating func takeLookups(waitingFor name: PortName) -> [PendingLookup] {
        // The name's list goes at once: dropping its lookups one by one
        // removed each from it, quadratic in the lookups waiting.
        guard let ids = lookupsByName.removeValue(forKey: name) else { return [] }
        return ids.sorted().compactMap { dropLookup($0) }
    }

    private mutating func dropLookup(_ id: LookupID) -> PendingLookup? {
        guard let lookup = lookups.removeValue(forKey: id) else { return nil }
        clients[lookup.client]?.lookups.remove(id)
        if lookupsByName[lookup.name]?.remove(id) != nil, lookupsByName[lookup.name]!.isEmpty {
            lookupsByName[lookup.name] = nil
        }
        return lookup
    }

    // MARK: Watches

    /// A WATCH by `client` of `name`, or of every name when nil, with `handle` hung on it.
    mutating func watch(_ name: PortName?, client: ClientID, handle: Handles.Watcher) -> Result<WatchID, LimitExceeded> {
        guard var record = clients[client] else { preconditionFailure("admit client \(client) first") }
        if record.watches.count >= limits.watchesPerClient {
            return .failure(.watchesPerClient(limits.watchesPerClient))
        }
        if let exceeded = descriptorQuota(uid: record.uid) { return .failure(exceeded) }
        let id = WatchID(raw: takeID())
        record.watches.insert(id)
        clients[client] = record
        watches[id] = Watch(id: id, client: client, uid: record.uid, name: name, handle: handle)
        if let name {
            watchesByName[name, default: []].append(id)
            watchUIDsByName[name, default: [:]][record.uid, default: 0] += 1
        } else {
            watchesOfAllNames.append(id)
            watchUIDsOfAllNames[record.uid, default: 0] += 1
        }
        return .success(id)
    }

    /// Ends a watch (its port is gone). Unknown ids are ignored.
    mutating func unwatch(_ id: WatchID) {
        guard let watch = watches[id] else { return }
        dropWatch(id)
        clients[watch.client]?.watches.remove(id)
    }

    /// Ends the watch `id`; one of every name leaves `watchesOfAllNames`
    /// unless the caller takes it out itself (`removeClient`, in one pass).
    private mutating func dropWatch(_ id: WatchID, keepingAllNamesEntry: Bool = false) {
        guard let watch = watches.removeValue(forKey: id) else { return }
        guard let name = watch.name else {
            if !keepingAllNamesEntry { Self.remove(id, from: &watchesOfAllNames) }
            Self.uncount(watch.uid, in: &watchUIDsOfAllNames)
            return
        }
        if var counts = watchUIDsByName[name] {
            Self.uncount(watch.uid, in: &counts)
            watchUIDsByName[name] = counts.isEmpty ? nil : counts
        }
        guard var ids = watchesByName[name] else { return }
        Self.remove(id, from: &ids)
        watchesByName[name] = ids.isEmpty ? nil : ids
    }

    /// One watch of `uid` fewer in `counts`.
    private static func uncount(_ uid: UInt32, in counts: inout [UInt32: Int]) {
        guard let n = counts[uid] else { return }
        counts[uid] = n > 1 ? n - 1 : nil
    }

    /// Removes `id` from the sorted `ids` (binary search, then one move of the tail).
    private static func remove(_ id: WatchID, from ids: inout [WatchID]) {
        var low = 0
        var high = ids.count
        while low < high {
            let mid = (low + high) / 2
            if ids[mid] < id { low = mid + 1 } else { high = mid }
        }
        if low < ids.count, ids[low] == id { ids.remove(at: low) }
    }

    private func watchers(of name: PortName) -> WatcherIDs {
        WatcherIDs(ofAllNames: watchesOfAllNames, ofTheName: watchesByName[name] ?? [])
    }

    private func watcherUIDs(of name: PortName) -> WatcherUIDs {
        WatcherUIDs(ofAllNames: watchUIDsOfAllNames, ofTheName: watchUIDsByName[name] ?? [:])
    }

    private mutating func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }
}

// Equal records with equal handles: for tests, whose handles are plain values.
extension NameRegistry.Ownership: Equatable where Handles.Owner: Equatable {}
extension NameRegistry.Watch: Equatable where Handles.Watcher: Equatable {}
extension NameRegistry.PendingLookup: Equatable where Handles.Lookup: Equatable {}
extension NameRegistry.OwnerChange: Equatable
where Handles.Owner: Equatable, Handles.Watcher: Equatable, Handles.Lookup: Equatable {}
extension NameRegistry.RegisterOutcome: Equatable
where Handles.Owner: Equatable, Handles.Watcher: Equatable, Handles.Lookup: Equatable {}
extension NameRegistry.ReleaseOutcome: Equatable
where Handles.Owner: Equatable, Handles.Watcher: Equatable, Handles.Lookup: Equatable {}
extension NameRegistry.LookupOutcome: Equatable where Handles.Owner: Equatable, Handles.Lookup: Equatable {}
extension NameRegistry.ClientRemoval: Equatable
where Handles.Owner: Equatable, Handles.Watcher: Equatable, Handles.Lookup: Equatable {}
