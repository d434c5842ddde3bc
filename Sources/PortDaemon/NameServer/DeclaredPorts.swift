// DeclaredPorts: the ports portd creates at start and holds for services
// that claim them later, launchd's model (not Apple's worker check-in,
// msgid 100, which is between two ports and involves no name server).
//
// Each declared port is a listening socket in the port directory that portd
// keeps open for its whole life and never accepts on. Clients look the name
// up as usual and get a connection to it; their records wait in the
// kernel's queue until a service checks in (CHECKIN) and receives a copy of
// the listening descriptor. When that service exits or crashes its copy
// closes, portd's stays, so connections not yet accepted and the records in
// them survive, and the restarted service checks in again and gets them.
//
// Across a restart of portd itself, the sockets live in the service
// manager's file-descriptor store: `reconcile` takes a socket passed back
// at start (`restored`) instead of making a new one, and a port whose
// socket was stored keeps its socket file when portd stops, so the socket
// systemd holds stays reachable at the same path.
//
// Invariants: the names are unique (a name declared twice is one port whose
// check-in uids are the union); portd's descriptor is a SharedDescriptor,
// held by the port's entry, by a SendRight (which merely carries it) so
// that CHECKIN can put it in a reply as is (sending passes a duplicate and
// portd keeps its own), and by the activator while it watches the port; it
// closes when the last of them lets go. Every restored socket handed to
// `reconcile` ends up either serving its port or closed with its file
// removed.

import PortCore

final class DeclaredPorts {
    struct Port {
        let name: PortName
        /// Who may check in: these uids, and members of these gids.
        var checkInUIDs: Set<UInt32>
        var checkInGIDs: Set<UInt32>
        /// Carries portd's listening socket in CHECKIN replies.
        let listening: SendRight
        /// The same socket, for the file-descriptor store and the activator.
        let descriptor: SharedDescriptor
        let file: PortSocketFile
        /// When the port came to be served by this portd, Unix ms.
        let sinceMilliseconds: UInt64
        /// Whether the service manager holds a copy (its file then outlives portd).
        var stored = false
        /// Check-ins so far.
        var checkIns = 0
        /// The pid of the service that checked in last (LIST and OWNER show it).
        var lastCheckInPID: Int32?
    }

    /// A listening socket passed back by the service manager, already
    /// checked to be one of this directory's (PortDirectory.adopt).
    struct Restored {
        let fileDescriptor: SharedDescriptor
        let file: PortSocketFile
    }

    /// What `reconcile` did.
    struct Changes: Equatable {
        /// Ports created (or taken from the store), in name order.
        var added: [PortName] = []
        /// Of those, the ones whose socket came back from the store.
        var restored: [PortName] = []
        /// Ports no longer declared, closed and their files removed.
        var removed: [PortName] = []
        /// Ports whose check-in uids or gids changed.
        var updated: [PortName] = []
        /// Restored sockets of names not declared (any more): closed, files removed.
        var discarded: [String] = []
        /// Declared names not created because a client owns the name now.
        var deferred: [PortName] = []
    }

    private var ports: [PortName: Port] = [:]
    private let directory: PortDirectory

    init(in directory: PortDirectory) {
        self.directory = directory
    }

    /// No name is hashed when nothing is declared (every LOOKUP asks).
    subscript(name: PortName) -> Port? { ports.isEmpty ? nil : ports[name] }

    var count: Int { ports.count }

    /// The declared ports in byte order of their names.
    var all: [Port] { ports.keys.sorted().map { ports[$0]! } }

    /// Makes the ports match `declared`: new names get a socket (the one in
    /// `restored` under that name if there is one, else a new one), names
    /// no longer declared are closed and their files removed, check-in
    /// rights are updated. A name for which `isOwned` is true is left out
    /// (deferred). Restored sockets not used are closed and their files
    /// removed. On a failure to make a socket, what was done so far stays
    /// and the error is thrown; the restored sockets not yet used are closed.
    @discardableResult
    func reconcile(
        _ declared: [NameServerSettings.DeclaredPort], restored: [String: Restored] = [:],
        isOwned: (PortName) -> Bool = { _ in false }, now: UInt64
    ) throws(SystemCallError) -> Changes {
        var uids: [PortName: Set<UInt32>] = [:]
        var gids: [PortName: Set<UInt32>] = [:]
        for d in declared {
            uids[d.name, default: []].formUnion(d.checkInUIDs)
            gids[d.name, default: []].formUnion(d.checkInGIDs)
        }
        var changes = Changes()
        var unused = restored
        func discardUnused() {
            for (name, r) in unused.sorted(by: { $0.key < $1.key }) {
                directory.remove(r.file)  // the socket closes with `unused`
                changes.discarded.append(name)
            }
            unused = [:]
        }
        for name in ports.keys.sorted() where uids[name] == nil {
            close(ports.removeValue(forKey: name)!, keepingFile: false)
            changes.removed.append(name)
        }
        for name in uids.keys.sorted() {
            let u = uids[name]!
            let g = gids[name] ?? []
            if let port = ports[name] {
                if port.checkInUIDs != u || port.checkInGIDs != g {
                    ports[name]!.checkInUIDs = u
                    ports[name]!.checkInGIDs = g
                    changes.updated.append(name)
                }
                continue
            }
            if isOwned(name) {
                changes.deferred.append(name)
                continue
            }
            let fd: SharedDescriptor
            let file: PortSocketFile
            let wasRestored: Bool
            if let r = unused.removeValue(forKey: name.value) {
                (fd, file, wasRestored) = (r.fileDescriptor, r.file, true)
            } else {
                do {
                    (fd, file) = try directory.makeListeningSocket(declared: true)
                } catch {
                    discardUnused()
                    throw error
                }
                wasRestored = false
            }
            ports[name] = Port(
                name: name, checkInUIDs: u, checkInGIDs: g, listening: SendRight(sharing: fd), descriptor: fd,
                file: file, sinceMilliseconds: now)
            changes.added.append(name)
            if wasRestored { changes.restored.append(name) }
        }
        discardUnused()
        return changes
    }

    /// Notes that the service manager holds a copy of `name`'s socket.
    func markStored(_ name: PortName) {
        ports[name]?.stored = true
    }

    /// Counts a check-in.
    func recordCheckIn(_ name: PortName, pid: Int32) {
        ports[name]?.checkIns += 1
        ports[name]?.lastCheckInPID = pid
    }

    /// Closes portd's descriptors (at shutdown; a service that checked in
    /// keeps its copy until it exits). The file of a port whose socket the
    /// service manager holds stays, so that the socket passed back at the
    /// next start is reachable at the same path; the others are removed.
    func close() {
        for port in ports.values { close(port, keepingFile: port.stored) }
        ports.removeAll()
    }

    private func close(_ port: Port, keepingFile: Bool) {
        port.listening.invalidate()
        if !keepingFile { directory.remove(port.file) }
    }
}
