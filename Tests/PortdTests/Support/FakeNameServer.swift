// FakeNameServer: a stand-in for portd's name server, in the test process,
// written from notes/NAMESERVER_PROTOCOL.md (the v1 contract) and nothing
// else, so that PortNameServer and portctl can be tested end to end before
// (and independently of) the real daemon. It is not portd: no policy, no
// limits, no declared ports but the ones a test adds, no systemd.
//
// It speaks the contract on a real SOCK_SEQPACKET socket with the real wire
// format: each client connection is a PortSource on the fake's own run
// loop (one thread), read and answered with PortCore's MessageTransport.
// Not a PCPort: a PCPort replaces a request's REPLY_PORT with the one-shot
// reply right, and WATCH and REGISTER need the client's port.
//
// Behaviour (the contract's, with the daemon side's clarifications in the
// notes): names belong to the client connection that
// registered them and go, with their socket file, the moment it closes;
// D-Bus ownership (allow-replacement, replace-existing, do-not-queue, a FIFO
// queue that gets NAME_ACQUIRED); LOOKUP connects to the name's socket and
// passes the connected descriptor, and may wait (wait_ms); WATCH sends
// NAME_OWNER_CHANGED to the watcher's port; LIST, OWNER, STATUS, CHECKIN.
//
// Threads: every registry field is touched only on the fake's thread
// (inside its loop's callbacks); `stop()` goes through the loop's perform
// queue and joins the thread.

import Foundation
import Glibc
import Synchronization

@testable import PortCore
@testable import PortMessaging
@testable import PortNameClient
@testable import PortNameProtocol
@testable import PortRunLoop
@testable import PortSystem
@testable import PortWire

final class FakeNameServer: @unchecked Sendable {
    // Safe to share: `socketPath`, `directory` are immutable; `loop` is
    // written once before init returns; everything else is confined to the
    // server thread (see the top of the file).
    let socketPath: String
    let directory: String
    private var loop: PCRunLoop!
    private let finished = DispatchSemaphore(value: 0)
    private let stopped = Mutex(false)
    private let startedAt = MonotonicInstant.now()
    private var listener: PortSource?
    private var nextClientID: UInt64 = 1
    private var clients: [UInt64: Client] = [:]
    private var names: [String: Entry] = [:]
    private var watchers: [Watcher] = []
    private var waitingLookups: [WaitingLookup] = []
    private var declared: [String: SharedDescriptor] = [:]
    private var lookups = 0
    private var refusals = 0

    private final class Client {
        let id: UInt64
        let fd: SharedDescriptor
        let transport = MessageTransport()
        var source: PortSource?
        init(id: UInt64, fd: SharedDescriptor) {
            self.id = id
            self.fd = fd
        }
    }

    private struct Owner {
        let client: UInt64
        let pid: Int32
        let uid: UInt32
        let allowReplacement: Bool
        let notify: SendRight?
        var field: String { "pid=\(pid),uid=\(uid)" }
    }

    private struct Entry {
        var owner: Owner
        var since: UInt64
        var queue: [Owner]
        var path: String
    }

    private struct Watcher {
        let client: UInt64
        let name: String?
        let port: SendRight
    }

    private struct WaitingLookup {
        let client: Client
        let name: String
        let msgid: UInt32
        let timer: PCTimer
    }

