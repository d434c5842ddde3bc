// PortMonitorTests: port monitoring in one process, with real sockets: the
// owner's port on the background loop, the monitor on the test thread's
// loop. A copy counts the message's descriptors (a right, shared memory,
// a reply port) and carries none; a port that is not monitorable answers
// SUBSCRIBE itself and its handler never sees it; turning monitoring off
// ends the subscription; the reply a port sends when its handler returns
// (closure or view handler) is copied after its request, naming it, and
// no reply is made up for a request answered through its right or later.

import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
@testable import PortMessaging

@Suite struct PortMonitorTests {
    /// Runs the current thread's loop until `done()` or 20 s.
    private func run(until done: () -> Bool) {
        let loop = PCRunLoop.current
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !done() && MonotonicInstant.now() < deadline {
            _ = loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
        }
    }

    @Test func aCopyCountsTheDescriptorsAndCarriesNoneAndEndsWhenMonitoringIsTurnedOff() throws {
        let handled = Mutex<[UInt32]>([])
        let handledOne = Flag()
        let owner = PCPort { message in
            handled.withLock { $0.append(message.msgid) }
            handledOne.signal()
            return nil
        }
        defer { owner.invalidate() }
        owner.allowsMonitoring = true
        try owner.schedule(in: BackgroundLoop.shared.loop, forMode: .default)
        let right = try owner.makeSendRight()
        let events = Mutex<[PortMonitorSubscription.Event]>([])
        let outcome = try PortMonitorSubscription.subscribe(to: right, loop: .current) { e in
            events.withLock { $0.append(e) }
        }
        guard case .monitoring(let subscription) = outcome else {
            Issue.record("not subscribed: \(outcome)")
            return
        }
        let other = PCPort()
        defer { other.invalidate() }
        let memory = try SharedMemory(copying: [1, 2, 3])
        let message = PCPortMessage(msgid: 7, components: [.data([9]), .port(try other.makeSendRight()), .sharedMemory(memory)])
        #expect(try right.send(message, replyPort: other) == .sent)
        run { events.withLock { !$0.isEmpty } }
        guard case .message(let copy)? = events.withLock({ $0.first }) else {
            Issue.record("no copy: \(events.withLock { $0 })")
            return
        }
        #expect(copy.msgid == 7 && copy.sequence == 1 && copy.missed == 0 && !copy.isRequest && copy.hasReplyPort)
        #expect(copy.descriptorCount == 3)
        #expect(copy.sender?.pid == CurrentProcess.id)
        #expect(copy.components.map(\.kind) == [.data, .port, .sharedMemory])
        #expect(copy.components.map(\.length) == [1, 0, 3])
        #expect(copy.components.map(\.bytes) == [[9], [], [1, 2, 3]])
        // The owner's handler got the message (on its own thread, after
        // the copy went); SUBSCRIBE never reached it.
        #expect(handledOne.wait())
        #expect(handled.withLock { $0 } == [7])

        owner.allowsMonitoring = false
        run {
            events.withLock {
                if case .ended? = $0.last { true } else { false }
            }
        }
        #expect(events.withLock { $0.count } == 2)
        #expect(!subscription.isActive)
    }

    @Test(arguments: [false, true])
    func aRequestsReplyFollowsItsCopy(viewHandler: Bool) throws {
        // msgid 1: the handler's reply; 2: answered through the reply right
        // inside the handler; 3: the right kept and answered in a later pass.
        let backgroundLoop = BackgroundLoop.shared.loop
        func answer(_ msgid: UInt32, _ right: SendRight?) -> PCPortMessage? {
            switch msgid {
            case 1: return PCPortMessage(msgid: 1, strings: ["pong"])
            case 2: _ = try? right?.send(PCPortMessage(msgid: 2, strings: ["through the right"]))
            case 3: backgroundLoop.perform { _ = try? right?.send(PCPortMessage(msgid: 3, strings: ["later"])) }
            default: break
            }
            return nil
        }
        let owner =
            viewHandler
            ? PCPort(viewHandler: { v in answer(v.msgid, v.replyPort) })
            : PCPort { m in answer(m.msgid, m.replyPort) }
        defer { owner.invalidate() }
        owner.allowsMonitoring = true
        try owner.schedule(in: backgroundLoop, forMode: .default)
        let right = try owner.makeSendRight()
        let events = Mutex<[MonitoredMessage]>([])
        let outcome = try PortMonitorSubscription.subscribe(to: right, loop: .current) { e in
            if case .message(let m) = e { events.withLock { $0.append(m) } }
        }
        guard case .monitoring = outcome else {
            Issue.record("not subscribed: \(outcome)")
            return
        }
        var replies: [String] = []
        for msgid: UInt32 in 1...3 {
            guard case .reply(let r)? = try? right.request(PCPortMessage(msgid: msgid), receiveTimeout: .seconds(20)) else {
                Issue.record("no reply to \(msgid)")
                return
            }
            replies.append(r.components.first?.string ?? "")
        }
        #expect(replies == ["pong", "through the right", "later"])
        #expect(try right.send(PCPortMessage(msgid: 4)) == .sent)
        run { events.withLock { $0.last?.msgid == 4 } }
        let copies = events.withLock { $0 }
        #expect(copies.map(\.msgid) == [1, 1, 2, 3, 4])
        #expect(copies.map(\.isReply) == [false, true, false, false, false])
        #expect(copies.map(\.sequence) == [1, 1, 2, 3, 4])
        #expect(copies[1].components.map(\.bytes) == [Array("pong".utf8)])
        #expect(copies[1].sender == nil && copies[0].isRequest && !copies[1].isRequest)
    }

    @Test func aPortThatIsNotMonitorableAnswersSubscribeItself() throws {
        let handled = Mutex(0)
        let owner = PCPort { _ in
            handled.withLock { $0 += 1 }
            return nil
        }
        defer { owner.invalidate() }
        try owner.schedule(in: BackgroundLoop.shared.loop, forMode: .default)
        let right = try owner.makeSendRight()
        let outcome = try PortMonitorSubscription.subscribe(to: right, loop: .current) { _ in }
        guard case .declined(let answer, _) = outcome else {
            Issue.record("not declined: \(outcome)")
            return
        }
        #expect(answer == .notMonitorable)
        #expect(handled.withLock { $0 } == 0)
    }
}
