// Placement: which CPU each party runs on, from BENCH_CPUS, exactly as the C
// baselines do it (Benchmarks/c/bench.h): `same` puts every thread on CPU 0,
// `split` puts party 0 (the driver: signalling thread, client) on CPU 0 and
// party 1 (the run loop's thread, server) on CPU 1. On a VM a cross-CPU
// wake-up costs far more than the code measured, so a figure is only ever
// compared with a C figure of the same placement.

import CBenchSupport
import Glibc

enum Placement: String, Sendable {
    case same, split

    static let current: Placement = {
        guard let raw = getenv("BENCH_CPUS") else { return .same }
        return String(cString: raw) == "split" ? .split : .same
    }()

    /// Pins the calling thread to its party's CPU.
    static func pin(party: Int) {
        let cpu = current == .split ? party : 0
        if bench_pin_to_cpu(Int32(cpu)) != 0 {
            Report.fail("cannot pin to CPU \(cpu) (errno \(bench_errno())); BENCH_CPUS=split needs 2 CPUs")
        }
    }
}
