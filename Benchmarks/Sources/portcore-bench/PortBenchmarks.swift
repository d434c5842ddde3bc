// PortBenchmarks: issue 3's figures for ports, each beside its C baseline in
// scripts/bench: request/reply round trip (16 B, 1 KiB) vs
// c.seqpacket.pingpong; one-way throughput (64 B, 4 KiB) and 8 senders to
// one port vs c.seqpacket.oneway; a 64 MiB component by sealed memfd vs
// c.memfd.64mib. The server is a PCPort on its own run-loop thread (party 1);
// the client (party 0) uses a SendRight, as an application would.
// Views (issue 13): the same round trip of 1 KiB and one-way streams with a
// view handler (PortMessageView: data read in place, never copied into
// arrays), named like the array figures with `.view` appended
// (portcore.port.rtt.1KiB.view, portcore.port.oneway.4KiB.1to1.view), so
// scripts/bench sets them against the same baselines. The view round trip's
// handler reads the request in place and returns a prebuilt 1 KiB reply
// (an echo would have to copy the bytes out of the view to return them).

import CBenchSupport
import Glibc
import PortCore
import Synchronization

enum PortBenchmarks {
    /// A port on a loop thread; `handler` runs there.
    final class Server: @unchecked Sendable {
        // Safe to share: `port` and `loop` are set before `ready` is written
        // and only read after it is read; `thread` is touched by the starter only.
        var port: PCPort!
        var loop: PCRunLoop!
        var thread: BenchThread!
        let ready = bench_eventfd(0)

        convenience init(_ handler: @escaping @Sendable (PCPortMessage) -> PCPortMessage?) {
            self.init(makePort: { PCPort(handler: handler) })
        }

        /// A server whose port lends each message to `viewHandler` as a view.
        @_disfavoredOverload  // `Server { _ in nil }` stays the closure handler, as PCPort's
        convenience init(viewHandler: @escaping @Sendable (borrowing PortMessageView) -> PCPortMessage?) {
            self.init(makePort: { PCPort(viewHandler: viewHandler) })
        }

        /// `makePort` runs on the server's thread.
        init(makePort: @escaping @Sendable () -> PCPort) {
            thread = BenchThread { [self] in
                Placement.pin(party: 1)
                let loop = PCRunLoop.current
                let port = makePort()
                try! port.schedule(in: loop, forMode: .default)
                loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
                self.port = port
                self.loop = loop
                _ = bench_eventfd_write(ready)
                loop.runUntilStopped()
                port.invalidate()
            }
            _ = bench_eventfd_read(ready)
        }

        func stop() {
            loop.stop()
            thread.join()
            close(ready)
        }
    }

    static func roundTrip(bytes: Int, iterations: Int, warmup: Int = 1000, view: Bool = false) {
        let reply = PCPortMessage(msgid: 0, components: [.data([UInt8](repeating: 0xa5, count: bytes))])
        let server =
            view
            ? Server(viewHandler: { v in
                // Read in place: the request's last byte decides nothing but must be read.
                let last = v.withUnsafeBytes(ofComponent: 0) { $0.last ?? 0 } ?? 0
                var r = reply
                r.msgid = v.msgid &+ UInt32(last &* 0)
                return r
            })
            : Server { m in PCPortMessage(msgid: m.msgid, components: m.components) }
        let right = try! server.port.makeSendRight()
        let payload = PCPortMessage(msgid: 1, components: [.data([UInt8](repeating: 0x5a, count: bytes))])
        var samples = Samples(capacity: iterations)
        for i in 0..<(warmup + iterations) {
            let t0 = MonotonicInstant.now().nanoseconds
            guard case .reply = try! right.request(payload, receiveTimeout: .seconds(10)) else {
                Report.fail("request \(i) got no reply")
            }
            if i >= warmup { samples.append(MonotonicInstant.now().nanoseconds &- t0) }
        }
        right.invalidate()
        server.stop()
        Report.latency("portcore.port.rtt.\(bytes == 1024 ? "1KiB" : "\(bytes)B")\(view ? ".view" : "")", samples)
    }

