// BridgeEndToEndTests: names across hosts with every part real — a
// nats-server hub with JetStream and a leaf per host (NatsTopology), and on
// each host a portd and a portd-bridge (BridgeHost); the clients are the
// real portctl, PortCore in this process, and nats-py. Everything waits for
// events (READY=1, a name registered or released, a line of output) with a
// deadline, never for a while.

import Foundation
import Glibc
import PortCore
import Synchronization
import PortTestSupport
import Testing

/// Waits until `name` has no owner in `daemon`'s portd (a watch, then a look).
func waitUntilGone(_ name: String, in daemon: DaemonProcess, timeout: Duration = .seconds(15)) throws {
    let client = try daemon.client()
    defer { client.invalidate() }
    let gone = DispatchSemaphore(value: 0)
    let watch = try client.watch(name) { change in if change.newOwner == nil { gone.signal() } }
    defer { watch.cancel() }
    if try client.owner(name) == nil { return }
    let seconds = Double(timeout.components.seconds)
    guard gone.wait(timeout: .now() + seconds) == .success else {
        throw HarnessError.unexpected("\(name) still owned after \(timeout)")
    }
}

/// Waits until `name` is registered in `host`'s portd.
func waitUntilThere(_ name: String, in host: BridgeHost, timeout: Int = 15) throws {
    let r = try host.portctl(["wait", name, "--timeout", "\(timeout)"])
    guard r.status == 0 else {
        throw HarnessError.unexpected("\(name) not imported on \(host.id): \(r.standardError)\n\(host.bridgeLog)")
    }
}

@Suite(.serialized) struct BridgeEndToEndTests {
    static let name = "org.example.echo"

    /// Host A exports org.example.*, host B imports it.
    struct TwoHosts {
        let nats: NatsTopology
        let a: BridgeHost
        let b: BridgeHost
        init() throws {
            nats = try NatsTopology(leaves: 2)
            a = try BridgeHost(id: "host-a", url: nats.leaves[0].url, export: ["org.example.*"])
            b = try BridgeHost(id: "host-b", url: nats.leaves[1].url, import: ["org.example.*"])
        }
    }

    @Test func portctlPortCoreAndNatsPyReachAPortOnAnotherHost() throws {
        let hosts = try TwoHosts()
        let listener = try hosts.a.startPortctl(["listen", Self.name, "--exec", "cat"])
        defer { listener.killAndReap() }
        try waitUntilThere(Self.name, in: hosts.b)

        // Host B's list and lookup say the owner is bridge B, for host A.
        let list = try hosts.b.portctl(["list"])
        #expect(list.standardOutput.hasPrefix("NAME"), "\(list.standardOutput)")
        #expect(list.standardOutput.split(separator: "\n").first?.hasSuffix("SERVICE  HOST") == true, "\(list.standardOutput)")
        #expect(list.standardOutput.contains(" host-a\n"), "\(list.standardOutput)")
        let json = try hosts.b.portctl(["list", "--json"])
        #expect(json.standardOutput.contains("\"pid\":\(hosts.b.bridge!.pid),"), "\(json.standardOutput)")
        #expect(json.standardOutput.contains("\"remote\":\"host-a\""), "\(json.standardOutput)")
        let lookup = try hosts.b.portctl(["lookup", Self.name])
        #expect(lookup.standardOutput.contains("remote:  exported by host-a, bridged by the owner"), "\(lookup.standardOutput)")
        // Host A's own list has no HOST column: nothing there is remote.
        #expect(try hosts.a.portctl(["list"]).standardOutput.split(separator: "\n").first?.hasSuffix("SERVICE") == true)

        // portctl request, from host B.
        for i in 0..<5 {
            let r = try hosts.b.portctl(["request", Self.name, "--msgid", "\(i + 1)", "--data", "hello \(i)", "--timeout", "10"])
            #expect(r.status == 0, "\(r.standardError)\n\(hosts.b.bridgeLog)\n\(hosts.a.bridgeLog)")
            #expect(r.standardOutput == "\"hello \(i)\"\n")
        }

        // portctl send: one-way.
        let sent = try hosts.b.portctl(["send", Self.name, "--msgid", "9", "--data", "one-way from portctl"])
        #expect(sent.status == 0, "\(sent.standardError)")
        try listener.waitForStandardOutput(containing: "one-way from portctl")

        // PortCore in this process, as a program on host B writes it:
        // requests, and one-way messages that arrive in order (one
        // connection is one session), more of them than the window holds.
        let client = try hosts.b.daemon.client()
        defer { client.invalidate() }
        guard let right = try client.lookup(Self.name) else {
            Issue.record("no right for \(Self.name)")
            return
        }
        for i in 0..<3 {
            let result = try right.request(PCPortMessage(msgid: 42, strings: ["swift \(i)"]), receiveTimeout: .seconds(10))
            #expect(result.reply?.msgid == 42)
            #expect(result.reply?.components.first?.string == "swift \(i)")
        }
        let lines = (0..<200).map { "<\($0)>" }
        for line in lines {
            #expect(try right.send(PCPortMessage(msgid: 9, strings: [line]), timeout: .seconds(10)) == .sent)
        }
        try listener.waitForStandardOutput(containing: lines.joined())

        // A plain NATS request from nats-py, to the subject the page gives.
        let py = try PythonVenv.run(
            PythonVenv.script("port_call.py"), [hosts.nats.leaves[1].url, "port.\(Self.name)", "7", "from python"])
        #expect(py.status == 0, "\(py.standardError)")
        #expect(py.standardOutput == "reply 7 from python\n")
    }

