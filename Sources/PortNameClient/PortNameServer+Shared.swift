// The process-wide name-server client and NSPortNameServer's vocabulary:
// `PortNameServer.shared` ([NSMessagePortNameServer sharedInstance]) is
// made on first use (connecting to the portd the environment names) and
// kept for the process's life, so a name registered through it lasts until
// it is removed, its port is invalidated, or the process exits; should portd
// drop the connection, the next use of `shared` connects afresh.
//
// `register(_:name:)` gives an existing PCPort a name (registerPort:name:):
// portd makes the named listening socket and the port adopts it, so the
// port receives from both its old rights and the name. `port(forName:)` and
// `removePort(forName:)` are portForName: and removePortForName:.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import Synchronization

extension PortNameServer {
    private static let sharedClient = Mutex<PortNameServer?>(nil)

    /// The process's shared client ([NSMessagePortNameServer
    /// sharedInstance]), connected on first use to the portd the
    /// environment names (PORTD_SOCKET, else the per-user instance).
    public static var shared: PortNameServer {
        get throws(NameServerError) {
            try sharedClient.withLockAnnotated { (client) throws(NameServerError) -> PortNameServer in
                if let client, client.isValid || client.reconnects { return client }
                let made = try PortNameServer()
                client = made
                return made
            }
        }
    }

    /// Registers `port` under `name` (NSPortNameServer registerPort:name:):
    /// true when the name is now the port's, false when someone owns it.
    /// The name lasts while this client's connection does (for `shared`,
    /// the process's life), until `removePort(forName:)`, or until the
    /// port is invalidated. The port must not have a name already.
    @discardableResult
    public func register(_ port: PCPort, name: String) throws(NameServerError) -> Bool {
        switch try register(name) {
        case .registered(let named):
            do {
                try port.adoptListeningSocket(of: named)
            } catch {
                named.invalidate()
                _ = try? release(name)
                throw .transport(error)
            }
            // The port's end is the name's end.
            port.onInvalidation { [weak self] in _ = try? self?.release(name) }
            // Registered again with this port, should portd restart.
            keep(name, port, .registered([.doNotQueue]))
            return true
        case .alreadyOwned, .queued:
            return false
        }
    }

    /// A send right to `name`'s port (NSPortNameServer portForName:), or nil
    /// when nobody owns the name: portd is asked each time, as Apple's asks
    /// its name server, so the answer is the name's owner now. The right
    /// lives as long as its holder keeps it.
    public func port(forName name: String) throws(NameServerError) -> SendRight? {
        try lookup(name)
    }

    /// Gives `name` up (NSPortNameServer removePortForName:): true when it
    /// was this client's.
    @discardableResult
    public func removePort(forName name: String) throws(NameServerError) -> Bool {
        try release(name) == .released
    }
}
