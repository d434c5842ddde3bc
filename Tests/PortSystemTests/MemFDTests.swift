// MemFD: sealing, the receiver's check, and a large component's whole
// journey: written, sealed, passed over a socket, checked, mapped read-only,
// digested.

import CPortSystem
import Glibc
import Testing
import PortTestSupport
import PortWire
@testable import PortSystem

@Suite struct MemFDTests {
    @Test func sealedComponentTravelsAndMaps() throws {
        // 256 MiB, written in 1 MiB chunks, each stamped with its index so
        // that a digest notices a chunk out of place.
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 8)
        defer { chunk.deallocate() }
        for i in 0..<(chunk.count / 8) { chunk.storeBytes(of: UInt64(i) &* 0x9E37_79B9_7F4A_7C15, toByteOffset: i * 8, as: UInt64.self) }
        let chunks = 256
        let length = chunks * chunk.count
        var expected = Digest()
        let memfd = try MemFD.create(name: "test-large")
        for c in 0..<chunks {
            chunk.storeBytes(of: UInt64(c), toByteOffset: 0, as: UInt64.self)
            try MemFD.write(memfd, UnsafeRawBufferPointer(chunk))
            expected.update(UnsafeRawBufferPointer(chunk))
        }
        try MemFD.addSeals(memfd, .all)
        #expect(try MemFD.seals(memfd).isSuperset(of: .all))
        #expect(try MemFD.size(memfd) == length)