    @Test func theReceiverSeesTheBridgeAsSenderAndTheFarSenderAsOrigin() throws {
        let hosts = try TwoHosts()
        // The owner on host A is PortCore in this process.
        let owner = try hosts.a.daemon.client()
        defer { owner.invalidate() }
        let received = Mutex<[PCPortMessage]>([])
        let got = Flag()
        guard case .registered(let port) = try owner.register(Self.name) else {
            Issue.record("not registered")
            return
        }
        port.setHandler { m in
            received.withLock { $0.append(m) }
            got.signal()
            return PCPortMessage(msgid: m.msgid, strings: ["ok"])
        }
        try port.schedule(in: BackgroundLoop.shared.loop, forMode: .default)
        try waitUntilThere(Self.name, in: hosts.b)
        let r = try hosts.b.portctl(["request", Self.name, "--msgid", "5", "--data", "who", "--timeout", "10"])
        #expect(r.status == 0, "\(r.standardError)")
        #expect(got.wait(timeout: .seconds(10)))
        let m = try #require(received.withLock { $0.first })
        // The kernel's credentials: bridge A's, the truth on this host.
        #expect(m.sender?.pid == hosts.a.bridge?.pid)
        // The origin, as bridge A relays what bridge B asserted.
        #expect(m.origin?.host == "host-b")
        #expect(m.origin?.uid == getuid())
        #expect(m.origin?.pid != nil && m.origin?.pid != hosts.a.bridge?.pid)
        #expect(m.origin?.relayedBy?.pid == hosts.a.bridge?.pid)

        // portctl listen prints it.
        port.invalidate()
        _ = try owner.release(Self.name)
        try waitUntilGone(Self.name, in: hosts.b.daemon)
        // portctl listen prints it, and portctl monitor shows it on its copies.
        let monitor = try hosts.a.startPortctl(["monitor", Self.name])
        defer { monitor.killAndReap() }
        try monitor.waitForStandardError(containing: "monitoring \(Self.name)")
        let listener = try hosts.a.startPortctl(["listen", Self.name, "--monitorable"])
        defer { listener.killAndReap() }
        try monitor.waitForStandardError(containing: "monitoring the messages of \(Self.name)")
        try waitUntilThere(Self.name, in: hosts.b)
        #expect(try hosts.b.portctl(["send", Self.name, "--msgid", "6", "--data", "hi"]).status == 0)
        try listener.waitForStandardOutput(containing: "origin \"host=host-b; uid=\(getuid()); gid=")
        try monitor.waitForStandardOutput(containing: "msgid=6 from pid=\(hosts.a.bridge!.pid) uid=")
        try monitor.waitForStandardOutput(containing: "origin \"host=host-b; uid=\(getuid()); gid=")
    }

