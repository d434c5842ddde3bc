// NetworkNamespaces: "hosts" with a network of their own, for partition
// tests (root only; CI runs as root). A hub namespace and one namespace per
// host; each host is joined to the hub by a veth pair whose two ends are
// created inside the two namespaces, with addresses that exist only there
// (10.251.N.1 on the hub's end, 10.251.N.2 on the host's, a /30 per link)
// and no default route anywhere, so nothing can leave the machine. Each
// namespace has its loopback up, so a server inside listens on 127.0.0.1
// for its own clients. A command runs inside with `ip netns exec`
// (`launcher(in:)`, which execs the command: its pid is the command's); a
// link is cut and restored with `ip link set … down/up` on the hub's end.
//
// Everything is deleted when the value goes away; namespaces left by a test
// process that died without that (their names carry its pid) are deleted by
// the next one that makes namespaces.

import Foundation
import Glibc
import Synchronization

package final class NetworkNamespaces {
    /// The prefix of every namespace of this value: portd-test-PID-N.
    package let prefix: String
    /// The hub's namespace.
    package let hub: String
    /// The hosts, in the order given.
    package let hosts: [String]

    private static let ip = "/usr/sbin/ip"
    private static let counter = Mutex(0)

    /// Makes the hub's namespace and one per host, each linked to the hub.
    /// Host names: letters and digits, at most 8 (they name interfaces).
    package init(hosts: [String]) throws {
        guard getuid() == 0 else { throw HarnessError.unexpected("network namespaces need root") }
        try Self.removeStale()
        let n = Self.counter.withLock { value in
            value += 1
            return value
        }
        prefix = "portd-test-\(getpid())-\(n)"
        hub = "\(prefix)-hub"
        self.hosts = hosts
        var made: [String] = []
        do {
            try Self.run(["netns", "add", hub])
            made.append(hub)
            try Self.run(["-n", hub, "link", "set", "lo", "up"])
            for (i, host) in hosts.enumerated() {
                precondition(host.count <= 8 && host.allSatisfy { $0.isLetter || $0.isNumber }, "host name \(host)")
                let namespace = "\(prefix)-\(host)"
                try Self.run(["netns", "add", namespace])
                made.append(namespace)
                try Self.run(["-n", namespace, "link", "set", "lo", "up"])
                // Both ends made inside their namespaces: nothing in the machine's own.
                try Self.run(["-n", hub, "link", "add", "h-\(host)", "type", "veth", "peer", "name", "eth0", "netns", namespace])
                try Self.run(["-n", hub, "address", "add", "\(Self.hubAddress(i))/30", "dev", "h-\(host)"])
                try Self.run(["-n", namespace, "address", "add", "\(Self.hostAddress(i))/30", "dev", "eth0"])
                try Self.run(["-n", hub, "link", "set", "h-\(host)", "up"])
                try Self.run(["-n", namespace, "link", "set", "eth0", "up"])
            }
        } catch {
            for namespace in made { _ = try? Self.run(["netns", "delete", namespace]) }
            throw error
        }
    }

    deinit {
        for namespace in [hub] + hosts.map({ "\(prefix)-\($0)" }) {
            _ = try? Self.run(["netns", "delete", namespace])
        }
    }

    private static func hubAddress(_ i: Int) -> String { "10.251.\(i + 1).1" }
    private static func hostAddress(_ i: Int) -> String { "10.251.\(i + 1).2" }

    private func index(_ host: String) -> Int {
        guard let i = hosts.firstIndex(of: host) else { preconditionFailure("no host \(host)") }
        return i
    }

    /// The namespace of `host`.
    package func namespace(_ host: String) -> String { "\(prefix)-\(hosts[index(host)])" }

    /// The hub's address on its link to `host` (what a server in `host` connects to).
    package func hubAddress(towards host: String) -> String { Self.hubAddress(index(host)) }

    /// `host`'s address on its link to the hub.
    package func address(of host: String) -> String { Self.hostAddress(index(host)) }

    /// The command prefix that runs a program inside `namespace` (it execs the program).
    package func launcher(in namespace: String) -> [String] { [Self.ip, "netns", "exec", namespace] }

    /// Cuts the link between the hub and `host` (its hub end down: no
    /// packet crosses either way; the connections over it are not told).
    package func cut(_ host: String) throws { try Self.run(["-n", hub, "link", "set", "h-\(host)", "down"]) }

    /// Restores the link `cut` cut.
    package func restore(_ host: String) throws { try Self.run(["-n", hub, "link", "set", "h-\(host)", "up"]) }

    /// Runs `ip ARGUMENTS`; its standard output. Fails with its standard error.
    @discardableResult
    package static func run(_ arguments: [String]) throws -> String {
        let child = try ChildProcess(executable: ip, arguments: arguments)
        let status: Int32
        do {
            status = try child.waitForExit()
        } catch {
            throw HarnessError.unexpected("ip \(arguments.joined(separator: " ")): \(error)")
        }
        guard status == 0 else {
            throw HarnessError.unexpected("ip \(arguments.joined(separator: " ")): status \(status): \(child.standardError)")
        }
        return child.standardOutput
    }

    /// Deletes the namespaces of test processes that are gone.
    private static func removeStale() throws {
        for line in try run(["netns", "list"]).split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix("portd-test-") else { continue }
            let fields = name.dropFirst("portd-test-".count).split(separator: "-")
            guard let pid = fields.first.flatMap({ Int32($0) }), pid != getpid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH { _ = try? run(["netns", "delete", name]) }
        }
    }
}
