// PortctlNameTests: portctl's name verbs through the real binary, against
// the real portd (DaemonProcess): register -- COMMAND with a Python child that
// takes its receive right from LISTEN_FDS (and a relayed SIGTERM), watch
// while an owner is killed with kill -9, list, lookup with a queued owner,
// wait, status; and every documented exit status of these verbs.

import Foundation
import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport

@Suite struct PortctlNameTests {
    /// A service in Python that takes its socket as sd_listen_fds(3) says,
    /// serves one message (decoding the record by portd-protocol(7)), and
    /// exits with 3.
    static let pythonService = #"""
        import os, socket, struct, sys
        assert os.environ["LISTEN_PID"] == str(os.getpid())
        assert int(os.environ["LISTEN_FDS"]) == 1
        name = os.environ["LISTEN_FDNAMES"]
        listener = socket.socket(fileno=3)
        conn, _ = listener.accept()
        record = conn.recv(196608)
        magic, version, flags, n, msgid = struct.unpack_from("<4sBBHI", record)
        assert magic == b"port" and version == 1
        kind, length = struct.unpack_from("<B3xI", record, 12)
        data = record[12 + 8 * n:12 + 8 * n + length]
        print("%s got msgid=%d data=%s" % (name, msgid, data.decode()), flush=True)
        sys.exit(3)
        """#

    @Test func registerHandsTheNameToAPythonChild() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("py")
        let holder = try d.startPortctl(["register", svc, "--", "python3", "-c", Self.pythonService])
        let send = try d.portctl(["send", svc, "--wait", "--timeout", "20", "--msgid", "7", "--data", "hello"])
        #expect(send.status == 0, "\(send.standardError)")
        #expect(try holder.waitForExit() == 3, "portctl passes the command's status on: \(holder.standardError)")
        #expect(holder.standardOutput == "\(svc) got msgid=7 data=hello\n")
        // The name went with the command.
        #expect(try d.portctl(["lookup", svc]).status == 67)
    }

    @Test func registerRelaysSIGTERM() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("term")
        let script = """
            import signal, sys
            def term(*_):
                print("TERM", flush=True)
                sys.exit(9)
            signal.signal(signal.SIGTERM, term)
            print("ready", flush=True)
            while True:
                signal.pause()
            """
        let holder = try d.startPortctl(["register", svc, "--", "python3", "-c", script])
        try holder.waitForStandardOutput(containing: "ready\n")  // the whole line: print may write "\n" separately
        holder.signal(SIGTERM)
        #expect(try holder.waitForExit() == 9)
        #expect(holder.standardOutput == "ready\nTERM\n")
    }

    /// portd crashes while `register` runs its command: portctl notices,
    /// stops the command with SIGTERM and exits 74, as listen does (issue 12, item 1).
    @Test func registerExitsWhenPortdGoesAway() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("orphan")
        let script = """
            import signal, sys
            signal.signal(signal.SIGTERM, lambda *_: (print("TERM", flush=True), sys.exit(0)))
            print("ready", flush=True)
            signal.pause()
            """
        let holder = try d.startPortctl(["register", svc, "--", "python3", "-c", script])
        try holder.waitForStandardOutput(containing: "ready\n")
        _ = try d.stop(with: SIGKILL)
        #expect(try holder.waitForExit() == 74, "\(holder.standardError)")
        #expect(holder.standardOutput == "ready\nTERM\n")
        #expect(holder.standardError.contains("portd went away"), "\(holder.standardError)")
    }

    @Test func watchSeesAnOwnerKilledWithSIGKILL() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("victim")
        let watcher = try d.startPortctl(["watch", svc, "--count", "2", "--json"])
        try watcher.waitForStandardError(containing: "watching \(svc)")
        let owner = try d.startPortctl(["listen", svc])
        try owner.waitForStandardError(containing: "listening on \(svc)")
        kill(owner.pid, SIGKILL)
        #expect(try owner.waitForExit() == 128 + SIGKILL)
        #expect(try watcher.waitForExit() == 0, "\(watcher.standardError)")
        let events = try jsonLines(watcher.standardOutput)
        try #require(events.count == 2)
        #expect(events[0]["event"] as? String == "registered" && events[0]["name"] as? String == svc)
        #expect(int(events[0]["new"] as? [String: Any], "pid") == Int(owner.pid))
        #expect(events[0]["old"] is NSNull)
        #expect(events[1]["event"] as? String == "released")
        #expect(int(events[1]["old"] as? [String: Any], "pid") == Int(owner.pid))
        // Stamped as monitor's records are: the time as text and in Unix milliseconds.
        let now = Int(Date().timeIntervalSince1970 * 1000)
        for e in events {
            #expect((int(e, "time_ms") ?? 0) > now - 60_000 && (int(e, "time_ms") ?? 0) <= now, "\(e)")
            #expect((e["time"] as? String)?.hasSuffix(" UTC") == true, "\(e)")
        }
        // A new owner can take the name.
        guard case .registered = try d.client().register(svc) else {
            Issue.record("the name was not free after kill -9")
            return
        }
    }

    @Test func replacementThroughPortctl() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("swap")
        let watcher = try d.startPortctl(["watch", svc, "--count", "2", "--socket", d.socketPath], environment: ["PORTD_SOCKET": ""])
        try watcher.waitForStandardError(containing: "watching \(svc)")
        let first = try d.startPortctl(["listen", svc, "--allow-replacement"])
        try first.waitForStandardError(containing: "listening on \(svc)")
        let second = try d.startPortctl(["listen", svc, "--replace", "--no-queue", "--count", "1", "--json"])
        try second.waitForStandardError(containing: "listening on \(svc)")
        #expect(try d.portctl(["send", svc, "--msgid", "4", "--data", "to the new owner"]).status == 0)
        #expect(try second.waitForExit() == 0, "\(second.standardError)")
        #expect((try jsonObject(second.standardOutput)["components"] as? [[String: Any]])?.first?["text"] as? String == "to the new owner")
        #expect(try watcher.waitForExit() == 0)
        // Each line starts with the UTC time it was received, as monitor's do.
        let lines = watcher.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.map { String($0.drop { $0 != "U" }.dropFirst(4)) } == [
            "registered \(svc) new=\(first.pid)/\(getuid())",
            "replaced \(svc) old=\(first.pid)/\(getuid()) new=\(second.pid)/\(getuid())",
        ], "\(lines)")
        for line in lines { #expect(line.wholeMatch(of: /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC .*/) != nil, "\(line)") }
        // portd tells the replaced owner (NAME_LOST): listen ends by itself.
        #expect(try first.waitForExit() == 74)
        #expect(first.standardError.contains("\(svc) was taken over by pid \(second.pid) uid \(getuid())"), "\(first.standardError)")
        #expect(first.standardOutput.isEmpty, "the replaced owner got nothing")
    }

    @Test func aDeclaredPortKeepsWhatWasSentBeforeItsService() throws {
        let name = uniqueName("spool")
        let d = try DaemonProcess.started(declaring: [name])
        // Sent while no service runs: it waits in the kernel's queue.
        #expect(try d.portctl(["send", name, "--msgid", "1", "--data", "early"]).status == 0)
        let service = try d.portctl(["listen", name, "--declared", "--count", "1", "--json", "--timeout", "20"])
        #expect(service.status == 0, "\(service.standardError)")
        #expect((try jsonObject(service.standardOutput)["components"] as? [[String: Any]])?.first?["text"] as? String == "early")
        #expect(try d.portctl(["listen", uniqueName("undeclared"), "--declared"]).status == 67)
        // list marks it declared, owned by portd, with the pid of the service that checked in.
        let listed = try jsonLines(try d.portctl(["list", "--json"]).standardOutput)
        let entry = try #require(listed.first { $0["name"] as? String == name })
        #expect(int(entry, "pid") == Int(d.pid) && int(entry, "client") == 0 && entry["declared"] as? Bool == true)
        #expect(int(entry, "service_pid") != nil && int(entry, "service_pid") != Int(d.pid), "\(entry)")
        let row = try d.portctl(["list"]).standardOutput.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        #expect(row?.split(separator: " ").suffix(2).first == "yes", "\(row ?? "")")
    }

    @Test func listenWatchAndQueueEndWhenPortdGoes() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("orphaned")
        let listener = try d.startPortctl(["listen", svc])
        try listener.waitForStandardError(containing: "listening on \(svc)")
        let queued = try d.startPortctl(["listen", svc])
        try queued.waitForStandardError(containing: "queued for it")
        let watcher = try d.startPortctl(["watch"])
        try watcher.waitForStandardError(containing: "watching every name")
        #expect(try d.stop() == 0)
        for (what, child) in [("listen", listener), ("queued listen", queued), ("watch", watcher)] {
            #expect(try child.waitForExit() == 74, "\(what): \(child.standardError)")
        }
        #expect(listener.standardError.contains("portd closed the connection; \(svc) is no longer registered"))
    }

    @Test func watchEveryNameInText() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("any")
        let watcher = try d.startPortctl(["watch", "--count", "1"])
        try watcher.waitForStandardError(containing: "watching every name")
        let client = try d.client()
        _ = try client.register(svc)
        #expect(try watcher.waitForExit() == 0)
        let line = watcher.standardOutput
        #expect(line.hasSuffix(" UTC registered \(svc) new=\(getpid())/\(getuid())\n"), "\(line)")
        #expect(line.prefixMatch(of: #/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC /#) != nil, "\(line)")
    }

    @Test func listLookupWithAQueueAndStatus() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("listed")
        let empty = try d.portctl(["list", "--json"])
        #expect(empty.status == 0 && empty.standardOutput.isEmpty)

        let owner = try d.client()
        _ = try owner.register(svc)
        let queued = try d.startPortctl(["listen", svc, "--count", "1"])
        try queued.waitForStandardError(containing: "\(svc) is taken; queued for it")

        let list = try d.portctl(["list"])
        #expect(list.status == 0)
        let rows = list.standardOutput.split(separator: "\n")
        #expect(
            rows.first?.split(separator: " ", omittingEmptySubsequences: true)
                == ["NAME", "PID", "UID", "SINCE", "QUEUED", "DECLARED", "SERVICE"])
        #expect(rows.contains { $0.hasPrefix(svc + " ") && $0.split(separator: " ").suffix(3) == ["1", "-", "-"] && $0.contains(" UTC") })
        let listed = try jsonLines(try d.portctl(["list", "--json"]).standardOutput)
        #expect(listed.contains {
            $0["name"] as? String == svc && int($0, "pid") == Int(getpid()) && int($0, "queue_length") == 1 && $0["queued"] == nil
                && $0["declared"] as? Bool == false && $0["service_pid"] is NSNull && (int($0, "client") ?? 0) > 0
        })

        let lookup = try d.portctl(["lookup", svc, "--json"])
        let o = try jsonObject(lookup.standardOutput)
        #expect(int(o, "pid") == Int(getpid()) && int(o, "uid") == Int(getuid()))
        #expect((o["queued"] as? [[String: Any]])?.map { int($0, "pid") } == [Int(queued.pid)])
        let text = try d.portctl(["lookup", svc])
        #expect(textField(text.standardOutput, "owner") == "pid \(getpid()) uid \(getuid())")
        #expect(textField(text.standardOutput, "queued") == "pid \(queued.pid) uid \(getuid())")

        let status = try d.portctl(["status", "--json"])
        let s = try jsonObject(status.standardOutput)
        #expect(s["socket"] as? String == d.socketPath && int(s, "pid") == Int(d.pid))
        #expect(int(s, "names") == 1 && (int(s, "clients") ?? 0) >= 2)
        let statusText = try d.portctl(["status"])
        #expect(textField(statusText.standardOutput, "pid") == String(d.pid))
        #expect(textField(statusText.standardOutput, "names") == "1")
        #expect(textField(statusText.standardOutput, "version") == PortdVersion.current)

        // The queued listener gets the name when the owner goes, and serves.
        owner.invalidate()
        try queued.waitForStandardError(containing: "listening on \(svc)")
        #expect(try d.portctl(["send", svc, "--msgid", "1"]).status == 0)
        #expect(try queued.waitForExit() == 0)
    }

    @Test func waitReturnsWhenTheNameAppears() throws {
        let d = try DaemonProcess.started()
        let svc = uniqueName("awaited")
        let waiter = try d.startPortctl(["wait", svc, "--timeout", "20"])
        let owner = try d.client()
        let registration = try owner.register(svc)
        defer { withExtendedLifetime(registration) {} }
        #expect(try waiter.waitForExit() == 0, "\(waiter.standardError)")
        #expect(try d.portctl(["wait", svc]).status == 0)
        let json = try d.portctl(["wait", svc, "--json"])
        #expect(int(try jsonObject(json.standardOutput), "pid") == Int(getpid()))
    }

    @Test func exitStatuses() throws {
        let d = try DaemonProcess.started()
        let missing = uniqueName("missing")
        // 67: not registered.
        for line in [["lookup", missing], ["send", missing, "--msgid", "1"], ["request", missing, "--msgid", "1"], ["checkin", missing]] {
            let r = try d.portctl(line)
            #expect(r.status == 67, "\(line)")
            #expect(r.standardError == "portctl: \(missing) is not registered\n", "\(line)")
        }
        // 75: nothing within --timeout.
        for line in [
            ["wait", missing, "--timeout", "0.2"], ["send", missing, "--msgid", "1", "--wait", "--timeout", "0.2"],
            ["listen", uniqueName("idle"), "--timeout", "0.2"], ["watch", missing, "--timeout", "0.2"],
            ["monitor", missing, "--timeout", "0.2"], ["monitor", "--timeout", "0.2", "--json"],
        ] {
            #expect(try d.portctl(line).status == 75, "\(line)")
        }
        // 75: a port that never answers a request.
        let mute = uniqueName("mute")
        let client = try d.client()
        guard case .registered(let port) = try client.register(mute) else {
            Issue.record("not registered")
            return
        }
        let silent = try d.portctl(["request", mute, "--msgid", "1", "--timeout", "0.3"])
        #expect(silent.status == 75)
        #expect(silent.standardError.contains("no reply from \(mute) within 0.3 s"))
        withExtendedLifetime(port) {}
        // 1: taken, and asked not to queue.
        let taken = try d.portctl(["listen", mute, "--no-queue"])
        #expect(taken.status == 1)
        #expect(taken.standardError.contains("already owned by pid \(getpid())"))
        // 64: usage.
        #expect(try d.portctl(["send", "bad/name", "--msgid", "1"]).status == 64)
        #expect(try d.portctl(["send", mute, "--msgid", "1", "--file", "/nonexistent/x"]).status == 64)
    }

    @Test func withoutADaemonEveryVerbExits69() throws {
        let dir = try TemporaryDirectory()
        let environment = ["PORTD_SOCKET": dir.appending("portd.sock")]
        for line in [
            ["status"], ["list"], ["lookup", "x"], ["wait", "x"], ["watch"], ["send", "x", "--msgid", "1"],
            ["request", "x", "--msgid", "1"], ["listen", "x"], ["register", "x", "--", "true"], ["checkin", "x"],
            ["monitor"], ["monitor", "x"],
        ] {
            let r = try runPortctl(line, environment: environment)
            #expect(r.status == 69, "\(line): \(r.standardError)")
            #expect(r.standardError == "portctl: portd is not running at \(dir.appending("portd.sock"))\n")
        }
    }

    /// Without XDG_RUNTIME_DIR the runtime directory /run/user/$UID is
    /// used only when private (portctl(1), ENVIRONMENT); open to others,
    /// it is refused with 77. As a uid of the test's own, so that its
    /// /run/user/$UID is the test's: no one else's portd lives there.
    @Test func aRuntimeDirectoryOpenToOthersExits77() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let uid = 3_000_000_000 + UInt32(getpid())
        let dir = "/run/user/\(uid)"
        _ = mkdir("/run/user", 0o755)
        rmdir(dir)
        try #require(mkdir(dir, 0o755) == 0 && chown(dir, uid, uid) == 0 && chmod(dir, 0o755) == 0)
        defer { rmdir(dir) }
        func status(_ extra: [String] = []) throws -> (code: Int32, standardError: String) {
            let child = try ChildProcess(
                executable: "/usr/bin/setpriv",
                arguments: ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", try Binaries.portctl, "status"] + extra,
                environment: ChildProcess.cleanEnvironment())
            return (try child.waitForExit(), child.standardError)
        }
        let open = try status()
        #expect(open.code == 77)
        #expect(open.standardError.contains("\(dir) is not a private directory (mode 755 lets others in; it must be 700)"),
                "\(open.standardError)")
        let json = try status(["--json"])
        #expect(json.code == 77)
        #expect(json.standardError.hasPrefix(#"{"error":"permission-denied","status":77,"#), "\(json.standardError)")
        // A socket named by --socket is not judged by its directory.
        #expect(try status(["--socket", "\(dir)/portd.sock"]).code == 69)
        // Private, the directory passes: no daemon there.
        try #require(chmod(dir, 0o700) == 0)
        #expect(try status().code == 69)
    }

    @Test func aSocketClosedToUsExits77() throws {
        // As another user, in a directory only root may enter (mkdtemp: 0700).
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let fd = try UnixSocket.makeSocket()  // open to the end
        try UnixSocket.bind(fd, to: UnixSocketAddress(path: socket))
        try UnixSocket.listen(fd)
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let child = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", try Binaries.portctl, "status", "--socket", socket],
            environment: ChildProcess.cleanEnvironment())
        #expect(try child.waitForExit() == 77)
        #expect(child.standardError == "portctl: permission denied connecting to portd at \(socket)\n")
    }
}
