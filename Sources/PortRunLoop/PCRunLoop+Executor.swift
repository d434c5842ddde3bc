// A run loop as a Swift concurrency executor: an actor whose
// `unownedExecutor` is a loop runs its jobs on the loop's thread, inside the
// loop's passes (as perform requests in the common modes). While such an
// actor awaits, the loop keeps serving its sources and timers.

import PortSystem

extension PCRunLoop: SerialExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queuePerform(modes: [.common], order: 0, target: nil, isSource: false) { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func isSameExclusiveExecutionContext(other: PCRunLoop) -> Bool { self === other }

    public func checkIsolated() {
        precondition(isCurrent, "expected to run on the run loop's thread")
    }
}
