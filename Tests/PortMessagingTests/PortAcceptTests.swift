// Accepting paused for lack of descriptors (EMFILE) and a listening socket
// replaced (a name registered again, a new portd), together: the replaced
// socket follows the one rule of replaced sockets (it stays until its
// backlog is accepted, then closes) and the new one pauses and resumes with
// the rest. The port runs in port-accept-probe, a process of its own under
// RLIMIT_NOFILE 64, which uses up its descriptors (see its header); there
// too, at 1024, records read ahead with many descriptors.

import Testing
import PortTestSupport

@Suite struct PortAcceptTests {
    private func probe(_ scenario: String, nofile: String = "64:64") throws -> (status: Int32, output: String) {
        let directory = try TemporaryDirectory()
        let child = try ChildProcess(
            executable: "/usr/bin/prlimit",
            arguments: ["--nofile=\(nofile)", try Binaries.path("port-accept-probe"), directory.path, scenario],
            environment: ChildProcess.cleanEnvironment([:]), input: nil)
        let status = try child.waitForExit()
        return (status, child.standardOutput + child.standardError)
    }

    /// Replaced while paused: before, the new listener took over at once
    /// and the old one, out of the loops since the pause, never returned:
    /// its backlog was never served and the socket stayed open until the
    /// port was invalidated.
    @Test func aListenerReplacedWhileAcceptingIsPausedDrainsAfterTheResumption() throws {
        let (status, output) = try probe("replaced-while-paused")
        #expect(status == 0, "\(output)")
        #expect(output.contains("old backlog served\nnew listener accepted\nold socket closed\ndone"), "\(output)")
    }

    /// Paused while a replaced listener drains: before, its failed accept
    /// dropped it, closing the connections still in its backlog.
    @Test func aReplacedListenerOutOfDescriptorsPausesInsteadOfDroppingItsBacklog() throws {
        let (status, output) = try probe("paused-while-draining")
        #expect(status == 0, "\(output)")
        #expect(output.contains("old backlog served\nnew listener accepted\nold socket closed\ndone"), "\(output)")
    }

    /// Paused with no connection: before, nothing resumed accepting, since
    /// only a connection that closes did, and the port never accepted again.
    @Test func aPortWithNoConnectionResumesAcceptingAfterTheRetryDelay() throws {
        let (status, output) = try probe("paused-without-connections")
        #expect(status == 0, "\(output)")
        #expect(output.contains("accepting paused\naccepted after the retry\ndone"), "\(output)")
    }

    /// Records read ahead with their descriptors, at the usual soft limit
    /// of 1024: before, the port read 15 records of 253 rights in one
    /// call, 3,795 descriptors for a table of 1,024: those that found no
    /// room were lost (MSG_CTRUNC) and the connection was closed as
    /// malformed after 4 of the 16 records.
    @Test func recordsReadAheadStayWithinAQuarterOfTheDescriptorLimit() throws {
        let (status, output) = try probe("read-ahead-descriptors", nofile: "1024:8192")
        #expect(status == 0, "\(output)")
        #expect(output.contains("every record served whole\ndone"), "\(output)")
    }
}
