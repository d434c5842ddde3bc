// DaemonDirectory.prepare: portd creates its instance directory with the
// instance's mode and refuses one someone else could have planted.

import Glibc
import Testing
import PortCore
@testable import PortDaemon

@Suite struct DaemonDirectoryPrepareTests {
    @Test func prepareCreatesAndChecksARealFallbackDirectory() throws {
        var template = Array("/tmp/portd-paths-XXXXXX".utf8CString)
        let base = String(cString: mkdtemp(&template)!)
        defer {
            _ = try? FileSystem.remove("\(base)/link")
            rmdir("\(base)/private")
            rmdir("\(base)/open")
            rmdir(base)
        }
        let uid = CurrentProcess.userID
        let fresh = DaemonSocketLocation(path: "\(base)/private/portd.sock", origin: .userFallback)
        try DaemonDirectory.check(fresh, userID: uid)  // missing: fine for a client
        try DaemonDirectory.prepare(for: fresh, userID: uid)
        #expect(try FileSystem.status(ofPath: "\(base)/private")?.permissions == 0o700)
        try DaemonDirectory.prepare(for: fresh, userID: uid)  // again: exists and is fine

        mkdir("\(base)/open", 0o755)
        chmod("\(base)/open", 0o755)
        let open = DaemonSocketLocation(path: "\(base)/open/portd.sock", origin: .userFallback)
        #expect(throws: DaemonDirectoryError.self) { try DaemonDirectory.prepare(for: open, userID: uid) }
        #expect(throws: DaemonDirectoryError.self) { try DaemonDirectory.check(open, userID: uid) }

        symlink("\(base)/private", "\(base)/link")
        let link = DaemonSocketLocation(path: "\(base)/link/portd.sock", origin: .userFallback)
        #expect(throws: DaemonDirectoryError.self) { try DaemonDirectory.check(link, userID: uid) }
    }
}
