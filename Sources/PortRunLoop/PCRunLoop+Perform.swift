// Perform requests (Apple's Run Loops guide: "Cocoa Perform Selector Sources"): closures run on
// a loop's thread at its next pass in given modes, optionally after a delay,
// optionally with the caller waiting until done.
//
// All requests queued before a pass's step 4 run in that pass, in the order
// queued; requests for modes the loop is not running in wait, in order, for a
// pass in one of theirs. A delayed request is a one-shot timer in its modes;
// cancelling it invalidates that timer.

import PortSystem

extension PCRunLoop {
    package struct PerformRequest {
        package let modes: [Mode]
        package let order: Int
        /// Retained until the request ran or was cancelled.
        package let target: AnyObject?
        package let body: () -> Void
        package let completion: Completion?

        package func matches(_ mode: Mode, commonModes: Set<Mode>) -> Bool {
            for m in modes where m == mode || (m == .common && commonModes.contains(mode)) { return true }
            return false
        }
    }

    /// A delayed perform request that can still be cancelled.
    public struct PerformToken: Sendable {
        package let timer: PCTimer
        /// Cancels the request if it has not run yet. Safe from any thread.
        public func cancel() { timer.invalidate() }
        /// Whether the request is still waiting to run.
        public var isPending: Bool { timer.isValid }
    }

    /// Queues `body` to run on the loop's thread at its next pass in one of
    /// `modes` (`-[NSRunLoop performInModes:block:]`,
    /// `performSelector:onThread:withObject:waitUntilDone:modes:`). Requests
    /// due in the same pass run lower `order` first, then in the order
    /// queued (`-[NSRunLoop performSelector:target:argument:order:modes:]`).
    /// With `waitUntilDone`, returns only after `body` ran; when
    /// called on the loop's own thread that means running it now, inline.
    /// Safe from any thread.
    public func perform(
        inModes modes: [Mode] = [.common], order: Int = 0, target: AnyObject? = nil, waitUntilDone: Bool = false,
        _ body: @escaping @Sendable () -> Void
    ) {
        if waitUntilDone && isCurrent {
            body()
            return
        }
        let completion = waitUntilDone ? Completion() : nil
        lock.withLock {
            performQueue.append(PerformRequest(modes: modes, order: order, target: target, body: body, completion: completion))
            wakeIfSleeping()
        }
        completion?.wait()
    }

    /// Runs `body` on the loop's thread after `delay`, at a pass in one of
    /// `modes`. Safe from any thread
    /// (`performSelector:withObject:afterDelay:inModes:`). Without `modes`
    /// it runs in `.default` only, as `performSelector:withObject:afterDelay:`
    /// does ("using the default mode"): it waits while the loop runs in any
    /// other mode, common or not. With a `target`,
    /// `cancelPerformRequests(target:)` cancels it too.
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
    /// A closure has no selector or argument, so the target is the only key
    /// (a `PerformToken` cancels one delayed request). Safe from any thread.
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

    /// Step 4, first half: runs the requests queued for this mode.
    package func runPerformRequests(_ ms: ModeState) {
        guard performHint.load(ordering: .relaxed) > 0 else { return }
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
        for r in batch {
            r.body()
            r.completion?.signal()
        }
    }
}
