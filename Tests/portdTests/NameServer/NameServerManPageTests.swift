// NameServerManPageTests: portd-protocol(7)'s NAME SERVER section is the one
// authoritative copy of the name-server protocol, and portd(8) states the
// default limits: these tests pin the code's msgids, error words and
// defaults to what the pages say.

import Foundation
import PortCore
import PortTestSupport
import Testing

@testable import PortDaemon

@Suite struct NameServerManPageTests {
    static func page(_ name: String) throws -> String {
        try String(contentsOfFile: SourceTree.path("man/\(name)"), encoding: .utf8)
    }

    @Test func everyMessageIDIsDocumentedAsTheCodeHasIt() throws {
        let page = try Self.page("portd-protocol.7")
        let ids: [(String, UInt32)] = [
            ("STATUS", MessageID.status), ("REGISTER", MessageID.register), ("RELEASE", MessageID.release),
            ("LOOKUP", MessageID.lookup), ("WATCH", MessageID.watch), ("LIST", MessageID.list),
            ("OWNER", MessageID.owner), ("CHECKIN", MessageID.checkIn), ("HELLO", MessageID.hello),
            ("NAME_OWNER_CHANGED", MessageID.nameOwnerChanged), ("NAME_ACQUIRED", MessageID.nameAcquired),
            ("NAME_LOST", MessageID.nameLost), ("WATCH_OVERFLOW", MessageID.watchOverflow),
        ]
        for (name, id) in ids {
            let line = ".It 0x\(String(id, radix: 16)) Dv \(name)"
            #expect(page.contains(line + "\n"), "portd-protocol(7) lacks \(line)")
        }
        // The two reply types are named in the text.
        for (name, id) in [("REPLY", MessageID.reply), ("ERROR", MessageID.error)] {
            #expect(page.contains("0x\(String(id, radix: 16))\n.Dv \(name)"), "portd-protocol(7) lacks \(name)")
        }
    }

    @Test func everyErrorWordIsDocumented() throws {
        let page = try Self.page("portd-protocol.7")
        let errors = try #require(page.range(of: ".Ss Errors")).upperBound
        let section = String(page[errors...]).components(separatedBy: ".Ss ").first ?? ""
        for word in NameServerProtocol.ErrorWord.allCases {
            #expect(section.contains(".It Ql \(word.rawValue)\n"), "the Errors list lacks \(word.rawValue)")
        }
    }

    @Test func theDaemonsLimitsAreThoseOfPortdConf5() throws {
        // portd(8) refers to portd.conf(5) for the limits; that page's table
        // is checked against DaemonLimits by the configuration tests. Here:
        // what the daemon runs with, built from a default configuration, is
        // exactly DaemonLimits' defaults.
        let page = try Self.page("portd.8")
        #expect(page.contains(".Xr portd.conf 5"))
        let defaults = DaemonLimits.default
        let settings = NameServerSettings(
            configuration: try PortdConfiguration.load(file: nil, dropInDirectory: nil), onlyUID: nil, daemonUID: 0)
        #expect(settings.limits.namesPerClient == defaults.namesPerClient)
        #expect(settings.limits.pendingLookupsPerClient == defaults.pendingLookupsPerClient)
        #expect(settings.limits.watchesPerClient == defaults.watchesPerClient)
        #expect(settings.limits.clientsPerUID == defaults.clientsPerUID)
        #expect(settings.limits.clients == defaults.maxClients)
        #expect(settings.maximumRequestBytes == defaults.maxRequestBytes)
        #expect(settings.maximumLookupWait == .seconds(3600), "both pages say a lookup waits at most an hour")
        #expect(PortName.maximumLength == 200)
    }
}
