// Failure: how a portctl verb ends unsuccessfully: one line on standard
// error, `portctl: <what happened>`, then the documented exit status.
// Verbs throw `Failure`; nothing else prints errors.

import ArgumentParser
import PortCore

struct Failure: Error {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// Prints the message and returns the exit code to throw.
    func report() -> ExitCode {
        CurrentProcess.writeStandardError("portctl: \(message)\n")
        return status.exitCode
    }
}
