// ConfigurationTests: portd.conf as a whole: real files and drop-in
// directories in a temporary directory, what each section and key means,
// the order drop-ins apply in, policy decisions, declared ports, the
// errors (each naming file and line), the account database, the default
// paths, and that portd.conf(5) documents every limit with its default.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

/// Accounts that do not depend on the machine.
struct FakeAccounts: AccountDatabase {
    var users: [String: UInt32] = ["alice": 1001, "bob": 1002, "lp": 7]
    var groups: [String: UInt32] = ["staff": 50, "lp": 7, "wheel": 10]
    func userID(named name: String) throws(SystemCallError) -> UInt32? { users[name] }
    func groupID(named name: String) throws(SystemCallError) -> UInt32? { groups[name] }
}

/// Parses `files` (name, text) as if read in that order.
private func configuration(_ files: (String, String)...) throws(ConfigurationError) -> PortdConfiguration {
    var documents: [IniDocument] = []
    for (name, text) in files { documents.append(try IniDocument(parsing: text, file: name)) }
    return try PortdConfiguration.interpret(documents, accounts: FakeAccounts())
}

/// The error `body` throws, or nil.
private func error(_ body: () throws(ConfigurationError) -> PortdConfiguration) -> ConfigurationError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

private func write(_ text: String, to path: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

@Suite struct ConfigurationLimitsTests {
    @Test func defaultsWithoutAnything() throws {
        let none = try PortdConfiguration.load(file: nil, dropInDirectory: nil)
        #expect(none == PortdConfiguration.default)
        #expect(none.limits == DaemonLimits(
            namesPerClient: 256, pendingLookupsPerClient: 64, watchesPerClient: 64, clientsPerUID: 256,
            maxRequestBytes: 4096, maxClients: 1024))
        #expect(none.policy == .default)
        #expect(none.declaredPorts.isEmpty)
    }

    @Test func everyKeySetsItsField() throws {
        let c = try configuration((
            "a.conf",
            """
            [Limits]
            NamesPerClient=1
            PendingLookupsPerClient=2
            WatchesPerClient=3
            ClientsPerUID=4
            MaxRequestBytes=8K
            MaxClients=6
            """
        ))
        #expect(c.limits == DaemonLimits(
            namesPerClient: 1, pendingLookupsPerClient: 2, watchesPerClient: 3, clientsPerUID: 4,
            maxRequestBytes: 8192, maxClients: 6))
    }

    @Test func laterWinsAndEmptyRestoresTheDefault() throws {
        let c = try configuration(
            ("a.conf", "[Limits]\nMaxClients=10\nNamesPerClient=5\n"),
            ("b.conf", "[Limits]\nMaxClients=20\nNamesPerClient=\n"))
        #expect(c.limits.maxClients == 20)
        #expect(c.limits.namesPerClient == DaemonLimits.default.namesPerClient)
    }

    @Test(arguments: [
        ("MaxClients=0", "MaxClients= must be a whole number from 1 to 1000000, not '0'"),
        ("MaxClients=-1", "MaxClients= must be a whole number from 1 to 1000000, not '-1'"),
        ("MaxClients=ten", "MaxClients= must be a whole number from 1 to 1000000, not 'ten'"),
        ("MaxClients=5K", "MaxClients= must be a whole number from 1 to 1000000, not '5K'"),
        ("MaxClients=99999999999999999999", "MaxClients= must be a whole number from 1 to 1000000, not '99999999999999999999'"),
        ("MaxRequestBytes=100", "MaxRequestBytes= must be a whole number from 512 to 196608 (bytes; K and M suffixes allowed), not '100'"),
        ("MaxRequestBytes=1M", "MaxRequestBytes= must be a whole number from 512 to 196608 (bytes; K and M suffixes allowed), not '1M'"),
        ("Foo=1", "unknown key 'Foo' in [Limits]"),
    ])
    func badValuesNameFileAndLine(line: String, message: String) {
        let e = error { () throws(ConfigurationError) in try configuration(("portd.conf", "[Limits]\n# x\n\(line)\n")) }
        #expect(e == ConfigurationError(file: "portd.conf", line: 3, message))
    }

    @Test func theManPageDocumentsEveryLimitAndItsDefault() throws {
        let text = try String(contentsOfFile: SourceTree.path("man/portd.conf.5"), encoding: .utf8)
        for key in DaemonLimits.keys {
            let value = DaemonLimits.default[keyPath: key.field]
            #expect(text.contains(".It Cm \(key.name) Ns = Ns Ar"), "\(key.name) is not an item of portd.conf(5)")
            #expect(text.contains("Default: \(value)"), "the default of \(key.name), \(value), is not in portd.conf(5)")
        }
    }
}

