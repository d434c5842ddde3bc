// portcore-bench: PortCore's benchmarks (run-loop figures of issue 2 today;
// ports of issue 3 later), printing result lines for scripts/bench, which
// sets their ratios to the C baselines of Benchmarks/c. Not a test: build
// and run it with scripts/bench. All work happens in Benchmarks.main, which
// is nonisolated: closures made here, in main-actor top-level code, must not
// reach other threads (a closure literal handed to another thread from there traps in Swift 6).

import Glibc

exit(Benchmarks.main(Array(CommandLine.arguments.dropFirst())))
