// ControlClient: one request/reply exchange with portd over its control
// socket: connect, send one record, wait for one record, close. What a
// client can expect to happen (no daemon, no permission, no answer in time)
// comes back as an `Outcome` to switch on; only the unexpected is thrown.
//
// PROVISIONAL in its transport: the name-server client of the ports issue
// replaces it with PortCore ports. The whole exchange is bounded by one
// timeout: the connect waits for room in the daemon's backlog (a blocking
// connect with SO_SNDTIMEO, the only way AF_UNIX offers to wait for that),
// then the socket turns non-blocking and poll bounds the send and the reply.

public enum ControlClient {
    /// How an exchange ended.
    public enum Outcome: Sendable, Equatable {
        /// The daemon's reply record.
        case reply([UInt8])
        /// No daemon: no socket file (ENOENT, ENOTDIR), or a stale one nobody listens on (ECONNREFUSED).
        case notRunning
        /// The socket or its directory is closed to us (EACCES, EPERM).
        case permissionDenied
        /// No connection, or no reply, before the timeout.
        case timedOut
        /// The daemon closed the connection without replying.
        case closedWithoutReply
    }

    /// The largest reply accepted; a longer one is a protocol error.
    public static let maximumReplySize = 64 * 1024

    /// Sends `request` to the daemon at `path` and waits up to `timeout` for one reply record.
    public static func exchange(_ request: [UInt8], at path: String, timeout: Duration) throws(SystemCallError) -> Outcome {
        let deadline = MonotonicInstant.now() + timeout
        let fd = try LocalSocket.make(.seqPacket, nonBlocking: false)
        defer { SystemCall.close(fd) }

        try LocalSocket.setSendTimeout(fd, timeout)
        do {
            if try LocalSocket.connect(fd, path: path) == .wouldBlock { return .timedOut }
        } catch {
            switch error.errno {
            case .noSuchFileOrDirectory, .notDirectory, .connectionRefused: return .notRunning
            case .permissionDenied, .notPermitted: return .permissionDenied
            default: throw error
            }
        }
        try LocalSocket.setNonBlocking(fd, true)

        do {
            while try !LocalSocket.send(fd, request) {
                let ready = try LocalSocket.wait(fd, for: .writable, timeout: deadline - MonotonicInstant.now())
                if ready.isEmpty { return .timedOut }
            }
        } catch where error.errno == .brokenPipe || error.errno == .connectionReset {
            return .closedWithoutReply
        }

        var buffer = [UInt8](repeating: 0, count: maximumReplySize)
        while true {
            let ready = try LocalSocket.wait(fd, for: .readable, timeout: deadline - MonotonicInstant.now())
            if ready.isEmpty { return .timedOut }
            let received: LocalSocket.ReceiveResult
            do {
                received = try LocalSocket.receive(fd, into: &buffer)
            } catch where error.errno == .connectionReset {
                return .closedWithoutReply
            }
            switch received {
            case .wouldBlock: continue
            case .endOfStream: return .closedWithoutReply
            case .record(_, truncated: true):
                throw SystemCallError(call: "recvmsg(reply larger than \(maximumReplySize) bytes)", errno: .messageTooLong)
            case .record(let count, truncated: false):
                return .reply(Array(buffer[..<count]))
            }
        }
    }
}
