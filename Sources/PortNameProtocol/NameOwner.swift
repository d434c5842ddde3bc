// NameOwner: who owns a name, as the name server reports it (OWNER, LIST,
// LOOKUP, REGISTER, NAME_OWNER_CHANGED, NAME_LOST): a process (pid and uid
// from the kernel's credentials of the request that got the name, and the
// client, portd's number for the owner's connection), since when (Unix
// time, ms), and the queue of clients waiting for the name, first in line
// first. The one owner type of client and daemon, with the protocol's one
// encoding of an owner, written and read here only: "PID:UID:CLIENT", in
// every reply and event ("owner=", "queued=", "old=", "new=").

/// A name's owner and its queue (OWNER).
public struct NameOwner: Sendable, Hashable {
    /// A client that owns or waits for a name.
    public struct Process: Sendable, Hashable, CustomStringConvertible {
        public var pid: Int32
        public var uid: UInt32
        /// portd's number for the client's connection (HELLO's "client="),
        /// 0 for portd itself (a declared port). Unique while portd runs.
        public var client: UInt64

        public init(pid: Int32, uid: UInt32, client: UInt64 = 0) {
            self.pid = pid
            self.uid = uid
            self.client = client
        }

        public var description: String { "pid \(pid) uid \(uid)" }

        /// "PID:UID:CLIENT", the protocol's encoding of an owner.
        public var encoded: String { "\(pid):\(uid):\(client)" }

        /// Reads "PID:UID:CLIENT".
        public init?(encoded text: String) {
            // On the text's UTF-8 bytes in place (`init?(encodedBytes:)`,
            // the same answers as splitting at ":" and parsing each part:
            // NameServerBytesTests), without the split's array of
            // substrings: this runs on every LOOKUP reply the client reads.
            var text = text
            guard let p = text.withUTF8({ Self(encodedBytes: UnsafeRawBufferPointer($0)) }) else { return nil }
            self = p
        }

        /// The same process, whatever its connection (pid and uid only).
        public func isSameProcess(as other: Process) -> Bool { pid == other.pid && uid == other.uid }
    }

    public var name: String
    /// The owner.
    public var owner: Process
    /// When the owner got the name, in milliseconds since the Unix epoch.
    public var sinceMilliseconds: UInt64
    /// The clients queued for the name, in order.
    public var queued: [Process]
    /// How many clients wait for the name (the whole queue, where
    /// `queued` may hold only a page of it).
    public var queueLength: Int
    /// A port declared in portd's configuration (owned by portd).
    public var isDeclared: Bool
    /// For a declared port: the pid of the service that last checked in.
    public var checkedInPID: Int32?
    /// For a name a bridge imported: the host (or hosts) that export it,
    /// as the registering client (the bridge) said; its owner is the
    /// bridge. Nil for a local name.
    public var remote: String?

    public init(
        name: String, owner: Process, sinceMilliseconds: UInt64, queued: [Process], queueLength: Int? = nil,
        isDeclared: Bool = false, checkedInPID: Int32? = nil, remote: String? = nil
    ) {
        self.remote = remote
        self.name = name
        self.owner = owner
        self.sinceMilliseconds = sinceMilliseconds
        self.queued = queued
        self.queueLength = queueLength ?? queued.count
        self.isDeclared = isDeclared
        self.checkedInPID = checkedInPID
    }

    /// "declared=1" and "checked_in=PID", and "remote=HOST", where they apply.
    var declaredFields: [NameServerField] {
        typealias F = NameServerProtocol.Field
        let remoteField = remote.map { [NameServerField(F.remote, $0)] } ?? []
        guard isDeclared else { return remoteField }
        return [.init(F.declared, 1)] + (checkedInPID.map { [NameServerField(F.checkedIn, $0)] } ?? []) + remoteField
    }

    /// Reads a successful OWNER reply.
    package init<Port>(reply: NameServerReply<Port>) throws(NameServerProtocol.Violation) {
        typealias F = NameServerProtocol.Field
        let r = reply.record
        var queued: [Process] = []
        for q in r.values(F.queued) {
            guard let p = Process(encoded: q) else { throw .init("\(F.queued)=\(q) is not PID:UID:CLIENT") }
            queued.append(p)
        }
        guard let name = r.value(F.name) else { throw .init("the OWNER reply lacks \(F.name)=") }
        self.init(
            name: name, owner: try r.owner(F.owner, in: "the OWNER reply"),
            sinceMilliseconds: try r.integer(F.since, in: "the OWNER reply"), queued: queued,
            queueLength: try r.integer(F.queueLength, in: "the OWNER reply"), isDeclared: r.value(F.declared) == "1",
            checkedInPID: r.value(F.checkedIn).flatMap { Int32($0) }, remote: r.value(F.remote))
    }
}

/// One entry of LIST: a name, its owner, since when, how many wait for it.
public struct NameEntry: Sendable, Hashable {
    public var name: String
    public var owner: NameOwner.Process
    /// Milliseconds since the Unix epoch.
    public var sinceMilliseconds: UInt64
    public var queuedCount: Int
    /// A port declared in portd's configuration (owned by portd).
    public var isDeclared: Bool
    /// For a declared port: the pid of the service that last checked in.
    public var checkedInPID: Int32?
    /// For a name a bridge imported: the host(s) exporting it (`NameOwner.remote`).
    public var remote: String?

    public init(
        name: String, owner: NameOwner.Process, sinceMilliseconds: UInt64, queuedCount: Int, isDeclared: Bool = false,
        checkedInPID: Int32? = nil, remote: String? = nil
    ) {
        self.remote = remote
        self.name = name
        self.owner = owner
        self.sinceMilliseconds = sinceMilliseconds
        self.queuedCount = queuedCount
        self.isDeclared = isDeclared
        self.checkedInPID = checkedInPID
    }

    /// The entry's fields in a LIST reply: "name=", "owner=", "since_ms=",
    /// "queue_length=", and for a declared port "declared=1" and
    /// "checked_in=PID" (once a service checked in).
    package var fields: [NameServerField] {
        typealias F = NameServerProtocol.Field
        var f: [NameServerField] = [
            .init(F.name, name), .init(F.owner, owner.encoded), .init(F.since, sinceMilliseconds),
            .init(F.queueLength, queuedCount),
        ]
        if isDeclared {
            f.append(.init(F.declared, 1))
            if let checkedInPID { f.append(.init(F.checkedIn, checkedInPID)) }
        }
        if let remote { f.append(.init(F.remote, remote)) }
        return f
    }

    /// Reads an entry's fields (`fields`; unknown keys are skipped).
    package init(fields: [NameServerField]) throws(NameServerProtocol.Violation) {
        typealias F = NameServerProtocol.Field
        let r = NameServerRecord<Never>(fields)
        guard let name = r.value(F.name) else { throw .init("a LIST entry lacks \(F.name)=") }
        let what = "the LIST entry of \(name)"
        self.init(
            name: name, owner: try r.owner(F.owner, in: what), sinceMilliseconds: try r.integer(F.since, in: what),
            queuedCount: try r.integer(F.queueLength, in: what), isDeclared: r.value(F.declared) == "1",
            checkedInPID: r.value(F.checkedIn).flatMap { Int32($0) }, remote: r.value(F.remote))
    }
}
