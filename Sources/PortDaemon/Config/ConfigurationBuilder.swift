// ConfigurationBuilder: what each section and key of portd.conf(5) means,
// applied document by document to one growing PortdConfiguration.
//
//   [Limits]  NamesPerClient= PendingLookupsPerClient= WatchesPerClient=
//             ClientsPerUID= MaxRequestBytes= MaxClients=
//             (later wins; empty: back to the default)
//   [Policy]  DefaultRegister= DefaultLookUp=  allow|deny (empty: allow)
//             AllowRegister= DenyRegister= AllowLookUp= DenyLookUp=
//             PATTERN PRINCIPAL... (appended; empty: forget every rule of
//             that operation read so far)
//   [Port]    Name= (required), CheckInUser= CheckInGroup= LookUp=
//             (lists: appended; empty: reset), Exec= or Unit= (later wins;
//             empty: no activation). A [Port] whose Name= was declared
//             before (in this file or an earlier one) adds to that port.
//
// Sections and keys starting with "X-" are ignored, as systemd ignores
// them (room for extensions); any other unknown section or key is an error.
// Every error names the file and line of the offending assignment.
//
// A bad assignment (or section) is left out and the next one read, so that
// `errors` holds every error of the documents applied, for portd
// --check-config, which prints them all; a configuration with any error is
// not used (`apply` throws the first). With `checksPrograms`
// (--check-config), an Exec= whose program is not an executable file is an
// error too, as `systemd-analyze verify` says of ExecStart=; portd itself
// starts with it (the program may come later; an activation that cannot
// run it is logged).

import PortCore

struct ConfigurationBuilder {
    private(set) var configuration = PortdConfiguration()
    /// Every error met, in order.
    private(set) var errors: [ConfigurationError] = []
    private let accounts: any AccountDatabase
    private let checksPrograms: Bool

    init(accounts: any AccountDatabase, checksPrograms: Bool = false) {
        self.accounts = accounts
        self.checksPrograms = checksPrograms
    }

    /// Applies `document`; throws the first error met, if any.
    mutating func apply(_ document: IniDocument) throws(ConfigurationError) {
        collect(document)
        if let first = errors.first { throw first }
    }

    /// Applies `document`, adding each of its errors to `errors`.
    mutating func collect(_ document: IniDocument) {
        configuration.sources.append(document.file)
        for section in document.sections {
            switch section.name {
            case "Limits", "Policy":
                for assignment in section.assignments {
                    do {
                        if section.name == "Limits" {
                            try applyLimit(assignment, in: section, file: document.file)
                        } else {
                            try applyPolicy(assignment, in: section, file: document.file)
                        }
                    } catch {
                        errors.append(error)
                    }
                }
            case "Port": applyPort(section, file: document.file)
            case let name where name.hasPrefix("X-"): continue
            default:
                errors.append(
                    ConfigurationError(
                        file: document.file, line: section.line,
                        "unknown section [\(section.name)] (known: [Limits], [Policy], [Port])"))
            }
        }
    }

    // MARK: - [Limits]

    private mutating func applyLimit(
        _ assignment: IniDocument.Assignment, in section: IniDocument.Section, file: String
    ) throws(ConfigurationError) {
        guard let key = DaemonLimits.keys.first(where: { $0.name == assignment.key }) else {
            if assignment.key.hasPrefix("X-") { return }
            throw unknownKey(assignment, in: section, file: file)
        }
        if assignment.value.isEmpty {
            configuration.limits[keyPath: key.field] = DaemonLimits.default[keyPath: key.field]
            return
        }
        configuration.limits[keyPath: key.field] = try located(assignment, file) { () throws(InvalidValue) in
            try DaemonLimits.parse(assignment.value, for: key)
        }
    }

    // MARK: - [Policy]

