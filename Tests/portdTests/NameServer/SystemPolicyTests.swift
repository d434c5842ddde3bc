// SystemPolicyTests: the real portd as the system instance, with another
// uid (setpriv) registering: without DefaultRegister= a name no rule allows
// is denied to it, with a message naming the missing AllowRegister= rule,
// while root still registers; the shipped examples/portd-system.conf lets
// the uid it names register its name.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct SystemPolicyTests {
    /// REGISTER `name` as uid 65534 through `socket`; the reply's words, tab-separated.
    private func registerAsNobody(_ name: String, socket: String) throws -> [String] {
        let script = """
            import socket, struct, sys
            c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            c.connect(sys.argv[1])
            def send(msgid, *fields):
                data = [f.encode() for f in fields]
                c.send(b"port" + struct.pack("<BBHI", 1, 0x02, len(data), msgid)
                       + b"".join(struct.pack("<B3xI", 1, len(d)) for d in data) + b"".join(data))
            def receive():
                data, fds, _, _ = socket.recv_fds(c, 262144, 4)
                count = struct.unpack("<H", data[6:8])[0]
                off, words = 12 + 8 * count, []
                for i in range(count):
                    length = struct.unpack("<B3xI", data[12 + 8 * i:20 + 8 * i])[1]
                    kind = data[12 + 8 * i]
                    words.append(data[off:off + length].decode() if kind == 1 else "<port>"); off += length
                return dict(w.split("=", 1) for w in words if "=" in w)
            send(0xffff0009, "serial=1", "protocol=1.0")
            send(0xffff0002, "serial=2", "name=" + sys.argv[2])
            hello, reply = receive(), receive()
            print(reply.get("error") or reply.get("result"), reply.get("message", ""), sep="\\t")
            """
        let child = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, socket, name],
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
}
