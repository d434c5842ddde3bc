// MessageOriginTests: a relay's origin notice (MessageOrigin) is read by
// the port itself, never delivered; every later message on that connection
// carries the origin with the notice's kernel credentials as `relayedBy`,
// until the next notice; another connection's messages carry none; a
// notice that cannot be read clears the connection's origin.

import Glibc
import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
import PortWire
@testable import PortMessaging

@Suite struct MessageOriginTests {
    @Test func theTextReadsBackAndBadTextIsRefused() {
        let o = MessageOrigin(host: "host-b", uid: 1000, gid: 100, pid: 42, natsUser: "bridge-b")
        #expect(o.text == "host=host-b; uid=1000; gid=100; pid=42; nats=bridge-b")
        #expect(MessageOrigin(text: o.text) == o)
        #expect(MessageOrigin(text: "pid=1; host=h")?.pid == 1)
        #expect(MessageOrigin(text: "uid=1") == nil)  // no host
        #expect(MessageOrigin(text: "host=h; uid=x") == nil)
        #expect(MessageOrigin(text: "host=a b") == nil)
    }

    @Test func aNoticeGivesTheOriginOfWhatFollowsOnItsConnection() throws {
        let received = Mutex<[PCPortMessage]>([])
        let got = Flag()
        let port = PCPort { m in
            received.withLock {
                $0.append(m)
                if $0.count == 4 { got.signal() }
            }
            return nil
        }
        let thread = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(60))
        }
        try port.schedule(in: thread.loop, forMode: .default)
        thread.go()
        defer {
            port.invalidate()
            thread.loop.stop()
            thread.join()
        }
        let relay = try port.makeSendRight()
        let local = try port.makeSendRight()
        let origin = MessageOrigin(host: "host-b", uid: 1000, gid: 1000, pid: 77)
        #expect(try relay.send(origin.notice) == .sent)
        #expect(try relay.send(PCPortMessage(msgid: 1, strings: ["relayed"])) == .sent)
        #expect(try local.send(PCPortMessage(msgid: 2, strings: ["local"])) == .sent)
        // A notice that cannot be read clears the origin.
        #expect(try relay.send(PCPortMessage(msgid: MessageOrigin.noticeMessageID, strings: ["uid=5"])) == .sent)
        #expect(try relay.send(PCPortMessage(msgid: 3, strings: ["after a bad notice"])) == .sent)
        #expect(try relay.send(origin.notice) == .sent)
        #expect(try relay.send(PCPortMessage(msgid: 4, strings: ["relayed again"])) == .sent)
        #expect(got.wait(timeout: .seconds(10)))
        let messages = received.withLock { $0 }.sorted { $0.msgid < $1.msgid }
        #expect(messages.map(\.msgid) == [1, 2, 3, 4])  // no notice delivered
        #expect(messages[0].origin?.host == "host-b")
        #expect(messages[0].origin?.pid == 77)
        #expect(messages[0].origin?.relayedBy?.pid == getpid())
        #expect(messages[1].origin == nil)
        #expect(messages[2].origin == nil)
        #expect(messages[3].origin?.uid == 1000)
    }
}

/// `SendRight.request(_:on:completion:)`: a request that never blocks its
/// loop; the outcome comes to the completion on that loop, once.
@Suite struct CallbackRequestTests {
    @Test func theReplyTheTimeoutAndOneAtATime() throws {
        let server = PCPort { m in m.msgid == 2 ? nil : PCPortMessage(msgid: m.msgid, strings: ["re"]) }
        let serving = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.runInMode(.default, timeout: .seconds(60))
        }
        try server.schedule(in: serving.loop, forMode: .default)
        serving.go()
        defer {
            server.invalidate()
            serving.loop.stop()
            serving.join()
        }
        // msgid 2 is answered with nil: an empty reply. A port that never
        // answers: its handler keeps the reply right.
        let kept = Mutex<[SendRight]>([])
        let silent = PCPort { m in
            if let r = m.replyPort { kept.withLock { $0.append(r) } }
            return nil
        }
        try silent.schedule(in: serving.loop, forMode: .default)
        defer { silent.invalidate() }

        let loop = try PCRunLoop.detached()
        let right = try server.makeSendRight()
        let outcomes = Mutex<[RequestResult]>([])
        let early = try right.request(PCPortMessage(msgid: 1), receiveTimeout: .seconds(10), on: loop) { r in
            outcomes.withLock { $0.append(try! r.get()) }
        }
        #expect(early == nil)
        // One at a time per right.
        #expect(throws: PortError.self) {
            _ = try right.request(PCPortMessage(msgid: 3), receiveTimeout: .seconds(10), on: loop) { _ in }
        }
        while outcomes.withLock({ $0.isEmpty }) {
            #expect(loop.runInMode(.default, timeout: .seconds(10), returnAfterSourceHandled: true) != .timedOut)
        }
        #expect(outcomes.withLock { $0.first?.reply?.components.first?.string } == "re")

        let quiet = try silent.makeSendRight()
        let timedOut = Mutex<RequestResult?>(nil)
        _ = try quiet.request(PCPortMessage(msgid: 4), receiveTimeout: .milliseconds(50), on: loop) { r in
            timedOut.withLock { $0 = try? r.get() }
        }
        while timedOut.withLock({ $0 == nil }) { _ = loop.runInMode(.default, timeout: .seconds(10)) }
        if case .receiveTimedOut? = timedOut.withLock({ $0 }) {} else { Issue.record("\(String(describing: timedOut.withLock { $0 }))") }
    }
}
