// WakeUpLatency: how long from another thread's signal to the loop's
// callback, while the loop sleeps (issue 2: "a source signalled while the
// loop sleeps is performed without waiting for any other event").
//
// The loop's thread (party 1) runs its loop with nothing else to do; the
// driver (party 0) pauses 50 µs so the loop is back asleep, stamps the time,
// then either signals a custom source (`signal`, which wakes the loop) or
// queues a perform request (`perform`), and blocks on an eventfd the callback
// writes. A sample is callback start - stamp. C baseline: c.eventfd.wakeup
// (a thread in epoll_wait woken by an eventfd write, the same pause).

import CBenchSupport
import Glibc
import PortCore
import Synchronization

enum WakeUpLatency {
    enum Kind: String { case signal, perform }

    /// What the driver and the loop's thread share.
    private final class Shared: @unchecked Sendable {
        /// When the driver signalled; atomic.
        let sentAt = Atomic<UInt64>(0)
        /// Eventfd (blocking) the callback writes and the driver reads; immutable.
        let done: Int32
        /// Eventfd (blocking) the loop's thread writes once `handoff` is set; immutable.
        let ready: Int32
        /// The loop and its source, set once by the loop's thread; under its mutex.
        let handoff = Mutex<(Loop, LoopAPI.CustomSource)?>(nil)
        /// Callbacks so far and the samples past the warm-up: touched only on
        /// the loop's thread until the driver has joined it.
        var performed = 0
        var samples: Samples
        let warmup: Int

        init(iterations: Int, warmup: Int) {
            done = bench_eventfd(0)
            ready = bench_eventfd(0)
            if done < 0 || ready < 0 { Report.fail("eventfd: errno \(bench_errno())") }
            samples = Samples(capacity: iterations)
            self.warmup = warmup
        }

        deinit {
            close(done)
            close(ready)
        }

        /// The callback: runs on the loop's thread.
        func callback() {
            let now = MonotonicInstant.now().nanoseconds
            performed += 1
            if performed > warmup { samples.append(now &- sentAt.load(ordering: .acquiring)) }
            if bench_eventfd_write(done) != 0 { Report.fail("write(eventfd): errno \(bench_errno())") }
        }
    }

    static func run(_ kind: Kind, iterations: Int, warmup: Int = 200) {
        let shared = Shared(iterations: iterations, warmup: warmup)
        let thread = BenchThread {
            Placement.pin(party: 1)
            let loop = LoopAPI.current()
            let source = LoopAPI.addCustomSource(to: loop) { shared.callback() }
            shared.handoff.withLock { $0 = (loop, source) }
            _ = bench_eventfd_write(shared.ready)
            LoopAPI.runUntilStopped(loop)
            LoopAPI.invalidate(source)
        }
        if bench_eventfd_read(shared.ready) != 0 { Report.fail("read(eventfd): errno \(bench_errno())") }
        guard let (loop, source) = shared.handoff.withLock({ $0 }) else { Report.fail("no loop handed over") }

        var pause = timespec(tv_sec: 0, tv_nsec: 50_000)
        for _ in 0..<(warmup + iterations) {
            nanosleep(&pause, nil)
            shared.sentAt.store(MonotonicInstant.now().nanoseconds, ordering: .releasing)
            switch kind {
            case .signal:
                LoopAPI.signal(source)  // wakes a sleeping loop by itself
            case .perform:
                LoopAPI.perform(on: loop) { shared.callback() }
            }
            if bench_eventfd_read(shared.done) != 0 { Report.fail("read(eventfd): errno \(bench_errno())") }
        }
        LoopAPI.stop(loop)
        thread.join()
        Report.latency("portcore.runloop.wakeup.\(kind.rawValue)", shared.samples)
    }
}
