// main: portctl's process shell, parse → run → exit code (docs/DESIGN.md §5),
// done by swift-argument-parser: a verb's `run()` either returns (status 0)
// or throws an ExitCode from ExitStatus after printing why. With --json, a
// usage error is printed as the JSON error object too.
// SIGPIPE is ignored first, so a closed standard output or a command that
// stops reading its input is an error value (EPIPE), not a crash.
// `send` and `request` lines go through MessageLine first, a parser written
// by hand that takes the common lines and returns nil for anything else,
// which swift-argument-parser then parses (help, usage errors, completions):
// a send then costs no reflection (docs/BENCHMARKS.md). Both parsers make
// the same MessageCall and run the same code.

import ArgumentParser
import PortCore

try? CurrentProcess.ignore(signal: Signal.brokenPipe)
if CommandLine.arguments.count == 1 {
    CurrentProcess.writeStandardError(HelpTopic.shortUsage)
    CurrentProcess.exit(ExitStatus.usage.rawValue)
}
if let call = MessageLine.parse(CommandLine.arguments.dropFirst()) {
    CurrentProcess.exit(call.runReporting())
}
do {
    // `help UNKNOWN` is a usage error (swift-argument-parser prints the root's help).
    if let problem = HelpTopic.problem(CommandLine.arguments.dropFirst()) { throw ValidationError(problem) }
    var command = try PortctlCommand.parseAsRoot()
    try command.run()
} catch var error {
    // An unknown option is named as such, even where a bad NAME came first.
    if PortctlCommand.exitCode(for: error) == .validationFailure,
        let unknown = UnknownOption.hiddenBehindAName(Array(CommandLine.arguments.dropFirst()))
    {
        error = unknown
    }
    // A usage error on a command line that asked for --json is JSON too;
    // everything else (help, version, a verb's own exit code) as usual.
    let options = CommandLine.arguments.dropFirst().prefix { $0 != "--" }
    if options.contains("--json"), !(error is ExitCode), PortctlCommand.exitCode(for: error) == .validationFailure {
        Failure.writeJSON(
            word: Failure.word(for: ExitStatus.usage.rawValue), status: ExitStatus.usage.rawValue,
            message: PortctlCommand.message(for: error))
        CurrentProcess.exit(ExitStatus.usage.rawValue)
    }
    PortctlCommand.exit(withError: error)
}
