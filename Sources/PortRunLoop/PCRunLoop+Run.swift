// Running the loop: the pass documented at the top of PCRunLoop.swift, one
// short method per phase. Owner thread only.

import PortSystem

extension PCRunLoop {
    /// `-[NSRunLoop run]` (Foundation's `RunLoop.run()`): runs
    /// `run(mode: .default, before: .distantFuture)` again and again until it
    /// returns false, that is until the default mode has nothing left to run.
    /// A `stop()` ends only the pass in progress, as in Foundation ("if you
    /// want the run loop to terminate, you shouldn't use this method"); use
    /// `runUntilStopped()` (`CFRunLoopRun`) for a loop that `stop()` ends.
    public func run() {
        while run(mode: .default, before: .distantFuture) {}
    }

    /// `-[NSRunLoop runUntilDate:]` (Foundation's `RunLoop.run(until:)`):
    /// runs `run(mode: .default, before: deadline)` until it returns false or
    /// the deadline has passed. Always makes at least one pass, also when
    /// `deadline` has already passed (so `run(until: .now())` fires what is
    /// due and runs what is queued).
    public func run(until deadline: MonotonicInstant) {
        repeat {} while run(mode: .default, before: deadline) && clock.now() < deadline
    }

    /// `-[NSRunLoop runMode:beforeDate:]` (Foundation's
    /// `RunLoop.run(mode:before:)`): runs the loop once in `mode`, returning
    /// after the first source is handled, when `deadline` passes, or on
    /// `stop()`. Returns false at once, running nothing, when the mode has no
    /// sources, timers or perform requests; true otherwise (also when the
    /// run emptied the mode, e.g. a one-shot timer fired). Timers that fire
    /// and blocks that run do not end the run (in Foundation neither); a
    /// perform on a thread does (`perform(inModes:waitUntilDone:_:)`,
    /// `PCThread.perform`), as in Foundation. Owner thread only.
    @discardableResult
    public func run(mode: Mode, before deadline: MonotonicInstant) -> Bool {
        runIfNotEmpty(mode, before: deadline, returnAfterSourceHandled: true) != nil
    }

    /// `-[NSRunLoop limitDateForMode:]`: polls the loop once in `mode` (so
    /// due timers fire and queued performs run, as Foundation does), then
    /// returns the next timer fire date of the mode (CF's
    /// `CFRunLoopGetNextTimerFireDate`), `.distantFuture` when the mode has
    /// sources but no timer, or nil when the mode has nothing to run. Owner
    /// thread only.
    public func limitDate(forMode mode: Mode) -> MonotonicInstant? {
        runInMode(mode, timeout: .zero, returnAfterSourceHandled: true)
        return lock.withLock {
            let ms = modeState(mode)
            if isEmptyLocked(ms) { return nil }
            return ms.timers.peekLive()?.fireDate ?? .distantFuture
        }
    }

    /// `CFRunLoopRun()`: runs in `.default` until `stop()` is called or the
    /// mode has nothing left to run.
    public func runUntilStopped() {
        while true {
            switch runInMode(.default, before: .distantFuture) {
            case .finished, .stopped: return
            case .timedOut, .handledSource: continue
            }
        }
    }

    /// `CFRunLoopRunInMode(mode, seconds, returnAfterSourceHandled)`: one run
    /// in `mode` for at most `timeout` (zero or negative: one pass that does
    /// not sleep). See `runInMode(_:before:returnAfterSourceHandled:)`.
    @discardableResult
    public func runInMode(_ mode: Mode, timeout: Duration, returnAfterSourceHandled: Bool = false) -> RunResult {
        runInMode(mode, before: clock.now() + (timeout < .zero ? .zero : timeout),
                  returnAfterSourceHandled: returnAfterSourceHandled)
    }

