// PortctlOptionsTests: portctl's option handling through the real binary,
// against the real portd (DaemonProcess): the common options before the verb
// (as `busctl --user list`), the value after the verb winning over the one
// before it, register taking --json and --quiet like every verb, and
// --max-bytes bounding what listen and request print of a component that
// travels as a memfd (a file larger than one record).

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct PortctlOptionsTests {
    @Test func commonOptionsGoBeforeTheVerb() throws {
        let d = try DaemonProcess.started()
        let missing = d.directory.appending("missing.sock")
        // No PORTD_SOCKET: the socket comes from the option alone.
        let status = try runPortctl(["--socket", d.socketPath, "status"])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(textField(status.standardOutput, "socket") == d.socketPath)
        let json = try runPortctl(["--json", "--socket", missing, "--timeout", "20", "status", "--socket", d.socketPath])
        #expect(json.status == 0, "\(json.standardError)")
        #expect(try jsonObject(json.standardOutput)["socket"] as? String == d.socketPath)
        // Given before and after the verb, the value after it wins.
        let after = try runPortctl(["--socket", d.socketPath, "list", "--socket", missing])
        #expect(after.status == 69)
        #expect(after.standardError == "portctl: portd is not running at \(missing)\n")

        let svc = uniqueName("before")
        let listener = try d.startPortctl(["--json", "listen", svc, "--count", "1"])
        try listener.waitForStandardError(containing: "listening on \(svc)")
        let lookup = try d.portctl(["--json", "lookup", svc])
        #expect(try jsonObject(lookup.standardOutput)["name"] as? String == svc)
        let sent = try d.portctl(["--json", "-q", "send", svc, "--msgid", "5", "--data", "x", "--json"])
        #expect(sent.status == 0 && sent.standardOutput.isEmpty, "\(sent.standardError)")
        #expect(try listener.waitForExit() == 0, "\(listener.standardError)")
        #expect(int(try jsonObject(listener.standardOutput), "msgid") == 5)

        // A bad value before the verb is reported with the verb's usage.
        let bad = try runPortctl(["--timeout", "0", "status", "--socket", d.socketPath])
        #expect(bad.status == 64)
        #expect(bad.standardError.contains("--timeout '0': give a number of seconds"))
        #expect(bad.standardError.contains("Usage: portctl status"))
    }

    @Test func instanceBeforeTheVerb() throws {
        let runtime = try TemporaryDirectory()
        let environment = ["XDG_RUNTIME_DIR": runtime.path]
        let userSocket = runtime.appending("portd/portd.sock")
        let user = try runPortctl(["--user", "status"], environment: environment)
        #expect(user.status == 69)
        #expect(user.standardError == "portctl: portd is not running at \(userSocket)\n")
        // --user and --system are one setting: the last one given counts,
        // before or after the verb, on either parser (send's fast path too),
        // and for portd.
        let systemSocket = DaemonPaths.systemSocket
        for (arguments, socket) in [
            (["--system", "list", "--user"], userSocket), (["--user", "status", "--system"], systemSocket),
            (["--user", "--system", "lookup", "x", "--user"], userSocket),
            (["--system", "send", "x", "--msgid", "1", "--user"], userSocket),
            (["--user", "send", "x", "--msgid", "1", "--system", "--timeout", "1"], systemSocket),
        ] {
            // A system portd of this machine would answer: then that case says nothing.
            if socket == systemSocket, FileManager.default.fileExists(atPath: systemSocket) { continue }
            let run = try runPortctl(arguments, environment: environment)
            #expect(run.status == 69, "\(arguments): \(run.standardError)")
            #expect(run.standardError == "portctl: portd is not running at \(socket)\n", "\(arguments)")
        }
        // portd: --check-config reads the instance's configuration, so it says which instance won.
        let config = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: config.appending("portd"), withIntermediateDirectories: true)
        try "[Limits]\n".write(toFile: config.appending("portd/portd.conf"), atomically: true, encoding: .utf8)
        let userConfig = config.appending("portd/portd.conf")
        let userLast = try runPortd(["--system", "--user", "--check-config"], environment: ["XDG_CONFIG_HOME": config.path])
        #expect(userLast.status == 0, "\(userLast.standardError)")
        #expect(userLast.standardOutput == "portd: the configuration is good: \(userConfig)\n")
        let systemLast = try runPortd(["--user", "--system", "--check-config"], environment: ["XDG_CONFIG_HOME": config.path])
        #expect(!systemLast.standardOutput.contains(userConfig) && !systemLast.standardError.contains("already"))
    }

    /// Bare `portctl`: a short usage on standard error (every verb with
    /// its line, where to read more), status 64; --help stays whole.
    @Test func barePortctlPrintsAShortUsage() throws {
        let bare = try runPortctl([])
        #expect(bare.status == 64)
        #expect(bare.standardOutput.isEmpty)
        let lines = bare.standardError.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count < 25, "\(bare.standardError)")
        #expect(lines.first == "usage: portctl [OPTIONS] COMMAND [ARGUMENTS]")
        for verb in PortctlManPageTests.verbs {
            #expect(lines.contains { $0.hasPrefix("  \(verb) ") }, "\(verb) is not listed")
        }
        #expect(bare.standardError.contains("portctl help COMMAND") && bare.standardError.contains("man portctl"))
        let help = try runPortctl(["--help"])
        #expect(help.status == 0 && help.standardOutput.split(separator: "\n").count > 40)
    }

    /// An unknown option is named as such, also when its value would be
    /// a bad NAME (swift-argument-parser validates the verb first).
    @Test func unknownOptionsAreNamedAsSuch() throws {
        for verb in [["monitor", "echo"], ["lookup", "echo"], ["watch"], ["listen", "echo"], ["wait", "echo"]] {
            let run = try runPortctl(verb + ["--frobnicate", "msgid=1"])
            #expect(run.status == 64)
            #expect(run.standardError.hasPrefix("Error: Unknown option '--frobnicate'"), "\(verb): \(run.standardError)")
            let json = try runPortctl(verb + ["--frobnicate", "msgid=1", "--json"])
            #expect(try jsonObject(json.standardError)["message"] as? String == "Unknown option '--frobnicate'", "\(verb)")
        }
        // A bad NAME alone is still refused as a name.
        let bad = try runPortctl(["monitor", "echo", "msgid=1"])
        #expect(bad.status == 64 && bad.standardError.hasPrefix("Error: invalid name 'msgid=1'"), "\(bad.standardError)")
    }

    @Test func registerTakesJsonAndQuiet() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("reg")
        let held = try d.portctl(["--json", "register", svc, "-q", "--json", "--", "/bin/sh", "-c", "echo held; exit 4"])
        #expect(held.status == 4, "\(held.standardError)")
        #expect(held.standardOutput == "held\n")
        #expect(held.standardError.isEmpty)
    }

    /// An 8 MiB file component (a memfd on the way) prints a bounded line:
    /// its length, "truncated", and the first 64 KiB in JSON; the first
    /// --max-bytes in text; only the lengths of a memfd reply with 0.
    @Test func largeComponentsAreCut() throws {
        let d = try DaemonProcess.started()
        let size = 8 << 20
        let file = d.directory.appending("8MiB")
        var bytes = Data(repeating: UInt8(ascii: "p"), count: size)
        bytes[65535] = 0xc3  // "é" across the 64 KiB cut: the text stops before it
        bytes[65536] = 0xa9
        try bytes.write(to: URL(fileURLWithPath: file))

        // Its line is longer than a pipe holds, and ChildProcess reads a
        // child's output once it exits: this listener writes to a file.
        let json = uniqueName("json")
        let printed = d.directory.appending("json.out")
        let jsonListener = try ChildProcess(
            executable: "/bin/sh",
            arguments: ["-c", #"exec "$0" "$@" > "$PRINTED""#, try Binaries.portctl, "listen", json, "--count", "1", "--json"],
            environment: ChildProcess.cleanEnvironment(d.environment.merging(["PRINTED": printed]) { _, new in new }))
        try jsonListener.waitForStandardError(containing: "listening on \(json)")
        let text = uniqueName("text")
        let textListener = try d.startPortctl(["listen", text, "--count", "1", "--max-bytes", "16"])
        try textListener.waitForStandardError(containing: "listening on \(text)")
        for name in [json, text] {
            let sent = try d.portctl(["send", name, "--msgid", "1", "--file", file, "--timeout", "60"])
            #expect(sent.status == 0, "\(sent.standardError)")
        }

        #expect(try jsonListener.waitForExit() == 0, "\(jsonListener.standardError)")
        let output = try String(contentsOfFile: printed, encoding: .utf8)
        #expect(output.utf8.count < 66_000)
        let m = try jsonObject(output)
        let c = try #require((m["components"] as? [[String: Any]])?.first)
        #expect(int(c, "length") == size)
        #expect(c["truncated"] as? Bool == true)
        #expect(c["text"] as? String == String(repeating: "p", count: 65535))

        #expect(try textListener.waitForExit() == 0, "\(textListener.standardError)")
        let lines = textListener.standardOutput.split(separator: "\n")
        #expect(lines.last == #"  "pppppppppppppppp"… (8388608 bytes, first 16 shown)"#)

        // A reply larger than a record comes back as a memfd too.
        let svc = uniqueName("zeros")
        let service = try d.startPortctl(["listen", svc, "--count", "1", "--exec", "head -c 300000 /dev/zero"])
        try service.waitForStandardError(containing: "listening on \(svc)")
        let reply = try d.portctl(["request", svc, "--msgid", "2", "--json", "--max-bytes", "0", "--timeout", "60"])
        #expect(reply.status == 0, "\(reply.standardError)")
        let r = try #require((try jsonObject(reply.standardOutput)["components"] as? [[String: Any]])?.first)
        #expect(int(r, "length") == 300_000 && r["truncated"] as? Bool == true && r["text"] as? String == "")
        #expect(try service.waitForExit() == 0, "\(service.standardError)")
    }
}
