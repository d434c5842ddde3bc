// Request: `portctl request NAME --msgid N [COMPONENT...]`: send with a
// one-shot reply right (REPLY_EXPECTED) and print the reply. --timeout
// bounds each half: the wait for room to send and the wait for the reply.
// No reply in time → 75; the port went away first → 74.

import ArgumentParser
import PortCore

struct Request: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send a request to a name and print the reply.",
        discussion: """
            Components are given as for send. The reply prints one line per component \
            (text escaped, quoted), one JSON object with --json, or its data bytes as they are with --raw; \
            text and JSON show at most --max-bytes of each component. \
            --timeout (default 5 s) bounds each wait: for portd, for the name with --wait, for room \
            in the receiver's queue, for the reply.

            \(ExitStatus.verbHelpText)
            """
    )

    @Argument(help: "The name to send to.") var name: String
    @OptionGroup var message: MessageOptions
    @OptionGroup var components: ComponentOptions
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Write the reply's data components to standard output as they are, concatenated.")
    var raw = false

    @Option(help: MessageRendering.maxBytesHelp)
    var maxBytes: Int?

    func validate() throws {
        try NameArgument.check(name)
        if raw && output.json { throw ValidationError("--raw and --json exclude each other") }
        try MessageRendering.check(maxBytes: maxBytes)
        try connection.check()
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let parts = try components.components()
        let server = try connection.connect()
        let right = try Destination.lookUp(name, on: server, wait: message.wait, connection: connection)
        let result: RequestResult
        do {
            result = try right.request(
                PCPortMessage(msgid: message.msgid.value, components: parts),
                sendTimeout: connection.exchangeTimeout, receiveTimeout: connection.exchangeTimeout)
        } catch {
            throw Failure(error)
        }
        switch result {
        case .reply(let reply):
            if output.quiet { return }
            if raw {
                try Output.bytes(MessageRendering.rawBytes(reply))
            } else if output.json {
                let limit = MessageRendering.limit(maxBytes, json: true)
                try output.emit(MessageRendering.json(reply, leading: [("name", .string(name))], limit: limit).text)
            } else {
                let limit = MessageRendering.limit(maxBytes, json: false)
                for line in MessageRendering.componentLines(reply, limit: limit) { try output.emit(line) }
            }
        case .sendTimedOut:
            throw Failure(.timedOut, "the queue of \(name) stayed full for \(connection.timeoutText)")
        case .receiveTimedOut:
            throw Failure(.timedOut, "no reply from \(name) within \(connection.timeoutText)")
        case .invalidPort:
            throw Failure(.portInvalid, "the port of \(name) went away before replying")
        }
    }
}
