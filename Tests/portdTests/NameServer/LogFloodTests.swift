// LogFloodTests: the real portd under a client that sends bad requests and
// malformed records as fast as it can: every line such a client causes is
// limited to RefusalLog.burst a second (bad requests and invalid names with
// the refusals, the control port's "closing a client's connection" on a
// limit of its own), and what was left out is counted in a line of its own.
// Likewise a client that registers names and lets their listening sockets
// go, then looks them up: each LOOKUP releases a deaf owner's name, and
// those lines (with every event line a client can cause) have a limit of
// their own.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct LogFloodTests {
    @Test func badRequestsAndMalformedRecordsAreLoggedAtMostABurstASecond() throws {
        let portd = try DaemonProcess.started()
        let client = try NameClient(socket: portd.socketPath)
        let badRequests = 300
        for _ in 0..<badRequests {
            #expect(try client.request(0x1234).outcome == "bad-request")
        }
        let malformed = 100
        for _ in 0..<malformed {
            let fd = try UnixSocket.makeSocket()
            try #require(try UnixSocket.connect(fd, to: UnixSocketAddress(path: portd.socketPath)) == .connected)
            let garbage: [UInt8] = Array(repeating: 0xff, count: 64)
            try #require(send(fd.rawValue, garbage, garbage.count, Int32(MSG_NOSIGNAL)) == garbage.count)
            // portd closes the connection: the read sees end of file.
            var byte: UInt8 = 0
            #expect(recv(fd.rawValue, &byte, 1, 0) <= 0)
        }
        // The count of what was left out comes with the first line of a later second.
        var told = false
        for _ in 0..<40 where !told {
            _ = try client.request(0x1234)
            told = (try? portd.child.waitForStandardError(containing: "were not logged", timeout: .milliseconds(100))) != nil
        }
        #expect(told, "a line counts the lines left out")
        #expect(try portd.stop() == 0)
        let lines = portd.child.standardError.split(separator: "\n")
        let logged = lines.filter { $0.contains("bad request:") }.count
        let closings = lines.filter { $0.contains("closing a client's connection") }.count
        #expect(logged < badRequests / 3, "\(logged) bad-request lines for \(badRequests) bad requests")
        #expect(closings < malformed * 2 / 3, "\(closings) lines for \(malformed) malformed records")
    }

    @Test func namesReleasedForDeafOwnersAreLoggedAtMostABurstASecond() throws {
        let portd = try DaemonProcess.started()
        let client = try NameClient(socket: portd.socketPath)
        let cycles = 600
        let started = ContinuousClock.now
        for i in 0..<cycles {
            let name = "org.example.deaf\(i % 10)"
            // The reply's listening socket closes with the reply: the
            // registration stands, its port no longer listens.
            #expect(try client.register(name).outcome == "registered")
            #expect(try client.lookUp(name).outcome == "not-found")
        }
        let seconds = Int(((ContinuousClock.now - started) / .seconds(1)).rounded(.up))
        // A later second's line reports what was left out.
        var told = false
        for _ in 0..<40 where !told {
            #expect(try client.register("org.example.deaf").outcome == "registered")
            #expect(try client.lookUp("org.example.deaf").outcome == "not-found")
            told = (try? portd.child.waitForStandardError(containing: "event lines were not logged", timeout: .milliseconds(100))) != nil
        }
        #expect(told, "a line counts the lines left out")
        #expect(try portd.stop() == 0)
        let released = portd.child.standardError.split(separator: "\n").filter {
            $0.contains("released: its owner's port no longer listens")
        }.count
        // At most a burst in each second the flood touched (and the one
        // after it, where the count was reported).
        let bound = RefusalLog.burst * (seconds + 2)
        #expect(released <= bound, "\(released) lines for \(cycles) releases in \(seconds) s")
        #expect(released < cycles, "every release was logged")
    }
}
