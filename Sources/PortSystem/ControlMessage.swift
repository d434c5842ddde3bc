// ControlMessage: ancillary data of sendmsg/recvmsg (cmsg(3), unix(7)):
// SCM_RIGHTS (descriptors) and SCM_CREDENTIALS (pid/uid/gid).
//
// Invariants: control buffers are allocated with cmsghdr alignment (never a
// [UInt8]) and walked only with the kernel's own CMSG_* macros; payloads are
// read with loadUnaligned. A descriptor being sent is lent: its number is
// copied into the buffer and its owner keeps it open until sendmsg returns
// (the kernel passes a duplicate). A received descriptor is owned from the
// moment it is parsed: every one the kernel installed, even from a
// truncated (MSG_CTRUNC) or unexpected message, goes into the caller's
// OwnedDescriptors, or is closed here when it has no room, so none leaks.

import CPortSystem
import Glibc

/// Building and reading SCM_RIGHTS / SCM_CREDENTIALS control messages.
package enum ControlMessage {
    /// A reusable control buffer, aligned for `cmsghdr`. Owned by one
    /// connection or thread at a time; not thread-safe. To send, write a
    /// message with `reset()`, `append(_:)` per descriptor and
    /// `finish(credentials:)`.
    package final class Buffer {
        /// The start of the buffer, aligned for `cmsghdr`.
        package let pointer: UnsafeMutableRawPointer
        /// Its size in bytes.
        package let capacity: Int
        /// Descriptors written by `append` since `reset`.
        private var descriptorCount = 0

        /// A buffer of `capacity` bytes.
        package init(capacity: Int) {
            precondition(capacity >= 0)
            self.capacity = capacity
            pointer = .allocate(byteCount: max(capacity, 1), alignment: MemoryLayout<cmsghdr>.alignment)
            pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(capacity, 1))
        }

        /// A buffer with room for `descriptors` descriptors and, if asked, credentials.
        package convenience init(descriptors: Int, credentials: Bool) {
            self.init(capacity: ControlMessage.space(descriptors: descriptors, credentials: credentials))
        }

        deinit { pointer.deallocate() }

        /// Starts a new outgoing control message, with no descriptor yet.
        @inline(__always)
        package func reset() { descriptorCount = 0 }

        /// Adds `descriptor` to the SCM_RIGHTS message being written. It is
        /// lent: the caller keeps it open until the send returns.
        @inline(__always)
        package func append(_ descriptor: borrowing OwnedDescriptor) {
            append(number: descriptor.rawValue)
        }

        /// As `append(_:)`, for a number lent by its owner (PortSystem and tests).
        package func append(number: Int32) {
            let size = MemoryLayout<Int32>.size
            precondition(
                port_cmsg_space((descriptorCount + 1) * size) <= capacity,
                "control buffer too small for \(descriptorCount + 1) descriptors")
            // The payload of the first cmsghdr starts CMSG_LEN(0) bytes in.
            pointer.storeBytes(of: number, toByteOffset: port_cmsg_len(0) + descriptorCount * size, as: Int32.self)
            descriptorCount += 1
        }

        /// Writes the headers of the message: SCM_RIGHTS for the descriptors
        /// appended since `reset` (if any), then SCM_CREDENTIALS for
        /// `credentials` (if given). Returns the control length to pass to
        /// sendmsg (0: none). Sending credentials is optional: the kernel
        /// attaches the sender's real ones for a receiver with SO_PASSCRED;
        /// explicit ones must be the sender's own unless it has
        /// CAP_SYS_ADMIN / CAP_SETUID / CAP_SETGID (unix(7)).
        package func finish(credentials: Credentials? = nil) -> Int {
            let size = MemoryLayout<Int32>.size
            let needed = ControlMessage.space(descriptors: descriptorCount, credentials: credentials != nil)
            precondition(needed <= capacity, "control buffer too small: \(needed) > \(capacity)")
            if needed == 0 { return 0 }
            var msg = msghdr()
            msg.msg_control = pointer
            msg.msg_controllen = needed
            var c = port_cmsg_firsthdr(&msg)
            if descriptorCount > 0, let h = c {
                h.pointee.cmsg_level = SOL_SOCKET
                h.pointee.cmsg_type = Int32(SCM_RIGHTS)
                h.pointee.cmsg_len = port_cmsg_len(descriptorCount * size)
                c = port_cmsg_nxthdr(&msg, h)
            }
            if let credentials, let h = c {
                h.pointee.cmsg_level = SOL_SOCKET
                h.pointee.cmsg_type = PORT_SCM_CREDENTIALS
                h.pointee.cmsg_len = port_cmsg_len(MemoryLayout<port_ucred>.size)
                UnsafeMutableRawPointer(port_cmsg_data(h)).storeBytes(of: credentials.ucred, as: port_ucred.self)
            }
            return needed
        }
    }

    /// What a received control buffer held.
    package struct Received: Sendable, Equatable {
        /// How many descriptors were added to the caller's list.
        var descriptorCount: Int = 0
        /// The sender's credentials, when the socket has SO_PASSCRED.
        package var credentials: Credentials? = nil
        /// The kernel dropped control data that did not fit (MSG_CTRUNC):
        /// some descriptors the sender passed are lost. The peer must be
        /// treated as broken.
        package var truncated: Bool = false
        /// Control messages other than SCM_RIGHTS / SCM_CREDENTIALS, and
        /// descriptors beyond the room in the caller's list (closed here).
        package var unexpected: Int = 0

        package init() {}
    }

    /// Bytes of control buffer needed for `descriptors` descriptors (none:
    /// no SCM_RIGHTS message) and optionally SCM_CREDENTIALS (`CMSG_SPACE`).
    package static func space(descriptors: Int, credentials: Bool) -> Int {
        var n = 0
        if descriptors > 0 { n += port_cmsg_space(descriptors * MemoryLayout<Int32>.size) }
        if credentials { n += port_cmsg_space(MemoryLayout<port_ucred>.size) }
        return n
    }

    /// Reads the control data of a received message: the first `length`
    /// bytes of `buffer` (`msg_controllen` after recvmsg), with `truncated`
    /// from MSG_CTRUNC. Descriptors are appended to `descriptors`, which
    /// owns them from here, in the order they were sent; any beyond its
    /// capacity are closed and counted as unexpected. That holds even when
    /// `truncated` is set: the caller then drops the peer, and the list
    /// closes what it holds.
    package static func parse(
        _ buffer: Buffer, length: Int, truncated: Bool, into descriptors: inout OwnedDescriptors
    ) -> Received {
        parse(buffer.pointer, capacity: buffer.capacity, length: length, truncated: truncated, into: &descriptors)
    }

    /// `parse(_:length:truncated:into:)` of a control buffer given by its
    /// start (aligned for `cmsghdr`) and size (a `UnixSocket.ReceiveBatch`
    /// slot's).
    package static func parse(
        _ pointer: UnsafeMutableRawPointer, capacity: Int, length: Int, truncated: Bool,
        into descriptors: inout OwnedDescriptors
    ) -> Received {
        var result = Received()
        result.truncated = truncated
        precondition(length <= capacity)
        if length == 0 { return result }
        var msg = msghdr()
        msg.msg_control = pointer
        msg.msg_controllen = length
        var c = port_cmsg_firsthdr(&msg)
        while let h = c {
            let header = h.pointee
            let data = UnsafeRawPointer(port_cmsg_data(h)!)
            let payload = Int(header.cmsg_len) - port_cmsg_len(0)
            if header.cmsg_level == SOL_SOCKET && header.cmsg_type == Int32(SCM_RIGHTS) && payload >= 0 {
                let n = payload / MemoryLayout<Int32>.size
                for i in 0..<n {
                    let number = data.loadUnaligned(fromByteOffset: i * MemoryLayout<Int32>.size, as: Int32.self)
                    if descriptors.count < descriptors.capacity {
                        descriptors.append(installed: number)
                        result.descriptorCount += 1
                    } else {
                        OwnedDescriptor(adopting: number).close()
                        result.unexpected += 1
                    }
                }
            } else if header.cmsg_level == SOL_SOCKET && header.cmsg_type == PORT_SCM_CREDENTIALS
                && payload >= MemoryLayout<port_ucred>.size
            {
                result.credentials = Credentials(data.loadUnaligned(as: port_ucred.self))
            } else {
                result.unexpected += 1
            }
            c = port_cmsg_nxthdr(&msg, h)
        }
        return result
    }
}
