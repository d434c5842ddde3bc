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

    /// Prepended to the bridge's command line (`ip netns exec NS`: a
    /// command that execs it). A bridge in another network namespace
    /// cannot reach the test's notify socket (an abstract address, which
    /// belongs to a namespace): it is ready when it says it is bridging.
    package let launcher: [String]

    /// A portd, and a bridge named `id` on NATS `url` that exports and
    /// imports the patterns given; `extra` lines go to the [NATS] section.
    package init(
        id: String, url: String, export: [String] = [], import imports: [String] = [], extra: [String] = [],
        launcher: [String] = []
    ) throws {
        self.id = id
        self.launcher = launcher
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
        let command = launcher + [try Binaries.portdBridge, "--config", configPath, "--socket", daemon.socketPath]
        var environment = ["PORTD_LOG_LEVEL": "debug"]
        if launcher.isEmpty { environment["NOTIFY_SOCKET"] = notify.address }
        let child = try ChildProcess(
            executable: command[0], arguments: Array(command.dropFirst()),
            environment: ChildProcess.cleanEnvironment(environment), collectingStandardError: true)
        self.notify = notify
        bridge = child
        if launcher.isEmpty {
            _ = try notify.waitFor("READY=1", from: child)
        } else {
            try child.waitForStandardError(containing: "portd-bridge: info: bridging ")
        }
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
