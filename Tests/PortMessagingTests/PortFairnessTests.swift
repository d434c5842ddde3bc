// PortFairnessTests: a port serves its connections in turn (issue 12,
// item 5). A port used to read one connection until it was empty, so a peer
// that sent one-way records in a loop made every other peer wait for all of
// them. Now one pass handles at most `recordsPerPass` records of a
// connection, and level-triggered epoll reports the rest in the next pass,
// after the other ready connections. Checked by counting, not timing: one
// connection is filled with many records before the loop runs, another
// gets one message after them, and that message must be handled before the
// first connection's records are all handled.

import Testing
import PortRunLoop
import PortSystem
@testable import PortMessaging

@Suite struct PortFairnessTests {
    /// Handles records on the test's thread; counts what it saw of the flood.
    private final class Counts {
        var flood = 0
        var floodAtProbe: [Int] = []
    }

    @Test func aFloodedConnectionDoesNotDelayAnotherOne() throws {
        let flood = 100
        let loop = PCRunLoop.current
        let counts = Counts()
        let port = PCPort { message in
            if message.msgid == 1 { counts.flood += 1 } else { counts.floodAtProbe.append(counts.flood) }
            return nil
        }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let flooder = try port.makeSendRight()
        let other = try port.makeSendRight()
        for _ in 0..<flood {
            #expect(try flooder.send(PCPortMessage(msgid: 1, strings: ["flood"]), timeout: .zero) == .sent)
        }
        // Queued after the whole flood, before the loop runs at all.
        #expect(try other.send(PCPortMessage(msgid: 2, strings: ["probe"]), timeout: .zero) == .sent)

        let deadline = MonotonicInstant.now() + .seconds(20)
        while (counts.flood < flood || counts.floodAtProbe.isEmpty) && MonotonicInstant.now() < deadline {
            loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
        }
        #expect(counts.flood == flood)
        #expect(counts.floodAtProbe.count == 1)
        let seen = try #require(counts.floodAtProbe.first)
        #expect(seen < flood, "the probe waited for the whole flood")
        #expect(seen <= PCPort.defaultRecordsPerPass, "the probe waited for more than one share: \(seen)")
    }

    @Test func theShareIsAtLeastOneRecord() {
        let port = PCPort()
        port.recordsPerPass = 0
        #expect(port.recordsPerPass == 1)
        port.recordsPerPass = 4
        #expect(port.recordsPerPass == 4)
    }
}
