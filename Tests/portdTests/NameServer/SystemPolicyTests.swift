// SystemPolicyTests: the real portd as the system instance, with another
// uid (setpriv) registering: without DefaultRegister= a name no rule allows
// is denied to it, with a message naming the missing AllowRegister= rule,
// while root still registers; the shipped examples/portd-system.conf lets
// the uid it names register its name, and the shipped
// examples/portd-bridge-policy.conf lets the bridge's user register exactly
// the names it imports, and nobody else.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct SystemPolicyTests {
    /// REGISTER `name` as uid 65534 through `socket`; the reply's words, tab-separated.
    private func registerAsNobody(_ name: String, socket: String) throws -> [String] {
        // examples/portd_client.py, the reference client, speaks the protocol.
        let script = """
            import sys
            sys.path.insert(0, sys.argv[3])
            import portd_client
            try:
                result = portd_client.Client(sys.argv[1]).register(sys.argv[2]).result
                print(result, "", sep="\\t")
            except portd_client.PortdError as e:
                print(e.error, e.message, sep="\\t")
            """
        let child = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, socket, name,
                SourceTree.path("examples"),
            ],
            environment: ChildProcess.cleanEnvironment())
        #expect(try child.waitForExit() == 0, "\(child.standardError)")
        return child.standardOutput.trimmingCharacters(in: .newlines).split(separator: "\t").map(String.init)
    }

    @Test func theSystemInstanceDeniesRegistrationUnlessThePolicyAllowsIt() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let dir = try TemporaryDirectory()
        try FileSystem.setPermissions(dir.path, 0o755)
        let empty = dir.appending("empty.conf")
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        let portd = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--system", "--config", empty])
        let words = try registerAsNobody("org.example.spooler", socket: portd.socketPath)
        #expect(words.first == "denied", "\(words)")
        #expect(words.dropFirst().first?.contains("AllowRegister=") == true, "\(words)")
        let root = try NameClient(socket: portd.socketPath)
        #expect(try root.register("org.example.spooler").outcome == "registered")
        #expect(try portd.stop() == 0)
    }

    @Test func theShippedExamplePolicyLetsTheUIDItNamesRegister() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let dir = try TemporaryDirectory()
        try FileSystem.setPermissions(dir.path, 0o755)
        // The example names the user lp; this test's other uid is nobody.
        let example = try String(contentsOfFile: SourceTree.path("examples/portd-system.conf"), encoding: .utf8)
        #expect(example.contains("AllowRegister=org.example.spooler user:lp"))
        let config = dir.appending("portd.conf")
        try example.replacingOccurrences(of: "user:lp", with: "user:65534").write(
            toFile: config, atomically: true, encoding: .utf8)
        let portd = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--system", "--config", config])
        #expect(try registerAsNobody("org.example.spooler", socket: portd.socketPath).first == "registered")
        #expect(try registerAsNobody("org.example.other", socket: portd.socketPath).first == "denied")
        #expect(try registerAsNobody("com.example.squat", socket: portd.socketPath).first == "denied")
        #expect(try portd.stop() == 0)
    }

    @Test func theShippedBridgePolicyLetsTheBridgeUserRegisterExactlyTheImportedNames() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let dir = try TemporaryDirectory()
        try FileSystem.setPermissions(dir.path, 0o755)
        // examples/portd-bridge-policy.conf as the drop-in it is meant to
        // be, beside an empty main file; the user portd-bridge is nobody here.
        let example = try String(contentsOfFile: SourceTree.path("examples/portd-bridge-policy.conf"), encoding: .utf8)
        #expect(example.contains("AllowRegister=org.example.remote.* user:portd-bridge"))
        let config = dir.appending("portd.conf")
        try "".write(toFile: config, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: config + ".d", withIntermediateDirectories: false)
        try example.replacingOccurrences(of: "user:portd-bridge", with: "user:65534").write(
            toFile: config + ".d/50-portd-bridge.conf", atomically: true, encoding: .utf8)
        let portd = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--system", "--config", config])
        // The bridge's user registers an imported name, and nothing else.
        #expect(try registerAsNobody("org.example.remote.echo", socket: portd.socketPath).first == "registered")
        #expect(try registerAsNobody("org.example.local", socket: portd.socketPath).first == "denied")
        // Nobody else takes an imported name, root included.
        let root = try NameClient(socket: portd.socketPath)
        #expect(try root.register("org.example.remote.other").outcome == "denied")
        #expect(try root.register("org.example.local").outcome == "registered")
        #expect(try portd.stop() == 0)
    }
}
