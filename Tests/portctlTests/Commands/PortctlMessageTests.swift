// PortctlMessageTests: portctl's message verbs through the real binary,
// against the real portd (DaemonProcess): listen and send with
// components in order (text, NUL bytes, hex, standard input, a file), text
// output that escapes control bytes, --json parsed here, a 100 MiB
// component from a file, request/reply to a shell service (--exec) in
// text, --raw and --json, and Apple's check-in handshake both ways
// (portctl as worker and as server), including a server that goes away.
//
// Synchronisation is by events: "listening on NAME" / "checked in to" on
// standard error, `send --wait`, a flag the test's own handler raises.

import Foundation
import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport

@Suite struct PortctlMessageTests {
    @Test func componentsArriveInOrder() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("order")
        let file = d.directory.appending("blob")
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: file))
        let listener = try d.startPortctl(["listen", svc, "--count", "1", "--json"])
        try listener.waitForStandardError(containing: "listening on \(svc)")

        let send = try d.portctl(
            ["send", svc, "--msgid", "0x2a", "--data", "héllo", "--hex", "00ff000a", "-", "--file", file, "--data", ""],
            input: Array("from stdin\0".utf8))
        #expect(send.status == 0, "\(send.standardError)")
        #expect(send.standardOutput.isEmpty)
        #expect(try listener.waitForExit() == 0, "\(listener.standardError)")
        let m = try jsonObject(listener.standardOutput)
        #expect(m["name"] as? String == svc)
        #expect(int(m, "msgid") == 42)
        #expect(int(m, "uid") == Int(getuid()))
        #expect(m["reply_port"] as? Bool == false)
        let c = try #require(m["components"] as? [[String: Any]])
        try #require(c.count == 5)
        #expect(c[0]["text"] as? String == "héllo")
        #expect(c[1]["base64"] as? String == "AP8ACg==" && int(c[1], "length") == 4)
        #expect(c[2]["text"] as? String == "from stdin\u{0}")
        #expect(c[3]["text"] as? String == "\u{1}\u{2}\u{3}")
        #expect(c[4]["text"] as? String == "" && int(c[4], "length") == 0)
    }

    @Test func textOutputNeverCarriesControlBytes() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("text")
        let listener = try d.startPortctl(["listen", svc, "--count", "1"])
        try listener.waitForStandardError(containing: "listening on \(svc)")
        let send = try d.portctl(["send", svc, "--msgid", "9", "--data", "\u{1b}[31mred\r", "--hex", "00c3"])
        #expect(send.status == 0, "\(send.standardError)")
        #expect(try listener.waitForExit() == 0)
        let out = listener.standardOutput
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("msgid=9 from pid=") == true)
        #expect(lines.dropFirst() == [#"  "\x1b[31mred\r""#, #"  "\0\xc3""#])
        #expect(!out.utf8.contains(0x1b) && !out.utf8.contains(0) && !out.utf8.contains(0x0d))
    }

    @Test func aHundredMiBComponentFromAFile() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("big")
        let file = d.directory.appending("100MiB")
        var pattern = Data(count: 1 << 20)
        pattern.withUnsafeMutableBytes { raw in for i in 0..<raw.count { raw[i] = UInt8(truncatingIfNeeded: i &* 131 &+ i >> 11) } }
        #expect(FileManager.default.createFile(atPath: file, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        for _ in 0..<100 { handle.write(pattern) }
        try handle.close()

        let expected = try runToCompletionOf("/usr/bin/sha256sum", [file])
        let hash = try #require(expected.split(separator: " ").first.map(String.init))
        let service = try d.startPortctl(["listen", svc, "--count", "1", "--exec", #"printf '%s ' "$PORTCTL_LENGTHS"; sha256sum"#])
        try service.waitForStandardError(containing: "listening on \(svc)")
        let reply = try d.portctl(["request", svc, "--msgid", "1", "--file", file, "--raw", "--timeout", "60"])
        #expect(reply.status == 0, "\(reply.standardError)")
        #expect(reply.standardOutput == "104857600 \(hash)  -\n")
        #expect(try service.waitForExit() == 0, "\(service.standardError)")
    }

    /// A sealed memfd twice as long as its record announces, whose
    /// announced first half is a hole and whose second half is written,
    /// has as many bytes allocated as the announced length: it is refused
    /// all the same (the announced range has a hole, portd-protocol(7),
    /// "Large components"), that connection closed, the hole never read,
    /// and the service goes on. It was delivered, and reading it grew the
    /// sender's memfd from 1 to 2 MiB, charged to the receiver.
    @Test func aLargeComponentWithAHoleInItsAnnouncedRangeIsRefused() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("holes")
        let service = try d.startPortctl(["listen", svc, "--exec", "cat >/dev/null"])
        try service.waitForStandardError(containing: "listening on \(svc)")
        let length = 1 << 20
        let sender = try ChildProcess(
            executable: "/usr/bin/python3",
            arguments: [SourceTree.path("Tests/portctlTests/Fixtures/long_memfd_sender.py"), d.socketPath, svc, "\(length)"],
            environment: ChildProcess.cleanEnvironment())
        #expect(try sender.waitForExit() == 0, "\(sender.standardError)")
        #expect(sender.standardOutput == "closed \(length) \(length)\n")
        let after = try d.portctl(["request", svc, "--msgid", "1", "--data", "still served", "--raw"])
        #expect(after.status == 0, "\(after.standardError)")
        service.signal(SIGTERM)
        _ = try service.waitForExit()
    }

    @Test func requestAndReplyFromAShellService() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("upper")
        let service = try d.startPortctl(["listen", svc, "--count", "3", "--exec", "tr a-z A-Z"])
        try service.waitForStandardError(containing: "listening on \(svc)")

        let text = try d.portctl(["request", svc, "--msgid", "1", "--data", "hello"])
        #expect(text.status == 0, "\(text.standardError)")
        #expect(text.standardOutput == "\"HELLO\"\n")
        let raw = try d.portctl(["request", svc, "--msgid", "1", "--data", "raw", "--raw"])
        #expect(raw.standardOutput == "RAW")
        let json = try d.portctl(["request", svc, "--msgid", "7", "--data", "json", "--json"])
        let m = try jsonObject(json.standardOutput)
        #expect(int(m, "msgid") == 7)
        #expect((m["components"] as? [[String: Any]])?.first?["text"] as? String == "JSON")
        #expect(try service.waitForExit() == 0, "\(service.standardError)")
    }

    @Test func portctlChecksInToAServer() throws {
        let d = try DaemonProcess.started()
        let server = uniqueName("server")
        let client = try d.client()
        guard case .registered(let port) = try client.register(server) else {
            Issue.record("not registered")
            return
        }
        defer { port.invalidate() }
        let checkedIn = Mutex<CheckedInWorker?>(nil)
        let flag = Flag()
        let checkIn = CheckInServer(loop: BackgroundLoop.shared.loop, onCheckIn: { worker in
            checkedIn.withLock { $0 = worker }
            flag.signal()
        })
        checkIn.serve(port)
        try port.schedule(in: BackgroundLoop.shared.loop, forMode: .default)

        let worker = try d.startPortctl(["checkin", server, "--name", "w1", "--count", "1", "--json"])
        #expect(flag.wait(), "no check-in")
        let w = try #require(checkedIn.withLock { $0 })
        #expect(w.name == "w1")
        #expect(w.credentials?.pid == worker.pid)
        // From now on the server can send to the worker.
        #expect(try w.port.send(PCPortMessage(msgid: 5, strings: ["work"])) == .sent)
        #expect(try worker.waitForExit() == 0, "\(worker.standardError)")
        let m = try jsonObject(worker.standardOutput)
        #expect(int(m, "msgid") == 5 && int(m, "pid") == Int(getpid()))
        #expect((m["components"] as? [[String: Any]])?.first?["text"] as? String == "work")

        // A worker whose server goes away ends with 74.
        let orphan = try d.startPortctl(["checkin", server])
        try orphan.waitForStandardError(containing: "checked in to \(server)")
        port.invalidate()
        #expect(try orphan.waitForExit() == 74)
        #expect(orphan.standardError.contains("went away"))
    }

    @Test func checkInHandshakeBetweenTwoPortctls() throws {
        let d = try DaemonProcess.started()
        let server = uniqueName("hub")
        // The server answers each check-in through the worker's port (the check-in's reply port).
        let hub = try d.startPortctl(["listen", server, "--count", "1", "--exec", #"printf 'welcome %s' "$(cat)""#])
        try hub.waitForStandardError(containing: "listening on \(server)")
        let worker = try d.portctl(["checkin", server, "--name", "w1", "--count", "1", "--timeout", "20"])
        #expect(worker.status == 0, "\(worker.standardError)")
        let lines = worker.standardOutput.split(separator: "\n")
        #expect(lines.first?.hasPrefix("msgid=100 from pid=\(hub.pid) ") == true, "\(worker.standardOutput)")
        #expect(lines.last == #"  "welcome w1""#)
        #expect(try hub.waitForExit() == 0)
    }

    @Test func quietAndJsonForSend() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("quiet")
        let service = try d.startPortctl(["listen", svc, "--count", "2", "--quiet", "--exec", "cat"])
        let sent = try d.portctl(["send", svc, "--msgid", "3", "--data", "x", "--json", "--wait", "--timeout", "20"])
        #expect(try jsonObject(sent.standardOutput)["sent"] as? Bool == true)
        let quiet = try d.portctl(["request", svc, "--msgid", "3", "--data", "x", "-q"])
        #expect(quiet.status == 0 && quiet.standardOutput.isEmpty && quiet.standardError.isEmpty)
        #expect(try service.waitForExit() == 0)
        #expect(service.standardError.isEmpty)
    }
}

/// Runs a program to completion and returns its standard output.
func runToCompletionOf(_ executable: String, _ arguments: [String]) throws -> String {
    let child = try ChildProcess(executable: executable, arguments: arguments, environment: ChildProcess.cleanEnvironment())
    #expect(try child.waitForExit() == 0)
    return child.standardOutput
}
