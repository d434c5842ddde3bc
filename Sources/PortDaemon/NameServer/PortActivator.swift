// PortActivator: launchd's on-demand start for declared ports with Exec= or
// Unit= (portd.conf(5)). While a port has no service, portd watches its
// listening socket (readable = a connection waits to be accepted); the
// first waiting connection starts the service:
//   - Exec=: portd runs the command itself, with the port's listening socket
//     as descriptor 3 the way socket activation passes it (LISTEN_FDS=1,
//     LISTEN_FDNAMES=NAME, LISTEN_PID = the command's pid, through a
//     `/bin/sh -c 'export LISTEN_PID=$$; exec "$0" "$@"'` wrapper, as
//     `portctl register` does) and PORTD_SOCKET, so it may also CHECKIN;
//     its exit is seen through a pidfd on the run loop, and reaped there.
//   - Unit=: portd asks the service manager to start UNIT (its
//     `UnitStarter`: `systemctl start --no-block UNIT`, from
//     Systemd/SystemctlUnitStarter), sees that request's process exit on
//     the run loop, and waits for the unit's service to check in.
// A port has a service while a command portd started runs, while a client
// connection that checked in for it stays open, or, for Unit=, until the
// unit checks in or `checkInWait` passes. Only without one is the socket
// watched, so a running service's own backlog never starts a second copy.
// Starts are at least `throttle` apart: a service that exits at once is
// started again no sooner (launchd's ThrottleInterval), and a waiting
// connection left when the service is gone starts it again. A start that
// fails (the command cannot be run, exits non-zero or is killed; systemctl
// fails; a unit never checks in) doubles the wait before the next one, up
// to `maximumBackOff`, so a broken service with a connection stuck in its
// backlog costs a start every few minutes, not every second; a service
// that exits 0 or checks in resets it.
//
// Invariants: everything runs on the name server's loop thread; a port's
// watch, child and timers go when the port stops being declared (a child
// still running is watched until it exits, so it is always reaped);
// failures to start are logged and retried after `throttle`, never fatal.

import Logging
import PortActivation
import PortCore

/// Asks the service manager to start a unit (Unit=): the process that
/// asks, whose exit the activator watches and reaps.
protocol UnitStarter {
    /// Starts the request for `unit` with `environment`; returns its pid.
    func start(unit: String, environment: [String]) throws(SystemCallError) -> Int32
}

final class PortActivator {
    /// How a declared port's service is started.
    enum Starter: Equatable {
        /// Exec=: the program (absolute path) and its arguments.
        case command([String])
        /// Unit=: a unit of the service manager.
        case unit(String)
    }

    /// The shortest time between two starts of one port's service.
    static let throttle: Duration = .seconds(1)
    /// How long a unit started for a port may take to check in before a
    /// waiting connection may start it again.
    static let checkInWait: Duration = .seconds(30)
    /// The longest wait between two starts after failures.
    static let maximumBackOff: Duration = .seconds(300)

    private struct Child {
        let pid: Int32
        let exit: PortSource
    }

    private struct Entry {
        var starter: Starter
        /// portd's listening socket (shared with DeclaredPorts).
        let descriptor: SharedDescriptor
        var watch: PortSource?
        var child: Child?
        /// Control connections that checked in for the port and are open.
        var checkedIn: Set<ClientID> = []
        /// Until when a started unit counts as the service (Unit= only).
        var awaitingCheckInUntil: MonotonicInstant?
        var lastStart: MonotonicInstant?
        var timer: PCTimer?
        /// Failed starts in a row (see the header).
        var failures = 0

        /// The wait after the last start before the next may happen.
        var spacing: Duration {
            guard failures > 0 else { return PortActivator.throttle }
            let doubled = PortActivator.throttle * (1 << min(failures, 16))
            return min(doubled, PortActivator.maximumBackOff)
        }
    }

    private var entries: [PortName: Entry] = [:]
    /// Children of ports no longer declared, reaped when they exit.
    private var orphans: [Int32: PortSource] = [:]
    private let loop: PCRunLoop
    private let mode: PCRunLoop.Mode
    private let logger: Logger
    private let controlSocketPath: String
    private let unitStarter: any UnitStarter

