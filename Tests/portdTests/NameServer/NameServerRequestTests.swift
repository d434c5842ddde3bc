// NameServerRequestTests: parsing requests from message components (every
// msgid, its counts and words, names, sizes, kinds) and the shape of the
// messages portd sends (errors, NAME_OWNER_CHANGED, NAME_ACQUIRED).

import Testing

import PortCore
@testable import PortDaemon

private typealias ID = NameServerProtocol.MessageID

private func parse(
    _ msgid: UInt32, _ words: [String], replyPort: Bool = false, maximumBytes: Int = 4096
) -> Result<NameServerRequest, NameServerRequest.Refusal> {
    NameServerRequest.parse(
        msgid: msgid, components: words.map { .data(Array($0.utf8)) }, hasReplyPort: replyPort,
        maximumBytes: maximumBytes)
}

private func name(_ s: String) -> PortName { try! PortName(validating: s) }

private func isBadRequest(_ r: Result<NameServerRequest, NameServerRequest.Refusal>) -> Bool {
    if case .failure(.badRequest) = r { return true }
    return false
}

@Suite struct NameServerRequestTests {
    @Test func everyRequest() {
        #expect(parse(ID.status, []) == .success(.status))
        #expect(parse(ID.list, []) == .success(.list(after: nil)))
        #expect(parse(ID.list, ["after=svc"]) == .success(.list(after: name("svc"))))
        #expect(parse(ID.register, ["svc"]) == .success(.register(name("svc"), [])))
        #expect(
            parse(ID.register, ["svc", "allow-replacement", "replace-existing", "do-not-queue"])
                == .success(.register(name("svc"), [.allowReplacement, .replaceExisting, .doNotQueue])))
        #expect(parse(ID.release, ["svc"]) == .success(.release(name("svc"))))
        #expect(parse(ID.lookup, ["svc"]) == .success(.lookUp(name("svc"), wait: nil)))
        #expect(parse(ID.lookup, ["svc", "wait_ms=0"]) == .success(.lookUp(name("svc"), wait: nil)))
        #expect(parse(ID.lookup, ["svc", "wait_ms=1500"]) == .success(.lookUp(name("svc"), wait: .milliseconds(1500))))
        #expect(parse(ID.watch, [], replyPort: true) == .success(.watch(nil)))
        #expect(parse(ID.watch, ["svc"], replyPort: true) == .success(.watch(name("svc"))))
        #expect(parse(ID.owner, ["svc"]) == .success(.owner(name("svc"), from: 0)))
        #expect(parse(ID.owner, ["svc", "from=1000"]) == .success(.owner(name("svc"), from: 1000)))
        #expect(parse(ID.checkIn, ["svc"]) == .success(.checkIn(name("svc"))))
    }

    @Test func wrongCountsWordsAndMsgidsAreBadRequests() {
        let bad: [(UInt32, [String], Bool)] = [
            (ID.status, ["x"], false), (ID.list, ["x"], false), (ID.list, ["after=a", "after=b"], false), (ID.register, [], false),
            (ID.register, ["svc", "queue-please"], false), (ID.release, [], false), (ID.release, ["a", "b"], false),
            (ID.lookup, [], false), (ID.lookup, ["svc", "wait=5"], false), (ID.lookup, ["svc", "wait_ms=-1"], false),
            (ID.lookup, ["svc", "wait_ms=4294967296"], false), (ID.lookup, ["svc", "wait_ms=1", "x"], false),
            (ID.watch, [], false), (ID.watch, ["a", "b"], true), (ID.owner, [], false), (ID.owner, ["svc", "from=-1"], false),
            (ID.owner, ["svc", "after=a"], false), (ID.owner, ["svc", "from=1", "x"], false), (ID.checkIn, [], false),
            (0xFFFF_0009, [], false), (7, [], false), (ID.nameOwnerChanged, [], false),
        ]
        for (msgid, words, replyPort) in bad {
            #expect(isBadRequest(parse(msgid, words, replyPort: replyPort)), "\(msgid) \(words)")
        }
        #expect(parse(0xFFFF_0009, []) == .failure(.badRequest("unknown msgid 0xFFFF0009")))
        #expect(parse(ID.release, ["a", "b"]) == .failure(.badRequest("RELEASE takes 1 component, not 2")))
        #expect(parse(ID.register, []) == .failure(.badRequest("REGISTER takes at least 1 component, not 0")))
    }

    @Test func namesAreValidated() {
        #expect(parse(ID.register, ["../etc"]) == .failure(.invalidName(.leadingDot)))
        #expect(parse(ID.lookup, ["a/b"]) == .failure(.invalidName(.forbiddenByte(UInt8(ascii: "/"), at: 1))))
        #expect(parse(ID.watch, [""], replyPort: true) == .failure(.invalidName(.empty)))
        #expect(parse(ID.checkIn, [String(repeating: "x", count: 201)]) == .failure(.invalidName(.tooLong(bytes: 201))))
    }

    @Test func componentsAreSmallUTF8Data() throws {
        #expect(parse(ID.register, [String(repeating: "x", count: 100)], maximumBytes: 99) == .failure(.tooLarge(bytes: 100, limit: 99)))
        let invalidUTF8 = NameServerRequest.parse(
            msgid: ID.owner, components: [.data([0xFF])], hasReplyPort: false, maximumBytes: 4096)
        #expect(invalidUTF8 == .failure(.badRequest("component 0 is not UTF-8")))
        let pair = try UnixSocket.makePair()
        let withPort = NameServerRequest.parse(
            msgid: ID.register, components: [.data(Array("svc".utf8)), .port(SendRight(descriptor: pair.first))],
            hasReplyPort: false, maximumBytes: 4096)
        #expect(isBadRequest(withPort))
    }

    @Test func repliesAndEvents() {
        let error = PCPortMessage(msgid: ID.lookup, reply: NameServer.Reply.error(.notFound, "no port"))
        #expect(error.msgid == ID.lookup)
        #expect(error.components.map(\.string) == ["not-found", "message=no port"])

        let old = NameServer.Registry.Ownership(
            client: 1, credentials: Credentials(pid: 10, uid: 1000, gid: 1000), sinceMilliseconds: 0,
            allowsReplacement: false, ticket: 1, handle: .init())
        let change = NameServer.OwnerChange(
            name: name("svc"), kind: .released, old: old, new: nil, watchers: [], answeredLookups: [])
        let event = PCPortMessage(notification: NameServerNotification<SendRight>.ownerChanged(change.reported))
        #expect(event.msgid == 0xFFFF_0100)
        #expect(event.components.map(\.string) == ["svc", "released", "pid=10,uid=1000", ""])
    }
}
