// The process-wide name-server client and NSPortNameServer's vocabulary:
// `PortNameServer.shared` ([NSMessagePortNameServer sharedInstance]) is
// made on first use (connecting to the portd the environment names) and
// kept for the process's life, so a name registered through it lasts until
// it is removed, its port is invalidated, or the process exits; should portd
// drop the connection, the next use of `shared` connects afresh.
//
// `register(_:name:)` gives an existing PCPort a name (registerPort:name:):
// portd makes the named listening socket and the port adopts it, so the
// port receives from both its old rights and the name. A port may carry
// several names, as with Apple's name servers (launchd's bootstrap_register
// refuses a name in use, never a port registered under another name;
// GNUstep's NSMessagePortNameServer keeps a list of names per port): each
// is its own listening socket, and removing one leaves the others. The
// port's invalidation gives each name up only while the name is still that
// port's (not once removed and registered again with another port).
// `port(forName:)` and `removePort(forName:)` are portForName: and
// removePortForName:.

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
    /// port is invalidated. A port may be registered under several names
    /// (each lasts on its own terms: removing one leaves the others), and
    /// again under a name that was removed. Throws `.transport(.invalidated)`
    /// (the name given back) when the port was invalidated.
    @discardableResult
    public func register(_ port: PCPort, name: String) throws(NameServerError) -> Bool {
        switch try register(name) {
        case .registered(let named):
            do {
                try port.adoptListeningSocket(of: named, name: name)
            } catch {
                named.invalidate()
                _ = try? release(name)
                throw .transport(error)
            }
            // Registered again with this port, should portd restart.
            keep(name, port, .registered([.doNotQueue]))
            // The port's end is the name's end while the name is this
            // port's: once removed, and maybe registered again with another
            // port, the name is not this port's to give up.
            let id = ObjectIdentifier(port)
            port.onInvalidation { [weak self] in self?.releaseKept(name, ifPort: id) }
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

    /// Releases `name` if this client keeps it with the port `id`
    /// (`register(_:name:)`), on that port's invalidation.
    private func releaseKept(_ name: String, ifPort id: ObjectIdentifier) {
        // Read through a binding, not `$0.kept[name]?.portID`: that form
        // crashed the debug build of the tests in 17 runs of 20, on a clean
        // build, in swift_weakCopyInit within an outlined copy of KeptName
        // (whose `port` is weak), also when the name was not kept: a copy
        // the optional chain should never have made. The binding passes.
        let mine = state.withLockAnnotated { s -> Bool in
            guard let kept = s.kept[name] else { return false }
            return kept.portID == id
        }
        guard mine else { return }
        _ = try? release(name)
    }

    /// Gives `name` up (NSPortNameServer removePortForName:): true when it
    /// was this client's.
    @discardableResult
    public func removePort(forName name: String) throws(NameServerError) -> Bool {
        try release(name) == .released
    }
}