    private mutating func applyPolicy(
        _ assignment: IniDocument.Assignment, in section: IniDocument.Section, file: String
    ) throws(ConfigurationError) {
        let value = assignment.value
        switch assignment.key {
        case "DefaultRegister":
            configuration.policy.defaultRegister = try verdict(assignment, file)
            configuration.policy.defaultRegisterIsSet = !value.isEmpty
        case "DefaultLookUp":
            configuration.policy.defaultLookUp = try verdict(assignment, file)
        case "AllowRegister", "DenyRegister", "AllowLookUp", "DenyLookUp":
            let operation: Policy.Operation = assignment.key.hasSuffix("Register") ? .register : .lookUp
            if value.isEmpty {
                configuration.policy.rules.removeAll { $0.operation == operation }
                return
            }
            let accounts = self.accounts
            let rule = try located(assignment, file) { () throws(InvalidValue) in
                let words = try QuotedWords.split(value)
                guard words.count >= 2 else {
                    throw InvalidValue(
                        "\(assignment.key)= needs a name pattern and at least one principal, "
                            + "as in '\(assignment.key)=org.example.* user:alice group:staff'")
                }
                return Policy.Rule(
                    verdict: assignment.key.hasPrefix("Allow") ? .allow : .deny, operation: operation,
                    pattern: try NamePattern(words[0]),
                    principals: try words.dropFirst().map { (word) throws(InvalidValue) in
                        try Principal.parse(word, accounts: accounts)
                    },
                    origin: "\(file):\(assignment.line)")
            }
            configuration.policy.rules.append(rule)
        default:
            if assignment.key.hasPrefix("X-") { return }
            throw unknownKey(assignment, in: section, file: file)
        }
    }

    private func verdict(_ assignment: IniDocument.Assignment, _ file: String) throws(ConfigurationError) -> Policy.Verdict {
        switch assignment.value {
        case "", "allow": return .allow
        case "deny": return .deny
        default:
            throw ConfigurationError(
                file: file, line: assignment.line, "\(assignment.key)= is 'allow' or 'deny', not '\(assignment.value)'")
        }
    }

    // MARK: - [Port]

    private mutating func applyPort(_ section: IniDocument.Section, file: String) {
        do {
            try applyPortSection(section, file: file)
        } catch {
            errors.append(error)
        }
    }

    /// A [Port] section: an error of its Name= leaves the whole section
    /// out; an error of another assignment, that assignment.
    private mutating func applyPortSection(_ section: IniDocument.Section, file: String) throws(ConfigurationError) {
        let names = section.assignments.filter { $0.key == "Name" }
        guard let nameAssignment = names.first else {
            throw ConfigurationError(file: file, line: section.line, "[Port] needs Name=, the port's name")
        }
        if let other = names.dropFirst().first(where: { $0.value != nameAssignment.value }) {
            throw ConfigurationError(
                file: file, line: other.line,
                "a [Port] section declares one port; Name= is already '\(nameAssignment.value)' (line \(nameAssignment.line))")
        }
        let name = nameAssignment.value
        if let problem = DeclaredPort.nameProblem(name) {
            throw ConfigurationError(file: file, line: nameAssignment.line, problem)
        }

        var port: DeclaredPort
        let existing = configuration.declaredPorts.firstIndex { $0.name == name }
        if let existing {
            port = configuration.declaredPorts[existing]
        } else {
            port = DeclaredPort(name: name, origin: "\(file):\(nameAssignment.line)")
        }

        var activationLine: (key: String, line: Int)? = nil
        for assignment in section.assignments {
            do {
                try applyPort(assignment, to: &port, activationLine: &activationLine, in: section, file: file)
            } catch {
                errors.append(error)
            }
        }

        if let existing {
            configuration.declaredPorts[existing] = port
        } else {
            configuration.declaredPorts.append(port)
        }
    }

