// LoopAttachment: which loop an item (source, timer, observer) belongs to,
// and whether it is still valid. An item belongs to at most one loop, in any
// number of its modes; `invalidate()` is final and idempotent.
//
// Race rule (see PCRunLoop.add): an item's validity is cleared *before* it is
// removed from its loop, and the loop re-checks validity under its own lock
// when inserting, so an add racing an invalidate never leaves an invalid item
// scheduled. Lock order: loop lock, then attachment lock; never the reverse.

import PortSystem
import Synchronization

package struct LoopAttachment: Sendable {
    weak var loop: PCRunLoop?
    var isValid = true
}

/// What every schedulable item has.
package protocol RunLoopItem: AnyObject, Sendable {
    var attachment: Mutex<LoopAttachment> { get }
}

extension RunLoopItem {
    var isAttachedAndValid: Bool { attachment.withLockAnnotated { $0.isValid } }

    /// Binds the item to `loop`; false when it is invalid. Traps when it
    /// already belongs to another loop (a programmer error, as in CF).
    package func bind(to loop: PCRunLoop) -> Bool {
        attachment.withLockAnnotated { a in
            guard a.isValid else { return false }
            if let existing = a.loop {
                precondition(existing === loop, "\(Self.self) already belongs to another run loop")
            } else {
                a.loop = loop
            }
            return true
        }
    }

    /// Marks the item invalid; returns the loop it was in, if any, exactly
    /// once (a second call returns nil and `wasValid` false).
    package func markInvalid() -> (wasValid: Bool, loop: PCRunLoop?) {
        attachment.withLockAnnotated { a in
            let was = a.isValid
            a.isValid = false
            let l = a.loop
            a.loop = nil
            return (was, was ? l : nil)
        }
    }
}
