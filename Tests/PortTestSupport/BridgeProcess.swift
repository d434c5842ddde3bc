// BridgeProcess: one "host" of the bridge's tests — a real portd on a
// socket of its own and a real portd-bridge for it, connected to one NATS
// server (the host's leaf), with a bridge.conf written for the test. The
// bridge's readiness is its READY=1 on a notify socket of the test's own;
// it is stopped by its pid, and killed in deinit whatever the test did.

import Foundation
import Glibc
import PortSystem

package final class BridgeHost {
    package let id: String
    package let daemon: DaemonProcess
    package let directory: TemporaryDirectory
    package private(set) var bridge: ChildProcess?
    private(set) var notify: NotifySocket?
    package let configPath: String

    /// A portd, and a bridge named `id` on NATS `url` that exports and
    /// imports the patterns given; `extra` lines go to the [NATS] section.
    package init(id: String, url: String, export: [String] = [], import imports: [String] = [], extra: [String] = []) throws {
        self.id = id
        daemon = try DaemonProcess.started()
        directory = try TemporaryDirectory()
        configPath = directory.appending("bridge.conf")
        var text = "[Bridge]\nBridgeID=\(id)\n[NATS]\nURL=\(url)\nLeaseTime=3s\nSessionCheck=1s\nRequestTimeout=2s\n"
        text += extra.map { $0 + "\n" }.joined()
        text += "[Export]\n" + export.map { "Pattern=\($0)\n" }.joined()
        text += "[Import]\n" + imports.map { "Pattern=\($0)\n" }.joined()
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
        try startBridge()
    }

    /// Starts (or starts again) the bridge and waits for its READY=1.
    package func startBridge() throws {
        let notify = try NotifySocket()
        let child = try ChildProcess(
            executable: try Binaries.portdBridge, arguments: ["--config", configPath, "--socket", daemon.socketPath],
            environment: ChildProcess.cleanEnvironment(["NOTIFY_SOCKET": notify.address, "PORTD_LOG_LEVEL": "debug"]),
            collectingStandardError: true)
        self.notify = notify
        bridge = child
        _ = try notify.waitFor("READY=1", from: child)
    }

    /// Sends `signal` to the bridge and waits for its exit status.
    @discardableResult
    package func stopBridge(with signal: Int32 = SIGTERM) throws -> Int32 {
        guard let bridge else { return -1 }
        bridge.signal(signal)
        defer { self.bridge = nil }
        return try bridge.waitForExit()
    }

    /// The bridge's log so far.
    package var bridgeLog: String { bridge?.standardError ?? "" }

    package func portctl(_ arguments: [String], input: [UInt8]? = nil) throws -> CommandResult {
        try daemon.portctl(arguments, input: input)
    }

    package func startPortctl(_ arguments: [String]) throws -> ChildProcess {
        try daemon.startPortctl(arguments)
    }

    deinit {
        if let bridge, bridge.isRunning { bridge.killAndReap() }
    }
}
