// SocketActivationTests: portd started by systemd-socket-activate, which
// sets up LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES exactly as a socket unit does
// and execs portd on the first connection (same pid). portd must serve the
// passed socket instead of binding, send READY=1, never unlink the socket
// file (the socket unit owns it), and refuse a passed socket of the wrong type.

import Foundation
import Glibc
import Testing
@testable import PortDaemon

import PortCore
import PortTestSupport

private let activator = "/usr/bin/systemd-socket-activate"

@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: activator), "needs systemd-socket-activate (package systemd)"))
struct SocketActivationTests {
    @Test func servesThePassedSocket() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("activated.sock")
        let notify = try NotifySocket()
        let child = try ChildProcess(
            executable: activator,
            arguments: ["-l", socket, "--seqpacket", "--fdname=control", "-E", "NOTIFY_SOCKET", try Binaries.portd,
                        "--socket", dir.appending("unused.sock")],
            environment: ChildProcess.cleanEnvironment(["NOTIFY_SOCKET": notify.address]))
        defer { if child.isRunning { child.signal(SIGKILL) } }
        try child.waitForStandardError(containing: "Listening on \(socket)")

        // The first connection makes the activator exec portd, which serves it.
        let status = try runPortctl(["status", "--socket", socket])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(textField(status.standardOutput, "pid") == "\(child.pid)")
        try notify.waitFor("READY=1")
        #expect(!exists(dir.appending("unused.sock")), "an activated portd must not bind its own socket")
        // Its port directory follows the socket it was given, not the path it
        // would have bound: never another daemon's directory.
        #expect(exists(socket + ".ports"))
        #expect(!exists(dir.appending("unused.sock.ports")))

        child.signal(SIGTERM)
        #expect(try child.waitForExit() == 0)
        #expect(exists(socket), "the socket unit owns the file; portd must not remove it")
    }

    @Test func neverTakesALiveDaemonsPortDirectory() throws {
        // Daemon A serves a name; a second portd whose port directory would be
        // A's (the same control-socket path, handed over by an activator)
        // must refuse to start rather than remove A's live port socket.
        let dir = try TemporaryDirectory()
        let a = try DaemonProcess.started(socket: dir.appending("a.sock"))
        let owner = try NameClient(socket: a.socketPath)
        let registered = try owner.register("alpha")
        #expect(registered.outcome == "registered")
        let ports = PortDirectory.path(forControlSocket: a.socketPath)
        #expect(throws: PortDirectory.Problem.self) {
            _ = try PortDirectory.prepare(path: ports, userID: getuid())
        }
        #expect(try owner.lookUp("alpha").outcome == "ok", "A's name still works")
        withExtendedLifetime(registered) {}
        owner.close()
        #expect(try a.stop() == 0)
    }

    @Test func refusesAPassedSocketOfTheWrongType() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("stream.sock")
        let child = try ChildProcess(
            executable: activator,
            arguments: ["-l", socket, "--fdname=control", try Binaries.portd, "--socket", dir.appending("unused.sock")],
            environment: ChildProcess.cleanEnvironment())
        defer { if child.isRunning { child.signal(SIGKILL) } }
        try child.waitForStandardError(containing: "Listening on \(socket)")

        // Trigger the exec with a stream connection; portd must refuse and exit 1.
        let fd = try LocalSocket.make(.stream, nonBlocking: false)  // open to the end
        _ = try LocalSocket.connect(fd, path: socket)
        #expect(try child.waitForExit() == 1)
        #expect(child.standardError.contains("is not a listening AF_UNIX SOCK_SEQPACKET socket"))
        #expect(!exists(dir.appending("unused.sock")))
    }
}
