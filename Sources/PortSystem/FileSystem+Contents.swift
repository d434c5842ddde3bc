// FileSystem+Contents: reading a file whole: a small configuration file
// (portd.conf and its drop-ins; `contents(ofFile:maximumBytes:)`), or any
// file a user names on a command line (`portctl send --file PATH`,
// `contents(ofPath:limit:)`: bounded by the caller, and a FIFO such as `<(command)` is
// read to its end, waiting for its writer, as a user who names one expects).
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
        let file: OwnedDescriptor  // closed on return
        do {
            // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
            file = OwnedDescriptor(adopting: try SystemCall.must("open(\(path))") {
                open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            })
        } catch where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        let status = try FileSystem.status(ofDescriptor: file)
        let fd = file.rawValue
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

    /// The bytes of the file at `path`, whatever its kind (a FIFO is waited
    /// on); more than `limit` bytes throw EFBIG, before reading when the
    /// file says its size, as soon as the limit is passed otherwise. The file's size from fstat is only a hint: a file may
    /// grow or shrink while read. The corresponding C functions are
    /// `open(O_RDONLY | O_CLOEXEC)`, `fstat` and `read`.
    package static func contents(ofPath path: String, limit: Int = .max) throws(SystemCallError) -> [UInt8] {
        let file = OwnedDescriptor(adopting: try SystemCall.must("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) })
        let status = try FileSystem.status(ofDescriptor: file)
        if status.kind == .directory { throw SystemCallError(call: "read(\(path))", errno: .isDirectory) }
        var s = stat()
        let fd = file.rawValue
        _ = try SystemCall.must("fstat(\(path))") { fstat(fd, &s) }
        if status.kind == .regular && Int(s.st_size) > limit {
            throw SystemCallError(call: "read(\(path))", errno: .fileTooLarge)  // before reading a byte
        }
        do {
            return try Descriptor.readAll(file, sizeHint: status.kind == .regular ? Int(s.st_size) : 0, limit: limit)
        } catch {
            throw SystemCallError(call: "\(error.call)(\(path))", errno: error.errno)
        }
    }
}
