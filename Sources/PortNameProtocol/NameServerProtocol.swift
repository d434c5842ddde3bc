// NameServerProtocol: the vocabulary of the name-server protocol (v1), the
// requests portd answers on its control socket: message IDs, reply words,
// option words, field keys, and the rule for valid names. Both sides use
// these constants (portd to answer, PortNameServer and portctl to ask), so a
// word is spelled in exactly one place. The contract itself is
// portd-protocol(7), section NAME SERVER.
//
// Pure values: no I/O. Every request is a port message with the
// REPLY_EXPECTED flag whose data components are UTF-8 strings without NUL;
// the reply's first component is a word (`ReplyWord`), the rest are
// "key=value" fields, free strings, or PORT components, per request.

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
        // Error words; each is followed by a "message=…" field.
        case invalidName = "invalid-name"
        case denied
        case limit
        case badRequest = "bad-request"
        case `internal`
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

    /// EVENT values of NAME_OWNER_CHANGED.
    public enum OwnerEvent: String, Sendable, CaseIterable {
        case registered
        case released
        case replaced
    }

    /// Keys of "key=value" reply fields.
    public enum Field {
        public static let message = "message"
        public static let pid = "pid"
        public static let uid = "uid"
        public static let since = "since_ms"
        public static let queued = "queued"
        public static let waitMilliseconds = "wait_ms"
        public static let version = "version"
        public static let uptime = "uptime_ms"
        public static let names = "names"
        public static let clients = "clients"
        public static let lookups = "lookups"
        public static let refusals = "refusals"
        public static let declared = "declared"
    }

    /// The longest valid name, in bytes.
    public static let maximumNameLength = 200

    /// Why `name` is not a valid port name, or nil when it is: 1 to 200
    /// bytes of `A-Z a-z 0-9 . _ -`, not starting with a dot (so neither
    /// "." nor ".." nor a hidden file), no "/" (so never a path outside the
    /// port directory).
    public static func nameProblem(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        if bytes.isEmpty { return "a name cannot be empty" }
        if bytes.count > maximumNameLength {
            return "a name has at most \(maximumNameLength) bytes (this one has \(bytes.count))"
        }
        if bytes[0] == UInt8(ascii: ".") { return "a name cannot start with a dot" }
        for b in bytes where !isNameByte(b) {
            return "a name may hold only letters, digits, '.', '_' and '-'"
        }
        return nil
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
    public static func isValidName(_ name: String) -> Bool { nameProblem(name) == nil }
}
