// ConnectionOptions: how every portctl verb finds and waits for portd:
// `--socket PATH`, `--user`/`--system`, `--timeout S`. Path resolution is
// PortCore's DaemonPaths, the same code portd binds with.
//
// --timeout has one meaning per kind of verb, documented in portctl(1):
// for a one-shot exchange (status, list, lookup, send, request, wait's
// default) it bounds each wait and defaults to 5 s; for verbs that run
// until stopped (register, listen, watch, monitor, checkin) it bounds the wait for
// portd's answers (5 s when not given) and, when given, also the wait for
// the next message or event ("idle" timeout).
//
// The group is declared twice: on the root command (PortctlCommand), so
// the options may come before the verb as with busctl, and on each verb,
// so its --help lists them. swift-argument-parser parses a root option
// wherever it appears and hands the verb's group the root's value. One
// rule for repeated options (PortctlCommand's help, README, portctl(1)):
// the last one on the command line counts; --user and --system are one
// setting, the instance, so the later of them counts too (`.chooseLast`,
// as busctl and systemctl do), and so it is for portd. The checks of
// the values are therefore the verbs' (`check()` from their validate()),
// so a bad value is reported with the verb's usage line.
//
// The options groups hold what swift-argument-parser parsed; what the code
// that connects and prints uses are plain values, ConnectionValues and
// OutputValues, which the fast path of send and request (MessageLine)
// fills in without swift-argument-parser. Their checks (`problem`) are
// shared by both parsers.

import ArgumentParser
import PortCore

extension DaemonInstance: EnumerableFlag {
    public static func help(for value: DaemonInstance) -> ArgumentHelp? {
        switch value {
        case .user: "Talk to the per-user instance (the default)."
        case .system: "Talk to the system instance (\(DaemonPaths.systemSocket))."
        }
    }
}

struct ConnectionOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("The control socket of portd (overrides PORTD_SOCKET and the instance).", valueName: "path"),
        completion: .file())
    var socket: String?

    @Flag(exclusivity: .chooseLast)
    var instance: DaemonInstance?

    // Any text is the option's value, judged by check(): a bad one is then
    // reported with the verb's usage line, not the root command's. Parsed
    // unconditionally, so a negative number (`--timeout -1`) is that value
    // too and gets check()'s message, not "Missing value".
    @Option(
        name: .customLong("timeout"), parsing: .unconditional,
        help: ArgumentHelp("Seconds to wait before giving up; the default depends on the verb (5 s, or no bound for listen, checkin, watch, monitor, wait and register: see its help).", valueName: "seconds"))
    var timeoutArgument: Seconds?

    /// --timeout, when given as a number.
    var timeout: Double? { timeoutArgument?.value }

    /// A --timeout value as given.
    struct Seconds: ExpressibleByArgument {
        let value: Double?
        let text: String
        init?(argument: String) {
            text = argument
            value = Double(argument)
        }
    }

    /// The checks of the values, for the verbs' validate().
    func check() throws {
        if let problem = ConnectionValues.problem(socket: socket, timeout: timeoutArgument?.text) {
            throw ValidationError(problem)
        }
    }

    /// The values, as the code that connects uses them.
    var values: ConnectionValues { ConnectionValues(socket: socket, instance: instance, timeout: timeout) }

    /// The bound of one exchange with portd (and of one-shot waits).
    var exchangeTimeout: Duration { values.exchangeTimeout }

    /// The explicit --timeout, if given (for waits that are unbounded by default).
    var explicitTimeout: Duration? { values.explicitTimeout }

    /// The value printed in messages ("5 s").
    var timeoutText: String { values.timeoutText }

    /// Connects to portd, turning every failure into the documented exit status.
    func connect() throws(Failure) -> PortNameServer { try values.connect() }
}

/// The parsed values of the connection options, free of
/// swift-argument-parser: what the verbs connect with, and what the fast
/// path for send and request (MessageLine) fills in by itself.
struct ConnectionValues: Equatable {
    /// The bound of a one-shot exchange when --timeout is not given.
    static let defaultTimeout: Double = 5

    var socket: String? = nil
    var instance: DaemonInstance? = nil
    /// --timeout, already checked (`problem`).
    var timeout: Double? = nil

    /// What is wrong with the values as given (--socket, --timeout's text),
    /// or nil: the one check of both parsers.
    static func problem(socket: String?, timeout text: String?) -> String? {
        if let text {
            guard let timeout = Double(text), timeout.isFinite, timeout > 0, timeout <= 86_400 else {
                return "--timeout '\(text)': give a number of seconds greater than 0 (at most 86400)"
            }
        }
        if let socket, socket.isEmpty { return "--socket needs a path" }
        return nil
    }

    /// Where portd's socket is for this invocation.
    var location: DaemonSocketLocation {
        DaemonPaths.resolve(
            explicitPath: socket, instance: instance, userID: CurrentProcess.userID,
            environment: CurrentProcess.environment)
    }

    /// The bound of one exchange with portd (and of one-shot waits).
    var exchangeTimeout: Duration { .seconds(timeout ?? Self.defaultTimeout) }

    /// The explicit --timeout, if given (for waits that are unbounded by default).
    var explicitTimeout: Duration? { timeout.map { .seconds($0) } }

    /// The value printed in messages ("5 s").
    var timeoutText: String { "\(Self.format(timeout ?? Self.defaultTimeout)) s" }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e15 ? String(Int64(seconds)) : String(seconds)
    }

    /// Connects to portd, turning every failure into the documented exit status.
    func connect() throws(Failure) -> PortNameServer {
        do {
            return try PortNameServer(location: location, timeout: exchangeTimeout)
        } catch {
            throw Failure(error)
        }
    }
}

/// --json and --quiet, for every verb (root and verbs, like ConnectionOptions).
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON: one object per line (one per record for streams and lists).")
    var json = false

    @Flag(name: [.customShort("q"), .long], help: "Print nothing on success (errors still go to standard error).")
    var quiet = false

    /// The values, as the code that prints uses them.
    var values: OutputValues { OutputValues(json: json, quiet: quiet) }

    /// Writes `line` (text or JSON) to standard output unless --quiet.
    func emit(_ line: @autoclosure () -> String) throws(Failure) { try values.emit(line()) }

    /// A notice for people on standard error ("portctl: listening on NAME"), unless --quiet or --json.
    func notice(_ text: @autoclosure () -> String) { values.notice(text()) }
}

/// The parsed values of --json and --quiet, free of swift-argument-parser
/// (see ConnectionValues).
struct OutputValues: Equatable {
    var json = false
    var quiet = false

    /// Writes `line` (text or JSON) to standard output unless --quiet.
    func emit(_ line: @autoclosure () -> String) throws(Failure) {
        if quiet { return }
        try Output.line(line())
    }

    /// A notice for people on standard error ("portctl: listening on NAME"), unless --quiet or --json.
    func notice(_ text: @autoclosure () -> String) {
        if quiet { return }
        CurrentProcess.writeStandardError("portctl: \(text())\n")
    }
}