@Suite struct ConfigurationPolicyTests {
    @Test func withoutRulesEverythingIsAllowed() throws {
        let c = try configuration(("a.conf", "[Policy]\n"))
        #expect(c.policy.mayRegister(name: "x", uid: 1001, gids: []))
        #expect(c.policy.mayLookUp(name: "x", uid: 1001, gids: []))
    }

    @Test func lastMatchingRuleWins() throws {
        let c = try configuration((
            "a.conf",
            """
            [Policy]
            DenyRegister=* *
            AllowRegister=org.example.* user:alice group:wheel
            DenyRegister=org.example.secret.* user:alice
            """
        ))
        let p = c.policy
        #expect(!p.mayRegister(name: "com.other", uid: 1001, gids: []))
        #expect(p.mayRegister(name: "org.example.a", uid: 1001, gids: []))
        #expect(!p.mayRegister(name: "org.example.a", uid: 1002, gids: [1002]))
        #expect(p.mayRegister(name: "org.example.a", uid: 1002, gids: [1002, 10]), "a supplementary group counts")
        #expect(!p.mayRegister(name: "org.example.secret.x", uid: 1001, gids: []))
        #expect(p.mayRegister(name: "org.example.secret.x", uid: 1002, gids: [10]))
        #expect(p.mayLookUp(name: "com.other", uid: 1002, gids: []), "register rules say nothing about look-ups")

        let decision = p.decide(.register, name: "org.example.secret.x", uid: 1001, gids: [])
        #expect(decision == .init(allowed: false, reason: "DenyRegister=org.example.secret.* user:1001 (a.conf:4)"))
        #expect(p.decide(.lookUp, name: "x", uid: 1, gids: []).reason == "no rule matches; DefaultLookUp=allow")
    }

    @Test func defaultsAndResets() throws {
        let c = try configuration(
            ("a.conf", "[Policy]\nDefaultLookUp=deny\nAllowLookUp=public.* *\nAllowRegister=x user:0\nDenyLookUp=public.b *\n"),
            ("b.conf", "[Policy]\nDenyLookUp=\nAllowLookUp=public.a user:bob\n"))
        let p = c.policy
        #expect(p.rules.map(\.origin) == ["a.conf:4", "b.conf:3"], "the empty DenyLookUp= forgot both look-up rules of a.conf")
        #expect(p.defaultLookUp == .deny)
        #expect(p.mayLookUp(name: "public.a", uid: 1002, gids: []))
        #expect(!p.mayLookUp(name: "public.a", uid: 1001, gids: []))
        #expect(!p.mayLookUp(name: "public.b", uid: 1002, gids: []))
        #expect(p.decide(.lookUp, name: "zzz", uid: 1, gids: []) == .init(allowed: false, reason: "no rule matches; DefaultLookUp=deny", byDefault: true))

        let reset = try configuration(("a.conf", "[Policy]\nDefaultRegister=deny\nDefaultRegister=\n"))
        #expect(reset.policy.defaultRegister == .allow)
    }

    @Test func principalsByNameAndNumber() throws {
        let c = try configuration(("a.conf", "[Policy]\nAllowLookUp=* user:alice user:1234 group:staff group:99 *\n"))
        #expect(c.policy.rules[0].principals == [.user(1001), .user(1234), .group(50), .group(99), .anyone])
    }

    @Test func sameUserOnlyRefusesEveryOtherUID() {
        let p = Policy.sameUserOnly(1001)
        #expect(p.mayRegister(name: "a", uid: 1001, gids: []))
        #expect(p.mayLookUp(name: "a", uid: 1001, gids: []))
        #expect(!p.mayRegister(name: "a", uid: 0, gids: [0]))
        #expect(!p.mayLookUp(name: "a", uid: 1002, gids: [1001]))
        #expect(p.decide(.lookUp, name: "a", uid: 0, gids: []).reason == "this instance serves uid 1001 only")
    }

