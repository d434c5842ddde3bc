// TimerHeap: a mode's timers, a binary min-heap ordered by (fire date,
// sequence). Sequence numbers are handed out when a timer is first added to a
// loop, so equal fire dates fire first-in first-out.
//
// Entries are lazily deleted: an entry is live only while its generation
// equals its timer's (rescheduling or invalidating bumps the generation). To
// keep stale entries from piling up in modes that are not running, the heap
// is rebuilt when fewer than half its entries are live.

import PortSystem

package struct TimerHeap {
    package struct Entry {
        var fireDate: MonotonicInstant
        var sequence: UInt64
        var generation: UInt64
        package let timer: PCTimer  // strong: an identifier in `members` is never reused while an entry holds it

        @inline(__always)
        package func precedes(_ other: Entry) -> Bool {
            fireDate != other.fireDate ? fireDate < other.fireDate : sequence < other.sequence
        }
    }

    private(set) var entries: [Entry] = []
    /// The timers that are in this mode now.
    private var members: Set<ObjectIdentifier> = []
    /// A timer `peekLive` found in `members`, so that the next look at the
    /// same top entry (two or three a pass: the due timers, the wake-up)
    /// hashes nothing; it stays one until `forget` (which clears this),
    /// since nothing else takes a timer out of `members`.
    private var knownMember: ObjectIdentifier?

    var isEmpty: Bool { entries.isEmpty }
    /// How many timers are in this mode.
    var memberCount: Int { members.count }

    package func contains(_ timer: PCTimer) -> Bool { members.contains(ObjectIdentifier(timer)) }

    @inline(__always)
    package func isLive(_ e: Entry) -> Bool {
        e.generation == e.timer.heapGeneration && members.contains(ObjectIdentifier(e.timer))
    }

    /// Adds an entry for the timer's current fire date and generation.
    package mutating func push(_ timer: PCTimer) {
        members.insert(ObjectIdentifier(timer))
        entries.append(Entry(
            fireDate: timer.scheduledFireDate, sequence: timer.sequence,
            generation: timer.heapGeneration, timer: timer))
        siftUp(entries.count - 1)
        if entries.count > 32 && entries.count > 2 * members.count { compact() }
    }

    /// Forgets `timer` (its entries become stale through its generation).
    package mutating func forget(_ timer: PCTimer) {
        members.remove(ObjectIdentifier(timer))
        knownMember = nil
        if entries.count > 32 && entries.count > 2 * members.count { compact() }
    }

    /// The earliest live entry, dropping stale ones on the way.
    package mutating func peekLive() -> Entry? {
        while let top = entries.first {
            if top.generation == top.timer.heapGeneration {
                let id = ObjectIdentifier(top.timer)
                if id == knownMember { return top }
                if members.contains(id) {
                    knownMember = id
                    return top
                }
            }
            popTop()
        }
        return nil
    }

    /// Removes and returns the earliest live timer if it is due at `now`.
    package mutating func popDue(now: MonotonicInstant) -> PCTimer? {
        guard let top = peekLive(), top.fireDate <= now else { return nil }
        popTop()
        return top.timer
    }

    /// The latest instant the loop may sleep until without firing any timer
    /// after the end of its tolerance window: min(fire + tolerance) over live
    /// entries. Visits only entries whose fire date is earlier than the best
    /// bound found so far (sd-event's coalescing window, without a scan).
    package mutating func wakeDeadline() -> MonotonicInstant? {
        guard let top = peekLive() else { return nil }
        var best = top.fireDate + top.timer.scheduledTolerance
        // Usually no other entry starts before the first one's window ends
        // (a zero tolerance, or one timer): then that window is the answer,
        // without the walk and its stack.
        let n = entries.count
        if (n < 2 || entries[1].fireDate >= best) && (n < 3 || entries[2].fireDate >= best) { return best }
        var stack = [0]
        while let i = stack.popLast() {
            let e = entries[i]
            if e.fireDate >= best { continue }
            if isLive(e) {
                let end = e.fireDate + e.timer.scheduledTolerance
                if end < best { best = end }
            }
            let l = 2 * i + 1
            if l < entries.count { stack.append(l) }
            if l + 1 < entries.count { stack.append(l + 1) }
        }
        return best
    }

    private mutating func popTop() {
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
    }

    private mutating func compact() {
        let members = self.members
        entries.removeAll { e in
            !(e.generation == e.timer.heapGeneration && members.contains(ObjectIdentifier(e.timer)))
        }
        // Floyd's heap construction.
        var i = entries.count / 2
        while i > 0 { i -= 1; siftDown(i) }
    }

    private mutating func siftUp(_ index: Int) {
        var i = index
        let e = entries[i]
        while i > 0 {
            let p = (i - 1) / 2
            if !e.precedes(entries[p]) { break }
            entries[i] = entries[p]
            i = p
        }
        entries[i] = e
    }

    private mutating func siftDown(_ index: Int) {
        var i = index
        let e = entries[i]
        let n = entries.count
        while true {
            let l = 2 * i + 1
            if l >= n { break }
            var c = l
            if l + 1 < n && entries[l + 1].precedes(entries[l]) { c = l + 1 }
            if !entries[c].precedes(e) { break }
            entries[i] = entries[c]
            i = c
        }
        entries[i] = e
    }
}
