// What a requester's thread does while it waits for a reply: runs its loop
// in the reply mode it asked for (CFMessagePortSendRequest's replyMode),
// holds no lock other threads' use of the same right needs, and passes on a
// stop() meant for the run the request was nested in.

import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
@testable import PortMessaging

@Suite(.serialized) struct RequestWaitTests {
    /// With replyMode `.default`, the requester's default-mode timers keep
    /// firing while it waits (the server replies only once one has).
    @Test func aRequestInTheDefaultModeLetsItsTimersFire() throws {
        let timerFired = Completion()
        let served = try ServedPort { m in
            _ = timerFired.wait(timeout: .seconds(10))
            return PCPortMessage(msgid: m.msgid, strings: ["late"])
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        defer { right.invalidate() }
        let outcome = Mutex<String?>(nil)
        LoopThread.run { loop in
            loop.add(PCTimer(fireAt: loop.clock.now()) { _ in timerFired.signal() }, forMode: .default)
            if case .reply(let r)? = try? right.request(
                PCPortMessage(msgid: 3), receiveTimeout: .seconds(20), replyMode: .default)
            {
                outcome.withLock { $0 = r.components.first?.string }
            }
        }
        #expect(outcome.withLock { $0 } == "late")
    }

    /// Another thread's `isValid` and `send` on a right do not wait for a
    /// request in progress on it.
    @Test func aRequestHoldsNoLockOtherThreadsNeed() throws {
        let inHandler = Completion()
        let release = Completion()
        let served = try ServedPort { m in
            if m.msgid == 1 {
                inHandler.signal()
                _ = release.wait(timeout: .seconds(10))
            }
            return nil
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        defer { right.invalidate() }
        let requester = LoopThread { _ in
            _ = try? right.request(PCPortMessage(msgid: 1), receiveTimeout: .seconds(20))
        }
        requester.go()
        #expect(inHandler.wait(timeout: .seconds(10)))
        let answered = Completion()
        let other = LoopThread { _ in
            if right.isValid, (try? right.send(PCPortMessage(msgid: 2), timeout: .seconds(5))) == .sent {
                answered.signal()
            }
        }
        other.go()
        #expect(answered.wait(timeout: .seconds(2)), "isValid/send waited for the request's reply")
        release.signal()
        other.join()
        requester.join()
    }

    /// A stop() that arrives while a request waits stops the run the
    /// request was made from, once the request has its reply.
    @Test func aStopDuringARequestReachesTheOuterRun() throws {
        let inHandler = Completion()
        let release = Completion()
        let served = try ServedPort { m in
            inHandler.signal()
            _ = release.wait(timeout: .seconds(10))
            return PCPortMessage(msgid: m.msgid)
        }
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        defer { right.invalidate() }
        let outer = Mutex<PCRunLoop.RunResult?>(nil)
        let gotReply = Mutex(false)
        let requester = LoopThread { loop in
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            loop.perform(inModes: [.default]) {
                if case .reply? = try? right.request(PCPortMessage(msgid: 5), receiveTimeout: .seconds(20)) {
                    gotReply.withLock { $0 = true }
                }
            }
            let r = loop.runInMode(.default, timeout: .seconds(5))
            outer.withLock { $0 = r }
        }
        requester.go()
        #expect(inHandler.wait(timeout: .seconds(10)))
        requester.loop.stop()
        release.signal()
        requester.join()
        #expect(gotReply.withLock { $0 })
        #expect(outer.withLock { $0 } == .stopped)
    }
}
