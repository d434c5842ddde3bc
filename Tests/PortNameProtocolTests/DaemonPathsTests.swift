// DaemonPathsTests: the socket-path order (option, PORTD_SOCKET, --system,
// XDG_RUNTIME_DIR, /run/user/$UID fallback) and the checks of the private
// runtime directory.

import Glibc
import Testing

import PortNameClient
import PortSystem
@testable import PortNameProtocol

@Suite struct DaemonPathsTests {
    private func resolve(
        _ explicit: String? = nil, _ instance: DaemonInstance? = nil, _ environment: [String: String] = [:]
    ) -> DaemonSocketLocation {
        DaemonPaths.resolve(explicitPath: explicit, instance: instance, userID: 1000) { environment[$0] }
    }

    @Test func orderOfPrecedence() {
        let all = ["PORTD_SOCKET": "/env/s", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(resolve("/opt/s", .system, all) == DaemonSocketLocation(path: "/opt/s", origin: .option))
        #expect(resolve(nil, .system, all) == DaemonSocketLocation(path: "/env/s", origin: .environment))
        #expect(resolve(nil, .system, ["XDG_RUNTIME_DIR": "/run/user/1000"]).path == "/run/portd/portd.sock")
        #expect(resolve(nil, .user, ["XDG_RUNTIME_DIR": "/run/user/1000"]).path == "/run/user/1000/portd/portd.sock")
        #expect(resolve(nil, nil, ["XDG_RUNTIME_DIR": "/run/user/1000/"]).path == "/run/user/1000/portd/portd.sock")
        #expect(resolve() == DaemonSocketLocation(path: "/run/user/1000/portd/portd.sock", origin: .userFallback))
    }

    @Test func emptyOrRelativeValuesAreIgnored() {
        #expect(resolve("", nil, ["PORTD_SOCKET": ""]).origin == .userFallback)
        #expect(resolve(nil, nil, ["XDG_RUNTIME_DIR": "relative/dir"]).origin == .userFallback)
        #expect(resolve(nil, nil, ["XDG_RUNTIME_DIR": ""]).origin == .userFallback)
    }

    @Test func directoriesToPrepare() {
        #expect(resolve("/opt/s").directory == nil)
        #expect(resolve(nil, nil, ["PORTD_SOCKET": "/env/s"]).directory == nil)
        let system = resolve(nil, .system)
        #expect(system.directory == "/run/portd")
        #expect(system.directoryPermissions == 0o755)
        #expect(!system.directoryMustBePrivate)
        let fallback = resolve()
        #expect(fallback.directory == "/run/user/1000/portd")
        #expect(fallback.runtimeDirectory == "/run/user/1000")
        #expect(fallback.directoryPermissions == 0o700)
        #expect(fallback.directoryMustBePrivate)
        #expect(resolve(nil, nil, ["XDG_RUNTIME_DIR": "/run/user/1000"]).runtimeDirectory == nil)
        #expect(system.runtimeDirectory == nil)
        #expect(DaemonPaths.parent(of: "portd.sock") == ".")
        #expect(DaemonPaths.parent(of: "/portd.sock") == "/")
    }

    @Test func privateDirectoryRules() {
        func status(_ kind: FileStatus.Kind, owner: UInt32, mode: UInt32) -> FileStatus {
            var s = stat()
            s.st_mode = (kind == .directory ? S_IFDIR : kind == .symbolicLink ? S_IFLNK : S_IFREG) | mode_t(mode)
            s.st_uid = owner
            return FileStatus(s)
        }
        #expect(DaemonDirectory.problem(with: status(.directory, owner: 1000, mode: 0o700), userID: 1000) == nil)
        #expect(DaemonDirectory.problem(with: status(.directory, owner: 0, mode: 0o700), userID: 1000) != nil)
        #expect(DaemonDirectory.problem(with: status(.directory, owner: 1000, mode: 0o750), userID: 1000) != nil)
        #expect(DaemonDirectory.problem(with: status(.directory, owner: 1000, mode: 0o701), userID: 1000) != nil)
        #expect(DaemonDirectory.problem(with: status(.symbolicLink, owner: 1000, mode: 0o777), userID: 1000) != nil)
        #expect(DaemonDirectory.problem(with: status(.regular, owner: 1000, mode: 0o600), userID: 1000) != nil)
    }

}
