// LocalSocket: the AF_UNIX calls portd's process shell needs for its control
// socket (socket, bind, listen, accept4, connect, send, recvmsg, poll,
// SO_PEERCRED, SO_SNDTIMEO), each wrapped once through `SystemCall`.
//
// PROVISIONAL: the message-port layer brings the full wrapper
// (System/UnixSocket.swift, with SCM_RIGHTS and SCM_CREDENTIALS). When it
// lands, these calls move there and this file goes; its callers are
// portd's ControlListener, PortCore's PortNameServer (its connect) and the
// PortdTests harness. Access is `package`: not part of PortCore's public API.
//
// Invariants: every descriptor is created CLOEXEC (and NONBLOCK unless the
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

    /// The outcome of a connect that may have to wait.
    package enum ConnectResult: Sendable, Equatable {
        case connected
        /// The listener's backlog is full (non-blocking socket), or the
        /// SO_SNDTIMEO of a blocking socket expired while waiting for room.
        case wouldBlock
    }

    /// The outcome of one recvmsg.
    package enum ReceiveResult: Sendable, Equatable {
        /// One record of `count` bytes; `truncated` when it did not fit the buffer.
        case record(count: Int, truncated: Bool)
        /// The peer closed its end (a zero-length read on SOCK_SEQPACKET/stream).
        case endOfStream
        /// Nothing queued.
        case wouldBlock
    }

    /// The process at the other end of a connection, as the kernel recorded it at connect time.
    package struct PeerCredentials: Sendable, Equatable {
        package let pid: Int32
        package let uid: UInt32
        package let gid: UInt32
    }

    /// Longest path a `sockaddr_un` holds, without the terminating NUL.
    package static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A new AF_UNIX socket, CLOEXEC, and NONBLOCK when `nonBlocking`.
    /// The corresponding C function is `socket`.
    package static func make(_ kind: Kind, nonBlocking: Bool = true) throws(SystemCallError) -> Int32 {
        var type = kind.rawValue | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return try SystemCall.must("socket(AF_UNIX)") { socket(AF_UNIX, type, 0) }
    }

    /// Closes a socket this process owns. The corresponding C function is `close`.
    package static func close(_ fd: Int32) {
        SystemCall.close(fd)
    }

    /// Binds `fd` to a filesystem path. The corresponding C function is `bind`.
    package static func bind(_ fd: Int32, path: String) throws(SystemCallError) {
        try withAddress(path: path, call: "bind(\(path))") { (address, length) throws(SystemCallError) in
            _ = try SystemCall.must("bind(\(path))") { Glibc.bind(fd, address, length) }
        }
    }

    /// Binds `fd` to a name in the abstract namespace (unix(7)): no file,
    /// gone when the last descriptor closes. `name` excludes the leading NUL.
    package static func bind(_ fd: Int32, abstractName name: String) throws(SystemCallError) {
        try withAddress(abstractName: name, call: "bind(@\(name))") { (address, length) throws(SystemCallError) in
            _ = try SystemCall.must("bind(@\(name))") { Glibc.bind(fd, address, length) }
        }
    }

    /// The corresponding C function is `listen`.
    package static func listen(_ fd: Int32, backlog: Int32 = 128) throws(SystemCallError) {
        _ = try SystemCall.must("listen") { Glibc.listen(fd, backlog) }
    }

    /// Accepts one pending connection as a CLOEXEC|NONBLOCK descriptor, or
    /// nil when none is pending. A connection that was reset before it was
    /// accepted (ECONNABORTED) is skipped. The corresponding C function is `accept4`.
    package static func accept(_ fd: Int32) throws(SystemCallError) -> Int32? {
        while true {
            do {
                switch try SystemCall.run("accept4", {
                    port_accept4(fd, Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue))
                }) {
                case .done(let client): return client
                case .wouldBlock: return nil
                }
            } catch where error.errno == .connectionAbort {
                continue
            }
        }
    }

    /// Connects `fd` to the socket at `path`.
    ///
    /// On AF_UNIX a connect never is "in progress": it succeeds, fails, or,
    /// when the listener's backlog is full, fails with EAGAIN on a
    /// non-blocking socket (and cannot be polled for). A blocking socket with
    /// SO_SNDTIMEO (`setSendTimeout`) instead waits for room up to that time,
    /// which is how a client bounds the wait. Both report `.wouldBlock`.
    /// ENOENT (no file), ECONNREFUSED (a file nobody listens on) and EACCES
    /// are thrown for the caller to switch on. The corresponding C function is `connect`.
    package static func connect(_ fd: Int32, path: String) throws(SystemCallError) -> ConnectResult {
        try withAddress(path: path, call: "connect(\(path))") { (address, length) throws(SystemCallError) in
            switch try SystemCall.run("connect(\(path))", { Glibc.connect(fd, address, length) }) {
            case .done: return .connected
            case .wouldBlock: return .wouldBlock
            }
        }
    }

    /// Connects a datagram socket to a name in the abstract namespace.
    package static func connect(_ fd: Int32, abstractName name: String) throws(SystemCallError) -> ConnectResult {
        try withAddress(abstractName: name, call: "connect(@\(name))") { (address, length) throws(SystemCallError) in
            switch try SystemCall.run("connect(@\(name))", { Glibc.connect(fd, address, length) }) {
            case .done: return .connected
            case .wouldBlock: return .wouldBlock
            }
        }
    }

    /// Sends one record without blocking; false when the peer's queue is
    /// full. EPIPE/ECONNRESET (peer gone) are thrown. The corresponding C
    /// function is `send` (with `MSG_NOSIGNAL | MSG_DONTWAIT`).
    package static func send(_ fd: Int32, _ bytes: [UInt8]) throws(SystemCallError) -> Bool {
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
    package static func receive(_ fd: Int32, into buffer: inout [UInt8]) throws(SystemCallError) -> ReceiveResult {
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

    /// Who connected (or, on the client side, who listens). The corresponding
    /// C function is `getsockopt(SO_PEERCRED)`.
    package static func peerCredentials(_ fd: Int32) throws(SystemCallError) -> PeerCredentials {
        var credentials = port_ucred()
        var length = socklen_t(MemoryLayout<port_ucred>.size)
        _ = try SystemCall.must("getsockopt(SO_PEERCRED)") {
            getsockopt(fd, SOL_SOCKET, PORT_SO_PEERCRED, &credentials, &length)
        }
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }

    /// Bounds how long a blocking send or connect waits. The corresponding C
    /// function is `setsockopt(SO_SNDTIMEO)`.
    package static func setSendTimeout(_ fd: Int32, _ timeout: Duration) throws(SystemCallError) {
        let ns = max(timeout.nanosecondsClamped, 1_000)  // 0 would mean "forever"
        var value = timeval(tv_sec: Int(ns / 1_000_000_000), tv_usec: Int(ns % 1_000_000_000) / 1_000)
        _ = try SystemCall.must("setsockopt(SO_SNDTIMEO)") {
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// Sets or clears O_NONBLOCK (for descriptors inherited from systemd, or
    /// after a blocking connect). The corresponding C function is `fcntl(F_SETFL)`.
    package static func setNonBlocking(_ fd: Int32, _ nonBlocking: Bool) throws(SystemCallError) {
        let flags = try SystemCall.must("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags {
            _ = try SystemCall.must("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, wanted) }
        }
    }

    /// Readiness `poll` reports.
    package struct Readiness: OptionSet, Sendable {
        package let rawValue: Int16
        package init(rawValue: Int16) { self.rawValue = rawValue }
        package static let readable = Readiness(rawValue: Int16(POLLIN))
        package static let writable = Readiness(rawValue: Int16(POLLOUT))
        package static let hangUp = Readiness(rawValue: Int16(POLLHUP))
        package static let error = Readiness(rawValue: Int16(POLLERR))
    }

    /// Waits until `fd` is ready for `events` (hang-up and error always
    /// count) or `timeout` passes; returns what is ready, empty on timeout.
    /// An interrupted wait resumes with the time left. The corresponding C function is `poll`.
    package static func wait(_ fd: Int32, for events: Readiness, timeout: Duration) throws(SystemCallError) -> Readiness {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            let left = deadline - MonotonicInstant.now()
            let ms = left <= .zero ? 0 : Int32(clamping: (left.nanosecondsClamped + 999_999) / 1_000_000)
            var entry = pollfd(fd: fd, events: events.rawValue, revents: 0)
            // Not SystemCall.run: its EINTR retry would restart the full timeout.
            let r = poll(&entry, 1, ms)
            if r >= 0 { return Readiness(rawValue: entry.revents) }
            let e = port_errno()
            if e == EINTR { continue }
            throw SystemCallError(call: "poll", errno: .init(rawValue: e))
        }
    }

    // MARK: - Addresses

    private static func withAddress<R>(
        path: String, call: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemCallError) -> R
    ) throws(SystemCallError) -> R {
        let bytes = Array(path.utf8)
        if bytes.isEmpty || bytes.contains(0) { throw SystemCallError(call: call, errno: .invalidArgument) }
        if bytes.count > maximumPathLength { throw SystemCallError(call: call, errno: .fileNameTooLong) }
        return try withAddress(pathBytes: bytes, length: bytes.count + 1, body)
    }

    private static func withAddress<R>(
        abstractName name: String, call: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemCallError) -> R
    ) throws(SystemCallError) -> R {
        let bytes = [0] + Array(name.utf8)
        if bytes.count > maximumPathLength + 1 { throw SystemCallError(call: call, errno: .fileNameTooLong) }
        // Abstract names are not NUL-terminated: the length says where they end.
        return try withAddress(pathBytes: bytes, length: bytes.count, body)
    }

    private static func withAddress<R>(
        pathBytes: [UInt8], length: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemCallError) -> R
    ) throws(SystemCallError) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in pathBytes.enumerated() { raw[i] = b }
        }
        let size = MemoryLayout<sa_family_t>.size + length
        return try withUnsafePointer(to: &address) { (pointer) throws(SystemCallError) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(SystemCallError) -> R in
                try body(sa, socklen_t(size))
            }
        }
    }
}
