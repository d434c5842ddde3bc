// DaemonProcess: the integration-test harness. It runs the real, built
// `portd` and `portctl` binaries the way a user or systemd would:
//   - `Binaries` finds them beside the test bundle (.build/<triple>/debug),
//     or in $PORTD_BIN_DIR;
//   - `TemporaryDirectory` gives each test its own short path under /tmp
//     (a socket path holds at most 107 bytes) and removes it afterwards;
//   - `NotifySocket` is the test's own NOTIFY_SOCKET: an AF_UNIX datagram
//     socket in the abstract namespace (no file to clean up), read with a
//     bounded wait, so "wait for READY=1" is an event, not a sleep; it
//     keeps a file-descriptor store as systemd does (FDSTORE=1 with
//     FDNAME=, FDSTOREREMOVE=1), to be passed to the next portd;
//   - `ChildProcess` is the one way tests start a program (portd, portctl,
//     Python peers and fixtures): captured output, descriptors passed at
//     chosen numbers, a bounded wait for its exit;
//   - `DaemonProcess` is the one daemon harness: it starts the real portd
//     with a clean environment (nothing of the caller's PORTD_SOCKET,
//     XDG_RUNTIME_DIR, LISTEN_*, JOURNAL_STREAM leaks in) in a directory of
//     its own (ports it declares go in a portd.conf there), signals it, and
//     waits for its exit with a bound; it runs portctl against itself and
//     opens PortNameServer clients to itself;
//   - `runPortctl` runs portctl to completion and returns status and output;
//     a child's standard input can be fed, and a running child's output
//     read up to an expected text (`waitForStandardOutput`).
// Every test gets its own directory and socket, so these tests run in
// parallel. Every wait has a generous upper bound (`HarnessTimeout`) that
// turns a hang into a failing test; none stands in for synchronisation. A
// wait for an exit that times out says what /proc showed of the child
// (`processState`: running, sleeping where, a zombie the harness missed).

import CPortSystem
import Foundation
import Glibc
import PortNameClient
import PortSystem
import Testing

/// The upper bound of every wait in the harness; reaching it is a failure.
package let HarnessTimeout: Duration = .seconds(20)

package enum HarnessError: Error, CustomStringConvertible {
    case missingBinary(String)
    case timedOut(String)
    case unexpected(String)

    package var description: String {
        switch self {
        case .missingBinary(let what): "binary not found: \(what) (run `swift build` first, or set PORTD_BIN_DIR)"
        case .timedOut(let what): "timed out: \(what)"
        case .unexpected(let what): what
        }
    }
}

package enum Binaries {
    /// The directory holding the built executables.
    package static let directory: String = {
        if let explicit = ProcessInfo.processInfo.environment["PORTD_BIN_DIR"], !explicit.isEmpty { return explicit }
        // The test runner (…/debug/portdPackageTests.xctest) sits beside the executables.
        let runner = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (runner as NSString).deletingLastPathComponent
    }()

    package static func path(_ name: String) throws -> String {
        let path = "\(directory)/\(name)"
        guard FileManager.default.isExecutableFile(atPath: path) else { throw HarnessError.missingBinary(path) }
        return path
    }

    package static var portd: String { get throws { try path("portd") } }
    package static var portctl: String { get throws { try path("portctl") } }
    package static var portdBridge: String { get throws { try path("portd-bridge") } }
}

