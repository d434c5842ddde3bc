// AccountDatabase: user and group names to ids, the one place portd asks
// the system's account database (getpwnam_r(3), getgrnam_r(3), through
// NSS: /etc/passwd, /etc/group, systemd-userdb, LDAP, ...).
//
// Names are resolved once, when the configuration is loaded, never per
// request: the run loop must not block on NSS, and a rule means the account
// that existed when it was read (a reload picks up changes). "No such
// account" is a value (nil); only a failure of the database itself is an
// error. `AccountDatabase` is a protocol so that tests can resolve names
// without depending on the machine's accounts.

import PortCore

protocol AccountDatabase: Sendable {
    /// The uid of the user `name`, or nil when there is none.
    func userID(named name: String) throws(SystemCallError) -> UInt32?
    /// The gid of the group `name`, or nil when there is none.
    func groupID(named name: String) throws(SystemCallError) -> UInt32?
}

/// The system's account database (PortSystem's Accounts).
struct SystemAccountDatabase: AccountDatabase {
    func userID(named name: String) throws(SystemCallError) -> UInt32? { try Accounts.userID(named: name) }
    func groupID(named name: String) throws(SystemCallError) -> UInt32? { try Accounts.groupID(named: name) }
}
