// Policy: who may register which names and who may look up which names,
// from the [Policy] section of portd.conf(5).
//
// A policy is an ordered list of rules, each "allow" or "deny", for one
// operation (register or look up), about the names that match a pattern
// and the clients that are one of its principals. A request is decided by
// the LAST rule that matches it (so a later file, a drop-in, can refine an
// earlier one, as in D-Bus policies); when no rule matches, the operation's
// default decides (allow, unless DefaultRegister=/DefaultLookUp= say deny;
// the system instance without DefaultRegister= denies REGISTER to all but
// root and its own uid: NameServerSettings+Configuration).
//
// The per-user instance serves only its own uid: `sameUserOnly(uid)`, or
// `restricted(toUID:)` to keep a user's own rules as well. That check comes
// before every rule, so no rule can open the instance to another uid.
//
// Invariants: pure and immutable once loaded; a decision never blocks and
// never fails; each decision says which rule (file:line) or default made it,
// so a refusal can be logged naming who, what and why.

struct Policy: Equatable, Sendable {
    /// What a client asks to do with a name.
    enum Operation: String, Equatable, Sendable {
        case register
        case lookUp = "look up"
    }

    enum Verdict: String, Equatable, Sendable {
        case allow
        case deny
    }

    struct Rule: Equatable, Sendable, CustomStringConvertible {
        var verdict: Verdict
        var operation: Operation
        var pattern: NamePattern
        /// Any of these; never empty.
        var principals: [Principal]
        /// Where it was written: "FILE:LINE".
        var origin: String

        func matches(name: String, uid: UInt32, gids: [UInt32]) -> Bool {
            pattern.matches(name) && principals.contains { $0.matches(uid: uid, gids: gids) }
        }

        var description: String {
            let key = (verdict == .allow ? "Allow" : "Deny") + (operation == .register ? "Register" : "LookUp")
            return "\(key)=\(pattern) \(principals.map(\.description).joined(separator: " ")) (\(origin))"
        }
    }

    /// A decision and what made it.
    struct Decision: Equatable, Sendable {
        var allowed: Bool
        /// The rule, default or restriction that decided, for log lines.
        var reason: String
        /// No rule matched: DefaultRegister=/DefaultLookUp= decided.
        var byDefault = false
    }

    /// The rules, in the order read.
    var rules: [Rule] = []
    /// The decision when no rule matches a REGISTER.
    var defaultRegister: Verdict = .allow
    /// Whether DefaultRegister= was given (not empty): the system instance
    /// denies by default otherwise (NameServerSettings+Configuration).
    var defaultRegisterIsSet = false
    /// The decision when no rule matches a LOOKUP.
    var defaultLookUp: Verdict = .allow
    /// When set, every other uid is refused before any rule is read.
    var onlyUID: UInt32? = nil

    /// Allow everything: the policy of a configuration without [Policy].
    static let `default` = Policy()

    /// The per-user instance's policy: uid `uid` may do anything, nobody else anything.
    static func sameUserOnly(_ uid: UInt32) -> Policy {
        Policy(onlyUID: uid)
    }

    /// This policy, except that every uid but `uid` is refused first.
    func restricted(toUID uid: UInt32) -> Policy {
        var copy = self
        copy.onlyUID = uid
        return copy
    }

    func mayRegister(name: String, uid: UInt32, gids: [UInt32]) -> Bool {
        decide(.register, name: name, uid: uid, gids: gids).allowed
    }

    func mayLookUp(name: String, uid: UInt32, gids: [UInt32]) -> Bool {
        // `decide`'s answer without its reason: LIST asks this for every
        // name it looks at, and the reason is text built for a log line.
        // The rules are read in place (`last(where:)` copied each rule,
        // retaining its pattern, principals and origin, per name).
        if let onlyUID, uid != onlyUID { return false }
        var i = rules.endIndex
        while i > rules.startIndex {
            i -= 1
            if rules[i].operation == .lookUp && rules[i].matches(name: name, uid: uid, gids: gids) {
                return rules[i].verdict == .allow
            }
        }
        return defaultLookUp == .allow
    }

    /// The decision for `operation` on `name` by a client with `uid` and `gids`.
    func decide(_ operation: Operation, name: String, uid: UInt32, gids: [UInt32]) -> Decision {
        if let decision = sameUserDecision(uid: uid) { return decision }
        if let rule = rules.last(where: { $0.operation == operation && $0.matches(name: name, uid: uid, gids: gids) }) {
            return Decision(allowed: rule.verdict == .allow, reason: "\(rule)")
        }
        let verdict = operation == .register ? defaultRegister : defaultLookUp
        let key = operation == .register ? "DefaultRegister" : "DefaultLookUp"
        return Decision(allowed: verdict == .allow, reason: "no rule matches; \(key)=\(verdict.rawValue)", byDefault: true)
    }

    /// The per-user restriction's refusal, or nil when it does not apply.
    func sameUserDecision(uid: UInt32) -> Decision? {
        guard let onlyUID, uid != onlyUID else { return nil }
        return Decision(allowed: false, reason: "this instance serves uid \(onlyUID) only")
    }
}
