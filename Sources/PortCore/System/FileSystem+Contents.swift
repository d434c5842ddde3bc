// FileSystem+Contents: reading a whole file, for a component given as
// `--file PATH`. The file is opened O_CLOEXEC and read to its end (its size
// from fstat is only a hint: a file may grow or shrink while read).

import CPortSystem
import Glibc

extension FileSystem {
    /// The bytes of the file at `path`. The corresponding C functions are
    /// `open(O_RDONLY | O_CLOEXEC)`, `fstat` and `read`.
    package static func contents(ofPath path: String) throws(SystemCallError) -> [UInt8] {
        let fd = try SystemCall.must("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC) }
        defer { SystemCall.close(fd) }
        var s = stat()
        _ = try SystemCall.must("fstat(\(path))") { fstat(fd, &s) }
        do {
            return try Descriptor.readAll(fd, sizeHint: s.st_mode & S_IFMT == S_IFREG ? Int(s.st_size) : 0)
        } catch {
            throw SystemCallError(call: "\(error.call)(\(path))", errno: error.errno)
        }
    }
}
