// BridgePartitionTests: a real network partition between two hosts'
// bridges, made with network namespaces (NetworkNamespaces; root only): the
// hub in namespace H; host A's leaf server and bridge in namespace A, host
// B's in namespace B, each linked to H by a veth pair whose addresses exist
// only in those namespaces (no default route: nothing leaves them). The
// portds and the clients stay in the test's namespace (portd speaks
// AF_UNIX only, whose path sockets no network namespace divides). Cutting
// A's link makes B's requests fail within their deadlines and B release
// the name once its lease lapses; restoring it brings the name back and
// requests work again, without restarting anything.

import Foundation
import Glibc
import PortCore
import PortTestSupport
import Testing

@Suite(
    "portd-bridge across a partition made with network namespaces", .serialized,
    .enabled(if: getuid() == 0, "needs root: it makes network namespaces (ip netns)"))
struct BridgePartitionTests {
    static let name = "org.example.echo"

    @Test("a cut link: requests fail within their deadlines, the name lapses, and all comes back after")
    func cutLink() throws {
        let network = try NetworkNamespaces(hosts: ["a", "b"])
        let directory = try TemporaryDirectory()
        let hub = try NatsServer(
            name: "hub", role: .hub(storeDirectory: directory.appending("jetstream")), directory: directory.path,
            address: "0.0.0.0", launcher: network.launcher(in: network.hub))
        var leaves: [NatsServer] = []
        for h in ["a", "b"] {
            leaves.append(
                try NatsServer(
                    name: "leaf-\(h)", role: .leaf(hubAddress: network.hubAddress(towards: h), hubLeafnodePort: hub.leafnodePort),
                    directory: directory.path, launcher: network.launcher(in: network.namespace(h))))
        }
        let a = try BridgeHost(
            id: "host-a", url: leaves[0].url, export: ["org.example.*"], launcher: network.launcher(in: network.namespace("a")))
        let b = try BridgeHost(
            id: "host-b", url: leaves[1].url, import: ["org.example.*"], launcher: network.launcher(in: network.namespace("b")))
        let listener = try a.startPortctl(["listen", Self.name, "--exec", "cat"])
        defer { listener.killAndReap() }
        try waitUntilThere(Self.name, in: b, timeout: 20)
        let before = try b.portctl(["request", Self.name, "--msgid", "1", "--data", "before", "--timeout", "10"])
        #expect(before.standardOutput == "\"before\"\n", "\(before.standardError)\n\(b.bridgeLog)")

        try network.cut("a")
        let started = MonotonicInstant.now()
        let during = try b.portctl(["request", Self.name, "--msgid", "1", "--data", "during", "--timeout", "1"])
        #expect(during.status != 0)
        #expect(MonotonicInstant.now() - started < .seconds(3))
        // Bridge A's lease (LeaseTime=3s) lapses on B's side: the name goes.
        try waitUntilGone(Self.name, in: b.daemon, timeout: .seconds(15))
        try network.restore("a")

        try waitUntilThere(Self.name, in: b, timeout: 30)
        var answered = false
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !answered && MonotonicInstant.now() < deadline {
            let r = try b.portctl(["request", Self.name, "--msgid", "1", "--data", "after", "--timeout", "3"])
            answered = r.standardOutput == "\"after\"\n"
        }
        #expect(answered, "\(b.bridgeLog)\n\(a.bridgeLog)")
        #expect(a.bridge?.isRunning == true && b.bridge?.isRunning == true)
    }
}
