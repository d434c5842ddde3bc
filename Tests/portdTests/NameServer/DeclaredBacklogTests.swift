// DeclaredBacklogTests: one uid cannot fill a declared port's backlog
// through LOOKUP (issue 26, item 1, for a declared port whose service is
// not running). Each LOOKUP of a declared port is a connection portd makes
// into the port's backlog for the caller; before, uid 65534 making and
// keeping 4,097 of them filled it (SOMAXCONN), and root's LOOKUP was then
// refused `limit` (backlog full). Now a uid gets
// NameServer.declaredBacklogPerUID of them until the backlog is emptied,
// then `limit`, and root's LOOKUP still finds the port. Counted, not timed.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct DeclaredBacklogTests {
    @Test func oneUIDCannotFillADeclaredPortsBacklog() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let dir = try TemporaryDirectory()
        try FileSystem.setPermissions(dir.path, 0o755)  // the other uid reaches the socket
        let config = dir.appending("portd.conf")
        try "[Port]\nName=org.example.declared\n".write(toFile: config, atomically: true, encoding: .utf8)
        let portd = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--system", "--config", config],
            launcher: ["/usr/bin/prlimit", "--nofile=20000:20000"])
        // Looks the port up until refused (or SOMAXCONN + 1 times),
        // keeping every connection; prints how many it got and the refusal.
        let holder = try ChildProcess(
            executable: "/usr/bin/prlimit",
            arguments: [
                "--nofile=20000:20000", "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "/usr/bin/python3", "-c",
                """
                import signal, sys
                sys.path.insert(0, sys.argv[1])
                import portd_client as pc
                c = pc.Client(sys.argv[2])
                kept, refusal = [], "none"
                for _ in range(4097):
                    try:
                        kept.append(c.lookup("org.example.declared"))
                    except pc.PortdError as e:
                        refusal = e.error
                        break
                print("kept", len(kept), refusal, flush=True)
                signal.pause()
                """, SourceTree.path("examples"), portd.socketPath,
            ], environment: ChildProcess.cleanEnvironment())
        defer { holder.killAndReap() }
        // The whole line: its words may come in writes of their own
        // (an unbuffered python writes each as print makes it).
        try holder.waitForStandardOutput(containing: "\n")
        let root = try NameClient(socket: portd.socketPath)
        let found = try root.lookUp("org.example.declared")
        holder.killAndReap()
        let words = holder.standardOutput.split(whereSeparator: \.isWhitespace).map(String.init)
        #expect(words == ["kept", "\(NameServer.declaredBacklogPerUID)", "limit"], "\(holder.standardOutput)")
        #expect(found.outcome == "ok", "root's LOOKUP: \(found.words)")
        #expect(try portd.stop() == 0)
    }
}
