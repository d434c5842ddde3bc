// LoopAPI: every name of PortCore's run-loop API the benchmarks use, in this
// one file. The benchmarks were written before the run loop landed; when a
// name or signature differs, fix it here and nowhere else. Each function is
// one call into PortCore, so the adapter adds no cost worth measuring (the
// compiler inlines it in release).

import PortCore

typealias Loop = PCRunLoop

enum LoopAPI {
    // MARK: The loop

    /// The calling thread's run loop, created on first use.
    @inline(__always)
    static func current() -> Loop { PCRunLoop.current }

    /// Runs the loop in the default mode until `stop(_:)`.
    @inline(__always)
    static func runUntilStopped(_ loop: Loop) { loop.runUntilStopped() }

    /// Runs the loop in the default mode until `stop(_:)` or `timeout`;
    /// true when it was stopped.
    @inline(__always)
    static func runUntilStopped(_ loop: Loop, timeout: Duration) -> Bool {
        if case .stopped = loop.runInMode(.default, timeout: timeout) { return true }
        return false
    }

    /// One pass in the default mode that does not wait.
    @inline(__always)
    static func runOnePass(_ loop: Loop) { _ = loop.runInMode(.default, timeout: .zero) }

    /// Ends the innermost run; any thread.
    @inline(__always)
    static func stop(_ loop: Loop) { loop.stop() }

    /// Wakes the loop if it sleeps; any thread.
    @inline(__always)
    static func wakeUp(_ loop: Loop) { loop.wakeUp() }

    /// Queues `body` to run on the loop's thread at its next pass in the
    /// default mode; any thread (Apple's "perform selector" source).
    @inline(__always)
    static func perform(on loop: Loop, _ body: @escaping @Sendable () -> Void) {
        loop.perform(inModes: [.default], body)
    }

    // MARK: Custom sources

    typealias CustomSource = RunLoopSource

    /// A custom source in the default mode of `loop` whose perform callback
    /// is `perform`. Call on the loop's thread.
    static func addCustomSource(to loop: Loop, perform: @escaping @Sendable () -> Void) -> CustomSource {
        let source = RunLoopSource(order: 0) { _ in perform() }
        loop.add(source, forMode: .default)
        return source
    }

    /// Marks the source ready; any thread. Wakes the loop if it sleeps.
    @inline(__always)
    static func signal(_ source: CustomSource) { source.signal() }

    static func invalidate(_ source: CustomSource) { source.invalidate() }

    // MARK: Port-based sources

    typealias PortSourceHandle = PortSource

    /// A port source for `fileDescriptor` (which it owns and closes) in the
    /// default mode of `loop`. Call on the loop's thread.
    static func addPortSource(
        to loop: Loop, fileDescriptor: Int32, onReadable: @escaping @Sendable () -> Void
    ) -> PortSourceHandle {
        let source = PortSource(descriptor: OwnedDescriptor(adopting: fileDescriptor)) { _ in onReadable() }
        try! loop.add(source, forMode: .default)
        return source
    }

    static func invalidate(_ source: PortSourceHandle) { source.invalidate() }

    // MARK: Timers

    typealias TimerHandle = PCTimer

    /// A one-shot timer in the default mode of `loop`, zero tolerance.
    static func addOneShotTimer(
        to loop: Loop, fireAt: MonotonicInstant, _ action: @escaping @Sendable () -> Void
    ) -> TimerHandle {
        let timer = PCTimer(fireAt: fireAt) { _ in action() }
        loop.add(timer, forMode: .default)
        return timer
    }
}
