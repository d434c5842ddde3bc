// NameServerDaemonTests: the real portd binary serving the name-server
// protocol to raw PortCore clients of this process and to Python clients in
// other processes: register, look up and send through the looked-up right;
// release on close and on kill -9 (a watcher is told, a queued owner gets the
// name at once); queues, already-owned, replacement; invalid names; waiting
// lookups that succeed or time out; limits; malformed and bad requests that
// leave everyone else served; the per-user instance refusing another uid.
// Every wait is for an event, bounded by HarnessTimeout.

import Foundation
import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct NameServerDaemonTests {
    /// A running portd in its own directory.
    private struct Running {
        let dir: TemporaryDirectory
        let daemon: DaemonProcess
        var socket: String { daemon.socketPath }
        var portDirectory: String { PortDirectory.path(forControlSocket: socket) }
        /// The socket files in the port directory, those of the generation
        /// subdirectories included ("g1/p3"), sorted.
        var portFiles: [String] { portSocketFiles(in: portDirectory) }

        init(environment: [String: String] = [:]) throws {
            dir = try TemporaryDirectory()
            daemon = try DaemonProcess.started(socket: dir.appending("portd.sock"), environment: environment)
        }

        func client() throws -> NameClient { try NameClient(socket: socket) }
    }

    @Test func registerLookUpAndSendThroughTheLookedUpRight() throws {
        let portd = try Running()
        let loop = TestLoop()
        defer { loop.stop() }
        let owner = try portd.client()
        let registered = try owner.register("org.example.echo")
        #expect(registered.outcome == "registered")
        #expect(registered.msgid == MessageID.reply && registered.field("name") == "org.example.echo")
        let listening = try #require(registered.ports.first)
        let inbox = try Inbox(on: loop, listening: listening)
        #expect(portd.portFiles.count == 1, "one socket file for one name")

        let user = try portd.client()
        let found = try user.lookUp("org.example.echo")
        #expect(found.outcome == "ok")
        #expect(found.fields == ["name=org.example.echo", "owner=\(owner.asOwner)"], "the fields, then the port")
        let right = try #require(found.ports.first)
        #expect(try right.send(PCPortMessage(msgid: 7, strings: ["hello"]), timeout: HarnessTimeout) == .sent)
        let message = try #require(inbox.next())
        #expect(message.msgid == 7)
        #expect(message.words == ["hello"])
        // Per-message credentials name the real sender, not portd, which connected.
        #expect(message.sender?.pid == getpid())
        #expect(try right.connectionCredentials().pid == portd.daemon.pid)

        let ownerInfo = try user.request(MessageID.owner, ["name=org.example.echo"])
        #expect(ownerInfo.outcome == "ok" && ownerInfo.field("owner") == owner.asOwner)
        let since = try #require(ownerInfo.field("since_ms").flatMap { UInt64($0) })
        #expect(ownerInfo.fields == ["name=org.example.echo", "owner=\(owner.asOwner)", "since_ms=\(since)", "queue_length=0", "more=0"])
        #expect(since > 1_600_000_000_000, "since_ms is Unix milliseconds")

        let list = try user.request(MessageID.list)
        #expect(list.outcome == "ok")
        #expect(list.fields == ["more=0", "name=org.example.echo", "owner=\(owner.asOwner)", "since_ms=\(since)", "queue_length=0"])

        let status = try user.request(MessageID.status)
        #expect(status.outcome == "ok")
        for field in ["version=\(PortdVersion.current)", "protocol=1.0", "pid=\(portd.daemon.pid)", "names=1", "clients=2", "lookups=1",
            "refusals=0", "declared=0"]
        {
            #expect(status.words.contains(field), "\(field) in \(status.words)")
        }
        #expect(status.words.contains { $0.hasPrefix("uptime_ms=") })
        #expect(try portd.daemon.stop() == 0)
        #expect(!exists(portd.portDirectory), "portd removes its port sockets and their directory when it stops")
    }

    @Test func closingTheConnectionReleasesTheNameAndTellsWatchers() throws {
        let portd = try Running()
        let loop = TestLoop()
        defer { loop.stop() }
        let watcher = try portd.client()
        let events = try Inbox(on: loop)
        #expect(try watcher.watch("svc", inbox: events).outcome == "ok")
        let everything = try Inbox(on: loop)
        #expect(try watcher.watch(nil, inbox: everything).outcome == "ok")

        let owner = try portd.client()
        #expect(try owner.register("svc").outcome == "registered")
        #expect(try owner.register("other").outcome == "registered")
        #expect(events.next()?.fields == ["name=svc", "event=registered", "new=\(owner.asOwner)"])
        #expect(everything.next()?.nameAndEvent == ["svc", "registered"])
        #expect(everything.next()?.nameAndEvent == ["other", "registered"])
        #expect(portd.portFiles.count == 2)

        owner.close()
        let released = try #require(events.next())
        #expect(released.msgid == MessageID.nameOwnerChanged)
        #expect(released.fields == ["name=svc", "event=released", "old=\(owner.asOwner)"])
        #expect(Set([everything.next()?.field("name"), everything.next()?.field("name")]) == ["svc", "other"])
        #expect(portd.portFiles.isEmpty, "the socket files go with the names")
        #expect(try watcher.lookUp("svc").outcome == "not-found")
        #expect(events.isEmpty, "the watcher of svc hears nothing of other")
    }

    @Test func killingTheOwnerHandsTheNameToTheQueuedOwnerAndTellsTheWatcher() throws {
        let portd = try Running()
        let loop = TestLoop()
        defer { loop.stop() }
        let child = try NameServerFixture.start(["register", portd.socket, "org.example.mortal"])
        defer { if child.isRunning { child.signal(SIGKILL) } }
        try child.waitForStandardError(containing: "registered")

        let watcher = try portd.client()
        let events = try Inbox(on: loop)
        #expect(try watcher.watch("org.example.mortal", inbox: events).outcome == "ok")
        let heir = try portd.client()
        let acquired = try Inbox(on: loop)
        #expect(try heir.register("org.example.mortal", notify: acquired).outcome == "queued")
        let owner = try heir.request(MessageID.owner, ["name=org.example.mortal"])
        #expect(owner.outcome == "ok" && owner.field("owner")?.hasPrefix("\(child.pid):\(getuid()):") == true)
        #expect(owner.fields.last == "queued=\(heir.asOwner)")

        child.signal(SIGKILL)
        #expect(try child.waitForExit() == 128 + SIGKILL)
        // Both messages come from the pass that saw the hang-up: no polling.
        let event = try #require(events.next())
        #expect(event.nameAndEvent == ["org.example.mortal", "released"])
        #expect(event.field("old")?.hasPrefix("\(child.pid):\(getuid()):") == true)
        #expect(event.field("new") == heir.asOwner)
        let handOver = try #require(acquired.next())
        #expect(handOver.msgid == MessageID.nameAcquired)
        #expect(handOver.field("name") == "org.example.mortal")
        #expect(handOver.serial == 2, "the serial of the heir's REGISTER (its HELLO was 1)")
        let listening = try #require(handOver.ports.first)
        let inbox = try Inbox(on: loop, listening: listening)
        #expect(portd.portFiles.count == 1, "the dead owner's socket file is gone, the heir's is there")

        let found = try watcher.lookUp("org.example.mortal")
        #expect(found.outcome == "ok")
        #expect(found.field("owner") == heir.asOwner)
        #expect(try found.ports.first?.send(PCPortMessage(msgid: 1, strings: ["to the heir"]), timeout: HarnessTimeout) == .sent)
        #expect(inbox.next()?.words == ["to the heir"])
    }

    @Test func afterKillNineANewOwnerTakesTheName() throws {
        let portd = try Running()
        let loop = TestLoop()
        defer { loop.stop() }
        let child = try NameServerFixture.start(["register", portd.socket, "svc"])
        defer { if child.isRunning { child.signal(SIGKILL) } }
        try child.waitForStandardError(containing: "registered")
        let watcher = try portd.client()
        let events = try Inbox(on: loop)
        _ = try watcher.watch("svc", inbox: events)
        let next = try portd.client()
        let taken = try next.register("svc", ["do-not-queue"])
        #expect(taken.outcome == "already-owned" && taken.field("owner")?.hasPrefix("\(child.pid):\(getuid()):") == true)

        child.signal(SIGKILL)
        #expect(events.next()?.nameAndEvent == ["svc", "released"])
        // The watcher was told, so the name is free now.
        #expect(try next.register("svc", ["do-not-queue"]).outcome == "registered")
        #expect(events.next()?.nameAndEvent == ["svc", "registered"])
    }

    @Test func queuedOwnersGetTheNameInOrderAndReplacementNeedsConsent() throws {
        let portd = try Running()
        let loop = TestLoop()
        defer { loop.stop() }
        let watcher = try portd.client()
        let events = try Inbox(on: loop)
        _ = try watcher.watch("svc", inbox: events)

        let a = try portd.client()
        let b = try portd.client()
        let c = try portd.client()
        let bInbox = try Inbox(on: loop)
        let cInbox = try Inbox(on: loop)
        #expect(try a.register("svc").outcome == "registered")
        #expect(try b.register("svc", notify: bInbox).outcome == "queued")
        #expect(try c.register("svc", notify: cInbox).outcome == "queued")
        // Without a port to tell it later, a request cannot queue.
        #expect(try watcher.register("svc").outcome == "already-owned")
        #expect(try watcher.register("svc", ["replace-existing"]).outcome == "already-owned", "a did not allow it")
        #expect(try c.request(MessageID.release, ["name=svc"]).outcome == "ok", "c leaves the queue")
        #expect(try watcher.request(MessageID.release, ["name=svc"]).outcome == "not-owner")
        #expect(try watcher.request(MessageID.release, ["name=nothing"]).outcome == "not-owner", "nobody owns it")

        #expect(try a.request(MessageID.release, ["name=svc"]).outcome == "ok")
        #expect(bInbox.next()?.field("name") == "svc")
        #expect(cInbox.isEmpty)
        _ = events.next()  // registered by a
        #expect(events.next()?.nameAndEvent == ["svc", "released"])

        // b now owns it; it did not allow replacement, so a new registration with consent is needed.
        #expect(try b.request(MessageID.release, ["name=svc"]).outcome == "ok")
        let lenient = try portd.client()
        let first = try lenient.register("svc", ["allow-replacement"])
        #expect(first.outcome == "registered")
        let firstPort: SendRight = try #require(first.ports.first)
        let firstInbox = try Inbox(on: loop, listening: firstPort)
        let taker = try portd.client()
        let taken = try taker.register("svc", ["replace-existing"])
        #expect(taken.outcome == "registered")
        let takenPort: SendRight = try #require(taken.ports.first)
        let takerInbox = try Inbox(on: loop, listening: takenPort)
        _ = events.next()  // released by b
        _ = events.next()  // registered by lenient
        #expect(events.next()?.nameAndEvent == ["svc", "replaced"])
        // New lookups lead to the new owner only.
        #expect(try watcher.lookUp("svc").ports.first?.send(PCPortMessage(msgid: 3), timeout: HarnessTimeout) == .sent)
        #expect(takerInbox.next()?.msgid == 3)
        #expect(firstInbox.isEmpty)
        #expect(try lenient.request(MessageID.release, ["name=svc"]).outcome == "not-owner")
        #expect(portd.portFiles.count == 1)
    }

    @Test func invalidNamesAreRefusedAndNeverBecomePaths() throws {
        let portd = try Running()
        let client = try portd.client()
        for bad in ["../escape", "a/b", ".hidden", "", String(repeating: "x", count: 201), "spa ce"] {
            let reply = try client.register(bad)
            #expect(reply.outcome == "invalid-name", "\(bad.debugDescription)")
            #expect(reply.field("message") != nil)
        }
        #expect(try client.lookUp("../escape").outcome == "invalid-name")
        #expect(portd.portFiles.isEmpty)
        #expect(!exists(portd.dir.appending("escape")))
        // A 200-byte name is fine, even though no socket path could hold it.
        let long = String(repeating: "n", count: 200)
        let registered = try client.register(long)  // keeps the listening socket open
        #expect(registered.outcome == "registered")
        #expect(try client.lookUp(long).outcome == "ok")
        // An owner that closed its receive right is no use to anyone: lookups say so.
        registered.ports.first?.invalidate()
        #expect(try client.lookUp(long).errorAndMessage == ["not-found", "message=the owner of \(long) no longer listens on it"])
    }

    @Test func aWaitingLookupIsAnsweredWhenTheNameAppears() throws {
        let portd = try Running(environment: ["PORTD_LOG_LEVEL": "debug"])
        let waiter = try portd.client()
        // The lookup waits on a thread of its own: an `async let` child task
        // needs a thread of the cooperative pool, which the other tests'
        // blocking waits may hold for longer than this test's bounds.
        let answer = Mutex<Result<PCPortMessage, HarnessError>?>(nil)
        let answered = Flag()
        Thread {
            let result = Result { () throws(HarnessError) -> PCPortMessage in
                do {
                    return try waiter.request(MessageID.lookup, ["name=late", "wait_ms=20000"])
                } catch {
                    throw HarnessError.unexpected("\(error)")
                }
            }
            answer.withLock { $0 = result }
            answered.signal()
        }.start()
        // Register only once portd holds the lookup: it says so in its log.
        try portd.daemon.child.waitForStandardError(containing: "lookup waits for late")
        let owner = try portd.client()
        // The reply holds the listening socket: the owner listens while it is kept.
        let registered = try owner.register("late")
        #expect(registered.outcome == "registered")
        #expect(answered.wait(), "the waiting lookup was never answered")
        let reply = try #require(answer.withLock { $0 }).get()
        #expect(reply.outcome == "ok")
        #expect(reply.ports.count == 1)
        withExtendedLifetime(registered) {}
    }

    @Test func aWaitingLookupTimesOut() throws {
        let portd = try Running()
        let client = try portd.client()
        let start = MonotonicInstant.now()
        let reply = try client.lookUp("never", waitMilliseconds: 200)
        #expect(reply.outcome == "timeout")
        #expect(MonotonicInstant.now() - start >= .milliseconds(200))
        // The connection goes on working afterwards.
        #expect(try client.request(MessageID.status).outcome == "ok")
    }

    @Test func aMalformedRecordClosesOnlyThatClientAndReleasesItsNames() throws {
        let portd = try Running()
        let loop = TestLoop()
        defer { loop.stop() }
        let other = try portd.client()
        let stays = try other.register("stays")  // keeps the listening socket open
        #expect(stays.outcome == "registered")
        let watcher = try portd.client()
        let events = try Inbox(on: loop)
        _ = try watcher.watch("goes", inbox: events)

        let rogue = try portd.client()
        #expect(try rogue.register("goes").outcome == "registered")
        _ = events.next()
        // Not a port message at all.
        let sent = try rogue.right.withDescriptor { (fd) throws(SystemCallError) in
            try LocalSocket.send(fd, Array("garbage that is not a record".utf8))
        }
        #expect(sent == true)
        #expect(events.next()?.nameAndEvent == ["goes", "released"])
        #expect(try other.lookUp("stays").outcome == "ok")
        #expect(try other.request(MessageID.status).outcome == "ok")
    }

    @Test func badRequestsAndLimitsAreAnsweredAndTheConnectionGoesOn() throws {
        let portd = try Running()
        let client = try portd.client()
        let unknown = try client.request(0xFFFF_00FE)
        #expect(unknown.errorAndMessage == ["bad-request", "message=unknown msgid 0xFFFF00FE"])
        #expect(unknown.msgid == MessageID.error && unknown.serial == 2, "an ERROR that echoes the serial")
        #expect(try client.request(MessageID.register, ["name=svc", "option=please"]).outcome == "bad-request")
        #expect(try client.request(MessageID.watch, ["name=svc"]).outcome == "bad-request", "WATCH needs a reply port")
        let big = try client.request(MessageID.register, ["name=svc", "option=" + String(repeating: "x", count: 5000)])
        #expect(big.outcome == "limit")
        #expect(try client.request(MessageID.checkIn, ["name=svc"]).outcome == "not-declared")
        let status = try client.request(MessageID.status)
        #expect(status.words.contains("refusals=1"))
        #expect(try client.register("svc").outcome == "registered")
        try portd.daemon.child.waitForStandardError(containing: "refused request: the request has more than 4096 bytes")
    }

    @Test(.enabled(if: getuid() == 0, "needs root to run a client as another uid"))
    func thePerUserInstanceRefusesOtherUIDs() throws {
        let portd = try Running()
        // Let uid 65534 reach the socket; the refusal must come from portd itself.
        chmod(portd.dir.path, 0o711)
        chmod(portd.socket, 0o777)
        let child = try NameServerFixture.start(["as-uid", "65534", portd.socket])
        #expect(try child.waitForExit() == 0, "\(child.standardError)")
        let words = child.standardOutput.split(separator: "\n").map(String.init)
        #expect(words.first == "denied")
        #expect(words.contains("message=this portd serves uid 0 only, not uid 65534"))
        try portd.daemon.child.waitForStandardError(containing: "refused request: this portd serves uid 0 only")
        #expect(try portd.client().request(MessageID.status).words.contains("refusals=2"), "its HELLO and its STATUS")
    }
}
