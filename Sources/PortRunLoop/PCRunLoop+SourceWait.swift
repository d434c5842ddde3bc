// PCRunLoop+SourceWait: the run of a mode that holds one port source and
// nothing else, as a request's private reply mode does (SendRight.request,
// CFMessagePortSendRequest's private mode). Such a run's passes have no
// observer to notify, no perform request or custom source to run and no
// timer to fire, so a pass is: sleep until the source is ready or the
// deadline passes, then call the source. This is that pass, without the
// general pass's bookkeeping (a tenth of a request's round trip).
//
// Invariants: the mode is checked under the loop's lock before every sleep,
// and the run falls back to the general pass (returns nil before running
// anything) when the mode holds anything else; the sleep is the same
// epoll_wait on the mode's own epoll instance, with `sleeping` set under
// the lock, so everything that wakes a sleeping loop (an item added or
// removed from another thread, `wakeUp()`, `stop()`) wakes this one too. A
// `stop()` is not taken here: it stays pending for the run this one is
// nested in, which is what SendRight.request does with a stop that ends its
// wait. Owner thread only.

import PortSystem

extension PCRunLoop {
    /// The state of `mode`, made if need be, for `waitAlone`: a caller that
    /// waits in the same mode again and again (a right's private reply
    /// mode) keeps it instead of looking the mode up on every run. Valid
    /// while the mode holds one of the caller's items (a mode is discarded
    /// only when empty). Safe from any thread.
    package func stateForWaiting(in mode: Mode) -> ModeState {
        precondition(mode != .common, "wait in a concrete mode, not the common pseudo-mode")
        return lock.withLock { modeState(mode) }
    }

    /// `runInMode(ms.mode, before: deadline, returnAfterSourceHandled: true)`
    /// for a mode whose only item is `source`, with the same results: after
    /// `source` was called, `.handledSource`; once `deadline` passed,
    /// `.timedOut`; when the source left the mode, `.finished`. Returns nil,
    /// having handled nothing, when the mode holds anything else (another
    /// source, a timer, an observer, a perform request for it), so the
    /// caller runs the loop instead. A stop requested meanwhile is left
    /// pending (see the file's comment). With `callingSource` false, a
    /// ready source is not called: `.handledSource` then says it is ready,
    /// for the caller to read it (a request reads its reply and takes the
    /// outcome under one lock). Owner thread only.
    package func waitAlone(
        _ source: PortSource, in ms: ModeState, before deadline: MonotonicInstant, callingSource: Bool = true
    ) -> RunResult? {
        precondition(isCurrent, "a PCRunLoop runs only on the thread that owns it")
        let depth = modeStack.count
        while eventBuffers.count <= depth {
            eventBuffers.append(Epoll.EventBuffer(capacity: Self.eventCapacity))
        }
        let events = eventBuffers[depth]
        var entered = false
        defer {
            if entered {
                modeStack.removeLast()
                ms.runDepth.wrappingSubtract(1, ordering: .relaxed)
            }
        }
        while true {
            // A deadline already passed makes this pass a poll, as in the
            // general pass (so a reply already there is still handled).
            let poll = clock.now() >= deadline
            // The one lock section of a wait: is the source still alone?
            let alone: Bool = lock.withLock {
                guard ms.hasEpoll, ms.portSources.count == 1, ms.customSources.isEmpty,
                      ms.timers.memberCount == 0, ms.observers.isEmpty,
                      ms.portSources.first?.value === source,
                      performQueue.isEmpty || !performQueue.contains(where: { $0.matches(ms.mode, commonModes: commonModes) })
                else { return false }
                if !entered { ms.runDepth.wrappingAdd(1, ordering: .relaxed) }
                if !poll { sleepingFlag.store(true, ordering: .relaxed) }
                return true
            }
            guard alone else {
                // Not alone (or no longer): the source left the mode, or
                // something else joined it. Nothing was handled.
                if !entered { return nil }
                return isEmpty(ms) ? .finished : nil
            }
            if !entered {
                modeStack.append(ms)
                entered = true
            }
            if !poll { arm(deadline) }
            let count = wait(ms, events, timeoutMilliseconds: poll ? 0 : -1)
            if !poll { sleepingFlag.store(false, ordering: .relaxed) }
            var ready = false
            for i in 0..<count {
                let token = events.token(at: i)
                // Another token: a source that left the mode before this wait.
                if !takeLoopEvent(token) && token == source.token { ready = true }
            }
            if ready && source.isValid {
                if callingSource { source.handler(source) }
                return .handledSource
            }
            if poll || clock.now() >= deadline { return .timedOut }
        }
    }
}
