// CheckIn: `portctl checkin SERVER`: Apple's worker check-in handshake from a
// shell: create a port, send SERVER the check-in message (msgid 100 by
// default) with that port as its reply port and --name WORKER as its one
// component, then serve the port like `listen` (print, or --exec). When
// SERVER's port goes away, the worker has nobody left to work for: 74.
// (Not to be confused with claiming a declared port: `listen --declared`.)

import ArgumentParser
import PortCore

struct CheckIn: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkin",
        abstract: "Check in to a server as a worker (msgid 100 with our port as reply port), then listen.",
        discussion: """
            The messages the server then sends to the worker's port are printed, or handled by --exec, \
            as with listen (see portctl listen --help for --exec). --timeout bounds the wait for each \
            message (no bound without it). Exits with 74 when the server's port goes away.

            \(ExitStatus.verbHelpText)
            """
    )

    @Argument(help: "The server's name.") var server: String
    @Option(parsing: .unconditional, help: ArgumentHelp("The check-in message ID.", valueName: "n"))
    var msgid = MessageID(WireFormat.checkInMessageID)
    @Option(help: ArgumentHelp("The worker's name, sent as the check-in's component.", valueName: "worker"))
    var name: String?
    @Flag(help: "Wait for the server's name to be registered (up to --timeout).")
    var wait = false
    @OptionGroup var serve: ServeOptions
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try NameArgument.check(server, what: "server name")
        try MessageID.check(msgid)
        try connection.check()
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let nameServer = try connection.connect()
        let right = try Destination.lookUp(server, on: nameServer, wait: wait, connection: connection.values)
        let port = PCPort()
        defer { port.invalidate() }
        let messageServer = MessageServer(
            port: port, name: server, serve: serve, output: output, idleTimeout: connection.explicitTimeout)
        let serverName = server
        do {
            try right.onInvalidation(in: PCRunLoop.current, forMode: .default) {
                messageServer.failAfterDraining(Failure(.portInvalid, "the port of \(serverName) went away"))
            }
        } catch {
            throw Failure(.failure, "cannot watch \(server): \(error)")
        }
        let sent: SendResult
        do {
            sent = try right.checkIn(workerPort: port, name: name, msgid: msgid.value, timeout: connection.exchangeTimeout)
        } catch {
            throw Failure(error)
        }
        switch sent {
        case .sent: break
        case .timedOut: throw Failure(.timedOut, "the queue of \(server) stayed full for \(connection.timeoutText)")
        case .receiverGone: throw Failure(.portInvalid, "the port of \(server) went away")
        }
        output.notice("checked in to \(server)")
        try messageServer.run()
        withExtendedLifetime(nameServer) {}
    }
}
