// Flag: waits (bounded) for a condition another thread makes true, without
// sleeping: the condition is re-checked each time `signal()` is called.

import Foundation

package final class Flag: @unchecked Sendable {
    // Safe to share: `value` is protected by `condition`'s lock.
    private let condition = NSCondition()
    private var value = false

    package init() {}

    package func signal() {
        condition.lock()
        value = true
        condition.broadcast()
        condition.unlock()
    }

    /// Whether it was signalled (now, without waiting).
    package var isSignalled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return value
    }

    /// True when signalled before `timeout`.
    package func wait(timeout: Duration = HarnessTimeout) -> Bool {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !value {
            if !condition.wait(until: deadline) { return value }
        }
        return true
    }
}
