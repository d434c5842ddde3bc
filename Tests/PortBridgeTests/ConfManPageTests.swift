// portd-bridge.conf(5) against the parser: every key the page lists, with
// a value of its kind, is accepted in its section (and a key the page does
// not list is not), and every default the page states is the parser's.

import Foundation
import PortTestSupport
import Testing

@testable import PortBridge

@Suite struct ConfManPageTests {
    /// The page's keys by section: "[NATS]" → ["URL", …], in page order.
    static func pageKeys() throws -> [(section: String, key: String, item: String)] {
        let page = try String(contentsOfFile: SourceTree.path("man/portd-bridge.conf.5"), encoding: .utf8)
        var keys: [(String, String, String)] = []
        var section = ""
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(".Sh [") {
                section = String(line.dropFirst(4))
            } else if line.hasPrefix(".It Cm "), !section.isEmpty, let equals = line.firstIndex(of: "=") {
                keys.append((section, String(line.dropFirst(7)[..<equals]), ""))
            } else if line.hasPrefix(".Sh ") {
                section = ""
            } else if !keys.isEmpty, !section.isEmpty {
                keys[keys.count - 1].2 += line + "\n"
            }
        }
        return keys
    }

    /// A valid value for each key the page documents.
    static func sample(_ key: String, secret: String) -> String? {
        switch key {
        case "Socket": "/run/portd/portd.sock"
        case "BridgeID": "host-1"
        case "URL": "nats://127.0.0.1:4222"
        case "SubjectPrefix": "port.test"
        case "Bucket": "PORTD_NAMES"
        case "User": "portd-bridge"
        case "PasswordFile", "TokenFile", "CredentialsFile", "NKeySeedFile": secret
        case "ConnectTimeout", "PingInterval", "RequestTimeout", "LeaseTime", "SessionCheck": "1min"
        case "Name": "org.example.echo"
        case "Pattern": "org.example.*"
        case "Window": "8"
        default: nil
        }
    }

    private func parse(_ text: String) -> Result<BridgeConfiguration, BridgeConfigurationErrors> {
        BridgeConfiguration.parse(text, file: "bridge.conf", hostName: "host")
    }

    @Test func everyKeyThePageListsIsAcceptedInItsSection() throws {
        let keys = try Self.pageKeys()
        #expect(keys.count >= 20, "\(keys.map(\.key))")
        let directory = try TemporaryDirectory()
        let secret = directory.appending("secret")
        try "s3cret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        for (section, key, _) in keys {
            let value = try #require(Self.sample(key, secret: secret), "no sample value for \(section) \(key)")
            if case .failure(let errors) = parse("\(section)\n\(key)=\(value)\n") {
                Issue.record("\(section) \(key)=\(value): \(errors)")
            }
        }
        // A key the page does not list is an error, in every section.
        for section in Set(keys.map(\.section)) {
            guard case .failure = parse("\(section)\nNoSuchKey=1\n") else {
                Issue.record("\(section) accepts a key the page does not list")
                continue
            }
        }
    }

    @Test func everyDefaultThePageStatesIsTheParsers() throws {
        let defaults = try parse("").get()
        func text(_ d: Duration) -> String {
            let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
            return ms % 1000 == 0 ? "\(ms / 1000)s" : "\(ms)ms"
        }
        let code: [String: String] = [
            "URL": defaults.nats.urls.joined(separator: " "),
            "SubjectPrefix": defaults.subjectPrefix,
            "Bucket": defaults.bucket,
            "ConnectTimeout": text(defaults.nats.connectTimeout),
            "PingInterval": text(defaults.nats.pingInterval),
            "RequestTimeout": text(defaults.requestTimeout),
            "LeaseTime": text(defaults.leaseTime),
            "SessionCheck": text(defaults.sessionCheck),
            "Window": "\(defaults.window)",
        ]
        var checked = 0
        for (section, key, item) in try Self.pageKeys() {
            guard let expected = code[key] else { continue }
            // "Default:" then the value, on the same line or as the next line's .Ql.
            let rest = try #require(item.range(of: "Default:").map { item[$0.upperBound...] }, "\(section) \(key): no default")
            let value = rest.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { !$0.isEmpty }.map { $0.hasPrefix(".Ql ") ? String($0.dropFirst(4)) : $0 } ?? ""
            let stated = value.trimmingCharacters(in: CharacterSet(charactersIn: " .,"))
            #expect(stated == expected, "\(section) \(key): the page says \(stated), the parser \(expected)")
            checked += 1
        }
        #expect(checked == code.count)
    }
}
