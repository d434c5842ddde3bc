// Status: `portctl status`: ask portd for its version, pid and uptime and
// print them (text for people, one JSON object with --json). The exchange
// is PortCore's ControlClient with the PROVISIONAL status request.
// Outcomes map to ExitStatus: no daemon → notRunning (69), refused →
// permissionDenied (77), no answer in time → timedOut (75), a closed
// connection → portInvalid (74), a reply it cannot read → protocolError (76).

import ArgumentParser
import PortCore

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether portd runs, and its version, pid and uptime.",
        discussion: ExitStatus.helpText
    )

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Print one JSON object: socket, version, pid, uptime_ms.")
    var json = false

    func run() throws {
        do {
            let status = try query()
            print(render(status, at: connection.location.path))
        } catch let failure as Failure {
            throw failure.report()
        }
    }

    private func query() throws -> DaemonStatus {
        let location = connection.location
        let path = location.path
        do {
            try DaemonDirectory.check(location, userID: CurrentProcess.userID)
        } catch {
            throw Failure(.failure, "not trusting \(path): \(error)")
        }
        let outcome: ControlClient.Outcome
        do {
            outcome = try ControlClient.exchange(ProvisionalStatus.request, at: path, timeout: connection.timeoutDuration)
        } catch {
            throw Failure(.failure, "cannot talk to portd at \(path): \(error)")
        }
        switch outcome {
        case .notRunning:
            throw Failure(.notRunning, "portd is not running at \(path)")
        case .permissionDenied:
            throw Failure(.permissionDenied, "permission denied connecting to portd at \(path)")
        case .timedOut:
            throw Failure(.timedOut, "portd at \(path) did not answer within \(connection.timeout) s")
        case .closedWithoutReply:
            throw Failure(.portInvalid, "portd at \(path) closed the connection without answering")
        case .reply(let bytes):
            switch ProvisionalStatus.decode(bytes[...]) {
            case .status(let status)?:
                return status
            case .error(let message)?:
                throw Failure(.protocolError, "portd at \(path) refused the request: \(message)")
            case nil:
                throw Failure(.protocolError, "portd at \(path) sent a reply portctl cannot read")
            }
        }
    }

    private func render(_ status: DaemonStatus, at path: String) -> String {
        if json {
            return JSONObject([
                ("socket", .string(path)),
                ("version", .string(status.version)),
                ("pid", .integer(Int64(status.pid))),
                ("uptime_ms", .unsigned(status.uptimeMilliseconds)),
            ]).text
        }
        return """
            socket:  \(path)
            version: \(status.version)
            pid:     \(status.pid)
            uptime:  \(Self.formatUptime(milliseconds: status.uptimeMilliseconds))
            """
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
