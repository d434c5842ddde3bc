// The largest SOCK_SEQPACKET record, measured on this kernel at the default
// send buffer: PortLimits.defaultMaxRecordSize must fit under it, whatever
// machine runs the tests. On the development machine (Linux 6.18, SO_SNDBUF
// 212,992) the measurement is 212,960 (sndbuf - 32), and
// PortLimits.measuredRecordLimitAtDefaultSendBuffer records that figure.

import Glibc
import Testing
import PortTestSupport
import PortWire
@testable import PortSystem

@Suite struct RecordLimitTests {
    /// Sends `size` bytes on a fresh pair (empty queues); true if the kernel took it.
    static func fits(_ size: Int, buffer: UnsafeRawBufferPointer) throws -> Bool {
        let pair = try UnixSocket.makePair()
        return try fits(size, buffer: buffer, on: pair.first)
    }

    private static func fits(_ size: Int, buffer: UnsafeRawBufferPointer, on a: borrowing OwnedDescriptor) throws -> Bool {
        do {
            return try UnixSocket.send(a, UnsafeRawBufferPointer(rebasing: buffer[0..<size])) == .sent(size)
        } catch where error.errno == .messageTooLong {
            return false
        }
    }

    @Test func largestRecordAtDefaultSendBuffer() throws {
        let pair = try UnixSocket.makePair()
        let sndbuf = try UnixSocket.sendBufferSize(pair.first)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: sndbuf + 1, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        let raw = UnsafeRawBufferPointer(buffer)

        // Binary search for the largest size the kernel accepts.
        var lo = 0
        var hi = sndbuf + 1
        #expect(try !Self.fits(hi, buffer: raw))
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if try Self.fits(mid, buffer: raw) { lo = mid } else { hi = mid }
        }
        let measured = lo
        #expect(measured >= PortLimits.defaultMaxRecordSize, "kernel limit \(measured) at SO_SNDBUF \(sndbuf)")
        #expect(measured < sndbuf)
        if sndbuf == 212_992 {
            // The overhead varies by kernel (32 on 6.18, 100 on older ones);
            // the default keeps a margin for both.
            #expect(measured >= 212_892 && measured <= 212_960, "measured \(measured)")
        }
    }

    @Test func fullDefaultRecordWithDescriptorsGoesThrough() throws {
        let t = TestWireTransport()
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        let pPair = try UnixSocket.makePair()
        let p = pPair.first.rawValue  // open to the end of the test
        let data = [UInt8](repeating: 0x5A, count: PortLimits.default.maxInlineDataOfOneComponent - 8)
        let components: [PortComponent] = [.data(data), .port(p)]
        #expect(WireEncoder.encodedSize(of: components) == PortLimits.defaultMaxRecordSize)
        #expect(try t.send(a, msgid: 1, replyPort: p, components: components) == .sent(PortLimits.defaultMaxRecordSize))
        let m = try t.receive(b)
        #expect(m.components.first == .data(data))
        if let r = m.replyPort { close(r) }
        if case .port(let fd) = m.components.last { close(fd) }
    }
}
