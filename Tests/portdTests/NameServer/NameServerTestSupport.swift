// NameServerTestSupport: speaking the name-server protocol from portd's
// tests with raw PortCore, word by word (PortNameServer, the client, is
// tested in PortNameClientTests):
//   - `NameClient`: one connection to portd's control socket; `request`
//     sends a request (msgid, string components, optional REPLY_PORT) and
//     returns the reply, as `SendRight.request` does;
//   - `TestLoop` and `Inbox`: a port of the test's own (anonymous, or a
//     registered name's listening socket) served on a run-loop thread, whose
//     messages a test waits for with a bound (an event, not a sleep);
//   - `HostedNameServer`: portd's own NameServer (the glue, not a process,
//     and not a second implementation of the protocol) on its own loop
//     thread with settings a test chooses (declared ports, policy, small
//     limits), on a control socket in a temporary directory. End-to-end
//     tests run the real binary (PortTestSupport's DaemonProcess); this is
//     for what only the daemon's insides can show: policy as arbitrary
//     closures, an instance serving another uid (without root), the
//     boundaries of its loop's passes (`markPasses`), and its log lines as
//     values;
//   - `LogCapture`: the lines a hosted name server logged;
//   - `NameServerFixture`: the Python client of Fixtures/name_client.py.

import Dispatch
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

typealias MessageID = NameServerProtocol.MessageID

// MARK: - Messages

extension PCPortMessage {
    /// The data components as strings ("" for a port).
    var words: [String] { components.map { $0.string ?? "" } }

    /// The fields after the serial, as "key=value" text.
    var fields: [String] { Array(components.compactMap(\.string).dropFirst()) }

    /// The value of the first field with this key.
    func field(_ key: String) -> String? {
        for w in components.compactMap(\.string) where w.hasPrefix(key + "=") { return String(w.dropFirst(key.count + 1)) }
        return nil
    }

    /// What a reply says happened: an ERROR's word, REGISTER's result, or
    /// "ok" for any other REPLY.
    var outcome: String {
        if msgid == NameServerProtocol.MessageID.error { return field("error") ?? "?" }
        if msgid == NameServerProtocol.MessageID.reply { return field("result") ?? "ok" }
        return "msgid \(msgid)"
    }

    /// An ERROR's word and message, ["WORD", "message=TEXT"].
    var errorAndMessage: [String] { [outcome] + fields.filter { $0.hasPrefix("message=") } }

    /// The serial the message carries.
    var serial: UInt32? { field("serial").flatMap { UInt32($0) } }

    /// The send rights among the components.
    var ports: [SendRight] {
        components.compactMap {
            if case .port(let r) = $0 { return r }
            return nil
        }
    }
}

/// A descriptor of the test's own for the one `right` carries (a received
/// listening socket, to make a PCPort of it).
func duplicateDescriptor(of right: SendRight) throws -> OwnedDescriptor {
    guard let fd = try right.withDescriptor({ (d) throws(SystemCallError) in try Descriptor.duplicate(d) }) else {
        throw HarnessError.unexpected("the right was invalidated")
    }
    return fd
}

/// Carries an owned descriptor into a closure that runs elsewhere (a loop's
/// perform), which takes it out once.
final class DescriptorHandoff: @unchecked Sendable {
    // Safe to share: set in init, taken once by the one closure that runs.
    private var descriptor: OwnedDescriptor?
    init(_ descriptor: consuming OwnedDescriptor) { self.descriptor = .some(descriptor) }
    func take() -> OwnedDescriptor { descriptor.take()! }
}

// MARK: - Client

/// One client connection to portd's control socket.
final class NameClient: Sendable {
    let right: SendRight
    private let serials = Mutex<UInt32>(0)
    /// portd's id for this connection (HELLO's "client="), 0 without HELLO.
    let clientID: UInt64

    /// Connects, and says HELLO unless `hello` is false. `limits` are the
    /// sender's (larger ones let a test send records portd must refuse).
    init(socket path: String, hello: Bool = true, limits: PortLimits = .default) throws {
        let fd = try UnixSocket.makeSocket()  // closed on a failure
        guard try UnixSocket.connect(fd, to: UnixSocketAddress(path: path)) == .connected else {
            throw HarnessError.unexpected("portd's backlog is full")
        }
        let right = SendRight(descriptor: fd, limits: limits)
        self.right = right
        guard hello else {
            clientID = 0
            return
        }
        serials.withLock { $0 = 1 }
        let message = PCPortMessage(msgid: MessageID.hello, strings: ["serial=1", "protocol=1.0"])
        guard case .reply(let reply) = try right.request(message, sendTimeout: HarnessTimeout, receiveTimeout: HarnessTimeout),
            reply.msgid == MessageID.reply, let id = reply.field("client").flatMap({ UInt64($0) })
        else {
            throw HarnessError.unexpected("HELLO was not answered")
        }
        clientID = id
    }

    /// The next serial.
    func nextSerial() -> UInt32 { serials.withLock { $0 += 1; return $0 } }

