// NameServerProtocol: the vocabulary of the name-server protocol, version
// 1.0, the requests portd answers on its control socket: message IDs, error
// words, option words, field keys, the versions spoken, and the rule for
// valid names. Both sides use these constants (portd to parse requests and
// build replies, PortNameServer and portctl to build requests and parse
// replies), so a word is spelled in exactly one place; the messages made of
// them are NameServerRequestMessage, NameServerReply,
// NameServerNotification, NameOwner, NameOwnerChange and NameServerStatus,
// beside this file. The contract itself is portd-protocol(7), section NAME
// SERVER.
//
// Pure values: no I/O. Every data component of a request, a reply or an
// event is one "key=value" field of UTF-8 text without NUL; the first is
// always "serial=N", the request's serial echoed (or, in an event, the
// serial of the request that set it up). A reply is typed by its msgid:
// REPLY (success) or ERROR (an "error=WORD" field says which). A test
// (NameServerVocabularyTests) keeps every word and key here out of portd's
// sources as a string literal.

import PortWire

/// The name-server protocol's constants (a caseless namespace, not a Swift protocol).
public enum NameServerProtocol {
    /// The protocol versions this code speaks, newest first ("MAJOR.MINOR").
    public static let versions: [String] = ["1.0"]
    /// The version this code asks for.
    public static var version: String { versions[0] }

    /// Message IDs of requests, of portd's replies, and of the events portd
    /// sends to a client's port.
    public enum MessageID {
        public static let status: UInt32 = 0xFFFF_0001
        public static let register: UInt32 = 0xFFFF_0002
        public static let release: UInt32 = 0xFFFF_0003
        public static let lookup: UInt32 = 0xFFFF_0004
        public static let watch: UInt32 = 0xFFFF_0005
        public static let list: UInt32 = 0xFFFF_0006
        public static let owner: UInt32 = 0xFFFF_0007
        public static let checkIn: UInt32 = 0xFFFF_0008
        /// The first request of a connection: agree on a version.
        public static let hello: UInt32 = 0xFFFF_0009
        /// Sent by portd to a watcher's port for every owner change.
        public static let nameOwnerChanged: UInt32 = 0xFFFF_0100
        /// Sent by portd to a queued registrant's port when it gets the name.
        public static let nameAcquired: UInt32 = 0xFFFF_0101
        /// Sent by portd to an owner's port (its REGISTER's reply port) when
        /// another client replaced it.
        public static let nameLost: UInt32 = 0xFFFF_0102
        /// Sent by portd to a watcher's port that fell behind: its queue was
        /// full, changes were not delivered, and the watch has ended (the
        /// connection closes after it).
        public static let watchOverflow: UInt32 = 0xFFFF_0103
        /// A successful reply to a request.
        public static let reply: UInt32 = 0xFFFF_0200
        /// An error reply to a request ("error=WORD").
        public static let error: UInt32 = 0xFFFF_0201

        /// The requests, with their names for people and logs.
        public static let requests: [(id: UInt32, name: String)] = [
            (hello, "HELLO"), (status, "STATUS"), (register, "REGISTER"), (release, "RELEASE"), (lookup, "LOOKUP"),
            (watch, "WATCH"), (list, "LIST"), (owner, "OWNER"), (checkIn, "CHECKIN"),
        ]
    }

    /// The value of an ERROR reply's "error=" field.
    public enum ErrorWord: String, Sendable, CaseIterable {
        /// A request other than HELLO came before HELLO succeeded.
        case helloRequired = "hello-required"
        /// HELLO named no version portd speaks; portd closes the connection.
        case unsupportedVersion = "unsupported-version"
        case badRequest = "bad-request"
        case invalidName = "invalid-name"
        case denied
        case limit
        case notFound = "not-found"
        case timeout
        case notOwner = "not-owner"
        case alreadyOwned = "already-owned"
        case notDeclared = "not-declared"
        case `internal`
    }

    /// REGISTER's "result=": the client owns the name, or waits in its queue.
    public enum RegisterResult: String, Sendable, CaseIterable {
        case registered
        case queued
    }