    /// `CFRunLoopRunInMode` with a deadline instead of a span: runs the loop
    /// in `mode` until `deadline`. Returns `.finished` at once (without
    /// notifying observers) when the mode has no sources, timers or perform
    /// requests; otherwise notifies `.entry`, runs passes until one of the
    /// results, and notifies `.exit`. After each pass the checks are CF's, in
    /// CF's order: a source handled and `returnAfterSourceHandled`
    /// (`.handledSource`), the deadline passed (`.timedOut`, so a zero-timeout
    /// run that empties the mode is `.timedOut`, as in CF), `stop()`
    /// (`.stopped`), the mode empty (`.finished`). Timers firing and blocks
    /// (`perform(inModes:order:target:_:)`) running are not "handling a
    /// source" (CF's timers and blocks are not either); a perform on a
    /// thread (`perform(inModes:waitUntilDone:_:)`) is, as Foundation's
    /// perform-selector source is. Runs may nest: a callout may run the loop again, in
    /// any mode. Owner thread only.
    @discardableResult
    public func runInMode(_ mode: Mode, before deadline: MonotonicInstant, returnAfterSourceHandled: Bool = false) -> RunResult {
        runIfNotEmpty(mode, before: deadline, returnAfterSourceHandled: returnAfterSourceHandled) ?? .finished
    }

    /// The run of `runInMode`; nil when the mode was empty and nothing ran.
    /// CF does not tell the two apart in its result (`CFRunLoopRunInMode`
    /// returns kCFRunLoopRunFinished for both); Foundation's
    /// `runMode:beforeDate:` checks for an empty mode before running, so its
    /// Bool is true for a run that emptied the mode. This is that check.
    private func runIfNotEmpty(_ mode: Mode, before deadline: MonotonicInstant, returnAfterSourceHandled: Bool) -> RunResult? {
        precondition(isCurrent, "a PCRunLoop runs only on the thread that owns it")
        precondition(mode != .common, "run in a concrete mode, not the common pseudo-mode")
        if isMain && mainQueueSource == nil { attachMainDispatchQueue() }
        let ms: ModeState? = lock.withLock {
            let ms = modeState(mode)
            if isEmptyLocked(ms) { return nil }
            ms.runDepth.wrappingAdd(1, ordering: .relaxed)
            return ms
        }
        guard let ms else { return nil }
        modeStack.append(ms)
        defer {
            modeStack.removeLast()
            ms.runDepth.wrappingSubtract(1, ordering: .relaxed)
        }
        notify(ms, .entry)
        let result = runPasses(ms, deadline: deadline, returnAfterSourceHandled: returnAfterSourceHandled)
        notify(ms, .exit)
        return result
    }

    /// The main loop's first run: the main dispatch queue's wake-up eventfd
    /// (a duplicate) becomes a port source in `.common` whose handler resets
    /// it and drains the queue, CF's `_dispatch_main_queue_callback_4CF`.
    /// A process out of descriptors (EMFILE, ENFILE) runs without it, and
    /// the next run tries again: the main queue's blocks wait until then.
    private func attachMainDispatchQueue() {
        do throws(SystemCallError) {
            let source = PortSource(descriptor: try MainDispatchQueue.wakeUpDescriptor()) { s in
                _ = try? s.withDescriptor { (fd: borrowing OwnedDescriptor) throws(SystemCallError) in
                    try EventFD.drain(fd)
                }
                MainDispatchQueue.drain()
            }
            mainQueueSource = source
            try add(source, forMode: .common)
        } catch where error.errno == .tooManyOpenFiles || error.errno == .tooManyOpenFilesInSystem {
            return
        } catch {
            preconditionFailure("PCRunLoop.main: cannot watch the main dispatch queue: \(error)")
        }
    }

    static let eventCapacity: Int32 = 64

