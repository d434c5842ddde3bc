// FairService: issue 12's fairness figure. Against a running portd (its
// socket in BENCH_PORTD_SOCKET; scripts/bench starts a private one with
// NamesPerClient raised), one client registers BENCH_FAIR_NAMES names
// (64,000 by default; fewer when a portd limit refuses the rest: the count
// reached is printed as names=), then STATUS round trips of another client
// are timed:
//   portd.fair.status.idle    with nothing else going on;
//   portd.list.all            (issue 13) not a STATUS: one client's whole
//                             LIST of those names, every page, nothing
//                             else going on (goal: well under a second);
//   portd.fair.status.loaded  while two clients flood portd with one-way
//                             records (LOOKUP of a missing name, no
//                             REPLY_EXPECTED, sent as fast as portd takes
//                             them) and four clients page LIST over every
//                             name, again and again.
// The goal (issue 12): loaded p99 <= 5 ms. The loaded line also says how
// much the load got done (flood_per_s, list_pages_per_s), so a figure bought
// by starving the load would show. Probes are spaced by 1 ms so that they
// sample the load over time rather than queue behind each other.

import CBenchSupport
import Glibc
import PortCore
import Synchronization

enum FairService {
    static func run(probes: Int) {
        guard let raw = getenv("BENCH_PORTD_SOCKET") else {
            let note = "portcore-bench: portd.fair skipped (BENCH_PORTD_SOCKET is not set; scripts/bench sets it)\n"
            _ = note.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            return
        }
        let path = String(cString: raw)
        let wanted = getenv("BENCH_FAIR_NAMES").flatMap { Int(String(cString: $0)) } ?? 64_000

        // The names, held by one connection for the whole run.
        let owner = client(path)
        var names = 0
        for i in 0..<wanted {
            guard case .registered(let port)? = try? owner.register("bench.fair.\(i)") else { break }
            port.invalidate()  // portd keeps the name; this process keeps no descriptor for it
            names += 1
        }
        if names < wanted {
            // A limit refused the rest: give back a few, so that the seven
            // clients below still fit in portd's descriptor budget.
            for i in Swift.max(0, names - 16)..<names { _ = try? owner.release("bench.fair.\(i)") }
            names = Swift.max(0, names - 16)
        }

        let prober = client(path)
        Report.latency("portd.fair.status.idle", probe(prober, count: probes), extra: "names=\(names)")

        // A whole listing (every page) of all those names, nothing else running.
        var listings = Samples(capacity: 10)
        var listed = 0
        for i in 0..<10 {
            let t0 = MonotonicInstant.now().nanoseconds
            do {
                listed = try prober.list().count
            } catch {
                Report.fail("LIST \(i): \(error)")
            }
            listings.append(MonotonicInstant.now().nanoseconds &- t0)
        }
        Report.latency("portd.list.all", listings, extra: "names=\(listed) pages=\((listed + 127) / 128)")

        let stop = Atomic<Bool>(false)
        let flooded = Atomic<Int>(0)
        let pages = Atomic<Int>(0)
        var threads: [BenchThread] = []
        for _ in 0..<2 {
            let right = rawConnection(path)
            threads.append(BenchThread {
                Placement.pin(party: 0)
                let message = PCPortMessage(
                    msgid: NameServerProtocol.MessageID.lookup, strings: ["serial=2", "name=bench.fair.nobody"])
                while !stop.load(ordering: .relaxed) {
                    guard case .sent? = try? right.send(message, timeout: .seconds(10)) else { break }
                    flooded.wrappingAdd(1, ordering: .relaxed)
                }
                right.invalidate()
            })
        }
        for _ in 0..<4 {
            let pager = client(path)
            threads.append(BenchThread {
                Placement.pin(party: 0)
                while !stop.load(ordering: .relaxed) {
                    guard let all = try? pager.list() else { break }
                    // Pages of a full listing: a reply holds at most 128 names (HELLO's list_page).
                    pages.wrappingAdd(max(1, (all.count + 127) / 128), ordering: .relaxed)
                }
                pager.invalidate()
            })
        }
        let t0 = MonotonicInstant.now().nanoseconds
        let samples = probe(prober, count: probes)
        let seconds = Double(MonotonicInstant.now().nanoseconds &- t0) / 1e9
        stop.store(true, ordering: .relaxed)
        for t in threads { t.join() }
        let longest = samples.nanoseconds.max() ?? 0
        Report.latency(
            "portd.fair.status.loaded", samples,
            extra: "names=\(names) flooders=2 pagers=4 max=\(Report.fixed(Double(longest) / 1e3))"
                + " flood_per_s=\(Int(Double(flooded.load(ordering: .relaxed)) / seconds))"
                + " list_pages_per_s=\(Int(Double(pages.load(ordering: .relaxed)) / seconds))")
        prober.invalidate()
        owner.invalidate()
    }

    /// `count` STATUS round trips, 1 ms apart.
    private static func probe(_ client: PortNameServer, count: Int) -> Samples {
        var samples = Samples(capacity: count)
        var gap = timespec(tv_sec: 0, tv_nsec: 1_000_000)
        for i in 0..<count {
            let t0 = MonotonicInstant.now().nanoseconds
            do {
                _ = try client.status()
            } catch {
                Report.fail("STATUS \(i): \(error)")
            }
            samples.append(MonotonicInstant.now().nanoseconds &- t0)
            nanosleep(&gap, nil)
        }
        return samples
    }

    private static func client(_ path: String) -> PortNameServer {
        do {
            return try PortNameServer(socketPath: path, timeout: .seconds(30))
        } catch {
            Report.fail("cannot connect to portd at \(path): \(error)")
        }
    }

    /// A bare connection to portd's control socket, for records no client API sends.
    private static func rawConnection(_ path: String) -> SendRight {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { Report.fail("socket: errno \(bench_errno())") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        if bytes.count >= MemoryLayout.size(ofValue: address.sun_path) { Report.fail("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, b) in bytes.enumerated() { buffer[i] = b }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if connected != 0 { Report.fail("connect \(path): errno \(bench_errno())") }
        let right = SendRight(descriptor: OwnedDescriptor(adopting: fd))
        // Protocol 1.0: HELLO first, so that what follows is served as requests.
        let hello = PCPortMessage(msgid: NameServerProtocol.MessageID.hello, strings: ["serial=1", "protocol=1.0"])
        guard case .reply(let reply)? = try? right.request(hello), reply.msgid == NameServerProtocol.MessageID.reply else {
            Report.fail("HELLO on a raw connection was not answered")
        }
        return right
    }
}
