// A network partition between a leaf server and its hub, made with network
// namespaces (PortTestSupport's NetworkNamespaces; root only): the hub in
// namespace H, leaf A in namespace A, linked by a veth pair whose
// addresses exist only in those two namespaces. Cutting the link makes
// requests through it fail within their deadlines; restoring it makes them
// succeed again, without restarting anything.

import Foundation
import Glibc
import PortTestSupport
import Testing

@Suite("NATS partition through network namespaces", .enabled(if: getuid() == 0, "needs root: it makes network namespaces (ip netns)"))
struct NatsPartitionTests {
    @Test("a cut link between leaf A and the hub: requests fail within their deadlines, then work after it is restored")
    func cutLink() throws {
        let network = try NetworkNamespaces(hosts: ["a"])
        let directory = try TemporaryDirectory()
        // The hub listens on every address of its namespace (its end of
        // the link, and 127.0.0.1 for its own clients).
        let hub = try NatsServer(
            name: "hub", role: .hub(storeDirectory: directory.appending("jetstream")), directory: directory.path,
            address: "0.0.0.0", launcher: network.launcher(in: network.hub))
        let leaf = try NatsServer(
            name: "leaf-a", role: .leaf(hubAddress: network.hubAddress(towards: "a"), hubLeafnodePort: hub.leafnodePort),
            directory: directory.path, launcher: network.launcher(in: network.namespace("a")))
        // Inside namespace A: the link's address, loopback, and no default route.
        let routes = try NetworkNamespaces.run(["-n", network.namespace("a"), "route", "show"])
        #expect(!routes.contains("default"), "\(routes)")
        #expect(routes.contains(network.address(of: "a")), "\(routes)")

        let inHub = network.launcher(in: network.hub)
        let inA = network.launcher(in: network.namespace("a"))
        let responder = try NatsPeer.respond(url: hub.url, subject: "port.org.example.echo", launcher: inHub)
        defer { responder.killAndReap() }
        let before = try NatsPeer.request(
            url: leaf.url, subject: "port.org.example.echo", payload: "1", untilOK: 10, launcher: inA)
        #expect(before.result.status == NatsPeer.replied, "\(before.attempts) \(before.result.standardError)")

        let pending = try NatsPeer.pendingRequest(
            url: leaf.url, subject: "port.org.example.echo", payload: "2", timeout: 0.5, forSeconds: 3, launcher: inA)
        try network.cut("a")
        let during = try pending.go()
        try network.restore("a")
        #expect(during.attempts.count >= 6, "\(during.result.standardOutput)\(during.result.standardError)")
        #expect(during.attempts.allSatisfy { $0.outcome != .reply }, "\(during.attempts)")
        #expect(during.attempts.allSatisfy { $0.milliseconds <= 500 + 500 }, "\(during.attempts)")
        // The leaf still held its connection to the hub: the first request went into the cut link.
        #expect(during.attempts.first?.outcome == .timeout, "\(during.attempts)")

        let after = try NatsPeer.request(
            url: leaf.url, subject: "port.org.example.echo", payload: "3", untilOK: 15, launcher: inA)
        #expect(after.result.status == NatsPeer.replied, "\(after.attempts)")
        #expect(after.attempts.last?.payload == "echo:3")
        #expect(hub.child.isRunning && leaf.child.isRunning)
    }
}
