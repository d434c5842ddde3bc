// Adding and removing sources, timers and observers, from any thread.
//
// Adding to `.common` records the item as a common item and adds it to every
// mode of the common set. Custom sources get their `schedule` callback once
// per concrete mode they are added to and `cancel` once per mode they leave;
// callbacks run on the calling thread after the loop's lock is released.

import PortSystem

extension PCRunLoop {
    // MARK: Public API

    /// Adds a port-based source to `mode`. Throws when the kernel refuses to
    /// watch the descriptor (epoll_ctl), e.g. a regular file.
    public func add(_ source: PortSource, forMode mode: Mode) throws(SystemCallError) {
        try addItem(.port(source), source, mode)
    }

    /// Adds a custom source to `mode`.
    public func add(_ source: RunLoopSource, forMode mode: Mode) {
        try? addItem(.custom(source), source, mode)  // cannot throw: no descriptor involved
    }

    /// Adds a timer to `mode`.
    public func add(_ timer: PCTimer, forMode mode: Mode) {
        try? addItem(.timer(timer), timer, mode)  // cannot throw: no descriptor involved
    }

    /// Moves `timer`'s next fire date in every mode of this loop it is in.
    package func reschedule(_ timer: PCTimer, at date: MonotonicInstant) {
        lock.withLock {
            timer.scheduledFireDate = date
            timer.heapGeneration &+= 1  // every entry of the old date is now stale
            for ms in modes.values where ms.timers.contains(timer) { ms.timers.push(timer) }
            wakeIfSleeping()
        }
    }

    /// Adds an observer to `mode`.
    public func add(_ observer: RunLoopObserver, forMode mode: Mode) {
        try? addItem(.observer(observer), observer, mode)  // cannot throw: no descriptor involved
    }

    /// Removes a port-based source from `mode` (it stays valid).
    public func remove(_ source: PortSource, forMode mode: Mode) { removeItem(.port(source), mode) }
    /// Removes a custom source from `mode` (it stays valid; `cancel` is called).
    public func remove(_ source: RunLoopSource, forMode mode: Mode) { removeItem(.custom(source), mode) }
    /// Removes a timer from `mode` (it stays valid).
    public func remove(_ timer: PCTimer, forMode mode: Mode) { removeItem(.timer(timer), mode) }
    /// Removes an observer from `mode` (it stays valid).
    public func remove(_ observer: RunLoopObserver, forMode mode: Mode) { removeItem(.observer(observer), mode) }

    /// Whether `mode` holds the item (for `.common`: whether it is a common item).
    public func contains(_ source: PortSource, inMode mode: Mode) -> Bool {
        lock.withLock {
            mode == .common ? commonItems[ObjectIdentifier(source)] != nil
                : modes[mode]?.portSources[source.token] === source
        }
    }

    public func contains(_ source: RunLoopSource, inMode mode: Mode) -> Bool {
        lock.withLock {
            mode == .common ? commonItems[ObjectIdentifier(source)] != nil
                : modes[mode]?.customSources[ObjectIdentifier(source)] != nil
        }
    }

    public func contains(_ timer: PCTimer, inMode mode: Mode) -> Bool {
        lock.withLock {
            mode == .common ? commonItems[ObjectIdentifier(timer)] != nil
                : modes[mode]?.timers.contains(timer) ?? false
        }
    }

    public func contains(_ observer: RunLoopObserver, inMode mode: Mode) -> Bool {
        lock.withLock {
            mode == .common ? commonItems[ObjectIdentifier(observer)] != nil
                : modes[mode]?.observers.contains { $0 === observer } ?? false
        }
    }

    // MARK: Mechanism

    private func addItem(_ item: CommonItem, _ object: some RunLoopItem, _ mode: Mode) throws(SystemCallError) {
        guard object.bind(to: self) else { return }
        var schedules: [() -> Void] = []
        var failure: SystemCallError?
        lock.withLock {
            // Re-checked under the loop lock: an invalidate that raced the
            // bind above has either cleared validity (we add nothing) or will
            // take this lock after us and remove what we add.
            guard object.isAttachedAndValid else { return }
            assignIdentity(item)
            do throws(SystemCallError) {
                if mode == .common {
                    commonItems[ObjectIdentifier(object)] = item
                    for m in commonModes { try insert(item, into: modeState(m), schedules: &schedules) }
                } else {
                    try insert(item, into: modeState(mode), schedules: &schedules)
                }
            } catch {
                failure = error
            }
            wakeIfSleeping()
        }
        for s in schedules { s() }
        if let failure { throw failure }
    }

    private func removeItem(_ item: CommonItem, _ mode: Mode) {
        var cancels: [() -> Void] = []
        lock.withLock {
            if mode == .common {
                guard let id = item.objectIdentifier, commonItems.removeValue(forKey: id) != nil else { return }
                for m in commonModes { if let ms = modes[m] { extract(item, from: ms, cancels: &cancels) } }
            } else if let ms = modes[mode] {
                extract(item, from: ms, cancels: &cancels)
            }
        }
        for c in cancels { c() }
        wakeAfterRemoval()
    }

    /// Removes an invalidated item from every mode.
    package func removeEverywhere(_ object: some RunLoopItem) {
        let item: CommonItem
        switch object {
        case let s as PortSource: item = .port(s)
        case let s as RunLoopSource: item = .custom(s)
        case let t as PCTimer: item = .timer(t)
        case let o as RunLoopObserver: item = .observer(o)
        default: preconditionFailure("unknown run-loop item \(object)")
        }
        var cancels: [() -> Void] = []
        lock.withLock {
            // Each lookup hashes: skipped where nothing can be found (only
            // custom sources are signalled; most loops have no common item).
            if !commonItems.isEmpty { commonItems[ObjectIdentifier(object)] = nil }
            if case .custom = item { signalled[ObjectIdentifier(object)] = nil }
            for ms in modes.values { extract(item, from: ms, cancels: &cancels) }
            // No cancel to run first: woken in the same section.
            if cancels.isEmpty { wakeIfSleeping() }
        }
        if cancels.isEmpty { return }
        for c in cancels { c() }
        wakeAfterRemoval()
    }

