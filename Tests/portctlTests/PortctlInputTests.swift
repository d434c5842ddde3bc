// PortctlInputTests (issue 14): what portctl reads for a component is
// bounded by what a message can carry, and every bad file is a bad
// argument (status 64) with a reason a user can act on.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct PortctlInputTests {
    @Test func anEndlessFileStopsAtTheProtocolsLimit() throws {
        let d = try DaemonProcess.started()
        let r = try d.portctl(["send", uniqueName("sink"), "--msgid", "1", "--file", "/dev/zero"])
        #expect(r.status == 64, "\(r.standardError)")
        #expect(r.standardError.contains("too large"), "\(r.standardError)")
    }

    @Test func standardInputStopsAtTheProtocolsLimitWithoutReadingTheRest() throws {
        let d = try DaemonProcess.started()
        let portctl = try Binaries.portctl
        // head is killed by SIGPIPE (141) only if portctl stopped reading before the end.
        let script = "head -c 1200M /dev/zero | '\(portctl)' send \(uniqueName("sink")) --msgid 1 -; echo \"status=${PIPESTATUS[0]} ${PIPESTATUS[1]}\""
        let child = try ChildProcess(
            executable: "/bin/bash", arguments: ["-c", script], environment: ChildProcess.cleanEnvironment(d.environment))
        #expect(try child.waitForExit(timeout: .seconds(60)) == 0)
        #expect(child.standardOutput.contains("status=141 64"), "\(child.standardOutput) \(child.standardError)")
        #expect(child.standardError.contains("too large"), "\(child.standardError)")
    }

    @Test func everyBadFileIsAUsageErrorWithAReason() throws {
        let d = try DaemonProcess.started()
        let name = uniqueName("sink")
        let directory = try d.portctl(["send", name, "--msgid", "1", "--file", "/tmp"])
        #expect(directory.status == 64)
        #expect(directory.standardError.contains("is a directory"), "\(directory.standardError)")
        let missing = try d.portctl(["send", name, "--msgid", "1", "--file", "/nonexistent/portctl-test"])
        #expect(missing.status == 64)
        #expect(missing.standardError.contains("no such file"), "\(missing.standardError)")
    }
}
