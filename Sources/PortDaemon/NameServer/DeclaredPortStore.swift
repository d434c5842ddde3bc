// DeclaredPortStore: where the sockets of declared ports are kept while
// portd is not running, so that no message waiting in one is lost across a
// restart. Under systemd that is the service manager's file-descriptor
// store (SystemdNotifier: FDSTORE=1 / FDSTOREREMOVE=1, when the manager
// says it keeps one: FDSTORE in the environment); without one the name
// server runs with `nil` or a store that holds nothing.
//
// Invariants: `store` returns whether a copy is now held, or will be once
// the manager reads its queue (false: no store, e.g. no NOTIFY_SOCKET or no
// FDSTORE), so the name server keeps a port's socket file at shutdown only
// when its socket will come back; errors are thrown for the caller to log,
// never fatal.

import PortCore

protocol DeclaredPortStore {
    /// Hands a copy of the listening socket of the declared port `name` to
    /// the store (portd keeps its own; the store may hold it a while, until
    /// the manager has room for it).
    func store(declaredPort name: String, fileDescriptor: SharedDescriptor) throws(SystemCallError) -> Bool
    /// Drops the store's copy of `name`'s socket (the port is no longer declared).
    func remove(declaredPort name: String) throws(SystemCallError)
}
