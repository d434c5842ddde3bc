// Golden bytes: these records are the format of portd-protocol(7), version
// 1. If one of these tests fails, the wire format changed: bump the version
// and update the man page, never just the expected bytes.

import Testing
import PortTestSupport
@testable import PortWire

@Suite struct WireGoldenTests {
    /// msgid 42, no reply port, no components: the header alone.
    static let empty = Hex.bytes("70 6f 72 74  01  00  00 00  2a 00 00 00")

    /// The check-in message: msgid 100, a reply port, the worker's name.
    static let checkIn = Hex.bytes(
        """
        70 6f 72 74  01  01  01 00  64 00 00 00
        01 00 00 00  06 00 00 00
        77 6f 72 6b 65 72
        """)

    /// msgid 0x01020304, a reply port, data "hi", a port, empty data, and a
    /// 64 KiB large component. Descriptors: reply, port, memfd.
    static let mixed = Hex.bytes(
        """
        70 6f 72 74  01  01  04 00  04 03 02 01
        01 00 00 00  02 00 00 00
        02 00 00 00  00 00 00 00
        01 00 00 00  00 00 00 00
        03 00 00 00  00 00 01 00
        68 69
        """)
    static let mixedComponents: [PortComponent] = [
        .data(Array("hi".utf8)), .port(11), .data([]), .largeData(memfd: 12, length: 0x10000),
    ]

    @Test func emptyMessage() throws {
        let (bytes, fds) = try WireEncoder.encode(msgid: 42, components: [])
        #expect(bytes == Self.empty)
        #expect(fds.isEmpty)
        let m = try WireDecoder.decode(Self.empty)
        #expect(m.msgid == 42)
        #expect(m.replyPort == nil)
        #expect(m.components.isEmpty)
    }

    @Test func checkInMessage() throws {
        let (bytes, fds) = try WireEncoder.encode(
            msgid: WireFormat.checkInMessageID, replyPort: 7, components: [.data(Array("worker".utf8))])
        #expect(bytes == Self.checkIn)
        #expect(fds == [7])
        let m = try WireDecoder.decode(Self.checkIn, descriptors: [9])
        #expect(m.msgid == 100)
        #expect(m.replyPort == 9)
        #expect(m.components == [.data(Array("worker".utf8))])
    }

    @Test func mixedMessage() throws {
        let (bytes, fds) = try WireEncoder.encode(msgid: 0x0102_0304, replyPort: 10, components: Self.mixedComponents)
        #expect(bytes == Self.mixed)
        #expect(fds == [10, 11, 12])  // reply port first, then components in order
        let m = try WireDecoder.decode(Self.mixed, descriptors: [20, 21, 22])
        #expect(m.msgid == 0x0102_0304)
        #expect(m.replyPort == 20)
        #expect(
            m.components == [.data(Array("hi".utf8)), .port(21), .data([]), .largeData(memfd: 22, length: 0x10000)])
    }

    @Test func magicIsASCIIPort() {
        #expect(Hex.bytes("70 6f 72 74") == Array("port".utf8))
        withUnsafeBytes(of: WireFormat.magic.littleEndian) { #expect(Array($0) == Array("port".utf8)) }
    }
}
