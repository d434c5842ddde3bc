// NameServerProtocol: the vocabulary of the name-server protocol (v1), the
// requests portd answers on its control socket: message IDs, reply words,
// error words, option words, field keys, and the rule for valid names.
// Both sides use these constants (portd to parse requests and build
// replies, PortNameServer and portctl to build requests and parse replies),
// so a word is spelled in exactly one place; the messages made of them are
// NameServerReply, NameServerNotification, NameOwner, NameOwnerChange and
// NameServerStatus, beside this file. The contract itself is
// portd-protocol(7), section NAME SERVER.
//
// Pure values: no I/O. Every request is a port message with the
// REPLY_EXPECTED flag whose data components are UTF-8 strings without NUL;
// the reply's first component is a word (`ReplyWord`), the rest are
// "key=value" fields, free strings, or PORT components, per request.
// A test (NameServerVocabularyTests) keeps every word and key here out of
// portd's sources as a string literal.

import PortWire

/// The name-server protocol's constants (a caseless namespace, not a Swift protocol).
public enum NameServerProtocol {
    /// The protocol version this code speaks.
    public static let version = 1

    /// Message IDs of requests and of the notifications portd sends to a client's port.
    public enum MessageID {
        public static let status: UInt32 = 0xFFFF_0001
        public static let register: UInt32 = 0xFFFF_0002
        public static let release: UInt32 = 0xFFFF_0003
        public static let lookup: UInt32 = 0xFFFF_0004
        public static let watch: UInt32 = 0xFFFF_0005
        public static let list: UInt32 = 0xFFFF_0006
        public static let owner: UInt32 = 0xFFFF_0007
        public static let checkIn: UInt32 = 0xFFFF_0008
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
    }

    /// The first component of every reply.
    public enum ReplyWord: String, Sendable, CaseIterable {
        case ok
        case registered
        case queued
        case alreadyOwned = "already-owned"
        case released
        case notOwner = "not-owner"
        case found
        case notFound = "not-found"
        case timeout
        case watching
        case checkedIn = "checked-in"
        case notDeclared = "not-declared"
        // Error words: no other word follows "invalid-name", "denied",
        // "limit", "bad-request" and "internal"; they and "not-found" and
        // "timeout", in portd-protocol(7)'s Errors list, are followed by
        // one "message=…" field for people.
        case invalidName = "invalid-name"
        case denied
        case limit
        case badRequest = "bad-request"
        case `internal`

        /// The words of portd-protocol(7)'s Errors list: an error reply is
        /// one of them and one "message=…" field.
        public static let errors: [ReplyWord] = [
            .invalidName, .denied, .limit, .badRequest, .notFound, .timeout, .internal,
        ]

        /// Whether the word is in the Errors list (`errors`).
        public var isError: Bool { Self.errors.contains(self) }
    }

    /// Option words of a REGISTER request, after the name.
    public enum RegisterOption: String, Sendable, CaseIterable {
        /// A later REGISTER with `replaceExisting` may take the name from this owner.
        case allowReplacement = "allow-replacement"
        /// Take the name from an owner that allows replacement.
        case replaceExisting = "replace-existing"
        /// Answer "already-owned" instead of queueing.
        case doNotQueue = "do-not-queue"
    }

    /// EVENT values of NAME_OWNER_CHANGED: how a name changed owner.
    public enum OwnerEvent: String, Sendable, CaseIterable {
        /// The name had no owner; the new one has it now.
        case registered
        /// The owner released it or went away; the new owner is the next
        /// queued one, or none.
        case released
        /// The new owner took it from the old one, which allowed replacement.
        case replaced
    }

    /// Keys of "key=value" fields, in requests and replies.
    public enum Field {
        /// An error reply's text for people.
        public static let message = "message"
        public static let pid = "pid"
        public static let uid = "uid"
        public static let since = "since_ms"
        /// OWNER: one "queued=PID:UID" field per process in the queue.
        public static let queued = "queued"
        /// LOOKUP's optional second component: how long to wait for the name.
        public static let waitMilliseconds = "wait_ms"
        /// LIST's optional component: continue after this name.
        public static let after = "after"
        /// OWNER's optional second component: the page starts at this
        /// place in the queue (0 is the next owner).
        public static let from = "from"
        public static let version = "version"
        public static let uptime = "uptime_ms"
        public static let names = "names"
        public static let clients = "clients"
        public static let lookups = "lookups"
        public static let refusals = "refusals"
        public static let declared = "declared"
        /// WATCH_OVERFLOW: how many changes the watcher missed.
        public static let missed = "missed"

        /// Every key above.
        public static let all = [
            message, pid, uid, since, queued, waitMilliseconds, after, from, version, uptime, names, clients, lookups,
            refusals, declared, missed,
        ]
    }

    /// The last component of a LIST reply that could not hold every name
    /// (the client asks again with "after=LAST-NAME"), and of an OWNER
    /// reply that could not hold the whole queue (the client asks again
    /// with "from=N", N the queued processes it has so far).
    public static let listContinues = "more"

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
        for (i, b) in bytes.enumerated() where !isNameByte(b) {
            return .forbiddenByte(b, at: i)
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
