// DeclaredPort: a port declared in a [Port] section of portd.conf(5), the
// launchd model: portd creates its listening socket at start and holds it;
// messages sent before its service runs wait in the kernel's queue; the
// service *checks in* (CHECKIN, msgid 0xFFFF0008) to receive the receive
// right, and may check in again after a crash, because portd keeps its own
// copy. (Not to be confused with Apple's worker check-in handshake, msgid 100,
// which carries a worker's port to a server: see PortCheckIn in PortCore.)
//
// Invariants: the name is a valid port name (as REGISTER would accept);
// check-in is allowed to the listed uids and to members of the listed gids,
// or, when neither is listed, to the uid portd runs as; `lookUp`, when not
// empty, replaces the [Policy] rules for this name (anyone else is denied);
// an activation command has an absolute program path, a unit a unit name.

import PortCore

struct DeclaredPort: Equatable, Sendable {
    /// What portd starts when the first connection arrives and no service
    /// has checked in.
    enum Activation: Equatable, Sendable {
        case none
        /// Exec=: a program (absolute path) and its arguments, run by portd.
        case command([String])
        /// Unit=: a systemd unit portd asks the service manager to start.
        case unit(String)
    }

    var name: String
    /// CheckInUser=: uids that may check in.
    var checkInUIDs: [UInt32] = []
    /// CheckInGroup=: gids whose members may check in.
    var checkInGIDs: [UInt32] = []
    /// LookUp=: who may look the port up; empty means the [Policy] rules decide.
    var lookUp: [Principal] = []
    var activation: Activation = .none
    /// Where the port was first declared: "FILE:LINE".
    var origin: String = ""

    /// Whether a client with `uid` and `gids` may check in. Without
    /// CheckInUser= and CheckInGroup=, only `daemonUID` (the uid portd runs
    /// as: root for the system instance) may.
    func mayCheckIn(uid: UInt32, gids: [UInt32], daemonUID: UInt32) -> Bool {
        if checkInUIDs.isEmpty && checkInGIDs.isEmpty { return uid == daemonUID }
        return checkInUIDs.contains(uid) || checkInGIDs.contains { gids.contains($0) }
    }

    /// Whether the port's own LookUp= admits the client, or nil when it has
    /// none (the [Policy] rules decide then).
    func mayLookUp(uid: UInt32, gids: [UInt32]) -> Bool? {
        if lookUp.isEmpty { return nil }
        return lookUp.contains { $0.matches(uid: uid, gids: gids) }
    }

    /// The longest port name, in bytes (portd-protocol(7): 1–200 bytes).
    static let maximumNameLength = NameServerProtocol.maximumNameLength

    /// Why `name` is not a port name, or nil when it is one: the protocol's
    /// naming rule (NameServerProtocol.nameProblem(of:)), in words that
    /// quote the configuration's value.
    static func nameProblem(_ name: String) -> String? {
        switch NameServerProtocol.nameProblem(of: name) {
        case nil: nil
        case .empty: "a port name cannot be empty"
        case .tooLong(let n): "a port name has at most \(maximumNameLength) bytes; '\(name.prefix(40))…' has \(n)"
        case .leadingDot: "a port name cannot start with '.': '\(name)'"
        case .forbiddenByte: "'\(name)' is not a port name (letters, digits, '.', '_' and '-' only)"
        }
    }

    /// Why `unit` is not a unit name portd would ask for, or nil: a name
    /// with a known unit suffix, made of what systemd allows in unit names.
    static func unitProblem(_ unit: String) -> String? {
        let suffixes = [".service", ".socket", ".target", ".path", ".timer"]
        guard let suffix = suffixes.first(where: { unit.hasSuffix($0) }), unit.count > suffix.count else {
            return "Unit= needs a unit name such as 'example.service', not '\(unit)'"
        }
        let valid = unit.utf8.count <= 255 && unit.utf8.allSatisfy { b in
            (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: ".") || b == UInt8(ascii: "_")
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ":") || b == UInt8(ascii: "@") || b == UInt8(ascii: "\\")
        }
        return valid ? nil : "'\(unit)' is not a valid unit name"
    }
}
