// PassCost: the cost of one run-loop pass that finds nothing to do, with 1
// and with 10,000 idle port sources registered (eventfds that never become
// ready). Issue 2 requires that it not grow with idle sources: epoll reports
// only ready descriptors, so a pass must never walk the registered ones.
// Each sample is the mean of a batch of 100 `runInMode(_:timeout: .zero)`
// calls. C baseline: c.epoll.pass.idleN (epoll_wait with timeout 0 and the
// same idle eventfds). Single thread, party 0.

import CBenchSupport
import PortCore
import Synchronization

enum PassCost {
    static let batch = 100

    /// Handler calls, which must stay zero; atomic.
    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    static func run(idle: Int, samples count: Int) {
        let thread = BenchThread {
            Placement.pin(party: 0)
            let limit = bench_raise_nofile()
            if limit >= 0 && limit < idle + 64 {
                Report.fail("descriptor limit \(limit) is too low for \(idle) idle sources")
            }
            let loop = LoopAPI.current()
            let handled = Counter()
            var sources: [LoopAPI.PortSourceHandle] = []
            sources.reserveCapacity(idle)
            for _ in 0..<idle {
                let fd = bench_eventfd(1)
                if fd < 0 { Report.fail("eventfd: errno \(bench_errno())") }
                sources.append(LoopAPI.addPortSource(to: loop, fileDescriptor: fd) {
                    handled.value.add(1, ordering: .relaxed)
                })
            }
            for _ in 0..<1000 { LoopAPI.runOnePass(loop) }
            var samples = Samples(capacity: count)
            for _ in 0..<count {
                let t0 = MonotonicInstant.now().nanoseconds
                for _ in 0..<batch { LoopAPI.runOnePass(loop) }
                samples.append((MonotonicInstant.now().nanoseconds - t0) / UInt64(batch))
            }
            if handled.value.load(ordering: .relaxed) != 0 { Report.fail("an idle source's handler ran") }
            for source in sources { LoopAPI.invalidate(source) }
            Report.latency("portcore.runloop.pass.idle\(idle)", samples, extra: "batch=\(batch)")
        }
        thread.join()
    }
}
