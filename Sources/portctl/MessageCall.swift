// MessageCall: one `portctl send` or `portctl request`, parsed: plain
// values, whichever parser produced them. swift-argument-parser's Send and
// Request make one from their option groups; MessageLine, the fast path,
// makes one from the command line by itself. Both then run the same code,
// `run()` (send() in Commands/Send.swift, request() in Commands/Request.swift),
// and check the values with the same functions (`problem`s), so the two
// parsers can differ only in which command lines they take, never in what a
// line means (MessageLineTests compares them line by line).
//
// Nothing here uses swift-argument-parser: the fast path must not pay for
// its reflection (docs/BENCHMARKS.md, "portctl's start-up, counted").

import PortCore

struct MessageCall: Equatable {
    enum Verb: Equatable { case send, request }

    var verb: Verb
    var name: String
    var msgid: UInt32
    var wait = false
    var components = ComponentValues()
    var connection = ConnectionValues()
    var output = OutputValues()
    /// request only: --raw and --max-bytes.
    var raw = false
    var maxBytes: Int? = nil

    /// Runs the verb; a Failure carries the exit status and its message.
    func run() throws(Failure) {
        switch verb {
        case .send: try send()
        case .request: try request()
        }
    }

    /// Runs the verb and reports a failure as every verb does (Failure's
    /// message, JSON with --json); returns the exit status.
    func runReporting() -> Int32 {
        do {
            try run()
            return ExitStatus.success.rawValue
        } catch {
            return error.report(json: output.json)
        }
    }
}
