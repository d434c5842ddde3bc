// The encoder: round trips of random messages, the writer's own checks, and
// the limits a sender hits before anything is sent.

import Testing
import PortTestSupport
@testable import PortWire

@Suite struct WireEncoderTests {
    @Test func randomMessagesRoundTrip() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<500 {
            var components: [PortComponent] = []
            var fd: Int32 = 100
            for _ in 0..<Int(rng.next() % 8) {
                switch rng.next() % 3 {
                case 0: components.append(.data((0..<Int(rng.next() % 300)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
                case 1: components.append(.port(fd)); fd += 1
                default: components.append(.largeData(memfd: fd, length: Int(rng.next() % 100_000) + 1)); fd += 1
                }
            }
            let reply: Int32? = rng.next() % 2 == 0 ? 99 : nil
            let msgid = UInt32(truncatingIfNeeded: rng.next())
            let (bytes, fds) = try WireEncoder.encode(msgid: msgid, replyPort: reply, components: components)
            #expect(bytes.count == WireEncoder.encodedSize(of: components))
            let m = try WireDecoder.decode(bytes, descriptors: fds)
            #expect(m.msgid == msgid)
            #expect(m.replyPort == reply)
            #expect(m.components == components)
        }
    }

    @Test func encodesIntoAReusedBuffer() throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)
        defer { buffer.deallocate() }
        let fds = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 4)
        defer { fds.deallocate() }
        let components: [PortComponent] = [.data([1, 2, 3]), .port(5)]
        for msgid in UInt32(0)..<3 {
            let e = try WireEncoder.encode(
                msgid: msgid, replyPort: nil, components: components, into: buffer, descriptors: fds)
            #expect(e == .init(byteCount: 12 + 16 + 3, descriptorCount: 1))
            #expect(fds[0] == 5)
            let view = try WireDecoder.decode(
                UnsafeRawBufferPointer(rebasing: buffer[0..<e.byteCount]), descriptorCount: e.descriptorCount)
            #expect(view.msgid == msgid)
            #expect(view.copyComponents(descriptors: UnsafeBufferPointer(rebasing: fds[0..<e.descriptorCount])) == components)
        }
    }

    @Test func writerChecksItsCount() throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
        defer { buffer.deallocate() }
        var w = try WireWriter(into: buffer, msgid: 1, hasReplyPort: true, componentCount: 2)
        try w.appendData([9, 9])
        #expect(throws: WireError.componentCountMismatch(declared: 2, written: 1)) { try w.finish() }
        try w.appendPort()
        #expect(w.descriptorCount == 2)
        #expect(throws: WireError.componentCountMismatch(declared: 2, written: 3)) { try w.appendPort() }
        let n = try w.finish()
        #expect(n == 12 + 16 + 2)
        let m = try WireDecoder.decode(Array(UnsafeRawBufferPointer(rebasing: buffer[0..<n])), descriptors: [1, 2])
        #expect(m.components == [.data([9, 9]), .port(2)])
    }

    @Test func senderHitsLimitsBeforeWriting() throws {
        let big = PortComponent.data(Array(repeating: 0, count: PortLimits.default.maxInlineDataOfOneComponent + 1))
        #expect(throws: WireError.recordTooLarge(size: PortLimits.defaultMaxRecordSize + 1, limit: PortLimits.defaultMaxRecordSize)) {
            try WireEncoder.encode(msgid: 1, components: [big])
        }
        let fits = PortComponent.data(Array(repeating: 0, count: PortLimits.default.maxInlineDataOfOneComponent))
        #expect(try WireEncoder.encode(msgid: 1, components: [fits]).bytes.count == PortLimits.defaultMaxRecordSize)

        let ports = Array(repeating: PortComponent.port(3), count: 253)
        #expect(throws: WireError.tooManyDescriptors(count: 254, limit: 253)) {
            try WireEncoder.encode(msgid: 1, replyPort: 4, components: ports)
        }
        #expect(throws: WireError.tooManyComponents(count: 1025, limit: 1024)) {
            try WireEncoder.encode(msgid: 1, components: Array(repeating: .data([]), count: 1025))
        }
        #expect(throws: WireError.largeDataTooLarge(total: 1 << 30 + 1, limit: 1 << 30)) {
            try WireEncoder.encode(
                msgid: 1, components: Array(repeating: .largeData(memfd: 3, length: 1 << 28), count: 4) + [.largeData(memfd: 3, length: 1)])
        }
        #expect(throws: WireError.largeComponentTooLarge(component: 1, length: 1 << 28 + 1, limit: 1 << 28)) {
            try WireEncoder.encode(
                msgid: 1, components: [.largeData(memfd: 3, length: 1 << 28), .largeData(memfd: 3, length: 1 << 28 + 1)])
        }
        #expect(throws: WireError.invalidComponentLength(component: 1, kind: .largeData, length: 0)) {
            try WireEncoder.encode(msgid: 1, components: [.data([]), .largeData(memfd: 3, length: 0)])
        }
        let small = UnsafeMutableRawBufferPointer.allocate(byteCount: 20, alignment: 8)
        defer { small.deallocate() }
        let none = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 0)
        defer { none.deallocate() }
        #expect(throws: WireError.bufferTooSmall(needed: 24, capacity: 20)) {
            try WireEncoder.encode(msgid: 1, replyPort: nil, components: [.data([1, 2, 3, 4])], into: small, descriptors: none)
        }
        #expect(throws: WireError.bufferTooSmall(needed: 1, capacity: 0)) {
            try WireEncoder.encode(msgid: 1, replyPort: 3, components: [], into: small, descriptors: none)
        }
    }

    @Test func errorsReadWell() {
        #expect(WireError.badMagic(0x1234_5678).description == "bad magic 0x12345678 (expected \"port\")")
        #expect(
            WireError.descriptorCountMismatch(expected: 2, received: 3).description
                == "record carried 3 descriptors, header calls for 2")
    }
}
