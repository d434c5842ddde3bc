// Names and rights that outlive client objects, against the real portd: a
// right found by lookup keeps working after the client that found it is
// gone; an existing port can be given a name (NSPortNameServer
// registerPort:name:), found (portForName:) and removed
// (removePortForName:), and its invalidation gives the name up while the
// name is still its own.

import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport
@testable import PortNameClient

@Suite struct NameLifetimeTests {
    private func name(_ base: String) -> String { "\(base)-\(getpid())" }

    /// A port served on the background loop that counts what it receives.
    private func inbox() throws -> (PCPort, Completion) {
        let got = Completion()
        let port = PCPort { _ in
            got.signal()
            return nil
        }
        try BackgroundLoop.shared.loop.add(port, forMode: .default)
        return (port, got)
    }

    @Test func aLookedUpRightOutlivesTheClientThatFoundIt() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let svc = name("outlives")
        let (port, got) = try inbox()
        defer { port.invalidate() }
        #expect(try owner.register(port, name: svc))
        var user: PortNameServer? = try daemon.client()
        let right = try #require(try user!.lookup(svc))
        user = nil  // the client goes; the right is the holder's
        #expect(try right.send(PCPortMessage(msgid: 1), timeout: .seconds(5)) == .sent)
        #expect(got.wait(timeout: .seconds(20)))
    }

    @Test func anExistingPortIsNamedFoundAndRemoved() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let user = try daemon.client()
        let svc = name("existing")
        let (port, got) = try inbox()
        let before = try port.makeSendRight()  // a right made before the name
        #expect(try owner.register(port, name: svc))
        #expect(try !user.register(PCPort(), name: svc), "the name is taken")
        let right = try #require(try user.port(forName: svc))
        #expect(try right.send(PCPortMessage(msgid: 2), timeout: .seconds(5)) == .sent)
        #expect(got.wait(timeout: .seconds(20)))
        #expect(try before.send(PCPortMessage(msgid: 3), timeout: .seconds(5)) == .sent)
        #expect(got.wait(timeout: .seconds(20)))
        #expect(try owner.removePort(forName: svc))
        #expect(try user.owner(svc) == nil)
        port.invalidate()
        before.invalidate()
    }

    @Test func invalidatingANamedPortGivesItsNameUp() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let svc = name("ends")
        let (port, _) = try inbox()
        #expect(try owner.register(port, name: svc))
        #expect(try owner.owner(svc) != nil)
        port.invalidate()
        #expect(try owner.owner(svc) == nil)
    }

    /// removePortForName: then registerPort:name: with the same port (a
    /// service that stops and resumes offering itself) names the port
    /// again: the second registration is not refused because the port
    /// "already has a name". A right found before the removal, whose
    /// connection the port had not accepted yet (its loop was not running),
    /// still delivers, and a right found after leads to the port too.
    @Test func aPortWhoseNameWasRemovedCanBeRegisteredAgain() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let user = try daemon.client()
        let svc = name("resumes")
        let got = Recorder()
        let port = PCPort { m in
            got.add("\(m.msgid)")
            return nil
        }
        let thread = LoopThread { loop in
            let deadline = MonotonicInstant.now() + .seconds(20)
            while got.all.count < 2 && MonotonicInstant.now() < deadline {
                loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
            }
        }
        try thread.loop.add(port, forMode: .default)  // not running yet: nothing is accepted
        #expect(try owner.register(port, name: svc))
        let earlier = try #require(try user.port(forName: svc))
        #expect(try earlier.send(PCPortMessage(msgid: 6), timeout: .seconds(5)) == .sent)
        #expect(try owner.removePort(forName: svc))
        #expect(try user.port(forName: svc) == nil)
        #expect(try owner.register(port, name: svc), "the port was refused a name again")
        let later = try #require(try user.port(forName: svc))
        #expect(try later.send(PCPortMessage(msgid: 5), timeout: .seconds(5)) == .sent)
        thread.go()
        thread.join()
        #expect(Set(got.all) == ["5", "6"])
        port.invalidate()
    }

    /// registerPort:name: twice with one port, as launchd's bootstrap_register
    /// and GNUstep's NSMessagePortNameServer allow: the port carries both
    /// names and receives through each; removing one leaves the other, and
    /// the port's invalidation gives up the one it still has. Before, the
    /// second registration threw "the port was invalidated" (the port was
    /// valid) and gave the second name back.
    @Test func aPortCarriesSeveralNamesAndRemovingOneLeavesTheOthers() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let user = try daemon.client()
        let first = name("first")
        let second = name("second")
        let got = Recorder()
        let arrived: [UInt32: Completion] = [1: Completion(), 2: Completion(), 3: Completion()]
        let port = PCPort { m in
            got.add("\(m.msgid)")
            arrived[m.msgid]?.signal()
            return nil
        }
        try BackgroundLoop.shared.loop.add(port, forMode: .default)
        defer { port.invalidate() }
        #expect(try owner.register(port, name: first))
        #expect(try owner.register(port, name: second), "a port registered under another name was refused a second one")
        for (msgid, svc) in [(UInt32(1), first), (2, second)] {
            let right = try #require(try user.port(forName: svc))
            #expect(try right.send(PCPortMessage(msgid: msgid), timeout: .seconds(5)) == .sent)
            #expect(arrived[msgid]!.wait(timeout: .seconds(20)))
        }
        #expect(try owner.removePort(forName: first))
        #expect(try user.port(forName: first) == nil)
        let right = try #require(try user.port(forName: second), "removing one name removed the other")
        #expect(try right.send(PCPortMessage(msgid: 3), timeout: .seconds(5)) == .sent)
        #expect(arrived[3]!.wait(timeout: .seconds(20)))
        #expect(got.all == ["1", "2", "3"])
        port.invalidate()
        #expect(try owner.owner(second) == nil, "the port's invalidation did not give up its name")
    }

    /// The same for a port the name server made (`register(_:)`): named
    /// again with `register(_:name:)`, it keeps its first name, and giving
    /// the first one up leaves the second.
    @Test func aRegisteredPortTakesASecondName() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let user = try daemon.client()
        let first = name("made")
        let second = name("added")
        guard case .registered(let port) = try owner.register(first) else {
            Issue.record("not registered")
            return
        }
        let arrived = Completion()
        port.setHandler { _ in
            arrived.signal()
            return nil
        }
        try BackgroundLoop.shared.loop.add(port, forMode: .default)
        defer { port.invalidate() }
        #expect(try owner.register(port, name: second))
        #expect(try owner.release(first) == .released)
        #expect(try user.owner(second) != nil)
        let right = try #require(try user.port(forName: second))
        #expect(try right.send(PCPortMessage(msgid: 4), timeout: .seconds(5)) == .sent)
        #expect(arrived.wait(timeout: .seconds(20)))
    }

    /// removePortForName: ends the old port's hold on the name: a port
    /// that had the name, was removed from it and is invalidated (or
    /// freed) after the name went to another port of the same client
    /// leaves the name to that port (it released the name by its string).
    @Test func invalidatingAPortWhoseNameWasRemovedLeavesTheNameToItsNewPort() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let user = try daemon.client()
        let svc = name("handover")
        let (old, _) = try inbox()
        let (new, got) = try inbox()
        defer { new.invalidate() }
        #expect(try owner.register(old, name: svc))
        #expect(try owner.removePort(forName: svc))
        #expect(try owner.register(new, name: svc))
        old.invalidate()
        #expect(try owner.owner(svc) != nil, "the old port's invalidation released the new port's name")
        let right = try #require(try user.port(forName: svc))
        #expect(try right.send(PCPortMessage(msgid: 4), timeout: .seconds(5)) == .sent)
        #expect(got.wait(timeout: .seconds(20)))
    }
}
