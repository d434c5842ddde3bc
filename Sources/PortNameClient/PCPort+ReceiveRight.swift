// PCPort+ReceiveRight: the receive right of a named port as a descriptor,
// for a program that hands it to another one the way socket activation
// does (LISTEN_FDS): the listening socket the name server passed when the
// name was registered. The port keeps owning it; whoever gets a copy
// (dup2 into a child) has its own.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

extension PCPort {
    /// The listening socket of a port the name server created (nil for an
    /// anonymous port). Valid while the port is.
    public var listeningDescriptor: Int32? { isValid ? listeningFD : nil }
}
