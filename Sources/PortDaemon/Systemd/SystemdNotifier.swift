// SystemdNotifier: portd's side of the service manager's notification
// protocol (sd_notify(3)): READY=1, STATUS=, STOPPING=1, WATCHDOG=1,
// RELOADING=1, and FDSTORE=1 with descriptors, written by portd itself on
// a datagram socket of its own that never waits.
//
// Why not sd_notify(3): libsystemd's send waits while the manager's queue
// is full (`net.unix.max_dgram_qlen` datagrams), and a manager that does not
// read it (busy, stalled, or a socket nobody reads) would stop portd's one
// thread there: no client served, SIGTERM never read. A status line is
// worth dropping; the loop is not.
//
// Invariants: every send says MSG_DONTWAIT. What must arrive (READY=1,
// STOPPING=1, RELOADING=1, WATCHDOG=1, FDSTORE=1, FDSTOREREMOVE=1) and
// cannot go now waits in `pending`, in order, and is sent again from a
// timer on the run loop (`retryInterval`, in the common modes) until it
// goes; a WATCHDOG=1 already waiting is not queued twice. A STATUS= alone is
// never queued: one that cannot go now, or while others wait, is dropped
// and counted (`droppedStatusLines`); the first full queue is logged once.
// A descriptor waiting to be stored is held by its SharedDescriptor until
// it goes. Without NOTIFY_SOCKET every call is a no-op that reports "not
// sent", so portd calls these unconditionally; NOTIFY_SOCKET stays in the
// environment; a STATUS= text never contains a newline. Other failures
// are returned to the caller to log, never fatal: a daemon must not die
// because its manager is unreachable. Used on the loop thread of portd
// (or portd-bridge) only.
// Only Sources/PortDaemon/Systemd/ imports CSystemd.

import CSystemd
import Logging
import PortCore

