// SystemdNotifier+Reload: the notifications around a configuration reload
// (SIGHUP, `systemctl reload portd`): RELOADING=1 with MONOTONIC_USEC=
// before, READY=1 after (sd_notify(3)).
//
// Invariants: READY=1 always follows RELOADING=1, whether the reload worked
// or not: a failed reload keeps the previous configuration and the service
// stays up, and the manager leaves the "reloading" state only on READY=1.
// The STATUS= sent with READY=1 is the reload's own account of itself. A
// notification that cannot be sent is reported and does not stop the reload.

import PortCore

extension SystemdNotifier {
    /// Runs `reload` between RELOADING=1 and READY=1 and returns its outcome.
    /// `reload` returns that outcome and the one-line STATUS= for READY=1,
    /// e.g. "Serving /run/portd/portd.sock (configuration reloaded)" or
    /// "Reload failed: …; serving with the previous configuration". Failures
    /// to notify go to `onError`.
    func aroundReload<Outcome>(
        status: String = "Reloading configuration", onError: (SystemCallError) -> Void,
        _ reload: () -> (outcome: Outcome, status: String)
    ) -> Outcome {
        do {
            _ = try reloading(status: status)
        } catch {
            onError(error)
        }
        let (outcome, readyStatus) = reload()
        do {
            _ = try ready(status: readyStatus)
        } catch {
            onError(error)
        }
        return outcome
    }
}
