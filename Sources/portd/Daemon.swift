// Daemon: portd on its run loop. The only file of portd that uses the
// PortCore run loop (PCRunLoop, PortSource; see notes/RUNLOOP_API.md);
// everything it calls is loop-independent and tested on its own.
//
// On the main thread's loop, in the default mode, it serves three kinds of
// port-based sources:
//   - the listening control socket: accept until EAGAIN, one source per
//     client connection;
//   - each client connection: ControlConnection answers its requests; a
//     connection that is done is invalidated (its source closes the fd);
//   - the signalfd: SIGTERM or SIGINT sends STOPPING=1 and stops the loop.
// READY=1 goes out once the sources are in the loop (the socket already
// listens, so a client that connects earlier simply waits in the backlog).
// When accept fails for lack of descriptors (EMFILE/ENFILE) the listener's
// source leaves the loop, so a level-triggered socket cannot spin, and comes
// back when a connection closes. A source the loop cannot take (epoll_ctl
// failed) is logged: a connection is dropped; the listener or the signalfd
// failing ends the run with status 1 (a supervisor restarts portd).
// Invariants: all of this runs on one thread (the loop's); `run()` returns
// only after every source it added is invalidated, so the caller may close
// the listener (remove from the loop before closing).

import Glibc
import Logging
import PortCore

final class Daemon {
    private let listener: ControlListener
    private let signalDescriptor: Int32
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let startedAt: MonotonicInstant

    private var listenerSource: PortSource?
    private var signalSource: PortSource?
    private var connections: [Int32: PortSource] = [:]
    private var acceptingPaused = false
    private var exitStatus: Int32 = 0

    init(_ setup: DaemonSetup) {
        listener = setup.listener
        signalDescriptor = setup.signalDescriptor
        notifier = setup.notifier
        logger = setup.logger
        startedAt = setup.startedAt
    }

    /// Serves until SIGTERM or SIGINT; returns the exit status.
    func run() -> Int32 {
        let loop = PCRunLoop.current
        let listenerSource = PortSource(fileDescriptor: listener.fileDescriptor) { [unowned self] _ in
            self.acceptConnections(loop: loop)
        }
        let signalSource = PortSource(fileDescriptor: signalDescriptor, closesOnInvalidate: true) { [unowned self] _ in
            self.handleSignals(loop: loop)
        }
        self.listenerSource = listenerSource
        self.signalSource = signalSource
        do {
            try loop.add(signalSource, forMode: .default)
            try loop.add(listenerSource, forMode: .default)
        } catch {
            logger.critical("cannot serve the control socket: \(error)")
            listenerSource.invalidate()
            signalSource.invalidate()
            return 1
        }

        notify("READY=1") { () throws(SystemCallError) in try notifier.ready(status: "Serving \(listener.path)") }
        loop.run()

        for source in connections.values { source.invalidate() }
        connections.removeAll()
        listenerSource.invalidate()
        signalSource.invalidate()
        return exitStatus
    }

    // MARK: - Sources

    private func acceptConnections(loop: PCRunLoop) {
        while true {
            let fd: Int32
            do {
                guard let accepted = try listener.accept() else { return }
                fd = accepted
            } catch where error.errno == .tooManyOpenFiles || error.errno == .tooManyOpenFilesInSystem {
                logger.error("cannot accept: \(error); pausing until a connection closes")
                if let listenerSource { loop.remove(listenerSource, forMode: .default) }
                acceptingPaused = true
                return
            } catch {
                logger.error("cannot accept: \(error)")
                return
            }
            let connection = ControlConnection(fileDescriptor: fd)
            let source = PortSource(fileDescriptor: fd, closesOnInvalidate: true) { [unowned self] source in
                self.serve(connection, source: source, loop: loop)
            }
            do {
                try loop.add(source, forMode: .default)
            } catch {
                logger.error("cannot serve a new connection: \(error)", metadata: peerMetadata(connection))
                source.invalidate()  // closes the descriptor
                continue
            }
            connections[fd] = source
            logger.debug("client connected", metadata: peerMetadata(connection))
        }
    }

    private func serve(_ connection: ControlConnection, source: PortSource, loop: PCRunLoop) {
        let disposition = connection.serviceReadable { currentStatus() }
        guard case .close(let reason) = disposition else { return }
        var metadata = peerMetadata(connection)
        metadata["reason"] = "\(reason)"
        logger.debug("client disconnected", metadata: metadata)
        connections[connection.fileDescriptor] = nil
        source.invalidate()  // closes the descriptor
        if acceptingPaused, let listenerSource {
            acceptingPaused = false
            do {
                try loop.add(listenerSource, forMode: .default)
            } catch {
                // Without its listener the daemon cannot serve anyone: stop, and let the supervisor restart it.
                logger.critical("cannot resume accepting: \(error); stopping")
                exitStatus = 1
                loop.stop()
            }
        }
    }

    private func handleSignals(loop: PCRunLoop) {
        while true {
            let signal: Int32?
            do {
                signal = try SignalFD.read(signalDescriptor)
            } catch {
                logger.error("cannot read the signalfd: \(error)")
                return
            }
            guard let signal else { return }
            let name = signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "signal \(signal)"
            logger.info("received \(name), stopping")
            notify("STOPPING=1") { () throws(SystemCallError) in try notifier.stopping(status: "Stopping (\(name))") }
            loop.stop()
        }
    }

    // MARK: - Helpers

    private func currentStatus() -> DaemonStatus {
        let uptime = MonotonicInstant.now() - startedAt
        return DaemonStatus(
            version: PortdVersion.current, pid: CurrentProcess.id,
            uptimeMilliseconds: UInt64(max(0, uptime.nanosecondsClamped / 1_000_000)))
    }

    private func peerMetadata(_ connection: ControlConnection) -> Logger.Metadata {
        guard let peer = connection.peer else { return ["fd": "\(connection.fileDescriptor)"] }
        return ["fd": "\(connection.fileDescriptor)", "peer_pid": "\(peer.pid)", "peer_uid": "\(peer.uid)"]
    }

    private func notify(_ what: String, _ body: () throws(SystemCallError) -> Bool) {
        do {
            _ = try body()
        } catch {
            logger.warning("cannot notify the service manager (\(what)): \(error)")
        }
    }
}
