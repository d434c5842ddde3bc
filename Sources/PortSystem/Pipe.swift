// Pipe: pipe(2), to talk to a child process through its standard input and
// output.
//
// Invariants: both ends are CLOEXEC (a child gets an end only through its
// Spawn.Descriptors); both are blocking, because the end a child gets must
// behave as a plain pipe for it; the parent sets its own end non-blocking
// when it multiplexes (Descriptor.setNonBlocking), which does not affect
// the child's end (each end is its own file description).

import CPortSystem
import Glibc

package enum Pipe {
    /// The two ends of a new pipe, each owned by the caller (take each out
    /// with `let r = ends.read`).
    @frozen
    package struct Ends: ~Copyable {
        package var read: OwnedDescriptor
        package var write: OwnedDescriptor
    }

    /// A new pipe, both ends CLOEXEC. The corresponding C function is
    /// `pipe2(O_CLOEXEC)`.
    package static func make() throws(SystemCallError) -> Ends {
        var fds: [Int32] = [-1, -1]
        _ = try SystemCall.must("pipe2") { port_pipe2(&fds, O_CLOEXEC) }
        return Ends(read: OwnedDescriptor(adopting: fds[0]), write: OwnedDescriptor(adopting: fds[1]))
    }
}