    @Test func restrictedKeepsTheRulesForTheOwnUID() throws {
        let c = try configuration(("a.conf", "[Policy]\nDenyRegister=private.* *\nAllowLookUp=* user:bob\n"))
        let p = c.policy.restricted(toUID: 1001)
        #expect(!p.mayRegister(name: "private.x", uid: 1001, gids: []))
        #expect(p.mayRegister(name: "public.x", uid: 1001, gids: []))
        #expect(!p.mayLookUp(name: "public.x", uid: 1002, gids: []), "no rule opens the instance to another uid")
    }

    @Test(arguments: [
        ("AllowRegister=org.*", "AllowRegister= needs a name pattern and at least one principal, as in 'AllowRegister=org.example.* user:alice group:staff'"),
        ("AllowRegister=org/x *", "'org/x' has '/', which no port name contains (names are letters, digits, '.', '_' and '-')"),
        ("DenyLookUp=[ab *", "'[ab' has a '[' without its ']'"),
        ("AllowLookUp=* user:nobody-here", "unknown user 'nobody-here'"),
        ("AllowLookUp=* group:nogroup", "unknown group 'nogroup'"),
        ("AllowLookUp=* alice", "'alice' is not a principal ('*', 'user:NAME', 'user:UID', 'group:NAME' or 'group:GID')"),
        ("AllowLookUp=* user:", "'' is not a user name or uid"),
        ("AllowLookUp=* user:4294967295", "unknown user '4294967295'"),
        ("AllowLookUp=* \"user:alice", "unterminated \" in '* \"user:alice'"),
        ("DefaultRegister=maybe", "DefaultRegister= is 'allow' or 'deny', not 'maybe'"),
        ("Allow=* *", "unknown key 'Allow' in [Policy]"),
    ])
    func badRulesNameFileAndLine(line: String, message: String) {
        let e = error { () throws(ConfigurationError) in try configuration(("p.conf", "[Policy]\n\(line)\n")) }
        #expect(e == ConfigurationError(file: "p.conf", line: 2, message))
    }
}

@Suite struct ConfigurationPortTests {
    private let spooler = """
        [Port]
        Name=org.example.spooler
        CheckInUser=lp 1500
        CheckInGroup=lp
        LookUp=group:staff user:alice
        Exec=/usr/libexec/spooler --from-portd "two words"
        """

