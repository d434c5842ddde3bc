// UserRuntimeDirectoryTests: without XDG_RUNTIME_DIR the per-user instance
// lives in /run/user/$UID/portd (portd(8), FILES), which no other uid can
// occupy or redirect. Another uid (setpriv, 65534) plants what used to
// deny the victim, /tmp/portd-$VICTIM as a 0777 directory, a symbolic link
// or a file; the victim's portd (setpriv, a uid of the test's own, with
// the runtime directory logind would have made) still starts, and the
// victim's portctl reaches it. Both used to refuse (portd 1, portctl 77),
// telling the victim to remove what it could not remove from sticky /tmp.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct UserRuntimeDirectoryTests {
    enum Planted: String, CaseIterable {
        case openDirectory, symbolicLink, file
    }

    /// Runs `command` as `uid` (and gid `uid`, no groups) to completion.
    private func run(as uid: UInt32, _ command: [String], environment: [String: String] = [:]) throws -> CommandResult {
        let child = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] + command,
            environment: ChildProcess.cleanEnvironment(environment))
        let status = try child.waitForExit()
        return CommandResult(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }

    @Test(arguments: Planted.allCases)
    func anotherUserCannotDenyThePerUserInstance(_ planted: Planted) throws {
        try #require(getuid() == 0, "this test changes uids with setpriv and makes /run/user/$UID: run as root")
        let k = UInt32(Planted.allCases.firstIndex(of: planted)!)
        let victim = 3_100_000_000 + k * 5_000_000 + UInt32(getpid())
        let attacker: UInt32 = 65534
        let old = "/tmp/portd-\(victim)"
        let runtime = "/run/user/\(victim)"
        try? FileManager.default.removeItem(atPath: old)
        try? FileManager.default.removeItem(atPath: runtime)
        defer {
            try? FileManager.default.removeItem(atPath: old)
            try? FileManager.default.removeItem(atPath: runtime)
        }

        // The attacker plants the old path first.
        let plant: [String] =
            switch planted {
            case .openDirectory: ["/bin/mkdir", "-m", "777", old]
            case .symbolicLink: ["/bin/ln", "-s", "/tmp", old]
            case .file: ["/usr/bin/touch", old]
            }
        let planting = try run(as: attacker, plant)
        try #require(planting.status == 0, "\(planting.standardError)")

        // What pam_systemd makes at the victim's login.
        _ = mkdir("/run/user", 0o755)
        try #require(mkdir(runtime, 0o700) == 0 && chown(runtime, victim, victim) == 0 && chmod(runtime, 0o700) == 0)

        let notify = try NotifySocket()
        let environment = ["HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent"]
        let portd = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=\(victim)", "--regid=\(victim)", "--clear-groups", try Binaries.portd],
            environment: ChildProcess.cleanEnvironment(environment.merging(["NOTIFY_SOCKET": notify.address]) { a, _ in a }))
        defer { if portd.isRunning { portd.killAndReap() } }
        let ready = try notify.waitFor("READY=1", from: portd)
        #expect(ready.contains("STATUS=Serving \(runtime)/portd/portd.sock"), "\(ready)")

        let status = try run(as: victim, [try Binaries.portctl, "status"], environment: environment)
        #expect(status.status == 0, "\(status.standardError)")
        let other = try run(as: attacker, [try Binaries.portctl, "status", "--socket", "\(runtime)/portd/portd.sock"])
        #expect(other.status == 77, "the attacker cannot even reach it: \(other.standardError)")

        portd.signal(SIGTERM)
        #expect(try portd.waitForExit() == 0, "\(portd.standardError)")
        #expect(!exists("\(runtime)/portd/portd.sock"))
        let left = try FileSystem.status(ofPath: old)
        #expect(left?.ownerID == attacker, "what the attacker planted is left alone")
    }

    /// No runtime directory and no XDG_RUNTIME_DIR: portd refuses to start
    /// and says what to set; portctl finds no daemon there.
    @Test func withoutARuntimeDirectoryPortdSaysWhatToSet() throws {
        try #require(getuid() == 0, "this test changes uids with setpriv: run as root")
        let user = 3_100_000_000 + 3 * 5_000_000 + UInt32(getpid())
        let runtime = "/run/user/\(user)"
        try? FileManager.default.removeItem(atPath: runtime)
        defer { try? FileManager.default.removeItem(atPath: "/tmp/portd-\(user)") }  // what an old portd made
        let environment = ["HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent"]
        let portd = try run(as: user, [try Binaries.portd], environment: environment)
        #expect(portd.status == 1)
        #expect(portd.standardError.contains(
            "XDG_RUNTIME_DIR is not set and there is no \(runtime) (pam_systemd makes it at login); set XDG_RUNTIME_DIR to a directory of yours with mode 700, or give the socket's path (--socket, PORTD_SOCKET)"),
            "\(portd.standardError)")
        let status = try run(as: user, [try Binaries.portctl, "status"], environment: environment)
        #expect(status.status == 69, "\(status.standardError)")
        #expect(status.standardError.contains("portd is not running at \(runtime)/portd/portd.sock"), "\(status.standardError)")
    }
}