/// A fresh directory under /tmp, removed when the value goes away.
package final class TemporaryDirectory {
    package let path: String

    package init() throws {
        var template = Array("/tmp/portd-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError.unexpected("mkdtemp failed") }
        path = String(cString: made)
    }

    /// `path/name`.
    package func appending(_ name: String) -> String { "\(path)/\(name)" }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The test's own NOTIFY_SOCKET.
package final class NotifySocket {
    package let name: String
    private let socket: SharedDescriptor
    private var buffer = [UInt8](repeating: 0, count: 4096)
    /// Every datagram received so far, in order.
    package private(set) var received: [String] = []

    package init() throws {
        name = "portd-test-notify-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        socket = SharedDescriptor(try LocalSocket.make(.datagram))
        try LocalSocket.bind(socket.descriptor, abstractName: name)
    }

    deinit {
        store.values.forEach { close($0) }
    }

    /// The value for NOTIFY_SOCKET.
    package var address: String { "@\(name)" }

    /// Waits for the next datagram: nil when none came within `timeout`, or
    /// when `sender` exited first (nothing more can come then). Descriptors
    /// that come with FDSTORE=1 go into `store`; FDSTOREREMOVE=1 closes them.
    package func next(timeout: Duration = HarnessTimeout, from sender: ChildProcess? = nil) throws -> String? {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            if let text = try receiveNow() {
                received.append(text)
                return text
            }
            let left = deadline - MonotonicInstant.now()
            if left <= .zero { return nil }
            guard let sender else {
                _ = try Poll.wait(socket.descriptor, for: .readable, timeout: left)
                continue
            }
            let (datagram, exit) = try OwnedDescriptor.lending(sender.exitEvent) { (exitEvent) throws(SystemCallError) in
                try Poll.wait(socket.descriptor, for: .readable, exitEvent, for: .readable, timeout: left)
            }
            // A datagram sent just before the exit is still read first.
            if datagram.isEmpty && !exit.isEmpty { return nil }
        }
    }

    /// The service manager's file-descriptor store: FDNAME → descriptor
    /// (the test's copy; closed when replaced, removed or at deinit).
    package private(set) var store: [String: Int32] = [:]

    /// Takes the store's descriptors, in name order (the caller closes them).
    package func takeStore() -> [(name: String, fd: Int32)] {
        defer { store = [:] }
        return store.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// One datagram with the descriptors that came with it.
    package struct Datagram {
        package let text: String
        /// Received descriptors; whoever takes the datagram closes them.
        package let descriptors: [Int32]
        package var lines: [Substring] { text.split(separator: "\n") }
    }

    /// The socket, for a test that watches it from a run loop.
    package var descriptor: SharedDescriptor { socket }

    /// One datagram already queued, or nil, as it came: the caller owns its
    /// descriptors (nothing goes into `store`).
    package func receiveDatagram() throws -> Datagram? {
        let control = ControlMessage.Buffer(descriptors: 16, credentials: true)
        let result = try buffer.withUnsafeMutableBytes { data throws(SystemCallError) in
            try UnixSocket.receive(socket.descriptor, into: data, control: control)
        }
        switch result {
        case .wouldBlock, .connectionReset:
            return nil
        case .endOfStream:
            return Datagram(text: "", descriptors: [])  // an empty datagram
        case .record(let record):
            var received = OwnedDescriptors(capacity: 16)
            let parsed = ControlMessage.parse(
                control, length: record.controlLength, truncated: record.controlTruncated, into: &received)
            #expect(!parsed.truncated && parsed.unexpected == 0)
            var descriptors: [Int32] = []  // the caller's from here
            for i in 0..<received.count { descriptors.append(received.take(at: i).take()) }
            return Datagram(
                text: String(decoding: buffer[..<record.byteCount], as: UTF8.self), descriptors: descriptors)
        }
    }

    /// The next datagram as it came, waiting up to `timeout`; nil when none came.
    package func nextDatagram(timeout: Duration = HarnessTimeout) throws -> Datagram? {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            if let datagram = try receiveDatagram() { return datagram }
            let left = deadline - MonotonicInstant.now()
            if left <= .zero { return nil }
            if try LocalSocket.wait(socket.descriptor, for: .readable, timeout: left).isEmpty { return nil }
        }
    }

    /// One datagram already queued, or nil, its descriptors kept as
    /// systemd's store keeps them.
    private func receiveNow() throws -> String? {
        guard let datagram = try receiveDatagram() else { return nil }
        let lines = datagram.lines
        let fdName = lines.first { $0.hasPrefix("FDNAME=") }.map { String($0.dropFirst("FDNAME=".count)) } ?? "stored"
        if lines.contains("FDSTORE=1"), datagram.descriptors.count == 1 {
            if let old = store.updateValue(datagram.descriptors[0], forKey: fdName) { close(old) }
        } else {
            datagram.descriptors.forEach { close($0) }
            if lines.contains("FDSTOREREMOVE=1"), let old = store.removeValue(forKey: fdName) { close(old) }
        }
        return datagram.text
    }

    /// Waits until a datagram contains the line `assignment` (e.g. "READY=1");
    /// returns that datagram. Fails at once when `sender` exits first.
    @discardableResult
    package func waitFor(_ assignment: String, from sender: ChildProcess? = nil, timeout: Duration = HarnessTimeout) throws -> String {
        let deadline = MonotonicInstant.now() + timeout
        while let message = try next(timeout: deadline - MonotonicInstant.now(), from: sender) {
            if message.split(separator: "\n").contains(where: { $0 == assignment }) { return message }
        }
        if let sender, !sender.isRunning {
            throw HarnessError.unexpected(
                "\(assignment) never came: the process exited with \(try sender.waitForExit()): \(sender.standardError)")
        }
        throw HarnessError.timedOut("\(assignment) on NOTIFY_SOCKET (got \(received))")
    }
}

/// A child process with captured output and a bounded wait for its exit.
///
/// Not Foundation's `Process`: on Linux it reaps every child from one
/// manager thread with a blocking `waitpid`, started when a socket the child
/// inherited closes; a child that closes stray descriptors (as
/// systemd-socket-activate does) parks that thread until it exits, and no
/// other child's exit is seen meanwhile. Here each child has its own reaper
/// thread, and every descriptor the test process owns is CLOEXEC, so a child
/// inherits exactly stdin (/dev/null), stdout and stderr (pipes).
package final class ChildProcess: @unchecked Sendable {
    // `pid`, `executable` and the pipe descriptors are immutable after init.
    // Protected by `lock`: `exitStatus`, `collectedOutput`, `collectedError`,
    // `errorPrefix` (the reaper thread writes `exitStatus`; `exited` signals it).
    package let pid: Int32
    package let executable: String
    private let outputFD: Int32
    /// Standard error's pipe; -1 when `errorCollector` reads it.
    private let errorFD: Int32
    /// Standard error read as it comes (`init(collectingStandardError: true)`).
    package let errorCollector: OutputCollector?
    /// An eventfd that becomes readable when the child has exited (for poll).
    package let exitEvent: Int32
    private let lock = NSLock()
    private let exited = DispatchSemaphore(value: 0)
    private var exitStatus: Int32?
    private var collectedOutput: String?
    private var collectedError: String?
    /// Standard error already read by `waitForStandardError`.
    private var errorPrefix = ""
    /// Standard output already read by `waitForStandardOutput`.
    private var outputPrefix = ""

    /// Starts `executable`; its standard input is /dev/null, or a pipe fed
    /// with `input` (then closed) by a thread of its own; `passing` maps
    /// further child descriptor numbers to ours (as a service manager passes
    /// sockets, starting at 3). `collectingStandardError`: a thread reads
    /// standard error as it comes (`errorCollector`), for a child that
    /// writes more than a pipe holds while nothing reads it.
    package init(
        executable: String, arguments: [String], environment: [String: String] = ChildProcess.cleanEnvironment(),
        input: [UInt8]? = nil, passing: [Int32: Int32] = [:], collectingStandardError: Bool = false
    ) throws {
        self.executable = executable
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard port_pipe2(&outPipe, O_CLOEXEC) == 0, port_pipe2(&errPipe, O_CLOEXEC) == 0 else {
            throw HarnessError.unexpected("pipe2 failed")
        }
        var inPipe: [Int32] = [-1, -1]
        let stdinFD: Int32
        if input != nil {
            guard port_pipe2(&inPipe, O_CLOEXEC) == 0 else { throw HarnessError.unexpected("pipe2 failed") }
            stdinFD = inPipe[0]
        } else {
            stdinFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        }
        // PortCore's one spawn wrapper: a clean signal state, the pipes as 0, 1, 2.
        let spawned = Result { () throws(SystemCallError) -> Int32 in
            // The numbers stay the harness's: each is lent for the copy the child gets.
            var descriptors = Spawn.Descriptors(capacity: 3 + passing.count)
            for (child, ours) in [0: stdinFD, 1: outPipe[1], 2: errPipe[1]].merging(passing, uniquingKeysWith: { a, _ in a }) {
                try OwnedDescriptor.lending(ours) { (d) throws(SystemCallError) in try descriptors.insert(copyOf: d, as: child) }
            }
            return try Spawn.start(
                [executable] + arguments, environment: environment.map { "\($0.key)=\($0.value)" },
                descriptors: descriptors)
        }
        close(outPipe[1])
        close(errPipe[1])
        close(stdinFD)
        let child: pid_t
        switch spawned {
        case .success(let p): child = p
        case .failure(let error):
            close(outPipe[0])
            close(errPipe[0])
            if input != nil { close(inPipe[1]) }
            throw HarnessError.unexpected("spawn \(executable): \(error)")
        }
        if let input {
            // The child may exit without reading it all: EPIPE, not SIGPIPE
            // (MSG_NOSIGNAL does not exist for pipes, so SIGPIPE is ignored here).
            Glibc.signal(SIGPIPE, SIG_IGN)
            let writeEnd = inPipe[1]
            let feeder = Thread {
                var rest = input[...]
                while !rest.isEmpty {
                    let n = rest.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
                    if n > 0 { rest = rest.dropFirst(n) } else if port_errno() != EINTR { break }
                }
                close(writeEnd)
            }
            feeder.start()
        }
        pid = child
        outputFD = outPipe[0]
        if collectingStandardError {
            errorFD = -1
            errorCollector = OutputCollector(reading: errPipe[0])
        } else {
            errorFD = errPipe[0]
            errorCollector = nil
        }
        exitEvent = try EventFD.create().take()  // the harness's; closed in deinit
        let exitEvent = self.exitEvent

        let reaped = child
        let reaper = Thread { [self] in
            var status: Int32 = 0
            while waitpid(reaped, &status, 0) == -1 && port_errno() == EINTR {}
            // WIFSIGNALED: low 7 bits are the signal; otherwise the exit code is bits 8-15.
            let code = status & 0x7f != 0 ? 128 + (status & 0x7f) : (status >> 8) & 0xff
            lock.withLock { exitStatus = code }
            exited.signal()
            try? OwnedDescriptor.lending(exitEvent) { (d) throws(SystemCallError) in try EventFD.signal(d) }
        }
        reaper.start()
    }

    deinit {
        close(outputFD)
        if errorFD >= 0 { close(errorFD) }
        close(exitEvent)
    }

    /// The environment of the test process, less everything that would tell
    /// a child where some other portd or service manager is.
    package static func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in [
            "PORTD_SOCKET", "XDG_RUNTIME_DIR", "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
            "JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID", "PORTD_LOG_LEVEL",
        ] {
            environment[key] = nil
        }
        environment.merge(extra) { _, new in new }
        return environment
    }

    package var isRunning: Bool { lock.withLock { exitStatus == nil } }

    package func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Kills the process (SIGKILL) and waits for its exit: a test's
    /// `defer`, so that no child outlives the test that started it.
    package func killAndReap() {
        signal(SIGKILL)
        _ = try? waitForExit()
    }

    /// Waits for the exit and returns the exit status (or 128 + signal).
    package func waitForExit(timeout: Duration = HarnessTimeout) throws -> Int32 {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            let seen = Self.processState(pid)  // before the kill changes it
            kill(pid, SIGKILL)
            throw HarnessError.timedOut("exit of \((executable as NSString).lastPathComponent) pid \(pid) (\(seen))")
        }
        exited.signal()  // later waits return at once
        return lock.withLock { exitStatus! }
    }

    /// What /proc says of process `pid`, for a wait that timed out: its
    /// state, the CPU time it used and where it sleeps. A child that is a
    /// zombie exited and was not reaped (the harness missed it); one that
    /// runs or sleeps is still at work, or waits in the kernel where
    /// `wchan` says.
    package static func processState(_ pid: pid_t) -> String {
        func read(_ name: String) -> String? {
            guard let bytes = try? FileSystem.contents(ofFile: "/proc/\(pid)/\(name)", maximumBytes: 65_536) else {
                return nil
            }
            return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // /proc/PID/stat: "pid (comm) state ...", the command in parentheses
        // may hold spaces; utime and stime are fields 14 and 15.
        guard let stat = read("stat"), let close = stat.lastIndex(of: ")") else { return "no /proc entry" }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return "stat: \(stat)" }
        let ticks = max(1, sysconf(Int32(_SC_CLK_TCK)))
        let cpu = Double(user + system) / Double(ticks)
        return "state \(fields[0]), \(cpu) s of CPU, wchan \(read("wchan") ?? "?")"
    }

    /// Standard output, complete once the child (and anything that inherited it) has exited.
    package var standardOutput: String {
        lock.withLock {
            if collectedOutput == nil { collectedOutput = outputPrefix + Self.readToEnd(outputFD) }
            return collectedOutput!
        }
    }

    /// Reads standard output until it contains `text` (for a child that keeps running).
    package func waitForStandardOutput(containing text: String, timeout: Duration = HarnessTimeout) throws {
        let deadline = MonotonicInstant.now() + timeout
        var seen = lock.withLock { outputPrefix }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !seen.contains(text) {
            let left = deadline - MonotonicInstant.now()
            if try left <= .zero || Self.wait(outputFD, timeout: left).isEmpty {
                throw HarnessError.timedOut("\"\(text)\" on standard output (got \(seen))")
            }
            let n = read(outputFD, &chunk, chunk.count)
            if n <= 0 { throw HarnessError.unexpected("standard output closed before \"\(text)\" (got \(seen))") }
            seen += String(decoding: chunk[..<n], as: UTF8.self)
            let soFar = seen
            lock.withLock { outputPrefix = soFar }
        }
    }

    /// Standard error, complete once the child (and anything that inherited it) has exited.
    package var standardError: String {
        if let errorCollector { return (try? errorCollector.waitForEnd()) ?? errorCollector.text }
        return lock.withLock {
            if collectedError == nil { collectedError = errorPrefix + Self.readToEnd(errorFD) }
            return collectedError!
        }
    }

    /// Waits until the harness's descriptor `fd` is readable (LocalSocket.wait).
    private static func wait(_ fd: Int32, timeout: Duration) throws(SystemCallError) -> Poll.Events {
        try OwnedDescriptor.lending(fd) { (d) throws(SystemCallError) in try LocalSocket.wait(d, for: .readable, timeout: timeout) }
    }

    private static func readToEnd(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n > 0 {
                bytes += chunk[..<n]
            } else if n == 0 || port_errno() != EINTR {
                return String(decoding: bytes, as: UTF8.self)
            }
        }
    }

    /// Reads standard error until it contains `text` (for a child that keeps running).
    package func waitForStandardError(containing text: String, timeout: Duration = HarnessTimeout) throws {
        if let errorCollector {
            try errorCollector.waitFor(text, timeout: timeout)
            return
        }
        let deadline = MonotonicInstant.now() + timeout
        var seen = lock.withLock { errorPrefix }
        var chunk = [UInt8](repeating: 0, count: 1024)
        while !seen.contains(text) {
            let left = deadline - MonotonicInstant.now()
            if try left <= .zero || Self.wait(errorFD, timeout: left).isEmpty {
                throw HarnessError.timedOut("\"\(text)\" on standard error (got \(seen))")
            }
            let n = read(errorFD, &chunk, chunk.count)
            if n <= 0 { throw HarnessError.unexpected("standard error closed before \"\(text)\" (got \(seen))") }
            seen += String(decoding: chunk[..<n], as: UTF8.self)
            let soFar = seen
            lock.withLock { errorPrefix = soFar }  // what was read is no longer in the pipe
        }
    }
}