    @Test func aDeclaredPort() throws {
        let c = try configuration(("a.conf", spooler))
        #expect(
            c.declaredPorts == [
                DeclaredPort(
                    name: "org.example.spooler", checkInUIDs: [7, 1500], checkInGIDs: [7], lookUp: [.group(50), .user(1001)],
                    activation: .command(["/usr/libexec/spooler", "--from-portd", "two words"]), origin: "a.conf:2")
            ])
        let port = try #require(c.declaredPort(named: "org.example.spooler"))
        #expect(port.mayCheckIn(uid: 7, gids: [], daemonUID: 0))
        #expect(port.mayCheckIn(uid: 1500, gids: [], daemonUID: 0))
        #expect(port.mayCheckIn(uid: 2000, gids: [2000, 7], daemonUID: 0))
        #expect(!port.mayCheckIn(uid: 0, gids: [0], daemonUID: 0), "the declared owner only, not even portd's uid")
        #expect(!port.mayCheckIn(uid: 1001, gids: [50], daemonUID: 0))
    }

    @Test func withoutOwnersOnlyTheDaemonsUIDChecksIn() throws {
        let c = try configuration(("a.conf", "[Port]\nName=a\n"))
        let port = try #require(c.declaredPort(named: "a"))
        #expect(port.activation == .none)
        #expect(port.mayCheckIn(uid: 1001, gids: [], daemonUID: 1001))
        #expect(!port.mayCheckIn(uid: 1002, gids: [1001], daemonUID: 1001))
    }

    @Test func lookUpOfADeclaredPortReplacesThePolicy() throws {
        let c = try configuration(("a.conf", spooler + "\n[Port]\nName=org.example.open\n[Policy]\nDenyLookUp=* user:bob\n"))
        #expect(c.lookUpDecision(name: "org.example.spooler", uid: 1001, gids: []).allowed)
        #expect(c.lookUpDecision(name: "org.example.spooler", uid: 1500, gids: [1500, 50]).allowed)
        let refused = c.lookUpDecision(name: "org.example.spooler", uid: 1500, gids: [])
        #expect(refused == .init(allowed: false, reason: "LookUp= of declared port 'org.example.spooler' (a.conf:2)"))
        #expect(!c.lookUpDecision(name: "org.example.open", uid: 1002, gids: []).allowed, "no LookUp=: the policy decides")
        #expect(c.lookUpDecision(name: "org.example.open", uid: 1001, gids: []).allowed)
    }

    @Test func aDeclaredNameIsNeverRegistered() throws {
        let c = try configuration(("a.conf", spooler))
        let decision = c.registerDecision(name: "org.example.spooler", uid: 7, gids: [7])
        #expect(!decision.allowed)
        #expect(decision.reason == "'org.example.spooler' is a declared port (a.conf:2); its service checks in")
        #expect(c.registerDecision(name: "org.example.other", uid: 7, gids: [7]).allowed)
    }

    @Test func dropInsAddToAPortAndResetLists() throws {
        let c = try configuration(
            ("a.conf", spooler),
            ("b.conf", "[Port]\nName=org.example.spooler\nCheckInUser=\nCheckInUser=bob\nLookUp=*\nExec=\nUnit=spooler.service\n"))
        #expect(
            c.declaredPorts == [
                DeclaredPort(
                    name: "org.example.spooler", checkInUIDs: [1002], checkInGIDs: [7],
                    lookUp: [.group(50), .user(1001), .anyone], activation: .unit("spooler.service"), origin: "a.conf:2")
            ])
    }

    @Test func portsKeepTheOrderOfDeclaration() throws {
        let c = try configuration(("a.conf", "[Port]\nName=b\n[Port]\nName=a\n"), ("b.conf", "[Port]\nName=c\n[Port]\nName=b\n"))
        #expect(c.declaredPorts.map(\.name) == ["b", "a", "c"])
    }

    @Test(arguments: [
        ("[Port]\nExec=/bin/true\n", 1, "[Port] needs Name=, the port's name"),
        ("[Port]\nName=a\nName=b\n", 3, "a [Port] section declares one port; Name= is already 'a' (line 2)"),
        ("[Port]\nName=.hidden\n", 2, "a port name cannot start with '.': '.hidden'"),
        ("[Port]\nName=a/b\n", 2, "'a/b' is not a port name (letters, digits, '.', '_' and '-' only)"),
        ("[Port]\nName=\n", 2, "a port name cannot be empty"),
        ("[Port]\nName=a\nExec=spooler\n", 3, "Exec= needs an absolute program path first, as in 'Exec=/usr/libexec/example --serve'"),
        ("[Port]\nName=a\nExec=/bin/a\nUnit=a.service\n", 4, "a port is activated by Exec= or by Unit=, not both (Exec= is on line 3)"),
        ("[Port]\nName=a\nUnit=a\n", 3, "Unit= needs a unit name such as 'example.service', not 'a'"),
        ("[Port]\nName=a\nUnit=a b.service\n", 3, "'a b.service' is not a valid unit name"),
        ("[Port]\nName=a\nCheckInUser=carol\n", 3, "unknown user 'carol'"),
        ("[Port]\nName=a\nCheckInGroup=nogroup\n", 3, "unknown group 'nogroup'"),
        ("[Port]\nName=a\nLookUp=alice\n", 3, "'alice' is not a principal ('*', 'user:NAME', 'user:UID', 'group:NAME' or 'group:GID')"),
        ("[Port]\nName=a\nUser=lp\n", 3, "unknown key 'User' in [Port]"),
        ("[Ports]\nName=a\n", 1, "unknown section [Ports] (known: [Limits], [Policy], [Port])"),
    ])
    func badPortsNameFileAndLine(text: String, line: Int, message: String) {
        let e = error { () throws(ConfigurationError) in try configuration(("d.conf", text)) }
        #expect(e == ConfigurationError(file: "d.conf", line: line, message))
    }

    @Test func nameLengthLimit() throws {
        let longest = String(repeating: "n", count: 200)
        #expect(try configuration(("a.conf", "[Port]\nName=\(longest)\n")).declaredPorts.count == 1)
        let e = error { () throws(ConfigurationError) in try configuration(("a.conf", "[Port]\nName=\(longest)x\n")) }
        #expect(e?.message.hasPrefix("a port name has at most 200 bytes") == true)
    }

    @Test func extensionSectionsAndKeysAreIgnored() throws {
        let c = try configuration(("a.conf", "[X-Vendor]\nAnything=1\n[Limits]\nX-Note=hi\n[Port]\nName=a\nX-Tag=1\n"))
        #expect(c.declaredPorts.map(\.name) == ["a"])
    }
}

