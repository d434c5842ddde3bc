// Benchmarks: the list of PortCore benchmarks and how they are chosen. Each
// entry prints one or more result lines (see Report). Arguments are
// substrings; a benchmark runs when its name contains any of them (all run
// when none is given). Iteration counts scale with BENCH_SCALE (e.g. 0.1
// for a smoke run), as in the C baselines. Ports (issue 3) add entries here.

import Glibc

struct Benchmark: Sendable {
    let name: String
    let run: @Sendable () -> Void
}

enum Benchmarks {
    static func scaled(_ n: Int) -> Int {
        guard let raw = getenv("BENCH_SCALE"), let factor = Double(String(cString: raw)) else { return n }
        return max(10, Int(Double(n) * factor))
    }

    static let all: [Benchmark] = [
        Benchmark(name: "runloop.wakeup.signal") { WakeUpLatency.run(.signal, iterations: scaled(5000)) },
        Benchmark(name: "runloop.wakeup.perform") { WakeUpLatency.run(.perform, iterations: scaled(5000)) },
        Benchmark(name: "runloop.timer.lateness") { TimerLateness.run(iterations: scaled(500)) },
        Benchmark(name: "runloop.pass.idle1") { PassCost.run(idle: 1, samples: scaled(2000)) },
        Benchmark(name: "runloop.pass.idle10000") { PassCost.run(idle: 10_000, samples: scaled(2000)) },
        Benchmark(name: "port.roundtrip.16") { PortBenchmarks.roundTrip(bytes: 16, iterations: scaled(20000)) },
        Benchmark(name: "port.roundtrip.1024") { PortBenchmarks.roundTrip(bytes: 1024, iterations: scaled(20000)) },
        Benchmark(name: "port.oneway.64") { PortBenchmarks.oneWay(bytes: 64, count: scaled(200_000), senders: 1) },
        Benchmark(name: "port.oneway.4096") { PortBenchmarks.oneWay(bytes: 4096, count: scaled(200_000), senders: 1) },
        Benchmark(name: "port.oneway.64.8senders") { PortBenchmarks.oneWay(bytes: 64, count: scaled(200_000), senders: 8) },
        Benchmark(name: "port.memfd.64mib") { PortBenchmarks.largeComponent(megabytes: 64, iterations: scaled(20)) },
        Benchmark(name: "port.roundtrip.right") { PortBenchmarks.rightPassing(iterations: scaled(20000)) },
        Benchmark(name: "port.allocations") { PortAllocations.run(messages: scaled(20000)) },
        // The same with a view handler (PortMessageView); not matched by
        // the names above, so `scripts/bench --json` does not run them.
        Benchmark(name: "port.view.roundtrip.1024") { PortBenchmarks.roundTrip(bytes: 1024, iterations: scaled(20000), view: true) },
        Benchmark(name: "port.view.oneway.64") { PortBenchmarks.oneWay(bytes: 64, count: scaled(200_000), senders: 1, view: true) },
        Benchmark(name: "port.view.oneway.4096") { PortBenchmarks.oneWay(bytes: 4096, count: scaled(200_000), senders: 1, view: true) },
        Benchmark(name: "port.view.allocations") { PortAllocations.run(messages: scaled(20000), view: true) },
        // Need a running portd (BENCH_PORTD_SOCKET): skipped without one.
        // portd.scale first: portd.fair leaves 64,000 names behind.
        Benchmark(name: "portd.scale") { PortdScale.run(lookups: scaled(100_000)) },
        Benchmark(name: "portd.fair") { FairService.run(probes: scaled(3000)) },
        // Need two portds with bridges between them (BENCH_BRIDGE_*, issue
        // 25): skipped without them.
        Benchmark(name: "bridge.calls") { BridgeBench.calls(iterations: scaled(5000), oneWayCount: scaled(50000)) },
        Benchmark(name: "bridge.rss") { BridgeBench.residentSize(names: 1000) },
    ]

    /// Runs the benchmarks chosen by `arguments` (without the program name).
    static func main(_ arguments: [String]) -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print("usage: portcore-bench [--list] [SUBSTRING...]   (env: BENCH_CPUS=same|split, BENCH_SCALE)")
            return 0
        }
        if arguments.contains("--list") {
            for b in all { print(b.name) }
            return 0
        }
        let chosen = all.filter { b in arguments.isEmpty || arguments.contains { b.name.contains($0) } }
        if chosen.isEmpty { Report.fail("no benchmark matches \(arguments)") }
        Placement.pin(party: 0)
        for b in chosen { b.run() }
        return 0
    }
}
