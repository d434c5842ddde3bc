// PortDirectory: portd's private directory of port sockets
// (`<control socket path>.ports`, mode 0700): the listening SOCK_SEQPACKET
// socket of every registered name and declared port is bound here, and
// portd connects to them on behalf of clients (LOOKUP), so no client ever
// needs access to this directory.
//
// Invariants:
//   - the directory is a real directory (not a symlink), owned by portd's
//     uid, closed to group and others; anything else is refused at start,
//     never repaired (someone else may have planted it);
//   - socket files are named by portd ("p" or "d" and a sequence number),
//     never by a port name, so no name can become a path, and a file is
//     never reused: a new owner of a name gets a new file;
//   - registered names' files ("p") go in generation subdirectories
//     ("g" and a number), at most `filesPerGeneration` per subdirectory,
//     and a subdirectory is removed once it is empty and no longer the one
//     new files go to. A filesystem such as ext4 never shrinks a directory,
//     and creating a file in one that once held tens of thousands costs
//     milliseconds (measured: 1.6 ms per bind after 30,000 came and went,
//     against 0.05–0.5 ms in a fresh one): registration speed must not
//     depend on how many names came and went. Declared ports' files ("d"),
//     few and long-lived, stay at the top;
//   - a file is removed only if the entry at its path is still the one
//     portd bound (same device and inode);
//   - one portd at a time: the directory object holds an exclusive flock(2)
//     on the directory for its life, which the kernel drops when portd
//     dies however it dies; a second portd finding it held refuses to
//     start (say, one handed a socket whose path was taken from a live
//     portd) rather than take the directory from under the live one;
//   - at start, socket files left by a portd that died are removed (this
//     portd holds the lock, so no other portd uses the directory),
//     except those of declared ports whose sockets the service manager
//     passed back (`keeping`), which are adopted as they are. A file is
//     removed whether or not someone still listens on it: former owners
//     keep their receive rights after a crash (and a declared port's
//     service its socket), and must never keep a new portd from starting.
//     portd never connects to them to find out (a connection would land
//     in an owner's or a service's queue); their holders learn portd went
//     away from their own connection to it. New files are numbered past
//     every file found, kept or removed, so a path never names two sockets;
//   - every socket is CLOEXEC|NONBLOCK and has SO_PASSCRED before anyone
//     can connect, so even records queued before the owner accepts carry
//     their sender's credentials.

import PortCore

/// A socket file portd bound in its port directory.
struct PortSocketFile: Equatable, Sendable {
    let path: String
    let entry: FileStatus
}

final class PortDirectory {
    /// Why the directory cannot be used.
    enum Problem: Error, CustomStringConvertible {
        case notPrivate(path: String, reason: String)
        case pathTooLong(path: String)
        case system(SystemCallError)
        /// A socket passed back at start that is not one of this
        /// directory's (`descriptor`: its number, for the message).
        case notAdoptable(descriptor: String, reason: String)

        var description: String {
            switch self {
            case .notPrivate(let path, let reason):
                "the port directory \(path) is not private (\(reason)); remove it"
            case .pathTooLong(let path):
                "the port directory \(path) is too long for socket paths inside it (\(UnixSocketAddress.maxNameBytes) bytes at most); use a shorter control socket path"
            case .system(let error):
                "cannot prepare the port directory: \(error)"
            case .notAdoptable(let fd, let reason):
                "descriptor \(fd) passed back by the service manager is not a port socket of this portd: \(reason)"
            }
        }
    }

    /// How a connection attempt ended.
    enum Connection {
        /// A new connection, owned by portd until a reply carries it.
        case connected(SharedDescriptor)
        /// The listener's backlog is full: its owner does not accept.
        case backlogFull
        /// Nobody listens there any more (the owner closed its receive right).
        case refused
        case failed(SystemCallError)
    }

    /// The longest path portd makes inside the directory: a generation
    /// subdirectory ("g" and a number of at most 10 digits, far beyond any
    /// daemon's life at `filesPerGeneration` files each) and a file name (a
    /// letter and a 64-bit number).
    private static let longestFileName = 1 + 10 + 1 + 21

    /// Registered names' files per generation subdirectory.
    static let filesPerGeneration = 1024

    let path: String
    private var sequence: UInt64 = 0
    /// The generation subdirectory new "p" files go to (0: none made yet).
    private var generation: UInt64 = 0
    private var filesInGeneration = 0
    /// Files alive in each generation subdirectory.
    private var liveFiles: [UInt64: Int] = [:]
    /// The directory, open and flock(2)ed for as long as this portd uses it.
    private let lock: OwnedDescriptor

    private init(path: String, lock: consuming OwnedDescriptor) {
        self.path = path
        self.lock = lock
    }

    /// The directory for the control socket at `controlSocketPath`.
    static func path(forControlSocket controlSocketPath: String) -> String {
        controlSocketPath + ".ports"
    }

