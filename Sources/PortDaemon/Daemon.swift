// Daemon: portd on its run loop. The only file of portd that runs the
// PortCore run loop; what it serves is the NameServer (a PCPort on the
// control socket) and the signalfd.
//
// On the main thread's loop, in the default mode:
//   - the name server's control port: every client connection, every
//     request, every hang-up (NameServer);
//   - the signalfd: SIGTERM or SIGINT sends STOPPING=1 and stops the loop;
//     SIGHUP reloads portd.conf (RELOADING=1 … READY=1) for policy and limits;
//   - when WatchdogSec= is set, a timer sending WATCHDOG=1 at half of it;
//   - a timer refreshing STATUS= with the counts, at most once a second;
//   - while the service manager's notify queue is full, the notifier's
//     timer sending again what must arrive (SystemdNotifier: no
//     notification ever waits, so a manager that does not read stalls
//     nothing here).
// READY=1 goes out once the control port is in the loop and the declared
// ports exist (the socket already listens, so a client that connects
// earlier simply waits in the backlog). A source the loop cannot take
// ends the run with status 1 (a supervisor restarts portd).
// Invariants: all of this runs on one thread (the loop's); `run()` returns
// only after the name server stopped (its port invalidated, its socket
// files removed) and the signal source is invalidated, so the caller may
// remove the control socket file.

import Logging
import PortCore

final class Daemon {
    private let setup: DaemonSetup
    private let logger: Logger
    private var exitStatus: Int32 = 0
    private var server: NameServer?

    init(_ setup: DaemonSetup) {
        self.setup = setup
        logger = setup.logger
    }

    /// Serves until SIGTERM or SIGINT; returns the exit status.
    func run() -> Int32 {
        let loop = PCRunLoop.current
        let signalDescriptor = setup.signalDescriptor
        let signalSource = PortSource(sharing: signalDescriptor) { [unowned self] _ in
            self.handleSignals(signalDescriptor.descriptor, loop: loop)
        }
        defer { signalSource.invalidate() }
        setup.notifier.attach(to: loop)
        defer { reportUndelivered() }
        do {
            try loop.add(signalSource, forMode: .default)
        } catch {
            logger.critical("cannot watch for signals: \(error)")
            return 1
        }

        let server: NameServer
        do {
            server = try NameServer(
                controlDescriptor: setup.listener.handOverDescriptor(), directory: setup.portDirectory,
                settings: setup.settings, logger: logger, loop: loop, startedAt: setup.startedAt,
                restored: setup.restoredDeclaredPorts, clearStored: setup.clearStoredDeclaredPorts,
                store: setup.notifier, unitStarter: SystemctlUnitStarter(userInstance: setup.settings.onlyUID != nil))
        } catch {
            logger.critical("cannot start the name server: \(error)")
            return 1
        }
        self.server = server
        defer { server.stop() }
        do {
            try server.start()
        } catch {
            logger.critical("cannot serve the control socket: \(error)")
            return 1
        }

        let watchdog: PCTimer?
        do {
            watchdog = try SystemdWatchdog.start(on: loop, notifier: setup.notifier) { [logger] error in
                logger.warning("cannot send WATCHDOG=1: \(error)")
            }
        } catch {
            logger.critical("cannot read the watchdog settings: \(error)")
            return 1
        }
        defer { watchdog?.invalidate() }
        let statusTimer = PCTimer(interval: .seconds(1), repeats: true, tolerance: .milliseconds(250)) {
            [unowned self] _ in self.refreshStatus()
        }
        loop.add(statusTimer, forMode: .default)
        defer { statusTimer.invalidate() }

        let listening = setup.listener.path
        notify("READY=1") { () throws(SystemCallError) in
            try setup.notifier.ready(status: "Serving \(listening)")
        }
        loop.runUntilStopped()  // CFRunLoopRun: a signal handler's stop() ends it
        return exitStatus
    }

    // MARK: - Signals

    private func handleSignals(_ descriptor: borrowing OwnedDescriptor, loop: PCRunLoop) {
        while true {
            let signal: Int32?
            do {
                signal = try SignalFD.read(descriptor)
            } catch {
                logger.error("cannot read the signalfd: \(error)")
                return
            }
            guard let signal else { return }
            if signal == Signal.hangUp {
                reload()
                continue
            }
            let name = Signal.name(signal)
            logger.info("received \(name), stopping")
            notify("STOPPING=1") { () throws(SystemCallError) in
                try setup.notifier.stopping(status: "Stopping (\(name))")
            }
            loop.stop()
        }
    }

    // MARK: - Reload and status

    private func reload() {
        logger.info("received SIGHUP, reloading the configuration")
        setup.notifier.aroundReload(status: "Reloading the configuration", onError: { [logger] error in
            logger.warning("cannot notify the service manager of the reload: \(error)")
        }) { () -> (outcome: Void, status: String) in
            guard let server, let settings = setup.reloadSettings() else {
                return ((), "Reload failed; serving with the previous configuration")
            }
            server.reconfigure(settings)
            logger.info("reloaded the configuration; \(server.summary)")
            return ((), "Reloaded; " + server.summary)
        }
    }

    private var lastStatus = ""

    /// STATUS= with the counts, when they changed since the last one the
    /// manager got (one dropped for a full queue goes again next time).
    private func refreshStatus() {
        guard let server else { return }
        let line = server.summary
        guard line != lastStatus else { return }
        notify("STATUS=") { () throws(SystemCallError) in
            let sent = try setup.notifier.status(line)
            if sent { lastStatus = line }
            return sent
        }
    }

    /// At exit: one last try for what still waits for the manager, and
    /// what never reached it.
    private func reportUndelivered() {
        let notifier = setup.notifier
        notifier.retry()
        if notifier.waiting > 0 {
            logger.warning("\(notifier.waiting) notifications never reached the service manager (its queue stayed full)")
        }
        if notifier.droppedStatusLines > 0 {
            logger.notice("\(notifier.droppedStatusLines) STATUS= updates were dropped (the service manager's queue was full)")
        }
    }

    // MARK: - Helpers

    private func notify(_ what: String, _ body: () throws(SystemCallError) -> Bool) {
        do {
            _ = try body()
        } catch {
            logger.warning("cannot notify the service manager (\(what)): \(error)")
        }
    }
}
