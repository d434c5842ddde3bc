// FileDescriptorStoreTests: declared ports across a restart of portd, the
// way `systemctl restart portd` runs it. The test's NOTIFY_SOCKET keeps the
// descriptors portd stores (FDSTORE=1, FDNAME=port/NAME) as systemd does,
// and the next portd gets them back at 3, 4, … with LISTEN_FDS,
// LISTEN_FDNAMES and LISTEN_PID. A message sent before the restart and one
// sent while portd is down are both delivered to the service that checks
// in afterwards (a Python process, Fixtures/name_client.py); a stored port
// the new configuration no longer declares is closed and dropped from the
// store (FDSTOREREMOVE=1); SIGHUP adds and removes declared ports, storing
// and dropping their sockets.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct FileDescriptorStoreTests {
    /// What a service manager with FileDescriptorStoreMax= exports (systemd 254 and later).
    private let withStore = ["FDSTORE": "16"]

    /// A portd.conf declaring `names`, check-in for this uid.
    private func writeConfiguration(_ path: String, declaring names: [String]) throws {
        let text = names.map { "[Port]\nName=\($0)\nCheckInUser=\(getuid())\n" }.joined(separator: "\n")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The file names in the port directory of the control socket `socket`.
    private func portFiles(_ socket: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: socket + ".ports").sorted()
    }

    @Test func aRestartLosesNoMessageWaitingInADeclaredPort() throws {
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try writeConfiguration(config, declaring: ["svc.spool"])
        let socket = dir.appending("portd.sock")

        let first = try DaemonProcess.started(socket: socket, arguments: ["--config", config], environment: withStore)
        #expect(first.notify.store.keys.sorted() == ["port/svc.spool"], "stored before READY=1")
        let client = try NameClient(socket: socket)
        let found = try client.lookUp("svc.spool")
        #expect(found.outcome == "ok")
        let right = try #require(found.ports.first)
        #expect(try right.send(PCPortMessage(msgid: 1, strings: ["sent before the restart"]), timeout: HarnessTimeout) == .sent)
        client.close()
        #expect(try first.stop() == 0)

        // portd is down; "systemd" holds the socket, so its file stays and
        // the connection made before still takes records.
        let files = try portFiles(socket)
        #expect(files.count == 1 && files[0].hasPrefix("d"), "\(files)")
        #expect(try right.send(PCPortMessage(msgid: 2, strings: ["sent while portd was down"]), timeout: HarnessTimeout) == .sent)
        right.invalidate()

        let second = try DaemonProcess.started(
            socket: socket, arguments: ["--config", config], environment: withStore, passing: first.notify.takeStore())
        try second.child.waitForStandardError(containing: "socket restored from the file-descriptor store")
        #expect(second.notify.store.keys.sorted() == ["port/svc.spool"], "stored again")
        #expect(try portFiles(socket) == files, "the same socket file, no new one")

        let again = try NameClient(socket: socket)
        let foundAgain = try again.lookUp("svc.spool")
        #expect(foundAgain.outcome == "ok")
        #expect(
            try foundAgain.ports.first?.send(PCPortMessage(msgid: 3, strings: ["sent after the restart"]), timeout: HarnessTimeout)
                == .sent)

        let service = try NameServerFixture.start(["checkin-receive", socket, "svc.spool", "3"])
        #expect(try service.waitForExit() == 0, "\(service.standardError)")
        #expect(service.standardOutput == "sent before the restart\nsent while portd was down\nsent after the restart\n")
        again.close()
        #expect(try second.stop() == 0)
    }

    @Test func aStoredPortNoLongerDeclaredIsClosedAndDropped() throws {
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try writeConfiguration(config, declaring: ["svc.kept", "svc.gone"])
        let socket = dir.appending("portd.sock")
        let first = try DaemonProcess.started(socket: socket, arguments: ["--config", config], environment: withStore)
        #expect(first.notify.store.keys.sorted() == ["port/svc.gone", "port/svc.kept"])
        #expect(try first.stop() == 0)
        #expect(try portFiles(socket).count == 2)

        try writeConfiguration(config, declaring: ["svc.kept"])
        var store = first.notify.takeStore()
        // And descriptors that are no port socket of this portd at all: one
        // under a name of its own, one stored under svc.kept before the
        // real one (it must not hide the real one).
        let foreign = try LocalSocket.make(.seqPacket)
        try LocalSocket.bind(foreign, path: dir.appending("foreign.sock"))
        try UnixSocket.listen(foreign)
        let impostor = try LocalSocket.make(.seqPacket)
        try LocalSocket.bind(impostor, path: dir.appending("impostor.sock"))
        try UnixSocket.listen(impostor)
        // The test's numbers from here (the harness's store is raw numbers).
        store = [("port/svc.kept", impostor.take())] + store + [("port/svc.foreign", foreign.take())]
        defer { store.forEach { close($0.fd) } }

        let second = try DaemonProcess.started(
            socket: socket, arguments: ["--config", config], environment: withStore, passing: store)
        #expect(second.notify.received.contains("FDSTOREREMOVE=1\nFDNAME=port/svc.gone"), "\(second.notify.received)")
        #expect(second.notify.received.contains("FDSTOREREMOVE=1\nFDNAME=port/svc.kept"), "the impostor is cleared from the store")
        #expect(second.notify.store.keys.sorted() == ["port/svc.kept"])
        #expect(try portFiles(socket).count == 1, "svc.gone's file is removed")
        try second.child.waitForStandardError(containing: "(socket restored from the file-descriptor store)")
        let client = try NameClient(socket: socket)
        #expect(try client.lookUp("svc.kept").outcome == "ok")
        #expect(try client.lookUp("svc.gone").outcome == "not-found")
        client.close()
        #expect(try second.stop() == 0)
        #expect(second.child.standardError.contains("closing the stored socket of svc.foreign"))
        #expect(second.child.standardError.contains("closing the stored socket of svc.kept"), "the impostor")
        #expect(exists(dir.appending("foreign.sock")), "portd never removes a file outside its port directory")
    }

    @Test func aReloadAddsAndRemovesDeclaredPorts() throws {
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try writeConfiguration(config, declaring: ["svc.old"])
        let daemon = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--config", config], environment: withStore)
        let client = try NameClient(socket: daemon.socketPath)
        // A name a client owns is not taken over by a declaration.
        let owned = try client.register("svc.taken")
        #expect(owned.outcome == "registered")

        try writeConfiguration(config, declaring: ["svc.new", "svc.taken"])
        daemon.child.signal(SIGHUP)
        try daemon.notify.waitFor("RELOADING=1", from: daemon.child)
        try daemon.notify.waitFor("READY=1", from: daemon.child)
        #expect(daemon.notify.store.keys.sorted() == ["port/svc.new"])
        #expect(daemon.notify.received.contains("FDSTOREREMOVE=1\nFDNAME=port/svc.old"))
        #expect(try client.lookUp("svc.new").outcome == "ok")
        #expect(try client.lookUp("svc.old").outcome == "not-found")
        #expect(try client.request(MessageID.checkIn, ["name=svc.taken"]).outcome == "not-declared")
        #expect(try client.request(MessageID.status).words.contains("declared=1"))
        withExtendedLifetime(owned) {}
        client.close()
        #expect(try daemon.stop() == 0)
        #expect(daemon.child.standardError.contains("declared port svc.taken not created: a client owns the name"))
    }
}