    /// Sends a request ("serial=N" then `fields`) and returns the reply,
    /// one at a time (the reply must echo the serial); throws when none came.
    func request(
        _ msgid: UInt32, _ fields: [String] = [], replyPort: SendRight? = nil, timeout: Duration = HarnessTimeout
    ) throws -> PCPortMessage {
        let serial = nextSerial()
        var message = PCPortMessage(msgid: msgid, strings: ["serial=\(serial)"] + fields)
        message.replyPort = replyPort
        switch try right.request(message, sendTimeout: timeout, receiveTimeout: timeout) {
        case .reply(let reply):
            guard reply.serial == serial || reply.serial == 0 else {
                throw HarnessError.unexpected("the reply to serial \(serial) says \(reply.words)")
            }
            return reply
        case let other: throw HarnessError.unexpected("no reply to \(msgid) \(fields): \(other)")
        }
    }

    /// Sends `message` as a request exactly as given (its own serial, or
    /// none, or anything else); the reply, or nil when portd closed the
    /// connection instead.
    func raw(_ message: PCPortMessage, timeout: Duration = HarnessTimeout) throws -> PCPortMessage? {
        switch try right.request(message, sendTimeout: timeout, receiveTimeout: timeout) {
        case .reply(let reply): return reply
        case .invalidPort: return nil
        case let other: throw HarnessError.unexpected("no reply to \(message.msgid) \(message.words): \(other)")
        }
    }

    /// `raw` of a message of these data components.
    func raw(_ msgid: UInt32, _ texts: [String]) throws -> PCPortMessage? {
        try raw(PCPortMessage(msgid: msgid, strings: texts))
    }

    /// REGISTER; returns the reply.
    func register(_ name: String, _ options: [String] = [], notify: Inbox? = nil) throws -> PCPortMessage {
        try request(
            MessageID.register, ["name=\(name)"] + options.map { "option=\($0)" },
            replyPort: notify.map { try $0.port.makeSendRight() })
    }

    /// LOOKUP; returns the reply.
    func lookUp(_ name: String, waitMilliseconds: Int? = nil) throws -> PCPortMessage {
        try request(MessageID.lookup, ["name=\(name)"] + (waitMilliseconds.map { ["wait_ms=\($0)"] } ?? []))
    }

    /// WATCH with `inbox` as the watcher's port.
    func watch(_ name: String?, inbox: Inbox) throws -> PCPortMessage {
        try request(MessageID.watch, name.map { ["name=\($0)"] } ?? [], replyPort: try inbox.port.makeSendRight())
    }

    /// This client as an owner: "PID:UID:CLIENT" of this process.
    var asOwner: String { "\(getpid()):\(getuid()):\(clientID)" }

    /// Hangs up (as a client that exits).
    func close() { right.invalidate() }
}

// MARK: - Ports of the test

/// A run-loop thread for the test's ports.
final class TestLoop: @unchecked Sendable {
    // Safe to share: `loop` is written once before `init` returns (after the
    // semaphore), `stopped` is atomic.
    private(set) var loop: PCRunLoop!
    private let stopped = Flag()
    private let ended = DispatchSemaphore(value: 0)

    private final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    init() {
        let ready = DispatchSemaphore(value: 0)
        let box = LoopBox()
        let thread = Thread { [stopped, ended] in
            let loop = PCRunLoop.current
            box.loop = loop
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            ready.signal()
            while !stopped.isSet { loop.runInMode(.default, timeout: .seconds(60)) }
            ended.signal()
        }
        thread.start()
        ready.wait()
        loop = box.loop
    }

    private final class LoopBox: @unchecked Sendable {
        // Safe to share: written on the new thread before `ready.signal()`, read after `ready.wait()`.
        var loop: PCRunLoop?
    }

    func stop() {
        if stopped.isSet { return }
        stopped.set()
        // Through a perform request, so that a run that has not begun yet is stopped too.
        let loop = self.loop!
        loop.perform(inModes: [.default]) { loop.stop() }
        ended.wait()
    }

    deinit { stop() }
}

/// A port whose messages a test waits for.
final class Inbox: @unchecked Sendable {
    // Safe to share: `port` is immutable (PCPort is thread-safe);
    // `received` is a Mutex; `arrived` a semaphore.
    let port: PCPort
    private let received = Mutex<[PCPortMessage]>([])
    private let arrived = DispatchSemaphore(value: 0)

    /// An anonymous port, or the port of a received listening socket.
    init(on loop: TestLoop, listening: SendRight? = nil) throws {
        port = try listening.map { try PCPort(listeningDescriptor: try duplicateDescriptor(of: $0)) } ?? PCPort()
        port.setHandler { [weak self] message in
            self?.received.withLock { $0.append(message) }
            self?.arrived.signal()
            return nil
        }
        try port.schedule(in: loop.loop, forMode: .default)
    }

    deinit { port.invalidate() }

