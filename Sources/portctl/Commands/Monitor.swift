// Monitor: `portctl monitor [NAME...]`: a live, timestamped view of the
// owner changes of each NAME (or of every name) and, for each NAME whose
// owner allows it, of the messages its port delivers (PortMonitor: the
// owner's port copies them to us; portd is not in the data path). One
// line per record, or one JSON object with --json; each carries the time
// portctl received it.
//
// Messages: for each NAME, portctl looks it up and subscribes to its port
// at start and again whenever the name gets a new owner. A port that
// refuses (not monitorable, another uid, too many monitors) ends the run
// with 77: monitor shows a port's messages only where its owner allows it.
// Copies the owner dropped because we fell behind are reported as a
// "missed" record before the next copy that arrives. The reply the port
// sends for a request comes as a copy too, naming its request's sequence:
// it is shown as a "reply" record with the requester's pid, uid and gid
// (remembered from the request's copy), when its request was shown.
//
// --match KEY=VALUE (MonitorMatch) filters messages and replies (owner
// changes are always shown): msgid, the sender's pid and uid (for a reply,
// its requester's), direction in (messages to the port) or out (its
// replies).
//
// Exit statuses as watch's: --count N exits 0 after N records (owner
// changes, messages and replies); --timeout S exits 75 when S seconds pass
// without one; portd gone, 74; the watch of owner changes fell behind, 75.

import ArgumentParser
import PortCore
import PortWire

struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Show owner changes of names and the messages their owners allow monitoring, with timestamps.",
        discussion: """
            Each record starts with the UTC time portctl received it. Owner changes print as watch prints \
            them. For each NAME given, the messages its port delivers print as listen prints them, after a \
            heading (msgid, sender, request, how many descriptors it carried), when the port's owner made \
            it monitorable (portctl listen --monitorable, PCPort.allowsMonitoring) and portctl runs as the \
            owner's uid or as root; otherwise portctl exits with 77. Without NAME, only owner changes of \
            every name are shown. \
            The owner's port copies each message to the monitor and never waits for it: copies that do not \
            fit in a slow monitor's queue are dropped, and a "missed" record says how many as soon as the \
            monitor has room again. Descriptors are never passed to the monitor, and a copy carries \
            at most 64 KiB of a message's data; --max-bytes limits what is shown of each component. \
            --timeout bounds the wait for each record (no bound without it).

            The reply the port sends for a request, when its handler returns, is shown after the \
            request as "reply NAME msgid=N to pid=... (request #SEQ)" (JSON: event "reply", with \
            "answers", the request's "sequence"); a reply sent later through a reply right the \
            handler kept is not copied. --match KEY=VALUE shows only the messages and replies that \
            match (owner changes are always shown): msgid=N, pid=P or uid=U of the sender (for a \
            reply, of its request), direction=in (messages to the port) or direction=out (its \
            replies, to the requests the other keys match). Keys given several times match any of \
            their values; different keys must all match.

            \(ExitStatus.verbHelpText)
            """
    )

    @Argument(help: "The names to monitor (owner changes of every name, and no messages, when omitted).")
    var names: [String] = []
    @Option(parsing: .unconditional, help: ArgumentHelp("Exit (status 0) after N records (owner changes, messages and replies).", valueName: "n"))
    var count: Int?
    @Option(parsing: .unconditional, help: MessageRendering.maxBytesHelp)
    var maxBytes: Int?
    @Option(
        name: .customLong("match"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "Show only the messages and replies that match: msgid=N, pid=P, uid=U (the sender's), direction=in|out.",
            valueName: "key=value"))
    var match: [String] = []
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        for name in names { try NameArgument.check(name) }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        try MessageRendering.check(maxBytes: maxBytes)
        do {
            _ = try MonitorMatch(match)
        } catch {
            throw ValidationError(error.description)
        }
        try connection.check()
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let server = try connection.connect()
        let loop = PCRunLoop.current
        let filter: MonitorMatch
        do {
            filter = try MonitorMatch(match)
        } catch {
            throw Failure(.usage, error.description)  // validate() refused it already
        }
        let state = MonitorState(
            output: output, limit: MessageRendering.limit(maxBytes, json: output.json), count: count,
            idle: connection.explicitTimeout, filter: filter)
        var watches: [NameWatch] = []
        defer { for w in watches { w.cancel() } }
        let names = self.names.enumerated().filter { self.names.firstIndex(of: $0.element) == $0.offset }.map(\.element)
        for name in names.isEmpty ? [nil] : names.map(Optional.some) {
            do throws(NameServerError) {
                watches.append(
                    try server.watch(name, loop: loop, onError: { error in state.fail(Failure(error), loop) }) { change in
                        state.ownerChanged(change, monitoring: !names.isEmpty, loop)
                    })
            } catch {
                throw Failure(error)
            }
        }
        do {
            try server.onConnectionLoss(in: loop, forMode: .default) {
                state.lost = true
                loop.stop()
            }
        } catch {
            throw Failure(error)
        }
        defer { state.cancelAll() }
        // Watching first: an owner that comes after the lookup below is
        // seen as a change, and subscribed to then.
        for name in names { try subscribe(name, on: server, state: state, loop: loop, owner: nil) }
        output.notice(names.isEmpty ? "monitoring every name" : "monitoring \(names.joined(separator: " "))")
        state.seen(loop, counting: false)
        while true {
            if try streamEnds(loop, failure: state.failure, done: state.done, lost: state.lost) { return }
            for (name, owner) in state.takeNewOwners() {
                try subscribe(name, on: server, state: state, loop: loop, owner: owner)
            }
            let r = loop.runInMode(.default, before: state.deadline, returnAfterSourceHandled: true)
            if r == .timedOut && MonotonicInstant.now() >= state.deadline && !state.done {
                throw Failure(.timedOut, "nothing happened within \(connection.timeoutText)")
            }
        }
    }

    /// Looks `name` up and subscribes to its port's messages, unless the
    /// subscription in place is to `owner` already. A port that refuses
    /// ends the run (77); a name with no owner now is subscribed to when
    /// it gets one.
    private func subscribe(
        _ name: String, on server: PortNameServer, state: MonitorState, loop: PCRunLoop, owner: NameOwner.Process?
    ) throws(Failure) {
        if let owner, state.isSubscribed(name, to: owner) { return }
        let found: (SendRight, NameOwner.Process)
        do {
            switch try server.resolve(name) {
            case .found(let right, let owner): found = (right, owner)
            case .notFound, .timedOut: return
            }
        } catch {
            throw Failure(error)
        }
        let (right, current) = found
        defer { right.invalidate() }  // the copies come to a port of ours
        if state.isSubscribed(name, to: current) { return }
        let outcome: PortMonitorSubscription.Outcome
        do {
            outcome = try PortMonitorSubscription.subscribe(to: right, loop: loop, timeout: connection.exchangeTimeout) {
                event in
                state.monitored(event, of: name, owner: current, loop)
            }
        } catch {
            throw Failure(error)
        }
        switch outcome {
        case .monitoring(let subscription):
            state.subscribed(name, to: current, subscription)
            output.notice("monitoring the messages of \(name) (owner pid \(current.pid))")
        case .declined(let answer, let reason):
            let why = answer == .notMonitorable || answer == nil ? "its owner does not allow monitoring" : reason
            throw Failure(.permissionDenied, "cannot monitor the messages of \(name) (pid \(current.pid)): \(why)")
        case .portGone:
            return  // released meanwhile: its owner change says so
        case .timedOut:
            throw Failure(.timedOut, "the port of \(name) did not answer within \(connection.timeoutText)")
        }
    }

    // MARK: Records

    static func time(_ ms: UInt64) -> [(String, JSONObject.Value)] {
        [("time", .string(Timestamp.utc(milliseconds: ms))), ("time_ms", .unsigned(ms))]
    }

    static func text(_ change: NameOwnerChange, at ms: UInt64) -> String {
        "\(Timestamp.utc(milliseconds: ms)) \(Watch.text(change))"
    }

    static func json(_ change: NameOwnerChange, at ms: UInt64) -> String {
        func owner(_ p: NameOwner.Process?) -> JSONObject.Value {
            guard let p else { return .null }
            return .object(JSONObject([("pid", .integer(Int64(p.pid))), ("uid", .unsigned(UInt64(p.uid)))]))
        }
        return JSONObject(
            time(ms) + [
                ("event", .string(change.event.description)), ("name", .string(change.name)),
                ("old", owner(change.oldOwner)), ("new", owner(change.newOwner)),
            ]
        ).text
    }

    static func missedText(_ name: String, _ missed: UInt64, at ms: UInt64) -> String {
        "\(Timestamp.utc(milliseconds: ms)) missed \(TextEscape.escape(name)) \(missed) message\(missed == 1 ? "" : "s") (the monitor fell behind)"
    }

    static func missedJSON(_ name: String, _ missed: UInt64, at ms: UInt64) -> String {
        JSONObject(time(ms) + [("event", .string("missed")), ("name", .string(name)), ("missed", .unsigned(missed))]).text
    }

    static func text(_ m: MonitoredMessage, of name: String, at ms: UInt64, limit: Int) -> String {
        var line = "\(Timestamp.utc(milliseconds: ms)) message \(TextEscape.escape(name)) msgid=\(m.msgid)"
        if let s = m.sender { line += " from pid=\(s.pid) uid=\(s.uid) gid=\(s.gid)" }
        if let o = m.origin { line += " origin " + Array(o.text.utf8).withUnsafeBytes { TextEscape.quoted($0) } }
        if m.isRequest { line += " (request #\(m.sequence))" }
        if m.hasReplyPort { line += " (reply port)" }
        if m.descriptorCount > 0 { line += " (\(m.descriptorCount) descriptor\(m.descriptorCount == 1 ? "" : "s") not shown)" }
        return ([line] + componentLines(m, limit: limit)).joined(separator: "\n")
    }

    /// One line per component of `m`, as listen prints them.
    static func componentLines(_ m: MonitoredMessage, limit: Int) -> [String] {
        m.components.map { c in
            switch c.kind {
            case .port:
                return "  <port>"
            case .data, .sharedMemory:
                return "  "
                    + c.bytes.withUnsafeBytes {
                        MessageRendering.text(ofBytes: $0, limit: limit, length: Int(clamping: c.length))
                    }
            }
        }
    }

    /// The components of `m` as JSON values, as listen prints them.
    static func componentValues(_ m: MonitoredMessage, limit: Int) -> [JSONObject.Value] {
        m.components.map { c in
            switch c.kind {
            case .port: return .object(JSONObject([("kind", .string("port"))]))
            case .data, .sharedMemory:
                return .object(
                    c.bytes.withUnsafeBytes {
                        MessageRendering.json(ofBytes: $0, limit: limit, length: Int(clamping: c.length))
                    })
            }
        }
    }

    static func json(_ m: MonitoredMessage, of name: String, at ms: UInt64, limit: Int) -> String {
        let sender = m.sender
        return JSONObject(
            time(ms) + [
                ("event", .string("message")), ("name", .string(name)), ("msgid", .unsigned(UInt64(m.msgid))),
                ("pid", sender.map { .integer(Int64($0.pid)) } ?? .null),
                ("uid", sender.map { .unsigned(UInt64($0.uid)) } ?? .null),
                ("gid", sender.map { .unsigned(UInt64($0.gid)) } ?? .null),
                ("origin", m.origin.map { .string($0.text) } ?? .null),
                ("request", .bool(m.isRequest)), ("reply_port", .bool(m.hasReplyPort)),
                ("descriptors", .integer(Int64(m.descriptorCount))), ("sequence", .unsigned(m.sequence)),
                ("delivered_ms", .unsigned(m.deliveredAt)),
                ("components", .array(componentValues(m, limit: limit))),
            ]
        ).text
    }
}

