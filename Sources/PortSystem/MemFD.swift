// MemFD: memfd_create(2) with file sealing (fcntl(2), "File Sealing"), the
// carrier of components too large for one socket record.
//
// Invariants: every memfd is created MFD_CLOEXEC | MFD_ALLOW_SEALING (and
// MFD_NOEXEC_SEAL where the kernel knows it). A sender writes the bytes, then
// adds F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, so that the
// contents and size can never change again, whoever holds the descriptor. A
// receiver trusts a memfd only after `checkSealed` saw at least the first
// three seals and a size covering the announced length, all of that range
// allocated: no hole before the announced length (SEEK_HOLE from offset 0),
// since reading a hole allocates memory charged to the reader, whatever
// the rest of the file holds; only then does it map it, read-only. Without the seals a sender could shrink the file under
// the receiver's mapping (SIGBUS) or change bytes after validation.

import CPortSystem
import Glibc

/// Sealed shared-memory files. Each system call is wrapped once here. The
/// calls are `package` (PortCore's users hold a SharedMemory); the seals and
/// the validation error are public, as PortError reports them.
public enum MemFD {
    /// File seals (`F_SEAL_*`), as `F_GET_SEALS` reports them.
    public struct Seals: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// No further seals may be added.
        public static let seal = Seals(rawValue: UInt32(PORT_F_SEAL_SEAL))
        /// The file may not shrink.
        public static let shrink = Seals(rawValue: UInt32(PORT_F_SEAL_SHRINK))
        /// The file may not grow.
        public static let grow = Seals(rawValue: UInt32(PORT_F_SEAL_GROW))
        /// The contents may not change.
        public static let write = Seals(rawValue: UInt32(PORT_F_SEAL_WRITE))
        /// No new writable mappings or writes (existing mappings stay writable).
        public static let futureWrite = Seals(rawValue: UInt32(PORT_F_SEAL_FUTURE_WRITE))
        /// The executable bits may not change.
        public static let exec = Seals(rawValue: UInt32(PORT_F_SEAL_EXEC))

        /// What a receiver requires before it maps a large component.
        public static let required: Seals = [.write, .shrink, .grow]
        /// What `MemFD.makeSealed` applies.
        public static let all: Seals = [.write, .shrink, .grow, .seal]

