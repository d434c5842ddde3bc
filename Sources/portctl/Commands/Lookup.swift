// Lookup: `portctl lookup NAME`: who owns NAME, since when, and who is
// queued for it (OWNER). Not registered → 67.

import ArgumentParser
import PortCore
import PortWire
import Synchronization

struct Lookup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "Show who owns a name: pid, uid, since when, and the queued owners.",
        discussion: ExitStatus.verbHelpText
    )

    @Argument(help: "The name.") var name: String
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try NameArgument.check(name)
        try connection.check()
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let server = try connection.connect()
        let found: NameOwner?
        do {
            found = try server.owner(name)
        } catch {
            throw Failure(error)
        }
        guard let owner = found else { throw Failure(.nameNotFound, "\(name) is not registered") }
        if output.json {
            try output.emit(
                JSONObject([
                    ("name", .string(owner.name)), ("pid", .integer(Int64(owner.owner.pid))),
                    ("uid", .unsigned(UInt64(owner.owner.uid))), ("since_ms", .unsigned(owner.sinceMilliseconds)),
                    ("remote", owner.remote.map { .string($0) } ?? .null),
                    (
                        "queued",
                        .array(
                            owner.queued.map {
                                .object(JSONObject([("pid", .integer(Int64($0.pid))), ("uid", .unsigned(UInt64($0.uid)))]))
                            })
                    ),
                ]).text)
            return
        }
        let queued = owner.queued.isEmpty ? "none" : owner.queued.map(\.description).joined(separator: ", ")
        try output.emit(
            """
            name:    \(owner.name)
            owner:   pid \(owner.owner.pid) uid \(owner.owner.uid)\(owner.remote.map { "\n" + "remote:  exported by \(TextEscape.escape($0)), bridged by the owner" } ?? "")
            since:   \(Timestamp.utc(milliseconds: owner.sinceMilliseconds))
            queued:  \(queued)
            """)
    }
}

/// The check of a NAME argument, the naming rule of portd.
enum NameArgument {
    /// Set only by `UnknownOption.hiddenBehindAName`, to parse a command
    /// line again without this check.
    static let skipsCheck = Atomic<Bool>(false)

    static func check(_ name: String, what: String = "name") throws {
        if skipsCheck.load(ordering: .relaxed) { return }
        if let problem = NameServerProtocol.nameProblem(name) {
            throw ValidationError("invalid \(what) '\(TextEscape.escape(name))': \(problem)")
        }
    }
}

/// An unknown option that a bad NAME hid: swift-argument-parser runs a
/// verb's validate() before it looks for unknown options, so in
/// `portctl monitor echo --match msgid=1` the unknown --match was never
/// named and its value, taken for a second NAME, was refused as a name.
enum UnknownOption {
    /// The unknown-option error of `arguments` when parsing them without
    /// the NAME check finds one, else nil.
    static func hiddenBehindAName(_ arguments: [String]) -> (any Error)? {
        NameArgument.skipsCheck.store(true, ordering: .relaxed)
        defer { NameArgument.skipsCheck.store(false, ordering: .relaxed) }
        do {
            _ = try PortctlCommand.parseAsRoot(arguments)
            return nil
        } catch {
            return PortctlCommand.message(for: error).hasPrefix("Unknown option") ? error : nil
        }
    }
}