extension Monitor {
    /// A reply the port sent: `requester` sent its request (nil when its
    /// copy was missed).
    static func replyText(
        _ m: MonitoredMessage, of name: String, to requester: Credentials?, at ms: UInt64, limit: Int
    ) -> String {
        var line = "\(Timestamp.utc(milliseconds: ms)) reply \(TextEscape.escape(name)) msgid=\(m.msgid)"
        if let r = requester { line += " to pid=\(r.pid) uid=\(r.uid) gid=\(r.gid)" }
        line += " (request #\(m.sequence))"
        if m.descriptorCount > 0 { line += " (\(m.descriptorCount) descriptor\(m.descriptorCount == 1 ? "" : "s") not shown)" }
        return ([line] + componentLines(m, limit: limit)).joined(separator: "\n")
    }

    static func replyJSON(
        _ m: MonitoredMessage, of name: String, to requester: Credentials?, at ms: UInt64, limit: Int
    ) -> String {
        JSONObject(
            time(ms) + [
                ("event", .string("reply")), ("name", .string(name)), ("msgid", .unsigned(UInt64(m.msgid))),
                ("answers", .unsigned(m.sequence)),
                ("pid", requester.map { .integer(Int64($0.pid)) } ?? .null),
                ("uid", requester.map { .unsigned(UInt64($0.uid)) } ?? .null),
                ("gid", requester.map { .unsigned(UInt64($0.gid)) } ?? .null),
                ("descriptors", .integer(Int64(m.descriptorCount))), ("sent_ms", .unsigned(m.deliveredAt)),
                ("components", .array(componentValues(m, limit: limit))),
            ]
        ).text
    }
}

