// NameServerHostedTests: the NameServer glue in this process, on its own
// loop thread, with settings no command line gives yet (the configuration
// is wired in elsewhere): declared ports and launchd-style check-in with a
// service in another process that exits and comes back; policy refusals;
// the instance's uid rule; small limits; and the log lines that name who
// was refused and what for.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

private func name(_ s: String) -> PortName { try! PortName(validating: s) }

@Suite struct NameServerHostedTests {
    @Test func declaredPortKeepsMessagesSentBeforeTheServiceAndWhileItIsDown() throws {
        var settings = NameServerSettings(onlyUID: getuid())
        settings.declaredPorts = [.init(name: name("org.example.declared"), checkInUIDs: [getuid()])]
        let host = try HostedNameServer(settings)
        defer { host.stop() }
        #expect(host.portFiles.count == 1, "the declared port exists before anyone asks")
        let client = try NameClient(socket: host.socketPath)
        #expect(try client.request(MessageID.status).words.contains("declared=1"))

        // Before the service runs: the lookup succeeds and the message waits in the kernel.
        let before = try client.lookUp("org.example.declared")
        #expect(before.outcome == "ok")
        #expect(before.field("owner") == "\(getpid()):\(getuid()):0", "portd holds it (this process)")
        #expect(before.field("name") == "org.example.declared")
        #expect(try before.ports.first?.send(PCPortMessage(msgid: 1, strings: ["sent before"]), timeout: HarnessTimeout) == .sent)

        let first = try NameServerFixture.start(["checkin-receive", host.socketPath, "org.example.declared", "1"])
        #expect(try first.waitForExit() == 0, "\(first.standardError)")
        #expect(first.standardOutput == "sent before\n")

        // The service is gone; portd still holds the socket. A new lookup and a message while it is down.
        let during = try client.lookUp("org.example.declared")
        #expect(during.outcome == "ok")
        #expect(try during.ports.first?.send(PCPortMessage(msgid: 2, strings: ["sent while down"]), timeout: HarnessTimeout) == .sent)

        let second = try NameServerFixture.start(["checkin-receive", host.socketPath, "org.example.declared", "1"])
        #expect(try second.waitForExit() == 0, "\(second.standardError)")
        #expect(second.standardOutput == "sent while down\n")
        #expect(host.log.all.contains { $0.contains("service checked in for org.example.declared (check-in 2)") })

        // The name is not for REGISTER or RELEASE, and shows in LIST and OWNER as portd's.
        let register = try client.register("org.example.declared")
        #expect(register.outcome == "denied")
        #expect(try client.request(MessageID.release, ["name=org.example.declared"]).outcome == "not-owner")
        let list = try client.request(MessageID.list)
        #expect(list.fields == [
            "more=0", "name=org.example.declared", "owner=\(getpid()):\(getuid()):0", try #require(list.fields.first { $0.hasPrefix("since_ms=") }),
            "queue_length=0", "declared=1", "checked_in=\(second.pid)",
        ])
        let owner = try client.request(MessageID.owner, ["name=org.example.declared"])
        #expect(owner.field("owner") == "\(getpid()):\(getuid()):0" && owner.field("declared") == "1")
        #expect(owner.field("checked_in") == "\(second.pid)", "the service that checked in last")
    }

    @Test func killNineOfTheOwnerIsHandledInThePassThatSeesTheHangUp() throws {
        let host = try HostedNameServer(NameServerSettings(onlyUID: getuid()))
        defer { host.stop() }
        let loop = TestLoop()
        defer { loop.stop() }
        let child = try NameServerFixture.start(["register", host.socketPath, "org.example.mortal"])
        defer { if child.isRunning { child.signal(SIGKILL) } }
        try child.waitForStandardError(containing: "registered")
        let watcher = try NameClient(socket: host.socketPath)
        let events = try Inbox(on: loop)
        _ = try watcher.watch("org.example.mortal", inbox: events)
        let heir = try NameClient(socket: host.socketPath)
        let acquired = try Inbox(on: loop)
        #expect(try heir.register("org.example.mortal", notify: acquired).outcome == "queued")
        host.markPasses()
        // A request makes the server's loop begin a new pass after the marker
        // is in place, so the pass that sees the hang-up is marked too.
        #expect(try watcher.request(MessageID.status).outcome == "ok")

        child.signal(SIGKILL)
        #expect(events.next()?.nameAndEvent == ["org.example.mortal", "released"])
        #expect(acquired.next()?.msgid == MessageID.nameAcquired)
        // One pass: the hang-up is seen ("client gone"), the name changes hands
        // (NAME_ACQUIRED, then the change is logged and queued for the
        // watchers, who are told in the passes after) with no pass boundary
        // in between.
        let lines = host.log.all
        let gone = try #require(lines.firstIndex { $0.contains("client gone") && $0.contains("released=1") })
        let changed = try #require(lines.firstIndex { $0.contains("org.example.mortal released") })
        #expect(gone < changed)
        #expect(!lines[gone...changed].contains(HostedNameServer.passMarker), "\(lines[gone...changed])")
        #expect(lines[..<gone].contains(HostedNameServer.passMarker), "the marker works")
    }

    @Test func checkInIsForTheDeclaredUIDOnly() throws {
        var settings = NameServerSettings(onlyUID: nil)
        let other = getuid() &+ 4242
        settings.declaredPorts = [
            .init(name: name("theirs"), checkInUIDs: [other]), .init(name: name("theirs"), checkInUIDs: [other &+ 1]),
        ]
        let host = try HostedNameServer(settings)
        defer { host.stop() }
        #expect(host.portFiles.count == 1, "a name declared twice is one port")
        let client = try NameClient(socket: host.socketPath)
        let refused = try client.request(MessageID.checkIn, ["name=theirs"])
        #expect(refused.errorAndMessage == ["denied", "message=uid \(getuid()) may not check in for theirs"])
        #expect(refused.ports.isEmpty)
        #expect(try client.request(MessageID.checkIn, ["name=undeclared"]).outcome == "not-declared")
        #expect(
            host.log.all.contains {
                $0.contains("notice: refused CHECKIN: uid \(getuid()) may not check in for theirs")
                    && $0.contains("name=theirs") && $0.contains("pid=\(getpid())")
            }, "\(host.log.all)")
        #expect(try client.request(MessageID.status).words.contains("refusals=1"))
    }

    @Test func policyDecidesWhoMayRegisterAndLookUp() throws {
        var settings = NameServerSettings(onlyUID: nil)
        settings.mayRegister = { name, _, _ in name.value.hasPrefix("open.") }
        settings.mayLookUp = { name, _, _ in !name.value.hasPrefix("open.secret") }
        let host = try HostedNameServer(settings)
        defer { host.stop() }
        let loop = TestLoop()
        defer { loop.stop() }
        let client = try NameClient(socket: host.socketPath)
        #expect(try client.register("closed").errorAndMessage == ["denied", "message=uid \(getuid()) may not register closed"])
        let open = try client.register("open.door")
        #expect(open.outcome == "registered")
        let secret = try client.register("open.secret")
        #expect(secret.outcome == "registered")
        #expect(try client.lookUp("open.secret").outcome == "denied")
        #expect(try client.lookUp("open.secret", waitMilliseconds: 1000).outcome == "denied")
        #expect(try client.request(MessageID.owner, ["name=open.secret"]).outcome == "denied")
        #expect(try client.watch("open.secret", inbox: Inbox(on: loop)).outcome == "denied")
        // LIST shows only what the client may look up.
        #expect(try client.request(MessageID.list).fields.filter { $0.hasPrefix("name=") } == ["name=open.door"])
        // A watcher of all names hears only of names it may look up.
        let events = try Inbox(on: loop)
        _ = try client.watch(nil, inbox: events)
        _ = try client.request(MessageID.release, ["name=open.secret"])
        _ = try client.request(MessageID.release, ["name=open.door"])
        #expect(events.next()?.nameAndEvent == ["open.door", "released"])
        #expect(events.isEmpty)
        #expect(host.log.all.filter { $0.contains("refused") }.count == 5)
    }

    @Test(.enabled(if: getuid() == 0, "needs root to run a client as another uid with other groups"))
    func supplementaryGroupsCountInPolicyAndCheckIn() throws {
        // uid 65534 with primary gid 65534; group 4242 may register, group
        // 4243 may check in: only as a supplementary group (SO_PEERGROUPS).
        var settings = NameServerSettings(onlyUID: nil)
        settings.mayRegister = { _, _, gids in gids.contains(4242) }
        settings.declaredPorts = [.init(name: name("svc.grouped"), checkInUIDs: [], checkInGIDs: [4243])]
        let host = try HostedNameServer(settings)
        defer { host.stop() }
        chmod(host.directory.path, 0o711)
        chmod(host.socketPath, 0o777)
        func run(_ groups: String, _ request: String, _ portName: String) throws -> String {
            let child = try NameServerFixture.start(["as-user", "65534", groups, host.socketPath, request, portName])
            #expect(try child.waitForExit() == 0, "\(child.standardError)")
            return child.standardOutput
        }
        #expect(try run("-", "register", "svc.a") == "denied\n")
        #expect(try run("4242", "register", "svc.a") == "registered\n")
        #expect(try run("-", "checkin", "svc.grouped") == "denied\n")
        #expect(try run("100,4243", "checkin", "svc.grouped") == "ok\n")
    }

    @Test func refusalsAreAllCountedButLoggedAtMostTwentyASecond() throws {
        var settings = NameServerSettings(onlyUID: nil)
        settings.mayRegister = { _, _, _ in false }
        let host = try HostedNameServer(settings)
        defer { host.stop() }
        let client = try NameClient(socket: host.socketPath)
        for i in 0..<200 { #expect(try client.register("svc\(i)").outcome == "denied") }
        #expect(try client.request(MessageID.status).words.contains("refusals=200"))
        let logged = host.log.all.filter { $0.contains("refused REGISTER") }.count
        // 200 requests take milliseconds; even a slow run spans a few seconds at most.
        #expect(logged >= 20 && logged <= 100, "\(logged) refusal lines")
    }

    @Test func aListTooLongForOneRecordComesInPages() throws {
        var settings = NameServerSettings(onlyUID: nil)
        settings.limits.namesPerClient = 5000
        let host = try HostedNameServer(settings)
        defer { host.stop() }
        // 2,000 names of 190 bytes: about 240 bytes a line, some 800 a record.
        let names = (0..<2000).map { "n" + String(repeating: "x", count: 184) + String(format: "%05d", $0) }
        let owner = try NameClient(socket: host.socketPath)
        for n in names { #expect(try owner.register(n).outcome == "registered") }
        let first = try owner.request(MessageID.list)
        #expect(first.outcome == "ok" && first.field("more") == "1", "one record cannot hold them all")
        let client = try PortNameServer(socketPath: host.socketPath, timeout: HarnessTimeout)
        let listed = try client.list()
        #expect(listed.map(\.name) == names, "every name once, in byte order")
        #expect(listed.allSatisfy { $0.owner.pid == getpid() })
        // Short names: pages are cut at the components a client decodes by default (1024).
        let short = (0..<1500).map { String(format: "s%04d", $0) }
        for n in short { #expect(try owner.register(n).outcome == "registered") }
        let page = try owner.request(MessageID.list, ["after=s0000"])
        #expect(page.components.count <= PortLimits.default.maxComponents && page.field("more") == "1")
        #expect(try client.list().map(\.name) == names + short)
        owner.close()
    }

    @Test func anInstanceOfAnotherUIDRefusesEverything() throws {
        let host = try HostedNameServer(NameServerSettings(onlyUID: getuid() &+ 1))
        defer { host.stop() }
        let client = try NameClient(socket: host.socketPath, hello: false)
        #expect(try client.request(MessageID.hello, ["protocol=1.0"]).outcome == "denied", "even HELLO")
        let reply = try client.request(MessageID.status)
        #expect(reply.errorAndMessage == ["denied", "message=this portd serves uid \(getuid() &+ 1) only, not uid \(getuid())"])
        #expect(try client.register("svc").outcome == "denied")
        #expect(host.portFiles.isEmpty)
        #expect(host.log.all.contains { $0.contains("refused request") && $0.contains("uid=\(getuid())") })
    }

    @Test func limitsAreErrorsToThatClientOnly() throws {
        var settings = NameServerSettings(onlyUID: nil)
        settings.limits = NameRegistryLimits(
            namesPerClient: 2, pendingLookupsPerClient: 0, watchesPerClient: 1, clientsPerUID: 3)
        let host = try HostedNameServer(settings)
        defer { host.stop() }
        let loop = TestLoop()
        defer { loop.stop() }
        let greedy = try NameClient(socket: host.socketPath)
        let kept = try ["a", "b"].map { try greedy.register($0) }
        #expect(kept.allSatisfy { $0.outcome == "registered" })
        let third = try greedy.register("c")
        #expect(third.errorAndMessage == ["limit", "message=a client may own or wait for at most 2 names"])
        #expect(try greedy.watch(nil, inbox: Inbox(on: loop)).outcome == "ok")
        #expect(try greedy.watch("a", inbox: Inbox(on: loop)).outcome == "limit")
        #expect(try greedy.lookUp("missing", waitMilliseconds: 5000).outcome == "limit")
        #expect(try greedy.lookUp("a").outcome == "ok", "a lookup that does not wait is not limited")

        // The same uid may have three clients; the fourth is refused, the others go on.
        let second = try NameClient(socket: host.socketPath)
        #expect(try second.register("c").outcome == "registered")
        let leaving = try NameClient(socket: host.socketPath)
        let z = try leaving.register("z")
        #expect(z.outcome == "registered")
        // A fourth connection is refused when accepted (idle connections
        // count too): its request reads the refusal, and portd closed it.
        let fourth = try NameClient(socket: host.socketPath, hello: false)
        let refusal = try fourth.request(MessageID.hello, ["protocol=1.0"])
        #expect(refusal.serial == 0, "portd's own record, not an answer to the HELLO")
        #expect(refusal.errorAndMessage == ["limit", "message=uid \(getuid()) already has 3 clients connected"])
        #expect(throws: (any Error).self) { try fourth.request(MessageID.status) }
        #expect(try greedy.request(MessageID.status).words.contains("refusals=4"))
        // Once a client has gone its place is free for a new connection.
        // The watcher's event says portd saw the hang-up.
        let events = try Inbox(on: loop)
        #expect(try second.watch("z", inbox: events).outcome == "ok")
        leaving.close()
        #expect(events.next()?.nameAndEvent == ["z", "released"])
        // A connection that never sends takes the place all the same (portd
        // accepts in backlog order): the one after it is refused.
        let idle = try NameClient(socket: host.socketPath, hello: false)
        let fifth = try NameClient(socket: host.socketPath, hello: false)
        #expect(try fifth.request(MessageID.hello, ["protocol=1.0"]).outcome == "limit", "an idle connection holds its place")
        idle.close()
        let deadline = MonotonicInstant.now() + HarnessTimeout
        // Each round waits on portd's answer, not on time: until it has seen the hang-up.
        while try !greedy.request(MessageID.status).words.contains("clients=2"), MonotonicInstant.now() < deadline {}
        let sixth = try NameClient(socket: host.socketPath)
        #expect(try sixth.request(MessageID.status).outcome == "ok")
        #expect(try greedy.request(MessageID.status).words.contains("clients=3"))
    }

    @Test func staleSocketFilesOfADeadPortdAreRemovedAtStart() throws {
        let dir = try TemporaryDirectory()
        let ports = PortDirectory.path(forControlSocket: dir.appending("portd.sock"))
        #expect(try FileSystem.makeDirectory(ports, permissions: 0o700))
        // A socket file nobody listens on (its portd died) and a file that is not a socket.
        let stale = try UnixSocket.makeSocket()
        try UnixSocket.bind(stale, to: UnixSocketAddress(path: "\(ports)/p1"))
        stale.close()
        #expect(FileManager.default.createFile(atPath: "\(ports)/notes", contents: Data()))
        let (_, removed) = try PortDirectory.prepare(path: ports, userID: getuid())
        #expect(removed == 1)
        #expect(try FileSystem.entries(ofDirectory: ports) == ["notes"])
    }

    /// Registration speed must not depend on how many names came and went
    /// (issue 13): names' files go in generation subdirectories of at most
    /// `filesPerGeneration` files, and a subdirectory goes once it is empty
    /// and no longer current, so no directory accumulates history.
    @Test func namesFilesRotateThroughGenerationSubdirectories() throws {
        let dir = try TemporaryDirectory()
        let ports = PortDirectory.path(forControlSocket: dir.appending("portd.sock"))
        let (directory, _) = try PortDirectory.prepare(path: ports, userID: getuid())
        let perGeneration = PortDirectory.filesPerGeneration
        var first: [(fd: SharedDescriptor, file: PortSocketFile)] = []
        for _ in 0..<perGeneration { first.append(try directory.makeListeningSocket()) }
        #expect(first.allSatisfy { $0.file.path.hasPrefix("\(ports)/g1/p") })
        let next = try directory.makeListeningSocket()
        #expect(next.file.path.hasPrefix("\(ports)/g2/p"), "\(next.file.path)")
        #expect(try FileSystem.entries(ofDirectory: "\(ports)/g1")?.count == perGeneration)
        // g1 is no longer current: it goes with its last file.
        for f in first.dropLast() { directory.remove(f.file) }
        #expect(exists("\(ports)/g1"))
        directory.remove(first.last!.file)
        #expect(!exists("\(ports)/g1"), "an empty old generation is removed")
        directory.remove(next.file)
        #expect(exists("\(ports)/g2"), "the current generation stays")
        directory.removeIfEmpty()
        #expect(!exists(ports))
    }

    /// A restarted portd removes the generation subdirectories it finds and
    /// numbers past them.
    @Test func aRestartClearsOldGenerations() throws {
        let dir = try TemporaryDirectory()
        let ports = PortDirectory.path(forControlSocket: dir.appending("portd.sock"))
        // A crash: nothing removed, and the lock goes with the object.
        let held = try { () throws -> SharedDescriptor in
            let (old, _) = try PortDirectory.prepare(path: ports, userID: getuid())
            let socket = try old.makeListeningSocket()  // kept open, as a former owner's would be
            #expect(socket.file.path.hasPrefix("\(ports)/g1/"))
            return socket.fd
        }()
        let (fresh, removed) = try PortDirectory.prepare(path: ports, userID: getuid())
        #expect(removed == 1)
        #expect(!exists("\(ports)/g1"))
        let made = try fresh.makeListeningSocket()
        #expect(made.file.path.hasPrefix("\(ports)/g2/"), "\(made.file.path)")
        withExtendedLifetime(held) {}
    }

    @Test func aPortDirectoryThatIsNotPrivateIsRefused() throws {
        let dir = try TemporaryDirectory()
        let ports = dir.appending("open.ports")
        #expect(try FileSystem.makeDirectory(ports, permissions: 0o700))
        try FileSystem.setPermissions(ports, 0o755)
        #expect(throws: PortDirectory.Problem.self) { try PortDirectory.prepare(path: ports, userID: getuid()) }
        let link = dir.appending("link.ports")
        symlink(ports, link)
        #expect(throws: PortDirectory.Problem.self) { try PortDirectory.prepare(path: link, userID: getuid()) }
        let long = "/tmp/" + String(repeating: "d", count: 90)
        #expect(throws: PortDirectory.Problem.self) { try PortDirectory.prepare(path: long, userID: getuid()) }
        #expect(!exists(long))
    }
}
