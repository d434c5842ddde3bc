// LocalSocket: AF_UNIX sockets of any type (datagram, stream, blocking
// SEQPACKET) addressed by path strings, for portd's process shell, the
// name-server client's connect and the test harnesses. What UnixSocket,
// Descriptor and Poll already wrap (bind, listen, accept4, connect,
// SO_PEERCRED, poll) is called there, so each system call stays wrapped
// once (closing is OwnedDescriptor's); only what they lack is wrapped here: socket(2) of other
// types, plain byte send/recvmsg without control messages, SO_SNDTIMEO.
// Access is `package`: not part of PortCore's public API.
//
// Invariants: every descriptor is created CLOEXEC and returned owned (and NONBLOCK unless the
// caller needs a blocking connect, see `connect`); sends use MSG_NOSIGNAL;
// recvmsg uses MSG_CMSG_CLOEXEC; a record longer than the caller's buffer is
// reported as truncated, never silently cut.

import CPortSystem
import Glibc

package enum LocalSocket {
    /// The socket types portd and its tests use.
    package enum Kind: Sendable {
        case seqPacket, datagram, stream

        var rawValue: Int32 {
            switch self {
            case .seqPacket: Int32(SOCK_SEQPACKET.rawValue)
            case .datagram: Int32(SOCK_DGRAM.rawValue)
            case .stream: Int32(SOCK_STREAM.rawValue)
            }
        }
    }

    /// The outcome of a connect that may have to wait: `.wouldBlock` when
    /// the listener's backlog is full (non-blocking socket), or the
    /// SO_SNDTIMEO of a blocking socket expired while waiting for room.
    package typealias ConnectResult = UnixSocket.ConnectOutcome

    /// The outcome of one recvmsg.
    package enum ReceiveResult: Sendable, Equatable {
        /// One record of `count` bytes; `truncated` when it did not fit the buffer.
        case record(count: Int, truncated: Bool)
        /// The peer closed its end (a zero-length read on SOCK_SEQPACKET/stream).
        case endOfStream
        /// Nothing queued.
        case wouldBlock
    }

    /// Longest path a `sockaddr_un` holds, without the terminating NUL.
    package static let maximumPathLength = UnixSocketAddress.maxNameBytes

    /// A new AF_UNIX socket, CLOEXEC, and NONBLOCK when `nonBlocking`.
    /// The corresponding C function is `socket`.
    package static func make(_ kind: Kind, nonBlocking: Bool = true) throws(SystemCallError) -> OwnedDescriptor {
        var type = kind.rawValue | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return OwnedDescriptor(adopting: try SystemCall.must("socket(AF_UNIX)") { socket(AF_UNIX, type, 0) })
    }

    /// Binds `fd` to a filesystem path (UnixSocket.bind).
    package static func bind(_ fd: borrowing OwnedDescriptor, path: String) throws(SystemCallError) {
        try UnixSocket.bind(fd, to: address(try: "bind(\(path))") { () throws(UnixSocketAddress.Error) in
            try UnixSocketAddress(path: path)
        })
    }

    /// Binds `fd` to a name in the abstract namespace (unix(7)): no file,
    /// gone when the last descriptor closes. `name` excludes the leading NUL.
    package static func bind(_ fd: borrowing OwnedDescriptor, abstractName name: String) throws(SystemCallError) {
        try UnixSocket.bind(fd, to: address(try: "bind(@\(name))") { () throws(UnixSocketAddress.Error) in
            try UnixSocketAddress(abstract: name)
        })
    }

    /// Accepts one pending connection as a CLOEXEC|NONBLOCK descriptor, or
    /// nil when none is pending (UnixSocket.accept).
    package static func accept(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> OwnedDescriptor? {
        try UnixSocket.accept(fd)
    }

    /// Connects `fd` to the socket at `path` (UnixSocket.connect).
    ///
    /// On AF_UNIX a connect never is "in progress": it succeeds, fails, or,
    /// when the listener's backlog is full, fails with EAGAIN on a
    /// non-blocking socket (and cannot be polled for). A blocking socket with
    /// SO_SNDTIMEO (`setSendTimeout`) instead waits for room up to that time,
    /// which is how a client bounds the wait. Both report `.wouldBlock`.
    /// ENOENT (no file), ECONNREFUSED (a file nobody listens on) and EACCES
    /// are thrown for the caller to switch on.
    package static func connect(_ fd: borrowing OwnedDescriptor, path: String) throws(SystemCallError) -> ConnectResult {
        let target = try address(try: "connect(\(path))") { () throws(UnixSocketAddress.Error) in
            try UnixSocketAddress(path: path)
        }
        return try UnixSocket.connect(fd, to: target)
    }

    /// Connects a datagram socket to a name in the abstract namespace.
    package static func connect(_ fd: borrowing OwnedDescriptor, abstractName name: String) throws(SystemCallError) -> ConnectResult {
        let target = try address(try: "connect(@\(name))") { () throws(UnixSocketAddress.Error) in
            try UnixSocketAddress(abstract: name)
        }
        return try UnixSocket.connect(fd, to: target)
    }

    /// Sends one record without blocking; false when the peer's queue is
    /// full. EPIPE/ECONNRESET (peer gone) are thrown. The corresponding C
    /// function is `send` (with `MSG_NOSIGNAL | MSG_DONTWAIT`).
    package static func send(_ fd: borrowing OwnedDescriptor, _ bytes: [UInt8]) throws(SystemCallError) -> Bool {
        let fd = fd.rawValue
        let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
        // Array.withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemCallError) in
                try SystemCall.run("send") { Glibc.send(fd, raw.baseAddress, raw.count, flags) }
            }
        }
        switch try result.get() {
        case .done: return true
        case .wouldBlock: return false
        }
    }

    /// Receives one record into `buffer` without blocking. The corresponding
    /// C function is `recvmsg` (with `MSG_CMSG_CLOEXEC | MSG_DONTWAIT`).
    package static func receive(_ fd: borrowing OwnedDescriptor, into buffer: inout [UInt8]) throws(SystemCallError) -> ReceiveResult {
        let fd = fd.rawValue
        let capacity = buffer.count
        let outcome = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemCallError) -> (IOResult<Int>, Int32) in
                var vector = iovec(iov_base: raw.baseAddress, iov_len: capacity)
                var message = msghdr()
                let flags = Int32(MSG_CMSG_CLOEXEC) | Int32(MSG_DONTWAIT)
                let r = try withUnsafeMutablePointer(to: &vector) { (vectorPointer) throws(SystemCallError) in
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    return try SystemCall.run("recvmsg") { recvmsg(fd, &message, flags) }
                }
                return (r, message.msg_flags)
            }
        }
        let result = try outcome.get()
        switch result.0 {
        case .wouldBlock: return .wouldBlock
        case .done(0) where capacity > 0: return .endOfStream
        case .done(let n): return .record(count: n, truncated: result.1 & Int32(MSG_TRUNC) != 0)
        }
    }

    /// Who connected (or, on the client side, who listens): UnixSocket.peerCredentials.
    package static func peerCredentials(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Credentials {
        try UnixSocket.peerCredentials(fd)
    }

    /// Bounds how long a blocking send or connect waits. The corresponding C
    /// function is `setsockopt(SO_SNDTIMEO)`.
    package static func setSendTimeout(_ fd: borrowing OwnedDescriptor, _ timeout: Duration) throws(SystemCallError) {
        try setTimeout(fd, SO_SNDTIMEO, "setsockopt(SO_SNDTIMEO)", timeout)
    }

    /// Bounds how long a blocking receive waits (a receive without
    /// MSG_DONTWAIT on a blocking socket: `UnixSocket.receive(waiting:)`).
    /// The kernel counts it in jiffies on its timer wheel, so the wait may
    /// end up to an eighth of `timeout` plus two jiffies late: a caller with
    /// a deadline asks for less than the time left. The corresponding C
    /// function is `setsockopt(SO_RCVTIMEO)`.
    package static func setReceiveTimeout(_ fd: borrowing OwnedDescriptor, _ timeout: Duration) throws(SystemCallError) {
        try setTimeout(fd, SO_RCVTIMEO, "setsockopt(SO_RCVTIMEO)", timeout)
    }

    /// The one `setsockopt` of a socket timeout (`option`: SO_SNDTIMEO or
    /// SO_RCVTIMEO), at least a microsecond: 0 would mean "forever".
    private static func setTimeout(
        _ fd: borrowing OwnedDescriptor, _ option: Int32, _ call: String, _ timeout: Duration
    ) throws(SystemCallError) {
        let fd = fd.rawValue
        let ns = max(timeout.nanosecondsClamped, 1_000)
        var value = timeval(tv_sec: Int(ns / 1_000_000_000), tv_usec: Int(ns % 1_000_000_000) / 1_000)
        _ = try SystemCall.must(call) {
            setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// Readiness `poll` reports.
    package typealias Readiness = Poll.Events

    /// Waits until `fd` is ready for `events` (hang-up and error always
    /// count) or `timeout` passes; returns what is ready, empty on timeout
    /// (Poll.wait).
    package static func wait(_ fd: borrowing OwnedDescriptor, for events: Readiness, timeout: Duration) throws(SystemCallError) -> Readiness {
        try Poll.wait(fd, for: events, timeout: timeout)
    }

    // MARK: - Addresses

    /// A checked address, or the error the call would have given (EINVAL
    /// for an empty name or a NUL byte, ENAMETOOLONG for one that does not
    /// fit), named after `call`.
    private static func address(
        try call: String, _ make: () throws(UnixSocketAddress.Error) -> UnixSocketAddress
    ) throws(SystemCallError) -> UnixSocketAddress {
        do {
            return try make()
        } catch {
            switch error {
            case .tooLong: throw SystemCallError(call: call, errno: .fileNameTooLong)
            case .empty, .containsNul: throw SystemCallError(call: call, errno: .invalidArgument)
            }
        }
    }
}
