// ControlMessage: ancillary data of sendmsg/recvmsg (cmsg(3), unix(7)):
// SCM_RIGHTS (descriptors) and SCM_CREDENTIALS (pid/uid/gid).
//
// Invariants: control buffers are allocated with cmsghdr alignment (never a
// [UInt8]) and walked only with the kernel's own CMSG_* macros; payloads are
// read with loadUnaligned. Parsing hands back every descriptor the kernel
// installed, even from a truncated (MSG_CTRUNC) or unexpected message, so
// that the caller can close them all: a descriptor is never leaked by the
// parser, and the ones it cannot hand back it closes itself.

import CPortSystem
import Glibc

/// Building and reading SCM_RIGHTS / SCM_CREDENTIALS control messages.
public enum ControlMessage {
    /// A reusable control buffer, aligned for `cmsghdr`. Owned by one
    /// connection or thread at a time; not thread-safe.
    public final class Buffer {
        /// The start of the buffer, aligned for `cmsghdr`.
        public let pointer: UnsafeMutableRawPointer
        /// Its size in bytes.
        public let capacity: Int

        /// A buffer of `capacity` bytes.
        public init(capacity: Int) {
            precondition(capacity >= 0)
            self.capacity = capacity
            pointer = .allocate(byteCount: max(capacity, 1), alignment: MemoryLayout<cmsghdr>.alignment)
            pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(capacity, 1))
        }

        /// A buffer with room for `descriptors` descriptors and, if asked, credentials.
        public convenience init(descriptors: Int, credentials: Bool) {
            self.init(capacity: ControlMessage.space(descriptors: descriptors, credentials: credentials))
        }

        deinit { pointer.deallocate() }
    }

    /// What a received control buffer held.
    public struct Received: Sendable, Equatable {
        /// How many descriptors were written to the caller's array.
        public var descriptorCount: Int = 0
        /// The sender's credentials, when the socket has SO_PASSCRED.
        public var credentials: Credentials? = nil
        /// The kernel dropped control data that did not fit (MSG_CTRUNC):
        /// some descriptors the sender passed are lost. The peer must be
        /// treated as broken.
        public var truncated: Bool = false
        /// Control messages other than SCM_RIGHTS / SCM_CREDENTIALS, and
        /// descriptors beyond the caller's array (closed here).
        public var unexpected: Int = 0

        public init() {}
    }

    /// Bytes of control buffer needed for `descriptors` descriptors (none:
    /// no SCM_RIGHTS message) and optionally SCM_CREDENTIALS (`CMSG_SPACE`).
    public static func space(descriptors: Int, credentials: Bool) -> Int {
        var n = 0
        if descriptors > 0 { n += port_cmsg_space(descriptors * MemoryLayout<Int32>.size) }
        if credentials { n += port_cmsg_space(MemoryLayout<port_ucred>.size) }
        return n
    }

    /// Writes an SCM_RIGHTS message for `descriptors` (if any) and an
    /// SCM_CREDENTIALS message for `credentials` (if given) into `buffer`
    /// and returns the control length to pass to sendmsg (0: none). Sending
    /// credentials is optional: the kernel attaches the sender's real ones
    /// for a receiver with SO_PASSCRED; explicit ones must be the sender's own
    /// unless it has CAP_SYS_ADMIN / CAP_SETUID / CAP_SETGID (unix(7)).
    public static func encode(
        descriptors: UnsafeBufferPointer<Int32>, credentials: Credentials? = nil, into buffer: Buffer
    ) -> Int {
        let needed = space(descriptors: descriptors.count, credentials: credentials != nil)
        precondition(needed <= buffer.capacity, "control buffer too small: \(needed) > \(buffer.capacity)")
        if needed == 0 { return 0 }
        buffer.pointer.initializeMemory(as: UInt8.self, repeating: 0, count: needed)
        var msg = msghdr()
        msg.msg_control = buffer.pointer
        msg.msg_controllen = needed
        var c = port_cmsg_firsthdr(&msg)
        if !descriptors.isEmpty, let h = c {
            let bytes = descriptors.count * MemoryLayout<Int32>.size
            h.pointee.cmsg_level = SOL_SOCKET
            h.pointee.cmsg_type = Int32(SCM_RIGHTS)
            h.pointee.cmsg_len = port_cmsg_len(bytes)
            UnsafeMutableRawPointer(port_cmsg_data(h)).copyMemory(from: descriptors.baseAddress!, byteCount: bytes)
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

    /// Reads the control data of a received message: the first `length`
    /// bytes of `buffer` (`msg_controllen` after recvmsg), with `truncated`
    /// from MSG_CTRUNC. Descriptors go to `descriptors` in the order they
    /// were sent; any beyond its capacity are closed and counted as
    /// unexpected. The caller owns (and must close) every descriptor
    /// reported, even when `truncated` is set.
    public static func parse(
        _ buffer: Buffer, length: Int, truncated: Bool, descriptors: UnsafeMutableBufferPointer<Int32>
    ) -> Received {
        var result = Received()
        result.truncated = truncated
        precondition(length <= buffer.capacity)
        if length == 0 { return result }
        var msg = msghdr()
        msg.msg_control = buffer.pointer
        msg.msg_controllen = length
        var c = port_cmsg_firsthdr(&msg)
        while let h = c {
            let header = h.pointee
            let data = UnsafeRawPointer(port_cmsg_data(h)!)
            let payload = Int(header.cmsg_len) - port_cmsg_len(0)
            if header.cmsg_level == SOL_SOCKET && header.cmsg_type == Int32(SCM_RIGHTS) && payload >= 0 {
                let n = payload / MemoryLayout<Int32>.size
                for i in 0..<n {
                    let fd = data.loadUnaligned(fromByteOffset: i * MemoryLayout<Int32>.size, as: Int32.self)
                    if result.descriptorCount < descriptors.count {
                        descriptors[result.descriptorCount] = fd
                        result.descriptorCount += 1
                    } else {
                        SystemCall.close(fd)
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
