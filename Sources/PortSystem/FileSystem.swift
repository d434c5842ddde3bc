// FileSystem: the few path operations the daemon's socket and runtime
// directories need (lstat, fstat, mkdir, unlink, rmdir, chmod, readdir, flock), each
// wrapped once.
//
// Invariants: paths are never followed through a final symlink (lstat), so
// a check of "is this our private directory / our socket" looks at the
// entry itself; "not there" (ENOENT) is a value, not an error, because every
// caller has a plain answer for it. Access is `package`: portd, portctl and
// tests use it; it is not PortCore's public API.

import CPortSystem
import Glibc
import SystemPackage

/// What `lstat`/`fstat` say about one filesystem entry.
package struct FileStatus: Sendable, Equatable {
    package enum Kind: Sendable, Equatable { case directory, socket, symbolicLink, regular, other }

    package let kind: Kind
    /// Permission bits only (`st_mode & 0o7777`).
    package let permissions: UInt32
    package let ownerID: UInt32
    package let device: UInt64
    package let inode: UInt64

    package init(_ s: stat) {
        switch s.st_mode & S_IFMT {
        case S_IFDIR: kind = .directory
        case S_IFSOCK: kind = .socket
        case S_IFLNK: kind = .symbolicLink
        case S_IFREG: kind = .regular
        default: kind = .other
        }
        permissions = UInt32(s.st_mode & 0o7777)
        ownerID = s.st_uid
        device = UInt64(s.st_dev)
        inode = UInt64(s.st_ino)
    }

    /// Same device and inode: the same entry, not a replacement at the same path.
    package func isSameEntry(as other: FileStatus) -> Bool {
        device == other.device && inode == other.inode
    }
}

package enum FileSystem {
    /// The entry at `path` itself (a final symlink is not followed), or nil
    /// when nothing is there. The corresponding C function is `lstat`.
    package static func status(ofPath path: String) throws(SystemCallError) -> FileStatus? {
        var s = stat()
        do {
            _ = try SystemCall.must("lstat(\(path))") { lstat(path, &s) }
        } catch where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        return FileStatus(s)
    }

    /// The corresponding C function is `fstat`.
    package static func status(ofDescriptor fd: borrowing OwnedDescriptor) throws(SystemCallError) -> FileStatus {
        let fd = fd.rawValue
        var s = stat()
        _ = try SystemCall.must("fstat") { fstat(fd, &s) }
        return FileStatus(s)
    }

    /// Creates a directory with `permissions` (less the umask); false when
    /// something already exists at `path` (the caller checks what). The
    /// corresponding C function is `mkdir`.
    @discardableResult
    package static func makeDirectory(_ path: String, permissions: UInt32) throws(SystemCallError) -> Bool {
        do {
            _ = try SystemCall.must("mkdir(\(path))") { mkdir(path, mode_t(permissions)) }
            return true
        } catch where error.errno == .fileExists {
            return false
        }
    }

    /// Removes a non-directory entry; false when it was not there. The
    /// corresponding C function is `unlink`.
    @discardableResult
    package static func remove(_ path: String) throws(SystemCallError) -> Bool {
        do {
            _ = try SystemCall.must("unlink(\(path))") { unlink(path) }
            return true
        } catch where error.errno == .noSuchFileOrDirectory {
            return false
        }
    }

    /// Removes an empty directory; false when it was not there or is not
    /// empty. The corresponding C function is `rmdir`.
    @discardableResult
    package static func removeDirectory(_ path: String) throws(SystemCallError) -> Bool {
        do {
            _ = try SystemCall.must("rmdir(\(path))") { rmdir(path) }
            return true
        } catch where error.errno == .noSuchFileOrDirectory || error.errno == .directoryNotEmpty {
            return false
        }
    }

    /// The corresponding C function is `chmod`.
    package static func setPermissions(_ path: String, _ permissions: UInt32) throws(SystemCallError) {
        _ = try SystemCall.must("chmod(\(path))") { chmod(path, mode_t(permissions)) }
    }

    /// Whether the calling process may execute the regular file at `path`
    /// (symlinks followed, as exec does). The corresponding C functions are
    /// `access(X_OK)` and `stat`.
    package static func isExecutableFile(_ path: String) -> Bool {
        var s = stat()
        guard stat(path, &s) == 0, s.st_mode & S_IFMT == S_IFREG else { return false }
        return access(path, X_OK) == 0
    }

    /// Where exec would find `command`: itself when it has a slash, else
    /// the first executable file of that name in `searchPath` (PATH's
    /// syntax; an empty entry is the current directory). Nil when nowhere.
    package static func executablePath(of command: String, searchPath: String?) -> String? {
        if command.contains("/") { return isExecutableFile(command) ? command : nil }
        let entries = (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        for entry in entries {
            let candidate = entry.isEmpty ? command : "\(entry)/\(command)"
            if isExecutableFile(candidate) { return candidate }
        }
        return nil
    }

    /// Opens directory `path` (a final symlink is not followed) and takes
    /// an exclusive advisory lock on it without waiting: the returned
    /// descriptor holds the lock until it closes, and the kernel lets go of
    /// it when its holder dies, however it dies. Nil when another open file
    /// holds the lock. The corresponding C functions are
    /// `open(O_DIRECTORY | O_NOFOLLOW)` and `flock(LOCK_EX | LOCK_NB)`.
    package static func lockDirectory(_ path: String) throws(SystemCallError) -> OwnedDescriptor? {
        let directory = OwnedDescriptor(adopting: try SystemCall.must("open(\(path), O_DIRECTORY)") {
            open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        })
        switch try SystemCall.run("flock(\(path), LOCK_EX)", { flock(directory.rawValue, LOCK_EX | LOCK_NB) }) {
        case .done: return directory
        case .wouldBlock: return nil  // `directory` closes here
        }
    }

    /// The names of the entries of directory `path`, without "." and "..",
    /// in no particular order, or nil when nothing is there. A final
    /// symlink is not followed (ELOOP). The corresponding C functions are
    /// `open(O_DIRECTORY | O_NOFOLLOW)`, `fdopendir`, `readdir` and `closedir`.
    package static func entries(ofDirectory path: String) throws(SystemCallError) -> [String]? {
        let directory: OwnedDescriptor
        do {
            directory = OwnedDescriptor(adopting: try SystemCall.must("open(\(path), O_DIRECTORY)") {
                open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            })
        } catch where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        guard let stream = fdopendir(directory.rawValue) else {
            throw SystemCallError(call: "fdopendir(\(path))", errno: Errno(rawValue: port_errno()))
        }
        _ = directory.take()  // the stream owns it now
        defer { closedir(stream) }  // closes the descriptor too
        var names: [String] = []
        // readdir returns NULL at the end; its only errors (EBADF) cannot
        // happen on a stream opened here.
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
