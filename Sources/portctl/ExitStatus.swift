// ExitStatus: portctl's documented exit statuses, one per outcome a script
// may branch on (portctl(1), EXIT STATUS), taken from sysexits(3) where one fits so
// they never collide with a shell's 126/127/128+N or swift-argument-parser's
// 64 for usage errors. The same table is printed by `portctl --help` (a
// verb's --help points to it) and in
// portctl(1) EXIT STATUS; a value, once published, never changes meaning.

import ArgumentParser

enum ExitStatus: Int32, CaseIterable {
    /// The command did what was asked.
    case success = 0
    /// Any failure without a more specific status below.
    case failure = 1
    /// Bad options or arguments (EX_USAGE; swift-argument-parser's own).
    case usage = 64
    /// A port name is not registered (EX_NOUSER). Used by lookup and send verbs.
    case nameNotFound = 67
    /// No portd answers at the socket path (EX_UNAVAILABLE).
    case notRunning = 69
    /// The remote port (or the connection to portd) became invalid before the
    /// exchange finished (EX_IOERR).
    case portInvalid = 74
    /// Nothing happened before --timeout, or a watch fell behind and portd
    /// ended it (EX_TEMPFAIL: try again).
    case timedOut = 75
    /// portd answered something portctl does not understand (EX_PROTOCOL).
    case protocolError = 76
    /// The socket, its directory or the request was refused, or the
    /// directory of the /tmp fallback is not private (EX_NOPERM).
    case permissionDenied = 77

    var meaning: String {
        switch self {
        case .success: "success"
        case .failure: "failure not listed below"
        case .usage: "usage error"
        case .nameNotFound: "name not found"
        case .notRunning: "portd is not running"
        case .portInvalid: "the remote port became invalid"
        case .timedOut: "timed out, or a watch fell behind"
        case .protocolError: "protocol error (unexpected reply)"
        case .permissionDenied: "permission denied"
        }
    }

    var exitCode: ExitCode { ExitCode(rawValue) }

    /// What a verb's --help says of exit statuses: a pointer to the one
    /// table (`portctl --help`, portctl(1)), not the table again in every
    /// verb's help.
    static let verbHelpText = "Exit status: 0 on success; otherwise one of the statuses `portctl --help` and portctl(1) list."

    /// The table for --help. Built once and without generic collection
    /// algorithms: every verb's configuration includes it, and all of them
    /// are built at each start, where a generic `joined` is a visible part
    /// of a short `portctl send`.
    static let helpText: String = {
        var text = "Exit status:"
        for status in allCases {
            text += "\n  "
            text += String(status.rawValue)
            text += "\t"
            text += status.meaning
        }
        return text
    }()
}
