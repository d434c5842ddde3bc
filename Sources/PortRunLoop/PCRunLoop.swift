// PCRunLoop: one run loop per thread (Apple's Run Loops guide: "Anatomy of a Run Loop";
// Foundation's RunLoop, hence the prefix).
//
// One pass, in this order (Apple's Run Loops guide: "The Run Loop Sequence of Events"), and
// this order is a guarantee:
//
//   1. notify .entry                       (once per run, not per pass)
//   2. notify .beforeTimers
//   3. notify .beforeSources
//   4. run queued perform requests (a perform on a thread counts as a
//      source handled, a block does not); perform signalled custom sources
//   5. if a port source is already ready, handle it without sleeping (go to 9)
//   6. notify .beforeWaiting
//   7. sleep in epoll_wait until a port source is ready, a timer is due, the
//      run's timeout passes, or the loop is woken explicitly
//   8. notify .afterWaiting
//   9. fire due timers, then handle every ready port source of the wait;
//      then return if a source was handled and the run asked for that,
//      if the timeout passed, if stop() was called, or if the mode became
//      empty; otherwise go to 2
//  10. notify .exit                        (once per run)
//
// A pass that does not block (timeout already passed, or a custom source was
// just performed) polls instead of sleeping and sends neither .beforeWaiting
// nor .afterWaiting, as CFRunLoop does. Step 5 costs a system call, so it is
// taken only when an observer could tell the difference (one watches
// .beforeWaiting or .afterWaiting); otherwise the wait of step 7 returns at
// once with the same events.
//
// Kernel objects: an epoll instance per mode that has port sources (so a
// mode's sleep watches only its own descriptors; readiness of other modes'
// descriptors is held by the kernel), one eventfd for wake-ups and one
// timerfd on CLOCK_MONOTONIC, armed for the earliest timer window of the mode
// being run, both in every mode's epoll. Cost per pass does not depend on
// the number of idle sources.
//
// Threads: only the owning thread runs the loop. `lock` protects all shared
// state (modes, common modes, signalled sources, perform queue, flags); no
// callback is ever called with it held. The fields marked owner-only are
// touched only by the owning thread.

import PortSystem
import Synchronization

public final class PCRunLoop: @unchecked Sendable {
    // Safe to share: immutable fields are set in init; fields under
    // "protected by lock" are accessed only inside `lock.withLock`; fields
    // under "owner-only" are accessed only on `owner` (checked by
    // precondition in every entry point that touches them).

    /// How a `runInMode` ended: CFRunLoopRunResult, case for case
    /// (kCFRunLoopRunFinished, kCFRunLoopRunStopped, kCFRunLoopRunTimedOut,
    /// kCFRunLoopRunHandledSource), with CF's meaning.
    public enum RunResult: Sendable, Equatable, CustomStringConvertible {
        /// The mode has no sources or timers (returned at once, or after the
        /// last one went; CF does not tell these apart either).
        case finished
        /// `stop()` was called.
        case stopped
        /// The timeout passed.
        case timedOut
        /// A source was handled and the run was asked to return after one.
        case handledSource

        public var description: String {
            switch self {
            case .finished: "finished"
            case .stopped: "stopped"
            case .timedOut: "timedOut"
            case .handledSource: "handledSource"
            }
        }
    }

    // MARK: Immutable

    package let owner: ThreadIdentity
    package let wakeFD: OwnedDescriptor
    package let timerFD: OwnedDescriptor
    /// Sleeps modes that have no port sources: holds only wakeFD and timerFD.
    package let bareEpoll: OwnedDescriptor
    /// Where the loop reads the time.
    public let clock: any RunLoopClock
    package let clockIsSystem: Bool
    /// Whether this is `PCRunLoop.main`, which services the main dispatch queue.
    package let isMain: Bool
    package let lock = Lock()

    package static let wakeToken: UInt64 = 0
    package static let timerToken: UInt64 = 1

    // MARK: Protected by lock
    //
    // The fields read or written on every pass are marked
    // @exclusivity(unchecked): the runtime's dynamic exclusivity check costs
    // a thread-local lookup and a set insertion per access, and these are
    // accessed on every pass. It is safe because every access is
    // instantaneous and serialized: fields of this section only with `lock`
    // held, fields of the next only on the owner thread, and no code holds
    // a mutating access to one of them across a call out (callouts run with
    // the lock released, after the access ended), so no two accesses can
    // overlap.

