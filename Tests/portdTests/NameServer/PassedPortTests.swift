// PassedPortTests: the real portd refuses, as `bad-request`, every port a
// client hands it to keep (WATCH's watcher port, REGISTER's notification
// port) that is not a connected AF_UNIX SOCK_SEQPACKET socket whose far end
// is the client's own: a datagram or stream socket, a connection to
// another uid's port, a connection to a port portd serves (a looked-up
// right), a connection to portd's control socket, and the client's own
// control connection, which would otherwise keep the client's names owned
// after it exits (portd would hold the client's end and never see it close).
// A right the client minted (socketpair) is still accepted. A one-way
// record's REPLY_PORT is not a reply right: portd neither keeps it nor
// answers on it.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct PassedPortTests {
    private func started() throws -> DaemonProcess { try DaemonProcess.started() }

    /// SendRights on both ends of a socketpair of `type`.
    private func pair(_ type: Int32) throws -> (SendRight, SendRight) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        return (SendRight(descriptor: OwnedDescriptor(adopting: fds[0])), SendRight(descriptor: OwnedDescriptor(adopting: fds[1])))
    }

    /// A client that registered org.example.immortal, and a watcher of
    /// that name (which the caller keeps) whose events come to `events`.
    private func watchedOwner(
        _ portd: DaemonProcess, _ loop: TestLoop
    ) throws -> (watcher: NameClient, events: Inbox, owner: NameClient) {
        let watcher = try NameClient(socket: portd.socketPath)
        let events = try Inbox(on: loop)
        #expect(try watcher.watch("org.example.immortal", inbox: events).outcome == "ok")
        let owner = try NameClient(socket: portd.socketPath)
        #expect(try owner.register("org.example.immortal").outcome == "registered")
        #expect(events.next()?.nameAndEvent == ["org.example.immortal", "registered"])
        return (watcher, events, owner)
    }

    @Test func aClientsOwnControlConnectionIsRefusedSoItsNamesGoWhenItExits() throws {
        let portd = try started()
        let loop = TestLoop()
        defer { loop.stop() }
        let (watcher, events, owner) = try watchedOwner(portd, loop)
        defer { withExtendedLifetime(watcher) {} }
        let refused = try owner.request(MessageID.watch, ["name=org.example.immortal"], replyPort: owner.right)
        #expect(refused.outcome == "bad-request")
        #expect(refused.field("message")?.contains("portd") == true, "\(refused.words)")
        let notify = try owner.request(MessageID.register, ["name=org.example.other"], replyPort: owner.right)
        #expect(notify.outcome == "bad-request")

        owner.close()
        #expect(events.next()?.nameAndEvent == ["org.example.immortal", "released"])
        #expect(try portd.stop() == 0)
    }

    /// A LOOKUP sent without REPLY_EXPECTED has no reply right: the
    /// REPLY_PORT it carries was taken as the reply port of its wait
    /// (unchecked, unlike WATCH's and REGISTER's), so a client could hand
    /// portd its own control connection and keep its names after it
    /// exited (for the lookup's wait, up to an hour), or have portd send
    /// its answer to another client's port. Such a lookup does not wait.
    @Test func aOneWayLookupsReplyPortIsNeitherKeptNorAnsweredOn() throws {
        let portd = try started()
        let loop = TestLoop()
        defer { loop.stop() }
        let (watcher, events, owner) = try watchedOwner(portd, loop)
        defer { withExtendedLifetime(watcher) {} }

        // The client's own control connection as the reply port.
        var held = PCPortMessage(
            msgid: MessageID.lookup, strings: ["serial=9", "name=org.example.never", "wait_ms=3600000"])
        held.replyPort = owner.right
        #expect(try owner.right.send(held, timeout: HarnessTimeout) == .sent)
        owner.close()
        #expect(events.next()?.nameAndEvent == ["org.example.immortal", "released"], "the name went with its client")

        // Another client's port as the reply port: portd's answer, with its
        // own credentials, would land there.
        let victim = try NameClient(socket: portd.socketPath)
        let listening = try #require(try victim.register("org.example.victim").ports.first)
        let client = try NameClient(socket: portd.socketPath)
        var deputy = PCPortMessage(
            msgid: MessageID.lookup, strings: ["serial=9", "name=org.example.later", "wait_ms=3600000"])
        let victimsPort: SendRight = try #require(try client.lookUp("org.example.victim").ports.first)
        deputy.replyPort = victimsPort
        #expect(try client.right.send(deputy, timeout: HarnessTimeout) == .sent)
        #expect(try client.request(MessageID.status).outcome == "ok", "portd has read the one-way lookup")
        let later = try NameClient(socket: portd.socketPath)
        #expect(try later.register("org.example.later").outcome == "registered")
        // The answers of the lookups a change took go out in the first pass
        // after it (a share of 64), before any request that came after it.
        #expect(try client.request(MessageID.status).outcome == "ok")
        // The victim's one connection, made by the client's LOOKUP: nothing
        // waits in it.
        let queued = try #require(listening.withDescriptor { fd -> (Int, Int32) in
            let accepted: OwnedDescriptor?
            do { accepted = try UnixSocket.accept(fd) } catch { return (-2, 0) }
            switch consume accepted {
            case .none: return (-3, 0)  // no connection waits
            case .some(let connection):
                var byte: UInt8 = 0
                let n = recv(connection.rawValue, &byte, 1, Int32(MSG_DONTWAIT))
                return (n, errno)
            }
        })
        #expect(queued.0 == -1 && queued.1 == EAGAIN, "nothing reached the victim's port: \(queued)")
        #expect(try portd.stop() == 0)
    }

    @Test func descriptorsThatAreNotTheClientsOwnConnectionAreRefused() throws {
        let portd = try started()
        let loop = TestLoop()
        defer { loop.stop() }
        let client = try NameClient(socket: portd.socketPath)

        // Not a SOCK_SEQPACKET connection.
        let (datagram, datagramPeer) = try pair(Int32(SOCK_DGRAM.rawValue))
        let (stream, streamPeer) = try pair(Int32(SOCK_STREAM.rawValue))
        defer { _ = (datagramPeer, streamPeer) }
        for right in [datagram, stream] {
            let reply = try client.request(MessageID.watch, [], replyPort: right)
            #expect(reply.outcome == "bad-request", "\(reply.words)")
        }

        // Another connection to portd's own control socket.
        let other = try NameClient(socket: portd.socketPath)
        let toItself = try client.request(MessageID.watch, [], replyPort: other.right)
        #expect(toItself.outcome == "bad-request", "\(toItself.words)")

        // A looked-up right to another client's port: portd would deliver
        // its events there with its own credentials.
        let owner = try NameClient(socket: portd.socketPath)
        let registered = try owner.register("org.example.victim")
        let listening = try #require(registered.ports.first)
        let victimInbox = try Inbox(on: loop, listening: listening)
        let found = try client.lookUp("org.example.victim")
        let victimRight = try #require(found.ports.first)
        let deputy = try client.request(MessageID.watch, [], replyPort: victimRight)
        #expect(deputy.outcome == "bad-request", "\(deputy.words)")
        #expect(victimInbox.next(timeout: .milliseconds(200)) == nil, "nothing reached the victim's port")

        // A right the client minted itself is still a watcher port.
        let mine = try Inbox(on: loop)
        #expect(try client.watch(nil, inbox: mine).outcome == "ok")
        #expect(try portd.stop() == 0)
    }

    /// An O_PATH descriptor names a file but opens nothing: every socket
    /// call on it fails with EBADF (which PortSystem traps on as its own
    /// bug). As a WATCH's or REGISTER's port it is refused on receipt, that
    /// client's connection closed, and portd serves everyone else.
    @Test func aPathOnlyDescriptorClosesOnlyThatClientsConnection() throws {
        let portd = try started()
        let bystander = try NameClient(socket: portd.socketPath)
        let registered = try bystander.register("org.example.bystander")  // holds its listening socket
        #expect(registered.outcome == "registered")
        defer { withExtendedLifetime(registered) {} }
        for (msgid, fields) in [(MessageID.watch, ["name=org.example.x"]), (MessageID.register, ["name=org.example.y"])] {
            let hostile = try NameClient(socket: portd.socketPath)
            let pathOnly = open("/", 0o10000000 /* O_PATH, open(2) */ | O_CLOEXEC)
            try #require(pathOnly >= 0)
            var message = PCPortMessage(msgid: msgid, strings: ["serial=1"] + fields)
            message.replyPort = SendRight(descriptor: OwnedDescriptor(adopting: pathOnly))
            #expect(try hostile.raw(message) == nil, "portd closes that connection")
            let found = try bystander.lookUp("org.example.bystander")
            #expect(found.outcome == "ok" && found.ports.count == 1, "\(found.words)")
        }
        #expect(try portd.stop() == 0, "portd exits cleanly: it did not trap")
    }

    @Test func aConnectionToAnotherUsersPortIsRefused() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let portd = try started()
        let name = "portd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        // Another user's own port: a SOCK_SEQPACKET listener at an abstract name.
        let script = """
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.bind("\\0" + sys.argv[1]); s.listen(4)
            print("ready", flush=True)
            c, _ = s.accept()
            time.sleep(30)
            """
        let listener = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, name],
            environment: ChildProcess.cleanEnvironment())
        defer { listener.killAndReap() }
        try listener.waitForStandardOutput(containing: "ready")
        let fd = try UnixSocket.makeSocket()
        try #require(try UnixSocket.connect(fd, to: UnixSocketAddress(abstract: name)) == .connected)
        let foreign = SendRight(descriptor: fd)

        let client = try NameClient(socket: portd.socketPath)
        let watch = try client.request(MessageID.watch, [], replyPort: foreign)
        #expect(watch.outcome == "bad-request", "\(watch.words)")
        #expect(watch.field("message")?.contains("uid 65534") == true, "\(watch.words)")
        let register = try client.request(MessageID.register, ["name=org.example.spoof"], replyPort: foreign)
        #expect(register.outcome == "bad-request", "\(register.words)")
        #expect(try portd.stop() == 0)
    }
}
