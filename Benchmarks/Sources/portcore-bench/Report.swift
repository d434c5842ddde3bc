// Report: samples, their statistics, and the result line scripts/bench
// parses, in the same format as Benchmarks/c/bench.h (one line per figure,
// key=value pairs starting with name= cpus= unit=). Latencies are printed in
// microseconds: median (sample n/2 of the sorted list), p99 (sample
// ceil(0.99 n) - 1), mean, and ops_per_s = 1 / mean. Only main's thread prints.

import Glibc

/// Nanosecond samples of one figure.
struct Samples {
    private(set) var nanoseconds: [UInt64] = []

    init(capacity: Int) { nanoseconds.reserveCapacity(capacity) }

    mutating func append(_ ns: UInt64) { nanoseconds.append(ns) }

    var count: Int { nanoseconds.count }
}

enum Report {
    /// Prints one latency line; `extra` is appended as more key=value pairs.
    static func latency(_ name: String, _ samples: Samples, extra: String? = nil) {
        precondition(samples.count > 0, "\(name): no samples")
        let sorted = samples.nanoseconds.sorted()
        let n = sorted.count
        let p99 = max((n * 99 + 99) / 100 - 1, 0)
        let mean = Double(sorted.reduce(0.0) { $0 + Double($1) }) / Double(n)
        var line = "name=\(name) cpus=\(Placement.current.rawValue) unit=us"
        line += " median=\(fixed(Double(sorted[n / 2]) / 1e3)) p99=\(fixed(Double(sorted[p99]) / 1e3))"
        line += " mean=\(fixed(mean / 1e3)) ops_per_s=\(Int((1e9 / mean).rounded())) n=\(n)"
        if let extra { line += " " + extra }
        print(line)
        fflush(nil)  // all streams: `stdout` is not concurrency-safe in Swift 6
    }

    /// Prints one throughput line: `count` messages of `bytes` each in `elapsedNanoseconds`.
    static func throughput(_ name: String, count: UInt64, bytes: Int, elapsedNanoseconds: UInt64) {
        let s = Double(elapsedNanoseconds) / 1e9
        let rate = Double(count) / s
        print("name=\(name) cpus=\(Placement.current.rawValue) unit=msg/s value=\(Int(rate.rounded()))"
            + " mb_per_s=\(fixed(rate * Double(bytes) / 1e6, digits: 1)) n=\(count)")
        fflush(nil)  // all streams: `stdout` is not concurrency-safe in Swift 6
    }

    /// Writes a diagnostic to stderr and exits 1.
    static func fail(_ message: String) -> Never {
        let text = "portcore-bench: \(message)\n"
        _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        exit(1)
    }

    /// `value` with exactly `digits` decimals, like printf's %.3f.
    static func fixed(_ value: Double, digits: Int = 3) -> String {
        var unit: Int64 = 1
        for _ in 0..<digits { unit *= 10 }
        let scaled = Int64((abs(value) * Double(unit)).rounded())
        var fraction = String(scaled % unit)
        while fraction.count < digits { fraction = "0" + fraction }
        let sign = value < 0 && scaled != 0 ? "-" : ""
        return digits == 0 ? "\(sign)\(scaled)" : "\(sign)\(scaled / unit).\(fraction)"
    }
}
