// UnixSocket.receive(_:into:upTo:) (recvmmsg) on real socket pairs: queued
// records come in order, each in its slot with its own descriptors and
// credentials, no more than asked for; the end of the stream, and an empty
// record the peer sent, end a batch (`endOfStream` with the records before
// them), and what a batch read past that end carried is closed, not leaked.

import CPortSystem
import Glibc
import Testing
@testable import PortSystem

@Suite struct ReceiveBatchTests {
    private static func sendRecord(_ fd: borrowing OwnedDescriptor, _ text: String, passing number: Int32? = nil) throws {
        let control = ControlMessage.Buffer(descriptors: 1, credentials: false)
        control.reset()
        if let number { control.append(number: number) }
        let length = control.finish()
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(text.utf8.count, 1), alignment: 1)
        defer { bytes.deallocate() }
        let count = text.utf8.count
        bytes.copyBytes(from: text.utf8)
        let outcome = try UnixSocket.send(
            fd, UnsafeRawBufferPointer(rebasing: bytes[0..<count]), control: control, controlLength: length)
        #expect(outcome == .sent(count))
    }

    private static func text(_ batch: UnixSocket.ReceiveBatch, _ i: Int) -> String {
        let record = batch.record(i)
        return String(decoding: UnsafeRawBufferPointer(rebasing: batch.buffer(i)[0..<record.byteCount]), as: UTF8.self)
    }

    /// Whether every write end of the pipe whose read end is `readEnd` is closed.
    private static func writersGone(_ readEnd: Int32) -> Bool {
        var p = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLHUP) != 0
    }

    @Test func queuedRecordsComeInOrderEachWithItsDescriptorsAndCredentials() throws {
        let pair = try UnixSocket.makePair()
        try UnixSocket.setPassCredentials(pair.second, true)
        let (r, w) = try makePipe()
        defer { _ = close(r) }
        for i in 0..<5 {
            try Self.sendRecord(pair.first, "record \(i)", passing: i == 2 ? w : nil)
        }
        _ = close(w)
        let batch = UnixSocket.ReceiveBatch(capacity: 16, recordSize: 1024, descriptors: 4)
        defer { batch.deallocate() }
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 16) == .records(5, endOfStream: false))
        var descriptors = OwnedDescriptors(capacity: 4)
        for i in 0..<5 {
            #expect(Self.text(batch, i) == "record \(i)")
            let record = batch.record(i)
            #expect(!record.truncated && !record.controlTruncated)
            let parsed = ControlMessage.parse(
                batch.control(i), capacity: batch.controlSize, length: record.controlLength, truncated: false,
                into: &descriptors)
            #expect(parsed.credentials == Credentials(pid: getpid(), uid: getuid(), gid: getgid()))
            #expect(descriptors.count == (i == 2 ? 1 : 0), "record \(i)")
            // Open from the receive until the list that parsed it closes it.
            #expect(Self.writersGone(r) == (i > 2), "record \(i)")
            descriptors.closeAll()
        }
        #expect(Self.writersGone(r))
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 16) == .wouldBlock)
    }

    @Test func noMoreRecordsThanAskedForOrThanTheBatchHolds() throws {
        let pair = try UnixSocket.makePair()
        for i in 0..<7 { try Self.sendRecord(pair.first, "r\(i)") }
        let batch = UnixSocket.ReceiveBatch(capacity: 4, recordSize: 64, descriptors: 1)
        defer { batch.deallocate() }
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 2) == .records(2, endOfStream: false))
        #expect(Self.text(batch, 0) == "r0" && Self.text(batch, 1) == "r1")
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 100) == .records(4, endOfStream: false))
        #expect((0..<4).map { Self.text(batch, $0) } == ["r2", "r3", "r4", "r5"])
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 0) == .records(1, endOfStream: false), "at least one")
        #expect(Self.text(batch, 0) == "r6")
    }

    @Test func theEndOfTheStreamComesAfterTheRecordsBeforeIt() throws {
        let pair = try UnixSocket.makePair()
        try Self.sendRecord(pair.first, "a")
        try Self.sendRecord(pair.first, "b")
        try UnixSocket.shutdown(pair.first, .write)
        let batch = UnixSocket.ReceiveBatch(capacity: 16, recordSize: 64, descriptors: 1)
        defer { batch.deallocate() }
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 16) == .records(2, endOfStream: true))
        #expect(Self.text(batch, 0) == "a" && Self.text(batch, 1) == "b")
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 16) == .endOfStream)
    }

    @Test func anEmptyRecordEndsTheStreamAndWhatCameAfterItIsClosed() throws {
        let pair = try UnixSocket.makePair()
        let (r, w) = try makePipe()
        defer { _ = close(r) }
        try Self.sendRecord(pair.first, "a")
        try Self.sendRecord(pair.first, "")
        try Self.sendRecord(pair.first, "after", passing: w)
        _ = close(w)
        let batch = UnixSocket.ReceiveBatch(capacity: 16, recordSize: 64, descriptors: 1)
        defer { batch.deallocate() }
        #expect(try UnixSocket.receive(pair.second, into: batch, upTo: 16) == .records(1, endOfStream: true))
        #expect(Self.text(batch, 0) == "a")
        #expect(Self.writersGone(r), "the descriptor read past the end was closed")
    }
}
