// Request: `portctl request NAME --msgid N [COMPONENT...]`: send with a
// one-shot reply right (REPLY_EXPECTED) and print the reply. --timeout
// bounds each half: the wait for room to send and the wait for the reply.
// No reply in time → 75; the port went away first → 74.
// What runs is MessageCall.request(), the same for both parsers of the
// command line (MessageCall, MessageLine).

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

    @Option(parsing: .unconditional, help: MessageRendering.maxBytesHelp)
    var maxBytes: Int?

    func validate() throws {
        try NameArgument.check(name)
        if raw && output.json { throw ValidationError("--raw and --json exclude each other") }
        try MessageRendering.check(maxBytes: maxBytes)
        try connection.check()
    }

    /// The values parsed, as the fast path (MessageLine) makes them too.
    var call: MessageCall {
        MessageCall(
            verb: .request, name: name, msgid: message.msgid.value, wait: message.wait, components: components.values,
            connection: connection.values, output: output.values, raw: raw, maxBytes: maxBytes)
    }

    func run() throws { try reporting(json: output.json, call.run) }
}

extension MessageCall {
    /// `portctl request`, whichever parser read the command line.
    func request() throws(Failure) {
        let parts = try components.components()
        let server = try connection.connect()
        let right = try Destination.lookUp(name, on: server, wait: wait, connection: connection)
        let result: RequestResult
        do {
            result = try right.request(
                PCPortMessage(msgid: msgid, components: parts),
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
        case .receiveTimedOut, .sent:  // `.sent` only for a zero timeout, which --timeout refuses
            throw Failure(.timedOut, "no reply from \(name) within \(connection.timeoutText)")
        case .invalidPort:
            throw Failure(.portInvalid, "the port of \(name) went away before replying")
        }
    }
}
