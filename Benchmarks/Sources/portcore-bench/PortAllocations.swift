// PortAllocations: heap allocations per message on PortCore's hot paths,
// counted by the benchmark executable's own malloc interposer
// (CBenchSupport/malloc_counter.c, per thread), in steady state (after a
// warm-up that lets every reusable buffer reach its size):
//   portcore.alloc.send            the sending thread, per SendRight.send of
//                                  a 64 B message (one data component);
//   portcore.alloc.receive         the port's loop thread, per such message
//                                  received and handed to the handler (the
//                                  whole pass: epoll, recvmsg, decode,
//                                  dispatch; the handler itself allocates
//                                  nothing);
//   portcore.alloc.request.client  the requesting thread, per request of
//                                  16 B and its reply (send, wait, receive);
//   portcore.alloc.request.server  the port's thread, per request received,
//                                  answered by returning a reply, and the
//                                  reply sent.
// With a view handler (`port.view.allocations`), the same two server-side
// counts, named portcore.alloc.receive.view and
// portcore.alloc.request.server.view (the view's request handler returns a
// prebuilt reply with the request's msgid; its client side is the same as
// above and not reported again).
// Result lines carry unit=allocs value=ALLOCATIONS_PER_MESSAGE. Not a
// test: a count, like a time, is a figure to read beside its goal (issue 13:
// at most one on each path).

import CBenchSupport
import Glibc
import PortCore
import Synchronization

enum PortAllocations {
    static func run(messages: Int, warmup: Int = 2000, view: Bool = false) {
        guard bench_malloc_interposed() != 0 else {
            Report.fail("the malloc counter is not interposed: allocation figures would be wrong")
        }
        oneWay(messages: messages, warmup: warmup, view: view)
        requests(messages: messages, warmup: warmup, view: view)
    }

    private static func oneWay(messages: Int, warmup: Int, view: Bool) {
        // Counted on the loop thread, inside the handler: the count at the
        // first and at the last measured message.
        let received = Atomic<Int>(0)
        let first = Atomic<UInt64>(0)
        let last = Atomic<UInt64>(0)
        let done = bench_eventfd(0)
        let total = warmup + messages
        @Sendable func count() {
            let n = received.wrappingAdd(1, ordering: .relaxed).newValue
            if n == warmup { first.store(UInt64(bench_malloc_count()), ordering: .relaxed) }
            if n == total {
                last.store(UInt64(bench_malloc_count()), ordering: .relaxed)
                _ = bench_eventfd_write(done)
            }
        }
        let server =
            view
            ? PortBenchmarks.Server(viewHandler: { _ in
                count()
                return nil
            })
            : PortBenchmarks.Server { _ in
                count()
                return nil
            }
        let right = try! server.port.makeSendRight()
        let message = PCPortMessage(msgid: 2, components: [.data([UInt8](repeating: 0x33, count: 64))])
        let sent = Atomic<UInt64>(0)
        let sender = BenchThread {
            Placement.pin(party: 0)
            var before: UInt64 = 0
            for i in 0..<total {
                if i == warmup { before = UInt64(bench_malloc_count()) }
                if try! right.send(message, timeout: .seconds(30)) != .sent { Report.fail("send failed") }
            }
            sent.store(UInt64(bench_malloc_count()) &- before, ordering: .relaxed)
        }
        sender.join()
        _ = bench_eventfd_read(done)
        right.invalidate()
        server.stop()
        close(done)
        if !view { report("portcore.alloc.send", sent.load(ordering: .relaxed), messages) }
        report(
            "portcore.alloc.receive\(view ? ".view" : "")", last.load(ordering: .relaxed) &- first.load(ordering: .relaxed),
            messages)
    }

    private static func requests(messages: Int, warmup: Int, view: Bool) {
        let received = Atomic<Int>(0)
        let first = Atomic<UInt64>(0)
        let last = Atomic<UInt64>(0)
        let total = warmup + messages
        // Counts at the start of the handler: from request `warmup` to
        // request `total`, `messages` whole requests were served in between.
        @Sendable func count() {
            let n = received.wrappingAdd(1, ordering: .relaxed).newValue
            if n == warmup + 1 { first.store(UInt64(bench_malloc_count()), ordering: .relaxed) }
            if n == total + 1 { last.store(UInt64(bench_malloc_count()), ordering: .relaxed) }
        }
        let reply = PCPortMessage(msgid: 0, components: [.data([UInt8](repeating: 0xa5, count: 16))])
        let server =
            view
            ? PortBenchmarks.Server(viewHandler: { v in
                count()
                var r = reply
                r.msgid = v.msgid
                return r
            })
            : PortBenchmarks.Server { m in
                count()
                return PCPortMessage(msgid: m.msgid, components: m.components)
            }
        let right = try! server.port.makeSendRight()
        let payload = PCPortMessage(msgid: 1, components: [.data([UInt8](repeating: 0x5a, count: 16))])
        var before: UInt64 = 0
        for i in 0...total {
            if i == warmup { before = UInt64(bench_malloc_count()) }
            if i == total { break }
            guard case .reply = try! right.request(payload, receiveTimeout: .seconds(10)) else {
                Report.fail("request \(i) got no reply")
            }
        }
        let client = UInt64(bench_malloc_count()) &- before
        // One more request, so that the handler took the last count.
        _ = try! right.request(payload, receiveTimeout: .seconds(10))
        right.invalidate()
        server.stop()
        if !view { report("portcore.alloc.request.client", client, messages) }
        report(
            "portcore.alloc.request.server\(view ? ".view" : "")",
            last.load(ordering: .relaxed) &- first.load(ordering: .relaxed), messages)
    }

    private static func report(_ name: String, _ allocations: UInt64, _ messages: Int) {
        print(
            "name=\(name) cpus=\(Placement.current.rawValue) unit=allocs"
                + " value=\(Report.fixed(Double(allocations) / Double(messages), digits: 2)) allocations=\(allocations) n=\(messages)")
        fflush(nil)  // all streams: `stdout` is not concurrency-safe in Swift 6
    }
}
