// UnixSocket+Messages: sendmsg(2) and recvmsg(2) on SOCK_SEQPACKET sockets,
// one record per call.
//
// Invariants: every send uses MSG_NOSIGNAL (a gone peer is EPIPE, never
// SIGPIPE) and MSG_DONTWAIT (a descriptor received from elsewhere may be
// blocking: O_NONBLOCK belongs to the open file, which the sender chose);
// every receive uses MSG_CMSG_CLOEXEC and MSG_DONTWAIT, but a `waiting`
// one, which a caller asks for on a socket it made blocking (the
// name-server client's control connection). "Nothing to do" is a
// value (`.wouldBlock`), as are the two ways a peer goes away; anything else
// throws a SystemCallError naming the call (EMSGSIZE: record larger than
// the send buffer allows; ETOOMANYREFS: too many descriptors in flight).

import CPortSystem
import Glibc
import SystemPackage

extension UnixSocket {
    /// The outcome of `send`.
    package enum SendOutcome: Equatable, Sendable {
        /// The whole record (this many bytes) was queued.
        case sent(Int)
        /// The peer's queue or our send buffer is full: wait for writability.
        case wouldBlock
        /// EPIPE: the peer closed its end (or shut it down for reading).
        case peerClosed
        /// ECONNRESET: the connection was reset by the peer.
        case connectionReset
    }

    /// The outcome of `receive`.
    package enum ReceiveOutcome: Equatable, Sendable {
        /// One record.
        case record(ReceivedRecord)
        /// Nothing queued.
        case wouldBlock
        /// The peer closed its end and every record has been read.
        case endOfStream
        /// ECONNRESET: the connection was reset by the peer.
        case connectionReset
    }

    /// What recvmsg reported about one record.
    package struct ReceivedRecord: Equatable, Sendable {
        /// Bytes written to the data buffer.
        package var byteCount: Int
        /// Bytes of control data written to the control buffer.
        package var controlLength: Int
        /// The record was longer than the data buffer (MSG_TRUNC): the rest is lost.
        package var truncated: Bool
        /// Control data was lost (MSG_CTRUNC): some descriptors were closed by the kernel.
        package var controlTruncated: Bool

        package init(byteCount: Int, controlLength: Int, truncated: Bool, controlTruncated: Bool) {
            self.byteCount = byteCount
            self.controlLength = controlLength
            self.truncated = truncated
            self.controlTruncated = controlTruncated
        }
    }

    private static let sendFlags = Int32(MSG_NOSIGNAL | MSG_DONTWAIT)
    private static let receiveFlags = Int32(MSG_CMSG_CLOEXEC | MSG_DONTWAIT)
    private static let waitingReceiveFlags = Int32(MSG_CMSG_CLOEXEC)

    /// Sends one record gathered from `iovecs`, with the first
    /// `controlLength` bytes of `control` as ancillary data (see
    /// `ControlMessage.Buffer.finishRights` and `ControlMessage.encode`). The corresponding C function is `sendmsg`.
    package static func send(
        _ fd: borrowing OwnedDescriptor, iovecs: UnsafeBufferPointer<iovec>, control: ControlMessage.Buffer?,
        controlLength: Int = 0
    ) throws(SystemCallError) -> SendOutcome {
        let fd = fd.rawValue
        var msg = msghdr()
        msg.msg_iov = UnsafeMutablePointer(mutating: iovecs.baseAddress)
        msg.msg_iovlen = iovecs.count
        if let control, controlLength > 0 {
            precondition(controlLength <= control.capacity)
            msg.msg_control = control.pointer
            msg.msg_controllen = controlLength
        }
        do {
            switch try SystemCall.run("sendmsg", { sendmsg(fd, &msg, sendFlags) }) {
            case .done(let n): return .sent(n)
            case .wouldBlock: return .wouldBlock
            }
        } catch where error.errno == .brokenPipe {
            return .peerClosed
        } catch where error.errno == .connectionReset {
            return .connectionReset
        }
    }

