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
    try Reply(parsing: reply.components, msgid: 1)
}

@Suite struct NameServerVocabularyRoundTripTests {
    let owner = NameOwner.Process(pid: 12, uid: 1000)

    @Test func repliesHaveTheProtocolsComponents() {
        #expect(texts(Reply.word(.queued).components) == ["queued"])
        #expect(texts(Reply.error(.notFound, "no port").components) == ["not-found", "message=no port"])
        #expect(texts(Reply.registered(listening: "l").components) == ["registered", "<l>"])
        #expect(texts(Reply.alreadyOwned(by: owner).components) == ["already-owned", "pid=12", "uid=1000"])
        #expect(texts(Reply.found("c", owner: owner).components) == ["found", "<c>", "pid=12", "uid=1000"])
        #expect(texts(Reply.checkedIn(listening: "l").components) == ["checked-in", "<l>"])
        let queued = [NameOwner.Process(pid: 13, uid: 1001), NameOwner.Process(pid: 14, uid: 1002)]
        #expect(
            texts(Reply.owner(NameOwner(name: "svc", owner: owner, sinceMilliseconds: 5, queued: queued)).components)
                == ["ok", "pid=12", "uid=1000", "since_ms=5", "queued=13:1001", "queued=14:1002"])
        #expect(texts(Reply.list(lines: ["a\t1\t2\t3\t0"], more: true).components) == ["ok", "a\t1\t2\t3\t0", "more"])
        #expect(texts(Reply.list(lines: [], more: false).components) == ["ok"])
        let status = NameServerStatus(
            version: "0.1.0", pid: 42, uptimeMilliseconds: 7, names: 1, clients: 2, lookups: 3, refusals: 4, declared: 5)
        #expect(
            texts(Reply.status(status).components)
                == [
                    "ok", "version=0.1.0", "pid=42", "uptime_ms=7", "names=1", "clients=2", "lookups=3", "refusals=4",
                    "declared=5",
                ])
    }

    @Test func whatPortdBuildsTheClientReads() throws {
        let found = try parsed(.found("c", owner: owner))
        #expect(found.replyWord == .found && found.ports == ["c"])
        #expect(try found.process() == owner)
        let error = try parsed(.error(.denied, "no"))
        #expect(error.error?.word == .denied && error.error?.message == "no")
        if case .denied("no") = error.failure {} else { Issue.record("\(String(describing: error.failure))") }
        let reported = NameOwner(name: "svc", owner: owner, sinceMilliseconds: 5, queued: [.init(pid: 1, uid: 2)])
        #expect(try NameOwner(name: "svc", reply: parsed(.owner(reported))) == reported)
        let entries = [
            NameEntry(name: "a", owner: owner, sinceMilliseconds: 1, queuedCount: 0),
            NameEntry(name: "b", owner: owner, sinceMilliseconds: 2, queuedCount: 3),
        ]
        let page = try parsed(.list(lines: entries.map(\.listLine), more: true)).listPage()
        #expect(page.entries == entries && page.more)
        let status = NameServerStatus(
            version: "0.1.0", pid: 42, uptimeMilliseconds: 7, names: 1, clients: 2, lookups: 3, refusals: 4, declared: 5)
        #expect(try NameServerStatus(parsed(.status(status))) == status)
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
        let change = NameOwnerChange(name: "svc", event: .known(.replaced), oldOwner: owner, newOwner: .init(pid: 13, uid: 1000))
        let changed = PCPortMessage(notification: .ownerChanged(change))
        #expect(changed.msgid == NameServerProtocol.MessageID.nameOwnerChanged)
        #expect(changed.components.map(\.string) == ["svc", "replaced", "pid=12,uid=1000", "pid=13,uid=1000"])
        #expect(try NameOwnerChange(changed) == change)

        let acquired = PCPortMessage(notification: .acquired(name: "svc", listening: right))
        #expect(acquired.msgid == NameServerProtocol.MessageID.nameAcquired)
        guard case .acquired("svc", let port) = try NameServerNotification(msgid: acquired.msgid, components: acquired.nameServerComponents)
        else {
            Issue.record("not NAME_ACQUIRED")
            return
        }
        #expect(port === right)

        let lost = PCPortMessage(notification: .lost(name: "svc", to: owner))
        #expect(lost.msgid == NameServerProtocol.MessageID.nameLost)
        #expect(lost.components.map(\.string) == ["svc", "pid=12", "uid=1000"])
        guard case .lost("svc", let to) = try NameServerNotification(msgid: lost.msgid, components: lost.nameServerComponents)
        else {
            Issue.record("not NAME_LOST")
            return
        }
        #expect(to == owner)

        let reply = PCPortMessage(msgid: 9, reply: .registered(listening: right))
        #expect(reply.msgid == 9)
        #expect(try NameServerReply(reply).ports.first === right)
        #expect(throws: NameServerProtocol.Violation.self) {
            try NameServerNotification(msgid: 1, components: reply.nameServerComponents)
        }
    }
}