/// A real portd, the built binary, on a socket of the test's own.
package final class DaemonProcess {
    package let child: ChildProcess
    /// A directory of the daemon's own, removed with it: its socket unless
    /// the test chose another path, the portd.conf of `declaring`, and
    /// whatever files the test puts there.
    package let directory: TemporaryDirectory
    package let socketPath: String
    package let notify: NotifySocket

    /// Starts `portd --socket socketPath` (plus `arguments`) with NOTIFY_SOCKET set;
    /// `socket` defaults to `portd.sock` in `directory`.
    /// `declaring` names ports declared as portd.conf(5) would, check-in
    /// allowed to this process's uid (a portd.conf in `directory`, given
    /// with --config).
    /// `launcher`: a command that execs portd (e.g. `prlimit --nofile=N:N`).
    /// `passing` (FDNAME → descriptor) hands portd descriptors the way
    /// systemd passes its file-descriptor store back: at 3, 4, … with
    /// LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID (set to portd's own pid by
    /// a launcher that then execs portd, as systemd does after its fork).
    package init(
        socket: String? = nil, arguments: [String] = [], environment: [String: String] = [:],
        passing: [(name: String, fd: Int32)] = [], declaring: [String] = [], launcher: [String] = []
    ) throws {
        directory = try TemporaryDirectory()
        let socketPath = socket ?? directory.appending("portd.sock")
        self.socketPath = socketPath
        notify = try NotifySocket()
        var environment = environment.merging(["NOTIFY_SOCKET": notify.address]) { a, _ in a }
        var command = launcher + [try Binaries.portd, "--socket", socketPath] + arguments
        if !declaring.isEmpty {
            let config = directory.appending("portd.conf")
            let text = declaring.map { "[Port]\nName=\($0)\nCheckInUser=\(getuid())\n" }.joined(separator: "\n")
            try text.write(toFile: config, atomically: true, encoding: .utf8)
            command += ["--config", config]
        }
        var descriptors: [Int32: Int32] = [:]
        if !passing.isEmpty {
            for (i, entry) in passing.enumerated() { descriptors[3 + Int32(i)] = entry.fd }
            environment["LISTEN_FDS"] = "\(passing.count)"
            environment["LISTEN_FDNAMES"] = passing.map(\.name).joined(separator: ":")
            command = [
                "/usr/bin/python3", "-c",
                "import os, sys; os.environ['LISTEN_PID'] = str(os.getpid()); os.execv(sys.argv[1], sys.argv[1:])",
            ] + command
        }
        child = try ChildProcess(
            executable: command[0], arguments: Array(command.dropFirst()),
            environment: ChildProcess.cleanEnvironment(environment), passing: descriptors)
    }

    /// Starts portd and waits for READY=1.
    package static func started(
        socket: String? = nil, arguments: [String] = [], environment: [String: String] = [:],
        passing: [(name: String, fd: Int32)] = [], declaring: [String] = [], launcher: [String] = []
    ) throws -> DaemonProcess {
        let daemon = try DaemonProcess(
            socket: socket, arguments: arguments, environment: environment, passing: passing, declaring: declaring,
            launcher: launcher)
        try daemon.notify.waitFor("READY=1", from: daemon.child)
        return daemon
    }

    package var pid: Int32 { child.pid }

    /// The environment that points portctl at this daemon.
    package var environment: [String: String] { ["PORTD_SOCKET": socketPath] }

    /// Runs portctl to completion against this daemon.
    package func portctl(
        _ arguments: [String], input: [UInt8]? = nil, environment extra: [String: String] = [:]
    ) throws -> CommandResult {
        try runPortctl(arguments, environment: environment.merging(extra) { _, new in new }, input: input)
    }

    /// Starts portctl against this daemon and leaves it running.
    package func startPortctl(_ arguments: [String], environment extra: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess(
            executable: try Binaries.portctl, arguments: arguments,
            environment: ChildProcess.cleanEnvironment(environment.merging(extra) { _, new in new }))
    }

    /// A client connection of the test process itself.
    package func client(timeout: Duration = .seconds(10)) throws -> PortNameServer {
        try PortNameServer(socketPath: socketPath, timeout: timeout)
    }

    /// Sends `signal` and returns the exit status; its clients see their connections close.
    package func stop(with signal: Int32 = SIGTERM) throws -> Int32 {
        child.signal(signal)
        return try child.waitForExit()
    }

    deinit {
        // A test that failed half-way must not leave a daemon behind.
        if child.isRunning {
            child.killAndReap()
        }
    }
}

/// The outcome of one portctl run.
package struct CommandResult {
    package let status: Int32
    package let standardOutput: String
    package let standardError: String

    package init(status: Int32, standardOutput: String, standardError: String) {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }
}

/// Runs portctl with `arguments` to completion (standard input: `input`, or /dev/null).
package func runPortctl(_ arguments: [String], environment: [String: String] = [:], input: [UInt8]? = nil) throws -> CommandResult {
    try runToCompletion(try Binaries.portctl, arguments, environment: environment, input: input)
}

/// Runs portd with `arguments` to completion (for runs expected to end by themselves).
package func runPortd(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    try runToCompletion(try Binaries.portd, arguments, environment: environment)
}

private func runToCompletion(
    _ executable: String, _ arguments: [String], environment: [String: String], input: [UInt8]? = nil
) throws -> CommandResult {
    let child = try ChildProcess(
        executable: executable, arguments: arguments, environment: ChildProcess.cleanEnvironment(environment),
        input: input)
    let status = try child.waitForExit()
    return CommandResult(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
}

/// Whether something is at `path` (lstat, no symlink following).
package func exists(_ path: String) -> Bool {
    (try? FileSystem.status(ofPath: path)) != nil
}
