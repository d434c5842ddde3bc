// PCPort+ReceiveRight: the receive right of a named port as a descriptor,
// for a program that hands it to another one the way socket activation
// does (LISTEN_FDS): the listening socket the name server passed when the
// name was registered. The port keeps owning it and only lends it; whoever
// gets a copy (a child's Spawn.Descriptors) has its own.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

extension PCPort {
    /// Lends the listening socket of a port the name server created to
    /// `body`; nil for an anonymous port or once the port is invalidated.
    package func withReceiveRight<R: ~Copyable, E: Error>(_ body: (borrowing OwnedDescriptor) throws(E) -> R) throws(E) -> R? {
        try withListeningDescriptor(body)
    }
}
