// ProvisionalStatusTests: the provisional STATUS request and reply records.

import Testing

@testable import PortCore

@Suite struct ProvisionalStatusTests {
    @Test func roundTrip() {
        let status = DaemonStatus(version: "1.2.3", pid: 42, uptimeMilliseconds: 123_456)
        let encoded = ProvisionalStatus.encode(status)
        #expect(String(decoding: encoded, as: UTF8.self) == "version=1.2.3\npid=42\nuptime_ms=123456\n")
        #expect(ProvisionalStatus.decode(encoded[...]) == .status(status))
    }

    @Test func requestRecognition() {
        #expect(ProvisionalStatus.isStatusRequest(ProvisionalStatus.request[...]))
        #expect(ProvisionalStatus.isStatusRequest(Array("STATUS\n".utf8)[...]))
        #expect(!ProvisionalStatus.isStatusRequest(Array("STATUS\n\n".utf8)[...]))
        #expect(!ProvisionalStatus.isStatusRequest(Array("status".utf8)[...]))
        #expect(!ProvisionalStatus.isStatusRequest([][...]))
    }

    @Test func decodingIgnoresUnknownKeysAndRejectsMalformedReplies() {
        let extra = Array("names=3\nversion=0.1\npid=7\nuptime_ms=0\n".utf8)
        #expect(ProvisionalStatus.decode(extra[...]) == .status(DaemonStatus(version: "0.1", pid: 7, uptimeMilliseconds: 0)))
        for bad in [
            "version=0.1\npid=7\n", "version=0.1\npid=x\nuptime_ms=1\n", "version=0.1\npid=-1\nuptime_ms=1\n",
            "version=\npid=1\nuptime_ms=1\n", "garbage", "",
        ] {
            #expect(ProvisionalStatus.decode(Array(bad.utf8)[...]) == nil, "\(bad)")
        }
        #expect(ProvisionalStatus.decode([0xff, 0xfe][...]) == nil)
        #expect(ProvisionalStatus.decode(ProvisionalStatus.unknownRequestReply[...]) == .error("unknown request"))
    }
}
