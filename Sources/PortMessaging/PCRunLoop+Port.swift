// Adding a port to a run loop from the loop's side (NSRunLoop
// addPort:forMode: / removePort:forMode:), the spelling Foundation code
// uses; the same as PCPort.schedule(in:forMode:) / remove(from:forMode:).
// The loop retains the port until it is removed or invalidated.

import PortRunLoop

extension PCRunLoop {
    /// Adds `port` to `mode` (NSRunLoop addPort:forMode:). The loop
    /// retains the port, which keeps the mode non-empty, until it is
    /// removed from the mode or invalidated.
    public func add(_ port: PCPort, forMode mode: Mode) throws(PortError) {
        try port.schedule(in: self, forMode: mode)
    }

    /// Removes `port` from `mode` (NSRunLoop removePort:forMode:); the loop
    /// lets go of it.
    public func remove(_ port: PCPort, forMode mode: Mode) {
        port.remove(from: self, forMode: mode)
    }

    /// Whether `port` is in `mode` of this loop (for `.common`: whether it
    /// was scheduled in the common modes). See `PCPort.scheduledModes(in:)`.
    public func contains(_ port: PCPort, inMode mode: Mode) -> Bool {
        port.scheduledModes(in: self).contains(mode)
    }
}