    @exclusivity(unchecked) var modes: [Mode: ModeState] = [:]
    @exclusivity(unchecked) var commonModes: Set<Mode> = [.default]
    var commonItems: [ObjectIdentifier: CommonItem] = [:]
    @exclusivity(unchecked) var stopRequested = false {
        didSet { stopHint.store(stopRequested, ordering: .relaxed) }
    }
    @exclusivity(unchecked) var performQueue: [PerformRequest] = [] {
        didSet { performHint.store(performQueue.count, ordering: .relaxed) }
    }
    @exclusivity(unchecked) var signalled: [ObjectIdentifier: RunLoopSource] = [:] {
        didSet { signalledHint.store(signalled.count, ordering: .relaxed) }
    }
    // Lock-free hints of the three fields above, written under the lock
    // whenever they change, read by the owner thread to skip taking the lock
    // when there is nothing to do. A stale zero is harmless: whoever adds
    // work wakes the loop if it sleeps, and the sleep decision re-checks
    // under the lock.
    package let stopHint = Atomic<Bool>(false)
    package let performHint = Atomic<Int>(0)
    package let signalledHint = Atomic<Int>(0)
    /// Set just before the owner sleeps in epoll_wait, once it found
    /// nothing to do; cleared, without the lock, once it woke. Whoever
    /// changes the loop's state under the lock then calls
    /// `wakeIfSleeping`, which bumps `stateGeneration` and, finding this
    /// set, wakes the loop; a stale `true` costs one spurious wake-up, and
    /// `false` is never seen while the owner sleeps.
    package let sleepingFlag = Atomic<Bool>(false)
    /// Whether the owner sleeps (see `sleepingFlag`).
    package var sleeping: Bool { sleepingFlag.load(ordering: .sequentiallyConsistent) }
    /// Bumped under the lock by every change to what a pass looks at before
    /// it sleeps (items, perform requests, signalled sources, timers' dates,
    /// a stop). A pass that saw the state at generation G, and still reads
    /// G after setting `sleepingFlag`, sleeps on what it saw without taking
    /// the lock again: the two sides are Dekker's (each stores, then loads
    /// what the other stores, all sequentially consistent), so either the
    /// owner sees the new generation or the writer sees it sleeping and
    /// wakes it.
    package let stateGeneration = Atomic<UInt64>(0)
    /// Counts removals from any mode (sources, timers, observers) and
    /// perform requests leaving the queue, bumped under the lock: a pass
    /// that saw its mode non-empty at count N knows it is still non-empty
    /// while the count is N, without taking the lock to look.
    package let removalCount = Atomic<UInt64>(0)
    /// Delayed perform requests given a target, by their timer, for
    /// `cancelPerformRequests(target:)`; an entry goes when its timer fires
    /// or is cancelled. The target is retained until then, as Foundation does.
    var delayedPerforms: [ObjectIdentifier: (target: AnyObject, timer: PCTimer)] = [:]
    var nextSequence: UInt64 = 1
    /// The id of the next perform request (`PerformToken`).
    var nextPerformID: UInt64 = 1
    var nextToken: UInt64 = 2

    // MARK: Owner-only

    @exclusivity(unchecked) var modeStack: [ModeState] = []
    /// The main loop's source for the main dispatch queue, once attached.
    var mainQueueSource: PortSource? = nil
    @exclusivity(unchecked) var armedDeadline: MonotonicInstant? = nil
    /// epoll_wait buffers, one per run depth.
    @exclusivity(unchecked) var eventBuffers: [Epoll.EventBuffer] = []
    /// The list step 4 collects signalled sources into, kept with its
    /// capacity between passes (taken out while in use: a nested run in a
    /// perform callback gets a list of its own). Owner thread only.
    @exclusivity(unchecked) var spareDueSources: [RunLoopSource] = []
    /// The ready sources of a pass, one list per run depth, empty between
    /// runs with their capacity kept (no allocation per run or pass).
    @exclusivity(unchecked) var readyBuffers: [[PortSource]] = []

    package enum CommonItem {
        case port(PortSource)
        case custom(RunLoopSource)
        case timer(PCTimer)
        case observer(RunLoopObserver)
    }

    /// A loop owned by `owner`. Only `current`, `main` and `detached` make
    /// loops, so a thread has one loop (its `current`), never two.
    private init(owner: ThreadIdentity, clock: any RunLoopClock, isMain: Bool = false) throws(SystemCallError) {
        self.owner = owner
        self.isMain = isMain
        self.clock = clock
        clockIsSystem = clock is SystemMonotonicClock
        // A failure closes whatever was created before it (each is owned).
        wakeFD = try EventFD.create()
        timerFD = try TimerFD.create()
        bareEpoll = try Epoll.create()
        try Epoll.add(bareEpoll, wakeFD, events: .readable, token: Self.wakeToken)
        try Epoll.add(bareEpoll, timerFD, events: .readable, token: Self.timerToken)
    }

    /// A detached loop: run by the calling thread, but not its `current`
    /// loop (so `PCRunLoop.current`, `PCTimer.scheduledTimer` and ports that
    /// schedule in the current loop never see it). It exists for loops on
    /// another clock (tests with a manual clock). Apple has no counterpart:
    /// there a thread has exactly one loop, which is what `current` keeps.
    public static func detached(clock: any RunLoopClock = SystemMonotonicClock()) throws(SystemCallError) -> PCRunLoop {
        try PCRunLoop(owner: .current, clock: clock)
    }

