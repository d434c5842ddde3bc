// MessageOrigin: where a message relayed from another host came from, as
// the relay (portd-bridge) asserts it. The kernel's credentials of such a
// message name the relay, the truth on this host; the origin names the
// sender on the far host (its host, and uid, gid and pid as the far kernel
// saw them) and the NATS identity the far relay authenticated with.
//
// On the wire (portd-protocol(7), "Origin notices"): a one-way record with
// the reserved msgid 0xfffff010 and one data component, the origin as
// text ("host=B; uid=U; gid=G; pid=P; nats=USER", every field but host
// optional). A port reads it itself and never hands it to the application:
// every later message on that connection carries it (`PCPortMessage.origin`)
// until the next notice. `relayedBy` is the notice's SCM_CREDENTIALS: an
// origin is worth what its relay is worth, so a receiver that trusts
// origins checks that uid (the bridge's own system user, say).

import PortRunLoop
import PortSystem
import PortWire

public struct MessageOrigin: Sendable, Hashable, CustomStringConvertible {
    /// The msgid of an origin notice.
    public static let noticeMessageID: UInt32 = 0xFFFF_F010

    /// The far host (its bridge's ID).
    public var host: String
    public var uid: UInt32?
    public var gid: UInt32?
    public var pid: Int32?
    /// The NATS identity the far relay authenticated with, when it said.
    public var natsUser: String?
    /// Who asserted the origin: the kernel's credentials of the process
    /// that sent the notice (nil on an origin made locally).
    public internal(set) var relayedBy: Credentials?

    public init(host: String, uid: UInt32? = nil, gid: UInt32? = nil, pid: Int32? = nil, natsUser: String? = nil) {
        self.host = host
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.natsUser = natsUser
        self.relayedBy = nil
    }

    /// "host=B; uid=U; gid=G; pid=P; nats=USER" (the fields it has).
    public var text: String {
        var parts = ["host=\(host)"]
        if let uid { parts.append("uid=\(uid)") }
        if let gid { parts.append("gid=\(gid)") }
        if let pid { parts.append("pid=\(pid)") }
        if let natsUser { parts.append("nats=\(natsUser)") }
        return parts.joined(separator: "; ")
    }

    public var description: String { text }

    /// Reads `text` (fields in any order, unknown ones skipped); nil
    /// without a host or with a field that is not a number where one is due.
    public init?(text: String) {
        var host: String?
        self.init(host: "")
        for part in text.split(separator: ";") {
            let field = part.trimmingSpaces
            guard let eq = field.firstIndex(of: "=") else { continue }
            let key = field[..<eq]
            let value = String(field[field.index(after: eq)...])
            switch key {
            case "host": host = value
            case "uid": guard let v = UInt32(value) else { return nil }; uid = v
            case "gid": guard let v = UInt32(value) else { return nil }; gid = v
            case "pid": guard let v = Int32(value) else { return nil }; pid = v
            case "nats": natsUser = value
            default: continue
            }
        }
        guard let host, !host.isEmpty, host.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != ";" })
        else { return nil }
        self.host = host
    }

    /// The notice that makes a port attach this origin to what follows on
    /// the connection it is sent on.
    public var notice: PCPortMessage { PCPortMessage(msgid: Self.noticeMessageID, strings: [text]) }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
