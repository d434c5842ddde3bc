// NameServerRequestTests: parsing requests from message components (every
// msgid, its counts and words, names, sizes, kinds) and the shape of the
// messages portd sends (errors, NAME_OWNER_CHANGED, NAME_ACQUIRED).

import Testing

import PortCore
@testable import PortDaemon

private typealias ID = NameServerProtocol.MessageID

/// Parses a request of `fields` ("serial=1" is put first).
private func parse(
    _ msgid: UInt32, _ fields: [String], replyPort: Bool = false, maximumBytes: Int = 4096
) -> Result<NameServerRequest, NameServerRequest.Refusal> {
    let parsed = NameServerRequest.parse(
        msgid: msgid, components: (["serial=1"] + fields).map { .data(Array($0.utf8)) }, hasReplyPort: replyPort,
        maximumBytes: maximumBytes)
    return parsed.result
}

private func name(_ s: String) -> PortName { try! PortName(validating: s) }

private func isBadRequest(_ r: Result<NameServerRequest, NameServerRequest.Refusal>) -> Bool {
    if case .failure(.badRequest) = r { return true }
    return false
}

@Suite struct NameServerRequestTests {
    @Test func everyRequest() {
        #expect(parse(ID.hello, ["protocol=1.0"]) == .success(.hello(versions: ["1.0"])))
        #expect(parse(ID.hello, ["protocol=2.0", "protocol=1.3"]) == .success(.hello(versions: ["2.0", "1.3"])))
        #expect(parse(ID.status, []) == .success(.status))
        #expect(parse(ID.list, []) == .success(.list(after: nil)))
        #expect(parse(ID.list, ["after=svc"]) == .success(.list(after: name("svc"))))
        #expect(parse(ID.register, ["name=svc"]) == .success(.register(name("svc"), [], remote: nil)))
        #expect(
            parse(ID.register, ["name=svc", "option=allow-replacement", "option=replace-existing", "option=do-not-queue"])
                == .success(.register(name("svc"), [.allowReplacement, .replaceExisting, .doNotQueue], remote: nil)))
        #expect(parse(ID.register, ["option=do-not-queue", "name=svc"]) == .success(.register(name("svc"), [.doNotQueue], remote: nil)))
        #expect(
            parse(ID.register, ["name=svc", "remote=host-a,host-c"])
                == .success(.register(name("svc"), [], remote: "host-a,host-c")))
        #expect(isBadRequest(parse(ID.register, ["name=svc", "remote=a b"])))
        #expect(isBadRequest(parse(ID.register, ["name=svc", "remote="])))
        #expect(isBadRequest(parse(ID.register, ["name=svc", "remote=a", "remote=b"])))
        #expect(parse(ID.release, ["name=svc"]) == .success(.release(name("svc"))))
        #expect(parse(ID.lookup, ["name=svc"]) == .success(.lookUp(name("svc"), wait: nil)))
        #expect(parse(ID.lookup, ["name=svc", "wait_ms=0"]) == .success(.lookUp(name("svc"), wait: nil)))
        #expect(parse(ID.lookup, ["name=svc", "wait_ms=1500"]) == .success(.lookUp(name("svc"), wait: .milliseconds(1500))))
        #expect(parse(ID.watch, [], replyPort: true) == .success(.watch(nil)))
        #expect(parse(ID.watch, ["name=svc"], replyPort: true) == .success(.watch(name("svc"))))
        #expect(parse(ID.owner, ["name=svc"]) == .success(.owner(name("svc"), from: 0)))
        #expect(parse(ID.owner, ["name=svc", "from=1000"]) == .success(.owner(name("svc"), from: 1000)))
        #expect(parse(ID.checkIn, ["name=svc"]) == .success(.checkIn(name("svc"))))
    }

    @Test func wrongFieldsAndMsgidsAreBadRequests() {
        let bad: [(UInt32, [String], Bool)] = [
            (ID.hello, [], false), (ID.hello, ["version=1.0"], false),
            (ID.status, ["x=1"], false), (ID.list, ["x=1"], false), (ID.list, ["after=a", "after=b"], false), (ID.register, [], false),
            (ID.register, ["name=svc", "option=queue-please"], false), (ID.register, ["svc"], false), (ID.release, [], false),
            (ID.release, ["name=a", "name=b"], false), (ID.lookup, [], false), (ID.lookup, ["name=svc", "wait=5"], false),
            (ID.lookup, ["name=svc", "wait_ms=-1"], false), (ID.lookup, ["name=svc", "wait_ms=4294967296"], false),
            (ID.lookup, ["name=svc", "wait_ms=1", "x=1"], false), (ID.watch, [], false), (ID.watch, ["name=a", "name=b"], true),
            (ID.owner, [], false), (ID.owner, ["name=svc", "from=-1"], false), (ID.owner, ["name=svc", "after=a"], false),
            (ID.checkIn, [], false), (0xFFFF_000A, [], false), (7, [], false), (ID.nameOwnerChanged, [], false),
            (ID.reply, [], false), (ID.status, Array(repeating: "x=1", count: 20), false),
        ]
        for (msgid, words, replyPort) in bad {
            #expect(isBadRequest(parse(msgid, words, replyPort: replyPort)), "\(msgid) \(words)")
        }
        #expect(parse(0xFFFF_000A, []) == .failure(.badRequest("unknown msgid 0xFFFF000A")))
        #expect(parse(ID.release, ["name=a", "name=b"]) == .failure(.badRequest("RELEASE has name= twice")))
        #expect(parse(ID.register, []) == .failure(.badRequest("REGISTER needs name=")))
        #expect(parse(ID.status, ["name=x"]) == .failure(.badRequest("STATUS takes no field but serial=, not name=")))
    }

    @Test func theSerialComesFirst() {
        func serialOf(_ fields: [String]) -> (UInt32, Bool) {
            let p = NameServerRequest.parse(
                msgid: ID.status, components: fields.map { .data(Array($0.utf8)) }, hasReplyPort: false, maximumBytes: 4096)
            if case .success = p.result { return (p.serial, true) }
            return (p.serial, false)
        }
        #expect(serialOf(["serial=7"]) == (7, true))
        #expect(serialOf(["serial=4294967295"]) == (4_294_967_295, true))
        #expect(serialOf([]) == (0, false))
        #expect(serialOf(["serial=0"]) == (0, false))
        #expect(serialOf(["serial=x"]) == (0, false))
        #expect(serialOf(["name=a", "serial=7"]) == (0, false))
        #expect(serialOf(["serial=7", "x=1"]) == (7, false), "a bad request after a good serial is answered with it")
    }

    @Test func namesAreValidated() {
        #expect(parse(ID.register, ["name=../etc"]) == .failure(.invalidName(.leadingDot)))
        #expect(parse(ID.lookup, ["name=a/b"]) == .failure(.invalidName(.forbiddenByte(UInt8(ascii: "/"), at: 1))))
        #expect(parse(ID.watch, ["name="], replyPort: true) == .failure(.invalidName(.empty)))
        #expect(parse(ID.checkIn, ["name=" + String(repeating: "x", count: 201)]) == .failure(.invalidName(.tooLong(bytes: 201))))
    }

    @Test func componentsAreSmallUTF8Fields() throws {
        #expect(
            parse(ID.register, ["name=" + String(repeating: "x", count: 100)], maximumBytes: 99)
                == .failure(.tooLarge(bytes: 113, limit: 99)))
        let invalidUTF8 = NameServerRequest.parse(
            msgid: ID.owner, components: [.data(Array("serial=1".utf8)), .data([0xFF])], hasReplyPort: false, maximumBytes: 4096)
        #expect(invalidUTF8.result == .failure(.badRequest("component 1 is not UTF-8")))
        #expect(parse(ID.owner, ["svc"]) == .failure(.badRequest("component 1 is not a key=value field")))
        let pair = try UnixSocket.makePair()
        let withPort = NameServerRequest.parse(
            msgid: ID.register, components: [.data(Array("serial=1".utf8)), .port(SendRight(descriptor: pair.first))],
            hasReplyPort: false, maximumBytes: 4096)
        #expect(isBadRequest(withPort.result))
    }

    @Test func repliesAndEvents() {
        let error = PCPortMessage(reply: NameServer.Reply.error(serial: 5, .notFound, "no port"))
        #expect(error.msgid == ID.error)
        #expect(error.components.map(\.string) == ["serial=5", "error=not-found", "message=no port"])

        let old = NameServer.Registry.Ownership(
            client: 1, credentials: Credentials(pid: 10, uid: 1000, gid: 1000), sinceMilliseconds: 0,
            allowsReplacement: false, ticket: 1, handle: .init())
        let change = NameServer.OwnerChange(
            name: name("svc"), kind: .released, old: old, new: nil, watchers: .init(ofAllNames: [], ofTheName: []),
            watcherUIDs: .init(ofAllNames: [:], ofTheName: [:]), answeredLookups: [])
        let event = PCPortMessage(notification: NameServerNotification<SendRight>.ownerChanged(serial: 3, change.reported))
        #expect(event.msgid == 0xFFFF_0100)
        #expect(event.components.map(\.string) == ["serial=3", "name=svc", "event=released", "old=10:1000:1"])
    }
}
