// Registration: the outcomes of the name-ownership requests (REGISTER,
// RELEASE, CHECKIN), D-Bus's RequestName/ReleaseName semantics: a name has
// one owner and a FIFO queue; a request may allow being replaced, replace
// an owner that allows it, or refuse to queue.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

/// How a REGISTER request ended.
public enum RegistrationOutcome: Sendable {
    /// The name is ours: the port receives what is sent to it (schedule it
    /// on a run loop). It stays ours while the PortNameServer's connection
    /// to portd is open.
    case registered(PCPort)
    /// Someone owns the name; we are in its queue and get it (through the
    /// `onAcquire` handler) when the owners before us go.
    case queued
    /// Someone owns the name and we asked not to queue (or gave no
    /// `onAcquire` handler).
    case alreadyOwned(NameOwner.Process)
}

/// How a RELEASE request ended.
public enum ReleaseOutcome: Sendable, Hashable {
    case released
    /// The name is not ours (not registered, or owned by another client).
    case notOwner
}

/// How a CHECKIN request for a declared port ended (launchd's check-in,
/// not Apple's worker check-in handshake, which is `SendRight.checkIn`).
public enum DeclaredCheckInOutcome: Sendable {
    /// The declared port's receive right; portd keeps its own copy, so
    /// messages wait in the kernel queue while no service is checked in.
    case checkedIn(PCPort)
    /// No port of that name is declared in portd.conf.
    case notDeclared
}

/// How a LOOKUP request ended.
public enum LookupOutcome: Sendable {
    /// A send right to the name's port, and who owns it.
    case found(SendRight, owner: NameOwner.Process)
    /// Nobody owns the name (and no wait was asked for).
    case notFound
    /// Nobody took the name within the wait.
    case timedOut
}
