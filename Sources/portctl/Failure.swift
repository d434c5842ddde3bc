// Failure: how a portctl verb ends unsuccessfully: one line on standard
// error, `portctl: <what happened>`, then the documented exit status.
// Verbs throw `Failure`; nothing else prints errors. A NameServerError maps
// to its status here, in one place (the table is portctl(1) EXIT STATUS).

import ArgumentParser
import PortCore

struct Failure: Error {
    /// The exit status: an ExitStatus, or a child's status passed on (register).
    let code: Int32
    /// Nil for a failure that has nothing to say (standard output closed).
    let message: String?

    init(_ status: ExitStatus, _ message: String) {
        self.code = status.rawValue
        self.message = message
    }

    private init(code: Int32) {
        self.code = code
        self.message = nil
    }

    /// A failure with a status outside the table, in a shell's convention
    /// (127: the command to run was not found).
    init(exitCode code: Int32, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A failure that prints nothing.
    static func silent(_ status: ExitStatus) -> Failure { Failure(code: status.rawValue) }

    /// Exits with `code` and prints nothing (a command's own status, passed on).
    static func silent(exitCode code: Int32) -> Failure { Failure(code: code) }

    /// The status and message for a name-server error.
    init(_ error: NameServerError) {
        let status: ExitStatus =
            switch error {
            case .notRunning, .notPortd: .notRunning
            // An untrusted /run/user/$UID is refused as a directory closed
            // to us is (portctl(1), EXIT STATUS 77).
            case .permissionDenied, .denied, .untrustedDirectory: .permissionDenied
            case .invalidName: .usage
            case .timedOut: .timedOut
            case .connectionLost: .portInvalid
            case .watchOverflow: .timedOut
            case .badRequest, .protocolError, .unsupportedVersion: .protocolError
            case .limit, .daemonFailure: .failure
            case .transport(let e):
                if case .invalidated = e { .portInvalid } else { .failure }
            }
        self.init(status, error.description)
    }

    /// Prints the message (one JSON object with --json) and returns the
    /// exit status.
    func report(json: Bool = false) -> Int32 {
        if let message {
            if json {
                Self.writeJSON(word: Self.word(for: code), status: code, message: message)
            } else {
                CurrentProcess.writeStandardError("portctl: \(message)\n")
            }
        }
        return code
    }

    /// The error word of an exit status, for JSON (portctl(1), EXIT STATUS).
    static func word(for code: Int32) -> String {
        switch ExitStatus(rawValue: code) {
        case .success: "success"
        case .failure: "failure"
        case .usage: "usage"
        case .nameNotFound: "name-not-found"
        case .notRunning: "not-running"
        case .portInvalid: "port-invalid"
        case .timedOut: "timed-out"
        case .protocolError: "protocol-error"
        case .permissionDenied: "permission-denied"
        case nil: "command-failed"  // a status outside the table: a command's, or 127
        }
    }

    /// `{"error":WORD,"status":N,"message":TEXT}` on standard error.
    static func writeJSON(word: String, status: Int32, message: String) {
        let object = JSONObject([
            ("error", .string(word)), ("status", .integer(Int64(status))), ("message", .string(message)),
        ])
        CurrentProcess.writeStandardError(object.text + "\n")
    }
}

/// Runs a verb's body, turning a Failure into its message (JSON with
/// --json) and exit code.
func reporting(json: Bool, _ body: () throws(Failure) -> Void) throws(ExitCode) {
    do {
        try body()
    } catch {
        throw ExitCode(error.report(json: json))
    }
}
