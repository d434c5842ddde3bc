// NameServerHarness: the real NameServer (parsing, RequestAccess, the
// registry, the consequences) driven one message at a time, without its
// control port joining a loop: the seam of the fuzz target of portd's
// request handling (Fuzz/PortdRequests). A message goes to the very
// handler PCPort calls for a record from a client (`NameServer.handle`), and
// a client's hang-up to the very callback PCPort calls (`clientGone`).
//
// Invariants: the control socket is bound and listened on (NameServer
// needs one) but never scheduled, so no client ever connects: every request
// comes through `handle`. Messages NameServer originates go where they
// would: to the ports the messages carried. Use on one thread, the one
// whose loop `loop` is. `stop()` removes every file the server made.

import Logging
import PortCore

package final class NameServerHarness {
    /// The limits of portd's control port, which a received record is
    /// decoded against.
    package static var controlPortLimits: PortLimits { NameServer.controlPortLimits }

    private let server: NameServer
    private let listener: ControlListener
    /// The control socket's path (portd's own: a port connected to it is
    /// refused as a watcher or notification port).
    package let socketPath: String

    /// A name server with its control socket at `socketPath` (its directory
    /// must exist) and its port directory beside it, serving `onlyUID` (nil:
    /// the system instance), with small limits when `smallLimits` (so
    /// that `limit` refusals are reached), its messages logged nowhere.
    package init(socketPath: String, onlyUID: UInt32?, smallLimits: Bool, loop: PCRunLoop) throws {
        var settings = NameServerSettings(onlyUID: onlyUID)
        if smallLimits {
            settings.limits.namesPerClient = 3
            settings.limits.pendingLookupsPerClient = 2
            settings.limits.watchesPerClient = 2
            settings.limits.clientsPerUID = 3
            settings.limits.clients = 4
        }
        let logger = Logger(label: "portd-harness") { _ in SwiftLogNoOpLogHandler() }
        self.socketPath = socketPath
        listener = try ControlListener.bind(
            at: DaemonSocketLocation(path: socketPath, origin: .option), userID: CurrentProcess.userID)
        let directory = try PortDirectory.prepare(
            path: PortDirectory.path(forControlSocket: socketPath), userID: CurrentProcess.userID
        ).0
        server = try NameServer(
            controlDescriptor: listener.handOverDescriptor(), directory: directory, settings: settings, logger: logger,
            loop: loop)
    }

    /// Hands `message` to the name server as its control port would, and
    /// returns the reply it would send.
    /// What the request makes portd send to watchers and waiting lookups,
    /// which the server's loop would send in the passes after it, is sent
    /// before this returns; each message is served in a pass of its own.
    package func handle(_ message: PCPortMessage) -> PCPortMessage? {
        // Lent as a view, as the control port lends each record
        // (`NameServer.handleView`: a LOOKUP is read in place).
        let reply = PortMessageView.lend(message) { server.handleView($0) }
        server.flushHandovers()
        server.flushFanout()
        server.passBegins()
        return reply
    }

    /// The connection `client` hung up (its consequences sent, as for `handle`).
    package func clientGone(_ client: UInt64) {
        server.clientGone(client)
        server.flushHandovers()
        server.flushFanout()
    }

    /// Stops the server and removes its files.
    package func stop() {
        server.stop()
        listener.close()
    }
}
