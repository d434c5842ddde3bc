// ReadmeTourTests: the README's tour "Names across hosts" run as written,
// by bash in the source tree's root, with one change: its NATS port 4222
// becomes one no other test uses (chosen by binding port 0), so that the
// tour can run beside other tests. It must print the request's reply and
// nothing else, and leave no process behind (`kill $(jobs -p); wait`).

import Foundation
import Glibc
import PortTestSupport
import Testing

@Suite struct ReadmeTourTests {
    static func tour() throws -> String {
        let readme = try String(contentsOfFile: SourceTree.path("README.md"), encoding: .utf8)
        guard let marker = readme.range(of: "<!-- README tour: names across hosts"),
            let start = readme.range(of: "```sh\n", range: marker.upperBound..<readme.endIndex),
            let end = readme.range(of: "```\n", range: start.upperBound..<readme.endIndex)
        else { throw HarnessError.unexpected("no tour in README.md") }
        return String(readme[start.upperBound..<end.lowerBound])
    }

    /// A TCP port free now on 127.0.0.1 (the kernel's choice for port 0).
    static func freePort() throws -> Int {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(s) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, length) == 0 && getsockname(s, $0, &length) == 0 }
        }
        guard bound else { throw HarnessError.unexpected("cannot bind a TCP port") }
        return Int(UInt16(bigEndian: a.sin_port))
    }

    @Test func theToursRequestIsAnsweredAcrossHosts() throws {
        let script = try Self.tour().replacingOccurrences(of: "4222", with: "\(try Self.freePort())")
        #expect(script.contains("portd-bridge"))
        // The tour's `B=.build/debug`: the binaries this test runs with.
        let runnable = script.replacingOccurrences(of: "B=.build/debug", with: "B=\(Binaries.directory)")
        let child = try ChildProcess(
            executable: "/bin/bash", arguments: ["-c", "cd \(SourceTree.path(".")) && set -m && " + runnable],
            environment: ChildProcess.cleanEnvironment(["PATH": "/usr/sbin:/usr/bin:/bin"]))
        let status = try child.waitForExit(timeout: .seconds(60))
        #expect(status == 0, "\(child.standardError)")
        #expect(child.standardOutput == "\"hello from host b\"\n")
    }
}