/// `portctl monitor --match KEY=VALUE ...`: which messages and replies are
/// shown. Values of one key: any of them; different keys: all of them.
struct MonitorMatch: Equatable {
    enum Direction: String { case `in`, out }
    var msgids: Set<UInt32> = []
    var pids: Set<Int32> = []
    var uids: Set<UInt32> = []
    var directions: Set<Direction> = []

    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    init(_ rules: [String] = []) throws(Problem) {
        for rule in rules {
            guard let equals = rule.firstIndex(of: "=") else {
                throw Problem(description: "--match '\(TextEscape.escape(rule))': give KEY=VALUE, KEY one of msgid, pid, uid, direction")
            }
            let key = rule[..<equals]
            let value = String(rule[rule.index(after: equals)...])
            func bad(_ what: String) -> Problem {
                Problem(description: "--match \(key)='\(TextEscape.escape(value))': \(what)")
            }
            switch key {
            case "msgid":
                guard let id = MessageID.parse(value) else { throw bad("give a message ID (decimal or 0x hexadecimal)") }
                msgids.insert(id)
            case "pid":
                guard let pid = Int32(value), pid > 0 else { throw bad("give a process ID") }
                pids.insert(pid)
            case "uid":
                guard let uid = UInt32(value) else { throw bad("give a numeric user ID") }
                uids.insert(uid)
            case "direction":
                guard let direction = Direction(rawValue: value) else { throw bad("give in or out") }
                directions.insert(direction)
            default:
                throw Problem(description: "--match: unknown key '\(TextEscape.escape(String(key)))' (the keys are msgid, pid, uid, direction)")
            }
        }
    }

    /// Whether a message delivered to the port (or, for a reply, its
    /// request) matches msgid, pid and uid.
    func matches(msgid: UInt32, sender: Credentials?) -> Bool {
        (msgids.isEmpty || msgids.contains(msgid))
            && (pids.isEmpty || sender.map { pids.contains($0.pid) } == true)
            && (uids.isEmpty || sender.map { uids.contains($0.uid) } == true)
    }

    func shows(_ direction: Direction) -> Bool { directions.isEmpty || directions.contains(direction) }

    /// Whether msgid, pid or uid select some messages only.
    var selectsMessages: Bool { !msgids.isEmpty || !pids.isEmpty || !uids.isEmpty }
}

/// What the callbacks and the loop share; only touched on the loop's thread.
private final class MonitorState: @unchecked Sendable {
    // Safe to share: every field is read and written on the main thread's
    // run loop only (the watch ports and the monitor ports are scheduled
    // there, and the loop itself runs there).
    let output: OutputOptions
    let limit: Int
    let count: Int?
    let idle: Duration?
    var failure: Failure?
    var done = false
    /// portd closed the connection.
    var lost = false
    var seenCount = 0
    var deadline = MonotonicInstant.distantFuture
    /// The subscription to each name's messages, and to which owner.
    private var subscriptions: [String: (owner: NameOwner.Process, subscription: PortMonitorSubscription)] = [:]
    /// Names that got a new owner, to subscribe to (outside the callbacks).
    private var newOwners: [(String, NameOwner.Process)] = []
    let filter: MonitorMatch
    /// The requests of each name that matched, by sequence, awaiting their
    /// reply: who sent each (at most `maxPending` a name, the oldest
    /// forgotten first).
    private var pending: [String: [UInt64: Credentials?]] = [:]
    static let maxPending = 4096

    init(output: OutputOptions, limit: Int, count: Int?, idle: Duration?, filter: MonitorMatch) {
        self.output = output
        self.limit = limit
        self.count = count
        self.idle = idle
        self.filter = filter
    }