    init(
        loop: PCRunLoop, mode: PCRunLoop.Mode, logger: Logger, controlSocketPath: String, unitStarter: any UnitStarter
    ) {
        self.loop = loop
        self.mode = mode
        self.logger = logger
        self.controlSocketPath = controlSocketPath
        self.unitStarter = unitStarter
    }

    /// Follows the declared ports: `ports` maps each port with Exec= or
    /// Unit= to its listening descriptor and starter. Ports not listed stop
    /// being watched.
    func configure(_ ports: [PortName: (descriptor: SharedDescriptor, starter: Starter)]) {
        for name in entries.keys where ports[name] == nil || ports[name]!.descriptor !== entries[name]!.descriptor {
            drop(name)
        }
        for (name, port) in ports.sorted(by: { $0.key < $1.key }) {
            if entries[name] == nil {
                entries[name] = Entry(starter: port.starter, descriptor: port.descriptor)
            } else {
                entries[name]!.starter = port.starter
            }
            evaluate(name)
        }
    }

    /// A client connection checked in for `name`.
    func checkedIn(_ name: PortName, by client: ClientID) {
        guard entries[name] != nil else { return }
        entries[name]!.checkedIn.insert(client)
        entries[name]!.awaitingCheckInUntil = nil
        entries[name]!.failures = 0
        evaluate(name)
    }

    /// A client connection closed.
    func clientGone(_ client: ClientID) {
        for name in entries.keys where entries[name]!.checkedIn.contains(client) {
            entries[name]!.checkedIn.remove(client)
            evaluate(name)
        }
    }

    /// Stops watching everything (portd stops). Services it started keep
    /// running; under systemd they belong to portd's unit.
    func stop() {
        for name in entries.keys { drop(name) }
        for (_, exit) in orphans { exit.invalidate() }
        orphans.removeAll()
    }

    // MARK: - The state of one port

    private func hasService(_ e: Entry, now: MonotonicInstant) -> Bool {
        if e.child != nil || !e.checkedIn.isEmpty { return true }
        if let until = e.awaitingCheckInUntil, now < until { return true }
        return false
    }

    /// Watches the socket when the port has no service and may start one;
    /// otherwise stops watching (and arms a timer for when that changes by
    /// itself: the throttle or the check-in wait ending).
    private func evaluate(_ name: PortName) {
        guard var e = entries[name] else { return }
        let now = loop.clock.now()
        e.timer?.invalidate()
        e.timer = nil
        var wakeAt: MonotonicInstant?
        if hasService(e, now: now) {
            if e.child == nil, e.checkedIn.isEmpty { wakeAt = e.awaitingCheckInUntil }
        } else if let last = e.lastStart, now < last + e.spacing {
            wakeAt = last + e.spacing
        } else {
            if e.awaitingCheckInUntil != nil {
                // A unit was asked for and never checked in.
                e.failures += 1
                logger.error(
                    "the unit for declared port \(name) did not check in within \(Self.checkInWait)",
                    metadata: ["name": "\(name)"])
            }
            e.awaitingCheckInUntil = nil
            if e.watch == nil { e.watch = startWatching(name, descriptor: e.descriptor) }
            entries[name] = e
            return
        }
        e.watch?.invalidate()
        e.watch = nil
        if let wakeAt {
            let timer = PCTimer(fireAt: wakeAt) { [unowned self] _ in
                self.entries[name]?.timer = nil
                self.evaluate(name)
            }
            loop.add(timer, forMode: mode)
            e.timer = timer
        }
        entries[name] = e
    }

    private func startWatching(_ name: PortName, descriptor: SharedDescriptor) -> PortSource? {
        let source = PortSource(sharing: descriptor) { [unowned self] _ in
            self.connectionWaits(name)
        }
        do {
            try loop.add(source, forMode: mode)
            return source
        } catch {
            logger.error("cannot watch declared port \(name) for activation: \(error)", metadata: ["name": "\(name)"])
            return nil
        }
    }

