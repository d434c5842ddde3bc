// HarnessTimeoutTests: a wait of the test harness that times out says what
// the child was doing when it gave up (issue 27, item 8: PagedOwnerTests
// once timed out waiting for portd's exit after SIGTERM, and the message,
// "exit of portd pid N", could not tell a portd still at work from one
// stuck in the kernel, or from an exit the harness failed to see).

import Glibc
import Testing

import PortTestSupport

@Suite struct HarnessTimeoutTests {
    @Test func aTimedOutExitSaysWhatTheChildWasDoing() throws {
        let child = try ChildProcess(
            executable: "/bin/sleep", arguments: ["60"], environment: ChildProcess.cleanEnvironment())
        defer { child.killAndReap() }
        child.signal(SIGSTOP)
        // Stopped for certain before the wait gives up: waitid reports the
        // stop (WNOWAIT leaves it, and the exit, to the harness's reaper).
        var info = siginfo_t()
        while waitid(P_PID, id_t(child.pid), &info, WSTOPPED | WNOWAIT) == -1 {
            try #require(errno == EINTR, "waitid(WSTOPPED): errno \(errno)")
        }
        let error = #expect(throws: HarnessError.self) { try child.waitForExit(timeout: .zero) }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("exit of sleep pid \(child.pid) (state T, "), "\(message)")
        #expect(message.contains(" s of CPU, wchan "), "\(message)")
    }
}
