// NameServerClientTests: PortCore's PortNameServer end to end, against the
// real portd (DaemonProcess): names registered, looked up and used; the
// lookup cache refreshed when its port dies; D-Bus ownership (queue and
// NAME_ACQUIRED, do-not-queue, replacement); release; watches (callback and
// AsyncSequence); list, owner and status; waiting lookups; and a declared
// port's check-in (the daemon gets its declaration from a portd.conf of the
// test's).

import Foundation
import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport
@testable import PortNameClient

@Suite struct NameServerClientTests {
    /// A unique name per test (tests run in parallel, but each on its own daemon).
    private func name(_ base: String) -> String { "\(base)-\(getpid())" }

    /// Receives the next message of `port` (scheduled on the background loop).
    private final class Inbox: @unchecked Sendable {
        // Safe to share: `messages` is protected by `lock`; `arrived` signals it.
        private let lock = NSLock()
        private var messages: [PCPortMessage] = []
        private let arrived = DispatchSemaphore(value: 0)

        init(_ port: PCPort) throws {
            port.setHandler { [self] m in
                lock.withLock { messages.append(m) }
                arrived.signal()
                return nil
            }
            try port.schedule(in: BackgroundLoop.shared.loop, forMode: .default)
        }

        func next() -> PCPortMessage? {
            guard arrived.wait(timeout: .now() + 20) == .success else { return nil }
            return lock.withLock { messages.removeFirst() }
        }
    }

