// NameOwner: who owns a name, as the name server reports it (OWNER, LIST,
// NAME_OWNER_CHANGED): a process (pid and uid as portd saw them with
// SO_PEERCRED when the owner connected), since when (Unix time, ms), and
// the queue of processes waiting for the name, first in line first.

import PortMessaging
import PortNameProtocol
import PortWire

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

    /// Parses "NAME\tPID\tUID\tSINCE_UNIX_MS\tQUEUED_COUNT".
    package init?(listLine line: String) {
        let f = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard f.count >= 5, let pid = Int32(f[1]), let uid = UInt32(f[2]), let since = UInt64(f[3]),
            let queued = Int(f[4]), !f[0].isEmpty
        else { return nil }
        self.init(name: String(f[0]), owner: .init(pid: pid, uid: uid), sinceMilliseconds: since, queuedCount: queued)
    }
}

/// A change of a name's owner (NAME_OWNER_CHANGED), D-Bus's NameOwnerChanged.
public struct NameOwnerChange: Sendable, Hashable {
    /// What happened: registered, released, replaced; or a word a newer portd uses.
    public enum Event: Sendable, Hashable, CustomStringConvertible {
        case known(NameServerProtocol.OwnerEvent)
        case other(String)

        public var description: String {
            switch self {
            case .known(let e): e.rawValue
            case .other(let s): s
            }
        }
    }

    public var name: String
    public var event: Event
    /// The owner before the change (nil when the name was free).
    public var oldOwner: NameOwner.Process?
    /// The owner after the change (nil when the name is now free).
    public var newOwner: NameOwner.Process?

    public init(name: String, event: Event, oldOwner: NameOwner.Process?, newOwner: NameOwner.Process?) {
        self.name = name
        self.event = event
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }

    /// Parses the message portd sends a watcher: NAME, EVENT, OLD, NEW.
    package init(_ message: PCPortMessage) throws(NameServerError) {
        guard message.msgid == NameServerProtocol.MessageID.nameOwnerChanged else {
            throw .protocolError("msgid \(message.msgid) is not NAME_OWNER_CHANGED")
        }
        let s = message.components.map { $0.string }
        guard s.count >= 4, let name = s[0], let event = s[1], let old = s[2], let new = s[3] else {
            throw .protocolError("NAME_OWNER_CHANGED needs four text components (NAME, EVENT, OLD, NEW)")
        }
        func owner(_ text: String) throws(NameServerError) -> NameOwner.Process? {
            if text.isEmpty { return nil }
            guard let p = NameOwner.Process(ownerField: text) else { throw .protocolError("owner \"\(text)\"") }
            return p
        }
        self.init(
            name: name, event: NameServerProtocol.OwnerEvent(rawValue: event).map(Event.known) ?? .other(event),
            oldOwner: try owner(old), newOwner: try owner(new))
    }
}
