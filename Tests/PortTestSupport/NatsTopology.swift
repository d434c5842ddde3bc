// NATS for the tests: real nats-server processes (Debian's nats-server,
// 2.9.10 on Debian 12) as the hosts of a test see them.
//   - `NatsServer` is one server: a hub (JetStream on, its store in a
//     directory of the test's own, a leafnode port) or a leaf that connects
//     to a hub's leafnode port. Its ports are chosen by the server itself at
//     its first start (port -1; no window between choosing a free port and
//     binding it) and read from its log; a restart binds the same ports, so
//     clients and leaves that knew it reconnect to it. Readiness is a line
//     of its log ("Server is ready"; for a leaf "Leafnode connection
//     created"), waited for as an event with a deadline (OutputCollector),
//     never a sleep. It is stopped by its pid (SIGTERM, then SIGKILL after a
//     bound), paused and resumed (SIGSTOP, SIGCONT), and killed in deinit
//     whatever the test did.
//   - `NatsTopology` is a hub and one leaf per "host", the shape of the
//     bridge's tests (issue 25): every server on one address (127.0.0.1
//     unless a namespace's), `ping_interval` 1 s, so a stopped or
//     unreachable peer is declared gone within about 3 s (two unanswered
//     pings, ping_max).
//
// JetStream through leaf nodes, with nats-server 2.9.10: a leaf without
// JetStream of its own does not reach the hub's JetStream by default. On
// every leafnode connection both ends add a deny of $JS.API.>, $KV.> and
// $OBJ.> for the account ("JetStream Not Extended, adding deny …" in the
// log) unless the JetStream domain is "extended" (a shared system account,
// the same domain, JetStream on in the leaf too). Two ways out work with
// JetStream on the hub alone: (1) a domain on the hub (`jetstream { domain:
// hub }`) and clients that name it: the API becomes $JS.hub.API.> and a
// key-value put must go to $JS.hub.API.$KV.BUCKET.KEY (nats-py 2.16 still
// puts to $KV.BUCKET.KEY, which the deny drops: "no response from stream");
// (2) `default_js_domain: {"$G": ""}` on the hub AND on every leaf (either
// alone is not enough), which skips the deny ("Skipping deny "$JS.API.>"
// for account "$G" due to default domain"), so the plain subjects
// ($JS.API.>, $KV.BUCKET.KEY, a watch's deliveries) travel between leaf
// and hub like any other. The topology uses (2): clients (the bridge, nats-py)
// need no JetStream domain, and the subjects are the ones
// portd-bridge(8) documents. Checked by NatsTopologyTests.

import Foundation
import Glibc
import PortSystem

