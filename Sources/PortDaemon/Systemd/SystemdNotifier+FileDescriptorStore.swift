// SystemdNotifier+FileDescriptorStore: declared ports' listening sockets in
// the service manager's file-descriptor store (FDSTORE=1, FDNAME=, sd_pid_
// notify_with_fds(3)), so that `systemctl restart portd` loses no message
// waiting in a declared port: systemd holds a copy of each socket while
// portd is down and passes it back at the next start (LISTEN_FDS, see
// ListenFDs+DeclaredPorts).
//
// Invariants: one notification per port, so each descriptor carries its own
// name, "port/NAME" (ListenFDs.fileDescriptorName(forDeclaredPort:)); a
// descriptor passed back and stored again is not duplicated (systemd drops
// a descriptor that refers to the same file as one it holds); a port that
// a reload removes is taken out with FDSTOREREMOVE=1. Only when the manager
// has a store (`hasFileDescriptorStore`: FDSTORE in the environment, from
// FileDescriptorStoreMax=); otherwise, and without NOTIFY_SOCKET, these are
// no-ops that return false, and the name server keeps no socket file.

import PortCore

extension SystemdNotifier {
    /// FDSTORE=1 with FDNAME=port/NAME for the listening socket of the
    /// declared port `name`. Returns whether the manager holds a copy (or
    /// will, once its queue has room).
    @discardableResult
    func storeDeclaredPort(named name: String, fileDescriptor: SharedDescriptor) throws(SystemCallError) -> Bool {
        try storeFileDescriptor(fileDescriptor, name: ListenFDs.fileDescriptorName(forDeclaredPort: name))
    }

    /// FDSTOREREMOVE=1 with FDNAME=port/NAME: the manager closes its copy of
    /// the declared port `name` (after a reload removed the port).
    @discardableResult
    func removeStoredDeclaredPort(named name: String) throws(SystemCallError) -> Bool {
        guard hasFileDescriptorStore else { return false }
        return try send(["FDSTOREREMOVE=1", "FDNAME=\(ListenFDs.fileDescriptorName(forDeclaredPort: name))"])
    }
}

/// The name server's store of declared ports, under systemd.
extension SystemdNotifier: DeclaredPortStore {
    func store(declaredPort name: String, fileDescriptor: SharedDescriptor) throws(SystemCallError) -> Bool {
        try storeDeclaredPort(named: name, fileDescriptor: fileDescriptor)
    }

    func remove(declaredPort name: String) throws(SystemCallError) {
        try removeStoredDeclaredPort(named: name)
    }
}