    /// Values of REGISTER's "option=" fields.
    public enum RegisterOption: String, Sendable, CaseIterable {
        /// A later REGISTER with `replaceExisting` may take the name from this owner.
        case allowReplacement = "allow-replacement"
        /// Take the name from an owner that allows replacement.
        case replaceExisting = "replace-existing"
        /// Answer "already-owned" instead of queueing.
        case doNotQueue = "do-not-queue"
    }

    /// "event=" values of NAME_OWNER_CHANGED: how a name changed owner.
    public enum OwnerEvent: String, Sendable, CaseIterable {
        /// The name had no owner; the new one has it now.
        case registered
        /// The owner released it or went away; the new owner is the next
        /// queued one, or none.
        case released
        /// The new owner took it from the old one, which allowed replacement.
        case replaced
    }

    /// Features HELLO's reply names ("feature=").
    public enum Feature: String, Sendable, CaseIterable {
        /// Requests may overlap; replies carry the request's serial.
        case pipelining
        /// LOOKUP may wait for a name ("wait_ms=").
        case waitingLookup = "waiting-lookup"
        /// WATCH and NAME_OWNER_CHANGED.
        case watch
        /// Declared ports and CHECKIN.
        case checkIn = "checkin"
        /// REGISTER's "remote=" (the host a bridge imports a name from),
        /// echoed by LIST and OWNER.
        case remote
    }

    /// Keys of "key=value" fields, in requests, replies and events.
    public enum Field {
        /// The client's number for a request, echoed in its reply.
        public static let serial = "serial"
        /// portd's software version (HELLO's reply, STATUS).
        public static let version = "version"
        /// ERROR: the error word.
        public static let error = "error"
        /// ERROR: text for people.
        public static let message = "message"
        public static let name = "name"
        /// An owner, "PID:UID:CLIENT".
        public static let owner = "owner"
        /// REGISTER: an option word.
        public static let option = "option"
        /// REGISTER's reply: "registered" or "queued".
        public static let result = "result"
        /// REGISTER's reply when queued: the place in the queue (1: next).
        public static let place = "place"
        /// LOOKUP: how long to wait for the name.
        public static let waitMilliseconds = "wait_ms"
        /// LIST: continue after this name.
        public static let after = "after"
        /// OWNER: the page starts at this place of the queue (0: next owner).
        public static let from = "from"
        /// LIST and OWNER replies: "1" when another page follows, else "0".
        public static let more = "more"
        public static let since = "since_ms"
        /// REGISTER, and LIST and OWNER replies: the host the name's
        /// owner serves it for (a bridge's import: protocol 1.1).
        public static let remote = "remote"
        /// How many clients wait for the name.
        public static let queueLength = "queue_length"
        /// OWNER: one queued client ("PID:UID:CLIENT") per field.
        public static let queued = "queued"
        /// LIST and OWNER: "1" for a declared port.
        public static let declared = "declared"
        /// LIST and OWNER: the pid of the service that last checked in for a declared port.
        public static let checkedIn = "checked_in"
        /// NAME_OWNER_CHANGED.
        public static let event = "event"
        public static let old = "old"
        public static let new = "new"
        /// WATCH_OVERFLOW: how many changes the watcher missed.
        public static let missed = "missed"
        /// STATUS.
        public static let pid = "pid"
        public static let uptime = "uptime_ms"
        public static let names = "names"
        public static let clients = "clients"
        public static let lookups = "lookups"
        public static let refusals = "refusals"
        /// A protocol version, "MAJOR.MINOR": those a client speaks (HELLO,
        /// once per version), the one agreed (HELLO's reply, STATUS), those
        /// portd speaks ("unsupported-version").
        public static let `protocol` = "protocol"
        /// HELLO's reply: this connection's client id (as in owners).
        public static let client = "client"
        /// HELLO's reply: a feature.
        public static let feature = "feature"
        /// HELLO's reply: the limits.
        public static let maxRecordBytes = "max_record_bytes"
        public static let maxRequestBytes = "max_request_bytes"
        public static let maxRequestFields = "max_request_fields"
        public static let maxNames = "max_names"
        public static let maxPending = "max_pending_lookups"
        public static let maxWatches = "max_watches"
        public static let maxWaitMilliseconds = "max_wait_ms"
        public static let listPage = "list_page"
        public static let ownerPage = "owner_page"