/// One nats-server process.
package final class NatsServer {
    package enum Role {
        /// JetStream on, its store in `storeDirectory`; a leafnode port.
        case hub(storeDirectory: String)
        /// A leaf of the hub whose leafnode port is at `hubAddress:hubLeafnodePort`.
        case leaf(hubAddress: String, hubLeafnodePort: Int)
    }

    package let name: String
    package let role: Role
    /// The address every port of the server listens on.
    package let address: String
    /// Prepended to the server's command line (e.g. `ip netns exec NS`: a command that execs it).
    package let launcher: [String]
    private let configPath: String
    private var current: ChildProcess?
    package private(set) var clientPort = -1
    package private(set) var monitorPort = -1
    /// The hub's leafnode port (-1 for a leaf).
    package private(set) var leafnodePort = -1

    /// Starts the server and waits until it is ready (a leaf: connected to its hub).
    /// `directory` holds its configuration file (`NAME.conf`).
    package init(name: String, role: Role, directory: String, address: String = "127.0.0.1", launcher: [String] = []) throws {
        self.name = name
        self.role = role
        self.address = address
        self.launcher = launcher
        configPath = "\(directory)/\(name).conf"
        try start()
    }

    /// The process of the server's last start.
    package var child: ChildProcess { current! }

    /// `nats://ADDRESS:CLIENTPORT`.
    package var url: String { "nats://\(address):\(clientPort)" }

    package var pid: Int32 { child.pid }

    /// The server's log (its standard error) since its last start.
    package var log: OutputCollector { child.errorCollector! }

    /// The server's configuration (nats-server's syntax), with its ports
    /// (-1 at the first start: the server chooses).
    private var configuration: String {
        var lines = [
            "server_name: \(name)",
            "listen: \"\(address):\(clientPort)\"",
            "http: \"\(address):\(monitorPort)\"",
            "ping_interval: \"1s\"",
            "ping_max: 2",
            // See the top of this file: plain $JS.API and $KV subjects across leaf connections.
            "default_js_domain: { \"$G\": \"\" }",
        ]
        switch role {
        case .hub(let store):
            lines += [
                "jetstream { store_dir: \"\(store)\", max_memory_store: 64MB, max_file_store: 256MB }",
                "leafnodes { listen: \"\(address):\(leafnodePort)\" }",
            ]
        case .leaf(let hubAddress, let hubPort):
            lines += ["leafnodes { reconnect: 1, remotes: [ { url: \"nats-leaf://\(hubAddress):\(hubPort)\" } ] }"]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func spawn(launcher: [String], configPath: String, text: String) throws -> ChildProcess {
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
        let command = launcher + ["/usr/sbin/nats-server", "--config", configPath]
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nats-server") else {
            throw HarnessError.missingBinary("/usr/sbin/nats-server (Debian's nats-server: scripts/ensure-packages nats-server)")
        }
        return try ChildProcess(
            executable: command[0], arguments: Array(command.dropFirst()), collectingStandardError: true)
    }

    /// Starts the server (again, on the same ports after the first start) and waits until it is ready.
    package func start() throws {
        precondition(current?.isRunning != true, "nats-server \(name) is running")
        current = try Self.spawn(launcher: launcher, configPath: configPath, text: configuration)
        let log = self.log
        try log.waitFor("Server is ready")
        clientPort = try port(after: "Listening for client connections on ")
        monitorPort = try port(after: "Starting http monitor on ")
        if case .hub = role { leafnodePort = try port(after: "Listening for leafnode connections on ") }
        if case .leaf = role { try log.waitFor("Leafnode connection created") }
    }

    private func port(after prefix: String) throws -> Int {
        let text = log.text
        guard let range = text.range(of: prefix + address + ":") else {
            throw HarnessError.unexpected("nats-server \(name): no \"\(prefix)\" in its log:\n\(text)")
        }
        return Int(text[range.upperBound...].prefix(while: \.isNumber)) ?? -1
    }

    /// Stops the server: `signal` (SIGTERM: nats-server shuts down and exits), SIGKILL after 5 s; its exit status.
    @discardableResult
    package func stop(with signal: Int32 = SIGTERM) throws -> Int32 {
        child.signal(SIGCONT)  // a paused server acts on nothing else
        child.signal(signal)
        if let status = try? child.waitForExit(timeout: .seconds(5)) { return status }
        child.killAndReap()
        return try child.waitForExit()
    }

    /// Stops the server (SIGTERM) and starts it again on the same ports.
    package func restart() throws {
        try stop()
        try start()
    }

    /// SIGSTOP: the server keeps its connections but answers nothing, as a
    /// hung host. Returns once the server is stopped (waitid's WSTOPPED,
    /// with WNOWAIT so that the child's reaper still sees its exit).
    package func pause() throws {
        child.signal(SIGSTOP)
        var info = siginfo_t()
        while waitid(P_PID, id_t(child.pid), &info, WSTOPPED | WNOWAIT) == -1 {
            guard errno == EINTR else { throw HarnessError.unexpected("waitid(WSTOPPED) for \(name): errno \(errno)") }
        }
    }

    /// SIGCONT after `pause()`.
    package func resume() { child.signal(SIGCONT) }

    deinit {
        if let current, current.isRunning {
            current.signal(SIGCONT)
            current.killAndReap()
        }
    }
}

/// A nats-server hub with JetStream and one leaf server per host.
package final class NatsTopology {
    /// Holds the configuration files and the hub's JetStream store.
    package let directory: TemporaryDirectory
    package let hub: NatsServer
    package let leaves: [NatsServer]

    /// Starts the hub, then `leaves` leaf servers named leaf-a, leaf-b, …,
    /// each connected to the hub when this returns.
    package init(leaves count: Int) throws {
        directory = try TemporaryDirectory()
        let store = directory.appending("jetstream")
        hub = try NatsServer(name: "hub", role: .hub(storeDirectory: store), directory: directory.path)
        var leaves: [NatsServer] = []
        for i in 0..<count {
            let letter = String(UnicodeScalar(UInt8(ascii: "a") + UInt8(i)))
            leaves.append(
                try NatsServer(
                    name: "leaf-\(letter)", role: .leaf(hubAddress: hub.address, hubLeafnodePort: hub.leafnodePort),
                    directory: directory.path))
        }
        self.leaves = leaves
    }
}
