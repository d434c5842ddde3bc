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
// first one ends the batch: the records before it are returned, with
// `endOfStream` set, and the caller treats the connection as ended once
// it has taken them (an empty record the peer really sent ends the
// connection as it does for `receive`; the state is the caller's, since a
// batch serves many connections in turn). Records read after it are
// dropped, their descriptors closed. Every slot's
// control buffer may hold descriptors the kernel installed: the caller
// parses each record's (`ControlMessage.parse`) before it receives again,
// or they leak. Data buffers are one allocation, reused; pages are touched
// only as records are written into them. The headers are set up once.

import CPortSystem
import Glibc

extension UnixSocket {
    /// The buffers of up to `capacity` records received in one call: raw
    /// memory, so that reading a slot costs no reference counting. Owned
    /// by one receiver, which calls `deallocate()` once, when done; not
    /// thread-safe.
    package struct ReceiveBatch {
        /// How many records one call can receive.
        package let capacity: Int
        /// The size of each record's data buffer.
        package let recordSize: Int
        /// The size of each record's control buffer.
        package let controlSize: Int
        private let data: UnsafeMutableRawPointer
        private let controls: UnsafeMutableRawPointer
        private let headers: UnsafeMutablePointer<port_mmsghdr>
        private let iovecs: UnsafeMutablePointer<iovec>

        /// Room for `capacity` records of up to `recordSize` bytes, each
        /// with a control buffer for `descriptors` descriptors and the
        /// sender's credentials.
        package init(capacity: Int, recordSize: Int, descriptors: Int) {
            precondition(capacity >= 1 && recordSize >= 1)
            self.capacity = capacity
            self.recordSize = recordSize
            // CMSG_SPACE sizes are multiples of cmsghdr's alignment, so
            // every slot's control buffer starts aligned.
            controlSize = ControlMessage.space(descriptors: descriptors, credentials: true)
            data = .allocate(byteCount: capacity * recordSize, alignment: 8)
            controls = .allocate(byteCount: capacity * controlSize, alignment: MemoryLayout<cmsghdr>.alignment)
            controls.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * controlSize)
            headers = .allocate(capacity: capacity)
            iovecs = .allocate(capacity: capacity)
            // Set up once: a call writes back only the lengths and flags.
            for i in 0..<capacity {
                iovecs[i] = iovec(iov_base: data + i * recordSize, iov_len: recordSize)
                var m = msghdr()
                m.msg_iov = iovecs + i
                m.msg_iovlen = 1
                m.msg_control = controls + i * controlSize
                m.msg_controllen = controlSize
                headers.advanced(by: i).initialize(to: port_mmsghdr(msg_hdr: m, msg_len: 0))
            }
        }

        /// Frees the buffers; the batch must not be used again.
        package func deallocate() {
            data.deallocate()
            controls.deallocate()
            headers.deallocate()
            iovecs.deallocate()
        }

        /// The data buffer of slot `i`.
        @inline(__always)
        package func buffer(_ i: Int) -> UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(start: data + i * recordSize, count: recordSize)
        }

        /// The control buffer of slot `i` (`controlSize` bytes), to parse
        /// with `ControlMessage.parse(_:capacity:length:truncated:into:)`.
        @inline(__always)
        package func control(_ i: Int) -> UnsafeMutableRawPointer { controls + i * controlSize }

        /// What the last call reported about the record in slot `i`.
        @inline(__always)
        package func record(_ i: Int) -> ReceivedRecord {
            let h = headers[i]
            return ReceivedRecord(
                byteCount: Int(h.msg_len), controlLength: Int(h.msg_hdr.msg_controllen),
                truncated: h.msg_hdr.msg_flags & Int32(MSG_TRUNC) != 0,
                controlTruncated: h.msg_hdr.msg_flags & Int32(MSG_CTRUNC) != 0)
        }

        /// Readies the first `n` slots for a call: recvmmsg writes each
        /// one's control length back.
        @inline(__always)
        fileprivate func prepare(_ n: Int) -> UnsafeMutablePointer<port_mmsghdr> {
            for i in 0..<n { headers[i].msg_hdr.msg_controllen = controlSize }
            return headers
        }
    }

    /// The outcome of `receive(_:into:upTo:)`.
    package enum BatchOutcome: Equatable, Sendable {
        /// This many records, in slots 0 to n-1; `endOfStream`: the peer
        /// closed its end (or sent an empty record) after them.
        case records(Int, endOfStream: Bool)
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
            if records == Int(count) { return .records(records, endOfStream: false) }
            // The end (see the header): what came after it is dropped.
            for i in (records + 1)..<Int(count) where headers[i].msg_hdr.msg_controllen > 0 {
                var dropped = OwnedDescriptors(capacity: Int(PORT_SCM_MAX_FD))
                _ = ControlMessage.parse(
                    batch.control(i), capacity: batch.controlSize, length: Int(headers[i].msg_hdr.msg_controllen),
                    truncated: false, into: &dropped)
                dropped.closeAll()
            }
            return records == 0 ? .endOfStream : .records(records, endOfStream: true)
        }
    }
}
