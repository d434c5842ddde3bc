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
        inModes modes: [Mode] = [.common], order: Int = 0, waitUntilDone: Bool = false,
        _ body: @escaping @Sendable () -> Void
    ) {
        if waitUntilDone && isCurrent {
            body()
            return
        }
        let completion = waitUntilDone ? Completion() : nil
        lock.withLock {
            performQueue.append(PerformRequest(modes: modes, order: order, body: body, completion: completion))
            wakeIfSleeping()
        }
        completion?.wait()
    }

    /// Runs `body` on the loop's thread after `delay`, at a pass in one of
    /// `modes`. Safe from any thread.
    @discardableResult
    public func perform(
        after delay: Duration, inModes modes: [Mode] = [.common], _ body: @escaping @Sendable () -> Void
    ) -> PerformToken {
        let timer = PCTimer(fireAt: clock.now() + delay) { _ in body() }
        for m in modes { add(timer, forMode: m) }
        return PerformToken(timer: timer)
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
            performQueue = keep
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
