// DaemonDirectory.prepare: portd creates its instance directory with the
// instance's mode, inside the user's runtime directory when XDG_RUNTIME_DIR
// is unset, which must exist and be private (a missing one is refused with
// what to set; one someone else could have planted is refused too).

import Glibc
import Testing
import PortCore
@testable import PortDaemon

@Suite struct DaemonDirectoryPrepareTests {
    @Test func prepareNeedsAPrivateRuntimeDirectoryAndCreatesTheInstanceDirectoryInIt() throws {
        var template = Array("/tmp/portd-paths-XXXXXX".utf8CString)
        let base = String(cString: mkdtemp(&template)!)
        defer {
            _ = try? FileSystem.remove("\(base)/link")
            rmdir("\(base)/private/portd")
            rmdir("\(base)/private")
            rmdir("\(base)/open")
            rmdir(base)
        }
        let uid = CurrentProcess.userID
        let missing = DaemonSocketLocation(path: "\(base)/missing/portd/portd.sock", origin: .userFallback)
        try DaemonDirectory.check(missing, userID: uid)  // missing: no daemon, fine for a client
        #expect(throws: DaemonDirectoryError.noRuntimeDirectory(path: "\(base)/missing")) {
            try DaemonDirectory.prepare(for: missing, userID: 1000)  // only root's is made
        }
        #expect(!exists("\(base)/missing"))
        #expect(DaemonDirectoryError.noRuntimeDirectory(path: "/run/user/7").description.contains("set XDG_RUNTIME_DIR"))

        #expect(mkdir("\(base)/private", 0o700) == 0)
        let fresh = DaemonSocketLocation(path: "\(base)/private/portd/portd.sock", origin: .userFallback)
        try DaemonDirectory.prepare(for: fresh, userID: uid)
        #expect(try FileSystem.status(ofPath: "\(base)/private/portd")?.permissions == 0o700)
        try DaemonDirectory.prepare(for: fresh, userID: uid)  // again: exists and is fine

        mkdir("\(base)/open", 0o755)
        chmod("\(base)/open", 0o755)
        let open = DaemonSocketLocation(path: "\(base)/open/portd/portd.sock", origin: .userFallback)
        #expect(throws: DaemonDirectoryError.self) { try DaemonDirectory.prepare(for: open, userID: uid) }
        #expect(throws: DaemonDirectoryError.self) { try DaemonDirectory.check(open, userID: uid) }
        #expect(!exists("\(base)/open/portd"), "nothing is made in a directory that is not private")

        // Root's runtime directory is made when missing, its parent too.
        if uid == 0 {
            let root = DaemonSocketLocation(path: "\(base)/user/0/portd/portd.sock", origin: .userFallback)
            try DaemonDirectory.prepare(for: root, userID: 0)
            #expect(try FileSystem.status(ofPath: "\(base)/user")?.permissions == 0o755)
            #expect(try FileSystem.status(ofPath: "\(base)/user/0")?.permissions == 0o700)
            #expect(try FileSystem.status(ofPath: "\(base)/user/0/portd")?.permissions == 0o700)
            for made in ["user/0/portd", "user/0", "user"] { rmdir("\(base)/\(made)") }
        }

        symlink("\(base)/private", "\(base)/link")
        let link = DaemonSocketLocation(path: "\(base)/link/portd/portd.sock", origin: .userFallback)
        #expect(throws: DaemonDirectoryError.self) { try DaemonDirectory.check(link, userID: uid) }
        #expect(throws: DaemonDirectoryError.self) { try DaemonDirectory.prepare(for: link, userID: uid) }
    }

    private func exists(_ path: String) -> Bool { (try? FileSystem.status(ofPath: path)) != nil }
}
