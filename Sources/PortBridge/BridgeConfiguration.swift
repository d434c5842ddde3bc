// BridgeConfiguration: what bridge.conf (portd-bridge.conf(5)) says, read
// with portd.conf's own syntax (IniDocument) and pattern language
// (NamePattern), so the two files read alike. Pure: text in, configuration
// or every error (FILE:LINE: message) out.
//
// Invariants: a configuration with any error is not used (a reload keeps
// the one before); every key has a default, so an empty file is a bridge
// that exports and imports nothing; BridgeID and SubjectPrefix are valid
// subject tokens, so every subject the bridge makes from them is valid.

import PortCore
import PortDaemon

public struct BridgeConfiguration: Sendable, Equatable {
    /// portd's control socket; nil: the instance's default.
    public var socket: String?
    /// This host on NATS: one subject token.
    public var bridgeID: String
    public var nats = NatsSettings()
    /// The first token(s) of every subject.
    public var subjectPrefix = "port"
    /// The JetStream key-value bucket of exported names.
    public var bucket = "PORTD_NAMES"
    /// Deadline of session opens, acknowledgements and pings.
    public var requestTimeout: Duration = .seconds(5)
    /// A registry entry not refreshed for this long is dead.
    public var leaseTime: Duration = .seconds(10)
    /// Unacknowledged one-way messages per session.
    public var window = 64
    /// An idle session is pinged this often (its peer's liveness).
    public var sessionCheck: Duration = .seconds(2)
    var exports: [NamePattern] = []
    var imports: [NamePattern] = []

    public init(bridgeID: String) { self.bridgeID = bridgeID }

    /// Whether `name` is to be exported.
    public func exports(_ name: String) -> Bool { exports.contains { $0.matches(name) } }
    /// Whether `name` is to be imported.
    public func imports(_ name: String) -> Bool { imports.contains { $0.matches(name) } }
    public var exportPatterns: [String] { exports.map(\.text) }
    public var importPatterns: [String] { imports.map(\.text) }

    /// The default path for the system or the per-user instance.
    public static func defaultPath(system: Bool, environment: (String) -> String?) -> String {
        if system { return "/etc/portd/bridge.conf" }
        if let config = environment("XDG_CONFIG_HOME"), config.hasPrefix("/") { return config + "/portd/bridge.conf" }
        if let home = environment("HOME"), home.hasPrefix("/") { return home + "/.config/portd/bridge.conf" }
        return "/etc/portd/bridge.conf"
    }

    /// A host name made a subject token: every character outside
    /// A-Z a-z 0-9 - _ becomes "_".
    public static func token(fromHostName host: String) -> String {
        let mapped = String(host.unicodeScalars.map { isTokenCharacter($0) ? Character($0) : "_" })
        return mapped.isEmpty ? "host" : mapped
    }

    static func isTokenCharacter(_ s: Unicode.Scalar) -> Bool {
        ("A"..."Z").contains(s) || ("a"..."z").contains(s) || ("0"..."9").contains(s) || s == "-" || s == "_"
    }