    @Test func aStoppedOwnerHoldsTheFarSenderBackAndNothingIsLost() throws {
        let hosts = try TwoHosts()
        let listener = try hosts.a.startPortctl(["listen", Self.name])
        defer { listener.killAndReap() }
        try waitUntilThere(Self.name, in: hosts.b)
        let client = try hosts.b.daemon.client()
        defer { client.invalidate() }
        let right = try #require(try client.lookup(Self.name))
        #expect(try right.send(PCPortMessage(msgid: 1, strings: ["m0"]), timeout: .seconds(10)) == .sent)
        try listener.waitForStandardOutput(containing: "\"m0\"")

        // The owner stops reading: its queue fills, bridge A stops
        // acknowledging, bridge B's window fills and it stops reading the
        // sender, whose queue fills: the sender is held back, end to end.
        listener.signal(SIGSTOP)
        var sent = 1
        var heldBack = false
        while sent < 20_000 {
            let r = try right.send(PCPortMessage(msgid: 1, strings: ["m\(sent)"]), timeout: .milliseconds(500))
            if r == .timedOut {
                heldBack = true
                break
            }
            #expect(r == .sent)
            sent += 1
        }
        #expect(heldBack, "\(sent) messages sent without being held back")
        listener.signal(SIGCONT)
        // Every message acknowledged locally arrives, once, in order.
        try listener.waitForStandardOutput(containing: "\"m\(sent - 1)\"", timeout: .seconds(30))
        listener.signal(SIGTERM)
        _ = try listener.waitForExit()
        let seen = listener.standardOutput.split(separator: "\n").compactMap { line -> Int? in
            guard let r = line.range(of: "\"m") else { return nil }
            return Int(line[r.upperBound...].prefix { $0.isNumber })
        }
        #expect(seen == Array(0..<sent), "\(seen.count) of \(sent) seen")
    }

    @Test func malformedAndUnexportedNatsRequestsGetErrorReplies() throws {
        let hosts = try TwoHosts()
        let listener = try hosts.a.startPortctl(["listen", Self.name, "--exec", "cat"])
        defer { listener.killAndReap() }
        try waitUntilThere(Self.name, in: hosts.b)
        let url = hosts.nats.leaves[1].url
        let script = PythonVenv.script("port_call.py")
        // Not a record.
        let bad = try PythonVenv.run(script, [url, "port.\(Self.name)", "1", "", "--raw", "00112233"])
        #expect(bad.status == 1)
        #expect(bad.standardOutput.hasPrefix("error 400 "), "\(bad.standardOutput)")
        // A record announcing a port right (kind 2) it cannot carry.
        let withPort = "706f727401000100" + "01000000" + "0200000000000000"
        let rights = try PythonVenv.run(script, [url, "port.\(Self.name)", "1", "", "--raw", withPort])
        #expect(rights.standardOutput.hasPrefix("error 403 "), "\(rights.standardOutput)")
        // Nobody exports it: no responders.
        let none = try PythonVenv.run(script, [url, "port.org.example.nobody", "1", "x", "--timeout", "2"])
        #expect(none.standardOutput == "no-responders\n")
        // The bridge still serves the good ones.
        let good = try PythonVenv.run(script, [url, "port.\(Self.name)", "3", "still there"])
        #expect(good.standardOutput == "reply 3 still there\n")
        let oneWay = try PythonVenv.run(script, [url, "port.\(Self.name)", "4", "one way", "--one-way"])
        #expect(oneWay.standardOutput == "ack\n")
        try listener.waitForStandardOutput(containing: "one way")
    }

    @Test func theNameGoesWhenItsOwnerDiesAndHoldersSeeTheirRightInvalidated() throws {
        let hosts = try TwoHosts()
        let listener = try hosts.a.startPortctl(["listen", Self.name, "--exec", "cat"])
        try waitUntilThere(Self.name, in: hosts.b)
        let client = try hosts.b.daemon.client()
        defer { client.invalidate() }
        guard let right = try client.lookup(Self.name) else {
            Issue.record("no right")
            return
        }
        #expect(try right.request(PCPortMessage(msgid: 1, strings: ["x"]), receiveTimeout: .seconds(10)).reply != nil)
        let invalidated = DispatchSemaphore(value: 0)
        try right.onInvalidation(in: BackgroundLoop.shared.loop) { invalidated.signal() }

        listener.signal(SIGKILL)
        _ = try listener.waitForExit()
        // Within the documented bound (at once: bridge A sees the owner go
        // and withdraws the name; B's holders are told by the session).
        #expect(invalidated.wait(timeout: .now() + 10) == .success, "\(hosts.b.bridgeLog)")
        try waitUntilGone(Self.name, in: hosts.b.daemon, timeout: .seconds(10))
        let r = try hosts.b.portctl(["request", Self.name, "--msgid", "1", "--data", "x", "--timeout", "2"])
        #expect(r.status == 67 || r.status == 75, "\(r.status) \(r.standardError)")
    }

