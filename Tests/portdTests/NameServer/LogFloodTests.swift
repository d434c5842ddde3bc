// LogFloodTests: the real portd under a client that sends bad requests and
// malformed records as fast as it can: every line such a client causes is
// limited to RefusalLog.burst a second (bad requests and invalid names with
// the refusals, the control port's "closing a client's connection" on a
// limit of its own), and what was left out is counted in a line of its own.

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
}
