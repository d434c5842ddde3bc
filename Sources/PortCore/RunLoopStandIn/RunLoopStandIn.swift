// RunLoopStandIn: NOT THE RUN LOOP. A throw-away stand-in with the subset of
// the run-loop API (notes/RUNLOOP_API.md, and the real signatures on main:
// `add(_: PortSource, forMode:)` throws SystemCallError) that portd's
// Daemon.swift uses: PCRunLoop.current, Mode.default/.common, add/remove a
// PortSource, run(), stop(), wakeUp(); PortSource(fileDescriptor:
// closesOnInvalidate:handler:), invalidate(), isValid.
//
// It exists only so the ops branch can build, run and integration-test
// portd before the real PCRunLoop (Sources/PortCore/RunLoop/) lands.
// DELETE THIS FOLDER WHEN MERGING the real run loop: the two declare the
// same public names, so the build fails with "invalid redeclaration" until
// it is gone, which is the point (nothing can silently keep using it).
//
// What it does: one poll(2) over every source of the loop plus an eventfd
// for stop()/wakeUp(); modes are ignored (everything is in every mode);
// no timers, observers, custom sources or perform requests. Level-triggered,
// like the real one: a handler must drain its descriptor.

import CPortSystem
import Glibc

public final class PCRunLoop: @unchecked Sendable {
    // Protected by `lock`: `sources`, `stopRequested`. `wakeFD` is immutable
    // after init. Only the owning thread calls run() and handlers.
    private let lock = Lock()
    private var sources: [PortSource] = []
    private var stopRequested = false
    private let wakeFD: Int32

    public struct Mode: Hashable, Sendable {
        public let name: String
        public init(_ name: String) { self.name = name }
        public static let `default` = Mode("kCFRunLoopDefaultMode")
        public static let common = Mode("kCFRunLoopCommonModes")
    }

    private init() {
        do {
            wakeFD = try EventFD.create()
        } catch {
            fatalError("RunLoopStandIn: \(error)")
        }
    }

    private final class Registry: @unchecked Sendable {
        // Protected by `lock`: `loops`.
        let lock = Lock()
        var loops: [pthread_t: PCRunLoop] = [:]
    }
    private static let registry = Registry()

    /// The calling thread's loop, created on first use.
    public static var current: PCRunLoop {
        let me = pthread_self()
        return registry.lock.withLock {
            if let loop = registry.loops[me] { return loop }
            let loop = PCRunLoop()
            registry.loops[me] = loop
            return loop
        }
    }

    /// Throws like the real one (whose epoll_ctl can fail); this one never does.
    public func add(_ source: PortSource, forMode mode: Mode) throws(SystemCallError) {
        lock.withLock {
            guard !sources.contains(where: { $0 === source }) else { return }
            sources.append(source)
        }
        source.attach(to: self)
        wakeUp()
    }

    public func remove(_ source: PortSource, forMode mode: Mode) {
        lock.withLock { sources.removeAll { $0 === source } }
        wakeUp()
    }

    /// Runs until stop() or until no source is left.
    public func run() {
        var pollSet: [pollfd] = []
        while true {
            let snapshot: [PortSource]? = lock.withLock {
                if stopRequested {
                    stopRequested = false
                    return nil
                }
                return sources
            }
            guard let snapshot, !snapshot.isEmpty else { return }
            pollSet.removeAll(keepingCapacity: true)
            pollSet.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            for s in snapshot { pollSet.append(pollfd(fd: s.fileDescriptor, events: Int16(POLLIN), revents: 0)) }
            let count = nfds_t(pollSet.count)
            do {
                _ = try SystemCall.must("poll") { poll(&pollSet, count, -1) }
                if pollSet[0].revents != 0 { try EventFD.drain(wakeFD) }
            } catch {
                fatalError("RunLoopStandIn: \(error)")
            }
            for (i, source) in snapshot.enumerated() where pollSet[i + 1].revents != 0 {
                // A handler earlier in this batch may have removed it.
                let stillHere = lock.withLock { sources.contains { $0 === source } }
                if stillHere && source.isValid { source.handler(source) }
            }
        }
    }

    /// Ends the current run(), from any thread.
    public func stop() {
        lock.withLock { stopRequested = true }
        wakeUp()
    }

    /// Wakes the loop's wait, from any thread.
    public func wakeUp() {
        try? EventFD.signal(wakeFD)
    }
}

public final class PortSource: @unchecked Sendable {
    // `fileDescriptor`, `closesOnInvalidate` and `handler` are immutable.
    // Protected by `lock`: `valid`, `loop`.
    public let fileDescriptor: Int32
    private let closesOnInvalidate: Bool
    let handler: (PortSource) -> Void
    private let lock = Lock()
    private var valid = true
    private weak var loop: PCRunLoop?

    public init(fileDescriptor: Int32, closesOnInvalidate: Bool = false, handler: @escaping (PortSource) -> Void) {
        self.fileDescriptor = fileDescriptor
        self.closesOnInvalidate = closesOnInvalidate
        self.handler = handler
    }

    func attach(to loop: PCRunLoop) { lock.withLock { self.loop = loop } }

    public var isValid: Bool { lock.withLock { valid } }

    /// Removes the source from its loop; closes the descriptor if it owns it. Idempotent.
    public func invalidate() {
        let (wasValid, loop) = lock.withLock { () -> (Bool, PCRunLoop?) in
            defer { valid = false }
            return (valid, self.loop)
        }
        guard wasValid else { return }
        loop?.remove(self, forMode: .default)
        if closesOnInvalidate { SystemCall.close(fileDescriptor) }
    }
}
