// RunLoopMode: the modes of a run loop (Apple's Run Loops guide: "Run Loop Modes") and what a
// loop keeps per mode.
//
// A mode is a named set of sources, timers and observers. `.common` is not a
// mode one runs in but a pseudo-mode: an item added to it is in every mode of
// the loop's common set (which starts as [.default] and can grow; modes added
// to the set later get the common items too).
//
// Invariant: every field of ModeState is read and written only with the
// owning loop's lock held, but `epoll` and `observedMask`, which the loop's
// thread reads without the lock on every pass: `observedMask` is an atomic;
// `epoll` is written once, under the lock, before `hasEpoll` is set
// (releasing), and read only after `hasEpoll` was seen set (acquiring).

import PortSystem
import Synchronization

extension PCRunLoop {
    /// A run-loop mode, named by a string.
    public struct Mode: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        public let name: String
        /// The name's hash, computed once: a loop looks its mode up in a
        /// dictionary on every run, and a request runs the loop once per
        /// reply, so hashing the name each time showed in profiles.
        private let nameHash: Int

        public init(_ name: String) {
            self.name = name
            self.nameHash = name.hashValue
        }

        public init(stringLiteral value: String) { self.init(value) }

        public static func == (a: Mode, b: Mode) -> Bool { a.nameHash == b.nameHash && a.name == b.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(nameHash) }

        /// The mode a loop runs in unless told otherwise: `kCFRunLoopDefaultMode`
        /// (`NSDefaultRunLoopMode`), named as in CF so a mode made from CF's
        /// string is this one.
        public static let `default` = Mode("kCFRunLoopDefaultMode")
        /// The common-modes pseudo-mode (`kCFRunLoopCommonModes`,
        /// `NSRunLoopCommonModes`): adding to it adds to every mode in the
        /// common set.
        public static let common = Mode("kCFRunLoopCommonModes")

        public var description: String { name }
    }
}

/// Everything one mode holds. Protected by the owning loop's lock. The
/// fields every pass touches skip the runtime's exclusivity check, for the
/// reason given at PCRunLoop's "Protected by lock": accessed only with the
/// lock held, each access instantaneous, none held across a callout.
package final class ModeState {
    package let mode: PCRunLoop.Mode
    /// The epoll instance watching this mode's port sources plus the loop's
    /// wake-up eventfd and timerfd; created with the first port source, then
    /// kept until the mode is discarded. Read it only once `hasEpoll`.
    /// Exclusivity is not checked at run time: the field is written once,
    /// before `hasEpoll` publishes it, so no read can overlap the write (and
    /// the loop's pass reads it without a runtime call).
    @exclusivity(unchecked) package private(set) var epoll: OwnedDescriptor? = nil
    private let epollCreated = Atomic<Bool>(false)
    /// Whether `epoll` exists; lock-free.
    var hasEpoll: Bool { epollCreated.load(ordering: .acquiring) }
    /// By epoll token. Changed only through `insertPortSource` and
    /// `removePortSource`, which keep `lastFound` true to it.
    @exclusivity(unchecked) private(set) var portSources: [UInt64: PortSource] = [:]
    /// The port source `portSource(_:)` found last, and its token: the
    /// connection a loop serves pass after pass is found without hashing
    /// its token. Cleared when a port source leaves (`removePortSource`),
    /// so it never holds one `portSources` does not. Lock held.
    @exclusivity(unchecked) private var lastFound: PortSource?
    @exclusivity(unchecked) private var lastFoundToken: UInt64 = 0

    /// `portSources[token]`, the last one found first. Lock held.
    @inline(__always)
    func portSource(_ token: UInt64) -> PortSource? {
        if token == lastFoundToken, let s = lastFound { return s }
        guard let s = portSources[token] else { return nil }
        lastFound = s
        lastFoundToken = token
        return s
    }

    /// Puts `source` in `portSources` under its token (unique in the loop,
    /// so `lastFound` cannot name another source of it). Lock held.
    func insertPortSource(_ source: PortSource) {
        portSources[source.token] = source
    }

    /// Takes the source of `token` out of `portSources`. Lock held.
    func removePortSource(_ token: UInt64) -> PortSource? {
        if token == lastFoundToken {
            lastFound = nil
            lastFoundToken = 0
        }
        return portSources.removeValue(forKey: token)
    }
    @exclusivity(unchecked) var customSources: [ObjectIdentifier: RunLoopSource] = [:]
    @exclusivity(unchecked) var timers = TimerHeap()
    /// Runs of this mode in progress (nested runs count each): raised with
    /// the loop's lock held, lowered without it when a run ends, read with
    /// the lock held (`discardMode`, which a stale count only makes keep
    /// the mode a little longer).
    let runDepth = Atomic<Int>(0)
    var isRunning: Bool { runDepth.load(ordering: .relaxed) > 0 }
    @exclusivity(unchecked) var observers: [RunLoopObserver] = []  // sorted by (order, sequence)
    private let observedMask = Atomic<UInt32>(0)
    /// The union of the activities this mode's observers watch.
    var observedActivities: PCRunLoop.Activity {
        PCRunLoop.Activity(rawValue: observedMask.load(ordering: .relaxed))
    }

    package init(mode: PCRunLoop.Mode) { self.mode = mode }

    /// Lock held: installs the mode's epoll instance, once.
    package func setEpoll(_ instance: consuming OwnedDescriptor) {
        precondition(!hasEpoll, "ModeState: epoll instance set twice")
        epoll = consume instance
        epollCreated.store(true, ordering: .releasing)
    }

    var hasSourcesOrTimers: Bool {
        !portSources.isEmpty || !customSources.isEmpty || timers.memberCount > 0
    }

    package func recomputeObservedActivities() {
        var mask: PCRunLoop.Activity = []
        for o in observers { mask.formUnion(o.activities) }
        observedMask.store(mask.rawValue, ordering: .relaxed)
    }
}
