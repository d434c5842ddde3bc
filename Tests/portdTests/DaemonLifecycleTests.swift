// DaemonLifecycleTests: the real portd and portctl binaries: start, READY=1,
// `portctl status`, SIGTERM/SIGINT, exit 0, socket gone; a second portd
// refuses a live socket; a stale socket file is replaced; a non-socket file
// is left alone; `portctl status` without a daemon; --help and --version.
// Each test has its own temporary directory and notify socket, so they run
// in parallel.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct DaemonLifecycleTests {
    @Test func startsServesAndStopsOnSIGTERM() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let daemon = try DaemonProcess.started(socket: socket)
        #expect(exists(socket))

        let status = try runPortctl(["status", "--socket", socket])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(textField(status.standardOutput, "pid") == "\(daemon.pid)")
        #expect(textField(status.standardOutput, "version") == PortdVersion.current)
        #expect(textField(status.standardOutput, "uptime")?.hasSuffix("s") == true)

        #expect(try daemon.stop(with: SIGTERM) == 0)
        #expect(!exists(socket), "portd must remove its socket on SIGTERM")
        try daemon.notify.waitFor("STOPPING=1")
        #expect(daemon.child.standardError.contains("received SIGTERM"))
    }

    @Test func theSystemInstanceOpensItsSocketToEveryoneAtAnExplicitPathToo() throws {
        let daemon = try DaemonProcess.started(arguments: ["--system"])
        let status = try #require(try FileSystem.status(ofPath: daemon.socketPath))
        #expect(status.permissions == 0o666, "mode \(String(status.permissions, radix: 8))")
        #expect(try daemon.stop() == 0)
    }

    @Test func stopsOnSIGINT() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let daemon = try DaemonProcess.started(socket: socket)
        #expect(try daemon.stop(with: SIGINT) == 0)
        #expect(!exists(socket))
    }

    @Test func readyComesOnlyOnceTheSocketListens() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let daemon = try DaemonProcess(socket: socket)
        let ready = try daemon.notify.waitFor("READY=1", from: daemon.child)
        #expect(ready.contains("STATUS=Serving \(socket)"))
        // No retry, no sleep: the first connection after READY=1 must be served.
        let status = try runPortctl(["status", "--socket", socket])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(try daemon.stop() == 0)
    }

    @Test func jsonStatus() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let daemon = try DaemonProcess.started(socket: socket)
        let result = try runPortctl(["status", "--json"], environment: ["PORTD_SOCKET": socket])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        #expect(object?["socket"] as? String == socket)
        #expect(object?["version"] as? String == PortdVersion.current)
        #expect((object?["pid"] as? NSNumber)?.int32Value == daemon.pid)
        #expect((object?["uptime_ms"] as? NSNumber) != nil)
        #expect(try daemon.stop() == 0)
    }

    @Test func secondDaemonRefusesALiveSocket() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let first = try DaemonProcess.started(socket: socket)

        let second = try runPortd(["--socket", socket])
        #expect(second.status == 1)
        #expect(second.standardError.contains("portd is already running at \(socket) (pid \(first.pid))"))

        // The first one still owns and serves its socket.
        let status = try runPortctl(["status", "--socket", socket])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(textField(status.standardOutput, "pid") == "\(first.pid)")
        #expect(try first.stop() == 0)
        #expect(!exists(socket))
    }

    @Test func staleSocketFileIsReplaced() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        // What a crashed daemon leaves: a bound socket file nobody listens on.
        let fd = try LocalSocket.make(.seqPacket)
        try LocalSocket.bind(fd, path: socket)
        fd.close()
        #expect(exists(socket))
        #expect(try runPortctl(["status", "--socket", socket]).status == 69)

        let daemon = try DaemonProcess.started(socket: socket)
        let status = try runPortctl(["status", "--socket", socket])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(try daemon.stop() == 0)
        #expect(!exists(socket))
        // Said in the log (issue 14).
        #expect(daemon.child.standardError.contains("replaced the stale socket file at \(socket)"), "\(daemon.child.standardError)")
    }

    @Test func aFileThatIsNotASocketIsLeftAlone() throws {
        let dir = try TemporaryDirectory()
        let path = dir.appending("portd.sock")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        let result = try runPortd(["--socket", path])
        #expect(result.status == 1)
        #expect(result.standardError.contains("exists and is not a socket"))
        #expect(FileManager.default.contents(atPath: path) == Data("keep me".utf8))
    }

    @Test func statusWithoutDaemonExits69() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let result = try runPortctl(["status", "--socket", socket])
        #expect(result.status == 69)
        #expect(result.standardError == "portctl: portd is not running at \(socket)\n")
        #expect(result.standardOutput.isEmpty)
    }

    @Test func statusTimesOutAgainstASilentListener() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        // Listens (so connect succeeds through the backlog) but never answers.
        let fd = try LocalSocket.make(.seqPacket)  // open to the end
        try LocalSocket.bind(fd, path: socket)
        try UnixSocket.listen(fd)
        let result = try runPortctl(["status", "--socket", socket, "--timeout", "0.2"])
        #expect(result.status == 75)
        #expect(result.standardError.contains("did not answer STATUS within 0.2 s"))
    }

    @Test func perUserInstanceUnderXDGRuntimeDir() throws {
        let dir = try TemporaryDirectory()
        let environment = ["XDG_RUNTIME_DIR": dir.path]
        let socket = dir.appending("portd/portd.sock")
        let notify = try NotifySocket()
        let child = try ChildProcess(
            executable: try Binaries.portd, arguments: [],
            environment: ChildProcess.cleanEnvironment(environment.merging(["NOTIFY_SOCKET": notify.address]) { a, _ in a }))
        defer { if child.isRunning { child.signal(SIGKILL) } }
        try notify.waitFor("READY=1", from: child)
        #expect(exists(socket))
        #expect(try FileSystem.status(ofPath: dir.appending("portd"))?.permissions == 0o700)

        let status = try runPortctl(["status"], environment: environment)
        #expect(status.status == 0, "\(status.standardError)")
        #expect(textField(status.standardOutput, "socket") == socket)
        child.signal(SIGTERM)
        #expect(try child.waitForExit() == 0)
        #expect(!exists(socket))
    }

    @Test func helpAndVersion() throws {
        let runners: [([String], [String: String]) throws -> CommandResult] = [
            { try runPortd($0, environment: $1) }, { try runPortctl($0, environment: $1) },
        ]
        for run in runners {
            let version = try run(["--version"], [:])
            #expect(version.status == 0)
            #expect(version.standardOutput == "\(PortdVersion.current)\n")
            let help = try run(["--help"], [:])
            #expect(help.status == 0)
            #expect(help.standardOutput.contains("USAGE:"))
            #expect(help.standardOutput.contains("--socket") || help.standardOutput.contains("status"))
        }
        // The exit statuses: the table in portctl --help, a pointer to it in a verb's.
        #expect(try runPortctl(["--help"]).standardOutput.contains("69\tportd is not running"))
        let statusHelp = try runPortctl(["status", "--help"])
        #expect(statusHelp.standardOutput.contains("`portctl --help`"), "\(statusHelp.standardOutput)")
    }

    @Test func usageErrorsExit64() throws {
        #expect(try runPortd(["--config"]).status == 64)
        #expect(try runPortd(["--socket", ""]).status == 64)
        #expect(try runPortd(["--no-such-option"]).status == 64)
        #expect(try runPortctl(["status", "--timeout", "0"]).status == 64)
        #expect(try runPortctl(["frobnicate"]).status == 64)
    }
}