    /// Sends `bytes` as one datagram to `address` from an unconnected
    /// datagram socket, with the first `controlLength` bytes of `control`
    /// as ancillary data, never waiting: a receiver whose queue is full
    /// (`net.unix.max_dgram_qlen`) is `.wouldBlock`. A missing or unbound
    /// address (ENOENT, ECONNREFUSED) is thrown. The corresponding C
    /// function is `sendmsg` (with `msg_name`).
    package static func send(
        _ fd: borrowing OwnedDescriptor, _ bytes: UnsafeRawBufferPointer, to address: UnixSocketAddress,
        control: ControlMessage.Buffer? = nil, controlLength: Int = 0
    ) throws(SystemCallError) -> SendOutcome {
        let fd = fd.rawValue
        var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return try address.withSockAddr { (sa, length) throws(SystemCallError) -> SendOutcome in
            try withUnsafeMutablePointer(to: &iov) { p throws(SystemCallError) -> SendOutcome in
                var msg = msghdr()
                msg.msg_name = UnsafeMutableRawPointer(mutating: sa)
                msg.msg_namelen = length
                msg.msg_iov = p
                msg.msg_iovlen = 1
                if let control, controlLength > 0 {
                    precondition(controlLength <= control.capacity)
                    msg.msg_control = control.pointer
                    msg.msg_controllen = controlLength
                }
                switch try SystemCall.run("sendmsg(\(address))", { sendmsg(fd, &msg, sendFlags) }) {
                case .done(let n): return .sent(n)
                case .wouldBlock: return .wouldBlock
                }
            }
        }
    }

    /// Sends `bytes` as one record. See `send(_:iovecs:control:controlLength:)`.
    package static func send(
        _ fd: borrowing OwnedDescriptor, _ bytes: UnsafeRawBufferPointer, control: ControlMessage.Buffer? = nil,
        controlLength: Int = 0
    ) throws(SystemCallError) -> SendOutcome {
        var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return try withUnsafePointer(to: &iov) { p throws(SystemCallError) in
            try send(fd, iovecs: UnsafeBufferPointer(start: p, count: 1), control: control, controlLength: controlLength)
        }
    }

    /// Receives one record into `buffer`, and its ancillary data into
    /// `control` (read it with `ControlMessage.parse`, which makes every
    /// descriptor in it owned). Descriptors arrive CLOEXEC. A zero-length read with no control data is end-of-stream (a
    /// PortCore record is never empty; an empty record carrying descriptors
    /// is reported as a record so that they can be closed). The
    /// corresponding C function is `recvmsg`.
    ///
    /// `waiting`: without MSG_DONTWAIT, so that on a blocking socket the
    /// call sleeps until a record comes or the socket's SO_RCVTIMEO
    /// (`LocalSocket.setReceiveTimeout`) passes; both that timeout and an
    /// interruption by a signal (EINTR, which a receive timeout gets
    /// whatever SA_RESTART says) are `.wouldBlock`, for the caller to look
    /// at its deadline again. Only for sockets the caller made blocking
    /// itself (on a non-blocking one it is an ordinary receive).
    package static func receive(
        _ fd: borrowing OwnedDescriptor, into buffer: UnsafeMutableRawBufferPointer, control: ControlMessage.Buffer?,
        waiting: Bool = false
    ) throws(SystemCallError) -> ReceiveOutcome {
        let fd = fd.rawValue
        var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var msg = msghdr()
        if let control {
            msg.msg_control = control.pointer
            msg.msg_controllen = control.capacity
        }
        let result: IOResult<Int>
        do {
            result = try withUnsafeMutablePointer(to: &iov) { p throws(SystemCallError) in
                msg.msg_iov = p
                msg.msg_iovlen = 1
                guard waiting else { return try SystemCall.run("recvmsg", { recvmsg(fd, &msg, receiveFlags) }) }
                // Not SystemCall.run: its EINTR retry would start the
                // receive timeout again, past the caller's deadline.
                let n = recvmsg(fd, &msg, waitingReceiveFlags)
                if n >= 0 { return .done(n) }
                let e = port_errno()
                switch e {
                case EINTR, EAGAIN, EWOULDBLOCK: return .wouldBlock
                case EBADF, EFAULT:
                    preconditionFailure("recvmsg: \(Errno(rawValue: e)) (a descriptor or buffer PortCore owns is wrong)")
                default: throw SystemCallError(call: "recvmsg", errno: Errno(rawValue: e))
                }
            }
        } catch where error.errno == .connectionReset {
            return .connectionReset
        }
        switch result {
        case .wouldBlock:
            return .wouldBlock
        case .done(let n):
            let controlLength = control == nil ? 0 : Int(msg.msg_controllen)
            if n == 0 && controlLength == 0 { return .endOfStream }
            return .record(
                ReceivedRecord(
                    byteCount: n, controlLength: controlLength,
                    truncated: msg.msg_flags & Int32(MSG_TRUNC) != 0,
                    controlTruncated: msg.msg_flags & Int32(MSG_CTRUNC) != 0))
        }
    }
}
