// Credentials: a process's pid, uid and gid as the kernel reports them
// (`struct ucred`, unix(7)). Received per message through SCM_CREDENTIALS
// when the receiving socket has SO_PASSCRED, or per connection through
// SO_PEERCRED (who connected, not who sends). Never what a peer claims.

import CPortSystem

/// A process identity as the kernel saw it.
public struct Credentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    package init(_ u: port_ucred) {
        self.init(pid: u.pid, uid: u.uid, gid: u.gid)
    }

    var ucred: port_ucred { port_ucred(pid: pid, uid: uid, gid: gid) }

    public var description: String { "pid=\(pid) uid=\(uid) gid=\(gid)" }
}
