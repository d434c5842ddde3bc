// BridgeBench: issue 25's figures for portd-bridge, against two "hosts" that
// scripts/bench starts on this machine: portd A with bridge A (which
// exports bench.bridge.*) and portd B with bridge B (which imports it),
// their bridges on NATS (one nats-server, or leaf - hub - leaf).
// BENCH_BRIDGE_OWNER_SOCKET is portd A's socket, BENCH_BRIDGE_CLIENT_SOCKET
// portd B's; both benchmarks are skipped without them.
//   bridge.calls  (BENCH_BRIDGE_TOPOLOGY names the lines: one | leaf)
//     portd.bridge.rtt.{16B,1KiB}.TOPO   a request from a client of portd B
//                                        (party 0) to the name, owned by a
//                                        PCPort of this process registered
//                                        in portd A (party 1) that echoes it;
//     portd.bridge.oneway.64B.TOPO       64 B one-way sends as fast as the
//                                        bridge's window lets them go, then
//                                        one request on the same connection
//                                        (a session keeps order) answered
//                                        with how many arrived: until then.
//                                        Median of 5 runs.
//     Baselines: nats.bare.* of Benchmarks/c/nats_bare.c over the same path.
//     BENCH_BRIDGE_PARTS=rtt or =oneway runs only those figures (to
//     profile one kind of traffic at a time); BENCH_BRIDGE_ONEWAY_BYTES
//     sets the one-way records' size (64 unless given; the figure is
//     named after it), e.g. large enough for the bridges' NATS sockets
//     to fill.
//   bridge.rss  (BENCH_BRIDGE_PIDS="PID_A PID_B": the two bridges)
//     portd.bridge.rss.idle.{export,import}   each bridge's VmRSS before;
//     portd.bridge.rss.1000.{export,import}   with 1,000 names registered
//                                             in portd A (one client),
//                                             exported by A and imported
//                                             by B (until B's portd lists
//                                             them all; imported_within_s=
//                                             since the first REGISTER).
//                                             unit=MiB.

import CBenchSupport
import Glibc
import PortCore
import Synchronization

enum BridgeBench {
    static let echoName = "bench.bridge.echo"
    static let echoID: UInt32 = 1
    static let oneWayID: UInt32 = 2
    static let syncID: UInt32 = 3

    private static func environment(_ key: String) -> String? {
        getenv(key).map { String(cString: $0) }
    }

    private static func sockets(_ what: String) -> (owner: String, client: String)? {
        guard let owner = environment("BENCH_BRIDGE_OWNER_SOCKET"),
            let client = environment("BENCH_BRIDGE_CLIENT_SOCKET")
        else {
            let note = "portcore-bench: \(what) skipped (BENCH_BRIDGE_*_SOCKET are not set; scripts/bench sets them)\n"
            _ = note.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            return nil
        }
        return (owner, client)
    }

