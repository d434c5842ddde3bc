// DaemonPaths: where a portd instance's control socket lives, decided the
// same way by portd (to bind) and by every client (to connect).
//
// Order, first match wins (portd(8) FILES):
//   1. an explicit path (`--socket PATH`),
//   2. the PORTD_SOCKET environment variable, when set and not empty,
//   3. the system instance, `/run/portd/portd.sock`, when asked for (`--system`),
//   4. the per-user instance, `$XDG_RUNTIME_DIR/portd/portd.sock`,
//   5. the per-user instance without XDG_RUNTIME_DIR (unset, empty or not
//      absolute, as the XDG spec says to ignore), `/run/user/$UID/portd/portd.sock`,
//      in the runtime directory pam_systemd (logind) makes for the user at
//      login. Only root creates anything in `/run/user`, so no other uid can
//      occupy or redirect that path (a predictable name in world-writable
//      `/tmp` could be taken by anyone first); it must exist and be private:
//      owned by the user, mode 0700, not a symlink (checked by
//      DaemonDirectory, never trusted blindly). portd refuses to start
//      without it and says what to set, but for root, whose `/run/user/0`
//      it makes itself.
//
// This file is pure: it reads the environment through the closure it is
// given and touches no file, so tests pass a dictionary.

import PortWire

/// Which portd a program means when no path is given.
public enum DaemonInstance: String, Sendable, CaseIterable {
    /// The per-user instance (the default).
    case user
    /// The system instance.
    case system
}

/// A resolved control-socket location, with what portd must prepare around it.
public struct DaemonSocketLocation: Sendable, Equatable, CustomStringConvertible {
    /// How the path was chosen, for messages and for what may be created.
    public enum Origin: Sendable, Equatable {
        case option
        case environment
        case systemInstance
        case userRuntimeDirectory
        case userFallback
    }

    /// The socket's path.
    public let path: String
    public let origin: Origin

    package init(path: String, origin: Origin) {
        self.path = path
        self.origin = origin
    }

    /// The directory portd creates before binding; nil for an explicit
    /// path, whose directory is the caller's business.
    public var directory: String? {
        switch origin {
        case .option, .environment: nil
        case .systemInstance, .userRuntimeDirectory, .userFallback: DaemonPaths.parent(of: path)
        }
    }

    /// The mode a directory portd creates gets: the system instance's is
    /// searchable by everyone (clients of every uid connect), a user's is private.
    public var directoryPermissions: UInt32 { origin == .systemInstance ? 0o755 : 0o700 }

    /// `runtimeDirectory` must exist, be owned by the user and be closed to
    /// everyone else before anything in it is trusted or created.
    public var directoryMustBePrivate: Bool { origin == .userFallback }

    /// The user's private runtime directory that holds `directory`, for the
    /// fallback without XDG_RUNTIME_DIR (`/run/user/$UID`); nil otherwise.
    public var runtimeDirectory: String? {
        guard origin == .userFallback, let directory else { return nil }
        return DaemonPaths.parent(of: directory)
    }

    public var description: String { path }
}

public enum DaemonPaths {
    /// The system instance's socket.
    public static let systemSocket = "/run/portd/portd.sock"
    /// The environment variable that overrides the socket path.
    public static let socketVariable = "PORTD_SOCKET"
    /// The socket's file name inside an instance's directory.
    public static let socketName = "portd.sock"

    /// The user's runtime directory when XDG_RUNTIME_DIR is unset: the one
    /// pam_systemd makes at login, in root's `/run/user`.
    public static func runtimeDirectory(userID: UInt32) -> String { "/run/user/\(userID)" }

    /// The per-user instance's directory when XDG_RUNTIME_DIR is unset.
    public static func fallbackDirectory(userID: UInt32) -> String { "\(runtimeDirectory(userID: userID))/portd" }

    /// Resolves the control socket's location (see the order at the top of this file).
    /// - Parameters:
    ///   - explicitPath: `--socket PATH`, if given.
    ///   - instance: `--system`/`--user`, if given; nil means the user instance.
    ///   - userID: the real uid, for the fallback without XDG_RUNTIME_DIR.
    ///   - environment: reads one environment variable.
    public static func resolve(
        explicitPath: String?, instance: DaemonInstance?, userID: UInt32,
        environment: (String) -> String?
    ) -> DaemonSocketLocation {
        if let explicitPath, !explicitPath.isEmpty {
            return DaemonSocketLocation(path: explicitPath, origin: .option)
        }
        if let fromEnvironment = environment(socketVariable), !fromEnvironment.isEmpty {
            return DaemonSocketLocation(path: fromEnvironment, origin: .environment)
        }
        if instance == .system {
            return DaemonSocketLocation(path: systemSocket, origin: .systemInstance)
        }
        if let runtime = environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
            var base = Substring(runtime)
            while base.hasSuffix("/") { base = base.dropLast() }
            return DaemonSocketLocation(path: "\(base)/portd/\(socketName)", origin: .userRuntimeDirectory)
        }
        return DaemonSocketLocation(path: "\(fallbackDirectory(userID: userID))/\(socketName)", origin: .userFallback)
    }

    /// The directory part of `path` ("." for a bare name).
    package static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
