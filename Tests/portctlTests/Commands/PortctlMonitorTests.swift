// PortctlMonitorTests: `portctl monitor` through the real binaries, against
// the real portd: owner changes with timestamps (text and JSON); the
// messages of a name whose owner runs `listen --monitorable` (text and
// JSON, a large component's descriptor counted and not passed), and of the
// next owner's when the first goes; nothing of
// a port that is not monitorable (77); a monitor of another uid (setpriv)
// refused by the owner's port (77); a stopped monitor neither slows the
// owner nor misses copies without being told how many; replies shown after
// their requests, and --match's filters (msgid, uid, direction).

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct PortctlMonitorTests {
    /// Whether `line` starts with a time as "2026-11-24 08:31:35.963 UTC ".
    static func startsWithTime(_ line: String) -> Bool {
        line.prefixMatch(of: #/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC /#) != nil
    }

    /// The wall clock in Unix milliseconds, as portctl stamps records.
    static func nowMilliseconds() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return UInt64(t.tv_sec) * 1000 + UInt64(t.tv_nsec) / 1_000_000
    }

    @Test func ownerChangesAndMessagesWithTimestampsInJSON() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("mon")
        let before = Self.nowMilliseconds()
        // registered, two messages, the request's (empty) reply, released.
        let monitor = try d.startPortctl(["monitor", svc, "--json", "--count", "5", "--max-bytes", "8"])
        try monitor.waitForStandardError(containing: "monitoring \(svc)")
        let owner = try d.startPortctl(["listen", svc, "--monitorable", "--count", "2", "--quiet"])
        try monitor.waitForStandardError(containing: "monitoring the messages of \(svc)")
        let big = try TemporaryDirectory()
        let file = big.appending("big")
        // Larger than a record: it travels as a sealed memfd (a descriptor).
        try Data(repeating: UInt8(ascii: "b"), count: 300_000).write(to: URL(fileURLWithPath: file))
        #expect(try d.portctl(["send", svc, "--msgid", "5", "--data", "hello", "--hex", "00ff"]).status == 0)
        #expect(try d.portctl(["request", svc, "--msgid", "6", "--file", file]).status == 0)
        #expect(try owner.waitForExit() == 0, "\(owner.standardError)")
        #expect(try monitor.waitForExit() == 0, "\(monitor.standardError)")
        let after = Self.nowMilliseconds()
        let records = try jsonLines(monitor.standardOutput)
        try #require(records.count == 5, "\(monitor.standardOutput)")
        #expect(records.map { $0["event"] as? String } == ["registered", "message", "message", "reply", "released"])
        for r in records {
            let ms = try #require((r["time_ms"] as? NSNumber)?.uint64Value)
            #expect(ms >= before && ms <= after, "\(r)")
            #expect((r["time"] as? String)?.wholeMatch(of: #/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/#) != nil, "\(r)")
            #expect(r["name"] as? String == svc)
        }
        #expect(int(records[0]["new"] as? [String: Any], "pid") == Int(owner.pid))
        #expect(int(records[4]["old"] as? [String: Any], "pid") == Int(owner.pid))
        let first = records[1]
        #expect(int(first, "msgid") == 5 && first["request"] as? Bool == false && int(first, "descriptors") == 0)
        #expect(int(first, "uid") == Int(getuid()) && int(first, "sequence") == 1)
        let delivered = try #require((first["delivered_ms"] as? NSNumber)?.uint64Value)
        #expect(delivered >= before && delivered <= (first["time_ms"] as? NSNumber)?.uint64Value ?? 0)
        let parts = try #require(first["components"] as? [[String: Any]])
        #expect(parts.count == 2)
        #expect(parts.first?["text"] as? String == "hello" && int(parts.first, "length") == 5)
        #expect(parts.last?["base64"] as? String == "AP8=")
        let second = records[2]
        #expect(int(second, "msgid") == 6 && second["request"] as? Bool == true && int(second, "sequence") == 2)
        // The memfd is counted, never passed; the monitor is shown its length and first bytes.
        #expect(int(second, "descriptors") == 1, "\(second)")
        let large = try #require((second["components"] as? [[String: Any]])?.first)
        #expect(int(large, "length") == 300_000 && large["truncated"] as? Bool == true)
        #expect(large["text"] as? String == "bbbbbbbb")
        // listen without --exec answers a request with an empty reply: shown with its request's number.
        let reply = records[3]
        #expect(int(reply, "msgid") == 6 && int(reply, "answers") == 2 && int(reply, "pid") == int(second, "pid"), "\(reply)")
        #expect((reply["components"] as? [Any])?.isEmpty == true)
    }

    @Test func repliesFollowTheirRequestsAndFiltersMatch() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("conv")
        func monitor(_ extra: [String]) throws -> ChildProcess {
            let m = try d.startPortctl(["monitor", svc] + extra)
            try m.waitForStandardError(containing: "monitoring \(svc)")
            return m
        }
        // registered, request 1, its reply, message 3, request 2, its reply.
        let all = try monitor(["--json", "--count", "6"])
        let out = try monitor(["--json", "--count", "3", "--match", "direction=out"])
        let two = try monitor(["--count", "3", "--match", "msgid=2", "--match", "msgid=7"])
        let nobody = try monitor(["--count", "2", "--match", "uid=\(getuid() + 1)", "--match", "direction=in"])
        let owner = try d.startPortctl(["listen", svc, "--monitorable", "--count", "3", "--exec", "tr a-z A-Z"])
        for m in [all, out, two, nobody] { try m.waitForStandardError(containing: "monitoring the messages of \(svc)") }
        #expect(try d.portctl(["request", svc, "--msgid", "1", "--data", "hello"]).standardOutput == "\"HELLO\"\n")
        #expect(try d.portctl(["send", svc, "--msgid", "3", "--data", "oneway"]).status == 0)
        #expect(try d.portctl(["request", svc, "--msgid", "2", "--data", "world"]).standardOutput == "\"WORLD\"\n")
        #expect(try owner.waitForExit() == 0, "\(owner.standardError)")
        for m in [all, out, two, nobody] { #expect(try m.waitForExit() == 0, "\(m.standardError)") }

        let records = try jsonLines(all.standardOutput)
        #expect(records.map { $0["event"] as? String } == ["registered", "message", "reply", "message", "message", "reply"])
        func text(_ r: [String: Any]) -> String? { (r["components"] as? [[String: Any]])?.first?["text"] as? String }
        #expect(records.map(text) == [nil, "hello", "HELLO", "oneway", "world", "WORLD"])
        #expect(int(records[1], "sequence") == 1 && int(records[2], "answers") == 1)
        #expect(int(records[4], "sequence") == 3 && int(records[5], "answers") == 3)
        #expect(int(records[2], "pid") == int(records[1], "pid") && int(records[5], "pid") == int(records[4], "pid"))
        #expect(int(records[2], "uid") == Int(getuid()))

        let replies = try jsonLines(out.standardOutput)
        #expect(replies.map { $0["event"] as? String } == ["registered", "reply", "reply"])
        #expect(replies.dropFirst().map(text) == ["HELLO", "WORLD"])

        let all2 = two.standardOutput.split(separator: "\n").map(String.init)
        let lines = all2.filter { !$0.hasPrefix("  ") }.map { String($0.drop { $0 != "U" }.dropFirst(4)) }
        let requester = try #require(int(records[4], "pid"))
        #expect(lines == [
            "registered \(svc) new=\(owner.pid)/\(getuid())",
            "message \(svc) msgid=2 from pid=\(requester) uid=\(getuid()) gid=\(getgid()) (request #3)",
            "reply \(svc) msgid=2 to pid=\(requester) uid=\(getuid()) gid=\(getgid()) (request #3)",
        ], "\(two.standardOutput)")
        #expect(all2.filter { $0.hasPrefix("  ") } == [#"  "world""#, #"  "WORLD""#])

        // Nothing matched uid+1: the owner changes only.
        let changes = nobody.standardOutput.split(separator: "\n").map { String($0.drop { $0 != "U" }.dropFirst(4)) }
        #expect(changes == ["registered \(svc) new=\(owner.pid)/\(getuid())", "released \(svc) old=\(owner.pid)/\(getuid())"])

        // A bad --match is a usage error naming the key.
        let bad = try d.portctl(["monitor", svc, "--match", "sender=1"])
        #expect(bad.status == 64 && bad.standardError.contains("--match: unknown key 'sender'"), "\(bad.standardError)")
    }

    @Test func ownerChangesAndMessagesInText() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("montext")
        let monitor = try d.startPortctl(["monitor", svc, "--count", "3"])
        try monitor.waitForStandardError(containing: "monitoring \(svc)")
        let owner = try d.startPortctl(["listen", svc, "--monitorable", "--count", "1", "--quiet"])
        try monitor.waitForStandardError(containing: "monitoring the messages of \(svc)")
        #expect(try d.portctl(["send", svc, "--msgid", "9", "--data", "a\nb"]).status == 0)
        #expect(try owner.waitForExit() == 0, "\(owner.standardError)")
        #expect(try monitor.waitForExit() == 0, "\(monitor.standardError)")
        let lines = monitor.standardOutput.split(separator: "\n").map(String.init)
        try #require(lines.count == 4, "\(monitor.standardOutput)")
        for i in [0, 1, 3] { #expect(Self.startsWithTime(lines[i]), "\(lines[i])") }
        func rest(_ line: String) -> Substring { line.drop(while: { $0 != "U" }).dropFirst(4) }
        #expect(rest(lines[0]) == "registered \(svc) new=\(owner.pid)/\(getuid())")
        #expect(rest(lines[1]).hasPrefix("message \(svc) msgid=9 from pid="), "\(lines[1])")
        #expect(lines[2] == #"  "a\nb""#)
        #expect(rest(lines[3]) == "released \(svc) old=\(owner.pid)/\(getuid())")
    }

    @Test func theNextOwnerIsMonitoredToo() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("next")
        let monitor = try d.startPortctl(["monitor", svc, "--json", "--count", "6"])
        try monitor.waitForStandardError(containing: "monitoring \(svc)")
        var owners: [ChildProcess] = []
        for data in ["first", "second"] {
            let owner = try d.startPortctl(["listen", svc, "--monitorable", "--count", "1", "--quiet"])
            try monitor.waitForStandardError(containing: "monitoring the messages of \(svc) (owner pid \(owner.pid))")
            #expect(try d.portctl(["send", svc, "--msgid", "1", "--data", data]).status == 0)
            #expect(try owner.waitForExit() == 0, "\(owner.standardError)")
            owners.append(owner)
        }
        #expect(try monitor.waitForExit() == 0, "\(monitor.standardError)")
        let records = try jsonLines(monitor.standardOutput)
        #expect(records.map { $0["event"] as? String } == ["registered", "message", "released", "registered", "message", "released"])
        let texts = records.compactMap { ($0["components"] as? [[String: Any]])?.first?["text"] as? String }
        #expect(texts == ["first", "second"])
        #expect(int(records[3]["new"] as? [String: Any], "pid") == Int(owners[1].pid))
    }

    @Test func aPortThatIsNotMonitorableShowsNothing() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("private")
        let owner = try d.startPortctl(["listen", svc, "--count", "1", "--quiet"])
        _ = try d.portctl(["wait", svc, "--timeout", "20"])
        let text = try d.portctl(["monitor", svc])
        #expect(text.status == 77, "\(text.standardError)")
        #expect(text.standardOutput.isEmpty)
        #expect(
            text.standardError
                == "portctl: cannot monitor the messages of \(svc) (pid \(owner.pid)): its owner does not allow monitoring\n")
        let json = try d.portctl(["monitor", svc, "--json"])
        #expect(json.status == 77)
        #expect(json.standardOutput.isEmpty)
        #expect(try jsonObject(json.standardError)["error"] as? String == "permission-denied")
        // The owner saw no SUBSCRIBE: the next message is its first.
        #expect(try d.portctl(["send", svc, "--msgid", "3", "--data", "only"]).status == 0)
        #expect(try owner.waitForExit() == 0)
    }

    @Test func aMonitorOfAnotherUIDIsRefused() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let dir = try TemporaryDirectory()
        try FileSystem.setPermissions(dir.path, 0o755)
        let config = dir.appending("portd.conf")
        try "".write(toFile: config, atomically: true, encoding: .utf8)
        let d = try DaemonProcess.started(socket: dir.appending("portd.sock"), arguments: ["--system", "--config", config])
        let svc = uniqueName("mine")
        let owner = try d.startPortctl(["listen", svc, "--monitorable", "--count", "1", "--json"])
        _ = try d.portctl(["wait", svc, "--timeout", "20"])
        let nobody = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", try Binaries.portctl, "monitor", svc],
            environment: ChildProcess.cleanEnvironment(d.environment))
        #expect(try nobody.waitForExit() == 77, "\(nobody.standardError)")
        #expect(nobody.standardOutput.isEmpty)
        #expect(
            nobody.standardError.contains("only uid 0 (the owner's) or root may monitor this port, not uid 65534"),
            "\(nobody.standardError)")
        // The owner's own uid is let in, and the owner sees the message as usual.
        let mine = try d.startPortctl(["monitor", svc, "--count", "1", "--json"])
        try mine.waitForStandardError(containing: "monitoring the messages of \(svc)")
        #expect(try d.portctl(["send", svc, "--msgid", "4", "--data", "x"]).status == 0)
        #expect(try mine.waitForExit() == 0, "\(mine.standardError)")
        #expect(try jsonObject(mine.standardOutput)["event"] as? String == "message")
        #expect(try owner.waitForExit() == 0)
        #expect(try jsonObject(owner.standardOutput)["msgid"] as? Int == 4)
    }

    @Test func aStoppedMonitorDoesNotSlowTheOwnerAndIsToldWhatItMissed() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("slow")
        // Enough ~60 KB copies to fill the monitor's queue several times
        // over: a socket's send buffer (the owner's end of the monitor's
        // socketpair) is net.core.wmem_default.
        let sendBuffer = (try? String(contentsOfFile: "/proc/sys/net/core/wmem_default", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 212_992
        let sent = sendBuffer / 60_000 + 8
        let owner = try d.startPortctl([
            "listen", svc, "--monitorable", "--count", "\(sent + 1)", "--json", "--max-bytes", "4",
        ])
        _ = try d.portctl(["wait", svc, "--timeout", "20"])
        let monitor = try d.startPortctl(["monitor", svc, "--json", "--max-bytes", "8"])
        try monitor.waitForStandardError(containing: "monitoring the messages of \(svc)")
        let dir = try TemporaryDirectory()
        let file = dir.appending("filler")
        // Each copy carries ~60 KB: a few fill the monitor's queue.
        try Data(repeating: UInt8(ascii: "f"), count: 60_000).write(to: URL(fileURLWithPath: file))
        monitor.signal(SIGSTOP)
        for i in 1...sent {
            let r = try d.portctl(["send", svc, "--msgid", "1", "--data", "m\(i)", "--file", file])
            #expect(r.status == 0, "\(r.standardError)")
        }
        // The owner handled every message while the monitor could not read.
        try owner.waitForStandardOutput(containing: #""text":"m\#(sent)""#)
        monitor.signal(SIGCONT)
        // Once the monitor has read its queue, the owner tells it how many copies it dropped.
        try monitor.waitForStandardOutput(containing: #""event":"missed""#)
        #expect(try d.portctl(["send", svc, "--msgid", "2", "--data", "last"]).status == 0)
        try monitor.waitForStandardOutput(containing: #""text":"last""#)
        #expect(try owner.waitForExit() == 0, "\(owner.standardError)")
        try monitor.waitForStandardOutput(containing: #""event":"released""#)
        monitor.signal(SIGTERM)
        _ = try monitor.waitForExit()
        let records = try jsonLines(monitor.standardOutput)
        let messages = records.filter { $0["event"] as? String == "message" }
        let missed = records.filter { $0["event"] as? String == "missed" }.compactMap { int($0, "missed") }
        #expect(missed.count == 1, "\(monitor.standardOutput)")
        #expect(missed.reduce(0, +) > 0)
        // Every message delivered is either shown or counted as missed.
        #expect(messages.count + missed.reduce(0, +) == sent + 1, "\(monitor.standardOutput)")
        let sequences = messages.compactMap { int($0, "sequence") }
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "\(sequences)")
        #expect(int(messages.last, "sequence") == sent + 1)
        // The missed record comes before the copies that followed the gap.
        let missedAt = try #require(records.firstIndex { $0["event"] as? String == "missed" })
        #expect(records[(missedAt + 1)...].contains { int($0, "sequence") == sent + 1 })
    }
}