        public var description: String {
            var names: [String] = []
            if contains(.seal) { names.append("SEAL") }
            if contains(.shrink) { names.append("SHRINK") }
            if contains(.grow) { names.append("GROW") }
            if contains(.write) { names.append("WRITE") }
            if contains(.futureWrite) { names.append("FUTURE_WRITE") }
            if contains(.exec) { names.append("EXEC") }
            return names.isEmpty ? "[]" : names.joined(separator: "|")
        }
    }

    /// Why a received descriptor is not acceptable as a large component.
    public enum ValidationError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The descriptor is not a file that supports sealing (e.g. a socket or a pipe).
        case notSealable
        /// Some of `Seals.required` are missing.
        case missingSeals(present: Seals, missing: Seals)
        /// The file is shorter than the length the message announced.
        case tooShort(size: Int, announced: Int)
        /// Less of the file is allocated than the message announced: its
        /// holes would be allocated, and charged to the receiver, as it
        /// reads them.
        case sparse(allocated: Int, announced: Int)
        /// The announced range has a hole at byte `offset` (the first
        /// `announced` bytes are what the receiver maps and reads; bytes
        /// written beyond them do not pay for it).
        case hole(offset: Int, announced: Int)
        /// A system call failed unexpectedly.
        case system(SystemCallError)

        public var description: String {
            switch self {
            case .notSealable: "large component: descriptor is not a sealable memfd"
            case .missingSeals(let present, let missing):
                "large component: memfd not sealed (seals \(present), missing \(missing))"
            case .tooShort(let size, let announced):
                "large component: memfd holds \(size) bytes, message announced \(announced)"
            case .sparse(let allocated, let announced):
                "large component: memfd has \(allocated) bytes allocated, message announced \(announced) (holes are refused)"
            case .hole(let offset, let announced):
                "large component: memfd has a hole at byte \(offset) of the \(announced) announced (holes are refused)"
            case .system(let e): "large component: \(e)"
            }
        }
    }

    /// Creates an empty memfd that allows sealing. The corresponding C function
    /// is `memfd_create` (`MFD_CLOEXEC | MFD_ALLOW_SEALING`, plus
    /// `MFD_NOEXEC_SEAL` on kernels that have it).
    package static func create(name: String = "portd") throws(SystemCallError) -> OwnedDescriptor {
        let base = PORT_MFD_CLOEXEC | PORT_MFD_ALLOW_SEALING
        let number: Int32
        do {
            // Since Linux 6.3 a memfd without MFD_EXEC/MFD_NOEXEC_SEAL logs a
            // warning (and vm.memfd_noexec=2 refuses it); older kernels reject
            // the flag with EINVAL, so fall back.
            number = try SystemCall.must("memfd_create") { port_memfd_create(name, base | PORT_MFD_NOEXEC_SEAL) }
        } catch where error.errno == .invalidArgument {
            number = try SystemCall.must("memfd_create") { port_memfd_create(name, base) }
        }
        return OwnedDescriptor(adopting: number)
    }

    /// Writes all of `bytes` at the current offset, looping over short writes.
    /// The corresponding C function is `write`.
    package static func write(_ fd: borrowing OwnedDescriptor, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        let fd = fd.rawValue
        var done = 0
        while done < bytes.count {
            guard let base = bytes.baseAddress else { return }
            let n = try SystemCall.must("write(memfd)") { Glibc.write(fd, base + done, bytes.count - done) }
            done += n
        }
    }

    /// Writes all of `bytes` at `offset`, looping over short writes (the
    /// file offset does not move). The corresponding C function is `pwrite`.
    package static func write(_ fd: borrowing OwnedDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int) throws(SystemCallError) {
        let fd = fd.rawValue
        var done = 0
        while done < bytes.count {
            guard let base = bytes.baseAddress else { return }
            let n = try SystemCall.must("pwrite(memfd)") { pwrite(fd, base + done, bytes.count - done, off_t(offset + done)) }
            done += n
        }
    }

    /// Sets the file's size to `size` bytes; growing it adds a hole. The
    /// corresponding C function is `ftruncate`.
    package static func resize(_ fd: borrowing OwnedDescriptor, to size: Int) throws(SystemCallError) {
        let fd = fd.rawValue
        _ = try SystemCall.must("ftruncate(memfd)") { ftruncate(fd, off_t(size)) }
    }

    /// Adds `seals`. The corresponding C function is `fcntl(F_ADD_SEALS)`.
    package static func addSeals(_ fd: borrowing OwnedDescriptor, _ seals: Seals) throws(SystemCallError) {
        let fd = fd.rawValue
        _ = try SystemCall.must("fcntl(F_ADD_SEALS)") { port_add_seals(fd, seals.rawValue) }
    }

    /// The seals on `fd`. The corresponding C function is `fcntl(F_GET_SEALS)`;
    /// it fails with EINVAL for files that do not support sealing.
    package static func seals(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Seals {
        let fd = fd.rawValue
        let r = try SystemCall.must("fcntl(F_GET_SEALS)") { port_get_seals(fd) }
        return Seals(rawValue: UInt32(bitPattern: r))
    }

    /// The file's size in bytes. The corresponding C function is `fstat`.
    package static func size(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Int {
        try sizes(fd).size
    }

    /// The bytes allocated to the file (`st_blocks` × 512). The
    /// corresponding C function is `fstat`.
    package static func allocatedBytes(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Int {
        try sizes(fd).allocated
    }

    /// The file's size and the bytes allocated to it (`st_blocks` × 512),
    /// in one `fstat`.
    private static func sizes(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> (size: Int, allocated: Int) {
        let fd = fd.rawValue
        var st = stat()
        _ = try SystemCall.must("fstat") { fstat(fd, &st) }
        return (Int(st.st_size), Int(st.st_blocks) * 512)
    }

    /// The offset of the first hole at or after `offset`, which must be
    /// below the file's size (the end of the file counts as a hole). The
    /// corresponding C function is `lseek(SEEK_HOLE)`.
    package static func nextHole(_ fd: borrowing OwnedDescriptor, from offset: Int) throws(SystemCallError) -> Int {
        let fd = fd.rawValue
        return Int(try SystemCall.must("lseek(SEEK_HOLE)") { lseek(fd, off_t(offset), PORT_SEEK_HOLE) })
    }

    /// A new memfd holding a copy of `bytes`, sealed with `Seals.all`,
    /// owned by the caller (closed again when a step fails).
    package static func makeSealed(
        _ bytes: UnsafeRawBufferPointer, name: String = "portd"
    ) throws(SystemCallError) -> OwnedDescriptor {
        let fd = try create(name: name)
        try write(fd, bytes)
        try addSeals(fd, .all)
        return fd
    }

    /// Checks that `fd` is a memfd sealed with at least `Seals.required`,
    /// holding at least `length` bytes, the first `length` of them all
    /// allocated. A receiver calls this before `mapReadOnly`; an unsealed
    /// memfd is refused, and so is one with a hole in that range (made long
    /// by ftruncate alone, or written only beyond it): reading a hole of
    /// shared memory allocates it, charged to the reader, so a sender could
    /// make a receiver hold memory the sender never paid for. The file's
    /// allocated total (`st_blocks`) is checked first, then the range
    /// itself (SEEK_HOLE from offset 0 must reach `length`): a file longer
    /// than announced may have as many blocks as the range needs, written
    /// past it. PortCore's senders write every byte.
    package static func checkSealed(_ fd: borrowing OwnedDescriptor, length: Int) throws(ValidationError) {
        let present: Seals
        do {
            present = try seals(fd)
        } catch where error.errno == .invalidArgument {
            throw .notSealable
        } catch {
            throw .system(error)
        }
        let missing = Seals.required.subtracting(present)
        if !missing.isEmpty { throw .missingSeals(present: present, missing: missing) }
        let actual: (size: Int, allocated: Int)
        do { actual = try sizes(fd) } catch { throw .system(error) }
        if actual.size < length { throw .tooShort(size: actual.size, announced: length) }
        if actual.allocated < length { throw .sparse(allocated: actual.allocated, announced: length) }
        guard length > 0 else { return }
        let hole: Int
        do { hole = try nextHole(fd, from: 0) } catch { throw .system(error) }
        if hole < length { throw .hole(offset: hole, announced: length) }
    }

    /// Maps the first `length` bytes of `fd` read-only and shared. `length`
    /// must be positive. Unmap with `unmap`. The corresponding C function is
    /// `mmap(PROT_READ, MAP_SHARED)`.
    package static func mapReadOnly(_ fd: borrowing OwnedDescriptor, length: Int) throws(SystemCallError) -> UnsafeRawBufferPointer {
        precondition(length > 0, "mmap of an empty range")
        let fd = fd.rawValue
        var p: UnsafeMutableRawPointer? = nil
        // mmap reports failure as MAP_FAILED, not -1: translate inside the
        // body so the chokepoint sees the errno of this very call.
        _ = try SystemCall.must("mmap") { () -> Int32 in
            p = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
            return p == MAP_FAILED ? -1 : 0
        }
        return UnsafeRawBufferPointer(start: p, count: length)
    }

    /// Unmaps a region returned by `mapReadOnly`. The corresponding C function is `munmap`.
    package static func unmap(_ region: UnsafeRawBufferPointer) {
        guard let base = region.baseAddress else { return }
        // munmap fails only for ranges PortCore never passes (EINVAL).
        let r = munmap(UnsafeMutableRawPointer(mutating: base), region.count)
        precondition(r == 0, "munmap of a region not mapped by MemFD.mapReadOnly")
    }
}
