// Send: `portctl send NAME --msgid N [COMPONENT...]`: look NAME up and send
// one message to it, components in command-line order (ComponentOptions).
// --wait waits for NAME to be registered (up to --timeout); --timeout also
// bounds the wait for room in a full receiver queue.
// Not registered → 67; full queue until the timeout → 75; receiver gone → 74.
// What runs is MessageCall.send(), the same for both parsers of the
// command line (MessageCall, MessageLine).

import ArgumentParser
import PortCore

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a message to a name.",
        discussion: """
            Components are sent in the order given: --data STRING, --file PATH, --hex HEX, and - \
            (standard input). A component larger than one record travels as a sealed memfd. \
            --timeout (default 5 s) bounds each wait: for portd, for the name with --wait, for room \
            in the receiver's queue.

            \(ExitStatus.verbHelpText)
            """
    )

    @Argument(help: "The name to send to.") var name: String
    @OptionGroup var message: MessageOptions
    @OptionGroup var components: ComponentOptions
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try NameArgument.check(name)
        try connection.check()
    }

    /// The values parsed, as the fast path (MessageLine) makes them too.
    var call: MessageCall {
        MessageCall(
            verb: .send, name: name, msgid: message.msgid.value, wait: message.wait, components: components.values,
            connection: connection.values, output: output.values)
    }

    func run() throws { try reporting(json: output.json, call.run) }
}

extension MessageCall {
    /// `portctl send`, whichever parser read the command line.
    func send() throws(Failure) {
        let parts = try components.components()
        let server = try connection.connect()
        let right = try Destination.lookUp(name, on: server, wait: wait, connection: connection)
        let result: SendResult
        do {
            result = try right.send(PCPortMessage(msgid: msgid, components: parts), timeout: connection.exchangeTimeout)
        } catch {
            throw Failure(error)
        }
        switch result {
        case .sent:
            if output.json {
                try output.emit(
                    JSONObject([("name", .string(name)), ("msgid", .unsigned(UInt64(msgid))), ("sent", .bool(true))]).text)
            }
        case .timedOut:
            throw Failure(.timedOut, "the queue of \(name) stayed full for \(connection.timeoutText)")
        case .receiverGone:
            throw Failure(.portInvalid, "the port of \(name) went away")
        }
    }
}

/// --msgid and --wait, shared by send and request.
struct MessageOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("The message ID (decimal or 0x hexadecimal).", valueName: "n"))
    var msgid: MessageID

    @Flag(help: "Wait for the name to be registered (up to --timeout) instead of failing at once.")
    var wait = false

    func validate() throws { try MessageID.check(msgid) }
}

/// Looking a destination up for send, request and checkin.
enum Destination {
    static func lookUp(
        _ name: String, on server: PortNameServer, wait: Bool, connection: ConnectionValues
    ) throws(Failure) -> SendRight {
        let outcome: LookupOutcome
        do {
            outcome = try server.resolve(name, wait: wait ? connection.exchangeTimeout : nil)
        } catch {
            throw Failure(error)
        }
        switch outcome {
        case .found(let right, _): return right
        case .notFound: throw Failure(.nameNotFound, "\(name) is not registered")
        case .timedOut: throw Failure(.timedOut, "\(name) was not registered within \(connection.timeoutText)")
        }
    }
}

extension Failure {
    /// The status and message for a port-layer error.
    init(_ error: PortError) {
        if case .invalidated = error {
            self.init(.portInvalid, error.description)
        } else {
            self.init(.failure, error.description)
        }
    }
}