    private func runPasses(_ ms: ModeState, deadline: MonotonicInstant, returnAfterSourceHandled: Bool) -> RunResult {
        if takeStopRequest() { return .stopped }
        // One buffer per run depth, not per loop: a nested run in a callout
        // must not overwrite the batch its caller is dispatching. Kept for
        // the next run at the same depth (no allocation per run).
        let depth = modeStack.count - 1
        while eventBuffers.count <= depth {
            eventBuffers.append(Epoll.EventBuffer(capacity: Self.eventCapacity))
        }
        let events = eventBuffers[depth]
        while readyBuffers.count <= depth { readyBuffers.append([]) }
        // Taken out while this run uses it (a nested run uses the next
        // depth's), put back empty with its capacity.
        var ready: [PortSource] = []
        swap(&ready, &readyBuffers[depth])
        defer {
            if !ready.isEmpty { ready.removeAll(keepingCapacity: true) }
            swap(&ready, &readyBuffers[depth])
        }
        // Timers found due with the batch of ready sources (one lock for both).
        var due: [PCTimer] = []
        // What the last look under the lock saw, for the next sleep.
        var plan: SleepPlan?
        while true {
            notify(ms, .beforeTimers)
            notify(ms, .beforeSources)
            // Performs on a thread are sources (see PCRunLoop+Perform.swift).
            var handledSource = runPerformRequests(ms)
            if performSignalledSources(ms) {
                handledSource = true
                runPerformRequests(ms)
            }
            let poll = handledSource || isPast(deadline)
            var count = 0
            // `removalCount` when the mode was last seen non-empty this pass.
            var nonEmptyAt: UInt64?
            if !poll, ms.hasEpoll, !ms.observedActivities.isDisjoint(with: [.beforeWaiting, .afterWaiting]) {
                count = wait(ms, events, timeoutMilliseconds: 0)  // step 5
            }
            if count == 0 {
                if !poll { notify(ms, .beforeWaiting) }
                (count, nonEmptyAt) = sleep(ms, events, poll: poll, deadline: deadline, plan: plan)
                if !poll { notify(ms, .afterWaiting) }
            }
            collectReady(ms, events, count, into: &ready, due: &due, plan: &plan)
            let timersFired = fire(&due)
            if dispatch(ms, &ready, afterCallouts: timersFired) { handledSource = true }
            if runPerformRequests(ms) { handledSource = true }

            if handledSource && returnAfterSourceHandled { return .handledSource }
            if isPast(deadline) { return .timedOut }
            if takeStopRequest() { return .stopped }
            // Nothing left the mode or the queue since it was seen
            // non-empty: it still is, no need to look under the lock.
            if nonEmptyAt != removalCount.load(ordering: .relaxed), isEmpty(ms) { return .finished }
        }
    }

    // MARK: Phases

    package func notify(_ ms: ModeState, _ activity: Activity) {
        guard ms.observedActivities.contains(activity) else { return }
        let observers: [RunLoopObserver] = lock.withLock {
            ms.observers.filter { $0.activities.contains(activity) }
        }
        for o in observers where o.isValid {
            o.callback(o, activity)
            if !o.repeats { o.invalidate() }
        }
    }

    /// What `collectReady` saw of the mode under the lock, when it was
    /// neither empty nor had work pending: the next sleep may go by it,
    /// without the lock, while `stateGeneration` is still `generation`.
    struct SleepPlan {
        let generation: UInt64
        /// The mode's timers' wake deadline (`TimerHeap.wakeDeadline`).
        let timersWake: MonotonicInstant?
        /// `removalCount` then.
        let nonEmptyAt: UInt64
    }

    /// Lock held: the plan for the next sleep, or nil when that sleep must
    /// look again (the mode is empty, or has work pending).
    private func planLocked(_ ms: ModeState) -> SleepPlan? {
        if isEmptyLocked(ms) || hasPendingWork(ms) { return nil }
        return SleepPlan(
            generation: stateGeneration.load(ordering: .relaxed), timersWake: ms.timers.wakeDeadline(),
            nonEmptyAt: removalCount.load(ordering: .relaxed))
    }

    /// Steps 6-7: arms the timerfd for the earliest of the run's deadline and
    /// the mode's timer windows, then waits. Turns into a poll when work for
    /// this mode arrived since step 4. Returns the events, and
    /// `removalCount` as it was when the mode was seen non-empty (nil when
    /// it was empty).
    ///
    /// When nothing changed since `plan` was made (the generation is the
    /// same once `sleepingFlag` is set), it sleeps by the plan, and a pass
    /// takes the loop's lock once (in `collectReady`), not twice.
    private func sleep(
        _ ms: ModeState, _ events: Epoll.EventBuffer, poll: Bool, deadline: MonotonicInstant, plan: SleepPlan?
    ) -> (Int, UInt64?) {
        if let plan {
            if !poll { sleepingFlag.store(true, ordering: .sequentiallyConsistent) }
            if stateGeneration.load(ordering: .sequentiallyConsistent) == plan.generation {
                if !poll { arm(plan.timersWake.map { min($0, deadline) } ?? deadline) }
                let n = wait(ms, events, timeoutMilliseconds: poll ? 0 : -1)
                if !poll { sleepingFlag.store(false, ordering: .relaxed) }
                return (n, plan.nonEmptyAt)
            }
            // Something changed: look again, under the lock.
        }
        var poll = poll
        var wake = deadline
        let nonEmptyAt: UInt64? = lock.withLock {
            // Work for this mode arrived, or this pass emptied the mode (a
            // perform request invalidated its last source): do not sleep,
            // so the run sees it and returns. A removal from another thread
            // after this check finds `sleeping` set and wakes the loop.
            let empty = isEmptyLocked(ms)
            if !poll && (empty || hasPendingWork(ms)) { poll = true }
            if !poll {
                if let t = ms.timers.wakeDeadline(), t < wake { wake = t }
            }
            sleepingFlag.store(!poll, ordering: .relaxed)
            return empty ? nil : removalCount.load(ordering: .relaxed)
        }
        if !poll { arm(wake) }
        let n = wait(ms, events, timeoutMilliseconds: poll ? 0 : -1)
        if !poll { sleepingFlag.store(false, ordering: .relaxed) }
        return (n, nonEmptyAt)
    }

