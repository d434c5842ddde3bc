// ActivationTests: declared ports with Exec= and Unit= (portd.conf(5)),
// started on demand by the real portd. Nothing starts before a client
// connects; the first connection starts the service, which takes the
// socket from LISTEN_FDS (Exec=, a Python service of Fixtures/
// name_client.py whose output goes to portd's standard output) or checks
// in (Unit=, through a stand-in `systemctl` first in PATH that records its
// arguments, starts the service in the background and returns, as
// `systemctl start --no-block` does). After the service exits, the next
// connection starts it again.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct ActivationTests {
    /// Looks `name` up through portd and sends one message with `text`.
    private func send(_ text: String, to name: String, socket: String) throws {
        let client = try NameClient(socket: socket)
        defer { client.close() }
        let found = try client.lookUp(name)
        #expect(found.outcome == "ok")
        let right = try #require(found.ports.first)
        #expect(try right.send(PCPortMessage(msgid: 1, strings: [text]), timeout: HarnessTimeout) == .sent)
        right.invalidate()
    }

    @Test func execStartsTheServiceOnTheFirstConnectionAndAgainAfterItExits() throws {
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try """
            [Port]
            Name=svc.lazy
            CheckInUser=\(getuid())
            Exec=/usr/bin/python3 \(NameServerFixture.script) activated
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess.started(socket: dir.appending("portd.sock"), arguments: ["--config", config])
        let client = try NameClient(socket: daemon.socketPath)
        #expect(try client.request(MessageID.status).words.contains("declared=1"))
        client.close()

        try send("first", to: "svc.lazy", socket: daemon.socketPath)
        try daemon.child.waitForStandardOutput(containing: "svc.lazy: first (PORTD_SOCKET set)\n")
        try daemon.child.waitForStandardError(containing: "exited with status 0")

        // The service is gone: the next connection starts it again.
        try send("second", to: "svc.lazy", socket: daemon.socketPath)
        try daemon.child.waitForStandardOutput(containing: "svc.lazy: second (PORTD_SOCKET set)\n")
        #expect(try daemon.stop() == 0)
        let starts = daemon.child.standardError.components(separatedBy: "started /usr/bin/python3").count - 1
        #expect(starts == 2, "\(daemon.child.standardError)")
    }

    @Test func aFailingServiceIsStartedAgainLessAndLessOften() throws {
        // /bin/false never accepts, so the connection stays in the backlog
        // and keeps asking for a service: each failed start doubles the wait.
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try "[Port]\nName=svc.broken\nCheckInUser=\(getuid())\nExec=/bin/false\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess.started(socket: dir.appending("portd.sock"), arguments: ["--config", config])
        try send("anyone there?", to: "svc.broken", socket: daemon.socketPath)
        try daemon.child.waitForStandardError(
            containing: "exited with status 1; failure 1 in a row, next start in 2.0 seconds at the earliest")
        let firstFailure = MonotonicInstant.now()
        try daemon.child.waitForStandardError(
            containing: "exited with status 1; failure 2 in a row, next start in 4.0 seconds at the earliest")
        // A lower bound only: the second start cannot come before the wait it announced.
        #expect(MonotonicInstant.now() - firstFailure >= .milliseconds(1900), "the second start waited 2 s")
        #expect(try daemon.stop() == 0)
    }

    @Test func unitAsksTheServiceManagerAndTheUnitChecksIn() throws {
        let dir = try TemporaryDirectory()
        let bin = dir.appending("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let recorded = dir.appending("systemctl.args")
        try """
            #!/bin/sh
            echo "$@" >> \(recorded)
            /usr/bin/python3 \(NameServerFixture.script) checkin-receive "$PORTD_SOCKET" "$PORTD_PORT_NAME" 1 &
            exit 0
            """.write(toFile: bin + "/systemctl", atomically: true, encoding: .utf8)
        #expect(chmod(bin + "/systemctl", 0o755) == 0)
        let config = dir.appending("portd.conf")
        try "[Port]\nName=svc.unit\nCheckInUser=\(getuid())\nUnit=example-spooler.service\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let daemon = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--config", config], environment: ["PATH": "\(bin):\(path)"])

        try send("via the unit", to: "svc.unit", socket: daemon.socketPath)
        try daemon.child.waitForStandardOutput(containing: "via the unit\n")
        try daemon.child.waitForStandardError(containing: "service checked in for svc.unit")
        #expect(try daemon.stop() == 0)
        let args = try String(contentsOfFile: recorded, encoding: .utf8)
        #expect(args == "--user start --no-block example-spooler.service\n")
    }
}
