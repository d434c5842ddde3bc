// Accounts: user and group names to ids through the system's account
// database (getpwnam_r(3), getgrnam_r(3), so NSS: /etc/passwd, /etc/group,
// systemd-userdb, LDAP, ...). "No such account" is a value (nil); only a
// failure of the database itself is an error. The calls may block on NSS:
// callers resolve names once (portd when it loads its configuration), never
// on a run loop's hot path.

import Glibc

package enum Accounts {
    /// The corresponding C function is `getpwnam_r`.
    package static func userID(named name: String) throws(SystemCallError) -> UInt32? {
        var entry = passwd()
        let found = try Self.lookUp("getpwnam_r(\(name))") { buffer, size, result in
            withUnsafeMutablePointer(to: &entry) { entryPointer in
                var pointer: UnsafeMutablePointer<passwd>? = nil
                let r = getpwnam_r(name, entryPointer, buffer, size, &pointer)
                result = pointer != nil
                return r
            }
        }
        return found ? entry.pw_uid : nil
    }

    /// The corresponding C function is `getgrnam_r`.
    package static func groupID(named name: String) throws(SystemCallError) -> UInt32? {
        var entry = group()
        let found = try Self.lookUp("getgrnam_r(\(name))") { buffer, size, result in
            withUnsafeMutablePointer(to: &entry) { entryPointer in
                var pointer: UnsafeMutablePointer<group>? = nil
                let r = getgrnam_r(name, entryPointer, buffer, size, &pointer)
                result = pointer != nil
                return r
            }
        }
        return found ? entry.gr_gid : nil
    }

    /// Runs a `get*nam_r` call with a buffer that grows on ERANGE. The
    /// calls return their error number instead of setting errno; 0 with no
    /// entry, ENOENT, ESRCH, EBADF and EPERM all mean "not found" (getpwnam(3)).
    private static func lookUp(
        _ call: String, _ body: (UnsafeMutablePointer<CChar>, Int, inout Bool) -> Int32
    ) throws(SystemCallError) -> Bool {
        var size = 1024
        while true {
            var found = false
            let r = withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer in
                body(buffer.baseAddress!, size, &found)
            }
            switch r {
            case 0: return found
            case ENOENT, ESRCH, EBADF, EPERM: return false
            case ERANGE where size < 1 << 20: size *= 2
            default: throw SystemCallError(call: call, errno: .init(rawValue: r))
            }
        }
    }
}
