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
        let script = """
            import socket, struct, sys
            c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            c.connect(sys.argv[1])
            def record(msgid, flags, *fields):
                data = [f.encode() for f in fields]
                return (b"port" + struct.pack("<BBHI", 1, flags, len(data), msgid)
                        + b"".join(struct.pack("<B3xI", 1, len(d)) for d in data) + b"".join(data))
            def receive():
                data, fds, _, _ = socket.recv_fds(c, 262144, 4)
                count = struct.unpack("<H", data[6:8])[0]
                off, words = 12 + 8 * count, []
                for i in range(count):
                    length = struct.unpack("<B3xI", data[12 + 8 * i:20 + 8 * i])[1]
                    words.append(data[off:off + length].decode()); off += length
                return struct.unpack("<I", data[8:12])[0], dict(w.split("=", 1) for w in words)
            c.send(record(0xffff0009, 0x02, "serial=1", "protocol=1.0"))
            receive()
            kept, n = [], 0
            while n <= 1000:
                a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                socket.send_fds(c, [record(0xffff0005, 0x03, "serial=%d" % (n + 2))], [b.fileno()])
                b.close()
                msgid, fields = receive()
                if msgid != 0xffff0200:
                    print(n, fields.get("error"), fields.get("message"), sep="\\t"); break
                kept.append(a); n += 1
            """
        let attacker = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, portd.socketPath],
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
