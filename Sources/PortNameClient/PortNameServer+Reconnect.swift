// PortNameServer+Reconnect: a client that outlives portd's restarts.
//
// portd holds a client's names only while its connection lasts, and a portd
// that stops or crashes takes every connection with it. With
// `reconnectAutomatically(in:delegate:)` the client watches its connection
// on a run loop; when it closes, the delegate is told, and a timer on that
// loop connects again every `retryInterval` until a portd answers at the
// same socket path, each attempt checking the socket's directory as the
// first connection did (a per-user fallback directory under /tmp that is
// not private, as one someone else made while portd was away would be, is
// not connected to). Then the client registers its names again (and checks
// its declared ports in again), each with the port the application already
// holds: the port takes the new listening socket portd made, its existing
// connections stay, and its handlers and delegate are unchanged, so nothing
// but the delegate notices. The delegate learns what became of each name: a
// name someone else took meanwhile is theirs now.
//
// What is kept: names registered with `register(_:)` that came back
// `.registered` (the port it returned) or `register(_:name:)` (the port
// given), and declared ports checked in with `checkIn(declaredName:)`, while
// their port is valid and until they are released. Not kept: queue places,
// watches (their AsyncSequences end with the connection: watch again), a
// name acquired later through `onAcquire`, the `onLost` handler of a
// registration. Rights looked up before keep leading to the old owners'
// ports, which may be gone: look up again.
//
// Threads: the loss handler, the retry timer and the delegate's calls run on
// the loop given; the re-registrations are ordinary requests made from
// there (they run that loop in their private reply mode meanwhile).

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem

/// Told by a PortNameServer that reconnects when portd goes and comes back.
/// Called on the run loop given to `reconnectAutomatically`.
public protocol PortNameServerDelegate: AnyObject {
    /// portd closed the connection (it stopped or crashed): the names are
    /// gone until the client reconnects. Messages sent to them meanwhile
    /// fail with "not registered" for their senders.
    func nameServerDidLoseConnection(_ server: PortNameServer)
    /// A portd answered again and the kept names were registered (or
    /// checked in) again; `names` says how each went.
    func nameServer(_ server: PortNameServer, didReconnectWith names: [String: ReregistrationOutcome])
}

/// What became of a kept name after a reconnection.
public enum ReregistrationOutcome: Sendable {
    /// The name is the port's again (the same PCPort object receives).
    case registered
    /// The declared port is checked in again (the same PCPort object receives).
    case checkedIn
    /// Someone took the name while portd was away; it is no longer kept.
    case taken(NameOwner.Process)
    /// The new portd does not declare this port; it is no longer kept.
    case notDeclared
    /// The request failed; the name is no longer kept.
    case failed(NameServerError)
}

/// A name the client registers again after a reconnection.
package struct KeptName {
    package enum Kind {
        case registered(RegistrationOptions)
        case checkedIn
    }

    weak var port: PCPort?
    /// The port's identity, which stays readable while the port is being
    /// invalidated (its weak reference is nil from its deinit on): its
    /// invalidation releases the name only if the name is still this port's.
    let portID: ObjectIdentifier
    let kind: Kind
}

/// The loop and delegate of `reconnectAutomatically`.
package struct Reconnection: Sendable {
    let loop: PCRunLoop
    let retryInterval: Duration
    let delegate: DelegateReference
    /// Between the loss and the new connection.
    var reconnecting = false
}

/// The delegate, held weakly.
package final class DelegateReference: @unchecked Sendable {
    // Safe to share: `delegate` is written once, in init, before the
    // reference is published through the client's lock, and only read after
    // (on the reconnection loop's thread, where the delegate is called).
    weak var delegate: PortNameServerDelegate?
    init(_ delegate: PortNameServerDelegate?) { self.delegate = delegate }
}

extension PortNameServer {
    /// From now on, when portd closes this client's connection, tells
    /// `delegate`, connects again every `retryInterval` until a portd
    /// answers at `socketPath`, registers the kept names again (see the
    /// file's comment) and tells `delegate` how each went. Everything
    /// happens on `loop`'s thread while it runs (in any mode: the watch
    /// is in `.common`). The delegate is held weakly. Calling it again
    /// changes nothing.
    public func reconnectAutomatically(
        in loop: PCRunLoop, retryInterval: Duration = .milliseconds(250), delegate: PortNameServerDelegate?
    ) throws(NameServerError) {
        precondition(retryInterval > .zero, "the retry interval must be positive")
        let first = state.withLockAnnotated { s -> Bool in
            guard s.reconnection == nil, !s.closed else { return false }
            s.reconnection = Reconnection(loop: loop, retryInterval: retryInterval, delegate: DelegateReference(delegate))
            return true
        }
        if first { try watchForLoss(in: loop) }
    }

