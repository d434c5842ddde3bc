// NameServer+DeclaredBacklog: a declared port's listening socket is
// portd's, and every LOOKUP of it is a connection portd makes into its
// backlog (SOMAXCONN, 4096 here) for the caller to keep. Before its
// service runs (or while it does not accept), those connections wait
// there; one uid making and keeping 4,097 of them filled it, and every
// other LOOKUP of the port was refused `limit` (backlog full). So the
// connections portd makes into a declared port's backlog are counted per
// uid, and a uid that made `declaredBacklogPerUID` of them is refused
// `limit` until the backlog has been emptied (the service accepted what
// waited): 16 uids at least are needed to fill it. Root and portd's own
// uid are not counted.
//
// Invariants: the counts of a port start again only when its listening
// socket has nothing to accept (one poll(2), made only when a uid reaches
// its share); a port no longer declared loses its counts on reload
// (`reconfigure`).

import PortCore

extension NameServer {
    /// The connections one uid may have portd make into one declared
    /// port's backlog while it is not emptied: a sixteenth of SOMAXCONN.
    static let declaredBacklogPerUID = 256

    /// The refusal of a LOOKUP of the declared port `name` by `c`'s uid
    /// once its share of the port's backlog is used; else counts the
    /// connection about to be made.
    func declaredBacklogRefusal(_ name: PortName, _ port: DeclaredPorts.Port, _ c: Context) -> PCPortMessage? {
        let uid = c.sender.uid
        guard !settings.limits.privilegedUIDs.contains(uid) else { return nil }
        var counts = declaredBacklog[name] ?? [:]
        if counts[uid, default: 0] >= Self.declaredBacklogPerUID {
            let pending = (try? LocalSocket.wait(port.descriptor.descriptor, for: .readable, timeout: .zero)) ?? [.readable]
            guard pending.isDisjoint(with: [.readable]) else {
                return refuse(
                    c, .limit,
                    "uid \(uid) has \(Self.declaredBacklogPerUID) connections waiting in the backlog of \(name) (its service has not accepted them); try again once it has")
            }
            counts = [:]  // emptied since: every uid's count starts again
        }
        counts[uid, default: 0] += 1
        declaredBacklog[name] = counts
        return nil
    }
}
