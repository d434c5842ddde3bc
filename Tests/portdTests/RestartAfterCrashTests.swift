// RestartAfterCrashTests (issue 12, item 1): a portd killed with SIGKILL
// leaves its port directory full of sockets its former owners still hold;
// a new portd on the same control socket starts anyway, serves the names
// anew, and never connects to the sockets it removes (a connection would
// land in an owner's or a service's queue). The former owners learn that
// portd went away from their own connection.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct RestartAfterCrashTests {
    @Test func aNewPortdStartsWhileFormerOwnersHoldTheirReceiveRights() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.appending("portd.sock")
        let first = try DaemonProcess.started(socket: socket)
        let owner = try first.client()
        guard case .registered(let held) = try owner.register("org.example.held") else {
            Issue.record("the first registration must succeed"); return
        }
        let lost = Completion()
        let watcher = LoopThread { loop in
            try? owner.onConnectionLoss(in: loop) { lost.signal() }
            loop.runInMode(.default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        watcher.go()

        _ = try first.stop(with: SIGKILL)
        // The former owner is told, by its own connection.
        #expect(lost.wait(timeout: .seconds(10)), "the owner never learned that portd went away")

        // A new portd takes the same socket and directory over while the
        // former owner still holds its listening socket.
        let second = try DaemonProcess.started(socket: socket)
        #expect(second.child.isRunning)
        let newcomer = try second.client()
        guard case .registered = try newcomer.register("org.example.held") else {
            Issue.record("the new portd must serve the name anew"); return
        }
        #expect(try second.portctl(["lookup", "org.example.held"]).status == 0)
        // The new portd never connected to the old socket: nothing is queued on it.
        let pending = try held.withReceiveRight { (fd) throws(SystemCallError) in try UnixSocket.accept(fd) != nil }
        #expect(pending == false, "the new portd pushed a connection into a former owner's port")
        #expect(try second.stop() == 0)
    }
}
