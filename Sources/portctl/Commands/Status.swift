// Status: `portctl status`: portd's version, pid, uptime, counters and
// protocol version (STATUS), as aligned text or one JSON object; fields
// portctl does not know come last, as text. No daemon → 69 and the
// other statuses of Failure(NameServerError).

import ArgumentParser
import PortCore
import PortWire

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether portd runs: version, pid, uptime, counters and protocol version.",
        discussion: ExitStatus.verbHelpText
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws { try connection.check() }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let server = try connection.connect()
        let status: NameServerStatus
        do {
            status = try server.status()
        } catch {
            throw Failure(error)
        }
        try output.emit(render(status, at: server.socketPath))
    }

    private static let counters = ["names", "clients", "lookups", "refusals", "declared"]

    private func render(_ status: NameServerStatus, at path: String) -> String {
        if output.json {
            var members: [(String, JSONObject.Value)] = [
                ("socket", .string(path)),
                ("version", .string(status.version)),
                ("pid", .integer(Int64(status.pid))),
                ("uptime_ms", .unsigned(status.uptimeMilliseconds)),
                ("names", .unsigned(status.names)),
                ("clients", .unsigned(status.clients)),
                ("lookups", .unsigned(status.lookups)),
                ("refusals", .unsigned(status.refusals)),
                ("declared", .unsigned(status.declared)),
            ]
            let known = Set(members.map(\.0))
            for f in status.fields where !known.contains(f.key) { members.append((f.key, .string(f.value))) }
            return JSONObject(members).text
        }
        var rows: [(String, String)] = [
            ("socket", path), ("version", status.version), ("pid", String(status.pid)),
            ("uptime", Self.formatUptime(milliseconds: status.uptimeMilliseconds)),
            ("names", String(status.names)), ("clients", String(status.clients)),
            ("lookups", String(status.lookups)), ("refusals", String(status.refusals)),
            ("declared", String(status.declared)),
        ]
        let known = Set(["version", "pid", "uptime_ms"] + Self.counters)
        for f in status.fields where !known.contains(f.key) { rows.append((f.key, f.value)) }
        let width = rows.map(\.0.count).max()! + 2
        return rows.map { key, value in
            let label = key + ":"
            return label + String(repeating: " ", count: width - label.count) + TextEscape.escape(value)
        }.joined(separator: "\n")
    }

    /// "3.042s", "5min 3.042s", "2h 5min 3.042s", "1d 2h 5min 3.042s" (systemd's units).
    static func formatUptime(milliseconds: UInt64) -> String {
        let ms = milliseconds % 1000
        var seconds = milliseconds / 1000
        let days = seconds / 86_400
        seconds %= 86_400
        let hours = seconds / 3600
        seconds %= 3600
        let minutes = seconds / 60
        seconds %= 60
        var parts: [String] = []
        if days > 0 { parts.append("\(days)d") }
        if days > 0 || hours > 0 { parts.append("\(hours)h") }
        if days > 0 || hours > 0 || minutes > 0 { parts.append("\(minutes)min") }
        let fraction = String(ms)
        parts.append("\(seconds).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)s")
        return parts.joined(separator: " ")
    }
}
