// NameServerVocabularyRoundTripTests: what portd builds with the protocol's
// vocabulary (PortNameProtocol) is what the client reads back: every reply
// constructor, in the exact components the protocol fixes, and every
// notification, through the one adapter to port messages. Pure values,
// ports as plain tags, except the adapter's send rights.

import Testing

import PortCore
@testable import PortNameClient

private typealias Reply = NameServerReply<String>

/// The components as the wire has them, ports as "<tag>".
private func texts(_ components: [NameServerComponent<String>]) -> [String] {
    components.map {
        switch $0 {
        case .text(let s): s
        case .port(let p): "<\(p)>"
        case .binary: "?"
        }
    }
}

/// Parses what `reply` sends.
private func parsed(_ reply: Reply) throws -> Reply {
    try Reply(msgid: reply.msgid, components: reply.components)
}

@Suite struct NameServerVocabularyRoundTripTests {
    let owner = NameOwner.Process(pid: 12, uid: 1000, client: 3)

    @Test func repliesHaveTheProtocolsComponents() {
        #expect(texts(Reply.queued(serial: 7, name: "svc", place: 2).components) == ["serial=7", "name=svc", "result=queued", "place=2"])
        #expect(Reply.queued(serial: 7, name: "svc", place: 2).msgid == NameServerProtocol.MessageID.reply)
        let notFound = Reply.error(serial: 7, .notFound, "no port")
        #expect(texts(notFound.components) == ["serial=7", "error=not-found", "message=no port"])
        #expect(notFound.msgid == NameServerProtocol.MessageID.error)
        #expect(texts(Reply.registered(serial: 1, name: "svc", listening: "l").components) == ["serial=1", "name=svc", "result=registered", "<l>"])
        #expect(
            texts(Reply.alreadyOwned(serial: 1, name: "svc", by: owner).components)
                == ["serial=1", "error=already-owned", "message=svc is owned by pid 12 (uid 1000)", "owner=12:1000:3"])
        #expect(texts(Reply.found(serial: 2, name: "svc", owner: owner, connection: "c").components) == ["serial=2", "name=svc", "owner=12:1000:3", "<c>"])
        #expect(texts(Reply.checkedIn(serial: 2, name: "svc", listening: "l").components) == ["serial=2", "name=svc", "<l>"])
        #expect(texts(Reply.done(serial: 2, name: nil).components) == ["serial=2"])
        let queued = [NameOwner.Process(pid: 13, uid: 1001, client: 4), NameOwner.Process(pid: 14, uid: 1002, client: 5)]
        #expect(
            texts(Reply.owner(serial: 3, NameOwner(name: "svc", owner: owner, sinceMilliseconds: 5, queued: queued, queueLength: 9), more: true).components)
                == ["serial=3", "name=svc", "owner=12:1000:3", "since_ms=5", "queue_length=9", "more=1", "queued=13:1001:4", "queued=14:1002:5"])
        let entry = NameEntry(name: "a", owner: owner, sinceMilliseconds: 3, queuedCount: 0)
        let declared = NameEntry(name: "d", owner: .init(pid: 1, uid: 0), sinceMilliseconds: 4, queuedCount: 0, isDeclared: true, checkedInPID: 77)
        #expect(
            texts(Reply.list(serial: 4, entries: [entry, declared], more: true).components)
                == ["serial=4", "more=1", "name=a", "owner=12:1000:3", "since_ms=3", "queue_length=0",
                    "name=d", "owner=1:0:0", "since_ms=4", "queue_length=0", "declared=1", "checked_in=77"])
        #expect(texts(Reply.list(serial: 4, entries: [], more: false).components) == ["serial=4", "more=0"])
        let status = NameServerStatus(
            version: "0.1.0", pid: 42, uptimeMilliseconds: 7, names: 1, clients: 2, lookups: 3, refusals: 4, declared: 5)
        #expect(
            texts(Reply.status(serial: 5, status).components)
                == [
                    "serial=5", "version=0.1.0", "protocol=1.0", "pid=42", "uptime_ms=7", "names=1", "clients=2", "lookups=3",
                    "refusals=4", "declared=5",
                ])
    }

    @Test func whatPortdBuildsTheClientReads() throws {
        let found = try parsed(.found(serial: 9, name: "svc", owner: owner, connection: "c"))
        #expect(!found.isError && found.serial == 9 && found.ports == ["c"])
        #expect(try found.record.owner("owner", in: "test") == owner)
        let error = try parsed(.error(serial: 9, .denied, "no"))
        #expect(error.errorWord == .denied && error.error?.message == "no")
        if case .denied("no") = error.failure {} else { Issue.record("\(String(describing: error.failure))") }
        let reported = NameOwner(name: "svc", owner: owner, sinceMilliseconds: 5, queued: [.init(pid: 1, uid: 2, client: 8)])
        #expect(try NameOwner(reply: parsed(.owner(serial: 1, reported, more: false))) == reported)
        let entries = [
            NameEntry(name: "a", owner: owner, sinceMilliseconds: 1, queuedCount: 0),
            NameEntry(name: "b", owner: owner, sinceMilliseconds: 2, queuedCount: 3, isDeclared: true, checkedInPID: 5),
        ]
        let page = try parsed(.list(serial: 1, entries: entries, more: true)).listPage()
        #expect(page.entries == entries && page.more)
        let status = NameServerStatus(
            version: "0.1.0", pid: 42, uptimeMilliseconds: 7, names: 1, clients: 2, lookups: 3, refusals: 4, declared: 5)
        #expect(try NameServerStatus(parsed(.status(serial: 1, status))) == status)
    }

    @Test func malformedRepliesAreViolations() {
        #expect(throws: NameServerProtocol.Violation.self) { try Reply(msgid: NameServerProtocol.MessageID.reply, components: [.text("name=x")]) }
        #expect(throws: NameServerProtocol.Violation.self) { try Reply(msgid: NameServerProtocol.MessageID.reply, components: [.text("serial=1"), .text("no equals")]) }
        #expect(throws: NameServerProtocol.Violation.self) { try Reply(msgid: NameServerProtocol.MessageID.error, components: [.text("serial=1")]) }
        #expect(throws: NameServerProtocol.Violation.self) { try Reply(msgid: 1, components: [.text("serial=1")]) }
        #expect(throws: NameServerProtocol.Violation.self) { try Reply(msgid: NameServerProtocol.MessageID.reply, components: [.text("serial=1"), .port("p"), .text("name=x")]) }
        #expect(throws: NameServerProtocol.Violation.self) { try Reply(msgid: NameServerProtocol.MessageID.reply, components: [.text("serial=1"), .text("Name=x")]) }
    }

    @Test func theNameRuleAndItsTwoWordings() {
        #expect(NameServerProtocol.nameProblem(of: "ok.name") == nil)
        #expect(NameServerProtocol.nameProblem(of: "") == .empty)
        #expect(NameServerProtocol.nameProblem(of: String(repeating: "x", count: 201)) == .tooLong(bytes: 201))
        #expect(NameServerProtocol.nameProblem(of: ".x") == .leadingDot)
        #expect(NameServerProtocol.nameProblem(of: "a/b") == .forbiddenByte(UInt8(ascii: "/"), at: 1))
        #expect(NameServerProtocol.nameProblem(".x") == "a name cannot start with a dot", "the client's words")
        #expect(NameServerProtocol.NameProblem.leadingDot.description == "a name must not start with a dot", "portd's")
    }

    @Test func optionWordsBothWays() {
        for option in [RegistrationOptions.allowReplacement, .replaceExisting, .doNotQueue] {
            #expect(option.words.count == 1)
            #expect(RegistrationOptions(word: option.words[0]) == option)
        }
        #expect(RegistrationOptions(word: "queue-please") == nil)
    }

    @Test func notificationsThroughTheAdapter() throws {
        let right = try PCPort().makeSendRight()
        let change = NameOwnerChange(
            name: "svc", event: .known(.replaced), oldOwner: owner, newOwner: .init(pid: 13, uid: 1000, client: 4))
        let changed = PCPortMessage(notification: .ownerChanged(serial: 6, change))
        #expect(changed.msgid == NameServerProtocol.MessageID.nameOwnerChanged)
        #expect(changed.components.map(\.string) == ["serial=6", "name=svc", "event=replaced", "old=12:1000:3", "new=13:1000:4"])
        guard case .ownerChanged(6, let read) = try NameServerNotification(changed) else {
            Issue.record("not NAME_OWNER_CHANGED")
            return
        }
        #expect(read == change)
        let registered = PCPortMessage(notification: .ownerChanged(serial: 6, NameOwnerChange(name: "svc", event: .known(.registered), oldOwner: nil, newOwner: owner)))
        #expect(registered.components.map(\.string) == ["serial=6", "name=svc", "event=registered", "new=12:1000:3"])

        let acquired = PCPortMessage(notification: .acquired(serial: 2, name: "svc", listening: right))
        #expect(acquired.msgid == NameServerProtocol.MessageID.nameAcquired)
        guard case .acquired(2, "svc", let port) = try NameServerNotification(acquired) else {
            Issue.record("not NAME_ACQUIRED")
            return
        }
        #expect(port === right)

        let lost = PCPortMessage(notification: .lost(serial: 2, name: "svc", to: owner))
        #expect(lost.msgid == NameServerProtocol.MessageID.nameLost)
        #expect(lost.components.map(\.string) == ["serial=2", "name=svc", "new=12:1000:3"])
        guard case .lost(2, "svc", let to) = try NameServerNotification(lost) else {
            Issue.record("not NAME_LOST")
            return
        }
        #expect(to == owner)

        let overflow = PCPortMessage(notification: .watchOverflow(serial: 3, missed: 40))
        #expect(overflow.components.map(\.string) == ["serial=3", "missed=40"])

        let reply = PCPortMessage(reply: .registered(serial: 9, name: "svc", listening: right))
        #expect(reply.msgid == NameServerProtocol.MessageID.reply)
        #expect(try NameServerReply(reply).ports.first === right)
        #expect(throws: NameServerError.self) { try NameServerNotification(reply) }
    }

    /// The adapter writes each field's bytes directly (not through its
    /// "KEY=VALUE" text): the same components, byte for byte, as the
    /// vocabulary's own, non-ASCII and an empty value included.
    @Test func theAdapterWritesTheVocabularysComponentsByteForByte() throws {
        let right = try PCPort().makeSendRight()
        let owner = NameOwner.Process(pid: 12, uid: 1000, client: 3)
        let replies: [NameServerReply<SendRight>] = [
            .registered(serial: 9, name: "svc", listening: right),
            .found(serial: 4, name: "org.example.échø", owner: owner, connection: right),
            .error(serial: 5, .notFound, "no port is registered as «x»"),
            .success(serial: 6, [NameServerField("empty", "")]),
        ]
        for r in replies {
            let message = PCPortMessage(reply: r)
            #expect(message.msgid == r.msgid)
            let expected: [[UInt8]?] = r.components.map { if case .text(let t) = $0 { Array(t.utf8) } else { nil } }
            let written: [[UInt8]?] = message.components.map { if case .data(let d) = $0 { d } else { nil } }
            #expect(written == expected)
        }
        let request = PCPortMessage(request: NameServerProtocol.MessageID.lookup, serial: 7, [NameServerField("name", "ü.x")])
        #expect(request.components.map(\.string) == ["serial=7", "name=ü.x"])
    }
}
