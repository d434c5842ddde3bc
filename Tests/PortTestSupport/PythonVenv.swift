// Python peers with packages of their own (nats-py) run in the project's
// virtual environment, .build-venv/, which scripts/ensure-venv makes and
// scripts/test runs first; $PORTD_TEST_PYTHON names another interpreter.
// Scripts the tests share live in Tests/PortTestSupport/Python.

import Foundation

package enum PythonVenv {
    /// The interpreter: $PORTD_TEST_PYTHON, or the venv's python3.
    package static var python: String {
        get throws {
            if let explicit = ProcessInfo.processInfo.environment["PORTD_TEST_PYTHON"], !explicit.isEmpty {
                return explicit
            }
            let path = SourceTree.path(".build-venv/bin/python3")
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw HarnessError.missingBinary("\(path) (run scripts/ensure-venv, as scripts/test does)")
            }
            return path
        }
    }

    /// A script of Tests/PortTestSupport/Python (e.g. "nats_peer.py").
    package static func script(_ name: String) -> String { SourceTree.path("Tests/PortTestSupport/Python/\(name)") }

    /// Starts `script` with `arguments` under the venv's python and leaves it running.
    package static func start(_ script: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> ChildProcess
    {
        try ChildProcess(
            executable: try python, arguments: ["-u", script] + arguments,
            environment: ChildProcess.cleanEnvironment(environment))
    }

    /// Runs `script` with `arguments` to completion (within `timeout`).
    package static func run(
        _ script: String, _ arguments: [String], environment: [String: String] = [:], timeout: Duration = HarnessTimeout
    ) throws -> CommandResult {
        let child = try start(script, arguments, environment: environment)
        let status = try child.waitForExit(timeout: timeout)
        return CommandResult(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }
}

/// Tests/PortTestSupport/Python/nats_peer.py: a NATS responder, requester,
/// key-value writer and watcher in nats-py (its docstring has the commands).
package enum NatsPeer {
    package static var script: String { PythonVenv.script("nats_peer.py") }

    /// A responder on `subject` answering "PREFIX" + payload; returns once it is subscribed ("ready").
    package static func respond(url: String, subject: String, queue: String? = nil, prefix: String = "echo:") throws
        -> ChildProcess
    {
        let child = try PythonVenv.start(
            script, ["respond", url, subject, "--prefix", prefix] + (queue.map { ["--queue", $0] } ?? []))
        do {
            try child.waitForStandardOutput(containing: "ready\n")
        } catch {
            child.killAndReap()
            throw HarnessError.unexpected("nats_peer.py respond: \(error); stderr: \(child.standardError)")
        }
        return child
    }

    /// Exit statuses of `request` (its last attempt's outcome).
    package static let replied: Int32 = 0
    package static let timedOut: Int32 = 2
    package static let noResponders: Int32 = 3
    package static let connectFailed: Int32 = 4

    /// One attempt of `request`.
    package struct Attempt: Equatable, CustomStringConvertible {
        package enum Outcome: String { case reply, timeout, noResponders = "no-responders" }
        package let outcome: Outcome
        package let milliseconds: Int
        /// The reply's payload (empty unless `.reply`).
        package let payload: String
        package var description: String { "\(outcome.rawValue) after \(milliseconds) ms \(payload)" }
    }

    /// Requests on `subject`, `attempts` of them one after another (and
    /// more for `forSeconds` when given, one per `timeout` at most), then
    /// again after each failure for `untilOK` seconds when given: the exit
    /// status and each attempt's outcome.
    package static func request(
        url: String, subject: String, payload: String, timeout: Double = 1, attempts: Int = 1,
        forSeconds: Double? = nil, untilOK: Double? = nil
    ) throws -> (result: CommandResult, attempts: [Attempt]) {
        var arguments = ["request", url, subject, payload, "--timeout", "\(timeout)", "--attempts", "\(attempts)"]
        if let forSeconds { arguments += ["--for", "\(forSeconds)"] }
        if let untilOK { arguments += ["--until-ok", "\(untilOK)"] }
        let result = try PythonVenv.run(script, arguments)
        let parsed = result.standardOutput.split(separator: "\n").compactMap { line -> Attempt? in
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count >= 2, let outcome = Attempt.Outcome(rawValue: String(fields[0])),
                let milliseconds = Int(fields[1])
            else { return nil }
            return Attempt(outcome: outcome, milliseconds: milliseconds, payload: fields.count > 2 ? String(fields[2]) : "")
        }
        return (result, parsed)
    }
}