@Suite struct ConfigurationFileTests {
    @Test func fileThenDropInsInLexicalOrder() throws {
        let dir = try TemporaryDirectory()
        let file = dir.appending("portd.conf")
        let dropIns = dir.appending("portd.conf.d")
        try write("[Limits]\nMaxClients=10\nNamesPerClient=10\n[Policy]\nAllowLookUp=main *\n", to: file)
        try FileManager.default.createDirectory(atPath: dropIns, withIntermediateDirectories: false)
        // Written out of order; byte order is digits < upper case < lower case.
        try write("[Limits]\nMaxClients=50\n[Policy]\nAllowLookUp=lower *\n", to: "\(dropIns)/a-lower.conf")
        try write("[Limits]\nMaxClients=30\n[Policy]\nAllowLookUp=second *\n", to: "\(dropIns)/20-second.conf")
        try write("[Limits]\nMaxClients=40\n[Policy]\nAllowLookUp=upper *\n", to: "\(dropIns)/B-upper.conf")
        try write("[Limits]\nMaxClients=20\nNamesPerClient=20\n[Policy]\nAllowLookUp=first *\n", to: "\(dropIns)/10-first.conf")
        try write("[Limits]\nMaxClients=99\n", to: "\(dropIns)/30-ignored.conf.disabled")
        try write("[Limits]\nMaxClients=99\n", to: "\(dropIns)/.40-hidden.conf")

        let c = try PortdConfiguration.load(ConfigurationPaths(file: file))
        #expect(c.sources == [file] + ["10-first", "20-second", "B-upper", "a-lower"].map { "\(dropIns)/\($0).conf" })
        #expect(c.limits.maxClients == 50)
        #expect(c.limits.namesPerClient == 20)
        #expect(c.policy.rules.map(\.pattern.text) == ["main", "first", "second", "upper", "lower"])
    }

    @Test func missingFileAndDirectoryMeanDefaults() throws {
        let dir = try TemporaryDirectory()
        let c = try PortdConfiguration.load(file: dir.appending("none.conf"), dropInDirectory: dir.appending("none.conf.d"))
        #expect(c == .default)
    }

