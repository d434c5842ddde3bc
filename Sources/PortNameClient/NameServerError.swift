// NameServerError: the one error type of the name-server client. Each case
// is a distinct thing a caller (and portctl's exit status) can branch on:
// no daemon, a socket closed to us, a refusal by portd's policy, a bad name,
// a limit, a timeout, a lost connection, a reply that makes no sense.
// Outcomes a caller expects in normal use (a name that is taken, not found,
// queued) are not errors: they are the return values of the requests.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

/// Why a name-server request failed.
public enum NameServerError: Error, Sendable, CustomStringConvertible {
    /// No portd at the socket: no file there (ENOENT, ENOTDIR), or a file
    /// nobody listens on (ECONNREFUSED).
    case notRunning(socket: String)
    /// Something else listens at the path: a socket of another type (a
    /// stream or datagram socket), so not portd's.
    case notPortd(socket: String)
    /// The socket or its directory is closed to us (EACCES, EPERM).
    case permissionDenied(socket: String)
    /// The per-user fallback directory under /tmp is not private to the user.
    case untrustedDirectory(String)
    /// portd refused by policy ("denied": a name or uid the configuration
    /// does not allow, or a per-user instance of another user).
    case denied(String)
    /// The name breaks the naming rule (`NameServerProtocol.nameProblem`).
    case invalidName(String)
    /// A portd limit refused the request (names per client, pending
    /// lookups, watches, clients per uid, request size).
    case limit(String)
    /// No connection, or no reply, within the timeout.
    case timedOut(String)
    /// portd closed the connection (it stopped, or dropped this client).
    case connectionLost
    /// portd ended a watch whose watcher fell behind: the watcher's queue
    /// was full, `missed` changes were not delivered (WATCH_OVERFLOW). The
    /// watch is over; watch again and re-read what matters (`owner`, `list`).
    case watchOverflow(missed: Int)
    /// portd did not understand the request ("bad-request").
    case badRequest(String)
    /// portd failed on its side ("internal").
    case daemonFailure(String)
    /// portd's reply does not follow the protocol.
    case protocolError(String)
    /// portd speaks no protocol version this client speaks.
    case unsupportedVersion(String)
    /// The connection failed underneath (a system call, a malformed record).
    case transport(PortError)

    public var description: String {
        switch self {
        case .notRunning(let socket): "portd is not running at \(socket)"
        case .notPortd(let socket): "portd is not running at \(socket): a socket of another type listens there"
        case .permissionDenied(let socket): "permission denied connecting to portd at \(socket)"
        case .untrustedDirectory(let why): "not trusting the socket's directory: \(why)"
        case .denied(let message): "denied by portd: \(message)"
        case .invalidName(let message): "invalid name: \(message)"
        case .limit(let message): "refused by a portd limit: \(message)"
        case .timedOut(let what): "timed out: \(what)"
        case .connectionLost: "portd closed the connection"
        case .watchOverflow(let missed):
            "the watch fell behind: portd ended it after \(missed) change\(missed == 1 ? "" : "s") could not be delivered"
        case .badRequest(let message): "portd did not understand the request: \(message)"
        case .daemonFailure(let message): "portd failed: \(message)"
        case .protocolError(let message): "unexpected reply from portd: \(message)"
        case .unsupportedVersion(let message): "portd speaks another protocol version: \(message)"
        case .transport(let error): error.description
        }
    }
}
