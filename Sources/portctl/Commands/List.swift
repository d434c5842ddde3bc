// List: `portctl list`: every registered name with its owner (LIST), as a
// table for people or one JSON object per name. A declared port is owned by
// portd; its SERVICE column (JSON "service_pid") is the pid of the service
// that checked in for it last, "-" (null) before any did. A name a bridge
// imported from another host is owned by the bridge; its HOST column (JSON
// "remote", null for a local name) names the host(s) that export it, and
// appears only when some name has one.

import ArgumentParser
import PortCore
import PortWire

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the registered names with their owners.",
        discussion: ExitStatus.verbHelpText
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws { try connection.check() }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let server = try connection.connect()
        let entries: [NameEntry]
        do {
            entries = try server.list()
        } catch {
            throw Failure(error)
        }
        if output.json {
            for e in entries {
                try output.emit(
                    JSONObject([
                        ("name", .string(e.name)), ("pid", .integer(Int64(e.owner.pid))),
                        ("uid", .unsigned(UInt64(e.owner.uid))), ("since_ms", .unsigned(e.sinceMilliseconds)),
                        ("queue_length", .integer(Int64(e.queuedCount))), ("client", .unsigned(e.owner.client)),
                        ("declared", .bool(e.isDeclared)),
                        ("service_pid", e.checkedInPID.map { .integer(Int64($0)) } ?? .null),
                        ("remote", e.remote.map { .string($0) } ?? .null),
                    ]).text)
            }
            return
        }
        let remote = entries.contains { $0.remote != nil }
        var header = ["NAME", "PID", "UID", "SINCE", "QUEUED", "DECLARED", "SERVICE"]
        if remote { header.append("HOST") }
        var rows = [header]
        for e in entries {
            var row: [String] = [TextEscape.escape(e.name), String(e.owner.pid), String(e.owner.uid)]
            row.append(Timestamp.utc(milliseconds: e.sinceMilliseconds))
            row.append(String(e.queuedCount))
            row.append(e.isDeclared ? "yes" : "-")
            row.append(e.checkedInPID.map(String.init) ?? "-")
            if remote { row.append(e.remote.map(TextEscape.escape) ?? "-") }
            rows.append(row)
        }
        try output.emit(Table.render(rows))
    }
}

/// Columns padded to their widest cell, two spaces apart (the last column unpadded).
enum Table {
    static func render(_ rows: [[String]]) -> String {
        guard let columns = rows.map(\.count).max() else { return "" }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count + 2)
            }.joined()
        }.joined(separator: "\n")
    }
}
