// TestDaemon: a name server for an end-to-end test, of one of two kinds:
//   - `.real`: the built portd binary (DaemonProcess), the product itself;
//   - `.fake`: FakeNameServer, the protocol contract served in-process.
// Tests of portctl and PortNameServer run against both (Swift Testing
// arguments), so a failure says whether the client or the daemon strays
// from the contract. PORTCTL_TEST_DAEMONS=fake (or real) restricts the
// kinds, e.g. to run the client's tests on a branch without the daemon.
//
// Every test gets its own directory and socket, so these tests run in
// parallel; portctl children get the socket through PORTD_SOCKET.

import Foundation
import Glibc
import Testing

@testable import PortCore
@testable import PortMessaging
@testable import PortNameClient
@testable import PortNameProtocol
@testable import PortRunLoop
@testable import PortSystem
@testable import PortWire

enum DaemonKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case fake
    case real

    var testDescription: String { rawValue }

    /// The kinds to test: PORTCTL_TEST_DAEMONS (comma-separated), else both.
    static let selected: [DaemonKind] = {
        guard let list = ProcessInfo.processInfo.environment["PORTCTL_TEST_DAEMONS"], !list.isEmpty else {
            return allCases
        }
        return list.split(separator: ",").compactMap { DaemonKind(rawValue: String($0)) }
    }()
}

final class TestDaemon {
    let kind: DaemonKind
    let directory: TemporaryDirectory
    let socket: String
    private var fake: FakeNameServer?
    private var real: DaemonProcess?

    /// Starts a daemon; `declaring` names ports declared as portd.conf(5)
    /// would (check-in allowed to this process's uid).
    init(_ kind: DaemonKind, declaring: [String] = []) throws {
        self.kind = kind
        directory = try TemporaryDirectory()
        switch kind {
        case .fake:
            let f = try FakeNameServer(directory: directory.path)
            for name in declaring { f.declare(name) }
            fake = f
            socket = f.socketPath
        case .real:
            socket = directory.appending("portd.sock")
            var arguments: [String] = []
            if !declaring.isEmpty {
                let config = directory.appending("portd.conf")
                let text = declaring.map { "[Port]\nName=\($0)\nCheckInUser=\(getuid())\n" }.joined(separator: "\n")
                try text.write(toFile: config, atomically: true, encoding: .utf8)
                arguments = ["--config", config]
            }
            real = try DaemonProcess.started(socket: socket, arguments: arguments)
        }
    }

    /// The daemon's pid (the test process itself for the fake).
    var pid: Int32 { real?.pid ?? getpid() }

    /// The environment that points portctl at this daemon.
    var environment: [String: String] { ["PORTD_SOCKET": socket] }

    /// Runs portctl to completion against this daemon.
    func portctl(_ arguments: [String], input: [UInt8]? = nil, environment extra: [String: String] = [:]) throws -> CommandResult {
        try runPortctl(arguments, environment: environment.merging(extra) { _, new in new }, input: input)
    }

    /// Starts portctl against this daemon and leaves it running.
    func startPortctl(_ arguments: [String], environment extra: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess(
            executable: try Binaries.portctl, arguments: arguments,
            environment: ChildProcess.cleanEnvironment(environment.merging(extra) { _, new in new }))
    }

    /// A client connection of the test process itself.
    func client(timeout: Duration = .seconds(10)) throws -> PortNameServer {
        try PortNameServer(socketPath: socket, timeout: timeout)
    }

    /// Stops the daemon (SIGTERM for the real one); its clients see their connections close.
    func stop() throws {
        fake?.stop()
        if let real, real.child.isRunning { #expect(try real.stop() == 0) }
    }

    deinit {
        fake?.stop()
        if let real, real.child.isRunning { _ = try? real.stop() }
    }
}

/// Waits (bounded) for a condition another thread makes true, without sleeping:
/// the condition is re-checked each time `signal()` is called.
final class Flag: @unchecked Sendable {
    // Safe to share: `value` is protected by `condition`'s lock.
    private let condition = NSCondition()
    private var value = false

    func signal() {
        condition.lock()
        value = true
        condition.broadcast()
        condition.unlock()
    }

    /// True when signalled before `timeout`.
    func wait(timeout: Duration = HarnessTimeout) -> Bool {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !value {
            if !condition.wait(until: deadline) { return value }
        }
        return true
    }
}
