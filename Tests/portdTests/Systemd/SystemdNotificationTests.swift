// SystemdNotificationTests: what portd tells the service manager, received
// on a NOTIFY_SOCKET the test binds itself (the integration harness's
// NotifySocket, an abstract AF_UNIX datagram socket), with the descriptors
// that come along (SCM_RIGHTS):
//   - the watchdog interval from WATCHDOG_USEC/WATCHDOG_PID, and WATCHDOG=1
//     arriving from a run-loop timer at half the interval;
//   - RELOADING=1 with MONOTONIC_USEC=, then READY=1, around a reload;
//   - FDSTORE=1 with FDNAME=port/NAME carrying the very socket (same inode,
//     and it still accepts connections), and FDSTOREREMOVE=1;
//   - STATUS= with the counts.
// libsystemd reads NOTIFY_SOCKET and WATCHDOG_* from this process's
// environment, so the suite sets them (setenv) and is `.serialized`; no
// other test in the process reads these variables.

import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

/// Sets (or, for nil, unsets) environment variables around `body`, then
/// restores the previous values.
private func withEnvironment<T>(_ values: [String: String?], _ body: () throws -> T) throws -> T {
    var previous: [String: String?] = [:]
    for (name, value) in values {
        previous[name] = getenv(name).map { String(cString: $0) }
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }
    defer {
        for (name, value) in previous {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    return try body()
}

/// A listening SOCK_SEQPACKET socket at a path in `dir`.
private func listeningSocket(in dir: TemporaryDirectory, _ name: String) throws -> (fd: SharedDescriptor, path: String) {
    let path = dir.appending(name)
    let fd = try LocalSocket.make(.seqPacket)
    try LocalSocket.bind(fd, path: path)
    try UnixSocket.listen(fd)
    return (SharedDescriptor(fd), path)
}

@Suite(.serialized) struct SystemdNotificationTests {
    @Test func watchdogIntervalComesFromTheEnvironment() throws {
        let notifier = SystemdNotifier()
        let own = try withEnvironment(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "\(getpid())"]) {
            try notifier.watchdogInterval()
        }
        #expect(own == .seconds(3))
        let another = try withEnvironment(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "1"]) {
            try notifier.watchdogInterval()
        }
        #expect(another == nil, "pings are expected from another process")
        try withEnvironment(["WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]) {
            #expect(try notifier.watchdogInterval() == nil)
            let loop = try PCRunLoop.detached()
            #expect(try SystemdWatchdog.start(on: loop, notifier: notifier, onError: { _ in }) == nil)
        }
        #expect(SystemdWatchdog.pingInterval(for: .seconds(30)) == .seconds(15))
    }

    @Test func watchdogPingsArriveAtHalfTheInterval() throws {
        let receiver = try NotifySocket()
        let interval: Duration = .milliseconds(200)
        try withEnvironment([
            "NOTIFY_SOCKET": receiver.address, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "\(getpid())",
        ]) {
            let loop = try PCRunLoop.detached()
            var errors: [SystemCallError] = []
            let started = MonotonicInstant.now()
            let timer = try #require(try SystemdWatchdog.start(on: loop, notifier: SystemdNotifier()) { errors.append($0) })
            #expect(timer.interval == .milliseconds(100))
            #expect(loop.contains(timer, inMode: .default), "the common modes include the default mode")

            // The loop that sends the pings also receives them: the pings are
            // proof that the loop turns, which is the point of the watchdog.
            var arrivals: [MonotonicInstant] = []
            let source = PortSource(sharing: receiver.descriptor) { _ in
                while let datagram = try? receiver.receiveDatagram() {
                    #expect(datagram.text == "WATCHDOG=1")
                    arrivals.append(.now())
                    if arrivals.count == 3 { loop.stop() }
                }
            }
            try loop.add(source, forMode: .default)
            let result = loop.runInMode(.default, timeout: HarnessTimeout)
            source.invalidate()
            timer.invalidate()

            #expect(result == .stopped)
            #expect(errors.isEmpty)
            try #require(arrivals.count == 3)
            // A timer never fires early; pings are 100 ms apart on its
            // schedule (its grid, not the previous ping: a late ping is
            // followed by one on time, so two pings may be closer).
            let ping = SystemdWatchdog.pingInterval(for: interval)
            for (k, arrival) in arrivals.enumerated() {
                #expect(arrival - started >= ping * (k + 1), "ping \(k + 1) came before its time on the grid")
            }
        }
    }

    @Test func reloadSendsReloadingThenReady() throws {
        let receiver = try NotifySocket()
        try withEnvironment(["NOTIFY_SOCKET": receiver.address]) {
            var errors: [SystemCallError] = []
            let before = MonotonicInstant.now().nanoseconds / 1_000
            var seenDuringReload: NotifySocket.Datagram? = nil
            let outcome = SystemdNotifier().aroundReload(onError: { errors.append($0) }) {
                seenDuringReload = try? receiver.nextDatagram()
                return (outcome: 42, status: "Serving /run/portd/portd.sock (configuration reloaded)")
            }
            let after = MonotonicInstant.now().nanoseconds / 1_000
            #expect(outcome == 42)
            #expect(errors.isEmpty)

            let reloading = try #require(seenDuringReload, "RELOADING=1 must be sent before the reload runs")
            #expect(reloading.lines.first == "RELOADING=1")
            #expect(reloading.lines.contains("STATUS=Reloading configuration"))
            let stamp = try #require(reloading.lines.first { $0.hasPrefix("MONOTONIC_USEC=") })
            let microseconds = try #require(UInt64(stamp.dropFirst("MONOTONIC_USEC=".count)))
            #expect(before <= microseconds && microseconds <= after, "MONOTONIC_USEC is CLOCK_MONOTONIC in µs")

            let ready = try #require(try receiver.nextDatagram())
            #expect(ready.lines == ["READY=1", "STATUS=Serving /run/portd/portd.sock (configuration reloaded)"])
            #expect(try receiver.receiveDatagram() == nil)
        }
    }

    @Test func fileDescriptorStoreCarriesTheDeclaredPortsSockets() throws {
        let receiver = try NotifySocket()
        let dir = try TemporaryDirectory()
        let spooler = try listeningSocket(in: dir, "spooler.sock")
        let notes = try listeningSocket(in: dir, "notes.sock")
        try withEnvironment(["NOTIFY_SOCKET": receiver.address, "FDSTORE": "8"]) {
            let notifier = SystemdNotifier()
            let storedSpooler = try notifier.storeDeclaredPort(named: "org.example.spooler", fileDescriptor: spooler.fd)
            let storedNotes = try notifier.storeDeclaredPort(named: "me.notes", fileDescriptor: notes.fd)
            #expect(storedSpooler && storedNotes)

            for (port, socket) in [("org.example.spooler", spooler), ("me.notes", notes)] {
                let datagram = try #require(try receiver.nextDatagram())
                #expect(datagram.lines == ["FDSTORE=1", "FDNAME=port/\(port)"])
                try #require(datagram.descriptors.count == 1)
                #expect(datagram.descriptors[0] != socket.fd.descriptor.rawValue)
                let stored = OwnedDescriptor(adopting: datagram.descriptors[0])  // closed at the end of the pass
                let original = try FileSystem.status(ofDescriptor: socket.fd.descriptor)
                let received = try FileSystem.status(ofDescriptor: stored)
                #expect(received.kind == .socket)
                #expect(received.inode == original.inode && received.device == original.device, "the same socket")
                let listening = ListenFDs.isListeningSequentialPacketSocket(stored)
                #expect(listening)

                // And it is the same listening socket: a connection to the path is accepted on the copy.
                let client = try LocalSocket.make(.seqPacket)
                let connected = try LocalSocket.connect(client, path: socket.path)
                #expect(connected == .connected)
                let ready = try LocalSocket.wait(stored, for: .readable, timeout: HarnessTimeout)
                #expect(!ready.isEmpty)
                let accepted = try LocalSocket.accept(stored) != nil
                #expect(accepted)
            }

            #expect(try notifier.removeStoredDeclaredPort(named: "me.notes"))
            let removal = try #require(try receiver.nextDatagram())
            #expect(removal.lines == ["FDSTOREREMOVE=1", "FDNAME=port/me.notes"])
            #expect(removal.descriptors.isEmpty)
        }
    }

    @Test func statusCarriesTheCounts() throws {
        let receiver = try NotifySocket()
        try withEnvironment(["NOTIFY_SOCKET": receiver.address]) {
            let counts = SystemdStatus(
                socketPath: "/run/portd/portd.sock", names: 12, clients: 1, declaredPorts: 2, pendingLookups: 0, refusals: 3)
            #expect(try SystemdNotifier().status(counts))
            let datagram = try #require(try receiver.nextDatagram())
            #expect(
                datagram.text
                    == "STATUS=Serving /run/portd/portd.sock: 12 names, 1 client, 2 declared ports, 0 pending lookups, 3 refusals")
        }
    }

    @Test func withoutANotifySocketNothingIsSent() throws {
        try withEnvironment(["NOTIFY_SOCKET": nil]) {
            let notifier = SystemdNotifier()
            #expect(!notifier.isEnabled)
            let socket = SharedDescriptor(try LocalSocket.make(.seqPacket))
            let stored = try notifier.storeDeclaredPort(named: "a", fileDescriptor: socket)
            let told = try notifier.status(SystemdStatus(socketPath: "/x"))
            #expect(!stored && !told)
            var errors = 0
            let value = notifier.aroundReload(onError: { _ in errors += 1 }) { (outcome: "done", status: "ok") }
            #expect(value == "done" && errors == 0)
        }
    }
}

