// The NATS topology the bridge's tests stand on (PortTestSupport's
// NatsTopology), proved with real servers and nats-py clients: a request
// crosses leaf–hub–leaf; a key-value bucket on the hub's JetStream is
// written through one leaf and watched through another; a leaf stopped
// (SIGSTOP) for 3 s makes requests through it fail within their deadlines,
// and they succeed again after SIGCONT without anything being restarted;
// a restarted hub comes back on its ports and the leaves reconnect.

import Foundation
import Glibc
import PortTestSupport
import Testing

@Suite("NATS test topology", .serialized)
struct NatsTopologyTests {
    /// How long a request may wait for its interest to reach every server
    /// (subscriptions travel leaf → hub → leaf asynchronously; until then
    /// the far server answers "no responders" at once).
    let propagation = 10.0

    @Test("a nats-py responder on leaf A answers a nats-py request from leaf B")
    func requestAcrossLeaves() throws {
        let topology = try NatsTopology(leaves: 2)
        let (a, b) = (topology.leaves[0], topology.leaves[1])
        #expect(a.clientPort != b.clientPort && a.clientPort != topology.hub.clientPort)
        let responder = try NatsPeer.respond(url: a.url, subject: "port.org.example.echo")
        defer { responder.killAndReap() }
        let (result, attempts) = try NatsPeer.request(
            url: b.url, subject: "port.org.example.echo", payload: "hello", untilOK: propagation)
        #expect(result.status == NatsPeer.replied, "\(result.standardOutput)\(result.standardError)")
        #expect(attempts.last?.payload == "echo:hello")
        // Every failed attempt was "no responders" (the interest on its way), never a lost request.
        #expect(attempts.dropLast().allSatisfy { $0.outcome == .noResponders }, "\(attempts)")
    }

    @Test("a key-value bucket written through leaf A is watched through leaf B (JetStream on the hub alone)")
    func keyValueAcrossLeaves() throws {
        let topology = try NatsTopology(leaves: 2)
        let (a, b) = (topology.leaves[0], topology.leaves[1])
        let first = try PythonVenv.run(NatsPeer.script, ["kv-put", a.url, "PORTD_NAMES", "hostA.org.example.echo", "v1"])
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardOutput == "1\n")
        let watcher = try PythonVenv.start(NatsPeer.script, ["kv-watch", b.url, "PORTD_NAMES", "3"])
        defer { watcher.killAndReap() }
        try watcher.waitForStandardOutput(containing: "watching\n")
        for (key, value) in [("hostA.org.example.other", "v2"), ("hostA.org.example.echo", "v3")] {
            let put = try PythonVenv.run(NatsPeer.script, ["kv-put", a.url, "PORTD_NAMES", key, value])
            #expect(put.status == 0, "\(put.standardError)")
        }
        #expect(try watcher.waitForExit() == 0, "\(watcher.standardError)")
        #expect(
            watcher.standardOutput == """
                put hostA.org.example.echo v1
                watching
                put hostA.org.example.other v2
                put hostA.org.example.echo v3

                """)
        // The store is the hub's: leaf B reads what leaf A wrote through the same bucket.
        #expect(exists(topology.directory.appending("jetstream/jetstream/$G/streams/KV_PORTD_NAMES")))
    }

    @Test("a leaf stopped for 3 s: requests through it fail within their deadlines, then work after SIGCONT")
    func pausedLeaf() throws {
        let topology = try NatsTopology(leaves: 2)
        let (a, b) = (topology.leaves[0], topology.leaves[1])
        let responder = try NatsPeer.respond(url: a.url, subject: "port.org.example.echo")
        defer { responder.killAndReap() }
        let before = try NatsPeer.request(url: b.url, subject: "port.org.example.echo", payload: "1", untilOK: propagation)
        #expect(before.result.status == NatsPeer.replied)

        try a.pause()
        // Requests of 500 ms for 3 s: the leaf stays stopped while they run.
        let during = try NatsPeer.request(
            url: b.url, subject: "port.org.example.echo", payload: "2", timeout: 0.5, forSeconds: 3)
        a.resume()
        #expect(during.attempts.count >= 6, "\(during.result.standardOutput)\(during.result.standardError)")
        #expect(during.attempts.allSatisfy { $0.outcome != .reply }, "\(during.attempts)")
        // Each failed within its deadline (a little slack for a busy machine).
        #expect(during.attempts.allSatisfy { $0.milliseconds <= 500 + 250 }, "\(during.attempts)")
        // The first went to the stopped leaf, whose connection the hub still
        // held: a time-out. Once the hub gave the leaf up (two pings of 1 s
        // unanswered) the rest may be "no responders" at once.
        #expect(during.attempts.first?.outcome == .timeout, "\(during.attempts)")

        let after = try NatsPeer.request(url: b.url, subject: "port.org.example.echo", payload: "3", untilOK: propagation)
        #expect(after.result.status == NatsPeer.replied, "\(after.attempts)")
        #expect(after.attempts.last?.payload == "echo:3")
        #expect(a.child.isRunning && responder.isRunning)
    }

    @Test("a restarted hub comes back on its ports and its leaves reconnect")
    func hubRestart() throws {
        let topology = try NatsTopology(leaves: 2)
        let (hub, a, b) = (topology.hub, topology.leaves[0], topology.leaves[1])
        let ports = (hub.clientPort, hub.leafnodePort, hub.monitorPort)
        let responder = try NatsPeer.respond(url: a.url, subject: "port.org.example.echo")
        defer { responder.killAndReap() }
        let marks = (a.log.count, b.log.count)
        let oldPID = hub.pid
        try hub.restart()
        #expect(hub.pid != oldPID)
        #expect((hub.clientPort, hub.leafnodePort, hub.monitorPort) == ports)
        try a.log.waitFor("Leafnode connection created", after: marks.0)
        try b.log.waitFor("Leafnode connection created", after: marks.1)
        let after = try NatsPeer.request(url: b.url, subject: "port.org.example.echo", payload: "x", untilOK: propagation)
        #expect(after.result.status == NatsPeer.replied, "\(after.attempts)")
    }
}