    @Test func aBridgeKilledAndRestartedBringsItsImportsBack() throws {
        let hosts = try TwoHosts()
        let listener = try hosts.a.startPortctl(["listen", Self.name, "--exec", "cat"])
        defer { listener.killAndReap() }
        try waitUntilThere(Self.name, in: hosts.b)

        // The importing bridge dies: its portd releases what it registered.
        try hosts.b.stopBridge(with: SIGKILL)
        try waitUntilGone(Self.name, in: hosts.b.daemon)
        try hosts.b.startBridge()
        try waitUntilThere(Self.name, in: hosts.b)
        let r = try hosts.b.portctl(["request", Self.name, "--msgid", "1", "--data", "again", "--timeout", "10"])
        #expect(r.status == 0 && r.standardOutput == "\"again\"\n", "\(r.standardError)")

        // The exporting bridge dies: its lease runs out (LeaseTime=3s) and B
        // releases the name; restarted, it exports again.
        try hosts.a.stopBridge(with: SIGKILL)
        try waitUntilGone(Self.name, in: hosts.b.daemon, timeout: .seconds(15))
        try hosts.a.startBridge()
        try waitUntilThere(Self.name, in: hosts.b)
        let r2 = try hosts.b.portctl(["request", Self.name, "--msgid", "1", "--data", "back", "--timeout", "10"])
        #expect(r2.status == 0 && r2.standardOutput == "\"back\"\n", "\(r2.standardError)")
    }

    @Test func anExporterKilledAndRestartedMidStreamLosesNoAnsweredRequestAndDuplicatesNone() throws {
        let hosts = try TwoHosts()
        let owner = try hosts.a.daemon.client()
        defer { owner.invalidate() }
        let delivered = Mutex<[String]>([])
        guard case .registered(let port) = try owner.register(Self.name) else {
            Issue.record("not registered")
            return
        }
        port.setHandler { m in
            let text = m.components.first?.string ?? ""
            delivered.withLock { $0.append(text) }
            return PCPortMessage(msgid: m.msgid, strings: [text])
        }
        try port.schedule(in: BackgroundLoop.shared.loop, forMode: .default)
        try waitUntilThere(Self.name, in: hosts.b)
        var answered: [String] = []
        for i in 0..<30 {
            if i == 10 { try hosts.a.stopBridge(with: SIGKILL) }
            if i == 15 {
                try hosts.a.startBridge()
                try waitUntilThere(Self.name, in: hosts.b)
            }
            let r = try hosts.b.portctl(["request", Self.name, "--msgid", "1", "--data", "r\(i)", "--timeout", "3"])
            if r.status == 0 {
                #expect(r.standardOutput == "\"r\(i)\"\n")
                answered.append("r\(i)")
            } else {
                // A failure is one of portctl's statuses for a dead or absent name, or a timeout: never a hang.
                #expect([67, 74, 75].contains(r.status), "\(r.status) \(r.standardError)")
            }
        }
        let seen = delivered.withLock { $0 }
        #expect(Set(seen).count == seen.count, "delivered twice: \(seen)")
        for a in answered { #expect(seen.contains(a), "\(a) answered but never delivered") }
        #expect(answered.count >= 20, "\(answered)")
        port.invalidate()
    }

    @Test func twoExportersShareANameAndOneTakesOverWhenTheOtherGoes() throws {
        let nats = try NatsTopology(leaves: 3)
        let a = try BridgeHost(id: "host-a", url: nats.leaves[0].url, export: ["org.example.*"])
        let c = try BridgeHost(id: "host-c", url: nats.leaves[2].url, export: ["org.example.*"])
        let b = try BridgeHost(id: "host-b", url: nats.leaves[1].url, import: ["org.example.*"])
        let la = try a.startPortctl(["listen", Self.name, "--exec", "cat"])
        defer { la.killAndReap() }
        let lc = try c.startPortctl(["listen", Self.name, "--exec", "cat"])
        defer { lc.killAndReap() }
        try waitUntilThere(Self.name, in: b)

        // Requests one after another, each on a new connection; bridge A
        // is killed half-way. A request whose session A held fails cleanly
        // (never a hang); asked again, every one is answered, by C.
        var answered = 0
        for i in 0..<40 {
            if i == 20 { try a.stopBridge(with: SIGKILL) }
            var r = try b.portctl(["request", Self.name, "--msgid", "1", "--data", "n\(i)", "--timeout", "5"])
            var tries = 1
            while r.status != 0 && tries < 10 {
                #expect([74, 67, 75].contains(r.status), "\(r.status) \(r.standardError)")
                r = try b.portctl(["request", Self.name, "--msgid", "1", "--data", "n\(i)", "--timeout", "5"])
                tries += 1
            }
            #expect(r.standardOutput == "\"n\(i)\"\n", "\(r.standardError)\n\(b.bridgeLog)")
            if r.status == 0 { answered += 1 }
        }
        #expect(answered == 40)
    }

    @Test func aLeafStoppedForThreeSecondsTimesRequestsOutAndTheyWorkAfter() throws {
        let hosts = try TwoHosts()
        let listener = try hosts.a.startPortctl(["listen", Self.name, "--exec", "cat"])
        defer { listener.killAndReap() }
        try waitUntilThere(Self.name, in: hosts.b)
        #expect(try hosts.b.portctl(["request", Self.name, "--msgid", "1", "--data", "before", "--timeout", "10"]).status == 0)

        try hosts.nats.leaves[0].pause()
        let started = MonotonicInstant.now()
        let during = try hosts.b.portctl(["request", Self.name, "--msgid", "1", "--data", "during", "--timeout", "1"])
        let took = MonotonicInstant.now() - started
        // The request fails within its deadline (a timeout, or the session
        // closed by the bridge), never a hang.
        #expect(during.status != 0)
        #expect(took < .seconds(3), "\(took)")
        hosts.nats.leaves[0].resume()

        // Works again without restarting anything (a new connection, a new session).
        var ok = false
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !ok && MonotonicInstant.now() < deadline {
            let r = try hosts.b.portctl(["wait", Self.name, "--timeout", "10"])
            guard r.status == 0 else { continue }
            ok = try hosts.b.portctl(["request", Self.name, "--msgid", "1", "--data", "after", "--timeout", "3"]).standardOutput == "\"after\"\n"
        }
        #expect(ok, "\(hosts.b.bridgeLog)")
    }
}

@Suite(.serialized) struct BridgeServiceTests {
    @Test func checkConfigNamesEveryErrorAndPassesAGoodFile() throws {
        let dir = try TemporaryDirectory()
        let bad = dir.appending("bad.conf")
        try "[NATS]\nURL=http://x\nLeaseTime=5ms\n[Export]\nPattern=a/b\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let child = try ChildProcess(executable: try Binaries.portdBridge, arguments: ["--check-config", "--config", bad])
        #expect(try child.waitForExit() == 78)
        let errors = child.standardError.split(separator: "\n")
        #expect(errors.count == 3, "\(child.standardError)")
        #expect(errors.first?.hasPrefix("portd-bridge: \(bad):2: ") == true)
        let good = dir.appending("good.conf")
        try "[NATS]\nURL=nats://127.0.0.1:4222\n[Export]\nPattern=org.example.*\n".write(toFile: good, atomically: true, encoding: .utf8)
        let ok = try ChildProcess(executable: try Binaries.portdBridge, arguments: ["--check-config", "--config", good])
        #expect(try ok.waitForExit() == 0)
        #expect(ok.standardOutput == "portd-bridge: the configuration is good: \(good)\n")
        let missing = try ChildProcess(
            executable: try Binaries.portdBridge, arguments: ["--check-config", "--config", dir.appending("none.conf")])
        #expect(try missing.waitForExit() == 78)
    }