    /// Creates the directory (0700) or checks the one that is there, and
    /// removes the socket files a former portd left in it, listened on or
    /// not, except the file names in `keeping` (sockets passed back by the
    /// service manager, see `adopt`). Call it only once this portd owns
    /// the control socket. Returns the directory and how many files it
    /// removed.
    static func prepare(
        path: String, userID: UInt32, keeping: Set<String> = []
    ) throws(Problem) -> (PortDirectory, removedStale: Int) {
        if path.utf8.count + 1 + longestFileName > UnixSocketAddress.maxNameBytes { throw .pathTooLong(path: path) }
        do {
            if try FileSystem.makeDirectory(path, permissions: 0o700) {
                try FileSystem.setPermissions(path, 0o700)  // mkdir applied the umask
            }
            guard let status = try FileSystem.status(ofPath: path) else {
                throw Problem.notPrivate(path: path, reason: "it vanished while being created")
            }
            if let reason = problem(with: status, userID: userID) { throw Problem.notPrivate(path: path, reason: reason) }
            guard let lock = try FileSystem.lockDirectory(path) else {
                throw Problem.notPrivate(path: path, reason: "another portd serves it: it holds the directory's lock")
            }
            var removed = 0
            let directory = PortDirectory(path: path, lock: lock)
            for name in keeping {
                if let n = fileNumber(name) { directory.sequence = max(directory.sequence, n) }
            }
            for name in try FileSystem.entries(ofDirectory: path) ?? [] where !keeping.contains(name) {
                if let g = generationNumber(name) {
                    // Numbered past; the first new file starts a new one.
                    directory.generation = max(directory.generation, g)
                    directory.filesInGeneration = filesPerGeneration
                    let sub = "\(path)/\(name)"
                    guard let entry = try FileSystem.status(ofPath: sub), entry.kind == .directory else { continue }
                    for file in try FileSystem.entries(ofDirectory: sub) ?? [] {
                        if let n = fileNumber(file) { directory.sequence = max(directory.sequence, n) }
                        if try removeStaleSocket("\(sub)/\(file)", named: file) { removed += 1 }
                    }
                    _ = try FileSystem.removeDirectory(sub)  // left when it holds what portd did not make
                    continue
                }
                guard let n = fileNumber(name) else { continue }  // not a name portd makes: left alone
                directory.sequence = max(directory.sequence, n)
                if try removeStaleSocket("\(path)/\(name)", named: name) { removed += 1 }
            }
            return (directory, removed)
        } catch let problem as Problem {
            throw problem
        } catch let error as SystemCallError {
            throw .system(error)
        } catch {
            preconditionFailure("unexpected \(error)")
        }
    }

    /// Removes a socket file a former portd made (listened on or not, and
    /// never connected to); true when one was removed.
    private static func removeStaleSocket(_ filePath: String, named name: String) throws(SystemCallError) -> Bool {
        guard fileNumber(name) != nil else { return false }
        guard let entry = try FileSystem.status(ofPath: filePath), entry.kind == .socket else { return false }
        return try FileSystem.remove(filePath)
    }

    /// The number of a generation subdirectory's name ("g7"), or nil.
    static func generationNumber(_ name: String) -> UInt64? {
        guard name.first == "g" else { return nil }
        return UInt64(name.dropFirst())
    }

    /// The number in a file name portd makes ("p12", "d3"), or nil.
    static func fileNumber(_ name: String) -> UInt64? {
        guard let first = name.first, first == "p" || first == "d" else { return nil }
        return UInt64(name.dropFirst())
    }

    /// The file name of a declared port's socket that `fd` is bound to,
    /// if it is a listening socket of this directory: the check before
    /// `prepare(keeping:)` and `adopt`. Throws why not.
    static func declaredFileName(of fd: borrowing OwnedDescriptor, inDirectory path: String) throws(Problem) -> String {
        let bound: String?
        do {
            bound = try UnixSocket.boundPath(fd)
        } catch {
            throw .notAdoptable(descriptor: fd.description, reason: "\(error)")
        }
        guard let bound else { throw .notAdoptable(descriptor: fd.description, reason: "it is not bound to a path") }
        let prefix = path + "/"
        guard bound.hasPrefix(prefix) else {
            throw .notAdoptable(descriptor: fd.description, reason: "it is bound to \(bound), outside \(path)")
        }
        let name = String(bound.dropFirst(prefix.count))
        guard name.first == "d", fileNumber(name) != nil else {
            throw .notAdoptable(descriptor: fd.description, reason: "\(bound) is not a declared port's socket file")
        }
        return name
    }

    /// The socket file of a declared port's socket passed back at start
    /// (named by `declaredFileName(of:inDirectory:)` and kept by `prepare`).
    /// Throws when the file is gone or is not a socket: the socket would
    /// be unreachable.
    func adopt(fileName name: String, fd: borrowing OwnedDescriptor) throws(Problem) -> PortSocketFile {
        let filePath = "\(path)/\(name)"
        let entry: FileStatus?
        do {
            entry = try FileSystem.status(ofPath: filePath)
        } catch {
            throw .notAdoptable(descriptor: fd.description, reason: "\(error)")
        }
        guard let entry, entry.kind == .socket else {
            throw .notAdoptable(descriptor: fd.description, reason: "its file \(filePath) is gone")
        }
        return PortSocketFile(path: filePath, entry: entry)
    }

