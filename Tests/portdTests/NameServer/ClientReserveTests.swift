// ClientReserveTests: the real portd as the system instance with
// MaxClients=16 and ClientsPerUID=16; another uid (setpriv) opens
// connections until it is refused with `limit` at 14 (an eighth of
// MaxClients=, 2, is kept for root and portd's own uid: portd.conf(5)),
// a third uid gets none while those are held, and root is still served.
// Before the reserve the first uid took all 16 and root was refused
// ("portd already serves 16 clients").

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct ClientReserveTests {
    /// Opens connections (the reference client, HELLO on each) until one
    /// is refused, prints how many it holds and the refusal, and holds
    /// them until it is stopped.
    static let holder = """
        import signal, sys
        sys.path.insert(0, sys.argv[2])
        import portd_client
        kept = []
        while len(kept) <= 1000:
            try:
                c = portd_client.Client(sys.argv[1])
                c.hello  # waits for the answer: the refusal if there is one
                kept.append(c)
            except portd_client.PortdError as e:
                print(len(kept), e.error, e.message, sep="\\t", flush=True)
                break
        else:
            print(len(kept), "never refused", sep="\\t", flush=True)
        signal.pause()
        """

    static func startHolder(uid: UInt32, socket: String) throws -> ChildProcess {
        try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: [
                "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", holder, socket,
                SourceTree.path("examples"),
            ],
            environment: ChildProcess.cleanEnvironment())
    }

    @Test func otherUIDsCannotTakeTheConnectionsKeptForRoot() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let dir = try TemporaryDirectory()
        try FileSystem.setPermissions(dir.path, 0o755)  // the other uids reach the socket
        let config = dir.appending("portd.conf")
        try "[Limits]\nMaxClients=16\nClientsPerUID=16\n".write(toFile: config, atomically: true, encoding: .utf8)
        let portd = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--system", "--config", config])

        let first = try Self.startHolder(uid: 65534, socket: portd.socketPath)
        try first.waitForStandardOutput(containing: "\n")
        let second = try Self.startHolder(uid: 65533, socket: portd.socketPath)
        try second.waitForStandardOutput(containing: "\n")

        // Root gets the reserve: a client of its own, and portctl.
        let root = try NameClient(socket: portd.socketPath)
        #expect(try root.request(MessageID.status).outcome == "ok")
        let status = try portd.portctl(["status"])
        #expect(status.status == 0, "\(status.standardError)")

        for holder in [first, second] {
            holder.signal(SIGTERM)
            _ = try holder.waitForExit()
        }
        let fields = first.standardOutput.split(separator: "\t").map(String.init)
        #expect(Array(fields.prefix(2)) == ["14", "limit"], "\(first.standardOutput)")
        #expect(fields.dropFirst(2).first?.contains("kept for those") == true, "\(first.standardOutput)")
        #expect(second.standardOutput.hasPrefix("0\tlimit\t"), "\(second.standardOutput)")
        #expect(try portd.stop() == 0)
    }
}