    static func calls(iterations: Int, oneWayCount: Int) {
        guard let (ownerSocket, clientSocket) = sockets("bridge.calls") else { return }
        let topology = environment("BENCH_BRIDGE_TOPOLOGY") ?? "one"
        let arrived = Atomic<Int>(0)
        let ownerConnection = connect(ownerSocket)
        let server = PortBenchmarks.Server(makePort: {
            guard case .registered(let port)? = try? ownerConnection.register(echoName) else {
                Report.fail("cannot register \(echoName) in portd A")
            }
            port.setHandler { m in
                switch m.msgid {
                case oneWayID:
                    arrived.wrappingAdd(1, ordering: .relaxed)
                    return nil
                case syncID:
                    let n = UInt64(arrived.exchange(0, ordering: .relaxed))
                    return PCPortMessage(msgid: m.msgid, components: [.data(withUnsafeBytes(of: n) { Array($0) })])
                default:
                    return PCPortMessage(msgid: m.msgid, components: m.components)
                }
            }
            return port
        })
        let client = connect(clientSocket)
        // Until bridge B has imported the name (bridge A exports it once it
        // sees the registration; B registers it once the registry says so).
        let right: SendRight
        do {
            guard let r = try client.lookup(echoName, wait: .seconds(60)) else {
                Report.fail("\(echoName) never reached portd B (are both bridges up?)")
            }
            right = r
        } catch {
            Report.fail("lookup of \(echoName) in portd B: \(error)")
        }
        let parts = environment("BENCH_BRIDGE_PARTS") ?? "rtt oneway"
        for bytes in [16, 1024] where parts.contains("rtt") {
            let payload = PCPortMessage(msgid: echoID, components: [.data([UInt8](repeating: 0x5a, count: bytes))])
            let warmup = 500
            var samples = Samples(capacity: iterations)
            for i in 0..<(warmup + iterations) {
                let t0 = MonotonicInstant.now().nanoseconds
                guard case .reply(let r) = try? right.request(payload, receiveTimeout: .seconds(10)),
                    case .data(let d)? = r.components.first, d.count == bytes
                else {
                    Report.fail("bridged request \(i) of \(bytes) B got no echo")
                }
                if i >= warmup { samples.append(MonotonicInstant.now().nanoseconds &- t0) }
            }
            Report.latency("portd.bridge.rtt.\(bytes == 1024 ? "1KiB" : "\(bytes)B").\(topology)", samples)
        }
        let oneWayBytes = environment("BENCH_BRIDGE_ONEWAY_BYTES").flatMap { Int($0) } ?? 64
        let message = PCPortMessage(msgid: oneWayID, components: [.data([UInt8](repeating: 0x33, count: oneWayBytes))])
        let sync = PCPortMessage(msgid: syncID)
        var rates: [Double] = []
        var lost = 0
        for _ in 0..<(parts.contains("oneway") ? 5 : 0) {
            let t0 = MonotonicInstant.now().nanoseconds
            for _ in 0..<oneWayCount {
                guard (try? right.send(message, timeout: .seconds(30))) == .sent else { Report.fail("bridged send failed") }
            }
            guard case .reply(let r) = try? right.request(sync, receiveTimeout: .seconds(60)),
                case .data(let d)? = r.components.first, d.count == 8
            else {
                Report.fail("the sync request after the one-way run got no answer")
            }
            let elapsed = MonotonicInstant.now().nanoseconds &- t0
            let n = d.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            lost += oneWayCount - Int(n)
            rates.append(Double(oneWayCount) * 1e9 / Double(elapsed))
        }
        rates.sort()
        if let rate = rates.isEmpty ? nil : rates[rates.count / 2] {
            print("name=portd.bridge.oneway.\(oneWayBytes)B.\(topology) cpus=\(Placement.current.rawValue) unit=msg/s"
                + " value=\(Int(rate.rounded())) mb_per_s=\(Report.fixed(rate * Double(oneWayBytes) / 1e6, digits: 2))"
                + " runs=5 count=\(oneWayCount) lost=\(lost)")
            fflush(nil)  // all streams: `stdout` is not concurrency-safe in Swift 6
        }
        right.invalidate()
        client.invalidate()
        server.stop()
        ownerConnection.invalidate()
    }

    static func residentSize(names count: Int) {
        guard let (ownerSocket, clientSocket) = sockets("bridge.rss") else { return }
        guard let raw = environment("BENCH_BRIDGE_PIDS") else {
            Report.fail("bridge.rss needs BENCH_BRIDGE_PIDS=\"PID_A PID_B\"")
        }
        let pids = raw.split(separator: " ").compactMap { Int32($0) }
        guard pids.count == 2 else { Report.fail("BENCH_BRIDGE_PIDS: two pids, not \(raw)") }
        PortdScale.rss("portd.bridge.rss.idle.export", pid: pids[0], extra: "names=0")
        PortdScale.rss("portd.bridge.rss.idle.import", pid: pids[1], extra: "names=0")
        let holder = connect(ownerSocket)
        let t0 = MonotonicInstant.now().nanoseconds
        for n in 0..<count {
            guard case .registered(let port)? = try? holder.register("bench.bridge.rss.\(n)") else {
                Report.fail("cannot register bench.bridge.rss.\(n) in portd A (its NamesPerClient?)")
            }
            port.invalidate()  // portd keeps the name while the connection lives
        }
        // Until portd B lists every name (a bounded poll: a benchmark, not a test).
        let prober = connect(clientSocket)
        var seen = 0
        for _ in 0..<6000 {
            seen = ((try? prober.list()) ?? []).count { $0.name.hasPrefix("bench.bridge.rss.") }
            if seen == count { break }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)
        }
        let seconds = Double(MonotonicInstant.now().nanoseconds &- t0) / 1e9
        if seen != count { Report.fail("portd B lists \(seen) of \(count) imported names after 60 s") }
        let extra = "names=\(count) imported_within_s=\(Report.fixed(seconds, digits: 2))"
        PortdScale.rss("portd.bridge.rss.\(count).export", pid: pids[0], extra: extra)
        PortdScale.rss("portd.bridge.rss.\(count).import", pid: pids[1], extra: extra)
        prober.invalidate()
        holder.invalidate()
    }

    private static func connect(_ path: String) -> PortNameServer {
        do {
            return try PortNameServer(socketPath: path, timeout: .seconds(30))
        } catch {
            Report.fail("cannot connect to portd at \(path): \(error)")
        }
    }
}