    /// A removal may have emptied the mode a sleeping loop waits in: wake
    /// it, so that its run sees the empty mode and returns.
    private func wakeAfterRemoval() {
        lock.withLock { wakeIfSleeping() }
    }

    /// Called with the lock held: sequence numbers and epoll tokens, once.
    private func assignIdentity(_ item: CommonItem) {
        switch item {
        case .port(let s):
            if s.token == 0 { s.token = nextToken; nextToken += 1 }
        case .custom(let s):
            if s.sequence == 0 { s.sequence = nextSequence; nextSequence += 1 }
        case .timer(let t):
            if t.sequence == 0 { t.sequence = nextSequence; nextSequence += 1 }
        case .observer(let o):
            if o.sequence == 0 { o.sequence = nextSequence; nextSequence += 1 }
        }
    }

    /// Called with the lock held.
    package func insert(_ item: CommonItem, into ms: ModeState, schedules: inout [() -> Void]) throws(SystemCallError) {
        switch item {
        case .port(let s):
            guard ms.portSources[s.token] == nil else { return }
            if !ms.hasEpoll {
                let ep = try Epoll.create()  // closed again if an add fails
                try Epoll.add(ep, wakeFD, events: .readable, token: Self.wakeToken)
                try Epoll.add(ep, timerFD, events: .readable, token: Self.timerToken)
                ms.setEpoll(ep)
            }
            // A source invalidated meanwhile has let go of its descriptor:
            // nothing to watch (the caller checked validity under this lock,
            // so that happens only in a race it then loses).
            let added: Void? = try s.withDescriptor { (fd) throws(SystemCallError) in
                switch ms.epoll {
                case .some(let ep): try Epoll.add(ep, fd, events: s.events, token: s.token)
                case .none: preconditionFailure("PCRunLoop: mode without its epoll instance")
                }
            }
            guard added != nil else { return }
            ms.insertPortSource(s)
        case .custom(let s):
            let id = ObjectIdentifier(s)
            guard ms.customSources[id] == nil else { return }
            ms.customSources[id] = s
            if s.pendingSignal.withLockAnnotated({ p in defer { p = false }; return p }) { signalled[id] = s }
            if let schedule = s.scheduleCallback {
                let mode = ms.mode
                schedules.append { schedule(self, mode) }
            }
        case .timer(let t):
            guard !ms.timers.contains(t) else { return }
            ms.timers.push(t)
        case .observer(let o):
            guard !ms.observers.contains(where: { $0 === o }) else { return }
            let i = ms.observers.firstIndex {
                ($0.order, $0.sequence) > (o.order, o.sequence)
            } ?? ms.observers.endIndex
            ms.observers.insert(o, at: i)
            ms.recomputeObservedActivities()
        }
    }

    /// Called with the lock held.
    private func extract(_ item: CommonItem, from ms: ModeState, cancels: inout [() -> Void]) {
        removalCount.wrappingAdd(1, ordering: .relaxed)
        switch item {
        case .port(let s):
            guard ms.removePortSource(s.token) != nil else { return }
            do throws(SystemCallError) {
                _ = try s.withDescriptor { (fd) throws(SystemCallError) in
                    switch ms.epoll {
                    case .some(let ep): try Epoll.remove(ep, fd)
                    case .none: preconditionFailure("PCRunLoop: port source in a mode without epoll")
                    }
                }
            } catch {
                preconditionFailure("PCRunLoop: \(error)")
            }
        case .custom(let s):
            guard ms.customSources.removeValue(forKey: ObjectIdentifier(s)) != nil else { return }
            if let cancel = s.cancelCallback {
                let mode = ms.mode
                cancels.append { cancel(self, mode) }
            }
        case .timer(let t):
            ms.timers.forget(t)
        case .observer(let o):
            guard let i = ms.observers.firstIndex(where: { $0 === o }) else { return }
            ms.observers.remove(at: i)
            ms.recomputeObservedActivities()
        }
    }

    /// A custom source was signalled (any thread).
    package func markSignalled(_ source: RunLoopSource) {
        lock.withLock {
            signalled[ObjectIdentifier(source)] = source
            wakeIfSleeping()
        }
    }
}

extension PCRunLoop.CommonItem {
    var objectIdentifier: ObjectIdentifier? {
        switch self {
        case .port(let s): ObjectIdentifier(s)
        case .custom(let s): ObjectIdentifier(s)
        case .timer(let t): ObjectIdentifier(t)
        case .observer(let o): ObjectIdentifier(o)
        }
    }
}

extension PCRunLoop {
    /// Forgets a mode that has nothing left in it (a private mode whose user
    /// is gone), closing its epoll instance. Does nothing while the mode has
    /// items, pending requests, or a run in progress. Safe from any thread.
    public func discardMode(_ mode: Mode) {
        lock.withLock {
            guard mode != .default, mode != .common, !commonModes.contains(mode),
                  let ms = modes[mode], !ms.hasSourcesOrTimers, ms.observers.isEmpty, !ms.isRunning,
                  !performQueue.contains(where: { $0.modes.contains(mode) })
            else { return }
            modes[mode] = nil
        }
    }
}