package final class SystemdNotifier {
    /// How often what waits is sent again while the manager's queue is full.
    static let retryInterval: Duration = .milliseconds(100)

    /// Whether a service manager listens (NOTIFY_SOCKET is set).
    let isEnabled: Bool
    /// Whether the manager keeps a file-descriptor store for portd: FDSTORE,
    /// exported by the manager (systemd 254 and later, from
    /// FileDescriptorStoreMax=; the shipped units set it too), is a
    /// positive number. Without one, declared ports are not stored and
    /// their socket files go when portd stops.
    let hasFileDescriptorStore: Bool
    /// Where notifications go, or why NOTIFY_SOCKET is not an address.
    private let address: Result<UnixSocketAddress, SystemCallError>
    private let logger: Logger
    /// The datagram socket, made at the first send.
    private var socket: SharedDescriptor?
    private let control = ControlMessage.Buffer(descriptors: 1, credentials: false)
    /// Notifications that must arrive, oldest first, waiting for room.
    private var pending: [(state: String, descriptor: SharedDescriptor?)] = []
    private var retryTimer: PCTimer?
    private weak var loop: PCRunLoop?
    /// STATUS= lines dropped because the manager's queue was full.
    private(set) var droppedStatusLines = 0
    private var reportedFullQueue = false

    package init(logger: Logger = Logger(label: "portd.notify"), environment: (String) -> String? = CurrentProcess.environment) {
        self.logger = logger
        let value = environment("NOTIFY_SOCKET") ?? ""
        isEnabled = !value.isEmpty
        hasFileDescriptorStore = isEnabled && (environment("FDSTORE").flatMap { Int($0) } ?? 0) > 0
        do throws(UnixSocketAddress.Error) {
            address = .success(try UnixSocketAddress(value))
        } catch {
            // Only a path or an abstract "@name" is understood.
            address = .failure(SystemCallError(call: "NOTIFY_SOCKET=\(value)", errno: .invalidArgument))
        }
    }

    /// Notifications waiting for room in the manager's queue.
    var waiting: Int { pending.count }

    /// Retries what waits from a timer on `loop` (portd's), from now on.
    package func attach(to loop: PCRunLoop) {
        self.loop = loop
        if !pending.isEmpty { armRetry() }
    }

    /// READY=1: start-up is finished; sent after the control socket listens.
    @discardableResult
    package func ready(status: String? = nil) throws(SystemCallError) -> Bool {
        try send(["READY=1"] + statusLine(status))
    }

    /// STATUS=: a one-line description shown by `systemctl status`. Returns
    /// false when it was not sent: no manager, or dropped (its queue full).
    @discardableResult
    package func status(_ text: String) throws(SystemCallError) -> Bool {
        try send(statusLine(text), mustArrive: false)
    }

    /// STOPPING=1: shutdown has begun.
    @discardableResult
    package func stopping(status: String? = nil) throws(SystemCallError) -> Bool {
        try send(["STOPPING=1"] + statusLine(status))
    }

    /// WATCHDOG=1: the keep-alive ping, at half of `watchdogInterval` or more often.
    @discardableResult
    func watchdog() throws(SystemCallError) -> Bool {
        try send([Self.watchdogLine])
    }

    /// RELOADING=1 with the MONOTONIC_USEC= that Type=notify-reload requires;
    /// follow with `ready()` when the reload is done.
    @discardableResult
    package func reloading(status: String? = nil) throws(SystemCallError) -> Bool {
        let microseconds = MonotonicInstant.now().nanoseconds / 1_000
        return try send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)"] + statusLine(status))
    }

    /// FDSTORE=1 with FDNAME=: hands a copy of `descriptor` (portd keeps
    /// its own) to the service manager to keep across a restart (it comes
    /// back through `ListenFDs`). Sent only when the manager has a store.
    @discardableResult
    func storeFileDescriptor(_ descriptor: SharedDescriptor, name: String) throws(SystemCallError) -> Bool {
        guard hasFileDescriptorStore else { return false }
        return try send(["FDSTORE=1", "FDNAME=\(Self.oneLine(name))"], descriptor: descriptor)
    }

    /// The interval of WatchdogSec= when the manager expects pings from this
    /// process, or nil. The corresponding C function is `sd_watchdog_enabled`.
    func watchdogInterval() throws(SystemCallError) -> Duration? {
        var microseconds: UInt64 = 0
        let r = sd_watchdog_enabled(0, &microseconds)
        if r < 0 { throw SystemCallError(call: "sd_watchdog_enabled", errno: .init(rawValue: -r)) }
        guard r > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }

    // MARK: - Sending

    private static let watchdogLine = "WATCHDOG=1"

    private func statusLine(_ text: String?) -> [String] {
        guard let text else { return [] }
        return ["STATUS=\(Self.oneLine(text))"]
    }

    /// Sends `assignments` as one notification (the extensions in
    /// SystemdNotifier+*.swift build theirs on it), with `descriptor` if
    /// given, never waiting. When the manager's queue is full (or others
    /// wait before it) it waits in `pending` for the retry timer, or, unless
    /// `mustArrive`, is dropped. Returns whether it was sent or waits.
    @discardableResult
    func send(
        _ assignments: [String], descriptor: SharedDescriptor? = nil, mustArrive: Bool = true
    ) throws(SystemCallError) -> Bool {
        guard isEnabled else { return false }
        let state = assignments.joined(separator: "\n")
        if pending.isEmpty, try transmit(state, descriptor) { return true }
        reportFullQueue()
        guard mustArrive else {
            droppedStatusLines += 1
            return false
        }
        if state == Self.watchdogLine, pending.contains(where: { $0.state == state }) { return true }
        pending.append((state, descriptor))
        armRetry()
        return true
    }

    /// Sends what waits, oldest first, until the manager's queue is full
    /// again; the retry timer stops when nothing is left. A notification
    /// that fails otherwise is logged and given up.
    func retry() {
        while let first = pending.first {
            let (state, descriptor) = first
            do {
                guard try transmit(state, descriptor) else { return }
            } catch {
                logger.warning("cannot notify the service manager (\(state.prefix { $0 != "\n" })): \(error)")
            }
            pending.removeFirst()
        }
        retryTimer?.invalidate()
        retryTimer = nil
    }

    /// One datagram, now: false when the manager's queue is full.
    private func transmit(_ state: String, _ descriptor: SharedDescriptor?) throws(SystemCallError) -> Bool {
        let address = try self.address.get()
        let socket: SharedDescriptor
        if let made = self.socket {
            socket = made
        } else {
            socket = SharedDescriptor(try LocalSocket.make(.datagram))
            self.socket = socket
        }
        control.reset()
        if let descriptor { control.append(descriptor.descriptor) }
        let controlLength = descriptor == nil ? 0 : control.finish()
        var text = state
        let outcome = text.withUTF8 { bytes in
            Result { () throws(SystemCallError) in
                try UnixSocket.send(
                    socket.descriptor, UnsafeRawBufferPointer(bytes), to: address, control: control,
                    controlLength: controlLength)
            }
        }
        return try outcome.get() != .wouldBlock
    }

    private func armRetry() {
        guard retryTimer == nil, let loop else { return }
        let timer = PCTimer(
            interval: Self.retryInterval, repeats: true, tolerance: Self.retryInterval / 2, clock: loop.clock
        ) { [weak self] _ in self?.retry() }
        loop.add(timer, forMode: .common)
        retryTimer = timer
    }

    private func reportFullQueue() {
        guard !reportedFullQueue else { return }
        reportedFullQueue = true
        logger.warning(
            "the service manager's notify socket is full; portd does not wait for it: STATUS= updates are dropped (counted), other notifications are sent again every \(Self.retryInterval)"
        )
    }

    static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}