    private func applyPort(
        _ assignment: IniDocument.Assignment, to port: inout DeclaredPort,
        activationLine: inout (key: String, line: Int)?, in section: IniDocument.Section, file: String
    ) throws(ConfigurationError) {
        let value = assignment.value
        let accounts = self.accounts
        switch assignment.key {
        case "Name":
            return
        case "CheckInUser":
            try appendWords(to: &port.checkInUIDs, assignment, file) { (word) throws(InvalidValue) in
                try Principal.userID(word, accounts: accounts)
            }
        case "CheckInGroup":
            try appendWords(to: &port.checkInGIDs, assignment, file) { (word) throws(InvalidValue) in
                try Principal.groupID(word, accounts: accounts)
            }
        case "LookUp":
            try appendWords(to: &port.lookUp, assignment, file) { (word) throws(InvalidValue) in
                try Principal.parse(word, accounts: accounts)
            }
        case "Exec", "Unit":
            if let earlier = activationLine, earlier.key != assignment.key, !value.isEmpty {
                throw ConfigurationError(
                    file: file, line: assignment.line,
                    "a port is activated by Exec= or by Unit=, not both (\(earlier.key)= is on line \(earlier.line))")
            }
            if value.isEmpty {
                port.activation = .none
                activationLine = nil
                return
            }
            activationLine = (assignment.key, assignment.line)
            port.activation = try located(assignment, file) { () throws(InvalidValue) in
                try Self.activation(key: assignment.key, value: value)
            }
            if checksPrograms, case .command(let words) = port.activation, let problem = Self.programProblem(words[0]) {
                throw ConfigurationError(file: file, line: assignment.line, problem)
            }
        default:
            if assignment.key.hasPrefix("X-") { return }
            throw unknownKey(assignment, in: section, file: file)
        }
    }

    /// A list key: an empty value resets `list`; otherwise each word of the
    /// value, parsed, is appended to it.
    private func appendWords<T>(
        to list: inout [T], _ assignment: IniDocument.Assignment, _ file: String,
        _ parse: (String) throws(InvalidValue) -> T
    ) throws(ConfigurationError) {
        if assignment.value.isEmpty {
            list = []
            return
        }
        list += try located(assignment, file) { () throws(InvalidValue) in
            try QuotedWords.split(assignment.value).map { (word) throws(InvalidValue) in try parse(word) }
        }
    }

    private static func activation(key: String, value: String) throws(InvalidValue) -> DeclaredPort.Activation {
        if key == "Unit" {
            if let problem = DeclaredPort.unitProblem(value) { throw InvalidValue(problem) }
            return .unit(value)
        }
        let words = try QuotedWords.split(value)
        guard let program = words.first, program.hasPrefix("/") else {
            throw InvalidValue("Exec= needs an absolute program path first, as in 'Exec=/usr/libexec/example --serve'")
        }
        return .command(words)
    }

    /// Why Exec='s program cannot be run, or nil: the check
    /// `systemd-analyze verify` makes of ExecStart=, as the checking user.
    private static func programProblem(_ path: String) -> String? {
        if FileSystem.isExecutableFile(path) { return nil }
        let exists = (try? FileSystem.status(ofPath: path)) != nil
        return "Exec= program '\(path)' is not executable: \(exists ? "not an executable file" : "no such file")"
    }

    // MARK: - Errors

    private func unknownKey(_ assignment: IniDocument.Assignment, in section: IniDocument.Section, file: String)
        -> ConfigurationError
    {
        ConfigurationError(file: file, line: assignment.line, "unknown key '\(assignment.key)' in [\(section.name)]")
    }

    /// Runs `body`, turning an InvalidValue into an error at `assignment`'s line.
    private func located<T>(
        _ assignment: IniDocument.Assignment, _ file: String, _ body: () throws(InvalidValue) -> T
    ) throws(ConfigurationError) -> T {
        do {
            return try body()
        } catch {
            throw ConfigurationError(file: file, line: assignment.line, error.message)
        }
    }
}