    /// Whether this client reconnects after a loss: it stays the one to
    /// use (`PortNameServer.shared` keeps it) while it is away.
    public var reconnects: Bool { state.withLockAnnotated { $0.reconnection != nil && !$0.closed } }

    /// Records that `name` is held with `port`, to register again later.
    package func keep(_ name: String, _ port: PCPort, _ kind: KeptName.Kind) {
        state.withLockAnnotated { $0.kept[name] = KeptName(port: port, portID: ObjectIdentifier(port), kind: kind) }
    }

    private func watchForLoss(in loop: PCRunLoop) throws(NameServerError) {
        try onConnectionLoss(in: loop, forMode: .common) { [weak self] in self?.connectionLost() }
    }

    /// On the loop: tell the delegate, then retry on a timer.
    private func connectionLost() {
        guard let r = state.withLockAnnotated({ s -> Reconnection? in
            guard !s.closed, var r = s.reconnection, !r.reconnecting else { return nil }
            r.reconnecting = true
            s.reconnection = r
            return r
        }) else { return }
        r.delegate.delegate?.nameServerDidLoseConnection(self)
        let timer = PCTimer(fireAt: r.loop.clock.now() + r.retryInterval, interval: r.retryInterval) { [weak self] t in
            guard let self, self.attemptReconnection() else { return t.invalidate() }
        }
        r.loop.add(timer, forMode: .common)
    }

    /// One attempt; true while another is needed.
    private func attemptReconnection() -> Bool {
        guard let r = state.withLockAnnotated({ s in s.closed ? nil : s.reconnection }) else { return false }
        let fresh: Connection
        do {
            fresh = try Self.connect(checking: location, timeout: timeout, limits: limits)
        } catch {
            return true  // no portd yet (or a directory not to trust: never connected to)
        }
        let old = replaceConnection(with: fresh)
        old.invalidate()
        state.withLockAnnotated { s in
            s.reconnection?.reconnecting = false
            s.cache.removeAll()  // rights to the old owners' ports
        }
        // Watch the new connection before anything else, so a portd that
        // goes again during the re-registration is noticed.
        try? watchForLoss(in: r.loop)
        let outcomes = registerKeptNames()
        r.delegate.delegate?.nameServer(self, didReconnectWith: outcomes)
        return false
    }

    /// Registers (or checks in) each kept name again with its port.
    private func registerKeptNames() -> [String: ReregistrationOutcome] {
        let kept = state.withLockAnnotated { $0.kept }
        var outcomes: [String: ReregistrationOutcome] = [:]
        for (name, k) in kept {
            guard let port = k.port, port.isValid else {
                state.withLockAnnotated { _ = $0.kept.removeValue(forKey: name) }
                continue
            }
            let outcome = reregister(name, k.kind, port)
            switch outcome {
            case .registered, .checkedIn:
                keep(name, port, k.kind)  // the request recorded the port it made
            case .taken, .notDeclared, .failed:
                state.withLockAnnotated { _ = $0.kept.removeValue(forKey: name) }
            }
            outcomes[name] = outcome
        }
        return outcomes
    }

    private func reregister(_ name: String, _ kind: KeptName.Kind, _ port: PCPort) -> ReregistrationOutcome {
        do throws(NameServerError) {
            let made: PCPort
            switch kind {
            case .registered(let options):
                switch try register(name, options: options) {
                case .registered(let p): made = p
                case .alreadyOwned(let owner): return .taken(owner)
                case .queued: return .failed(.protocolError("queued although the request said do-not-queue"))
                }
            case .checkedIn:
                switch try checkIn(declaredName: name) {
                case .checkedIn(let p): made = p
                case .notDeclared: return .notDeclared
                }
            }
            do {
                try port.adoptListeningSocket(of: made, name: name)
            } catch {
                made.invalidate()
                return .failed(.transport(error))
            }
            if case .checkedIn = kind { return .checkedIn }
            return .registered
        } catch {
            return .failed(error)
        }
    }

    /// Swaps the connection; returns the old one.
    private func replaceConnection(with fresh: Connection) -> SendRight {
        connection.withLockAnnotated { c in
            let old = c.control
            c = fresh
            return old
        }
    }
}
