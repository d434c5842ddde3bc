// UnixSocket+Batch: recvmmsg(2) on SOCK_SEQPACKET sockets, several records
// per call, each into a slot of its own (a data buffer and a control
// buffer), for a receiver that drains a queue (PCPort's fair share of a
// pass) with fewer system calls than one recvmsg a record.
//
// Invariants: the same flags and outcomes as `UnixSocket.receive`
// (MSG_CMSG_CLOEXEC, MSG_DONTWAIT; nothing queued is `.wouldBlock`,
// ECONNRESET `.connectionReset`), and the same rule for the end of the
// stream: a record of zero bytes and no control data. At the end of the
// stream recvmmsg fills every slot left with such an empty read, so the
// first one ends the batch: the records before it are returned, and the
// next call reports `.endOfStream` without a system call (an empty record
// the peer really sent ends the connection as it does for `receive`).
// Records read after it are dropped, their descriptors closed. Every slot's
// control buffer may hold descriptors the kernel installed: the caller
// parses each record's (`ControlMessage.parse`) before it receives again,
// or they leak. Data buffers are one allocation, reused; pages are touched
// only as records are written into them.

import CPortSystem
import Glibc

extension UnixSocket {
    /// The buffers of up to `capacity` records received in one call. Owned
    /// by one receiver at a time; not thread-safe.
    package final class ReceiveBatch {
        /// How many records one call can receive.
        package let capacity: Int
        /// The size of each record's data buffer.
        package let recordSize: Int
        private let data: UnsafeMutableRawPointer
        private let headers: UnsafeMutablePointer<port_mmsghdr>
        private let iovecs: UnsafeMutablePointer<iovec>
        /// Each slot's control buffer.
        package let controls: [ControlMessage.Buffer]
        /// The last call ended at the end of the stream after returning
        /// records: the next reports `.endOfStream`.
        fileprivate var endPending = false

        /// Room for `capacity` records of up to `recordSize` bytes, each
        /// with a control buffer for `descriptors` descriptors and the
        /// sender's credentials.
        package init(capacity: Int, recordSize: Int, descriptors: Int) {
            precondition(capacity >= 1 && recordSize >= 1)
            self.capacity = capacity
            self.recordSize = recordSize
            data = .allocate(byteCount: capacity * recordSize, alignment: 8)
            headers = .allocate(capacity: capacity)
            headers.initialize(repeating: port_mmsghdr(), count: capacity)
            iovecs = .allocate(capacity: capacity)
            iovecs.initialize(repeating: iovec(), count: capacity)
            controls = (0..<capacity).map { _ in ControlMessage.Buffer(descriptors: descriptors, credentials: true) }
        }

        deinit {
            data.deallocate()
            headers.deallocate()
            iovecs.deallocate()
        }

        /// The data buffer of slot `i`.
        @inline(__always)
        package func buffer(_ i: Int) -> UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(start: data + i * recordSize, count: recordSize)
        }

        /// What the last call reported about the record in slot `i`.
        @inline(__always)
        package func record(_ i: Int) -> ReceivedRecord {
            let h = headers[i]
            return ReceivedRecord(
                byteCount: Int(h.msg_len), controlLength: Int(h.msg_hdr.msg_controllen),
                truncated: h.msg_hdr.msg_flags & Int32(MSG_TRUNC) != 0,
                controlTruncated: h.msg_hdr.msg_flags & Int32(MSG_CTRUNC) != 0)
        }

        /// Sets up the first `n` slots for a call (recvmmsg writes the
        /// control lengths and flags back).
        fileprivate func prepare(_ n: Int) -> UnsafeMutablePointer<port_mmsghdr> {
            for i in 0..<n {
                iovecs[i] = iovec(iov_base: data + i * recordSize, iov_len: recordSize)
                var m = msghdr()
                m.msg_iov = iovecs + i
                m.msg_iovlen = 1
                m.msg_control = controls[i].pointer
                m.msg_controllen = controls[i].capacity
                headers[i] = port_mmsghdr(msg_hdr: m, msg_len: 0)
            }
            return headers
        }
    }

    /// The outcome of `receive(_:into:upTo:)`.
    package enum BatchOutcome: Equatable, Sendable {
        /// This many records, in slots 0 to n-1.
        case records(Int)
        /// Nothing queued.
        case wouldBlock
        /// The peer closed its end and every record has been read.
        case endOfStream
        /// ECONNRESET: the connection was reset by the peer.
        case connectionReset
    }

    /// Receives up to `limit` (at most the batch's capacity) records
    /// queued on `fd` in one call, without waiting for more than are
    /// there. See the header for the end of the stream and for the
    /// descriptors each slot may hold. The corresponding C function is
    /// `recvmmsg`.
    package static func receive(
        _ fd: borrowing OwnedDescriptor, into batch: ReceiveBatch, upTo limit: Int
    ) throws(SystemCallError) -> BatchOutcome {
        if batch.endPending {
            batch.endPending = false
            return .endOfStream
        }
        let n = min(max(limit, 1), batch.capacity)
        let fd = fd.rawValue
        let headers = batch.prepare(n)
        let result: IOResult<Int32>
        do {
            result = try SystemCall.run(
                "recvmmsg", { port_recvmmsg(fd, headers, UInt32(n), Int32(MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) })
        } catch where error.errno == .connectionReset {
            return .connectionReset
        }
        switch result {
        case .wouldBlock:
            return .wouldBlock
        case .done(let count):
            var records = 0
            while records < Int(count) {
                let h = headers[records]
                if h.msg_len == 0 && h.msg_hdr.msg_controllen == 0 { break }
                records += 1
            }
            if records == Int(count) { return .records(records) }
            // The end (see the header): what came after it is dropped.
            for i in (records + 1)..<Int(count) where headers[i].msg_hdr.msg_controllen > 0 {
                var dropped = OwnedDescriptors(capacity: Int(PORT_SCM_MAX_FD))
                _ = ControlMessage.parse(
                    batch.controls[i], length: Int(headers[i].msg_hdr.msg_controllen), truncated: false,
                    into: &dropped)
                dropped.closeAll()
            }
            if records == 0 { return .endOfStream }
            batch.endPending = true
            return .records(records)
        }
    }
}