    func fail(_ f: Failure, _ loop: PCRunLoop) {
        if failure == nil { failure = f }
        loop.stop()
    }

    func seen(_ loop: PCRunLoop, counting: Bool = true) {
        if counting { seenCount += 1 }
        if let idle { deadline = .now() + idle }
        if let count, seenCount >= count {
            done = true
            loop.stop()
        }
    }

    func emit(_ line: String, _ loop: PCRunLoop) -> Bool {
        guard !done && failure == nil else { return false }
        do throws(Failure) {
            try output.emit(line)
        } catch {
            fail(error, loop)
            return false
        }
        return true
    }

    func ownerChanged(_ change: NameOwnerChange, monitoring: Bool, _ loop: PCRunLoop) {
        let now = WallClock.unixMilliseconds()
        let json = output.json
        guard emit(json ? Monitor.json(change, at: now) : Monitor.text(change, at: now), loop) else { return }
        if monitoring, let owner = change.newOwner {
            // Subscribed to by the loop's caller, outside this callback.
            newOwners.append((change.name, owner))
        }
        seen(loop)
    }

    func monitored(_ event: PortMonitorSubscription.Event, of name: String, owner: NameOwner.Process, _ loop: PCRunLoop) {
        let now = WallClock.unixMilliseconds()
        let json = output.json
        switch event {
        case .message(let m):
            if m.missed > 0 {
                guard emit(json ? Monitor.missedJSON(name, m.missed, at: now) : Monitor.missedText(name, m.missed, at: now), loop)
                else { return }
            }
            if m.isReply {
                guard let entry = pending[name]?.removeValue(forKey: m.sequence) else {
                    // Its request did not match, or its copy was missed.
                    if filter.selectsMessages || !filter.shows(.out) { return }
                    guard emitReply(m, of: name, to: nil, at: now, loop) else { return }
                    seen(loop)
                    return
                }
                guard filter.shows(.out), emitReply(m, of: name, to: entry, at: now, loop) else { return }
                seen(loop)
                return
            }
            guard filter.matches(msgid: m.msgid, sender: m.sender) else { return }
            if m.isRequest {
                var waiting = pending[name, default: [:]]
                if waiting.count >= Self.maxPending, let oldest = waiting.keys.min() { waiting[oldest] = nil }
                waiting[m.sequence] = m.sender
                pending[name] = waiting
            }
            guard filter.shows(.in) else { return }
            guard emit(json ? Monitor.json(m, of: name, at: now, limit: limit) : Monitor.text(m, of: name, at: now, limit: limit), loop)
            else { return }
            seen(loop)
        case .missed(let missed):
            guard missed > 0 else { return }
            _ = emit(json ? Monitor.missedJSON(name, missed, at: now) : Monitor.missedText(name, missed, at: now), loop)
        case .malformed:
            output.notice("a copy from the port of \(name) was not well formed; skipped")
        case .ended:
            if let current = subscriptions[name], current.owner == owner, !current.subscription.isActive {
                subscriptions[name] = nil
            }
            if !done && failure == nil { output.notice("the messages of \(name) (pid \(owner.pid)) are no longer monitored") }
        }
    }

    private func emitReply(
        _ m: MonitoredMessage, of name: String, to requester: Credentials?, at now: UInt64, _ loop: PCRunLoop
    ) -> Bool {
        emit(
            output.json
                ? Monitor.replyJSON(m, of: name, to: requester, at: now, limit: limit)
                : Monitor.replyText(m, of: name, to: requester, at: now, limit: limit), loop)
    }

    func isSubscribed(_ name: String, to owner: NameOwner.Process) -> Bool {
        guard let current = subscriptions[name] else { return false }
        return current.owner == owner && current.subscription.isActive
    }

    func subscribed(_ name: String, to owner: NameOwner.Process, _ subscription: PortMonitorSubscription) {
        subscriptions[name]?.subscription.cancel()
        subscriptions[name] = (owner, subscription)
        pending[name] = nil  // a new subscription counts its sequences anew
    }

    func takeNewOwners() -> [(String, NameOwner.Process)] {
        defer { newOwners.removeAll() }
        return newOwners
    }

    func cancelAll() {
        for (_, s) in subscriptions { s.subscription.cancel() }
        subscriptions.removeAll()
    }
}