    /// What is wrong with a would-be private directory, or nil. Pure; the
    /// same rule as the instance directory's (DaemonDirectory).
    static func problem(with status: FileStatus, userID: UInt32) -> String? {
        DaemonDirectory.problem(with: status, userID: userID)
    }

    /// A new listening socket bound to a new file: "p…" for a registered
    /// name, "d…" for a declared port. The caller holds the socket (it
    /// closes with the last holder of `fd`).
    func makeListeningSocket(declared: Bool = false) throws(SystemCallError) -> (fd: SharedDescriptor, file: PortSocketFile) {
        sequence += 1
        let filePath: String
        if declared {
            filePath = "\(path)/d\(sequence)"
        } else {
            if generation == 0 || filesInGeneration >= Self.filesPerGeneration { try startGeneration() }
            filesInGeneration += 1
            filePath = "\(path)/g\(generation)/p\(sequence)"
        }
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: filePath)
        } catch {
            // Checked in `prepare`; only a broken invariant gets here.
            preconditionFailure("\(filePath): \(error)")
        }
        let fd = try UnixSocket.makeSocket()  // closed again on a failure
        try UnixSocket.setPassCredentials(fd, true)
        if try UnixSocket.removeStale(at: address) == .inUse {
            throw SystemCallError(call: "bind(\(filePath))", errno: .addressInUse)
        }
        try UnixSocket.bind(fd, to: address)
        try UnixSocket.listen(fd)
        guard let entry = try FileSystem.status(ofPath: filePath) else {
            throw SystemCallError(call: "lstat(\(filePath)) after bind", errno: .noSuchFileOrDirectory)
        }
        if !declared { liveFiles[generation, default: 0] += 1 }
        return (SharedDescriptor(fd), PortSocketFile(path: filePath, entry: entry))
    }

    /// Makes the next generation subdirectory (0700) for new "p" files, and
    /// removes the one before if nothing lives in it any more.
    private func startGeneration() throws(SystemCallError) {
        let previous = generation
        generation += 1
        filesInGeneration = 0
        let sub = "\(path)/g\(generation)"
        if try FileSystem.makeDirectory(sub, permissions: 0o700) {
            try FileSystem.setPermissions(sub, 0o700)  // mkdir applied the umask
        }
        if previous != 0 && liveFiles[previous, default: 0] == 0 { removeGeneration(previous) }
    }

    private func removeGeneration(_ g: UInt64) {
        liveFiles[g] = nil
        _ = try? FileSystem.removeDirectory("\(path)/g\(g)")
    }

    /// The address `connect` last connected to, filled: a name looked up
    /// again and again is connected to without filling its `sockaddr_un`
    /// each time (1,300 instructions a LOOKUP). A pure function of the
    /// path, so never stale.
    private var lastConnected: UnixSocketAddress.Filled?

    /// Connects a new socket to `file` without blocking: a send right to
    /// the port listening there. The socket closes unless connected.
    func connect(to file: PortSocketFile) -> Connection {
        let fd: OwnedDescriptor
        do {
            fd = try UnixSocket.makeSocket()
        } catch {
            return .failed(error)
        }
        let outcome: UnixSocket.ConnectOutcome
        do {
            let address: UnixSocketAddress.Filled
            if let last = lastConnected, last.address.path == file.path {
                address = last
            } else {
                address = try UnixSocketAddress(path: file.path).filled
                lastConnected = address
            }
            outcome = try UnixSocket.connect(fd, to: address)
        } catch let error as SystemCallError {
            return error.errno == .connectionRefused || error.errno == .noSuchFileOrDirectory ? .refused : .failed(error)
        } catch {
            preconditionFailure("\(file.path): \(error)")
        }
        switch outcome {
        case .connected: return .connected(SharedDescriptor(fd))
        case .wouldBlock: return .backlogFull
        }
    }

    /// Removes `file` if the entry at its path is still the one portd bound.
    func remove(_ file: PortSocketFile) {
        if let now = try? FileSystem.status(ofPath: file.path), now.isSameEntry(as: file.entry) {
            _ = try? FileSystem.remove(file.path)
        }
        // A generation subdirectory goes with its last file, unless new files still go there.
        let prefix = path + "/g"
        guard file.path.hasPrefix(prefix), let slash = file.path.lastIndex(of: "/"),
            let g = UInt64(file.path[file.path.index(file.path.startIndex, offsetBy: prefix.count)..<slash]),
            let live = liveFiles[g]
        else { return }
        liveFiles[g] = live - 1
        if live - 1 == 0 && g != generation { removeGeneration(g) }
    }

    /// Removes the directory if it is empty but for empty generation
    /// subdirectories (at shutdown).
    func removeIfEmpty() {
        for g in liveFiles.keys where liveFiles[g] == 0 { _ = try? FileSystem.removeDirectory("\(path)/g\(g)") }
        if generation != 0 { _ = try? FileSystem.removeDirectory("\(path)/g\(generation)") }
        _ = try? FileSystem.removeDirectory(path)
    }
}
