// FileSystem+Contents: reading a small file whole and listing a directory,
// for configuration files (portd.conf and its drop-in directory).
//
// Invariants: "not there" (ENOENT) is a value (nil), as in FileSystem,
// because a missing configuration file means "use the defaults"; a file is
// read through one descriptor (open, fstat, read), so what is checked (a
// regular file, no larger than the caller's bound) is what is read; the
// descriptor is CLOEXEC and NONBLOCK (a FIFO in place of a file is refused,
// never waited on) and closed before returning. A directory listing
// leaves out "." and ".." and is in no particular order (callers sort).

import CPortSystem
import Glibc
import SystemPackage

extension FileSystem {
    /// The bytes of the regular file at `path` (symlinks are followed, as
    /// for any configuration file), or nil when nothing is there. Fails with
    /// EISDIR for a directory, EINVAL for anything else that is not a
    /// regular file and EFBIG when it holds more than `maximumBytes`. The
    /// corresponding C functions are `open`, `fstat` and `read`.
    package static func contents(ofFile path: String, maximumBytes: Int) throws(SystemCallError) -> [UInt8]? {
        let fd: Int32
        do {
            // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
            fd = try SystemCall.must("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) }
        } catch where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        defer { SystemCall.close(fd) }
        let status = try FileSystem.status(ofDescriptor: fd)
        switch status.kind {
        case .regular: break
        case .directory: throw SystemCallError(call: "read(\(path))", errno: .isDirectory)
        default: throw SystemCallError(call: "read(\(path))", errno: .invalidArgument)
        }
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let n = try SystemCall.must("read(\(path))") { read(fd, chunk.baseAddress, chunk.count) }
            if n == 0 { return bytes }
            if bytes.count + n > maximumBytes { throw SystemCallError(call: "read(\(path))", errno: .fileTooLarge) }
            bytes += chunk[..<n]
        }
    }
}
