// DaemonDirectory+Prepare: portd creates its instance directory when it is
// missing, with the mode the instance's contract gives it (0700, or 0755 for
// the system instance), then checks it as every client does. Only the
// daemon creates it; clients only check (DaemonDirectory.check).

import PortCore
import PortSystem

extension DaemonDirectory {
    /// Makes sure the directory of `location` exists and, for the `/tmp`
    /// fallback, is private (see DaemonDirectory.check). Does nothing for an
    /// explicit path.
    static func prepare(for location: DaemonSocketLocation, userID: UInt32) throws(DaemonDirectoryError) {
        guard let directory = location.directory else { return }
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
}
