// PortSource: a port-based input source (Apple's Run Loops guide: "Port-Based Sources";
// CFRunLoopSource version 1): a descriptor the kernel signals through epoll.
// The loop calls `handler` on its thread when the descriptor is ready and the
// loop runs in one of the source's modes; otherwise the readiness is held by
// the kernel until it does. Level-triggered: the handler reads until the
// descriptor is drained (EAGAIN); what it leaves is reported again.

import PortSystem
import Synchronization

public final class PortSource: RunLoopItem, @unchecked Sendable {
    // Safe to share: `attachment` is a Mutex; everything else is immutable;
    // `token` is written once under the loop lock when first added.
    package let attachment = Mutex(LoopAttachment())
    /// The descriptor watched.
    public let fileDescriptor: Int32
    /// The readiness watched (readable by default).
    package let events: Epoll.Events
    package let closesOnInvalidate: Bool
    package let handler: (PortSource) -> Void
    /// Identifies the source in epoll events; unique per loop.
    package var token: UInt64 = 0

    /// Watches `fileDescriptor` for readability. When `closesOnInvalidate`,
    /// the source owns the descriptor and closes it when invalidated (after
    /// removing it from every epoll instance).
    public convenience init(
        fileDescriptor: Int32, closesOnInvalidate: Bool = false,
        handler: @escaping (PortSource) -> Void
    ) {
        self.init(fileDescriptor: fileDescriptor, events: .readable, closesOnInvalidate: closesOnInvalidate, handler: handler)
    }

    package init(fileDescriptor: Int32, events: Epoll.Events, closesOnInvalidate: Bool, handler: @escaping (PortSource) -> Void) {
        self.fileDescriptor = fileDescriptor
        self.events = events
        self.closesOnInvalidate = closesOnInvalidate
        self.handler = handler
    }

    public var isValid: Bool { isAttachedAndValid }

    /// Removes the source from its loop for good; closes the descriptor if
    /// the source owns it. Idempotent; safe from any thread.
    public func invalidate() {
        let (was, loop) = markInvalid()
        guard was else { return }
        loop?.removeEverywhere(self)
        if closesOnInvalidate { SystemCall.close(fileDescriptor) }
    }

    deinit {
        // An owned descriptor is closed even when the source was never
        // invalidated (its loop went away first).
        if closesOnInvalidate && attachment.withLock({ $0.isValid }) { SystemCall.close(fileDescriptor) }
    }
}
