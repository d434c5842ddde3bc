// ArgumentTests: portctl's command line without a daemon: every verb
// parses its options, validation refuses what portd would refuse (bad
// names, reserved msgids, bad hex, a second '-'), components keep the
// command-line order across --data/--file/--hex/-, and exit codes map.

import Foundation
import Testing

import PortCore
@testable import portctl

@Suite struct ArgumentTests {
    @Test func everyVerbParses() throws {
        let lines: [[String]] = [
            ["register", "svc", "--no-queue", "--", "python3", "-c", "pass"],
            ["listen", "svc", "--count", "2", "--exec", "cat", "--json", "--timeout", "1.5"],
            ["send", "svc", "--msgid", "0x10", "--data", "a", "--wait"],
            ["request", "svc", "--msgid", "7", "--raw", "--system"],
            ["checkin", "server", "--name", "w1", "--msgid", "100", "--count", "1"],
            ["list", "--json", "--user"], ["lookup", "svc", "-q"], ["watch"], ["watch", "svc", "--count", "1"],
            ["status", "--socket", "/tmp/x.sock"], ["wait", "svc", "--timeout", "3"],
        ]
        for line in lines {
            #expect(throws: Never.self, "\(line)") { _ = try PortctlCommand.parseAsRoot(line) }
        }
    }

    /// --socket, --user/--system, --timeout, --json and --quiet go before the
    /// verb too (as `busctl --user list`); given both before and after it,
    /// the value after the verb wins.
    @Test func connectionAndOutputOptionsGoBeforeTheVerb() throws {
        let status = try #require(
            try PortctlCommand.parseAsRoot(["--socket", "/a", "--timeout", "2.5", "--json", "status"]) as? Status)
        #expect(status.connection.socket == "/a" && status.connection.timeout == 2.5 && status.output.json)
        let list = try #require(try PortctlCommand.parseAsRoot(["--user", "-q", "list"]) as? List)
        #expect(list.connection.instance == .user && list.output.quiet && !list.output.json)

