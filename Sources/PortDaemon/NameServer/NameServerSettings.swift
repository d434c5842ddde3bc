// NameServerSettings: everything the name server takes from outside (the
// configuration, the instance): declared ports, who may check in, the
// register/lookup policy, and limits. The defaults are those of a per-user
// instance without a configuration file: no declared ports, everyone the
// instance admits may register and look up every name.
//
// This is the seam where portd.conf(5) is wired in: whoever parses the
// configuration fills one of these; the name server never reads files.
// The policy closures are pure decisions on (name, uid, gids), called only
// by RequestAccess (the name server's one access decision) on the daemon's
// loop thread for every REGISTER, LOOKUP, OWNER, WATCH, LIST entry and
// watcher's event, so they must be quick and must not block.

import PortCore

struct NameServerSettings: Sendable {
    /// A port portd creates at start and holds; its service claims it with CHECKIN.
    struct DeclaredPort: Sendable, Equatable {
        let name: PortName
        /// The uids allowed to check in (to receive the listening socket).
        let checkInUIDs: Set<UInt32>
        /// The gids whose members may check in.
        var checkInGIDs: Set<UInt32> = []
        /// How its service is started on demand (Exec=, Unit=), if at all.
        var activation: PortActivator.Starter? = nil
    }

    /// A decision on one name for one client: uid and its groups (the
    /// primary gid the kernel reported for the request, and the
    /// supplementary groups of the connection's maker when it is the
    /// same user: NameServer.groups(of:sender:connector:)).
    typealias Policy = @Sendable (_ name: PortName, _ uid: UInt32, _ gids: [UInt32]) -> Bool

    /// The only uid served (the per-user instance: portd's own), or nil for
    /// the system instance, where the policy decides.
    var onlyUID: UInt32?
    var declaredPorts: [DeclaredPort] = []
    /// Who may REGISTER a name.
    var mayRegister: Policy = { _, _, _ in true }
    /// Who may LOOKUP, OWNER or WATCH a name, or see it in LIST.
    var mayLookUp: Policy = { _, _, _ in true }
    var limits = NameRegistryLimits()
    /// The system instance without DefaultRegister=: a name no rule allows
    /// cannot be registered (said in the refusal).
    var systemRegisterDefaultDenies = false
    /// The largest request accepted, in bytes of component data (names are
    /// at most 200 bytes; a request is a few words).
    var maximumRequestBytes = 4096
    /// The longest a LOOKUP may wait (wait_ms above it is cut to it).
    var maximumLookupWait: Duration = .seconds(3600)

    /// The settings of an instance: a per-user one serves `onlyUID` only.
    init(onlyUID: UInt32?) {
        self.onlyUID = onlyUID
    }
}
