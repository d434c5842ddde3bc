// PortctlInputTests (issue 14): what portctl reads for a component is
// bounded by what a message can carry, and every bad file is a bad
// argument (status 64) with a reason a user can act on.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct PortctlInputTests {
    @Test func anEndlessFileStopsAtTheProtocolsLimit() throws {
        let d = try DaemonProcess.started()
        let r = try d.portctl(["send", uniqueName("sink"), "--msgid", "1", "--file", "/dev/zero"])
        #expect(r.status == 64, "\(r.standardError)")
        #expect(r.standardError.contains("too large"), "\(r.standardError)")
    }

    @Test func standardInputStopsAtTheProtocolsLimitWithoutReadingTheRest() throws {
        let d = try DaemonProcess.started()
        let portctl = try Binaries.portctl
        // head is killed by SIGPIPE (141) only if portctl stopped reading before the end.
        let script = "head -c 1200M /dev/zero | '\(portctl)' send \(uniqueName("sink")) --msgid 1 -; echo \"status=${PIPESTATUS[0]} ${PIPESTATUS[1]}\""
        let child = try ChildProcess(
            executable: "/bin/bash", arguments: ["-c", script], environment: ChildProcess.cleanEnvironment(d.environment))
        #expect(try child.waitForExit(timeout: .seconds(60)) == 0)
        #expect(child.standardOutput.contains("status=141 64"), "\(child.standardOutput) \(child.standardError)")
        #expect(child.standardError.contains("too large"), "\(child.standardError)")
    }

    /// A file larger than one component may hold (PortLimits'
    /// maxLargeComponentBytes) is refused by its size, before a byte of it
    /// is read; it used to be read whole (up to 1 GiB) first.
    @Test func aFileLargerThanAComponentIsRefusedByItsSize() throws {
        let d = try DaemonProcess.started()
        let directory = try TemporaryDirectory()
        let path = directory.path + "/large"
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        #expect(ftruncate(fd, 300 << 20) == 0)  // sparse: nothing written
        close(fd)
        let r = try d.portctl(["send", uniqueName("sink"), "--msgid", "1", "--file", path])
        #expect(r.status == 64, "\(r.standardError)")
        #expect(
            r.standardError.contains("cannot read \(path): too large (one component may hold at most 256 MiB)"),
            "\(r.standardError)")
    }

    @Test func everyBadFileIsAUsageErrorWithAReason() throws {
        let d = try DaemonProcess.started()
        let name = uniqueName("sink")
        let directory = try d.portctl(["send", name, "--msgid", "1", "--file", "/tmp"])
        #expect(directory.status == 64)
        #expect(directory.standardError.contains("is a directory"), "\(directory.standardError)")
        let missing = try d.portctl(["send", name, "--msgid", "1", "--file", "/nonexistent/portctl-test"])
        #expect(missing.status == 64)
        #expect(missing.standardError.contains("no such file"), "\(missing.standardError)")
    }

    /// `--msgid -1` is a bad message ID, not a missing value.
    @Test func aNegativeMsgidIsNamedAsSuch() throws {
        let r = try runPortctl(["send", "x", "--msgid", "-1", "--data", "a"])
        #expect(r.status == 64)
        #expect(r.standardError.contains("'-1' is not a message ID"), "\(r.standardError)")
        #expect(!r.standardError.contains("Missing value"), "\(r.standardError)")
    }

    /// A missing command is said in portctl's words, before the name is taken.
    @Test func registerWithAMissingCommandSaysSo() throws {
        let d = try DaemonProcess.started()
        let name = uniqueName("nobody")
        let path = try d.portctl(["register", name, "--", "/nonexistent/portctl-test"])
        #expect(path.status == 127)
        #expect(path.standardError == "portctl: cannot run /nonexistent/portctl-test: no executable file there\n")
        let bare = try d.portctl(["register", name, "--", "portctl-no-such-command"])
        #expect(bare.status == 127)
        #expect(bare.standardError.contains("not found in PATH"), "\(bare.standardError)")
        #expect(try d.portctl(["lookup", name]).status == 67, "the name was never taken")
    }

    /// --socket at something that is not portd's kind of socket.
    @Test func aStreamSocketIsNotPortd() throws {
        let dir = try TemporaryDirectory()
        let path = dir.appending("stream.sock")
        let stream = try LocalSocket.make(.stream, nonBlocking: false)
        try LocalSocket.bind(stream, path: path)
        try UnixSocket.listen(stream, backlog: 4)
        let r = try runPortctl(["--socket", path, "status"])
        #expect(r.status == 69)
        #expect(r.standardError.contains("a socket of another type listens there"), "\(r.standardError)")
        #expect(!r.standardError.contains("Protocol wrong type"), "\(r.standardError)")
    }

    /// A bad --timeout is reported with the verb's usage, wherever it is given.
    @Test func aBadTimeoutIsTheVerbsError() throws {
        for arguments in [["status", "--timeout", "abc"], ["--timeout", "abc", "status"]] {
            let r = try runPortctl(arguments)
            #expect(r.status == 64)
            #expect(r.standardError.contains("--timeout 'abc'"), "\(r.standardError)")
            #expect(r.standardError.contains("Usage: portctl status"), "\(r.standardError)")
        }
    }

    /// A negative number is the numeric option's value, refused by the
    /// option's own check (not "Missing value for '--timeout'": the parser
    /// read `-1` as an option), with the verb's usage and status 64.
    @Test func aNegativeNumberIsTheOptionsValueAndRefused() throws {
        let cases: [([String], String, String)] = [
            (["status", "--timeout", "-1"], "--timeout '-1': give a number of seconds greater than 0", "status"),
            (["--timeout", "-1", "status"], "--timeout '-1': give a number of seconds greater than 0", "status"),
            (["send", "svc", "--msgid", "1", "--timeout", "-2.5"], "--timeout '-2.5': give a number", "send"),
            (["listen", "svc", "--count", "-1"], "--count must be at least 1", "listen"),
            (["checkin", "svc", "--count", "-1"], "--count must be at least 1", "checkin"),
            (["watch", "--count", "-1"], "--count must be at least 1", "watch"),
            (["monitor", "--count", "-1"], "--count must be at least 1", "monitor"),
            (["listen", "svc", "--max-bytes", "-1"], "--max-bytes must be 0 or more", "listen"),
            (["monitor", "--max-bytes", "-1"], "--max-bytes must be 0 or more", "monitor"),
            (["request", "svc", "--msgid", "1", "--max-bytes", "-1"], "--max-bytes must be 0 or more", "request"),
        ]
        for (arguments, message, verb) in cases {
            let r = try runPortctl(arguments)
            #expect(r.status == 64, "\(arguments)")
            #expect(r.standardError.contains(message), "\(arguments): \(r.standardError)")
            #expect(!r.standardError.contains("Missing value"), "\(arguments): \(r.standardError)")
            #expect(r.standardError.contains("Usage: portctl \(verb)"), "\(arguments): \(r.standardError)")
        }
    }

    /// `portctl help COMMAND` is COMMAND's help; an unknown COMMAND is a
    /// usage error, not portctl's help and status 0.
    @Test func helpOfAnUnknownCommandIsAUsageError() throws {
        for arguments in [["help", "nosuch"], ["--user", "help", "nosuch"], ["help", "status", "extra"]] {
            let r = try runPortctl(arguments)
            #expect(r.status == 64, "\(arguments)")
            #expect(r.standardOutput.isEmpty, "\(arguments): \(r.standardOutput)")
            #expect(r.standardError.contains("unknown command '\(arguments.drop { $0 != "help" }.dropFirst().joined(separator: " "))'"),
                    "\(arguments): \(r.standardError)")
        }
        let json = try runPortctl(["--json", "help", "nosuch"])
        #expect(json.status == 64)
        #expect(json.standardError.hasPrefix(#"{"error":"usage","status":64,"message":"unknown command 'nosuch'"#), "\(json.standardError)")
        let known = try runPortctl(["help", "status"])
        #expect(known.status == 0)
        #expect(known.standardOutput.contains("USAGE: portctl status"), "\(known.standardOutput)")
        let bare = try runPortctl(["help"])
        #expect(bare.status == 0)
        #expect(bare.standardOutput.contains("SUBCOMMANDS:"), "\(bare.standardOutput)")
    }

    /// With --json, errors are JSON objects on standard error, usage errors too.
    @Test func errorsAreJSONWithJSON() throws {
        let missing = try runPortctl(["status", "--json", "--socket", "/nonexistent/portd.sock"])
        #expect(missing.status == 69)
        #expect(missing.standardError == #"{"error":"not-running","status":69,"message":"portd is not running at /nonexistent/portd.sock"}"# + "\n")
        let usage = try runPortctl(["status", "--json", "--bogus"])
        #expect(usage.status == 64)
        #expect(usage.standardError == #"{"error":"usage","status":64,"message":"Unknown option '--bogus'"}"# + "\n")
        // Without --json, text as before.
        let text = try runPortctl(["status", "--socket", "/nonexistent/portd.sock"])
        #expect(text.standardError == "portctl: portd is not running at /nonexistent/portd.sock\n")
    }
}
