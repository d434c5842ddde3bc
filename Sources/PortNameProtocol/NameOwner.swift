// NameOwner: who owns a name, as the name server reports it (OWNER, LIST,
// LOOKUP, REGISTER, NAME_OWNER_CHANGED, NAME_LOST): a process (pid and uid
// as portd saw them with SO_PEERCRED when the owner connected), since when
// (Unix time, ms), and the queue of processes waiting for the name, first
// in line first. The one owner type of client and daemon, with the owner
// encodings of the protocol, each written and read here only:
//   - "pid=P" and "uid=U" fields (found, already-owned, OWNER, NAME_LOST),
//   - "pid=P,uid=U" (NAME_OWNER_CHANGED's OLD and NEW),
//   - "P:U" (OWNER's queued= entries),
//   - "NAME\tPID\tUID\tSINCE_UNIX_MS\tQUEUED_COUNT" (a LIST line).

/// A name's owner and its queue (OWNER).
public struct NameOwner: Sendable, Hashable {
    /// A process that owns or waits for a name.
    public struct Process: Sendable, Hashable, CustomStringConvertible {
        public var pid: Int32
        public var uid: UInt32

        public init(pid: Int32, uid: UInt32) {
            self.pid = pid
            self.uid = uid
        }

        public var description: String { "pid \(pid) uid \(uid)" }
    }

    public var name: String
    /// The owner.
    public var owner: Process
    /// When the owner got the name, in milliseconds since the Unix epoch.
    public var sinceMilliseconds: UInt64
    /// The processes queued for the name, in order.
    public var queued: [Process]

    public init(name: String, owner: Process, sinceMilliseconds: UInt64, queued: [Process]) {
        self.name = name
        self.owner = owner
        self.sinceMilliseconds = sinceMilliseconds
        self.queued = queued
    }

    /// Reads an OWNER reply whose word is "ok": the owner of `name`.
    package init<Port>(name: String, reply: NameServerReply<Port>) throws(NameServerProtocol.Violation) {
        typealias F = NameServerProtocol.Field
        var queued: [Process] = []
        for q in reply.fields(F.queued) {
            guard let p = Process(colonPair: q) else { throw .init("\(F.queued)=\(q)") }
            queued.append(p)
        }
        self.init(name: name, owner: try reply.process(), sinceMilliseconds: try reply.integer(F.since), queued: queued)
    }
}

/// The owner encodings of the protocol.
extension NameOwner.Process {
    /// "pid=P" and "uid=U", two fields of a reply or of NAME_LOST.
    var fields: [String] {
        [NameServerProtocol.field(NameServerProtocol.Field.pid, pid), NameServerProtocol.field(NameServerProtocol.Field.uid, uid)]
    }

    /// "pid=P,uid=U": an owner in NAME_OWNER_CHANGED.
    var ownerField: String { fields.joined(separator: ",") }

    /// Reads "pid=P,uid=U" (the parts in any order).
    package init?(ownerField text: String) {
        var pid: Int32?
        var uid: UInt32?
        for part in text.split(separator: ",").map(String.init) {
            if let v = NameServerProtocol.value(ofField: NameServerProtocol.Field.pid, in: part) { pid = Int32(v) }
            if let v = NameServerProtocol.value(ofField: NameServerProtocol.Field.uid, in: part) { uid = UInt32(v) }
        }
        guard let pid, let uid else { return nil }
        self.init(pid: pid, uid: uid)
    }

    /// "P:U": a queued process in OWNER.
    package var colonPair: String { "\(pid):\(uid)" }

    /// Reads "P:U".
    package init?(colonPair text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let pid = Int32(parts[0]), let uid = UInt32(parts[1]) else { return nil }
        self.init(pid: pid, uid: uid)
    }
}

/// One row of LIST: a name, its owner, since when, how many wait for it.
public struct NameEntry: Sendable, Hashable {
    public var name: String
    public var owner: NameOwner.Process
    /// Milliseconds since the Unix epoch.
    public var sinceMilliseconds: UInt64
    public var queuedCount: Int

    public init(name: String, owner: NameOwner.Process, sinceMilliseconds: UInt64, queuedCount: Int) {
        self.name = name
        self.owner = owner
        self.sinceMilliseconds = sinceMilliseconds
        self.queuedCount = queuedCount
    }

    /// "NAME\tPID\tUID\tSINCE_UNIX_MS\tQUEUED_COUNT", the entry in a LIST reply.
    package var listLine: String {
        "\(name)\t\(owner.pid)\t\(owner.uid)\t\(sinceMilliseconds)\t\(queuedCount)"
    }

    /// Parses a LIST line (`listLine`).
    package init?(listLine line: String) {
        let f = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard f.count >= 5, let pid = Int32(f[1]), let uid = UInt32(f[2]), let since = UInt64(f[3]),
            let queued = Int(f[4]), !f[0].isEmpty
        else { return nil }
        self.init(name: String(f[0]), owner: .init(pid: pid, uid: uid), sinceMilliseconds: since, queuedCount: queued)
    }
}
