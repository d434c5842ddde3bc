// ProvisionalStatusTests: the STATUS request and reply records that
// ControlClient exchanges with portd (the name-server protocol's STATUS).

import Testing

@testable import PortCore

@Suite struct ProvisionalStatusTests {
    private func reply(_ strings: [String]) -> [UInt8] {
        try! WireEncoder.encode(msgid: ProvisionalStatus.statusMessageID, components: strings.map { .data(Array($0.utf8)) })
            .bytes
    }

    @Test func roundTrip() {
        let status = DaemonStatus(version: "1.2.3", pid: 42, uptimeMilliseconds: 123_456)
        let encoded = ProvisionalStatus.encode(status)
        #expect(encoded == reply(["ok", "version=1.2.3", "pid=42", "uptime_ms=123456"]))
        #expect(ProvisionalStatus.decode(encoded[...]) == .status(status))
    }

    @Test func requestIsAStatusRequestExpectingAReply() throws {
        let request = ProvisionalStatus.request
        #expect(request.count == WireFormat.headerSize)
        #expect(request[5] == WireFormat.Flags.replyExpected.rawValue)
        let decoded = try WireDecoder.decode(request)
        #expect(decoded.msgid == 0xFFFF_0001)
        #expect(decoded.components.isEmpty)
    }

    @Test func decodingIgnoresUnknownKeysAndRejectsMalformedReplies() {
        let extra = reply(["ok", "names=3", "version=0.1", "pid=7", "uptime_ms=0"])
        #expect(ProvisionalStatus.decode(extra[...]) == .status(DaemonStatus(version: "0.1", pid: 7, uptimeMilliseconds: 0)))
        for bad in [
            ["ok", "version=0.1", "pid=7"], ["ok", "version=0.1", "pid=x", "uptime_ms=1"],
            ["ok", "version=0.1", "pid=-1", "uptime_ms=1"], ["ok", "version=", "pid=1", "uptime_ms=1"],
            ["ok", "garbage"], [],
        ] {
            #expect(ProvisionalStatus.decode(reply(bad)[...]) == nil, "\(bad)")
        }
        #expect(ProvisionalStatus.decode([0xff, 0xfe][...]) == nil)
        #expect(ProvisionalStatus.decode(reply(["denied", "message=uid 7 is not 0"])[...]) == .error("denied: uid 7 is not 0"))
        #expect(ProvisionalStatus.decode(reply(["bad-request"])[...]) == .error("bad-request"))
    }
}
