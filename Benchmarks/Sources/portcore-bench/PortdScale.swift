// PortdScale: issue 13's figures for portd at scale, against a running
// portd (its socket in BENCH_PORTD_SOCKET, its pid from its STATUS;
// scripts/bench starts a private one with raised client limits):
//   portd.lookup.8clients   LOOKUPs per second from 8 client threads, each
//                           with its own connection, asking again and again
//                           for one name held by a port of this process that
//                           accepts the connections (each LOOKUP makes portd
//                           connect a new socket to it); uncached: every
//                           call is a LOOKUP round trip. unit=msg/s. A
//                           LOOKUP answered `limit` (the owner's backlog
//                           is full) is asked again, and counted on stderr.
//   portd.rss.idle          portd's VmRSS before anything is registered;
//   portd.rss.10k_names     with 10,000 names held by 1,000 clients (10
//                           each);
//   portd.rss.after_leave   once those clients closed their connections and
//                           portd's STATUS says the names are gone.
//                           unit=MiB.
// Runs before portd.fair (which registers 64,000 names of its own).

import CBenchSupport
import Glibc
import PortCore
import Synchronization

enum PortdScale {
    static func run(lookups: Int) {
        guard let raw = getenv("BENCH_PORTD_SOCKET") else {
            let note = "portcore-bench: portd.scale skipped (BENCH_PORTD_SOCKET is not set; scripts/bench sets it)\n"
            _ = note.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            return
        }
        let path = String(cString: raw)
        _ = bench_raise_nofile()
        let first = connect(path)
        guard let status = try? first.status() else { Report.fail("no STATUS from portd at \(path)") }
        first.invalidate()
        rss("portd.rss.idle", pid: status.pid, extra: "names=\(status.names)")
        lookupThroughput(path, lookups: lookups, clients: 8)
        residentSize(path, pid: status.pid, clients: 1000, namesEach: 10)
    }

    private static func lookupThroughput(_ path: String, lookups: Int, clients: Int) {
        // The name's port accepts on a loop thread of its own (party 1, as a
        // server is).
        let loop = LoopThread()
        let owner = connect(path)
        guard case .registered(let port)? = try? owner.register("bench.scale.target") else {
            Report.fail("cannot register bench.scale.target")
        }
        try! port.schedule(in: loop.loop, forMode: .default)
        let connections = (0..<clients).map { _ in connect(path) }
        let failures = Atomic<Int>(0)
        let retries = Atomic<Int>(0)
        let t0 = MonotonicInstant.now().nanoseconds
        var threads: [BenchThread] = []
        for c in 0..<clients {
            let client = connections[c]
            let share = lookups / clients + (c < lookups % clients ? 1 : 0)
            threads.append(BenchThread {
                Placement.pin(party: 0)
                var done = 0
                while done < share {
                    do throws(NameServerError) {
                        if let right = try client.lookup("bench.scale.target", cached: false) {
                            right.invalidate()
                        } else {
                            failures.wrappingAdd(1, ordering: .relaxed)
                        }
                    } catch .limit {
                        // The owner's backlog is full (it accepts on one
                        // thread, 8 clients ask): back-pressure, as a real
                        // client sees it. Asked again after a yield; counted.
                        retries.wrappingAdd(1, ordering: .relaxed)
                        sched_yield()
                        continue
                    } catch {
                        failures.wrappingAdd(1, ordering: .relaxed)
                    }
                    done += 1
                }
            })
        }
        for t in threads { t.join() }
        let elapsed = MonotonicInstant.now().nanoseconds &- t0
        if failures.load(ordering: .relaxed) > 0 { Report.fail("\(failures.load(ordering: .relaxed)) LOOKUPs failed") }
        let retried = retries.load(ordering: .relaxed)
        if retried > 0 {
            let note = "portcore-bench: portd.lookup.\(clients)clients: \(retried) LOOKUPs answered limit (the owner's backlog full) and were asked again\n"
            _ = note.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
        for c in connections { c.invalidate() }
        port.invalidate()
        owner.invalidate()
        loop.stop()
        Report.throughput("portd.lookup.\(clients)clients", count: UInt64(lookups), bytes: 0, elapsedNanoseconds: elapsed)
    }

    private static func residentSize(_ path: String, pid: Int32, clients: Int, namesEach: Int) {
        var holders: [PortNameServer] = []
        holders.reserveCapacity(clients)
        for c in 0..<clients {
            let client = connect(path)
            for n in 0..<namesEach {
                guard case .registered(let port)? = try? client.register("bench.rss.\(c).\(n)") else {
                    Report.fail("cannot register name \(n) of client \(c) (portd's limits?)")
                }
                port.invalidate()  // portd keeps the name while the connection lives
            }
            holders.append(client)
        }
        let prober = connect(path)
        let held = (try? prober.status().names).map { Int($0) } ?? -1
        rss("portd.rss.10k_names", pid: pid, extra: "names=\(held) clients=\(clients)")
        for h in holders { h.invalidate() }
        holders.removeAll()
        // Until portd has seen every hang-up (a bounded poll: a benchmark, not a test).
        var left = held
        for _ in 0..<2000 {
            left = (try? prober.status().names).map { Int($0) } ?? -1
            if left <= 0 { break }
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        rss("portd.rss.after_leave", pid: pid, extra: "names=\(left)")
        prober.invalidate()
    }

    /// One line with the VmRSS of process `pid` (portd, a bridge) in MiB.
    static func rss(_ name: String, pid: Int32, extra: String) {
        guard let file = fopen("/proc/\(pid)/status", "r") else { Report.fail("cannot read /proc/\(pid)/status") }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        var kilobytes = -1
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("VmRSS:") {
                kilobytes = Int(text.dropFirst(6).filter { $0.isNumber }) ?? -1
            }
        }
        if kilobytes < 0 { Report.fail("no VmRSS for pid \(pid)") }
        print("name=\(name) cpus=\(Placement.current.rawValue) unit=MiB value=\(Report.fixed(Double(kilobytes) / 1024, digits: 1)) \(extra)")
        fflush(nil)  // all streams: `stdout` is not concurrency-safe in Swift 6
    }

    private static func connect(_ path: String) -> PortNameServer {
        do {
            return try PortNameServer(socketPath: path, timeout: .seconds(30))
        } catch {
            Report.fail("cannot connect to portd at \(path): \(error)")
        }
    }

    /// A run loop on a thread of its own (party 1), until `stop()`.
    private final class LoopThread: @unchecked Sendable {
        // Safe to share: `loop` is set before `ready` is written and read only after.
        var loop: PCRunLoop!
        var thread: BenchThread!
        let ready = bench_eventfd(0)

        init() {
            thread = BenchThread { [self] in
                Placement.pin(party: 1)
                let loop = PCRunLoop.current
                loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
                self.loop = loop
                _ = bench_eventfd_write(ready)
                loop.runUntilStopped()
            }
            _ = bench_eventfd_read(ready)
        }

        func stop() {
            loop.stop()
            thread.join()
            close(ready)
        }
    }
}
