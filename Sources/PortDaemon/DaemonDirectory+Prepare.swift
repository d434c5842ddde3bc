// DaemonDirectory+Prepare: portd creates its instance directory when it is
// missing, with the mode the instance's contract gives it (0700, or 0755 for
// the system instance), inside the user's private runtime directory when
// XDG_RUNTIME_DIR is unset (which must exist and pass the clients' check
// first; root's, `/run/user/0`, portd makes itself when it is missing, as
// only root may, so a root shell without a login session still gets its
// instance). Only the daemon creates these; clients only check
// (DaemonDirectory.check).

import PortCore
import PortSystem

extension DaemonDirectory {
    /// Makes sure the directory of `location` exists and, without
    /// XDG_RUNTIME_DIR, that the runtime directory holding it exists and is
    /// private (see DaemonDirectory.check). Does nothing for an explicit
    /// path.
    static func prepare(for location: DaemonSocketLocation, userID: UInt32) throws(DaemonDirectoryError) {
        guard let directory = location.directory else { return }
        if let runtime = location.runtimeDirectory {
            let status: FileStatus?
            do { status = try FileSystem.status(ofPath: runtime) } catch { throw .system(error) }
            if status == nil {
                guard userID == 0 else { throw .noRuntimeDirectory(path: runtime) }
                try makeRootRuntimeDirectory(runtime)
            }
            try check(location, userID: userID)
        }
        do {
            if try FileSystem.makeDirectory(directory, permissions: location.directoryPermissions) {
                // mkdir applies the umask; the mode is part of the contract.
                try FileSystem.setPermissions(directory, location.directoryPermissions)
            }
        } catch {
            throw .system(error)
        }
        try check(location, userID: userID)
    }

    /// Root's runtime directory (`/run/user/0`), mode 0700, and its parent
    /// (`/run/user`, mode 0755, as logind makes it) when missing.
    private static func makeRootRuntimeDirectory(_ runtime: String) throws(DaemonDirectoryError) {
        do {
            let parent = DaemonPaths.parent(of: runtime)
            if try FileSystem.makeDirectory(parent, permissions: 0o755) {
                try FileSystem.setPermissions(parent, 0o755)
            }
            if try FileSystem.makeDirectory(runtime, permissions: 0o700) {
                try FileSystem.setPermissions(runtime, 0o700)
            }
        } catch {
            throw .system(error)
        }
    }
}