        let after = try #require(try PortctlCommand.parseAsRoot(["--socket", "/a", "status", "--socket", "/b"]) as? Status)
        #expect(after.connection.socket == "/b")
        let timeout = try #require(
            try PortctlCommand.parseAsRoot(["--timeout", "9", "send", "svc", "--msgid", "1", "--timeout", "1"]) as? Send)
        #expect(timeout.connection.timeout == 1)
        let instance = try #require(try PortctlCommand.parseAsRoot(["--system", "lookup", "svc"]) as? Lookup)
        #expect(instance.connection.instance == .system)
        // --user and --system are one setting: the last one given counts, wherever they are.
        let userLast = try #require(try PortctlCommand.parseAsRoot(["--system", "lookup", "svc", "--user"]) as? Lookup)
        #expect(userLast.connection.instance == .user)
        let systemLast = try #require(try PortctlCommand.parseAsRoot(["status", "--user", "--system"]) as? Status)
        #expect(systemLast.connection.instance == .system)
        let root = try #require(try PortctlCommand.parseAsRoot(["--user", "--system", "list"]) as? List)
        #expect(root.connection.instance == .system)

        // The verb's own options and components are untouched by the root's.
        let request = try #require(
            try PortctlCommand.parseAsRoot(["--json", "request", "svc", "--msgid", "3", "--data", "x", "--max-bytes", "9"])
                as? Request)
        #expect(request.output.json && request.maxBytes == 9 && request.components.data == ["x"])
        // register takes --json and --quiet like every verb.
        let register = try #require(
            try PortctlCommand.parseAsRoot(["register", "svc", "--json", "-q", "--", "true"]) as? Register)
        #expect(register.output.json && register.output.quiet && register.command == ["true"])
    }

    @Test func validationRefusesBadInput() {
        let bad: [[String]] = [
            ["send", "a/b", "--msgid", "1"], ["send", ".hidden", "--msgid", "1"], ["send", "", "--msgid", "1"],
            ["send", String(repeating: "n", count: 201), "--msgid", "1"],
            ["send", "svc", "--msgid", "0xffff0001"], ["send", "svc", "--msgid", "-1"], ["send", "svc"],
            ["send", "svc", "--msgid", "1", "--hex", "abc"], ["send", "svc", "--msgid", "1", "--hex", "zz"],
            ["send", "svc", "--msgid", "1", "-", "-"], ["send", "svc", "--msgid", "1", "extra"],
            ["request", "svc", "--msgid", "1", "--raw", "--json"],
            ["register", "svc"], ["register", "svc", "--declared", "--no-queue", "--", "true"],
            ["listen", "svc", "--count", "0"], ["listen", "svc", "--exec", ""], ["watch", "--count", "0"],
            ["status", "--timeout", "0"], ["status", "--timeout", "nan"], ["--timeout", "0", "status"],
            ["status", "--socket", ""], ["--socket", "", "list"], ["listen", "svc", "--max-bytes", "-1"],
            ["request", "svc", "--msgid", "1", "--max-bytes", "x"], ["--json", "request", "svc", "--msgid", "1", "--raw"],
        ]
        for line in bad {
            #expect(throws: (any Error).self, "\(line)") { _ = try PortctlCommand.parseAsRoot(line) }
        }
    }

    @Test func msgidForms() {
        #expect(MessageID(argument: "42")?.value == 42)
        #expect(MessageID(argument: "0x2A")?.value == 42)
        #expect(MessageID(argument: "0XffFF")?.value == 0xffff)
        // Not message IDs: taken as the option's value, refused by the check with a reason.
        for bad in ["4294967296", "x", "-1"] {
            let id = MessageID(argument: bad)!
            #expect(throws: (any Error).self) { try MessageID.check(id) }
        }
        #expect(throws: Never.self) { try MessageID.check(MessageID(argument: "42")!) }
    }

    @Test func hexForms() {
        #expect(HexBytes.parse("00ff10") == [0, 0xff, 0x10])
        #expect(HexBytes.parse("0x DE ad\nbe EF") == [0xde, 0xad, 0xbe, 0xef])
        #expect(HexBytes.parse("") == [])
        #expect(HexBytes.parse("abc") == nil)
        #expect(HexBytes.parse("0g") == nil)
    }

    @Test func componentOrderFollowsTheCommandLine() {
        let line = [
            "portctl", "send", "--msgid", "7", "svc", "--hex", "00", "--data", "-", "-", "--file=/f", "--timeout", "1",
            "--data=--x", "-q",
        ]
        #expect(ComponentOrder.kinds(in: line) == [.hex, .data, .standardInput, .file, .data])
        // A name that is "-" is the name, not standard input; after "--" a "-" still is.
        #expect(ComponentOrder.kinds(in: ["portctl", "send", "-", "--msgid", "1", "--", "-"]) == [.standardInput])
        #expect(ComponentOrder.kinds(in: ["portctl", "send", "svc", "--socket", "-", "--msgid", "1"]) == [])
        // Common options before the verb are not positionals either.
        let before = ["portctl", "--socket", "/s", "-q", "--timeout", "2", "send", "svc", "--msgid", "1", "-", "--data", "x"]
        #expect(ComponentOrder.kinds(in: before) == [.standardInput, .data])
    }

    @Test func componentsAreReadInOrder() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("portctl-args-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("blob").path
        try Data([9, 0, 8]).write(to: URL(fileURLWithPath: file))
        let line = ["send", "svc", "--msgid", "1", "--file", file, "--data", "two", "--hex", "0001", "--data", "four"]
        let send = try #require(try PortctlCommand.parseAsRoot(line) as? Send)
        let parts = try send.components.components(arguments: ["portctl"] + line)
        #expect(parts.map { $0.bytes } == [[9, 0, 8], Array("two".utf8), [0, 1], Array("four".utf8)])
    }

    @Test func aMissingFileIsAUsageError() throws {
        let line = ["send", "svc", "--msgid", "1", "--file", "/nonexistent/portctl-test"]
        let send = try #require(try PortctlCommand.parseAsRoot(line) as? Send)
        #expect {
            _ = try send.components.components(arguments: ["portctl"] + line)
        } throws: { error in
            (error as? Failure)?.code == portctl.ExitStatus.usage.rawValue
        }
    }

    @Test func exitStatusesOfNameServerErrors() {
        let cases: [(NameServerError, portctl.ExitStatus)] = [
            (.notRunning(socket: "/s"), .notRunning), (.permissionDenied(socket: "/s"), .permissionDenied),
            (.denied("no"), .permissionDenied), (.invalidName("x"), .usage), (.timedOut("t"), .timedOut),
            (.connectionLost, .portInvalid), (.protocolError("p"), .protocolError), (.badRequest("b"), .protocolError),
            (.limit("l"), .failure), (.daemonFailure("d"), .failure), (.transport(.invalidated), .portInvalid),
        ]
        for (error, status) in cases { #expect(Failure(error).code == status.rawValue, "\(error)") }
    }

    @Test func exitStatusesAreStable() {
        #expect(portctl.ExitStatus.allCases.map(\.rawValue) == [0, 1, 64, 67, 69, 74, 75, 76, 77])
    }
}
