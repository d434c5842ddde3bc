// Listen: `portctl listen NAME`: register NAME and print each message it
// receives (MessageServer), or run --exec COMMAND per message and reply
// with its output. --count N exits 0 after N messages; --timeout S exits 75
// when S seconds pass without a message; when portd goes (and the name with
// it), 74 once the messages already received are handled.

import ArgumentParser
import PortCore

struct Listen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Register a name and print (or --exec a command for) each message it receives.",
        discussion: """
            Each message prints as a heading (msgid, sender pid/uid/gid, its origin on another host when a bridge relayed it, whether it has a reply port) \
            and one line per component, or one JSON object with --json, showing at most --max-bytes of \
            each component (4096, or 64 KiB with --json, by default). A request gets an empty reply \
            unless --exec is given. --timeout bounds the wait for each message (no bound without it); \
            a taken name is waited for in its queue unless --no-queue.

            With --exec COMMAND, COMMAND runs with /bin/sh -c once per message, with the message's data \
            components concatenated on its standard input and PORTCTL_NAME, PORTCTL_MSGID, \
            PORTCTL_SENDER_PID, PORTCTL_SENDER_UID, PORTCTL_SENDER_GID, PORTCTL_REPLY, \
            PORTCTL_COMPONENTS and PORTCTL_LENGTHS in its environment; when the message has a reply \
            port, COMMAND's standard output is the reply.

            With --monitorable, portctl monitor run by our uid or by root sees a copy of each message \
            (never its descriptors); other users' monitors are refused.

            \(ExitStatus.verbHelpText)
            """
    )

    @Argument(help: "The name to register.") var name: String
    @OptionGroup var serve: ServeOptions
    @Flag(help: "Let processes of our uid, and root, see the messages with portctl monitor.")
    var monitorable = false
    @OptionGroup var ownership: OwnershipOptions<ListenOwnership>
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try NameArgument.check(name)
        try connection.check()
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let server = try connection.connect()
        // Set once the port exists; NAME_LOST can only come after that.
        var lostHandler: ((NameOwner.Process) -> Void)?
        let port = try ownership.take(name, on: server, connection: connection, output: output) { owner in
            lostHandler?(owner)
        }
        defer { port.invalidate() }
        port.allowsMonitoring = monitorable
        let messageServer = MessageServer(
            port: port, name: name, serve: serve, output: output, idleTimeout: connection.explicitTimeout)
        let name = self.name
        lostHandler = { owner in
            messageServer.failAfterDraining(Failure(.portInvalid, "\(name) was taken over by \(owner)"))
        }
        do {
            try server.onConnectionLoss(in: PCRunLoop.current, forMode: .default) {
                messageServer.failAfterDraining(
                    Failure(.portInvalid, "portd closed the connection; \(name) is no longer registered"))
            }
        } catch {
            throw Failure(error)
        }
        output.notice("listening on \(name)")
        try messageServer.run()
        withExtendedLifetime(server) {}
    }
}