        let t = TestWireTransport()
        let aPair = try UnixSocket.makePair()
        let a = aPair.first
        let b = aPair.second
        #expect(try t.send(a, msgid: 1, components: [.largeData(memfd: memfd.rawValue, length: length)]) == .sent(20))
        let m = try t.receive(b)
        guard case .largeData(let received, let n) = m.components.first else {
            Issue.record("no large component: \(m)")
            return
        }
        let fd = OwnedDescriptor(adopting: received)
        #expect(n == length)
        try MemFD.checkSealed(fd, length: n)
        let region = try MemFD.mapReadOnly(fd, length: n)
        defer { MemFD.unmap(region) }
        var got = Digest()
        got.update(region)
        #expect(got == expected)
    }

    @Test func makeSealedIsImmutable() throws {
        let bytes: [UInt8] = Array("sealed".utf8)
        var made: OwnedDescriptor?
        try bytes.withUnsafeBytes { made = try MemFD.makeSealed($0) }
        guard let fd = made.take() else { throw SystemCallError(call: "memfd_create", errno: .badFileDescriptor) }
        #expect(isCloseOnExec(fd.rawValue))
        try MemFD.checkSealed(fd, length: 6)
        // The seals hold: no write, no resize, no new seals.
        #expect(throws: SystemCallError(call: "write(memfd)", errno: .notPermitted)) {
            try bytes.withUnsafeBytes { try MemFD.write(fd, $0) }
        }
        #expect(ftruncate(fd.rawValue, 0) == -1)
        #expect(throws: SystemCallError(call: "fcntl(F_ADD_SEALS)", errno: .notPermitted)) {
            try MemFD.addSeals(fd, .futureWrite)
        }
        let region = try MemFD.mapReadOnly(fd, length: 6)
        defer { MemFD.unmap(region) }
        #expect(Array(region) == bytes)
    }

    @Test func unsealedMemfdIsRefused() throws {
        let fd = try MemFD.create()
        try [UInt8](repeating: 1, count: 100).withUnsafeBytes { try MemFD.write(fd, $0) }
        #expect(throws: MemFD.ValidationError.self) { try MemFD.checkSealed(fd, length: 100) }
        do {
            try MemFD.checkSealed(fd, length: 100)
        } catch {
            guard case .missingSeals(_, let missing) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(missing == .required)
        }
        // Partly sealed is still refused, naming what is missing.
        try MemFD.addSeals(fd, .shrink)
        do {
            try MemFD.checkSealed(fd, length: 100)
            Issue.record("a memfd without F_SEAL_WRITE was accepted")
        } catch {
            guard case .missingSeals(let present, let missing) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(present.contains(.shrink))
            #expect(missing == [.write, .grow])
            #expect(error.description.contains("missing GROW|WRITE"))
        }
        try MemFD.addSeals(fd, [.write, .grow])
        try MemFD.checkSealed(fd, length: 100)
        #expect(throws: MemFD.ValidationError.tooShort(size: 100, announced: 101)) {
            try MemFD.checkSealed(fd, length: 101)
        }
    }

    /// A memfd made long by ftruncate alone is all hole: sealed, it is
    /// still refused, by what is allocated (`st_blocks`), not its size;
    /// written, the same length is accepted.
    @Test func aSealedMemfdWithHolesIsRefused() throws {
        let length = 1 << 20
        let sparse = try MemFD.create()
        #expect(ftruncate(sparse.rawValue, off_t(length)) == 0)
        try MemFD.addSeals(sparse, .all)
        #expect(throws: MemFD.ValidationError.sparse(allocated: 0, announced: length)) {
            try MemFD.checkSealed(sparse, length: length)
        }
        let written = try MemFD.create()
        try [UInt8](repeating: 0, count: length).withUnsafeBytes { try MemFD.write(written, $0) }
        try MemFD.addSeals(written, .all)
        try MemFD.checkSealed(written, length: length)
    }

    /// A memfd twice as long as announced, its announced half a hole and
    /// the rest written, has `length` bytes allocated: the allocated total
    /// passes, the announced range does not (SEEK_HOLE finds offset 0). A
    /// hole beyond the announced range is not the receiver's business.
    @Test func aHoleInsideTheAnnouncedRangeIsRefusedOneBeyondItIsNot() throws {
        let length = 1 << 20
        let bytes = [UInt8](repeating: 0x78, count: length)
        let holeFirst = try MemFD.create()
        #expect(ftruncate(holeFirst.rawValue, off_t(2 * length)) == 0)
        #expect(bytes.withUnsafeBytes { pwrite(holeFirst.rawValue, $0.baseAddress, length, off_t(length)) } == length)
        try MemFD.addSeals(holeFirst, .all)
        #expect(throws: MemFD.ValidationError.hole(offset: 0, announced: length)) {
            try MemFD.checkSealed(holeFirst, length: length)
        }
        // A hole in the middle of the range, the file's allocation still covering it.
        let holeInside = try MemFD.create()
        #expect(ftruncate(holeInside.rawValue, off_t(2 * length)) == 0)
        #expect(bytes.withUnsafeBytes { pwrite(holeInside.rawValue, $0.baseAddress, length / 2, 0) } == length / 2)
        #expect(bytes.withUnsafeBytes { pwrite(holeInside.rawValue, $0.baseAddress, length, off_t(length)) } == length)
        try MemFD.addSeals(holeInside, .all)
        #expect(throws: MemFD.ValidationError.hole(offset: length / 2, announced: length)) {
            try MemFD.checkSealed(holeInside, length: length)
        }
        let holeAfter = try MemFD.create()
        try bytes.withUnsafeBytes { try MemFD.write(holeAfter, $0) }
        #expect(ftruncate(holeAfter.rawValue, off_t(2 * length)) == 0)
        try MemFD.addSeals(holeAfter, .all)
        try MemFD.checkSealed(holeAfter, length: length)
    }

    @Test func otherDescriptorsAreNotSealable() throws {
        let pair = try UnixSocket.makePair()
        #expect(throws: MemFD.ValidationError.notSealable) { try MemFD.checkSealed(pair.first, length: 1) }
        let pipe = try Pipe.make()
        #expect(throws: MemFD.ValidationError.notSealable) { try MemFD.checkSealed(pipe.read, length: 1) }
    }
}

/// A position-sensitive 64-bit digest over 8-byte words (FNV-1a style):
/// enough to tell a mapped component from its source. Byte counts must be
/// multiples of 8.
struct Digest: Equatable {
    var state: UInt64 = 0xCBF2_9CE4_8422_2325
    var words = 0

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count % 8 == 0)
        let base = bytes.baseAddress!
        var h = state
        for i in 0..<(bytes.count / 8) {
            h = (h ^ base.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)) &* 0x0000_0100_0000_01B3
        }
        state = h
        words += bytes.count / 8
    }
}
