// ConnectionDescriptor: the single owner of one connected socket descriptor,
// shared by reference between whatever uses the connection (a port's
// receiving source, the one-shot reply right of a request that came in on
// it, a SendRight). The descriptor is closed exactly once, when the last user
// lets go, and only after the users removed it from their epoll sets
// (PortSource.invalidate does that first), so its number is never reused
// under anyone's feet.

import PortRunLoop
import PortSystem
import PortWire

package final class ConnectionDescriptor: Sendable {
    package let fd: Int32
    package init(adopting fd: Int32) { self.fd = fd }
    deinit { SystemCall.close(fd) }
}
