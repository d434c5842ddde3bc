// SystemdNotifier: portd's side of the service manager's notification
// protocol (sd_notify(3)): READY=1, STATUS=, STOPPING=1, WATCHDOG=1,
// RELOADING=1, and FDSTORE=1 with descriptors (sd_pid_notify_with_fds).
//
// Invariants: without NOTIFY_SOCKET every call is a no-op that reports
// "not sent" (libsystemd returns 0), so portd calls these unconditionally;
// NOTIFY_SOCKET stays in the environment (unset_environment = 0) because
// portd notifies many times over its life; a STATUS= text never contains a
// newline (it would start a new assignment). Failures are returned to the
// caller to log, never fatal: a daemon must not die because its manager is
// unreachable. Only Sources/PortDaemon/Systemd/ imports CSystemd.

import CSystemd
import PortCore

package struct SystemdNotifier: Sendable {
    package init() {}

    /// Whether a service manager listens (NOTIFY_SOCKET is set).
    var isEnabled: Bool { CurrentProcess.environment("NOTIFY_SOCKET").map { !$0.isEmpty } ?? false }

    /// READY=1: start-up is finished; sent after the control socket listens.
    @discardableResult
    package func ready(status: String? = nil) throws(SystemCallError) -> Bool {
        try send(["READY=1"] + statusLine(status))
    }

    /// STATUS=: a one-line description shown by `systemctl status`.
    @discardableResult
    package func status(_ text: String) throws(SystemCallError) -> Bool {
        try send(statusLine(text))
    }

    /// STOPPING=1: shutdown has begun.
    @discardableResult
    package func stopping(status: String? = nil) throws(SystemCallError) -> Bool {
        try send(["STOPPING=1"] + statusLine(status))
    }

    /// WATCHDOG=1: the keep-alive ping, at half of `watchdogInterval` or more often.
    @discardableResult
    func watchdog() throws(SystemCallError) -> Bool {
        try send(["WATCHDOG=1"])
    }

    /// RELOADING=1 with the MONOTONIC_USEC= that Type=notify-reload requires;
    /// follow with `ready()` when the reload is done.
    @discardableResult
    package func reloading(status: String? = nil) throws(SystemCallError) -> Bool {
        let microseconds = MonotonicInstant.now().nanoseconds / 1_000
        return try send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)"] + statusLine(status))
    }

    /// FDSTORE=1 with FDNAME=: hands a copy of `descriptor` (lent: portd
    /// keeps its own) to the service manager to keep across a restart (it
    /// comes back through `ListenFDs`). The corresponding C function is
    /// `sd_pid_notify_with_fds`.
    @discardableResult
    func storeFileDescriptor(_ descriptor: borrowing OwnedDescriptor, name: String) throws(SystemCallError) -> Bool {
        let state = "FDSTORE=1\nFDNAME=\(Self.oneLine(name))"
        var number = descriptor.rawValue  // libsystemd sends a duplicate
        let r = sd_pid_notify_with_fds(0, 0, state, &number, 1)
        return try Self.check(r, call: "sd_pid_notify_with_fds(FDSTORE)")
    }

    /// The interval of WatchdogSec= when the manager expects pings from this
    /// process, or nil. The corresponding C function is `sd_watchdog_enabled`.
    func watchdogInterval() throws(SystemCallError) -> Duration? {
        var microseconds: UInt64 = 0
        let r = sd_watchdog_enabled(0, &microseconds)
        guard try Self.check(r, call: "sd_watchdog_enabled") else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }

    // MARK: - Sending

    private func statusLine(_ text: String?) -> [String] {
        guard let text else { return [] }
        return ["STATUS=\(Self.oneLine(text))"]
    }

    /// Sends `assignments` as one notification (the extensions in
    /// SystemdNotifier+*.swift build theirs on it). The corresponding C
    /// function is `sd_notify`.
    func send(_ assignments: [String]) throws(SystemCallError) -> Bool {
        let state = assignments.joined(separator: "\n")
        return try Self.check(sd_notify(0, state), call: "sd_notify(\(assignments.first ?? ""))")
    }

    /// libsystemd returns a negative errno on failure, 0 for "not applicable", > 0 for done.
    private static func check(_ r: Int32, call: String) throws(SystemCallError) -> Bool {
        if r < 0 { throw SystemCallError(call: call, errno: .init(rawValue: -r)) }
        return r > 0
    }

    static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}
