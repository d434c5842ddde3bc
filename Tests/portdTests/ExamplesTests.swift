// ExamplesTests: the scripts in examples/ work as their comments say,
// against the real portd (DaemonProcess):
//   - portd_lookup_send.py, on name-server protocol 1.0 through
//     portd_client.py (the reference client of portd-protocol(7), tested
//     on its own by ReferenceClientTests), looks a name up through portd
//     and sends to it (a message, and a request whose reply it prints), and
//     exits with portctl's statuses when it cannot;
//   - shell_service.sh is a service in shell run by `portctl listen --exec`,
//     and runs as the README shows on a fresh clone (no portctl on PATH);
//   - the Python example of portd-protocol(7), as written, registers, looks
//     up, accepts and sends more records than a queue holds (the sockets
//     portd hands out are non-blocking; the example sets them blocking).

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct ExamplesTests {
    static var python: String { SourceTree.path("examples/portd_lookup_send.py") }
    static var shell: String { SourceTree.path("examples/shell_service.sh") }

    private func run(_ d: DaemonProcess, _ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> CommandResult
    {
        let child = try ChildProcess(
            executable: executable, arguments: arguments,
            environment: ChildProcess.cleanEnvironment(d.environment.merging(environment) { _, new in new }))
        let status = try child.waitForExit()
        return CommandResult(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }

    @Test func pythonLooksUpAndSends() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("py-target")
        let listener = try d.startPortctl(["listen", svc, "--count", "1", "--json"])
        try listener.waitForStandardError(containing: "listening on \(svc)")
        let sent = try run(d, "/usr/bin/python3", [Self.python, svc, "0x2a", "hello", "wörld"])
        #expect(sent.status == 0, "\(sent.standardError)")
        #expect(try listener.waitForExit() == 0)
        let m = try jsonObject(listener.standardOutput)
        #expect(int(m, "msgid") == 42)
        #expect((m["components"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["hello", "wörld"])
    }

    /// The "Example" of portd-protocol(7)'s NAME SERVER section, as written.
    static func manPageExample() throws -> String {
        let page = try String(contentsOfFile: SourceTree.path("man/portd-protocol.7"), encoding: .utf8)
        let start = try #require(page.range(of: ".Ss Example\nRegistering a name and looking it up, in Python:\n.Bd -literal -offset indent\n"))
        let end = try #require(page.range(of: "\n.Ed\n", range: start.upperBound..<page.endIndex))
        return String(page[start.upperBound..<end.lowerBound])
    }

    @Test func theManPagesPythonExampleWorksAsWritten() throws {
        let d = try DaemonProcess.started()
        // The example, then: the sockets block, a connection is accepted
        // and 1,000 records (more than a socket's queue holds) go through it.
        let script = "import sys, threading\npath = sys.argv[1]\n" + (try Self.manPageExample()) + """

            assert listening.getblocking() and right.getblocking()
            conn, _ = listening.accept()
            got = []
            reader = threading.Thread(target=lambda: got.extend(conn.recv(64) for _ in range(1000)), daemon=True)
            reader.start()
            for i in range(1000):
                right.send(b"record %d" % i)
            reader.join()
            assert got[-1] == b"record 999", got[-1]
            print("ok")
            """
        let result = try run(d, "/usr/bin/python3", ["-c", script, d.socketPath])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "ok\n")
    }

    @Test func pythonRequestsFromTheShellService() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("upper")
        let service = try ChildProcess(
            executable: Self.shell, arguments: [svc, "--count", "3"],
            environment: ChildProcess.cleanEnvironment(d.environment.merging(["PORTCTL": try Binaries.portctl]) { _, n in n }))
        try service.waitForStandardError(containing: "listening on \(svc)")

        let upper = try run(d, "/usr/bin/python3", [Self.python, "--request", svc, "1", "hello"])
        #expect(upper.status == 0, "\(upper.standardError)")
        #expect(upper.standardOutput == "HELLO\n")
        let count = try d.portctl(["request", svc, "--msgid", "2", "--data", "hello"])
        #expect(count.standardOutput == "\"5\\n\"\n")
        let other = try d.portctl(["request", svc, "--msgid", "9", "--raw"])
        #expect(other.standardOutput == "unknown msgid 9 (1: capitals, 2: byte count)\n")
        #expect(try service.waitForExit() == 0, "\(service.standardError)")
    }

    /// shell_service.sh as the README runs it on a fresh clone: no PORTCTL
    /// and no portctl on PATH; it finds the portctl this clone built.
    @Test func shellServiceRunsAsTheReadmeShows() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("upper")
        var environment = ChildProcess.cleanEnvironment(d.environment)
        environment["PORTCTL"] = nil
        environment["PATH"] = "/usr/bin:/bin"
        let service = try ChildProcess(executable: Self.shell, arguments: [svc, "--count", "1"], environment: environment)
        try service.waitForStandardError(containing: "listening on \(svc)")
        let upper = try d.portctl(["request", svc, "--msgid", "1", "--data", "hello", "--raw"])
        #expect(upper.standardOutput == "HELLO")
        #expect(try service.waitForExit() == 0, "\(service.standardError)")
    }

    @Test func pythonWaitsAndFailsWithPortctlStatuses() throws {
        let d = try DaemonProcess.started()
        let missing = uniqueName("missing")
        let notFound = try run(d, "/usr/bin/python3", [Self.python, missing, "1"])
        #expect(notFound.status == 67)
        #expect(notFound.standardError == "portd_lookup_send.py: \(missing) is not registered\n")
        #expect(try run(d, "/usr/bin/python3", [Self.python, "--wait", "0.2", missing, "1"]).status == 75)
        #expect(try run(d, "/usr/bin/python3", [Self.python, "only-a-name"]).status == 64)
        let nobody = try run(d, "/usr/bin/python3", [Self.python, "--socket", d.directory.appending("none.sock"), missing, "1"])
        #expect(nobody.status == 69)
    }
}
