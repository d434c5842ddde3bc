// Principal: who a policy rule or a declared port's LookUp= is about:
// anyone ("*"), one user ("user:NAME" or "user:UID") or the members of one
// group ("group:NAME" or "group:GID").
//
// Invariants: a principal holds resolved numeric ids only; names are turned
// into ids once, at load time, through an AccountDatabase, and a name that
// does not resolve is a load error (a rule about nobody is a typo, and a
// deny rule that silently matched nobody would be a hole). A group matches
// when any of the client's gids (primary and supplementary, as the caller
// collects them) is the group's.

struct Principal: Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case anyone
        case user(UInt32)
        case group(UInt32)
    }

    let kind: Kind

    static let anyone = Principal(kind: .anyone)
    static func user(_ uid: UInt32) -> Principal { Principal(kind: .user(uid)) }
    static func group(_ gid: UInt32) -> Principal { Principal(kind: .group(gid)) }

    /// Whether a client with `uid` and the groups `gids` is this principal.
    func matches(uid: UInt32, gids: [UInt32]) -> Bool {
        switch kind {
        case .anyone: true
        case .user(let u): u == uid
        case .group(let g): gids.contains(g)
        }
    }

    var description: String {
        switch kind {
        case .anyone: "*"
        case .user(let u): "user:\(u)"
        case .group(let g): "group:\(g)"
        }
    }

    /// Reads one principal word: "*", "user:NAME|UID", "group:NAME|GID".
    /// The error message has no location; the caller adds file and line.
    static func parse(_ word: String, accounts: any AccountDatabase) throws(InvalidValue) -> Principal {
        if word == "*" { return .anyone }
        if let rest = word.dropPrefix("user:") {
            return .user(try userID(rest, accounts: accounts))
        }
        if let rest = word.dropPrefix("group:") {
            return .group(try groupID(rest, accounts: accounts))
        }
        throw InvalidValue("'\(word)' is not a principal ('*', 'user:NAME', 'user:UID', 'group:NAME' or 'group:GID')")
    }

    /// A user name or a numeric uid.
    static func userID(_ text: String, accounts: any AccountDatabase) throws(InvalidValue) -> UInt32 {
        if let id = numericID(text) { return id }
        guard isAccountName(text) else {
            throw InvalidValue("'\(text)' is not a user name or uid")
        }
        let found: UInt32?
        do {
            found = try accounts.userID(named: text)
        } catch {
            throw InvalidValue("cannot look up user '\(text)': \(error)")
        }
        guard let found else { throw InvalidValue("unknown user '\(text)'") }
        return found
    }

    /// A group name or a numeric gid.
    static func groupID(_ text: String, accounts: any AccountDatabase) throws(InvalidValue) -> UInt32 {
        if let id = numericID(text) { return id }
        guard isAccountName(text) else {
            throw InvalidValue("'\(text)' is not a group name or gid")
        }
        let found: UInt32?
        do {
            found = try accounts.groupID(named: text)
        } catch {
            throw InvalidValue("cannot look up group '\(text)': \(error)")
        }
        guard let found else { throw InvalidValue("unknown group '\(text)'") }
        return found
    }

    /// Decimal digits only, below 2^32 - 1 ((uid_t) -1 means "no id").
    private static func numericID(_ text: String) -> UInt32? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let id = UInt32(text), id != UInt32.max
        else { return nil }
        return id
    }

    /// What may be passed to getpwnam: not empty, no ':' or blanks or '/',
    /// at most 256 bytes (systemd's relaxed user-name rule).
    private static func isAccountName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 256
            && !text.unicodeScalars.contains { $0 == ":" || $0 == "/" || $0 == " " || $0 == "\t" || $0.value < 0x20 }
    }
}

extension String {
    /// The rest after `prefix`, or nil when the string does not start with it.
    fileprivate func dropPrefix(_ prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}
