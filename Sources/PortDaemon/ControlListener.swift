// ControlListener: portd's listening control socket (AF_UNIX SOCK_SEQPACKET),
// either bound here or inherited from the service manager.
//
// Binding never steals a live daemon's socket. When the path is taken
// (EADDRINUSE), a probe connects to it:
//   - it connects (or the backlog is full): a daemon is alive there, so
//     portd refuses to start, naming its pid (SO_PEERCRED of the probe);
//   - ECONNREFUSED: nobody listens, a file left by a crashed daemon; if it
//     is a socket it is unlinked and the bind retried once (a second
//     EADDRINUSE means another portd won the race: refuse);
//   - the path is not a socket at all, or a live socket of another type
//     (EPROTOTYPE): refuse and touch nothing.
// Ownership: the listener owns its descriptor until `handOverDescriptor()`
// moves it to the port that serves it (the name server's PCPort), and,
// only when it bound the path itself, the socket file. `close()` removes the
// file only if the entry at the path is still the one it bound (same device
// and inode), then closes the descriptor unless it was handed over; a socket
// inherited from systemd is never unlinked (the socket unit owns it). The
// caller invalidates the port it handed the descriptor to before calling
// `close()`.

import PortCore

final class ControlListener {
    /// The control socket's backlog: connections the kernel queues while
    /// portd is busy; beyond it a client's connect fails with EAGAIN.
    static let backlog: Int32 = 128

    /// Where the socket came from.
    enum Origin: Equatable {
        /// Bound here; the file is ours to remove (`entry` identifies it).
        case bound(entry: FileStatus)
        /// Passed by the service manager under this name.
        case inherited(name: String)
    }

    /// Why portd cannot listen; each reads as a complete sentence for the log.
    enum StartError: Error, CustomStringConvertible {
        case alreadyRunning(path: String, pid: Int32?)
        case notASocket(path: String)
        case otherSocketType(path: String)
        case badInheritedSocket(fileDescriptor: Int32, name: String)
        case directory(DaemonDirectoryError)
        case system(SystemCallError)

        var description: String {
            switch self {
            case .alreadyRunning(let path, let pid?):
                "portd is already running at \(path) (pid \(pid)); not starting a second one"
            case .alreadyRunning(let path, nil):
                "portd is already running at \(path); not starting a second one"
            case .notASocket(let path):
                "\(path) exists and is not a socket; not replacing it"
            case .otherSocketType(let path):
                "\(path) is a live socket of another type (not SOCK_SEQPACKET); not replacing it"
            case .badInheritedSocket(let fd, let name):
                "descriptor \(fd) (\(name)) from the service manager is not a listening AF_UNIX SOCK_SEQPACKET socket"
            case .directory(let error):
                "cannot prepare the socket directory: \(error)"
            case .system(let error):
                "cannot listen: \(error)"
            }
        }
    }

    /// The socket, until handed over or closed.
    private var descriptor: OwnedDescriptor?
    /// The socket's path, for messages (for an inherited socket: what portd resolved).
    let path: String
    let origin: Origin
    /// Binding replaced a socket file a portd that died had left (for the log).
    private(set) var replacedStaleSocket = false
    private var closed = false

    private init(descriptor: consuming OwnedDescriptor, path: String, origin: Origin) {
        self.descriptor = .some(descriptor)
        self.path = path
        self.origin = origin
    }

    /// Adopts the control socket systemd passed (socket activation); it is
    /// closed again if it is refused.
    static func adopt(_ passed: ListenFDs.Passed, path: String) throws(StartError) -> ControlListener {
        let descriptor = OwnedDescriptor(adopting: passed.fileDescriptor)
        guard ListenFDs.isListeningSequentialPacketSocket(descriptor) else {
            throw .badInheritedSocket(fileDescriptor: passed.fileDescriptor, name: passed.name)
        }
        do {
            try Descriptor.setNonBlocking(descriptor, true)  // accept until EAGAIN
        } catch {
            throw .system(error)
        }
        // The socket's own path decides where portd's port directory goes,
        // not the path portd would have bound: two daemons must never share one.
        let bound = (try? UnixSocket.boundPath(descriptor)) ?? nil
        return ControlListener(descriptor: descriptor, path: bound ?? path, origin: .inherited(name: passed.name))
    }