    @Test func dropInsAloneApply() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.appending("d"), withIntermediateDirectories: false)
        try write("[Port]\nName=only.dropin\n", to: dir.appending("d/a.conf"))
        let c = try PortdConfiguration.load(file: dir.appending("missing.conf"), dropInDirectory: dir.appending("d"))
        #expect(c.declaredPorts.map(\.name) == ["only.dropin"])
    }

    @Test func anExplicitFileMustExist() throws {
        let dir = try TemporaryDirectory()
        let path = dir.appending("portd.conf")
        #expect(throws: ConfigurationError(file: path, line: nil, "no such file")) {
            try PortdConfiguration.load(file: path, dropInDirectory: nil, requireFile: true, accounts: FakeAccounts())
        }
    }

    @Test func errorsInADropInNameThatFile() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.appending("d"), withIntermediateDirectories: false)
        try write("[Limits]\nMaxClients=10\n", to: dir.appending("d/10-good.conf"))
        try write("[Limits]\n\nFoo=1\n", to: dir.appending("d/20-bad.conf"))
        #expect(throws: ConfigurationError(file: dir.appending("d/20-bad.conf"), line: 3, "unknown key 'Foo' in [Limits]")) {
            try PortdConfiguration.load(file: nil, dropInDirectory: dir.appending("d"))
        }
    }

    @Test func unreadableInputIsAnErrorForTheWholeFile() throws {
        let dir = try TemporaryDirectory()
        let notUTF8 = dir.appending("latin1.conf")
        try Data([0x5B, 0x4C, 0x69, 0x6D, 0x69, 0x74, 0x73, 0x5D, 0x0A, 0x23, 0xE9, 0x0A]).write(to: URL(fileURLWithPath: notUTF8))
        #expect(throws: ConfigurationError(file: notUTF8, line: nil, "not UTF-8 text")) {
            try PortdConfiguration.load(file: notUTF8, dropInDirectory: nil)
        }

        let withNUL = dir.appending("nul.conf")
        try Data([0x5B, 0x00, 0x5D]).write(to: URL(fileURLWithPath: withNUL))
        #expect(throws: ConfigurationError(file: withNUL, line: nil, "contains a NUL byte")) {
            try PortdConfiguration.load(file: withNUL, dropInDirectory: nil)
        }

        let big = dir.appending("big.conf")
        try Data(repeating: UInt8(ascii: "#"), count: PortdConfiguration.maximumFileBytes + 1).write(to: URL(fileURLWithPath: big))
        #expect(throws: ConfigurationError(file: big, line: nil, "larger than 1048576 bytes")) {
            try PortdConfiguration.load(file: big, dropInDirectory: nil)
        }

        #expect(throws: ConfigurationError(file: dir.path, line: nil, "cannot read: Is a directory")) {
            try PortdConfiguration.load(file: dir.path, dropInDirectory: nil)
        }

        #expect(throws: ConfigurationError(file: big, line: nil, "cannot read the drop-in directory: Not a directory")) {
            try PortdConfiguration.load(file: nil, dropInDirectory: big)
        }
    }

    @Test func aSubdirectoryNamedLikeADropInIsAnError() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.appending("d/x.conf"), withIntermediateDirectories: true)
        #expect(throws: ConfigurationError(file: dir.appending("d/x.conf"), line: nil, "cannot read: Is a directory")) {
            try PortdConfiguration.load(file: nil, dropInDirectory: dir.appending("d"))
        }
    }
}

@Suite struct ConfigurationSupportTests {
    @Test func systemAccountDatabaseKnowsRoot() throws {
        let accounts = SystemAccountDatabase()
        #expect(try accounts.userID(named: "root") == 0)
        #expect(try accounts.groupID(named: "root") == 0)
        #expect(try accounts.userID(named: "portd-no-such-user-\(getpid())") == nil)
        #expect(try accounts.groupID(named: "portd-no-such-group-\(getpid())") == nil)
        // Through the real loader: names resolve at load time.
        let c = try PortdConfiguration.interpret(
            [try IniDocument(parsing: "[Policy]\nAllowRegister=* user:root group:root\n", file: "r.conf")],
            accounts: accounts)
        #expect(c.policy.rules[0].principals == [.user(0), .group(0)])
    }

    @Test func defaultPaths() {
        func resolve(_ explicit: String?, _ instance: DaemonInstance?, _ environment: [String: String]) -> ConfigurationPaths {
            ConfigurationPaths.resolve(explicitFile: explicit, instance: instance) { environment[$0] }
        }
        let home = ["HOME": "/home/alice", "XDG_CONFIG_HOME": "/home/alice/.cfg"]
        #expect(resolve(nil, .system, home) == ConfigurationPaths(file: "/etc/portd/portd.conf"))
        #expect(resolve(nil, .system, home).dropInDirectory == "/etc/portd/portd.conf.d")
        #expect(resolve(nil, nil, home).file == "/home/alice/.cfg/portd/portd.conf")
        #expect(resolve(nil, .user, home).dropInDirectory == "/home/alice/.cfg/portd/portd.conf.d")
        #expect(resolve(nil, .user, ["HOME": "/home/alice/", "XDG_CONFIG_HOME": "relative"]).file == "/home/alice/.config/portd/portd.conf")
        #expect(resolve(nil, .user, [:]) == ConfigurationPaths(file: nil))
        #expect(resolve(nil, .user, [:]).dropInDirectory == nil)
        #expect(resolve("/tmp/t.conf", .system, home) == ConfigurationPaths(file: "/tmp/t.conf"))
        #expect(resolve("/tmp/t.conf", .system, home).dropInDirectory == "/tmp/t.conf.d")
    }
}

