// PortSource: a port-based input source (Apple's Run Loops guide: "Port-Based Sources";
// CFRunLoopSource version 1): a descriptor the kernel signals through epoll.
// The loop calls `handler` on its thread when the descriptor is ready and the
// loop runs in one of the source's modes; otherwise the readiness is held by
// the kernel until it does. Level-triggered: the handler reads until the
// descriptor is drained (EAGAIN); what it leaves is reported again.
//
// Ownership: the source holds its descriptor until it is invalidated. Given
// an OwnedDescriptor it is the only holder, so invalidating closes it (after
// removing it from every epoll instance); given a SharedDescriptor (a
// connection a reply right also uses) it lets go of its share, and the
// descriptor closes when the last holder does.

import PortSystem
import Synchronization

public final class PortSource: RunLoopItem, @unchecked Sendable {
    // Safe to share: `attachment` and `held` are Mutexes; everything else is
    // immutable; `token` is written once under the loop lock when first added.
    package let attachment = Mutex(LoopAttachment())
    /// The descriptor watched; nil once the source is invalidated.
    private let held: Mutex<SharedDescriptor?>
    /// The readiness watched (readable by default).
    package let events: Epoll.Events
    package let handler: (PortSource) -> Void
    /// Identifies the source in epoll events; unique per loop.
    var token: UInt64 = 0

    /// Watches `descriptor` for readability. The source owns it from now on
    /// and closes it when invalidated.
    public convenience init(descriptor: consuming OwnedDescriptor, handler: @escaping (PortSource) -> Void) {
        self.init(descriptor: descriptor, events: .readable, handler: handler)
    }

    /// Watches `descriptor` for `events`, owning it.
    package convenience init(
        descriptor: consuming OwnedDescriptor, events: Epoll.Events, handler: @escaping (PortSource) -> Void
    ) {
        self.init(sharing: SharedDescriptor(descriptor), events: events, handler: handler)
    }

    /// Watches a descriptor other objects hold too; the source keeps its
    /// share until it is invalidated.
    package init(sharing descriptor: SharedDescriptor, events: Epoll.Events = .readable, handler: @escaping (PortSource) -> Void) {
        self.held = Mutex(descriptor)
        self.events = events
        self.handler = handler
    }

    public var isValid: Bool { isAttachedAndValid }

    /// Lends the descriptor to `body`, or returns nil once the source is
    /// invalidated. The descriptor stays open until `body` returns, even if
    /// another thread invalidates the source meanwhile. Safe from any thread.
    package func withDescriptor<R: ~Copyable, E: Error>(_ body: (borrowing OwnedDescriptor) throws(E) -> R) throws(E) -> R? {
        guard let shared = held.withLockAnnotated({ $0 }) else { return nil }
        return try body(shared.descriptor)
    }

    /// Removes the source from its loop for good, then lets go of the
    /// descriptor (which closes it if the source was its only holder).
    /// Idempotent; safe from any thread.
    public func invalidate() {
        let (was, loop) = markInvalid()
        guard was else { return }
        loop?.removeEverywhere(self)
        let released = held.withLockAnnotated { h in
            defer { h = nil }
            return h
        }
        withExtendedLifetime(released) {}  // the last reference, if it is one, closes here
    }
}
