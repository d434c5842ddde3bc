// Descriptor: calls on any open descriptor, whatever it refers to (a pipe,
// a file, a standard stream, a socket handed to another program): duplicate
// it, read from it, write to it, switch its blocking mode. The socket-only
// calls are in UnixSocket and LocalSocket; closing is OwnedDescriptor's.
//
// Invariants: duplicates are CLOEXEC (a child gets only what it is given
// explicitly); reads and writes retry EINTR and report EAGAIN as a value;
// EPIPE is a value too (a reader that went away is an expected outcome for
// a command-line tool), never SIGPIPE's business. Access is `package`: the
// executables use it; it is not PortCore's public API.

import CPortSystem
import Glibc

package enum Descriptor {
    /// A CLOEXEC duplicate of `fd` numbered `minimum` or above, owned by
    /// the caller. The corresponding C function is `fcntl(F_DUPFD_CLOEXEC)`.
    package static func duplicate(
        _ fd: borrowing OwnedDescriptor, atLeast minimum: Int32 = 0
    ) throws(SystemCallError) -> OwnedDescriptor {
        let n = fd.rawValue
        return OwnedDescriptor(adopting: try SystemCall.must("fcntl(F_DUPFD_CLOEXEC)") { fcntl(n, F_DUPFD_CLOEXEC, minimum) })
    }

    /// A CLOEXEC duplicate of a descriptor number another library owns
    /// (a C library's socket), owned by the caller; the number itself is
    /// never closed here. The corresponding C function is
    /// `fcntl(F_DUPFD_CLOEXEC)`.
    package static func duplicate(foreign number: Int32) throws(SystemCallError) -> OwnedDescriptor {
        precondition(number >= 0, "Descriptor.duplicate(foreign: \(number)): not a descriptor")
        return OwnedDescriptor(adopting: try SystemCall.must("fcntl(F_DUPFD_CLOEXEC)") { fcntl(number, F_DUPFD_CLOEXEC, 0) })
    }

    /// Sets or clears O_NONBLOCK on the open file description of `fd`
    /// (shared by every duplicate, in every process). The corresponding C
    /// function is `fcntl(F_SETFL)`.
    package static func setNonBlocking(_ fd: borrowing OwnedDescriptor, _ nonBlocking: Bool) throws(SystemCallError) {
        let flags = try statusFlags(fd)
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags {
            let fd = fd.rawValue
            _ = try SystemCall.must("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, wanted) }
        }
    }

    /// Whether `fd` was opened with O_PATH: it names a file but opens
    /// nothing, and every call but a few (fstat, fcntl's F_GETFL and
    /// F_DUPFD, close) fails on it with EBADF, which SystemCall treats as
    /// PortCore's own bug. A peer can send one in a record, so received
    /// descriptors are asked this before anything else is done with them.
    package static func isPathOnly(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Bool {
        try statusFlags(fd) & PORT_O_PATH != 0
    }

    /// The open file description's status flags (access mode, O_NONBLOCK,
    /// O_PATH...). The corresponding C function is `fcntl(F_GETFL)`.
    private static func statusFlags(_ fd: borrowing OwnedDescriptor) throws(SystemCallError) -> Int32 {
        let fd = fd.rawValue
        return try SystemCall.must("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
    }

    /// The outcome of one read.
    package enum ReadOutcome: Equatable, Sendable {
        /// This many bytes were read (at least 1).
        case bytes(Int)
        /// End of file: the writer closed its end.
        case endOfFile
        /// Nothing to read now (a non-blocking descriptor).
        case wouldBlock
    }

    /// Reads at most `buffer.count` bytes. The corresponding C function is `read`.
    package static func read(_ fd: borrowing OwnedDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> ReadOutcome {
        let fd = fd.rawValue
        switch try SystemCall.run("read", { Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .done(0): return .endOfFile
        case .done(let n): return .bytes(n)
        case .wouldBlock: return .wouldBlock
        }
    }

    /// The outcome of one write.
    package enum WriteOutcome: Equatable, Sendable {
        /// This many bytes were written (at least 1 when any were given).
        case bytes(Int)
        /// No room now (a non-blocking descriptor).
        case wouldBlock
        /// The reading end is closed (EPIPE).
        case brokenPipe
    }

    /// Writes some of `bytes`. The corresponding C function is `write`
    /// (SIGPIPE must be ignored by the caller for EPIPE to arrive as a value).
    package static func write(_ fd: borrowing OwnedDescriptor, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> WriteOutcome {
        let fd = fd.rawValue
        do {
            switch try SystemCall.run("write", { Glibc.write(fd, bytes.baseAddress, bytes.count) }) {
            case .done(let n): return .bytes(n)
            case .wouldBlock: return .wouldBlock
            }
        } catch where error.errno == .brokenPipe {
            return .brokenPipe
        }
    }

    /// Writes all of `bytes` to a blocking descriptor (waiting for room on a
    /// non-blocking one). Returns false when the reader went away (EPIPE).
    package static func writeAll(_ fd: borrowing OwnedDescriptor, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> Bool {
        var rest = bytes
        while !rest.isEmpty {
            switch try write(fd, rest) {
            case .bytes(let n): rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            case .brokenPipe: return false
            case .wouldBlock: _ = try Poll.wait(fd, for: .writable, timeout: nil)
            }
        }
        return true
    }

    /// Writes all of `bytes`; see `writeAll(_:_:)` for a raw buffer.
    package static func writeAll(_ fd: borrowing OwnedDescriptor, _ bytes: [UInt8]) throws(SystemCallError) -> Bool {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(SystemCallError) in try writeAll(fd, raw) }
        }.get()
    }

    /// Reads `fd` to its end (waiting for data on a non-blocking one). More
    /// than `limit` bytes throw EFBIG as soon as the limit is passed, so an
    /// endless source (/dev/zero) costs at most `limit` bytes of memory.
    package static func readAll(
        _ fd: borrowing OwnedDescriptor, sizeHint: Int = 0, limit: Int = .max
    ) throws(SystemCallError) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(min(sizeHint, limit) + 1)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            switch try read(fd, into: chunk) {
            case .bytes(let n):
                if n > limit - result.count { throw SystemCallError(call: "read", errno: .fileTooLarge) }
                result.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<n]))
            case .endOfFile: return result
            case .wouldBlock: _ = try Poll.wait(fd, for: .readable, timeout: nil)
            }
        }
    }
}