    /// A connection waits on a port without a service: start it.
    private func connectionWaits(_ name: PortName) {
        guard var e = entries[name] else { return }
        e.watch?.invalidate()
        e.watch = nil
        e.lastStart = loop.clock.now()
        let meta: Logger.Metadata = ["name": "\(name)"]
        do {
            switch e.starter {
            case .command(let command):
                let pid = try start(command, listening: e.descriptor, name: name)
                e.child = try watchExit(of: pid, name: name)
                logger.info("started \(command[0]) (pid \(pid)) for declared port \(name)", metadata: meta)
            case .unit(let unit):
                let pid = try unitStarter.start(unit: unit, environment: environment(for: name).filter { !$0.hasPrefix("LISTEN_") })
                e.child = try watchExit(of: pid, name: name)
                e.awaitingCheckInUntil = loop.clock.now() + Self.checkInWait
                logger.info("asked the service manager to start \(unit) for declared port \(name)", metadata: meta)
            }
        } catch {
            e.failures += 1
            logger.error("cannot start the service of declared port \(name): \(error)", metadata: meta)
        }
        entries[name] = e
        evaluate(name)
    }

    /// The environment of what portd starts for `name`: its own, without
    /// the service manager's notification and watchdog variables, with
    /// PORTD_SOCKET (so the service may CHECKIN) and PORTD_PORT_NAME.
    private func environment(for name: PortName) -> [String] {
        let inherited = Spawn.currentEnvironment.filter { variable in
            !["NOTIFY_SOCKET=", "WATCHDOG_", "PORTD_SOCKET="].contains { variable.hasPrefix($0) }
        }
        return inherited + ["PORTD_SOCKET=\(controlSocketPath)", "PORTD_PORT_NAME=\(name)"]
    }

    /// Spawns `command` with `listening` passed the way socket activation
    /// does (SocketActivationLaunch.start). The socket stays non-blocking: its file
    /// description is shared with portd and with services that check in.
    private func start(_ command: [String], listening: SharedDescriptor, name: PortName) throws(SystemCallError) -> Int32 {
        try SocketActivationLaunch.start(
            command, listening: listening.descriptor, name: name.value, environment: environment(for: name))
    }

    private func watchExit(of pid: Int32, name: PortName) throws(SystemCallError) -> Child {
        let source = PortSource(descriptor: try Spawn.exitDescriptor(pid)) { [unowned self] source in
            source.invalidate()
            self.childExited(pid, name: name)
        }
        do {
            try loop.add(source, forMode: mode)
        } catch {
            source.invalidate()  // closes the pidfd, once
            throw error
        }
        return Child(pid: pid, exit: source)
    }

    private func childExited(_ pid: Int32, name: PortName) {
        let termination = (try? Spawn.wait(pid)).flatMap { $0 }
        let how = termination?.description ?? "ended"
        if orphans.removeValue(forKey: pid) != nil { return }
        guard entries[name]?.child?.pid == pid else { return }
        entries[name]!.child = nil
        let meta: Logger.Metadata = ["name": "\(name)", "pid": "\(pid)"]
        let succeeded = termination == .exited(0)
        if case .unit = entries[name]!.starter {
            if !succeeded {
                entries[name]!.failures += 1
                entries[name]!.awaitingCheckInUntil = nil
                logger.error("systemctl for declared port \(name) \(how)\(nextTry(name))", metadata: meta)
            }
        } else if succeeded {
            entries[name]!.failures = 0
            logger.info("the service of declared port \(name) (pid \(pid)) \(how)", metadata: meta)
        } else {
            entries[name]!.failures += 1
            logger.error("the service of declared port \(name) (pid \(pid)) \(how)\(nextTry(name))", metadata: meta)
        }
        evaluate(name)
    }

    /// "; next start in N s at the earliest", after a failure.
    private func nextTry(_ name: PortName) -> String {
        guard let e = entries[name], e.failures > 0 else { return "" }
        return "; failure \(e.failures) in a row, next start in \(e.spacing) at the earliest"
    }

    private func drop(_ name: PortName) {
        guard let e = entries.removeValue(forKey: name) else { return }
        e.watch?.invalidate()
        e.timer?.invalidate()
        if let child = e.child { orphans[child.pid] = child.exit }
    }
}
