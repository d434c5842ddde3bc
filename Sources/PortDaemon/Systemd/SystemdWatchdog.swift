// SystemdWatchdog: the keep-alive pings the service manager expects when
// the unit sets WatchdogSec= (sd_watchdog_enabled(3)): WATCHDOG=1 at half
// the interval, from a repeating timer on portd's own run loop.
//
// Why a run-loop timer and not a thread: a ping proves that the loop still
// turns. If a handler blocks the loop, the pings stop and systemd restarts
// portd (WatchdogSignal=, Restart=on-failure), which is the point.
//
// Invariants: the timer is in the common modes, so nested runs of the loop
// in a common mode keep pinging; it is a PCTimer like any other (fires on
// the loop's thread, repeats on its scheduled grid, so a late pass does not
// drift the pings); invalidating it stops the pings. A failed ping is
// reported to the caller (to log) and the timer goes on: the next one may
// get through, and if none does, systemd's restart is the right outcome.

import PortCore

enum SystemdWatchdog {
    /// How often to ping for a watchdog `interval`: half of it, as sd_watchdog_enabled(3) advises.
    static func pingInterval(for interval: Duration) -> Duration {
        interval / 2
    }

    /// Adds the pinging timer to `loop` when the service manager expects
    /// pings from this process, and returns it (invalidate it to stop); nil
    /// when WatchdogSec= is not set for portd. Errors of the pings go to
    /// `onError` on the loop's thread.
    static func start(
        on loop: PCRunLoop, notifier: SystemdNotifier, onError: @escaping (SystemCallError) -> Void
    ) throws(SystemCallError) -> PCTimer? {
        guard let interval = try notifier.watchdogInterval(), interval > .zero else { return nil }
        return schedule(on: loop, interval: interval, notifier: notifier, onError: onError)
    }

    /// Adds a timer to `loop` that sends WATCHDOG=1 every half `interval`,
    /// first half an interval from now (READY=1 is sent at start-up anyway),
    /// and returns it.
    static func schedule(
        on loop: PCRunLoop, interval: Duration, notifier: SystemdNotifier,
        onError: @escaping (SystemCallError) -> Void
    ) -> PCTimer {
        let period = pingInterval(for: interval)
        // A small window lets the ping share a wake-up with other timers;
        // it stays far inside the other half of the interval.
        let timer = PCTimer(interval: period, repeats: true, tolerance: period / 10, clock: loop.clock) { _ in
            do throws(SystemCallError) {
                _ = try notifier.watchdog()
            } catch {
                onError(error)
            }
        }
        loop.add(timer, forMode: .common)
        return timer
    }
}