    @Test func sighupExportsWhatTheNewFileSaysAndWithdrawsTheRest() throws {
        let nats = try NatsTopology(leaves: 2)
        let a = try BridgeHost(id: "host-a", url: nats.leaves[0].url, export: ["org.example.*"])
        let b = try BridgeHost(id: "host-b", url: nats.leaves[1].url, import: ["org.*"])
        let one = try a.startPortctl(["listen", "org.example.one", "--exec", "cat"])
        defer { one.killAndReap() }
        let two = try a.startPortctl(["listen", "org.other.two", "--exec", "cat"])
        defer { two.killAndReap() }
        try waitUntilThere("org.example.one", in: b)
        #expect(try b.portctl(["lookup", "org.other.two"]).status == 67)

        // Export org.other.* instead: two comes, one goes.
        let text = try String(contentsOfFile: a.configPath, encoding: .utf8)
            .replacingOccurrences(of: "Pattern=org.example.*", with: "Pattern=org.other.*")
        try text.write(toFile: a.configPath, atomically: true, encoding: .utf8)
        a.bridge?.signal(SIGHUP)
        try waitUntilThere("org.other.two", in: b)
        try waitUntilGone("org.example.one", in: b.daemon)
        let r = try b.portctl(["request", "org.other.two", "--msgid", "1", "--data", "reloaded", "--timeout", "10"])
        #expect(r.standardOutput == "\"reloaded\"\n", "\(r.standardError)")
        // A clean stop withdraws every export at once (no lease to wait for).
        #expect(try a.stopBridge() == 0)
        try waitUntilGone("org.other.two", in: b.daemon, timeout: .seconds(2))
    }
}
