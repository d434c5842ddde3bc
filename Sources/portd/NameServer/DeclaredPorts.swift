// DeclaredPorts: the ports portd creates at start and holds for services
// that claim them later, launchd's model (not the seeds' worker check-in,
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
// Invariants: the names are unique (a name declared twice is one port whose
// check-in uids are the union); portd's descriptor is held by a SendRight
// (which merely carries a descriptor) so that CHECKIN can put it in a reply
// as is: sending passes a duplicate and portd keeps its own.

import PortCore

final class DeclaredPorts {
    struct Port {
        let name: PortName
        /// Who may check in: these uids, and members of these gids.
        let checkInUIDs: Set<UInt32>
        let checkInGIDs: Set<UInt32>
        /// Holds portd's listening descriptor.
        let listening: SendRight
        let file: PortSocketFile
        /// Check-ins so far, and the last one's credentials.
        var checkIns = 0
        var lastCheckIn: Credentials?
    }

    private var ports: [PortName: Port] = [:]
    private let directory: PortDirectory

    /// Creates the sockets of `declared` in `directory`. On failure the
    /// sockets made so far are closed and their files removed.
    init(_ declared: [NameServerSettings.DeclaredPort], in directory: PortDirectory) throws(SystemCallError) {
        self.directory = directory
        var uids: [PortName: Set<UInt32>] = [:]
        var gids: [PortName: Set<UInt32>] = [:]
        var order: [PortName] = []
        for d in declared {
            if uids[d.name] == nil { order.append(d.name) }
            uids[d.name, default: []].formUnion(d.checkInUIDs)
            gids[d.name, default: []].formUnion(d.checkInGIDs)
        }
        for name in order {
            do {
                let (fd, file) = try directory.makeListeningSocket(declared: true)
                ports[name] = Port(
                    name: name, checkInUIDs: uids[name]!, checkInGIDs: gids[name] ?? [],
                    listening: SendRight(adopting: fd), file: file)
            } catch {
                close()
                throw error
            }
        }
    }

    subscript(name: PortName) -> Port? { ports[name] }

    var count: Int { ports.count }

    /// The declared ports in byte order of their names.
    var all: [Port] { ports.keys.sorted().map { ports[$0]! } }

    /// Counts a check-in.
    func recordCheckIn(_ name: PortName, by who: Credentials) {
        ports[name]?.checkIns += 1
        ports[name]?.lastCheckIn = who
    }

    /// Closes portd's descriptors and removes the files (at shutdown; a
    /// service that checked in keeps its copy until it exits).
    func close() {
        for port in ports.values {
            port.listening.invalidate()
            directory.remove(port.file)
        }
        ports.removeAll()
    }
}
