// PortdConfiguration: everything portd.conf(5) says, read from the main
// file and then from each `*.conf` in the drop-in directory, in lexical
// (byte) order of file name; a later file refines an earlier one: a limit
// or default set later wins, rules and list values are appended, and an
// empty assignment resets a list (systemd's drop-in semantics).
//
// Invariants: loading is all or nothing: at the first error (file and
// line) nothing of the configuration is used (`check` reports them all); a missing file or
// directory is no error (the defaults apply), an unreadable one is. User
// and group names are resolved here, once (AccountDatabase), so that
// decisions during serving are pure and never block. Drop-in files whose
// name starts with "." or does not end in ".conf" are ignored, as systemd
// does.

import PortCore

struct PortdConfiguration: Equatable, Sendable {
    var limits = DaemonLimits.default
    var policy = Policy.default
    var declaredPorts: [DeclaredPort] = []
    /// The files that were read, in the order read (for the log).
    var sources: [String] = []

    /// The largest configuration file portd reads.
    static let maximumFileBytes = 1 << 20

    /// The defaults: no file at all.
    static let `default` = PortdConfiguration()

    /// Loads `file` (nil or missing: defaults) and the drop-ins in
    /// `dropInDirectory` (nil or missing: none), resolving user and group
    /// names with the system's account database.
    static func load(file: String?, dropInDirectory: String?) throws(ConfigurationError) -> PortdConfiguration {
        try load(file: file, dropInDirectory: dropInDirectory, requireFile: false, accounts: SystemAccountDatabase())
    }

    /// Loads the files `paths` names (see ConfigurationPaths); with
    /// `requireFile` (an explicit `--config`), the main file must exist.
    static func load(_ paths: ConfigurationPaths, requireFile: Bool = false) throws(ConfigurationError) -> PortdConfiguration {
        try load(
            file: paths.file, dropInDirectory: paths.dropInDirectory, requireFile: requireFile,
            accounts: SystemAccountDatabase())
    }

    /// As `load(file:dropInDirectory:)`; with `requireFile`, a missing
    /// `file` is an error (for an explicit `--config`).
    static func load(
        file: String?, dropInDirectory: String?, requireFile: Bool, accounts: any AccountDatabase
    ) throws(ConfigurationError) -> PortdConfiguration {
        var documents: [IniDocument] = []
        if let file {
            if let text = try readText(file) {
                documents.append(try IniDocument(parsing: text, file: file))
            } else if requireFile {
                throw ConfigurationError(file: file, line: nil, "no such file")
            }
        }
        if let dropInDirectory {
            for path in try dropInFiles(in: dropInDirectory) {
                // A file removed between the listing and the read is simply not there.
                guard let text = try readText(path) else { continue }
                documents.append(try IniDocument(parsing: text, file: path))
            }
        }
        return try interpret(documents, accounts: accounts)
    }

    /// `portd --check-config`: every error of every file, in the order
    /// read: each file's syntax errors (a bad line is left out and the
    /// rest read), then the errors of their meaning, every Exec= program
    /// checked to be an executable file (as `systemd-analyze verify`
    /// does); and the files read. Empty errors: the configuration is good.
    static func check(_ paths: ConfigurationPaths, requireFile: Bool) -> (errors: [ConfigurationError], files: [String]) {
        var errors: [ConfigurationError] = []
        var documents: [IniDocument] = []
        var files: [String] = []
        var candidates: [(path: String, required: Bool)] = []
        if let file = paths.file { candidates.append((file, requireFile)) }
        if let directory = paths.dropInDirectory {
            do {
                for path in try dropInFiles(in: directory) { candidates.append((path, false)) }
            } catch {
                errors.append(error)
            }
        }
        for (path, required) in candidates {
            do {
                guard let text = try readText(path) else {
                    if required { errors.append(ConfigurationError(file: path, line: nil, "no such file")) }
                    continue
                }
                files.append(path)
                let (document, syntaxErrors) = IniDocument.parse(text, file: path)
                errors += syntaxErrors
                documents.append(document)
            } catch {
                errors.append(error)
            }
        }
        var builder = ConfigurationBuilder(accounts: SystemAccountDatabase(), checksPrograms: true)
        for document in documents { builder.collect(document) }
        return (errors + builder.errors, files)
    }

