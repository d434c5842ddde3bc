// SharedDescriptor: one OwnedDescriptor held by several objects at once,
// for the descriptors whose ownership really is shared: a connection read
// by a port's source and answered through the one-shot reply right of a
// request that came in on it; a send right's socket watched by a reply
// source; a declared port's listening socket watched by its activator.
//
// Invariants: the descriptor is closed exactly once, when the last holder
// lets go of the object (ARC decides, not a flag). Holders that watch it
// with epoll remove it from their epoll sets before letting go
// (PortSource.invalidate does), so its number is never reused while a set
// still refers to it. Safe to share between threads: the descriptor is
// immutable, and every call on it is a system call.

/// A descriptor owned jointly by everything that holds this object.
package final class SharedDescriptor: Sendable {
    /// The descriptor, lent to whoever holds this object.
    package let descriptor: OwnedDescriptor

    /// Takes `descriptor` over; it closes when the last reference goes.
    package init(_ descriptor: consuming OwnedDescriptor) {
        self.descriptor = descriptor
    }
}