    /// The next message, or nil when none came within `timeout`.
    func next(timeout: Duration = HarnessTimeout) -> PCPortMessage? {
        let seconds = Double(timeout.nanosecondsClamped) / 1e9
        guard arrived.wait(timeout: .now() + seconds) == .success else { return nil }
        return received.withLock { $0.removeFirst() }
    }

    /// Whether a message is already there (without waiting).
    var isEmpty: Bool { received.withLock { $0.isEmpty } }
}

// MARK: - A name server in the test process

/// Log lines, captured.
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func add(_ line: String) { lines.withLock { $0.append(line) } }

    var logger: Logger {
        Logger(label: "portd.test") { [self] _ in Handler(capture: self) }
    }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.add(
                StderrLogHandler.line(
                    identifier: "portd", level: event.level, message: event.message.description, error: nil,
                    metadata: metadata.merging(event.metadata ?? [:]) { _, new in new }))
        }
    }
}

/// A NameServer on its own loop thread, on a control socket in a temporary directory.
final class HostedNameServer: @unchecked Sendable {
    // Safe to share: every field is written in init and immutable; the
    // server itself is touched only on its loop's thread (`perform`).
    let directory: TemporaryDirectory
    let socketPath: String
    let log = LogCapture()
    private let listener: ControlListener
    private let portDirectory: PortDirectory
    private let thread = TestLoop()
    private let slot: Slot
    private var stopped = false

    /// The server and what it needs, used only on the hosting loop's thread.
    private final class Slot: @unchecked Sendable {
        // Safe to share: touched only inside `perform(waitUntilDone:)` on
        // the hosting loop's thread, and read after it returned.
        var server: NameServer?
        var failure: String?
        let directory: PortDirectory
        let settings: NameServerSettings
        init(directory: PortDirectory, settings: NameServerSettings) {
            self.directory = directory
            self.settings = settings
        }
    }

    init(_ settings: NameServerSettings) throws {
        directory = try TemporaryDirectory()
        socketPath = directory.appending("portd.sock")
        listener = try ControlListener.bind(at: DaemonSocketLocation(path: socketPath, origin: .option), userID: getuid())
        portDirectory = try PortDirectory.prepare(
            path: PortDirectory.path(forControlSocket: socketPath), userID: getuid()
        ).0
        let slot = Slot(directory: portDirectory, settings: settings)
        self.slot = slot
        let descriptor = DescriptorHandoff(listener.handOverDescriptor())
        let loop = thread.loop!
        let logger = log.logger
        loop.perform(inModes: [.default], waitUntilDone: true) {
            do {
                let s = try NameServer(
                    controlDescriptor: descriptor.take(), directory: slot.directory, settings: slot.settings, logger: logger,
                    loop: loop)
                try s.start()
                slot.server = s
            } catch {
                slot.failure = "\(error)"
            }
        }
        if let failure = slot.failure { throw HarnessError.unexpected(failure) }
    }

    /// The socket files in the port directory.
    /// The socket files in the port directory, those of the generation
        /// subdirectories included ("g1/p3"), sorted.
        var portFiles: [String] { portSocketFiles(in: portDirectory.path) }

    /// The log line written at the start of every pass of the server's loop
    /// (before-timers) once `markPasses()` was called.
    static let passMarker = "--- run-loop pass"

    /// Writes `passMarker` into the log at every pass of the server's loop,
    /// so a test can tell which log lines one pass produced.
    func markPasses() {
        let log = self.log
        thread.loop.add(
            RunLoopObserver(activities: .beforeTimers) { _, _ in log.add(HostedNameServer.passMarker) }, forMode: .default)
    }

    func stop() {
        if stopped { return }
        stopped = true
        let slot = self.slot
        thread.loop.perform(inModes: [.default], waitUntilDone: true) {
            slot.server?.stop()
            slot.server = nil
        }
        thread.stop()
        listener.close()
    }

    deinit { stop() }
}

// MARK: - The Python client

enum NameServerFixture {
    static let script = SourceTree.path("Tests/portdTests/Fixtures/name_client.py")

    /// Starts `python3 name_client.py arguments...`.
    static func start(_ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(
            executable: "/usr/bin/python3", arguments: [script] + arguments, environment: ChildProcess.cleanEnvironment())
    }
}

/// The files of a port directory, those in its generation subdirectories
/// ("g1/p3") included; the subdirectories themselves are not listed.
func portSocketFiles(in directory: String) -> [String] {
    var files: [String] = []
    for name in (try? FileSystem.entries(ofDirectory: directory)) ?? [] {
        if PortDirectory.generationNumber(name) != nil {
            for file in (try? FileSystem.entries(ofDirectory: "\(directory)/\(name)")) ?? [] { files.append("\(name)/\(file)") }
        } else {
            files.append(name)
        }
    }
    return files.sorted()
}

extension PCPortMessage {
    /// An event's "name=" and "event=" values.
    var nameAndEvent: [String?] { [field("name"), field("event")] }
}