    func arm(_ deadline: MonotonicInstant) {
        let target: MonotonicInstant? = deadline >= .distantFuture ? nil : deadline
        if !clockIsSystem, let t = target {
            // Another clock: sleep for the same span of real time.
            let span = t - clock.now()
            setTimerFD(.now() + (span < .zero ? .zero : span))
            armedDeadline = nil
            return
        }
        // An armed deadline earlier than needed is kept: it costs at most one
        // spurious wake-up (the pass goes round and re-arms), where re-arming
        // costs a system call on every run with a fresh deadline (each
        // request/reply has one).
        if let armed = armedDeadline, let t = target, armed <= t { return }
        if armedDeadline == nil && target == nil { return }
        if let armed = armedDeadline, target == nil, armed > .now() { return }
        setTimerFD(target)
        armedDeadline = target
    }

    private func setTimerFD(_ target: MonotonicInstant?) {
        do {
            try TimerFD.arm(timerFD, deadline: target?.nanoseconds)
        } catch {
            preconditionFailure("PCRunLoop: \(error)")
        }
    }

    func wait(_ ms: ModeState, _ events: Epoll.EventBuffer, timeoutMilliseconds: Int32) -> Int {
        do {
            // Lock-free: `epoll` is read only once `hasEpoll` says it is set for good.
            if ms.hasEpoll {
                switch ms.epoll {
                case .some(let ep): return try Epoll.wait(ep, into: events, timeoutMilliseconds: timeoutMilliseconds)
                case .none: break
                }
            }
            return try Epoll.wait(bareEpoll, into: events, timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            preconditionFailure("PCRunLoop: \(error)")
        }
    }

    /// Step 9, first half: drains the wake-up and timer descriptors, maps
    /// the batch's tokens to this mode's port sources, takes the mode's
    /// timers that are due (see `popDueTimersLocked`), and makes the plan
    /// for the next sleep, in one lock section.
    private func collectReady(
        _ ms: ModeState, _ events: Epoll.EventBuffer, _ count: Int, into ready: inout [PortSource],
        due: inout [PCTimer], plan: inout SleepPlan?
    ) {
        if !ready.isEmpty { ready.removeAll(keepingCapacity: true) }
        var portEvents = false
        for i in 0..<count where !takeLoopEvent(events.token(at: i)) {
            portEvents = true
        }
        let now = clock.now()
        lock.withLock {
            if portEvents {
                for i in 0..<count {
                    let token = events.token(at: i)
                    if token > Self.timerToken, let s = ms.portSource(token) { ready.append(s) }
                }
            }
            popDueTimersLocked(ms, now: now, into: &due)
            plan = planLocked(ms)
        }
    }

    /// An event of the loop's own descriptors: drains the wake-up eventfd
    /// or the timerfd (which is then disarmed) and returns true; false for
    /// a port source's token.
    func takeLoopEvent(_ token: UInt64) -> Bool {
        switch token {
        case Self.wakeToken:
            do { try EventFD.drain(wakeFD) } catch { preconditionFailure("PCRunLoop: \(error)") }
            return true
        case Self.timerToken:
            do { try TimerFD.drain(timerFD) } catch { preconditionFailure("PCRunLoop: \(error)") }
            armedDeadline = nil
            return true
        default:
            return false
        }
    }

    /// Step 9, second half: calls each ready source that is still in the mode
    /// (an earlier handler of the batch, or a timer's action in
    /// `afterCallouts`, may have removed it). The first source needs no
    /// second look when nothing ran since `collectReady` found it in the
    /// mode: a removal from another thread can come just after any look
    /// anyway (the source's handler then runs once more, as in CF).
    private func dispatch(_ ms: ModeState, _ ready: inout [PortSource], afterCallouts: Bool) -> Bool {
        guard !ready.isEmpty else { return false }
        // `ready` belongs to this run (a nested run in a handler has its
        // own): read in place, no copy of the batch.
        var handled = false
        for i in ready.indices {
            let s = ready[i]
            let stillThere = (i == 0 && !afterCallouts) || lock.withLock { ms.portSources[s.token] === s }
            guard stillThere, s.isValid else { continue }
            s.handler(s)
            handled = true
        }
        // Popped: a pass's one or two sources cost less so than the
        // generic replaceSubrange of removeAll(keepingCapacity:).
        while ready.popLast() != nil {}
        return handled
    }

    /// Step 4: performs every signalled custom source of this mode, lower
    /// order first; sources of other modes stay signalled.
    private func performSignalledSources(_ ms: ModeState) -> Bool {
        guard signalledHint.load(ordering: .relaxed) > 0 else { return false }
        // The spare list (no allocation per pass once it has grown), sorted
        // in place.
        var due: [RunLoopSource] = []
        swap(&due, &spareDueSources)
        defer {
            due.removeAll(keepingCapacity: true)
            swap(&due, &spareDueSources)
        }
        lock.withLock {
            guard !signalled.isEmpty else { return }
            for (id, s) in signalled where ms.customSources[id] != nil {
                due.append(s)
            }
            for s in due { signalled[ObjectIdentifier(s)] = nil }
            if !due.isEmpty { noteStateChange() }
        }
        guard !due.isEmpty else { return false }
        if due.count > 1 { due.sort(by: { ($0.order, $0.sequence) < ($1.order, $1.sequence) }) }
        var performed = false
        for s in due where s.isValid {
            s.performCallback(s)
            performed = true
        }
        return performed
    }

    /// Lock held: takes every timer of this mode that is due at `now`,
    /// earliest first (equal dates in the order added), into `due` (which
    /// `fire` empties). Repeating timers are rescheduled on their grid
    /// here, before their action runs, so an action may invalidate its timer.
    private func popDueTimersLocked(_ ms: ModeState, now: MonotonicInstant, into due: inout [PCTimer]) {
        var skipped: [PCTimer] = []
        while let t = ms.timers.popDue(now: now) {
            if t.isFiring {
                skipped.append(t)  // a nested run inside its own action
                continue
            }
            t.isFiring = true
            t.heapGeneration &+= 1  // every other mode's entry is now stale
            if let interval = t.interval {
                t.scheduledFireDate = PCTimer.nextFireDate(scheduled: t.scheduledFireDate, interval: interval, now: now)
                for other in modes.values where other.timers.contains(t) { other.timers.push(t) }
            }
            due.append(t)
        }
        for t in skipped { ms.timers.push(t) }
        if !due.isEmpty || !skipped.isEmpty { noteStateChange() }
    }

    /// Fires the timers `collectReady` found due, in that order, and empties
    /// `due` (keeping its capacity). Returns whether a timer fired.
    private func fire(_ due: inout [PCTimer]) -> Bool {
        guard !due.isEmpty else { return false }
        for t in due {
            if t.isValid { t.action(t) }
            if t.interval == nil { t.invalidate() }
            lock.withLock { t.isFiring = false }
        }
        due.removeAll(keepingCapacity: true)
        return true
    }

    // MARK: Predicates (lock held where noted)

    /// Whether `deadline` has passed; a run without one (`.distantFuture`,
    /// a server's) does not read the clock for it.
    @inline(__always)
    private func isPast(_ deadline: MonotonicInstant) -> Bool {
        deadline < .distantFuture && clock.now() >= deadline
    }

    /// Lock held: a signalled source or a perform request for this mode, or a stop.
    private func hasPendingWork(_ ms: ModeState) -> Bool {
        if stopRequested { return true }
        if signalled.isEmpty && performQueue.isEmpty { return false }
        for id in signalled.keys where ms.customSources[id] != nil { return true }
        return performQueue.contains { $0.matches(ms.mode, commonModes: commonModes) }
    }

    package func isEmpty(_ ms: ModeState) -> Bool {
        lock.withLock { isEmptyLocked(ms) }
    }

    /// Lock held.
    package func isEmptyLocked(_ ms: ModeState) -> Bool {
        !ms.hasSourcesOrTimers && !performQueue.contains { $0.matches(ms.mode, commonModes: commonModes) }
    }
}