    deinit {
        modes.removeAll()  // the modes' epoll instances first; the loop's own descriptors close with it
    }

    /// The calling thread's run loop, created on first use
    /// (`+[NSRunLoop currentRunLoop]`, `CFRunLoopGetCurrent`). On the main
    /// thread it is `main`.
    public static var current: PCRunLoop {
        if let loop = currentLoop.value { return loop }
        // Made here, or already made by another thread through this thread's
        // PCThread handle: the same object either way.
        let loop = ThreadIdentity.isMainThread ? main : PCThread.current.runLoop
        currentLoop.set(loop)
        return loop
    }

    // A lazily initialized static (swift_once: once, from whichever thread
    // asks first, with the ordering ThreadSanitizer sees), not a slot behind
    // Synchronization's Mutex, whose contended path it cannot see.
    /// The process's main thread's run loop (`+[NSRunLoop mainRunLoop]`,
    /// `CFRunLoopGetMain`), created on first use from any thread; the same
    /// object as `current` on the main thread. Only the main thread runs it;
    /// other threads add to it, perform on it, wake and stop it.
    ///
    /// Like CF's main loop, it services the main dispatch queue: from its
    /// first run, the queue's wake-up descriptor is a port source in
    /// `.common`, so blocks queued on `DispatchQueue.main` (and `@MainActor`
    /// jobs) run while the main thread runs this loop in a common mode, and
    /// the common modes of the main loop are never empty (as in CF, where
    /// `RunLoop.main.run()` does not return).
    public static let main: PCRunLoop = make(owner: .main, isMain: true)

    package static func make(owner: ThreadIdentity, isMain: Bool = false) -> PCRunLoop {
        do throws(SystemCallError) {
            return try PCRunLoop(owner: owner, clock: SystemMonotonicClock(), isMain: isMain)
        } catch {
            preconditionFailure("PCRunLoop: cannot create the loop's descriptors: \(error)")
        }
    }

    /// Whether the calling thread owns this loop (only it may run it).
    public var isCurrent: Bool { owner.isCurrent }

    /// The mode of the innermost run in progress, if any. Owner thread only.
    public var currentMode: Mode? {
        precondition(isCurrent, "PCRunLoop.currentMode read from a thread that does not own the loop")
        return modeStack.last?.mode
    }

    package func withStateLock<T>(_ body: () throws -> T) rethrows -> T { try lock.withLock(body) }

    // MARK: Common modes

    /// The modes in the common set.
    public var commonModeSet: Set<Mode> { lock.withLock { commonModes } }

    /// Adds `mode` to the common set: every item in `.common` is added to it,
    /// now and whenever added later. Safe from any thread.
    public func addCommonMode(_ mode: Mode) throws(SystemCallError) {
        precondition(mode != .common, "the common pseudo-mode cannot be in the common set")
        var schedules: [() -> Void] = []
        var failure: SystemCallError?
        lock.withLock {
            guard commonModes.insert(mode).inserted else { return }
            let ms = modeState(mode)
            for item in commonItems.values {
                do throws(SystemCallError) {
                    try insert(item, into: ms, schedules: &schedules)
                } catch {
                    failure = error
                }
            }
            wakeIfSleeping()
        }
        for s in schedules { s() }
        if let failure { throw failure }
    }

    // MARK: Wake-up and stop

    /// Wakes the loop if it sleeps; if it does not, its next sleep returns at
    /// once. Safe from any thread.
    public func wakeUp() {
        do throws(SystemCallError) {
            try EventFD.signal(wakeFD)
        } catch {
            preconditionFailure("PCRunLoop.wakeUp: \(error)")
        }
    }

    /// Ends the innermost run of the loop (at once if it sleeps, after the
    /// current callout otherwise). A stop requested while the loop is not
    /// running ends its next run. Safe from any thread.
    public func stop() {
        lock.withLock {
            stopRequested = true
            noteStateChange()
        }
        wakeUp()
    }

    /// Called with the lock held, after a change to the loop's state: bumps
    /// `stateGeneration` and wakes the owner if it sleeps (see
    /// `stateGeneration` for why the order matters).
    package func wakeIfSleeping() {
        noteStateChange()
        if sleeping { wakeUp() }
    }

    /// Called with the lock held: a change the owner's next sleep must look
    /// at (see `stateGeneration`).
    @inline(__always)
    package func noteStateChange() {
        stateGeneration.wrappingAdd(1, ordering: .sequentiallyConsistent)
    }

    /// Called with the lock held.
    package func modeState(_ mode: Mode) -> ModeState {
        if let ms = modes[mode] { return ms }
        let ms = ModeState(mode: mode)
        modes[mode] = ms
        return ms
    }

    package func takeStopRequest() -> Bool {
        guard stopHint.load(ordering: .relaxed) else { return false }
        return lock.withLock {
            guard stopRequested else { return false }
            stopRequested = false
            return true
        }
    }
}

/// Holds each thread's loop; released when the thread ends.
private let currentLoop = ThreadSlot<PCRunLoop>()

