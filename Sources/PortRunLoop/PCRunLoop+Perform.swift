// Perform requests (Apple's Run Loops guide: "Cocoa Perform Selector Sources"): closures run on
// a loop's thread at its next pass in given modes, optionally after a delay,
// optionally with the caller waiting until done.
//
// Two families, as in Foundation, which differ in one thing: whether running
// one counts as handling a source.
// - Performs on a thread (`performSelector:onThread:withObject:waitUntilDone:modes:`,
//   `performSelectorOnMainThread:withObject:waitUntilDone:`): Foundation
//   delivers them through a version-0 source of the target thread's loop, so
//   a run that returns after a source (`runMode:beforeDate:`,
//   `CFRunLoopRunInMode(..., true)`) returns after them. Here:
//   `perform(inModes:waitUntilDone:_:)` and `PCThread.perform`.
// - Blocks and ordered performs (`performBlock:`, `CFRunLoopPerformBlock`,
//   `performSelector:target:argument:order:modes:`): run by the pass, not
//   a source, so they end no run. Here: `perform(inModes:order:target:_:)`,
//   which returns a token that cancels that one request.
// Delayed requests (`performSelector:withObject:afterDelay:`) are one-shot
// timers in their modes; cancelling one invalidates its timer. Timers end
// no run either.
//
// All requests queued before a pass's step 4 run in that pass, by order and
// then in the order queued; requests for modes the loop is not running in
// wait, in order, for a pass in one of theirs.

import PortSystem

extension PCRunLoop {
    package struct PerformRequest {
        /// Unique in the loop: what a `PerformToken` cancels.
        package let id: UInt64
        package let modes: [Mode]
        package let order: Int
        /// Retained until the request ran or was cancelled.
        package let target: AnyObject?
        /// A perform on a thread: running it is handling a source.
        package let isSource: Bool
        package let body: () -> Void
        package let completion: Completion?

        package func matches(_ mode: Mode, commonModes: Set<Mode>) -> Bool {
            for m in modes where m == mode || (m == .common && commonModes.contains(mode)) { return true }
            return false
        }
    }

    /// A perform request that can still be cancelled, delayed or queued.
    public struct PerformToken: Sendable {
        /// A delayed request's timer; nil for a queued request.
        package let timer: PCTimer?
        /// A queued request's loop (not kept alive by the token) and id.
        package weak var loop: PCRunLoop?
        package let id: UInt64

        package init(timer: PCTimer) {
            self.timer = timer
            self.loop = nil
            self.id = 0
        }

        package init(queuedIn loop: PCRunLoop, id: UInt64) {
            self.timer = nil
            self.loop = loop
            self.id = id
        }

        /// Cancels the request if it has not run yet. Safe from any thread.
        public func cancel() {
            if let timer { timer.invalidate() } else { loop?.cancelQueuedPerform(id) }
        }

        /// Whether the request is still waiting to run.
        public var isPending: Bool {
            if let timer { return timer.isValid }
            return loop?.isQueuedPerformPending(id) ?? false
        }
    }

    /// Queues `body` to run on the loop's thread at its next pass in one of
    /// `modes`, as a block: `-[NSRunLoop performInModes:block:]`,
    /// `performBlock:`, `CFRunLoopPerformBlock`, and
    /// `-[NSRunLoop performSelector:target:argument:order:modes:]`.
    /// Running it is not handling a source (CF's blocks are not either), so
    /// it does not end a `run(mode:before:)`; a perform on a thread does
    /// (`perform(inModes:waitUntilDone:_:)`). Requests due in the same pass
    /// run lower `order` first, then in the order queued. The returned token
    /// cancels this request alone (GNUstep's
    /// `-cancelPerformSelector:target:argument:`); with a `target`,
    /// `cancelPerformRequests(target:)` cancels it with the target's others.
    /// Safe from any thread.
    @discardableResult
    public func perform(
        inModes modes: [Mode] = [.common], order: Int = 0, target: AnyObject? = nil,
        _ body: @escaping @Sendable () -> Void
    ) -> PerformToken {
        PerformToken(queuedIn: self, id: queuePerform(modes: modes, order: order, target: target, isSource: false, body))
    }

    /// Queues `body` to run on the loop's thread at its next pass in one of
    /// `modes`, delivered as a source of the loop:
    /// `performSelector:onThread:withObject:waitUntilDone:modes:` with this
    /// loop's thread, and `performSelectorOnMainThread:withObject:waitUntilDone:`
    /// as `PCRunLoop.main.perform(waitUntilDone:_:)`. Foundation delivers
    /// these through a version-0 source of the target thread, so a run that
    /// returns after a source returns after it: `run(mode:before:)` and
    /// `runInMode(_:timeout:returnAfterSourceHandled: true)` (not
    /// `runUntilStopped()`, nor `run(until:)`, which runs on to its date).
    /// With `waitUntilDone`, returns only after `body` ran; when called on
    /// the loop's own thread that means running it now, inline, as
    /// Foundation does. Safe from any thread.
    public func perform(
        inModes modes: [Mode] = [.common], waitUntilDone: Bool, _ body: @escaping @Sendable () -> Void
    ) {
        if waitUntilDone && isCurrent {
            body()
            return
        }
        let completion = waitUntilDone ? Completion() : nil
        queuePerform(modes: modes, order: 0, target: nil, isSource: true, completion: completion, body)
        completion?.wait()
    }

