// RequestAccess: who may do what with a name, decided in one pure
// function: the kind of request and its name, who asks (uid and the groups
// the request is judged with) and the settings (the per-user instance's
// uid, the register and look-up policies) go in; allow, or deny with the
// reason the refused client reads in "message=", comes out. The name
// server asks before it acts and only carries the answer out (a "denied"
// reply, a counted and logged refusal, an entry left out of LIST, an event
// a watcher does not get).
//
// Invariants: no I/O, no state; the per-user instance's restriction comes
// before any rule; the policy closures of NameServerSettings are called
// here only; facts about the running server (whether a name is a declared
// port now, who may check in for it) are inputs, never looked up.

import PortCore

/// Who sends a request, as the kernel reported it.
struct Caller: Equatable, Sendable {
    let uid: UInt32
    /// The sender's primary gid and, when it is the user who made the
    /// connection, that process's supplementary groups
    /// (NameServer.groups(of:sender:connector:)).
    let groups: [UInt32]
}

/// What a request asks to do, as far as access goes.
enum RequestAccess: Equatable, Sendable {
    /// Any request on a connection made by `connectorUID` (SO_PEERCRED;
    /// nil when unknown): the per-user instance serves its own uid only.
    case anyRequest(connectorUID: UInt32?)
    /// REGISTER `name`; `declared`: the name is a declared port now.
    case register(PortName, declared: Bool)
    /// LOOKUP or OWNER of `name`.
    case lookUp(PortName)
    /// WATCH of `name`, or of every name (nil).
    case watch(PortName?)
    /// Seeing `name` in a LIST reply or in a watcher's event.
    case see(PortName)
    /// CHECKIN for the declared port `name`, whose service may be run by
    /// these uids and by members of these gids.
    case checkIn(PortName, uids: Set<UInt32>, gids: Set<UInt32>)

    /// The decision.
    enum Decision: Equatable, Sendable {
        case allow
        /// Refused; the text of the "denied" reply.
        case deny(String)
    }

    /// Whether `caller` may see `name` (in a LIST reply, in a watcher's
    /// event): `see(name)`'s decision without the reason, text that LIST
    /// built for every name it left out.
    static func maySee(_ name: PortName, by caller: Caller, under settings: NameServerSettings) -> Bool {
        settings.mayLookUp(name, caller.uid, caller.groups)
    }

    /// The decision on this request by `caller` under `settings`.
    func decide(by caller: Caller, under settings: NameServerSettings) -> Decision {
        let uid = caller.uid
        switch self {
        case .anyRequest(let connectorUID):
            guard let only = settings.onlyUID else { return .allow }
            // The sender of this request, and whoever made the connection.
            for other in [uid, connectorUID ?? only] where other != only {
                return .deny("this portd serves uid \(only) only, not uid \(other)")
            }
            return .allow
        case .register(let name, let declared):
            if declared { return .deny("\(name) is a declared port; its service claims it with CHECKIN") }
            if settings.mayRegister(name, uid, caller.groups) { return .allow }
            if settings.systemRegisterDefaultDenies {
                return .deny(
                    "uid \(uid) may not register \(name): the system instance registers only names its policy allows (an AllowRegister= rule in portd.conf(5))")
            }
            return .deny("uid \(uid) may not register \(name)")
        case .lookUp(let name):
            return settings.mayLookUp(name, uid, caller.groups) ? .allow : .deny("uid \(uid) may not look up \(name)")
        case .watch(nil):
            return .allow
        case .watch(let name?):
            return settings.mayLookUp(name, uid, caller.groups) ? .allow : .deny("uid \(uid) may not watch \(name)")
        case .see(let name):
            return Self.maySee(name, by: caller, under: settings) ? .allow : .deny("uid \(uid) may not see \(name)")
        case .checkIn(let name, let uids, let gids):
            return uids.contains(uid) || caller.groups.contains(where: gids.contains)
                ? .allow : .deny("uid \(uid) may not check in for \(name)")
        }
    }
}
