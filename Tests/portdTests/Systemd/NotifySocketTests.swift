// NotifySocketTests: portd never waits for its service manager. The test's
// own NOTIFY_SOCKET (NotifySocket) is left unread while portd fills it
// (`net.unix.max_dgram_qlen` datagrams, 10 by default): sixteen declared
// ports with a file-descriptor store make sixteen FDSTORE=1 before READY=1.
// portd still serves every client and stops on SIGTERM; what must arrive
// is sent again from its run loop once the manager reads, in order. And
// the store is used only when the manager says it has one (FDSTORE): with
// NOTIFY_SOCKET alone, SIGTERM removes the port directory, as portd(8)
// says.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct NotifySocketTests {
    /// More FDSTORE=1 than an unread notify socket holds (its queue takes
    /// `net.unix.max_dgram_qlen` datagrams).
    private static let declared: [String] = {
        let text = (try? String(contentsOfFile: "/proc/sys/net/unix/max_dgram_qlen", encoding: .utf8)) ?? ""
        let queue = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 10
        return (0..<max(16, queue + 6)).map { "svc.p\($0)" }
    }()

    /// A portd with the `declared` ports and a file-descriptor store,
    /// whose notify socket nobody reads yet, once it said its queue is full.
    private func portdWithAFullNotifySocket() throws -> DaemonProcess {
        let d = try DaemonProcess(environment: ["FDSTORE": "\(Self.declared.count)"], declaring: Self.declared)
        try d.child.waitForStandardError(containing: "notify socket is full")
        return d
    }

    /// portd used to block in sd_notify at the eleventh FDSTORE=1: no
    /// client was answered, and SIGTERM was never read.
    @Test func anUnreadNotifySocketStallsNothing() throws {
        let d = try portdWithAFullNotifySocket()
        let status = try d.portctl(["status", "--timeout", "10"])
        #expect(status.status == 0, "\(status.standardError)")
        let owner = try d.client()
        guard case .registered(let port) = try owner.register("org.example.served") else {
            Issue.record("not registered")
            return
        }
        defer { port.invalidate() }
        let other = try d.client()
        #expect(try other.lookup("org.example.served") != nil)
        #expect(try d.stop() == 0)
        let log = d.child.standardError
        #expect(log.components(separatedBy: "notify socket is full").count == 2, "logged once: \(log)")
        #expect(log.contains("notifications never reached the service manager"), "\(log)")
        #expect(d.notify.received.isEmpty)
    }

    /// Once the manager reads, what waited arrives from portd's retry
    /// timer, in order: every FDSTORE=1, then READY=1; then STOPPING=1 at
    /// SIGTERM. With a store, the declared ports' socket files (and so the
    /// port directory) stay for the next portd.
    @Test func whatMustArriveIsSentAgainOnceTheManagerReads() throws {
        let d = try portdWithAFullNotifySocket()
        #expect(try d.portctl(["status", "--timeout", "10"]).status == 0)
        try d.notify.waitFor("READY=1", from: d.child)
        #expect(d.notify.store.keys.sorted() == Self.declared.map { "port/\($0)" }.sorted())
        let beforeReady = d.notify.received.dropLast()
        #expect(beforeReady.count == Self.declared.count, "\(d.notify.received)")
        #expect(beforeReady.allSatisfy { $0.hasPrefix("FDSTORE=1\n") }, "\(d.notify.received)")
        d.child.signal(SIGTERM)
        try d.notify.waitFor("STOPPING=1", from: d.child)
        #expect(try d.child.waitForExit() == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: d.socketPath + ".ports")
        #expect(files.count == Self.declared.count, "\(files)")
    }

    /// NOTIFY_SOCKET without FDSTORE: no store, so nothing is stored and
    /// SIGTERM removes the port directory (portd(8), SIGNALS). portd used
    /// to send FDSTORE=1 for each declared port anyway, and keep their
    /// socket files and the directory.
    @Test func withoutAStoreSIGTERMRemovesThePortDirectory() throws {
        let d = try DaemonProcess.started(declaring: ["svc.nostore"])
        #expect(exists(d.socketPath + ".ports"))
        #expect(try d.stop() == 0)
        #expect(!d.notify.received.contains { $0.contains("FDSTORE=1") }, "\(d.notify.received)")
        #expect(d.notify.store.isEmpty)
        #expect(!exists(d.socketPath + ".ports"))
    }
}

@Suite(.serialized) struct NotifierQueueTests {
    /// The notifier on an unread socket: STATUS= is dropped and counted
    /// once the queue is full; READY=1 and WATCHDOG=1 wait (one WATCHDOG=1
    /// at most) and go, in order, when `retry` finds room.
    @Test func statusIsDroppedTheRestWaits() throws {
        let receiver = try NotifySocket()
        let notifier = SystemdNotifier(environment: { $0 == "NOTIFY_SOCKET" ? receiver.address : nil })
        var sent = 0
        while try notifier.status("line \(sent)") {
            sent += 1
            try #require(sent < 100_000, "the notify socket never filled")
        }
        #expect(notifier.droppedStatusLines == 1)
        #expect(notifier.waiting == 0)
        #expect(try notifier.ready(status: "up"))
        #expect(try notifier.watchdog())
        #expect(try notifier.watchdog())
        #expect(try !notifier.status("dropped while others wait"))
        #expect(notifier.waiting == 2)
        #expect(notifier.droppedStatusLines == 2)
        notifier.retry()
        #expect(notifier.waiting == 2, "still no room")
        for k in 0..<sent { #expect(try receiver.nextDatagram()?.text == "STATUS=line \(k)") }
        notifier.retry()
        #expect(notifier.waiting == 0)
        #expect(try receiver.nextDatagram()?.lines == ["READY=1", "STATUS=up"])
        #expect(try receiver.nextDatagram()?.text == "WATCHDOG=1")
        #expect(try receiver.receiveDatagram() == nil)
    }
}