/// `portd --check-config` (issue 14): each file's error with file and line,
/// status 1; a good configuration says which files it read, status 0.
@Suite struct CheckConfigTests {
    @Test func eachBrokenFileIsReportedAndNothingStarts() throws {
        let dir = try TemporaryDirectory()
        let main = dir.appending("portd.conf")
        try "[Policy]\nnot a line\n".write(toFile: main, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: main + ".d", withIntermediateDirectories: false)
        try "garbage\n".write(toFile: main + ".d/10-x.conf", atomically: true, encoding: .utf8)
        let socket = dir.appending("portd.sock")
        let r = try runPortd(["--socket", socket, "--config", main, "--check-config"])
        #expect(r.status == 1)
        #expect(r.standardError.contains("\(main):2:"), "\(r.standardError)")
        #expect(r.standardError.contains("\(main).d/10-x.conf:1:"), "\(r.standardError)")
        #expect(!FileManager.default.fileExists(atPath: socket), "nothing is bound")
    }

    /// Every error of a file, syntax and meaning, each once and in order;
    /// Exec= naming no executable file is one (systemd-analyze verify's
    /// check of ExecStart=), while an executable one and a script without
    /// its x bit are told apart. The assignments of a bad section header
    /// are nobody's: no "unknown key" for them.
    @Test func everyErrorOfAFileIsReported() throws {
        let dir = try TemporaryDirectory()
        let main = dir.appending("portd.conf")
        let script = dir.appending("not-executable.sh")
        try "#!/bin/sh\n".write(toFile: script, atomically: true, encoding: .utf8)
        try [
            "[Limits]",  // 1
            "MaxClients=lots",  // 2: meaning
            "this is not a line",  // 3: syntax
            "[Port",  // 4: syntax, and its assignments are nobody's
            "Bogus=1",  // 5
            "[Port]",  // 6
            "Name=org.example.missing",  // 7
            "Exec=/nonexistent/bin --serve",  // 8: not executable
            "[Port]",  // 9
            "Name=org.example.script",  // 10
            "Exec=\(script)",  // 11: not executable
            "[Port]",  // 12
            "Name=org.example.good",  // 13
            "Exec=/bin/cat",  // 14: good
            "[Policy]",  // 15
            "DefaultLookUp=maybe",  // 16: meaning
        ].joined(separator: "\n").write(toFile: main, atomically: true, encoding: .utf8)
        let r = try runPortd(["--config", main, "--check-config"])
        #expect(r.status == 1)
        let lines = r.standardError.split(separator: "\n").map(String.init)
        #expect(lines.map { $0.split(separator: ":").dropFirst(2).first.map(String.init) } == ["3", "4", "2", "8", "11", "16"], "\(r.standardError)")
        #expect(lines.count == 6)
        #expect(lines.contains("portd: \(main):8: Exec= program '/nonexistent/bin' is not executable: no such file"))
        #expect(lines.contains("portd: \(main):11: Exec= program '\(script)' is not executable: not an executable file"))
        #expect(r.standardOutput.isEmpty)

        // portd itself still starts with a missing Exec= program (it may
        // come later), but not with the other errors.
        try "[Port]\nName=org.example.missing\nExec=/nonexistent/bin\n".write(toFile: main, atomically: true, encoding: .utf8)
        #expect(try runPortd(["--config", main, "--check-config"]).status == 1)
        let d = try DaemonProcess.started(arguments: ["--config", main])
        #expect(try d.portctl(["lookup", "org.example.missing"]).status == 0)
    }

    @Test func aGoodConfigurationSaysWhatItRead() throws {
        let dir = try TemporaryDirectory()
        let main = dir.appending("portd.conf")
        try "# nothing changed\n".write(toFile: main, atomically: true, encoding: .utf8)
        let r = try runPortd(["--config", main, "--check-config"])
        #expect(r.status == 0, "\(r.standardError)")
        #expect(r.standardOutput == "portd: the configuration is good: \(main)\n")
    }
}