    /// Parses `text` (read from `file`); every error, or the configuration.
    package static func parse(
        _ text: String, file: String, hostName: String
    ) -> Result<BridgeConfiguration, BridgeConfigurationErrors> {
        var errors: [ConfigurationError] = []
        let document: IniDocument
        do {
            document = try IniDocument(parsing: text, file: file)
        } catch {
            return .failure(BridgeConfigurationErrors(errors: [error]))
        }
        var c = BridgeConfiguration(bridgeID: token(fromHostName: hostName))
        var urls: [String] = []
        func fail(_ a: IniDocument.Assignment, _ message: String) {
            errors.append(ConfigurationError(file: file, line: a.line, message))
        }
        func duration(_ a: IniDocument.Assignment) -> Duration? {
            guard let d = parseDuration(a.value), d > .zero else {
                fail(a, "\(a.key)=\(a.value): not a duration (for example 500ms, 2s, 1min)")
                return nil
            }
            return d
        }
        func path(_ a: IniDocument.Assignment) -> String? {
            guard a.value.hasPrefix("/") else {
                fail(a, "\(a.key)=\(a.value): not an absolute path")
                return nil
            }
            return a.value
        }
        for section in document.sections {
            for a in section.assignments {
                switch (section.name, a.key) {
                case ("Bridge", "Socket"): c.socket = path(a)
                case ("Bridge", "BridgeID"):
                    if !a.value.isEmpty, a.value.unicodeScalars.allSatisfy(isTokenCharacter) {
                        c.bridgeID = a.value
                    } else {
                        fail(a, "BridgeID=\(a.value): one subject token of A-Z a-z 0-9 - _")
                    }
                case ("NATS", "URL"):
                    if a.value.isEmpty {
                        urls = []
                    } else if a.value.hasPrefix("nats://") || a.value.hasPrefix("tls://") {
                        urls.append(a.value)
                    } else {
                        fail(a, "URL=\(a.value): a NATS URL (nats://HOST:PORT)")
                    }
                case ("NATS", "SubjectPrefix"):
                    let tokens = a.value.split(separator: ".", omittingEmptySubsequences: false)
                    if !a.value.isEmpty, tokens.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy(isTokenCharacter) }) {
                        c.subjectPrefix = a.value
                    } else {
                        fail(a, "SubjectPrefix=\(a.value): subject tokens of A-Z a-z 0-9 - _ separated by dots")
                    }
                case ("NATS", "Bucket"):
                    if !a.value.isEmpty, a.value.unicodeScalars.allSatisfy(isTokenCharacter) {
                        c.bucket = a.value
                    } else {
                        fail(a, "Bucket=\(a.value): a bucket name of A-Z a-z 0-9 - _")
                    }
                case ("NATS", "User"): c.nats.user = a.value.isEmpty ? nil : a.value
                case ("NATS", "PasswordFile"): if let p = path(a) { c.nats.password = secret(p, a, &errors, file) }
                case ("NATS", "TokenFile"): if let p = path(a) { c.nats.token = secret(p, a, &errors, file) }
                case ("NATS", "CredentialsFile"): c.nats.credentialsFile = path(a)
                case ("NATS", "NKeySeedFile"): c.nats.nkeySeedFile = path(a)
                case ("NATS", "ConnectTimeout"): if let d = duration(a) { c.nats.connectTimeout = d }
                case ("NATS", "PingInterval"): if let d = duration(a) { c.nats.pingInterval = d }
                case ("NATS", "RequestTimeout"): if let d = duration(a) { c.requestTimeout = d }
                case ("NATS", "LeaseTime"):
                    if let d = duration(a) {
                        if d >= .seconds(1) { c.leaseTime = d } else { fail(a, "LeaseTime=\(a.value): at least 1s") }
                    }
                case ("NATS", "SessionCheck"): if let d = duration(a) { c.sessionCheck = d }
                case ("Export", "Name"), ("Export", "Pattern"), ("Import", "Name"), ("Import", "Pattern"):
                    if a.value.isEmpty {
                        if section.name == "Export" { c.exports = [] } else { c.imports = [] }
                        continue
                    }
                    do {
                        let p = try NamePattern(a.key == "Name" ? escaped(a.value) : a.value)
                        if section.name == "Export" { c.exports.append(p) } else { c.imports.append(p) }
                    } catch {
                        fail(a, "\(a.key)=\(a.value): \(error.message)")
                    }
                case ("Import", "Window"):
                    if let n = Int(a.value), (1...4096).contains(n) { c.window = n } else { fail(a, "Window=\(a.value): 1 to 4096") }
                case ("Bridge", _), ("NATS", _), ("Export", _), ("Import", _):
                    fail(a, "unknown key '\(a.key)' in [\(section.name)]")
                default:
                    fail(a, "unknown section [\(section.name)] (Bridge, NATS, Export, Import)")
                }
            }
        }
        if !urls.isEmpty { c.nats.urls = urls }
        c.nats.name = "portd-bridge \(c.bridgeID)"
        return errors.isEmpty ? .success(c) : .failure(BridgeConfigurationErrors(errors: errors))
    }

    /// A name as a pattern matching only itself.
    private static func escaped(_ name: String) -> String {
        name.map { "*?[]\\".contains($0) ? "\\\($0)" : String($0) }.joined()
    }

    private static func secret(
        _ path: String, _ a: IniDocument.Assignment, _ errors: inout [ConfigurationError], _ file: String
    ) -> String? {
        guard let bytes = try? FileSystem.contents(ofFile: path, maximumBytes: 4096), let text = UTF8Text.string(bytes) else {
            errors.append(ConfigurationError(file: file, line: a.line, "\(a.key)=\(path): cannot be read"))
            return nil
        }
        return String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
    }

    /// "500ms", "2s", "1.5s", "1min", "1h"; a bare number is seconds (systemd.time(7)).
    static func parseDuration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 1e-3), ("min", 60), ("s", 1), ("h", 3600)]
        var number = text
        var scale = 1.0
        for (suffix, s) in units where text.hasSuffix(suffix) {
            number = String(text.dropLast(suffix.count))
            scale = s
            break
        }
        guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
        return .milliseconds(Int64((value * scale * 1000).rounded()))
    }
}

/// Every error of a configuration file, one per line.
package struct BridgeConfigurationErrors: Error, Sendable, CustomStringConvertible {
    package let errors: [ConfigurationError]
    package var description: String { errors.map(\.description).joined(separator: "\n") }
}
