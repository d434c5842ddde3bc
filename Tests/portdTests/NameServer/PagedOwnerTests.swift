// PagedOwnerTests: every reply of portd is bounded (issue 12, item 6).
// OWNER names every queued process, and a queue is as long as portd has
// clients: with 1,100 queued registrations the one-record reply had 1,104
// components, more than a client decodes (PortLimits.default.maxComponents
// 1,024), and `portctl lookup` failed with "malformed port message". OWNER
// is paged the way LIST is: a page ends with "more" when the queue goes on,
// the client asks again with "from=N". Tested against the real portd (limits
// raised in a portd.conf), 1,100 queued clients made by one Python child
// (name_client.py queue), read through raw requests, PortNameServer and
// `portctl lookup`.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct PagedOwnerTests {
    @Test func ownerOfALongQueueComesInPagesThatClientAndPortctlFollow() throws {
        let queued = 1100
        let config = try TemporaryDirectory()
        try "[Limits]\nMaxClients=2000\nClientsPerUID=2000\n".write(
            toFile: config.appending("portd.conf"), atomically: true, encoding: .utf8)
        let portd = try DaemonProcess.started(arguments: ["--config", config.appending("portd.conf")])
        let name = "org.example.crowded"
        let owner = try NameClient(socket: portd.socketPath)
        #expect(try owner.register(name).outcome == "registered")

        let crowd = try NameServerFixture.start(["queue", portd.socketPath, name, "\(queued)"])
        defer { crowd.signal(SIGKILL) }
        try crowd.waitForStandardOutput(containing: "queued \(queued)", timeout: .seconds(60))

        // Raw pages: bounded, "more" at the end of each but the last.
        let asker = try NameClient(socket: portd.socketPath)
        let first = try asker.request(MessageID.owner, ["name=\(name)"])
        #expect(first.outcome == "ok" && first.field("owner")?.hasPrefix("\(getpid()):\(getuid()):") == true)
        #expect(first.field("queue_length") == "\(queued)")
        #expect(first.field("more") == "1")
        #expect(first.components.count <= PortLimits.default.maxComponents)
        let firstQueued = first.words.filter { $0.hasPrefix("queued=") }
        #expect(firstQueued.count == NameServer.ownerPageSize)
        #expect(firstQueued.allSatisfy { $0.hasPrefix("queued=\(crowd.pid):\(getuid()):") })
        var got = firstQueued.count
        var pages = 1
        while true {
            let page = try asker.request(MessageID.owner, ["name=\(name)", "from=\(got)"])
            #expect(page.outcome == "ok" && page.components.count <= PortLimits.default.maxComponents)
            let queuedHere = page.words.filter { $0.hasPrefix("queued=") }.count
            #expect(queuedHere <= NameServer.ownerPageSize)
            got += queuedHere
            pages += 1
            if page.field("more") != "1" || queuedHere == 0 || pages > 100 { break }
        }
        #expect(got == queued)
        #expect(pages == (queued + NameServer.ownerPageSize - 1) / NameServer.ownerPageSize)
        let past = try asker.request(MessageID.owner, ["name=\(name)", "from=\(queued + 5)"])
        #expect(past.outcome == "ok" && !past.words.contains { $0.hasPrefix("queued=") })
        #expect(past.field("more") != "1")
        #expect(try asker.request(MessageID.owner, ["name=\(name)", "from=x"]).outcome == "bad-request")

        // The client follows the pages.
        let client = try portd.client()
        let found = try #require(try client.owner(name))
        #expect(found.owner.pid == getpid())
        #expect(found.queued.count == queued)
        #expect(found.queued.allSatisfy { $0.pid == crowd.pid })
        client.invalidate()

        // And portctl, in JSON and as text.
        let json = try portd.portctl(["lookup", name, "--json"])
        #expect(json.status == 0, "\(json.standardError)")
        let object = try jsonObject(json.standardOutput)
        #expect((object["queued"] as? [Any])?.count == queued)
        let text = try portd.portctl(["lookup", name])
        #expect(text.status == 0, "\(text.standardError)")

        crowd.signal(SIGKILL)
        _ = try crowd.waitForExit()
        #expect(try portd.stop() == 0)
    }
}
