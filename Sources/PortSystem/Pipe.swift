// Pipe: pipe(2), to talk to a child process through its standard input and
// output.
//
// Invariants: both ends are CLOEXEC (a child gets an end only through an
// explicit dup2 in its spawn actions); both are blocking, because the end
// a child gets must behave as a plain pipe for it; the parent sets its own
// end non-blocking when it multiplexes (Descriptor.setNonBlocking), which
// does not affect the child's end (each end is its own file description).

import CPortSystem
import Glibc

package enum Pipe {
    /// A new pipe: (read end, write end), both CLOEXEC. The corresponding C
    /// function is `pipe2(O_CLOEXEC)`.
    package static func make() throws(SystemCallError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try SystemCall.must("pipe2") { port_pipe2(&fds, O_CLOEXEC) }
        return (fds[0], fds[1])
    }
}