@Suite struct ListenFDsDeclaredPortsTests {
    private func passed(_ names: String...) -> [ListenFDs.Passed] {
        names.enumerated().map { ListenFDs.Passed(fileDescriptor: 3 + Int32($0.offset), name: $0.element) }
    }

    @Test func namesRoundTrip() {
        #expect(ListenFDs.fileDescriptorName(forDeclaredPort: "org.example.a") == "port/org.example.a")
        #expect(ListenFDs.declaredPortName(fromFileDescriptorName: "port/org.example.a") == "org.example.a")
        #expect(ListenFDs.declaredPortName(fromFileDescriptorName: "port/") == nil)
        #expect(ListenFDs.declaredPortName(fromFileDescriptorName: "control") == nil)
        #expect(ListenFDs.declaredPortName(fromFileDescriptorName: "stored") == nil)
        // systemd's rule for descriptor names: no ':' and at most 255 characters.
        let longest = ListenFDs.fileDescriptorName(forDeclaredPort: String(repeating: "n", count: DeclaredPort.maximumNameLength))
        #expect(longest.count <= 255 && !longest.contains(":"))
    }

    @Test func controlPortsAndTheRest() {
        let classified = ListenFDs.classify(passed("port/b", "control", "stored", "port/a", "port/b"))
        #expect(classified.control == ListenFDs.Passed(fileDescriptor: 4, name: "control"))
        #expect(classified.declaredPorts.map(\.name) == ["b", "a", "b"], "every candidate, in order")
        #expect(classified.declaredPorts.map(\.fileDescriptor) == [3, 6, 7])
        #expect(classified.declaredPort(named: "a") == 6)
        #expect(classified.declaredPort(named: "b") == 3)
        #expect(classified.declaredPort(named: "c") == nil)
        #expect(classified.unused == [.init(fileDescriptor: 5, name: "stored")])
    }

    @Test func anUnnamedSocketBesideStoredPortsIsStillTheControlSocket() {
        // portd.socket without FileDescriptorName= passes "portd.socket"; the
        // store adds the ports: the control socket must still be found.
        let classified = ListenFDs.classify(passed("portd.socket", "port/a"))
        #expect(classified.control?.fileDescriptor == 3)
        #expect(classified.declaredPorts.map(\.name) == ["a"])
        #expect(classified.unused.isEmpty)
    }

    @Test func aStoredPortIsNeverTheControlSocket() {
        let classified = ListenFDs.classify(passed("port/a"))
        #expect(classified.control == nil)
        #expect(classified.declaredPort(named: "a") == 3)
        #expect(ListenFDs.classify([]) == ListenFDs.Classified(control: nil, declaredPorts: [], unused: []))
    }

    @Test func statusTextIsOneLineWithCounts() {
        var status = SystemdStatus(socketPath: "/s")
        #expect(status.text == "Serving /s: 0 names, 0 clients, 0 declared ports, 0 pending lookups, 0 refusals")
        status.names = 1
        status.pendingLookups = 1
        #expect(status.text == "Serving /s: 1 name, 0 clients, 0 declared ports, 1 pending lookup, 0 refusals")
    }
}
