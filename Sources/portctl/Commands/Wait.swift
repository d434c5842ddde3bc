// Wait: `portctl wait NAME`: returns (0) once NAME is registered (LOOKUP
// with wait_ms), or 75 when --timeout passes first. Without --timeout it
// waits as long as it takes, one bounded LOOKUP after another.

import ArgumentParser
import PortCore

struct Wait: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a name is registered.",
        discussion: """
            Without --timeout, waits indefinitely.

            \(ExitStatus.verbHelpText)
            """
    )

    /// The longest single wait asked of portd when waiting indefinitely.
    static let slice: Duration = .seconds(60)

    @Argument(help: "The name.") var name: String
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try NameArgument.check(name)
        try connection.check()
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let server = try connection.connect()
        let deadline = connection.explicitTimeout.map { MonotonicInstant.now() + $0 }
        while true {
            let wait = deadline.map { $0 - .now() } ?? Self.slice
            let outcome: LookupOutcome
            do {
                outcome = try server.resolve(name, wait: max(wait, .milliseconds(1)))
            } catch {
                throw Failure(error)
            }
            switch outcome {
            case .found(let right, let owner):
                right.invalidate()
                if output.json {
                    try output.emit(
                        JSONObject([
                            ("name", .string(name)), ("pid", .integer(Int64(owner.pid))), ("uid", .unsigned(UInt64(owner.uid))),
                        ]).text)
                }
                return
            case .notFound:
                throw Failure(.protocolError, "portd answered not-found to a lookup that asked to wait")
            case .timedOut:
                if let deadline, MonotonicInstant.now() >= deadline {
                    throw Failure(.timedOut, "\(name) was not registered within \(connection.timeoutText)")
                }
            }
        }
    }
}