    /// Queues a request; returns its id. Safe from any thread.
    @discardableResult
    package func queuePerform(
        modes: [Mode], order: Int, target: AnyObject?, isSource: Bool, completion: Completion? = nil,
        _ body: @escaping @Sendable () -> Void
    ) -> UInt64 {
        lock.withLock {
            let id = nextPerformID
            nextPerformID &+= 1
            performQueue.append(
                PerformRequest(
                    id: id, modes: modes, order: order, target: target, isSource: isSource, body: body,
                    completion: completion))
            wakeIfSleeping()
            return id
        }
    }

    /// Runs `body` on the loop's thread after `delay`, at a pass in one of
    /// `modes`. Safe from any thread
    /// (`performSelector:withObject:afterDelay:inModes:`). Without `modes`
    /// it runs in `.default` only, as `performSelector:withObject:afterDelay:`
    /// does ("using the default mode"): it waits while the loop runs in any
    /// other mode, common or not. With a `target`,
    /// `cancelPerformRequests(target:)` cancels it too. Its timer firing
    /// ends no run.
    @discardableResult
    public func perform(
        after delay: Duration, inModes modes: [Mode] = [.default], target: AnyObject? = nil,
        _ body: @escaping @Sendable () -> Void
    ) -> PerformToken {
        let timer = PCTimer(fireAt: clock.now() + delay) { [unowned self] t in
            _ = lock.withLock { delayedPerforms.removeValue(forKey: ObjectIdentifier(t)) }
            body()
        }
        if let target {
            lock.withLock { delayedPerforms[ObjectIdentifier(timer)] = (target, timer) }
        }
        for m in modes { add(timer, forMode: m) }
        return PerformToken(timer: timer)
    }

    /// `+[NSObject cancelPreviousPerformRequestsWithTarget:]` and
    /// `-[NSRunLoop cancelPerformSelectorsWithTarget:]`: cancels every request
    /// of this loop given `target` that has not run yet, delayed or queued.
    /// A closure has no selector or argument: a `PerformToken` cancels one
    /// request. Safe from any thread.
    public func cancelPerformRequests(target: AnyObject) {
        let id = ObjectIdentifier(target)
        let timers: [PCTimer] = lock.withLock {
            performQueue.removeAll { $0.target.map(ObjectIdentifier.init) == id }
            removalCount.wrappingAdd(1, ordering: .relaxed)
            noteStateChange()  // the queue the next sleep looks at changed
            let matching = delayedPerforms.filter { ObjectIdentifier($0.value.target) == id }
            for key in matching.keys { delayedPerforms[key] = nil }
            return matching.values.map(\.timer)
        }
        for t in timers { t.invalidate() }
    }

    /// A token's cancel of a queued request: takes it out of the queue if it
    /// has not run. A loop sleeping in a mode this empties wakes and sees it.
    package func cancelQueuedPerform(_ id: UInt64) {
        let cancelled: PerformRequest? = lock.withLock {
            guard let i = performQueue.firstIndex(where: { $0.id == id }) else { return nil }
            let r = performQueue.remove(at: i)
            removalCount.wrappingAdd(1, ordering: .relaxed)
            wakeIfSleeping()
            return r
        }
        // Its target and closure are released here, with the lock released.
        withExtendedLifetime(cancelled) {}
    }

    /// Whether the queued request `id` is still waiting to run.
    package func isQueuedPerformPending(_ id: UInt64) -> Bool {
        lock.withLock { performQueue.contains { $0.id == id } }
    }

    /// Step 4, first half: runs the requests queued for this mode. Returns
    /// whether one of them was a perform on a thread (a source handled).
    @discardableResult
    package func runPerformRequests(_ ms: ModeState) -> Bool {
        guard performHint.load(ordering: .relaxed) > 0 else { return false }
        let batch: [PerformRequest] = lock.withLock {
            guard !performQueue.isEmpty else { return [] }
            var run: [PerformRequest] = []
            var keep: [PerformRequest] = []
            for r in performQueue {
                if r.matches(ms.mode, commonModes: commonModes) { run.append(r) } else { keep.append(r) }
            }
            if !run.isEmpty {
                performQueue = keep
                removalCount.wrappingAdd(1, ordering: .relaxed)
                noteStateChange()
            }
            // Stable: equal orders keep the order queued.
            return run.enumerated().sorted { ($0.element.order, $0.offset) < ($1.element.order, $1.offset) }
                .map(\.element)
        }
        var handledSource = false
        for r in batch {
            r.body()
            r.completion?.signal()
            if r.isSource { handledSource = true }
        }
        return handledSource
    }
}