    /// Builds a configuration from parsed documents, in order. Pure but for
    /// the account lookups.
    static func interpret(_ documents: [IniDocument], accounts: any AccountDatabase) throws(ConfigurationError)
        -> PortdConfiguration
    {
        var builder = ConfigurationBuilder(accounts: accounts)
        for document in documents { try builder.apply(document) }
        return builder.configuration
    }

    // MARK: - Questions the daemon asks

    /// The declared port called `name`, if any.
    func declaredPort(named name: String) -> DeclaredPort? {
        declaredPorts.first { $0.name == name }
    }

    /// REGISTER: a declared name is never registered (portd holds it; its
    /// service uses CHECKIN); any other name is the policy's decision.
    func registerDecision(name: String, uid: UInt32, gids: [UInt32]) -> Policy.Decision {
        if let refusal = policy.sameUserDecision(uid: uid) { return refusal }
        if let port = declaredPort(named: name) {
            return Policy.Decision(allowed: false, reason: "'\(name)' is a declared port (\(port.origin)); its service checks in")
        }
        return policy.decide(.register, name: name, uid: uid, gids: gids)
    }

    /// `lookUpDecision(name:uid:gids:).allowed` without the reason (text
    /// built for a log line): the name server asks it for every name a
    /// LIST looks at and every event a watcher may be sent.
    func mayLookUp(name: String, uid: UInt32, gids: [UInt32]) -> Bool {
        if let only = policy.onlyUID, uid != only { return false }
        if let port = declaredPort(named: name), let allowed = port.mayLookUp(uid: uid, gids: gids) { return allowed }
        return policy.mayLookUp(name: name, uid: uid, gids: gids)
    }

    /// LOOKUP: a declared port with LookUp= decides by that list alone;
    /// every other name is the policy's decision.
    func lookUpDecision(name: String, uid: UInt32, gids: [UInt32]) -> Policy.Decision {
        if let refusal = policy.sameUserDecision(uid: uid) { return refusal }
        if let port = declaredPort(named: name), let allowed = port.mayLookUp(uid: uid, gids: gids) {
            return Policy.Decision(
                allowed: allowed, reason: "LookUp= of declared port '\(name)' (\(port.origin))")
        }
        return policy.decide(.lookUp, name: name, uid: uid, gids: gids)
    }

    // MARK: - Files

    /// The text of `path`, or nil when it does not exist.
    private static func readText(_ path: String) throws(ConfigurationError) -> String? {
        let bytes: [UInt8]
        do {
            guard let read = try FileSystem.contents(ofFile: path, maximumBytes: maximumFileBytes) else { return nil }
            bytes = read
        } catch where error.errno == .fileTooLarge {
            throw ConfigurationError(file: path, line: nil, "larger than \(maximumFileBytes) bytes")
        } catch {
            throw ConfigurationError(file: path, line: nil, "cannot read: \(error.errno)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError(file: path, line: nil, "not UTF-8 text")
        }
        if text.utf8.contains(0) { throw ConfigurationError(file: path, line: nil, "contains a NUL byte") }
        return text
    }

    /// The drop-in files of `directory`, in the order they apply.
    private static func dropInFiles(in directory: String) throws(ConfigurationError) -> [String] {
        let names: [String]
        do {
            guard let listed = try FileSystem.entries(ofDirectory: directory) else { return [] }
            names = listed
        } catch {
            throw ConfigurationError(file: directory, line: nil, "cannot read the drop-in directory: \(error.errno)")
        }
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        return names
            .filter { $0.hasSuffix(".conf") && !$0.hasPrefix(".") }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .map { "\(base)/\($0)" }
    }
}