        /// Every key above.
        public static let all = [
            serial, version, error, message, name, owner, option, result, place, waitMilliseconds, after, from, more,
            since, queueLength, queued, declared, checkedIn, event, old, new, missed, pid, uptime, names, clients,
            lookups, refusals, `protocol`, client, feature, maxRecordBytes, maxRequestBytes, maxRequestFields,
            maxNames, maxPending, maxWatches, maxWaitMilliseconds, listPage, ownerPage,
        ]
    }

    /// The most fields (data components, the serial included) a request
    /// may have: more is a bad request.
    public static let maximumRequestFields = 16

    /// "key=value", a field of a request or a reply.
    @inlinable
    public static func field(_ key: String, _ value: some CustomStringConvertible) -> String {
        "\(key)=\(value)"
    }

    /// The value of `text` when it is a "key=value" field with this key.
    @inlinable
    public static func value(ofField key: String, in text: String) -> Substring? {
        let prefix = key + "="
        return text.hasPrefix(prefix) ? text.dropFirst(prefix.count) : nil
    }

    /// The longest valid name, in bytes.
    public static let maximumNameLength = 200

    /// Why a string is not a valid port name: the naming rule, checked by
    /// `nameProblem(of:)`. Its description is the text portd sends in an
    /// "invalid-name" reply.
    public enum NameProblem: Error, Equatable, Sendable, CustomStringConvertible {
        case empty
        case tooLong(bytes: Int)
        case leadingDot
        case forbiddenByte(UInt8, at: Int)

        public var description: String {
            switch self {
            case .empty: "a name is 1 to \(maximumNameLength) bytes; this one is empty"
            case .tooLong(let n): "a name is 1 to \(maximumNameLength) bytes; this one has \(n)"
            case .leadingDot: "a name must not start with a dot"
            case .forbiddenByte(let b, let i):
                "byte \(i) (0x\(String(b, radix: 16))) is not one of A-Z a-z 0-9 . _ -"
            }
        }
    }

    /// The naming rule, the one definition portd, its configuration and
    /// the client use: 1 to 200 bytes of `A-Z a-z 0-9 . _ -`, not starting
    /// with a dot (so neither "." nor ".." nor a hidden file), no "/" (so
    /// never a path outside the port directory). Nil when `name` is valid;
    /// otherwise the first problem, in the order empty, length, leading
    /// dot, bytes.
    public static func nameProblem(of name: String) -> NameProblem? {
        let bytes = name.utf8
        if bytes.isEmpty { return .empty }
        if bytes.count > maximumNameLength { return .tooLong(bytes: bytes.count) }
        if bytes.first == UInt8(ascii: ".") { return .leadingDot }
        // Counted by hand: `enumerated()` over the UTF-8 view steps a
        // String.Index per byte, which costs more than the check itself.
        let scanned = bytes.withContiguousStorageIfAvailable { (b) -> (at: Int, byte: UInt8)? in
            for i in 0..<b.count where !isNameByte(b[i]) { return (i, b[i]) }
            return nil
        }
        if let scanned { return scanned.map { .forbiddenByte($0.byte, at: $0.at) } }
        var i = 0
        for b in bytes {
            if !isNameByte(b) { return .forbiddenByte(b, at: i) }
            i += 1
        }
        return nil
    }

    /// Why `name` is not a valid port name (`nameProblem(of:)`), in the
    /// words the client and portctl print, or nil when it is valid.
    public static func nameProblem(_ name: String) -> String? {
        switch nameProblem(of: name) {
        case nil: nil
        case .empty: "a name cannot be empty"
        case .tooLong(let n): "a name has at most \(maximumNameLength) bytes (this one has \(n))"
        case .leadingDot: "a name cannot start with a dot"
        case .forbiddenByte: "a name may hold only letters, digits, '.', '_' and '-'"
        }
    }

    /// Whether `b` may appear in a port name: `A-Z a-z 0-9 . _ -`. The one
    /// definition portd, its configuration and the client all use.
    @inlinable
    public static func isNameByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// Whether `name` is a valid port name (see `nameProblem`).
    public static func isValidName(_ name: String) -> Bool { nameProblem(of: name) == nil }
}
