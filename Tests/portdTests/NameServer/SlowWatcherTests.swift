// SlowWatcherTests: a watcher that falls behind is told (issue 12, item 7).
// portd never waits for a watcher; a `portctl watch` stopped (SIGSTOP)
// over thousands of changes used to lose its watch silently: its queue
// filled, portd dropped the watch, and once resumed it printed none of the
// next changes and never exited. Now portd ends such a watch with
// WATCH_OVERFLOW, sent once the watcher reads again, after the changes
// already queued: the client reports `.watchOverflow(missed:)`, and
// `portctl watch` exits 75. Both checks count: what the watcher printed or
// handled plus what portd says it missed is every change made.

import Foundation
import Glibc
import Synchronization
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct SlowWatcherTests {
    /// Far more changes than a watcher's queue holds (the default socket
    /// buffer, 212992 bytes, holds a few hundred small records).
    static let cycles = 3000

    /// Registers and releases `name` `cycles` times: 2 × cycles changes.
    static func churn(_ name: String, on portd: DaemonProcess) throws {
        let churner = try NameClient(socket: portd.socketPath)
        for _ in 0..<cycles {
            #expect(try churner.register(name).outcome == "registered")
            #expect(try churner.request(MessageID.release, ["name=\(name)"]).outcome == "ok")
        }
    }

    @Test func aStoppedPortctlWatchIsToldItFellBehindAndExits75() throws {
        let portd = try DaemonProcess.started()
        let name = uniqueName("busy")
        let watcher = try portd.startPortctl(["watch", name])
        defer { watcher.signal(SIGKILL) }
        try watcher.waitForStandardError(containing: "watching \(name)")
        kill(watcher.pid, SIGSTOP)
        try Self.churn(name, on: portd)
        try portd.child.waitForStandardError(containing: "watch fell behind")
        kill(watcher.pid, SIGCONT)

        #expect(try watcher.waitForExit() == 75, "\(watcher.standardError)")
        let printed = watcher.standardOutput.split(separator: "\n")
        #expect(!printed.isEmpty)
        // Each line: the time it was received, then the change.
        #expect(printed.allSatisfy { $0.contains(" UTC registered \(name) ") || $0.contains(" UTC released \(name) ") })
        let error = watcher.standardError
        #expect(error.contains("the watch fell behind"), "\(error)")
        let missed = try #require(
            error.split(separator: " ").firstIndex(of: "after").map { error.split(separator: " ")[$0 + 1] }.flatMap { Int($0) },
            "\(error)")
        #expect(printed.count + missed == 2 * Self.cycles, "every change was printed or counted as missed")
        #expect(try portd.stop() == 0)
    }

    @Test func theClientsWatchHandlerSeesWhatCameThenTheOverflow() throws {
        let portd = try DaemonProcess.started()
        let name = uniqueName("busy")
        let loop = PCRunLoop.current  // not run until the changes are made: the watcher falls behind
        let client = try portd.client()
        defer { client.invalidate() }
        let handled = Mutex(0)
        let ended = Mutex<NameServerError?>(nil)
        let watch = try client.watch(name, loop: loop, onError: { error in ended.withLock { $0 = error } }) { _ in
            handled.withLock { $0 += 1 }
        }
        try Self.churn(name, on: portd)

        let deadline = MonotonicInstant.now() + HarnessTimeout
        while ended.withLock({ $0 }) == nil && MonotonicInstant.now() < deadline {
            loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
        }
        guard case .watchOverflow(let missed)? = ended.withLock({ $0 }) else {
            Issue.record("no overflow reported: \(String(describing: ended.withLock { $0 }))")
            return
        }
        #expect(missed > 0)
        #expect(handled.withLock { $0 } + missed == 2 * Self.cycles, "every change was handled or counted as missed")
        #expect(!watch.isActive, "the watch ended")

        // portd serves on, and a new watch works.
        let again = try client.watch(name, loop: loop) { _ in handled.withLock { $0 += 1 } }
        let before = handled.withLock { $0 }
        try Self.churnOnce(name, on: portd)
        while handled.withLock({ $0 }) < before + 2 && MonotonicInstant.now() < deadline + HarnessTimeout {
            loop.runInMode(.default, before: deadline + HarnessTimeout, returnAfterSourceHandled: true)
        }
        #expect(handled.withLock { $0 } == before + 2)
        again.cancel()
        #expect(try portd.stop() == 0)
    }

    static func churnOnce(_ name: String, on portd: DaemonProcess) throws {
        let churner = try NameClient(socket: portd.socketPath)
        #expect(try churner.register(name).outcome == "registered")
        #expect(try churner.request(MessageID.release, ["name=\(name)"]).outcome == "ok")
    }
}