    /// A request carrying one send right (a spare right to the same port,
    /// lent each time; the server receives a new descriptor for it and
    /// closes it when the message goes) answered by an empty reply:
    /// against c.seqpacket.rtt.right.blocking, which passes one descriptor
    /// with SCM_RIGHTS the same way.
    static func rightPassing(iterations: Int, warmup: Int = 1000) {
        let server = Server { m in
            guard case .port? = m.components.first else { Report.fail("the right did not arrive") }
            return PCPortMessage(msgid: m.msgid)
        }
        let right = try! server.port.makeSendRight()
        let passed = try! server.port.makeSendRight()
        let payload = PCPortMessage(msgid: 4, components: [.port(passed)])
        var samples = Samples(capacity: iterations)
        for i in 0..<(warmup + iterations) {
            let t0 = MonotonicInstant.now().nanoseconds
            guard case .reply = try! right.request(payload, receiveTimeout: .seconds(10)) else {
                Report.fail("request \(i) got no reply")
            }
            if i >= warmup { samples.append(MonotonicInstant.now().nanoseconds &- t0) }
        }
        right.invalidate()
        passed.invalidate()
        server.stop()
        Report.latency("portcore.port.rtt.right", samples)
    }

    static func oneWay(bytes: Int, count: Int, senders: Int, view: Bool = false) {
        let received = Atomic<Int>(0)
        let done = bench_eventfd(0)
        let total = count
        let server =
            view
            ? Server(viewHandler: { _ in
                if received.wrappingAdd(1, ordering: .relaxed).newValue == total { _ = bench_eventfd_write(done) }
                return nil
            })
            : Server { _ in
                if received.wrappingAdd(1, ordering: .relaxed).newValue == total { _ = bench_eventfd_write(done) }
                return nil
            }
        let rights = (0..<senders).map { _ in try! server.port.makeSendRight() }
        let message = PCPortMessage(msgid: 2, components: [.data([UInt8](repeating: 0x33, count: bytes))])
        let t0 = MonotonicInstant.now().nanoseconds
        var threads: [BenchThread] = []
        for s in 0..<senders {
            let right = rights[s]
            let share = count / senders + (s < count % senders ? 1 : 0)
            threads.append(BenchThread {
                Placement.pin(party: 0)
                for _ in 0..<share {
                    if try! right.send(message, timeout: .seconds(30)) != .sent { Report.fail("send failed") }
                }
            })
        }
        for t in threads { t.join() }
        _ = bench_eventfd_read(done)
        let elapsed = MonotonicInstant.now().nanoseconds &- t0
        for r in rights { r.invalidate() }
        server.stop()
        close(done)
        let size = bytes == 4096 ? "4KiB" : "\(bytes)B"
        let name = "portcore.port.oneway.\(size).\(senders)to1\(view ? ".view" : "")"
        Report.throughput(name, count: UInt64(count), bytes: bytes, elapsedNanoseconds: elapsed)
    }

    /// A 64 MiB component: send (memfd create + copy + seal), receive, map, touch every page.
    static func largeComponent(megabytes: Int, iterations: Int) {
        let done = bench_eventfd(0)
        let server = Server { m in
            if case .sharedMemory(let shm) = m.components[0] {
                var sum = 0
                shm.withUnsafeBytes { raw in
                    var i = 0
                    while i < raw.count { sum &+= Int(raw[i]); i += 4096 }
                }
                if sum == -1 { Report.fail("impossible") }
            } else {
                Report.fail("large component did not arrive as shared memory")
            }
            _ = bench_eventfd_write(done)
            return nil
        }
        let right = try! server.port.makeSendRight()
        let message = PCPortMessage(msgid: 3, components: [.data([UInt8](repeating: 0x11, count: megabytes << 20))])
        var samples = Samples(capacity: iterations)
        for _ in 0..<iterations {
            let t0 = MonotonicInstant.now().nanoseconds
            _ = try! right.send(message, timeout: .seconds(30))
            _ = bench_eventfd_read(done)
            samples.append(MonotonicInstant.now().nanoseconds &- t0)
        }
        right.invalidate()
        server.stop()
        close(done)
        Report.latency("portcore.port.memfd.\(megabytes)MiB", samples)
    }
}
