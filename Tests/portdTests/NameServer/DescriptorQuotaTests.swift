// DescriptorQuotaTests: the real portd, started with RLIMIT_NOFILE 160,
// as the system instance; another uid (setpriv) piles up watches, each
// holding a descriptor in portd, until it is refused with `limit` at its
// share of the budget (portd.conf(5): N=160, own 32, privileged reserve
// 64, pool 64, per uid 32: its connection and 31 watches), and root is
// still served afterwards. The budget's arithmetic is checked on its own.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct DescriptorQuotaTests {
    @Test func theBudgetFollowsTheDescriptorLimit() {
        let small = DescriptorBudget(limit: 160)
        let smallFigures: [Int] = [small.own, small.privilegedReserve, small.inAll, small.pool, small.perUID]
        #expect(smallFigures == [32, 64, 128, 64, 32])
        let shipped = DescriptorBudget(limit: 65536)
        let shippedFigures: [Int] = [shipped.own, shipped.privilegedReserve, shipped.inAll, shipped.pool, shipped.perUID]
        #expect(shippedFigures == [4096, 8192, 61440, 53248, 26624])
        #expect(DescriptorBudget(limit: 10).perUID == 1)
    }

    @Test func anotherUIDIsRefusedAtItsShareAndRootIsStillServed() throws {
        try #require(getuid() == 0, "this test drops privileges with setpriv: run as root")
        let dir = try TemporaryDirectory()
        try FileSystem.setPermissions(dir.path, 0o755)  // the other uid reaches the socket
        let portd = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), arguments: ["--system"], launcher: ["/usr/bin/prlimit", "--nofile=160:160"])
        // examples/portd_client.py, the reference client: each WATCH gives
        // portd a descriptor of the client's own (a socketpair end).
        let script = """
            import sys
            sys.path.insert(0, sys.argv[2])
            import portd_client
            c = portd_client.Client(sys.argv[1])
            kept, n = [], 0
            while n <= 1000:
                try:
                    kept.append(c.watch())
                except portd_client.PortdError as e:
                    print(n, e.error, e.message, sep="\\t"); break
                n += 1
            """
        let attacker = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, portd.socketPath,
                SourceTree.path("examples"),
            ],
            environment: ChildProcess.cleanEnvironment())
        #expect(try attacker.waitForExit() == 0, "\(attacker.standardError)")
        let fields = attacker.standardOutput.split(separator: "\t").map(String.init)
        #expect(Array(fields.prefix(2)) == ["31", "limit"], "\(attacker.standardOutput)")
        #expect(fields.dropFirst(2).first?.contains("uid 65534") == true, "\(attacker.standardOutput)")

        let root = try NameClient(socket: portd.socketPath)
        #expect(try root.register("org.example.root").outcome == "registered")
        #expect(try portd.stop() == 0)
    }
}