    @Test func registerLookUpAndSend() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let user = try daemon.client()
        let svc = name("svc")
        guard case .registered(let port) = try owner.register(svc) else {
            Issue.record("not registered")
            return
        }
        let inbox = try Inbox(port)
        let right = try #require(try user.lookup(svc))
        #expect(try right.send(PCPortMessage(msgid: 7, strings: ["hello"])) == .sent)
        let m = try #require(inbox.next())
        #expect(m.msgid == 7)
        #expect(m.components.first?.string == "hello")
        // The kernel's word on the sender: this process, although portd connected the right.
        #expect(m.sender?.pid == getpid())
        #expect(try user.send(PCPortMessage(msgid: 8), to: svc) == .sent)
        #expect(inbox.next()?.msgid == 8)
        #expect(try user.lookup(name("nobody")) == nil)
        port.invalidate()
    }

    @Test func theCacheIsRefreshedWhenItsPortDies() throws {
        let daemon = try DaemonProcess.started()
        let user = try daemon.client()
        let svc = name("cached")
        var owner: PortNameServer? = try daemon.client()
        guard case .registered(let first) = try owner!.register(svc) else {
            Issue.record("not registered")
            return
        }
        let right = try #require(try user.lookup(svc, cached: true))
        #expect(try user.lookup(svc, cached: true) === right, "a live right is reused")
        #expect(try user.lookup(svc) !== right, "uncached by default")

        // The owner goes: its port closes (the right hangs up) and portd releases the name.
        first.invalidate()
        owner!.invalidate()
        owner = nil
        // portd may not have seen the first client's connection close when
        // this REGISTER arrives: queued then, the name comes with NAME_ACQUIRED.
        let second = try daemon.client()
        let acquired = Mutex<PCPort?>(nil)
        let flag = Flag()
        let port: PCPort
        switch try second.register(svc, onAcquire: { p in
            acquired.withLock { $0 = p }
            flag.signal()
        }) {
        case .registered(let p): port = p
        case .queued:
            #expect(flag.wait(), "NAME_ACQUIRED never came")
            port = try #require(acquired.withLock { $0 })
        case .alreadyOwned(let who):
            Issue.record("not registered again: owned by \(who)")
            return
        }
        let inbox = try Inbox(port)
        let fresh = try #require(try user.lookup(svc, cached: true))
        #expect(fresh !== right, "a dead right is dropped and the name looked up again")
        #expect(try fresh.send(PCPortMessage(msgid: 1)) == .sent)
        #expect(inbox.next()?.msgid == 1)
        port.invalidate()
    }

    /// portForName: asks the name server each time: a name its owner gave
    /// up is nil at once, and a name taken by someone else leads to them,
    /// although the first owner's port lives on (a right to it would still
    /// be answered).
    @Test func portForNameFollowsTheNameNotAnEarlierOwner() throws {
        let daemon = try DaemonProcess.started()
        let user = try daemon.client()
        let svc = name("moved")
        let first = try daemon.client()
        guard case .registered(let firstPort) = try first.register(svc) else {
            Issue.record("not registered")
            return
        }
        let firstInbox = try Inbox(firstPort)
        let old = try #require(try user.port(forName: svc))
        #expect(try first.removePort(forName: svc))
        #expect(try user.port(forName: svc) == nil, "removed: nil, although the port lives")
        #expect(try user.send(PCPortMessage(msgid: 1), to: svc) == nil)

        let second = try daemon.client()
        guard case .registered(let secondPort) = try second.register(svc) else {
            Issue.record("not registered by the second owner")
            return
        }
        let secondInbox = try Inbox(secondPort)
        let now = try #require(try user.port(forName: svc))
        #expect(try now.send(PCPortMessage(msgid: 2)) == .sent)
        #expect(secondInbox.next()?.msgid == 2)
        #expect(try user.send(PCPortMessage(msgid: 3), to: svc) == .sent)
        #expect(secondInbox.next()?.msgid == 3)
        // The first owner's port is alive: the right found before still reaches it.
        #expect(try old.send(PCPortMessage(msgid: 4)) == .sent)
        #expect(firstInbox.next()?.msgid == 4)
        firstPort.invalidate()
        secondPort.invalidate()
    }

    @Test func queuedRegistrantGetsTheNameWhenTheOwnerGoes() throws {
        let daemon = try DaemonProcess.started()
        let svc = name("queue")
        let first = try daemon.client()
        guard case .registered(let firstPort) = try first.register(svc) else {
            Issue.record("not registered")
            return
        }
        let second = try daemon.client()
        // Without a handler portctl-style callers cannot be queued: do-not-queue.
        guard case .alreadyOwned(let who) = try second.register(svc) else {
            Issue.record("expected already-owned")
            return
        }
        #expect(who.pid == getpid())
        let acquired = Mutex<PCPort?>(nil)
        let flag = Flag()
        guard case .queued = try second.register(svc, onAcquire: { port in
            acquired.withLock { $0 = port }
            flag.signal()
        }) else {
            Issue.record("expected queued")
            return
        }
        let owner = try #require(try second.owner(svc))
        #expect(owner.owner.pid == getpid())
        #expect(owner.queued.count == 1)

        firstPort.invalidate()
        first.invalidate()
        #expect(flag.wait(), "NAME_ACQUIRED never came")
        let port = try #require(acquired.withLock { $0 })
        let inbox = try Inbox(port)
        #expect(try daemon.client().send(PCPortMessage(msgid: 3), to: svc) == .sent)
        #expect(inbox.next()?.msgid == 3)
        port.invalidate()
    }

    @Test func aReplacedOwnerIsToldWhoTookItsName() throws {
        let daemon = try DaemonProcess.started()
        let svc = name("lost")
        let first = try daemon.client()
        let lostTo = Mutex<NameOwner.Process?>(nil)
        let lost = Flag()
        guard case .registered(let firstPort) = try first.register(svc, options: [.allowReplacement], onLost: { owner in
            lostTo.withLock { $0 = owner }
            lost.signal()
        }) else {
            Issue.record("not registered")
            return
        }
        let second = try daemon.client()
        // The new owner gives a port to be told too: it must not take the old owner's place in portd's books first.
        guard case .registered(let secondPort) = try second.register(svc, options: [.replaceExisting], onLost: { _ in }) else {
            Issue.record("not replaced")
            return
        }
        #expect(lost.wait(), "NAME_LOST never came")
        #expect(lostTo.withLock { $0 }?.isSameProcess(as: NameOwner.Process(pid: getpid(), uid: getuid())) == true)
        // A release is not a loss: the new owner, told nothing, simply stops owning it.
        #expect(try second.release(svc) == .released)
        firstPort.invalidate()
        secondPort.invalidate()
    }

    @Test func replacementAndRelease() throws {
        let daemon = try DaemonProcess.started()
        let svc = name("replace")
        let first = try daemon.client()
        let second = try daemon.client()
        guard case .registered = try first.register(svc, options: [.allowReplacement]) else {
            Issue.record("not registered")
            return
        }
        guard case .registered = try second.register(svc, options: [.replaceExisting, .doNotQueue]) else {
            Issue.record("not replaced")
            return
        }
        #expect(try first.release(svc) == .notOwner)
        #expect(try second.release(svc) == .released)
        #expect(try second.release(svc) == .notOwner)
        #expect(try first.owner(svc) == nil)
    }

    @Test func watchersSeeRegistrationAndRelease() throws {
        let daemon = try DaemonProcess.started()
        let svc = name("watched")
        let watcher = try daemon.client()
        let changes = Mutex<[NameOwnerChange]>([])
        let two = Flag()
        let watch = try watcher.watch(svc) { change in
            if changes.withLock({ $0.append(change); return $0.count }) >= 2 { two.signal() }
        }
        defer { watch.cancel() }
        var owner: PortNameServer? = try daemon.client()
        _ = try owner!.register(svc)
        _ = try owner!.register(name("other"))  // not watched
        owner = nil  // the connection closes: the name is released at once
        #expect(two.wait())
        let seen = changes.withLock { $0 }
        try #require(seen.count >= 2)
        #expect(seen[0].name == svc && seen[0].event == .known(.registered))
        #expect(seen[0].newOwner?.pid == getpid() && seen[0].oldOwner == nil)
        #expect(seen[1].event == .known(.released) && seen[1].oldOwner?.pid == getpid() && seen[1].newOwner == nil)
        #expect(seen.allSatisfy { $0.name == svc })
    }

    @Test func ownerChangesAsAnAsyncSequence() async throws {
        let daemon = try DaemonProcess.started()
        let svc = name("async")
        let watcher = try daemon.client()
        let stream = try watcher.ownerChanges(of: nil)
        let owner = try daemon.client()
        _ = try owner.register(svc)
        var iterator = stream.makeAsyncIterator()
        let change = try #require(await iterator.next())
        #expect(change.name == svc && change.event == .known(.registered))
        // The watch ends with the client's connection, and the sequence with it.
        watcher.invalidate()
        #expect(await iterator.next() == nil)
    }

    @Test func aWaitingLookupHoldsUpNoOtherRequestOnTheSameConnection() throws {
        let daemon = try DaemonProcess.started()
        let client = try daemon.client(timeout: .seconds(10))
        let svc = name("pipelined")
        let found = Flag()
        let result = Mutex<NameOwner.Process?>(nil)
        let waiter = Thread {
            if case .found(_, let owner)? = try? client.resolve(svc, wait: .seconds(20)) {
                result.withLock { $0 = owner }
            }
            found.signal()
        }
        waiter.start()
        // Once portd has the lookup (it counts it), the same connection
        // answers STATUS, REGISTER, LIST and OWNER while the lookup waits
        // (each bounded by the client's own timeout, far below the wait).
        let deadline = ContinuousClock.now + .seconds(10)
        while try client.status().lookups < 1, ContinuousClock.now < deadline {}
        #expect(try client.status().lookups == 1)
        for _ in 0..<20 { #expect(try client.status().pid == daemon.pid) }
        let other = name("meanwhile")
        guard case .registered = try client.register(other) else {
            Issue.record("not registered")
            return
        }
        // Enough names for LIST to come in pages (128 a page).
        for i in 0..<150 {
            guard case .registered = try client.register(name("page\(i)")) else {
                Issue.record("not registered")
                return
            }
        }
        let listed = try client.list()
        #expect(listed.contains { $0.name == other } && listed.filter { $0.name.contains("page") }.count >= 150)
        #expect(try client.daemonHello().limits["list_page"] == 128, "so the listing took two pages at least")
        #expect(try client.owner(other)?.owner.pid == getpid())
        #expect(!found.isSignalled, "the lookup still waits: nobody registered \(svc)")
        let owner = try daemon.client()
        // The port listens while it is kept: the lookup's answer connects to it.
        guard case .registered(let port) = try owner.register(svc) else {
            Issue.record("not registered")
            return
        }
        #expect(found.wait())
        #expect(result.withLock { $0 }?.pid == getpid())
        #expect(try owner.daemonHello().client == result.withLock { $0 }?.client, "the owner is that very connection")
        port.invalidate()
    }

    @Test func listOwnerAndStatus() throws {
        let daemon = try DaemonProcess.started()
        let client = try daemon.client()
        let before = UInt64(Date().timeIntervalSince1970 * 1000)
        for n in ["b", "a"] { _ = try client.register(name(n)) }
        let entries = try client.list()
        #expect(Set(entries.map(\.name)).isSuperset(of: [name("a"), name("b")]))
        for e in entries where e.name.hasSuffix("-\(getpid())") {
            #expect(e.owner.pid == getpid() && e.owner.uid == getuid())
            #expect(e.sinceMilliseconds >= before - 1000 && e.queuedCount == 0)
        }
        let owner = try #require(try client.owner(name("a")))
        #expect(owner.owner.isSameProcess(as: .init(pid: getpid(), uid: getuid())) && owner.owner.client != 0 && owner.queued.isEmpty)
        let status = try client.status()
        #expect(status.version == PortdVersion.current)
        #expect(status.pid == daemon.pid)
        #expect(status.names >= 2 && status.clients >= 1)
    }

    @Test func aLookupWaitsForTheName() throws {
        let daemon = try DaemonProcess.started()
        let svc = name("later")
        let waiter = try daemon.client(timeout: .seconds(10))
        let never = try waiter.resolve(name("never"), wait: .milliseconds(100))
        #expect({ if case .timedOut = never { true } else { false } }())
        let found = Flag()
        let result = Mutex<NameOwner.Process?>(nil)
        let thread = Thread {
            if case .found(_, let owner)? = try? waiter.resolve(svc, wait: .seconds(15)) {
                result.withLock { $0 = owner }
            }
            found.signal()
        }
        thread.start()
        let owner = try daemon.client()
        let registration = try owner.register(svc)
        defer { withExtendedLifetime(registration) {} }
        #expect(found.wait())
        #expect(result.withLock { $0 }?.pid == getpid())
    }

    @Test func everyConnectionLossHandlerIsCalled() throws {
        let daemon = try DaemonProcess.started()
        let client = try daemon.client()
        let calls = Mutex(0)
        let all = Flag()
        // Several handlers on one loop and mode share one source (epoll takes a descriptor once).
        for _ in 0..<3 {
            try client.onConnectionLoss(in: BackgroundLoop.shared.loop) {
                if calls.withLock({ $0 += 1; return $0 }) == 3 { all.signal() }
            }
        }
        #expect(try daemon.stop() == 0)
        #expect(all.wait())
        // One added after the fact runs at once.
        let late = Flag()
        try client.onConnectionLoss(in: BackgroundLoop.shared.loop) { late.signal() }
        #expect(late.wait(timeout: .zero))
        #expect(calls.withLock { $0 } == 3)
    }

    @Test func aDeclaredPortIsCheckedIn() throws {
        let daemon = try DaemonProcess.started(declaring: ["declared"])
        let service = try daemon.client()
        guard case .checkedIn(let port) = try service.checkIn(declaredName: "declared") else {
            Issue.record("not checked in")
            return
        }
        #expect(port.withReceiveRight { _ in true } == true)
        guard case .notDeclared = try service.checkIn(declaredName: "undeclared") else {
            Issue.record("expected not-declared")
            return
        }
    }
}
