// ReferenceClientTests: examples/portd_client.py, the reference client of
// portd-protocol(7)'s NAME SERVER section in Python, against the real portd
// (DaemonProcess):
//   - its self-check (--check) passes every check, none skipped: every
//     request, pipelined requests on one connection matched by serial (a
//     waiting LOOKUP, then STATUS, REGISTER, LIST pages, OWNER), every event
//     and every error word it can provoke. The portd it runs against
//     declares a port the check-in check uses and allows enough clients per
//     uid for OWNER's second page (owner_page + 1 queued clients);
//   - the check says so when it cannot run everything (--strict fails on a
//     skip), so a skipped check cannot pass for a passed one;
//   - its command line answers with the page's words and portctl's statuses.

import Foundation
import Glibc
import Testing

import PortTestSupport

@Suite struct ReferenceClientTests {
    static var client: String { SourceTree.path("examples/portd_client.py") }

    /// Every check the page calls for; the run must report each as "ok".
    static let checks = [
        "hello", "hello-pipelined-with-first-request", "hello-later-minor-version", "error-hello-required",
        "error-unsupported-version", "error-bad-request-second-hello", "status", "register-lookup-and-send",
        "register-then-lookup-in-order", "release", "connection-close-releases", "register-options-and-queue",
        "event-name-acquired", "event-name-acquired-passes-over-a-gone-port", "event-name-lost",
        "event-name-owner-changed", "event-watch-overflow", "pipelining-matched-by-serial", "list-paging", "owner",
        "owner-paging", "error-not-declared", "checkin", "error-bad-request", "error-invalid-name", "error-not-found",
        "error-timeout", "error-not-owner", "error-already-owned-by-itself", "error-limit",
        "stale-listener-is-released-on-lookup",
    ]

    private func python(_ d: DaemonProcess, _ arguments: [String]) throws -> CommandResult {
        let child = try ChildProcess(
            executable: "/usr/bin/python3", arguments: [Self.client] + arguments,
            environment: ChildProcess.cleanEnvironment(d.environment))
        // The self-check makes thousands of requests (a watch overflow, 257
        // queued clients): over 20 s under a loaded parallel test run.
        let status = try child.waitForExit(timeout: .seconds(180))
        return CommandResult(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }

    @Test func theReferenceClientPassesEveryCheckAgainstPortd() throws {
        let config = try TemporaryDirectory()
        let declared = uniqueName("org.example.declared")
        try "[Limits]\nClientsPerUID=400\n\n[Port]\nName=\(declared)\nCheckInUser=\(getuid())\n"
            .write(toFile: config.appending("portd.conf"), atomically: true, encoding: .utf8)
        let d = try DaemonProcess.started(arguments: ["--config", config.appending("portd.conf")])
        let result = try python(d, ["--check", "--strict", "--declared", declared])
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        let passed = Set(lines.filter { $0.hasPrefix("ok ") }.map { $0.dropFirst(5).split(separator: ":")[0] }.map(String.init))
        for check in Self.checks {
            #expect(passed.contains(check), "\(check) did not pass:\n\(result.standardOutput)")
        }
        #expect(lines.last == "\(Self.checks.count) checks: \(Self.checks.count) ok, 0 failed, 0 skipped")
        #expect(result.standardError.isEmpty, "\(result.standardError)")
    }

    @Test func aCheckThatCannotRunIsASkipAndFailsStrict() throws {
        // No declared port and the default ClientsPerUID= (256): check-in
        // and OWNER's second page cannot run.
        let d = try DaemonProcess.started()
        let lenient = try python(d, ["--check", "--only", "checkin"])
        #expect(lenient.status == 0, "\(lenient.standardOutput)")
        #expect(lenient.standardOutput.contains("skip checkin: no --declared NAME"))
        let strict = try python(d, ["--check", "--strict", "--only", "owner-paging"])
        #expect(strict.status == 1, "\(strict.standardOutput)")
        #expect(strict.standardOutput.contains("skip owner-paging: queueing client"), "\(strict.standardOutput)")
        #expect(strict.standardOutput.hasSuffix("1 checks: 0 ok, 0 failed, 1 skipped\n"), "\(strict.standardOutput)")
    }

    @Test func theCommandLineSpeaksThePagesWords() throws {
        let d = try DaemonProcess.started()
        let name = uniqueName("org.example.cli")
        let holder = try d.startPortctl(["listen", name])
        defer {
            holder.signal(SIGTERM)
            _ = try? holder.waitForExit()
        }
        try holder.waitForStandardError(containing: "listening on \(name)")

        let status = try python(d, ["status"])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("protocol=1.0\n"))
        #expect(status.standardOutput.contains("pid=\(d.pid)\n"))
        let lookup = try python(d, ["lookup", name])
        #expect(lookup.status == 0, "\(lookup.standardError)")
        #expect(lookup.standardOutput.hasPrefix("\(name) owner=\(holder.pid):\(getuid()):"), "\(lookup.standardOutput)")
        let list = try python(d, ["list"])
        #expect(list.standardOutput.contains("\(name) owner=\(holder.pid):\(getuid()):"), "\(list.standardOutput)")
        let owner = try python(d, ["owner", name])
        #expect(owner.standardOutput.hasPrefix("\(name) owner=") && owner.standardOutput.contains("queue_length=0"))

        let missing = try python(d, ["lookup", uniqueName("org.example.none")])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains(": not-found: no port is registered as"), "\(missing.standardError)")
        let undeclared = try python(d, ["checkin", uniqueName("org.example.none")])
        #expect(undeclared.status == 1)
        #expect(undeclared.standardError.contains(": not-declared: "), "\(undeclared.standardError)")
        let nobody = try python(d, ["--socket", d.directory.appending("none.sock"), "status"])
        #expect(nobody.status == 69)
        #expect(try python(d, ["frobnicate"]).status == 64)
    }
}
