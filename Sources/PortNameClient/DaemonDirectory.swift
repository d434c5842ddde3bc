// DaemonDirectory: the directory that holds an instance's control socket:
// portd creates it when missing (portd's DaemonDirectory+Prepare), and
// anyone about to trust a socket in it checks it first (`check`).
//
// Invariants: only the directories DaemonPaths names are created, one level
// deep (the parent, `/run`, `$XDG_RUNTIME_DIR` or `/run/user/$UID`, must
// exist); an explicit `--socket`/PORTD_SOCKET path's directory is never
// created or judged. Without XDG_RUNTIME_DIR, the runtime directory
// `/run/user/$UID` is trusted only when it is a real directory (not a
// symlink), owned by the user, with no permission for group or others;
// anything else is refused, never repaired. Its absence is no daemon for
// a client, and for portd a refusal that says what to set.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

/// Why an instance directory cannot be used.
public enum DaemonDirectoryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The private directory exists but someone else could have planted or changed it.
    case notPrivate(path: String, reason: String)
    /// XDG_RUNTIME_DIR is not set and the user has no runtime directory at `path`.
    case noRuntimeDirectory(path: String)
    /// Creating or examining it failed.
    case system(SystemCallError)

    public var description: String {
        switch self {
        case .notPrivate(let path, let reason):
            "\(path) is not a private directory (\(reason)); \(Self.whatToSet)"
        case .noRuntimeDirectory(let path):
            "XDG_RUNTIME_DIR is not set and there is no \(path) (pam_systemd makes it at login); \(Self.whatToSet)"
        case .system(let error):
            error.description
        }
    }

    private static let whatToSet =
        "set XDG_RUNTIME_DIR to a directory of yours with mode 700, or give the socket's path (--socket, PORTD_SOCKET)"
}

public enum DaemonDirectory {
    /// Checks the runtime directory of `location` before a client trusts a
    /// socket in it. A missing directory is fine (there is simply no daemon).
    public static func check(_ location: DaemonSocketLocation, userID: UInt32) throws(DaemonDirectoryError) {
        guard location.directoryMustBePrivate, let directory = location.runtimeDirectory else { return }
        let status: FileStatus?
        do {
            status = try FileSystem.status(ofPath: directory)
        } catch {
            throw .system(error)
        }
        guard let status else { return }
        if let reason = problem(with: status, userID: userID) {
            throw .notPrivate(path: directory, reason: reason)
        }
    }

    /// What is wrong with a would-be private directory, or nil. Pure, for tests.
    package static func problem(with status: FileStatus, userID: UInt32) -> String? {
        if status.kind != .directory {
            return status.kind == .symbolicLink ? "it is a symbolic link" : "it is not a directory"
        }
        if status.ownerID != userID { return "owned by uid \(status.ownerID), not \(userID)" }
        if status.permissions & 0o077 != 0 {
            return "mode \(String(status.permissions, radix: 8)) lets others in; it must be 700"
        }
        return nil
    }
}
