// BridgeConfigurationTests: bridge.conf (portd-bridge.conf(5)) read as the
// page says: defaults, every key, every error with its line.

import Testing

@testable import PortBridge

@Suite struct BridgeConfigurationTests {
    @Test func emptyFileIsTheDefaults() throws {
        let c = try BridgeConfiguration.parse("", file: "b.conf", hostName: "host.example").get()
        #expect(c.bridgeID == "host_example")
        #expect(c.subjectPrefix == "port")
        #expect(c.bucket == "PORTD_NAMES")
        #expect(c.nats.urls == ["nats://127.0.0.1:4222"])
        #expect(c.window == 64)
        #expect(!c.exports("org.example.echo"))
        #expect(!c.imports("org.example.echo"))
    }

    @Test func everyKey() throws {
        let text = """
            [Bridge]
            BridgeID=host-a
            [NATS]
            URL=nats://127.0.0.1:4000
            URL=nats://127.0.0.1:4001
            SubjectPrefix=ports.test
            Bucket=NAMES_T
            ConnectTimeout=250ms
            PingInterval=1s
            RequestTimeout=3s
            LeaseTime=6s
            SessionCheck=1500ms
            [Export]
            Name=org.example.echo
            Pattern=org.example.svc.*
            [Import]
            Pattern=org.remote.*
            Window=8
            """
        let c = try BridgeConfiguration.parse(text, file: "b.conf", hostName: "h").get()
        #expect(c.bridgeID == "host-a")
        #expect(c.nats.urls == ["nats://127.0.0.1:4000", "nats://127.0.0.1:4001"])
        #expect(c.subjectPrefix == "ports.test")
        #expect(c.bucket == "NAMES_T")
        #expect(c.nats.connectTimeout == .milliseconds(250))
        #expect(c.nats.pingInterval == .seconds(1))
        #expect(c.requestTimeout == .seconds(3))
        #expect(c.leaseTime == .seconds(6))
        #expect(c.sessionCheck == .milliseconds(1500))
        #expect(c.window == 8)
        #expect(c.exports("org.example.echo"))
        #expect(!c.exports("org.example.echoes"))
        #expect(c.exports("org.example.svc.one"))
        #expect(c.imports("org.remote.x"))
        #expect(!c.imports("org.example.echo"))
    }

    @Test func everyErrorWithItsLine() {
        let text = """
            [Bridge]
            BridgeID=a.b
            [NATS]
            URL=http://x
            LeaseTime=10ms
            Color=blue
            [Import]
            Window=0
            Pattern=a/b
            [Other]
            X=1
            """
        guard case .failure(let errors) = BridgeConfiguration.parse(text, file: "b.conf", hostName: "h") else {
            Issue.record("accepted")
            return
        }
        #expect(errors.errors.map(\.line) == [2, 4, 5, 6, 8, 9, 11])
        #expect(errors.description.contains("b.conf:6: unknown key 'Color' in [NATS]"))
    }

    @Test func hostNamesBecomeTokens() {
        #expect(BridgeConfiguration.token(fromHostName: "web-1.example.com") == "web-1_example_com")
        #expect(Bridge.isSubjectTokens("org.example.echo"))
        #expect(!Bridge.isSubjectTokens("a..b"))
        #expect(!Bridge.isSubjectTokens("a."))
    }
}