    /// Creates the instance directory if needed, binds `location` (replacing
    /// a stale socket file, never a live one) and listens. `openToEveryone`
    /// (the system instance, wherever its socket is: the default path or
    /// `--socket`): the socket file gets mode 0666, so that every uid may
    /// connect; otherwise it keeps what bind gave it under the umask.
    static func bind(
        at location: DaemonSocketLocation, userID: UInt32, openToEveryone: Bool? = nil
    ) throws(StartError) -> ControlListener {
        let openToEveryone = openToEveryone ?? (location.origin == .systemInstance)
        do {
            try DaemonDirectory.prepare(for: location, userID: userID)
        } catch {
            throw .directory(error)
        }
        let path = location.path
        let fd = try systemCall { () throws(SystemCallError) in try LocalSocket.make(.seqPacket) }  // closed on a failure
        let replacedStale = try bindReplacingStale(fd, path: path)
        let entry: FileStatus?
        do {
            try UnixSocket.listen(fd, backlog: Self.backlog)
            if openToEveryone {
                // Every uid may connect to the system instance; who may do
                // what is decided per request (the policy).
                try FileSystem.setPermissions(path, 0o666)
            }
            entry = try FileSystem.status(ofPath: path)
        } catch {
            throw .system(error)
        }
        guard let entry else {
            throw .system(SystemCallError(call: "lstat(\(path)) after bind", errno: .noSuchFileOrDirectory))
        }
        let listener = ControlListener(descriptor: fd, path: path, origin: .bound(entry: entry))
        listener.replacedStaleSocket = replacedStale
        return listener
    }

    /// Moves the descriptor to whoever serves it from now on (who closes
    /// it); the listener keeps only the socket file.
    func handOverDescriptor() -> OwnedDescriptor {
        precondition(!closed, "the control socket was already closed")
        guard let descriptor = descriptor.take() else {
            preconditionFailure("the control socket was already handed over")
        }
        return descriptor
    }

    /// Removes the socket file if it is still ours, then closes the
    /// descriptor unless it was handed over. Idempotent.
    func close() {
        guard !closed else { return }
        closed = true
        if case .bound(let entry) = origin,
            let now = try? FileSystem.status(ofPath: path), now.isSameEntry(as: entry)
        {
            _ = try? FileSystem.remove(path)
        }
        descriptor = nil  // closes it unless it was handed over
    }

    // MARK: - Binding

    /// Binds `fd` at `path`; true when a stale socket file was replaced.
    private static func bindReplacingStale(_ fd: borrowing OwnedDescriptor, path: String) throws(StartError) -> Bool {
        var replacedStale = false
        while true {
            do {
                try LocalSocket.bind(fd, path: path)
                return replacedStale
            } catch where error.errno == .addressInUse {
                // Fall through to the probe.
            } catch {
                throw .system(error)
            }
            switch try probe(path) {
            case .live(let pid):
                throw .alreadyRunning(path: path, pid: pid)
            case .vanished:
                continue
            case .stale:
                if replacedStale { throw .alreadyRunning(path: path, pid: nil) }
                guard let entry = try systemCall({ () throws(SystemCallError) in try FileSystem.status(ofPath: path) }) else { continue }
                guard entry.kind == .socket else { throw .notASocket(path: path) }
                _ = try systemCall { () throws(SystemCallError) in try FileSystem.remove(path) }
                replacedStale = true
            case .otherType:
                throw .otherSocketType(path: path)
            }
        }
    }

    private enum ProbeResult { case live(pid: Int32?), stale, vanished, otherType }

    /// Connects to whatever is at `path` to learn whether a daemon lives there.
    private static func probe(_ path: String) throws(StartError) -> ProbeResult {
        let fd = try systemCall { () throws(SystemCallError) in try LocalSocket.make(.seqPacket) }  // closed on return
        do {
            switch try LocalSocket.connect(fd, path: path) {
            case .connected:
                return .live(pid: (try? LocalSocket.peerCredentials(fd))?.pid)
            case .wouldBlock:
                return .live(pid: nil)  // backlog full: alive, just busy
            }
        } catch {
            switch error.errno {
            case .connectionRefused: return .stale  // includes a regular file; checked before unlinking
            case .noSuchFileOrDirectory: return .vanished
            case .protocolWrongTypeForSocket: return .otherType
            default: throw .system(error)
            }
        }
    }

    private static func systemCall<T: ~Copyable>(_ body: () throws(SystemCallError) -> T) throws(StartError) -> T {
        do {
            return try body()
        } catch {
            throw .system(error)
        }
    }
}
