// PortdVersion: the one version number of portd, portctl and PortCore,
// printed by `--version` and reported by `portctl status`. Bumped by hand
// with each release; the daemon and its tools always ship together.

import PortWire

/// The version of portd and portctl.
public enum PortdVersion {
    public static let current = "0.1.0"
}
