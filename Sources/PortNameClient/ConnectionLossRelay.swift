// ConnectionLossRelay: the handlers of PortNameServer.onConnectionLoss, so
// that any number of them can wait on one run loop for the same event. A
// run loop watches a descriptor once per mode (epoll refuses a second ADD),
// so the relay arms one source per (loop, mode) and fans the hang-up out to
// every handler registered there, once.
//
// Threads: `handlers` is protected by `lock`; handlers run on their loop's
// thread, outside the lock (a handler may register another).

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

package final class ConnectionLossRelay: @unchecked Sendable {
    // Safe to share: `handlers` and `fired` are accessed with `lock` held.
    package struct Key: Hashable {
        package let loop: ObjectIdentifier
        package let mode: PCRunLoop.Mode
    }

    private let lock = Lock()
    private var handlers: [Key: [() -> Void]] = [:]
    private var fired: Set<Key> = []

    /// Adds `handler` for `key`; returns true when a source for `key` must
    /// be armed (the first handler there), false when one already is.
    /// A handler added after its key fired is called at once.
    package func add(_ handler: @escaping () -> Void, for key: Key) -> Bool {
        let (arm, late) = lock.withLock { () -> (Bool, Bool) in
            if fired.contains(key) { return (false, true) }
            let first = handlers[key] == nil
            handlers[key, default: []].append(handler)
            return (first, false)
        }
        if late { handler() }
        return arm
    }

    /// Forgets the handlers of `key` (arming its source failed).
    package func remove(_ key: Key) { lock.withLock { _ = handlers.removeValue(forKey: key) } }

    /// Calls every handler of `key`, once.
    package func fire(_ key: Key) {
        let due = lock.withLock { () -> [() -> Void] in
            fired.insert(key)
            return handlers.removeValue(forKey: key) ?? []
        }
        for h in due { h() }
    }
}
