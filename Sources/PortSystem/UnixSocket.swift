// UnixSocket: AF_UNIX SOCK_SEQPACKET sockets (unix(7), socket(7)), the kernel
// object behind ports and send rights. Setup calls live here; sendmsg and
// recvmsg in UnixSocket+Messages.swift.
//
// Invariants: every socket PortCore creates or accepts is CLOEXEC|NONBLOCK
// and returned owned (OwnedDescriptor); every other call borrows it.
// SOCK_SEQPACKET keeps record boundaries and order and is connection-oriented,
// so a peer's exit is seen as end-of-stream / EPIPE, never as silence.

import CPortSystem
import Glibc

/// AF_UNIX SOCK_SEQPACKET sockets. Each system call is wrapped once here.
/// Access is `package`: PortCore's users hold ports and send rights, not sockets.
package enum UnixSocket {
    /// Which direction `shutdown` closes.
    package enum Direction: Sendable {
        case read, write, both
    }

    /// The outcome of a non-blocking connect.
    package enum ConnectOutcome: Equatable, Sendable {
        case connected
        /// The listener's backlog is full (EAGAIN): try again later.
        case wouldBlock
    }

    /// What `removeStale` found at a path.
    package enum StaleOutcome: Equatable, Sendable {
        /// Nothing was there.
        case absent
        /// A socket nobody listens on was there and has been unlinked.
        case removed
        /// A socket somebody is bound to: left alone.
        case inUse
        /// Something that is not a socket: left alone.
        case notASocket
    }

    private static let typeFlags = Int32(SOCK_SEQPACKET.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue)

    /// A new unbound SOCK_SEQPACKET socket. The corresponding C function is
    /// `socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK)`.
    package static func makeSocket() throws(SystemCallError) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try SystemCall.must("socket(AF_UNIX, SOCK_SEQPACKET)") { socket(AF_UNIX, typeFlags, 0) })
    }

    /// Two connected sockets, each owned by the caller (take each out with
    /// `let a = pair.first`).
    @frozen
    package struct Pair: ~Copyable {
        package var first: OwnedDescriptor
        package var second: OwnedDescriptor
    }

    /// Two connected SOCK_SEQPACKET sockets: a port's receive end and a send
    /// right to it. The corresponding C function is `socketpair`.
    package static func makePair() throws(SystemCallError) -> Pair {
        var fds: (Int32, Int32) = (-1, -1)
        _ = try withUnsafeMutableBytes(of: &fds) { raw throws(SystemCallError) in
            let p = raw.baseAddress!.assumingMemoryBound(to: Int32.self)
            return try SystemCall.must("socketpair(AF_UNIX, SOCK_SEQPACKET)") { socketpair(AF_UNIX, typeFlags, 0, p) }
        }
        return Pair(first: OwnedDescriptor(adopting: fds.0), second: OwnedDescriptor(adopting: fds.1))
    }

    /// The corresponding C function is `bind`.
    package static func bind(_ fd: borrowing OwnedDescriptor, to address: UnixSocketAddress) throws(SystemCallError) {
        let fd = fd.rawValue
        _ = try address.withSockAddr { (sa, len) throws(SystemCallError) in
            try SystemCall.must("bind(\(address))") { Glibc.bind(fd, sa, len) }
        }
    }

    /// The corresponding C function is `listen`.
    package static func listen(_ fd: borrowing OwnedDescriptor, backlog: Int32 = SOMAXCONN) throws(SystemCallError) {
        let fd = fd.rawValue
        _ = try SystemCall.must("listen") { Glibc.listen(fd, backlog) }
    }

    /// Accepts one pending connection, CLOEXEC|NONBLOCK, or returns nil when
    /// none is pending. A connection reset before it was accepted
    /// (ECONNABORTED) is skipped: the next one is taken. The corresponding C
    /// function is `accept4`.
    package static func accept(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> OwnedDescriptor? {
        let fd = fd.rawValue
        let flags = Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue)
        while true {
            do {
                switch try SystemCall.run("accept4", { port_accept4(fd, flags) }) {
                case .done(let c): return OwnedDescriptor(adopting: c)
                case .wouldBlock: return nil
                }
            } catch where error.errno == .connectionAbort {
                continue
            }
        }
    }

    /// Connects to a listening socket. A non-blocking AF_UNIX connect
    /// completes at once or fails with EAGAIN when the listener's backlog is
    /// full; ECONNREFUSED (nobody listening) and ENOENT (no such path) throw.
    /// The corresponding C function is `connect`.
    package static func connect(_ fd: borrowing OwnedDescriptor, to address: UnixSocketAddress) throws(SystemCallError) -> ConnectOutcome {
        try connect(fd, to: address.filled)
    }

    /// `connect(_:to:)` with the address filled beforehand (`UnixSocketAddress.filled`).
    package static func connect(
        _ fd: borrowing OwnedDescriptor, to filled: UnixSocketAddress.Filled
    ) throws(SystemCallError) -> ConnectOutcome {
        let fd = fd.rawValue
        var sun = filled.sun
        return try withUnsafePointer(to: &sun) { p throws(SystemCallError) -> ConnectOutcome in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(SystemCallError) -> ConnectOutcome in
                switch try SystemCall.run("connect(\(filled.address))", { Glibc.connect(fd, sa, filled.length) }) {
                case .done: return .connected
                case .wouldBlock: return .wouldBlock
                }
            }
        }
    }

    /// Asks the kernel to attach SCM_CREDENTIALS (the sender's pid, uid and
    /// gid) to every message received on `fd`. The corresponding C function
    /// is `setsockopt(SO_PASSCRED)`.
    package static func setPassCredentials(_ fd: borrowing OwnedDescriptor, _ on: Bool) throws(SystemCallError) {
        try setIntOption(fd.rawValue, PORT_SO_PASSCRED, on ? 1 : 0, name: "SO_PASSCRED")
    }

    /// Requests a send buffer of `bytes`; the kernel doubles it for its own
    /// bookkeeping and caps it at `net.core.wmem_max` (socket(7)). The
    /// largest record a socket can send is about the doubled value minus a
    /// small overhead (see `PortLimits`). The corresponding C function is
    /// `setsockopt(SO_SNDBUF)`.
    package static func setSendBufferSize(_ fd: borrowing OwnedDescriptor, _ bytes: Int) throws(SystemCallError) {
        try setIntOption(fd.rawValue, SO_SNDBUF, Int32(clamping: bytes), name: "SO_SNDBUF")
    }

    /// The send buffer as the kernel reports it (already doubled). The
    /// corresponding C function is `getsockopt(SO_SNDBUF)`.
    package static func sendBufferSize(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Int {
        Int(try intOption(fd.rawValue, SO_SNDBUF, name: "SO_SNDBUF"))
    }

    /// As `setSendBufferSize`, for `SO_RCVBUF`.
    package static func setReceiveBufferSize(_ fd: borrowing OwnedDescriptor, _ bytes: Int) throws(SystemCallError) {
        try setIntOption(fd.rawValue, SO_RCVBUF, Int32(clamping: bytes), name: "SO_RCVBUF")
    }

    /// As `sendBufferSize`, for `SO_RCVBUF`.
    package static func receiveBufferSize(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Int {
        Int(try intOption(fd.rawValue, SO_RCVBUF, name: "SO_RCVBUF"))
    }

    /// Who connected this socket (or created the pair), as the kernel saw it
    /// at connect time. Not the sender of a given message: see
    /// `Credentials`. The corresponding C function is `getsockopt(SO_PEERCRED)`.
    package static func peerCredentials(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Credentials {
        let fd = fd.rawValue
        var cred = port_ucred()
        var len = socklen_t(MemoryLayout<port_ucred>.size)
        _ = try SystemCall.must("getsockopt(SO_PEERCRED)") { getsockopt(fd, SOL_SOCKET, PORT_SO_PEERCRED, &cred, &len) }
        return Credentials(cred)
    }

    /// The supplementary groups of the process that connected this socket,
    /// as of connect time (the companion of `peerCredentials`, which
    /// carries the primary gid). The corresponding C function is
    /// `getsockopt(SO_PEERGROUPS)`; ERANGE (more groups than room) is
    /// answered with a bigger buffer.
    package static func peerGroups(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> [UInt32] {
        let fd = fd.rawValue
        var groups = [gid_t](repeating: 0, count: 32)
        while true {
            var len = socklen_t(groups.count * MemoryLayout<gid_t>.size)
            do {
                _ = try SystemCall.must("getsockopt(SO_PEERGROUPS)") {
                    groups.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, PORT_SO_PEERGROUPS, $0.baseAddress, &len) }
                }
                return Array(groups.prefix(Int(len) / MemoryLayout<gid_t>.size))
            } catch where error.errno == .outOfRange && Int(len) > groups.count * MemoryLayout<gid_t>.size {
                groups = [gid_t](repeating: 0, count: Int(len) / MemoryLayout<gid_t>.size)
            }
        }
    }

    /// The corresponding C function is `shutdown`. ENOTCONN (the peer is
    /// already gone) is not an error: the direction is shut either way.
    package static func shutdown(_ fd: borrowing OwnedDescriptor, _ direction: Direction) throws(SystemCallError) {
        let fd = fd.rawValue
        let how: Int32 =
            switch direction {
            case .read: Int32(SHUT_RD)
            case .write: Int32(SHUT_WR)
            case .both: Int32(SHUT_RDWR)
            }
        do {
            _ = try SystemCall.must("shutdown") { Glibc.shutdown(fd, how) }
        } catch where error.errno == .socketNotConnected {
        }
    }

    /// The filesystem path `fd` is bound to, or nil for an unnamed or
    /// abstract address. The corresponding C function is `getsockname`.
    package static func boundPath(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> String? {
        try socketPath(fd.rawValue, call: "getsockname") { getsockname($0, $1, $2) }
    }

    /// The filesystem path of the socket `fd` is connected to (its peer's
    /// bound address), or nil for an unnamed peer (a socketpair) or an
    /// abstract one. The corresponding C function is `getpeername`.
    package static func peerPath(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> String? {
        try socketPath(fd.rawValue, call: "getpeername") { getpeername($0, $1, $2) }
    }

    /// The path in the address `get` (getsockname or getpeername) reports.
    private static func socketPath(
        _ fd: Int32, call: String,
        _ get: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) throws(SystemCallError) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        _ = try withUnsafeMutablePointer(to: &address) { p throws(SystemCallError) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(SystemCallError) in
                try SystemCall.must(call) { get(fd, sa, &length) }
            }
        }
        let pathBytes = Int(length) - MemoryLayout<sa_family_t>.size
        guard pathBytes > 0 else { return nil }
        return withUnsafeBytes(of: address.sun_path) { raw -> String? in
            let bytes = raw.prefix(pathBytes)
            guard let first = bytes.first, first != 0 else { return nil }  // abstract
            return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Unlinks a socket file left behind by a process that is gone, so that
    /// `bind` can use its path; leaves anything else alone. A socket is
    /// stale when connecting to it is refused (nobody bound to it). This is
    /// a check then an unlink: callers serialise binders of one path
    /// themselves (portd owns its directory). The corresponding C functions
    /// are `lstat`, `connect` and `unlink`.
    package static func removeStale(at address: UnixSocketAddress) throws(SystemCallError) -> StaleOutcome {
        guard let path = address.path else { return .absent }  // abstract names leave nothing behind
        var st = stat()
        do {
            _ = try SystemCall.must("lstat(\(path))") { lstat(path, &st) }
        } catch where error.errno == .noSuchFileOrDirectory {
            return .absent
        }
        if st.st_mode & S_IFMT != S_IFSOCK { return .notASocket }
        let probe = try makeSocket()  // closed on return
        do {
            _ = try connect(probe, to: address)
            return .inUse  // connected, or a full backlog: somebody listens
        } catch where error.errno == .connectionRefused {
            // Nobody bound to it: stale.
        } catch where error.errno == .protocolWrongTypeForSocket {
            return .inUse  // bound by a socket of another type
        } catch where error.errno == .noSuchFileOrDirectory {
            return .absent
        }
        do {
            _ = try SystemCall.must("unlink(\(path))") { unlink(path) }
        } catch where error.errno == .noSuchFileOrDirectory {
            return .absent
        }
        return .removed
    }

    /// What the kernel says a descriptor is: its socket domain and type,
    /// and whether it listens. A descriptor that is not a socket throws
    /// ENOTSOCK. The corresponding C function is `getsockopt(SO_DOMAIN,
    /// SO_TYPE, SO_ACCEPTCONN)`.
    package struct Kind: Equatable, Sendable {
        package var isUnix: Bool
        package var isSequentialPacket: Bool
        package var isListening: Bool

        /// An AF_UNIX SOCK_SEQPACKET socket in the state asked for.
        package static func sequentialPacket(listening: Bool) -> Kind {
            Kind(isUnix: true, isSequentialPacket: true, isListening: listening)
        }
    }

    package static func kind(of fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Kind {
        let fd = fd.rawValue
        return Kind(
            isUnix: try intOption(fd, SO_DOMAIN, name: "SO_DOMAIN") == AF_UNIX,
            isSequentialPacket: try intOption(fd, SO_TYPE, name: "SO_TYPE") == Int32(SOCK_SEQPACKET.rawValue),
            isListening: try intOption(fd, SO_ACCEPTCONN, name: "SO_ACCEPTCONN") != 0)
    }

    private static func setIntOption(_ fd: Int32, _ option: Int32, _ value: Int32, name: String) throws(SystemCallError) {
        var v = value
        _ = try SystemCall.must("setsockopt(\(name))") {
            setsockopt(fd, SOL_SOCKET, option, &v, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    private static func intOption(_ fd: Int32, _ option: Int32, name: String) throws(SystemCallError) -> Int32 {
        var v: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        _ = try SystemCall.must("getsockopt(\(name))") { getsockopt(fd, SOL_SOCKET, option, &v, &len) }
        return v
    }
}
