// OwnedDescriptor: the one owner of one open file descriptor, in the spirit
// of swift-system's FileDescriptor, but non-copyable so that the compiler
// holds the rule "every descriptor has exactly one owner, who closes it".
//
// Ownership is expressed in signatures, never in flags: a function that
// takes `consuming OwnedDescriptor` takes the descriptor over (a SendRight,
// SharedMemory, a PortSource, a child's descriptor table, an OwnedDescriptors
// list); one that takes `borrowing OwnedDescriptor` only uses it for the
// call (every PortSystem wrapper: read, sendmsg, epoll_ctl, bind, ...).
// A descriptor several objects must hold at once (a connection served by a
// port's source and answered through a reply right) is put in one
// SharedDescriptor.
//
// Invariants: the descriptor is closed exactly once, by `deinit` (or
// `close()`, which ends the value early), and never after `take()` handed
// it to code outside this type (fdopendir, a C library). This file holds
// the only close(2) of the code base; EBADF from it means a descriptor was
// closed behind its owner's back, a programmer error, and traps. The raw
// number (`rawValue`) is read by PortSystem's wrappers and by the few
// C-library calls portd makes itself (libsystemd); nothing else needs it.

import CPortSystem
import Glibc

/// An open file descriptor and the duty to close it, exactly once.
@frozen
public struct OwnedDescriptor: ~Copyable, Sendable {
    @usableFromInline let number: Int32

    /// Takes ownership of `rawValue`, an open descriptor nobody else will
    /// close: the entry point for descriptors made outside PortCore (a C
    /// library, a descriptor inherited at start). It is closed when the
    /// value ends.
    @inlinable
    public init(adopting rawValue: Int32) {
        precondition(rawValue >= 0, "OwnedDescriptor(adopting: \(rawValue)): not a descriptor")
        number = rawValue
    }

    /// The descriptor's number, for the wrappers that pass it to the kernel.
    /// Valid while this value is borrowed; never close it.
    @inlinable
    package var rawValue: Int32 { number }

    /// Ends ownership without closing: the number now belongs to the caller
    /// (a C API that takes the descriptor over, such as `fdopendir`).
    @inlinable
    package consuming func take() -> Int32 {
        let n = number
        discard self
        return n
    }

    /// Closes the descriptor now rather than at the end of the scope.
    @inlinable
    package consuming func close() {}

    /// Lends `number`, a descriptor owned elsewhere (a list's slot, a
    /// standard stream), to `body` as an OwnedDescriptor without taking it
    /// over: it is not closed afterwards. PortSystem, and tests that poke a
    /// raw number.
    package static func lending<R: ~Copyable, E: Error>(
        _ number: Int32, to body: (borrowing OwnedDescriptor) throws(E) -> R
    ) throws(E) -> R {
        let lent = OwnedDescriptor(adopting: number)
        do {
            let result = try body(lent)
            _ = lent.take()
            return result
        } catch {
            _ = lent.take()
            throw error
        }
    }

    /// The number as text ("7"), for messages and logs, which name a
    /// descriptor as the kernel and its man pages do.
    package var description: String { "\(number)" }

    deinit { OwnedDescriptor.closeNow(number) }

    /// close(2): the only one. Never retried: Linux closes the descriptor
    /// even when close reports EINTR, and a retry could close a descriptor
    /// another thread has just been given the same number for.
    @usableFromInline
    static func closeNow(_ number: Int32) {
        let r = Glibc.close(number)
        if r == -1 && port_errno() == EBADF {
            preconditionFailure("close(\(number)): Bad file descriptor (closed twice, or behind its owner's back?)")
        }
    }
}
