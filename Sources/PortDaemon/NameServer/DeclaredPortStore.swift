// DeclaredPortStore: where the sockets of declared ports are kept while
// portd is not running, so that no message waiting in one is lost across a
// restart. Under systemd that is the service manager's file-descriptor
// store (SystemdNotifier: FDSTORE=1 / FDSTOREREMOVE=1); without a service
// manager there is none and the name server runs with `nil`.
//
// Invariants: `store` returns whether a copy is now held (false: nobody
// listens, e.g. no NOTIFY_SOCKET), so the name server keeps a port's socket
// file at shutdown only when its socket will come back; errors are thrown
// for the caller to log, never fatal.

import PortCore

protocol DeclaredPortStore {
    /// Hands a copy of the listening socket of the declared port `name` to
    /// the store (the socket is lent; portd keeps its own).
    func store(declaredPort name: String, fileDescriptor: borrowing OwnedDescriptor) throws(SystemCallError) -> Bool
    /// Drops the store's copy of `name`'s socket (the port is no longer declared).
    func remove(declaredPort name: String) throws(SystemCallError)
}
