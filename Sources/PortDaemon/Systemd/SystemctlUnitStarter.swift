// SystemctlUnitStarter: how portd asks the service manager to start a
// unit for a declared port with Unit= (portd.conf(5)): it runs
// `systemctl start --no-block UNIT` (`--user` for the per-user instance;
// systemctl found in PATH) and returns at once; the activator watches the
// systemctl process's exit and waits for the unit's service to check in.
//
// Invariants: the only place portd runs systemctl; no waiting here (the
// exit is seen on the run loop through a pidfd, by the caller).

import PortCore

/// Asks the service manager to start units.
struct SystemctlUnitStarter: UnitStarter {
    /// Whether portd is the per-user instance (`systemctl --user`).
    let userInstance: Bool

    /// The command that asks for `unit`.
    func command(for unit: String) -> [String] {
        ["systemctl"] + (userInstance ? ["--user"] : []) + ["start", "--no-block", unit]
    }

    func start(unit: String, environment: [String]) throws(SystemCallError) -> Int32 {
        try Spawn.start(command(for: unit), environment: environment)
    }
}
