// SystemdStatus: the one-line STATUS= that `systemctl status portd` shows,
// built from portd's counters, e.g.
//   "Serving /run/portd/portd.sock: 12 names, 5 clients, 2 declared ports,
//    1 pending lookup, 3 refusals"
// Pure: the daemon fills in the counts and sends it with
// `SystemdNotifier.status(_:)` (or with READY=1) when they change; sending
// it more often than a few times a second gains nothing.

import PortCore

struct SystemdStatus: Equatable, Sendable {
    var socketPath: String
    var names = 0
    var clients = 0
    var declaredPorts = 0
    var pendingLookups = 0
    var refusals = 0

    /// The STATUS= text (one line).
    var text: String {
        let counts = [
            "\(names) name\(Self.plural(names))", "\(clients) client\(Self.plural(clients))",
            "\(declaredPorts) declared port\(Self.plural(declaredPorts))",
            "\(pendingLookups) pending lookup\(Self.plural(pendingLookups))", "\(refusals) refusal\(Self.plural(refusals))",
        ]
        return "Serving \(socketPath): " + counts.joined(separator: ", ")
    }

    private static func plural(_ n: Int) -> String { n == 1 ? "" : "s" }
}

extension SystemdNotifier {
    /// STATUS= with the counters.
    @discardableResult
    func status(_ counts: SystemdStatus) throws(SystemCallError) -> Bool {
        try status(counts.text)
    }
}