    /// Starts serving at `directory/portd.sock`; port sockets go in `directory/ports`.
    init(directory: String) throws {
        self.directory = directory + "/ports"
        socketPath = directory + "/portd.sock"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        let fd = try UnixSocket.makeSocket()
        try UnixSocket.bind(fd, to: UnixSocketAddress(path: socketPath))
        try UnixSocket.setPassCredentials(fd, true)  // accepted sockets inherit it
        try UnixSocket.listen(fd)
        let source = PortSource(descriptor: fd) { [unowned self] s in _ = s.withDescriptor { self.acceptAll($0) } }
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            let loop = PCRunLoop.current
            self.loop = loop
            listener = source
            try! loop.add(source, forMode: .default)
            ready.signal()
            loop.run()
            for c in clients.values { c.source?.invalidate() }
            clients.removeAll()
            for (_, e) in names { unlink(e.path) }
            names.removeAll()
            watchers.removeAll()
            declared.removeAll()
            finished.signal()
        }
        thread.name = "FakeNameServer"
        thread.start()
        ready.wait()
    }

    /// Stops serving and waits for the thread; every client sees its
    /// connection close. Idempotent.
    func stop() {
        guard !stopped.withLock({ s in defer { s = true }; return s }) else { return }
        loop.perform { [self] in
            listener?.invalidate()
            unlink(socketPath)
            loop.stop()
        }
        finished.wait()
    }

    /// Declares a port (as portd.conf would): created now, found by LOOKUP,
    /// claimed with CHECKIN.
    func declare(_ name: String) {
        let done = DispatchSemaphore(value: 0)
        loop.perform { [self] in
            declared[name] = try! makeListeningSocket(name)
            done.signal()
        }
        done.wait()
    }

    // MARK: Connections

    private func acceptAll(_ listening: borrowing OwnedDescriptor) {
        while let fd = try? UnixSocket.accept(listening) {
            let client = Client(id: nextClientID, fd: SharedDescriptor(fd))
            nextClientID += 1
            // Weak: the client holds the source, and its socket closes with
            // the last of the two once the source is invalidated.
            let source = PortSource(sharing: client.fd) { [unowned self, weak client] s in
                guard let client else { return }
                self.serve(client)
            }
            client.source = source
            clients[client.id] = client
            try! loop.add(source, forMode: .default)
        }
    }

    private func serve(_ client: Client) {
        while clients[client.id] != nil {
            let received: MessageTransport.Received
            do {
                received = try client.transport.receive(on: client.fd.descriptor)
            } catch {
                disconnect(client)
                return
            }
            switch received {
            case .wouldBlock: return
            case .closed:
                disconnect(client)
                return
            case .message(let m, let replyExpected):
                guard replyExpected else { continue }  // not a request: ignored
                if let reply = handle(m, from: client) { send(reply, to: client) }
            }
        }
    }

    private func send(_ reply: PCPortMessage, to client: Client) {
        _ = try? client.transport.send(
            reply, on: client.fd.descriptor, replyPort: nil, replyExpected: false, before: .now() + .seconds(5))
    }

    private func disconnect(_ client: Client) {
        clients[client.id] = nil
        client.source?.invalidate()
        watchers.removeAll { $0.client == client.id }
        for w in waitingLookups where w.client === client { w.timer.invalidate() }
        waitingLookups.removeAll { $0.client === client }
        for name in Array(names.keys) {
            guard var e = names[name] else { continue }
            e.queue.removeAll { $0.client == client.id }
            names[name] = e
            if e.owner.client == client.id { dropOwner(name) }
        }
    }

    // MARK: Requests

    private func reply(_ m: PCPortMessage, _ strings: [String], ports: [SharedDescriptor] = []) -> PCPortMessage {
        var components: [PCPortMessage.Component] = strings.prefix(1).map { .data(Array($0.utf8)) }
        components += ports.map { .port(SendRight(sharing: $0)) }
        components += strings.dropFirst().map { .data(Array($0.utf8)) }
        return PCPortMessage(msgid: m.msgid, components: components)
    }

    private func handle(_ m: PCPortMessage, from client: Client) -> PCPortMessage? {
        typealias ID = NameServerProtocol.MessageID
        let args = m.components.compactMap { $0.string }
        if m.msgid != ID.status && m.msgid != ID.list && m.msgid != ID.watch {
            guard let name = args.first else { return reply(m, ["bad-request", "message=a name is needed"]) }
            if let problem = NameServerProtocol.nameProblem(name) {
                refusals += 1
                return reply(m, ["invalid-name", "message=\(problem)"])
            }
        }
        switch m.msgid {
        case ID.status:
            let uptime = (MonotonicInstant.now() - startedAt).nanosecondsClamped / 1_000_000
            return reply(m, [
                "ok", "version=\(PortdVersion.current)", "pid=\(getpid())", "uptime_ms=\(uptime)",
                "names=\(names.count)", "clients=\(clients.count)", "lookups=\(lookups)", "refusals=\(refusals)",
                "declared=\(declared.count)",
            ])
        case ID.register:
            return register(m, args, client)
        case ID.release:
            return release(m, args[0], client)
        case ID.lookup:
            return lookup(m, args, client)
        case ID.watch:
            guard let port = m.replyPort else { return reply(m, ["bad-request", "message=WATCH needs a reply port"]) }
            if let name = args.first, NameServerProtocol.nameProblem(name) != nil {
                return reply(m, ["invalid-name", "message=bad name"])
            }
            watchers.append(Watcher(client: client.id, name: args.first, port: port))
            return reply(m, ["watching"])
        case ID.list:
            return reply(m, ["ok"] + names.keys.sorted().map { n in
                let e = names[n]!
                return "\(n)\t\(e.owner.pid)\t\(e.owner.uid)\t\(e.since)\t\(e.queue.count)"
            })
        case ID.owner:
            guard let e = names[args[0]] else { return reply(m, ["not-found"]) }
            return reply(m, ["ok", "pid=\(e.owner.pid)", "uid=\(e.owner.uid)", "since_ms=\(e.since)"]
                + e.queue.map { "queued=\($0.pid):\($0.uid)" })
        case ID.checkIn:
            guard let fd = declared[args[0]] else { return reply(m, ["not-declared"]) }
            return reply(m, ["checked-in"], ports: [SharedDescriptor(try! Descriptor.duplicate(fd.descriptor))])
        default:
            return reply(m, ["bad-request", "message=unknown msgid \(m.msgid)"])
        }
    }

    private func register(_ m: PCPortMessage, _ args: [String], _ client: Client) -> PCPortMessage {
        let name = args[0]
        let options = Set(args.dropFirst())
        let sender = m.sender!
        let me = Owner(
            client: client.id, pid: sender.pid, uid: sender.uid,
            allowReplacement: options.contains("allow-replacement"), notify: m.replyPort)
        guard var e = names[name] else {
            let fd = try! makeListeningSocket(name)
            names[name] = Entry(owner: me, since: Self.unixMilliseconds(), queue: [], path: path(of: name))
            tell(name, "registered", old: nil, new: me)
            answerWaitingLookups(name)
            return reply(m, ["registered"], ports: [fd])
        }
        if options.contains("replace-existing") && e.owner.allowReplacement && e.owner.client != client.id {
            let old = e.owner
            unlink(e.path)
            let fd = try! makeListeningSocket(name)
            e.owner = me
            e.since = Self.unixMilliseconds()
            names[name] = e
            tell(name, "replaced", old: old, new: me)
            return reply(m, ["registered"], ports: [fd])
        }
        if options.contains("do-not-queue") || e.owner.client == client.id {
            return reply(m, ["already-owned", "pid=\(e.owner.pid)", "uid=\(e.owner.uid)"])
        }
        e.queue.append(me)
        names[name] = e
        return reply(m, ["queued"])
    }

    private func release(_ m: PCPortMessage, _ name: String, _ client: Client) -> PCPortMessage {
        guard var e = names[name] else { return reply(m, ["not-owner"]) }
        if e.owner.client == client.id {
            dropOwner(name)
            return reply(m, ["released"])
        }
        let before = e.queue.count
        e.queue.removeAll { $0.client == client.id }
        names[name] = e
        return reply(m, [e.queue.count < before ? "released" : "not-owner"])
    }

    private func lookup(_ m: PCPortMessage, _ args: [String], _ client: Client) -> PCPortMessage? {
        let name = args[0]
        lookups += 1
        if let found = connect(name) { return found(m.msgid) }
        let waitMS = args.dropFirst().first { $0.hasPrefix("wait_ms=") }.flatMap { Int64($0.dropFirst(8)) } ?? 0
        guard waitMS > 0 else { return reply(m, ["not-found"]) }
        let msgid = m.msgid
        let timer = PCTimer(fireAt: loop.clock.now() + .milliseconds(waitMS)) { [unowned self] t in
            guard let i = waitingLookups.firstIndex(where: { $0.timer === t }) else { return }
            let w = waitingLookups.remove(at: i)
            send(PCPortMessage(msgid: msgid, strings: ["timeout"]), to: w.client)
        }
        waitingLookups.append(WaitingLookup(client: client, name: name, msgid: msgid, timer: timer))
        loop.add(timer, forMode: .default)
        return nil
    }

    /// A "found" reply for `name`, or nil when nobody owns it.
    private func connect(_ name: String) -> ((UInt32) -> PCPortMessage)? {
        // A declared port is always there, owned by the daemon.
        let (path, pid, uid): (String, Int32, UInt32)
        if let e = names[name] {
            (path, pid, uid) = (e.path, e.owner.pid, e.owner.uid)
        } else if declared[name] != nil {
            (path, pid, uid) = (self.path(of: name), getpid(), getuid())
        } else {
            return nil
        }
        guard let made = try? UnixSocket.makeSocket() else { return nil }
        let fd = SharedDescriptor(made)
        // The owner may have closed its receive right while keeping the name: "not-found".
        guard (try? UnixSocket.connect(fd.descriptor, to: UnixSocketAddress(path: path))) != nil else {
            return nil
        }
        return { msgid in
            PCPortMessage(msgid: msgid, components: [
                .data(Array("found".utf8)), .port(SendRight(sharing: fd)),
                .data(Array("pid=\(pid)".utf8)), .data(Array("uid=\(uid)".utf8)),
            ])
        }
    }

    private func answerWaitingLookups(_ name: String) {
        let ready = waitingLookups.filter { $0.name == name }
        waitingLookups.removeAll { $0.name == name }
        for w in ready {
            w.timer.invalidate()
            if let found = connect(name) { send(found(w.msgid), to: w.client) }
        }
    }

    // MARK: Owners

    /// The owner goes: the next queued client that can be told gets the
    /// name; watchers see one "released" with the new owner, if any.
    private func dropOwner(_ name: String) {
        guard var e = names[name] else { return }
        let old = e.owner
        unlink(e.path)
        while !e.queue.isEmpty {
            let next = e.queue.removeFirst()
            guard let notify = next.notify else { continue }
            let fd = try! makeListeningSocket(name)
            let acquired = PCPortMessage(
                msgid: NameServerProtocol.MessageID.nameAcquired,
                components: [.data(Array(name.utf8)), .port(SendRight(sharing: fd))])
            guard (try? notify.send(acquired, timeout: .seconds(5))) == .sent else {
                unlink(e.path)
                continue
            }
            e.owner = next
            e.since = Self.unixMilliseconds()
            names[name] = e
            tell(name, "released", old: old, new: next)
            answerWaitingLookups(name)
            return
        }
        names[name] = nil
        tell(name, "released", old: old, new: nil)
    }

    private func tell(_ name: String, _ event: String, old: Owner?, new: Owner?) {
        let message = PCPortMessage(
            msgid: NameServerProtocol.MessageID.nameOwnerChanged,
            strings: [name, event, old?.field ?? "", new?.field ?? ""])
        watchers.removeAll { w in
            guard w.name == nil || w.name == name else { return false }
            return (try? w.port.send(message, timeout: .seconds(5))) != .sent
        }
    }

    private func path(of name: String) -> String { "\(directory)/\(name)" }

    private func makeListeningSocket(_ name: String) throws -> SharedDescriptor {
        let fd = try UnixSocket.makeSocket()
        unlink(path(of: name))
        try UnixSocket.bind(fd, to: UnixSocketAddress(path: path(of: name)))
        try UnixSocket.listen(fd)
        return SharedDescriptor(fd)
    }

    private static func unixMilliseconds() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }
}
