// DaemonConfigurationTests: the real portd with a configuration file: its
// policy refuses a registration, SIGHUP reloads it (RELOADING=1 then
// READY=1 on the test's own NOTIFY_SOCKET) and the new policy holds for the
// next request; WatchdogSec= (WATCHDOG_USEC) brings WATCHDOG=1 pings from
// the run loop; STATUS= carries the counts; a configuration error stops
// start-up with status 1 and a message naming file and line.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct DaemonConfigurationTests {
    @Test func policyFromTheFileAndReloadOnSIGHUP() throws {
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try "[Policy]\nDenyRegister=forbidden.* *\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess.started(socket: dir.appending("portd.sock"), arguments: ["--config", config])
        let client = try NameClient(socket: daemon.socketPath)
        #expect(try client.register("forbidden.name").outcome == "denied")
        let allowed = try client.register("allowed.name")  // keeps the receive right open
        #expect(allowed.outcome == "registered")

        try "[Policy]\nDenyRegister=allowed.* *\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.child.signal(SIGHUP)
        try daemon.notify.waitFor("RELOADING=1", from: daemon.child)
        try daemon.notify.waitFor("READY=1", from: daemon.child)
        #expect(try client.register("forbidden.name").outcome == "registered")
        #expect(try client.register("allowed.other").outcome == "denied")
        // Names owned before the reload stay owned.
        #expect(try client.lookUp("allowed.name").outcome == "ok")
        withExtendedLifetime(allowed) {}
        client.close()
        #expect(try daemon.stop() == 0)
        #expect(daemon.child.standardError.contains("reloaded the configuration"), "\(daemon.child.standardError)")
    }

    @Test func aReloadWithAnErrorKeepsThePreviousConfiguration() throws {
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try "[Policy]\nDenyRegister=forbidden.* *\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess.started(socket: dir.appending("portd.sock"), arguments: ["--config", config])
        try "[Policy]\nNoSuchKey=1\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.child.signal(SIGHUP)
        try daemon.notify.waitFor("RELOADING=1", from: daemon.child)
        try daemon.notify.waitFor("READY=1", from: daemon.child)
        let client = try NameClient(socket: daemon.socketPath)
        #expect(try client.register("forbidden.name").outcome == "denied")
        client.close()
        #expect(try daemon.stop() == 0)
    }

    @Test func watchdogPingsAndStatusCounts() throws {
        let dir = try TemporaryDirectory()
        let daemon = try DaemonProcess.started(
            socket: dir.appending("portd.sock"), environment: ["WATCHDOG_USEC": "200000"])
        try daemon.notify.waitFor("WATCHDOG=1", from: daemon.child)
        try daemon.notify.waitFor("WATCHDOG=1", from: daemon.child)
        let client = try NameClient(socket: daemon.socketPath)
        #expect(try client.register("counted").outcome == "registered")
        let deadline = MonotonicInstant.now() + HarnessTimeout
        var sawCount = false
        while !sawCount, MonotonicInstant.now() < deadline, let m = try daemon.notify.next(from: daemon.child) {
            sawCount = m.contains("STATUS=1 names")
        }
        #expect(sawCount, "no STATUS= with the name count: \(daemon.notify.received)")
        client.close()
        #expect(try daemon.stop() == 0)
    }

    @Test func aConfigurationErrorStopsStartUp() throws {
        let dir = try TemporaryDirectory()
        let config = dir.appending("portd.conf")
        try "[Limits]\nNamesPerClient=lots\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(socket: dir.appending("portd.sock"), arguments: ["--config", config])
        #expect(try daemon.child.waitForExit() == 1)
        #expect(daemon.child.standardError.contains("portd.conf:2"))
        #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))
    }
}
