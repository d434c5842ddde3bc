// NameServerReply: one reply record of portd, taken apart: its word (the
// first component), its other data components as strings, and its PORT
// components in order. Pure parsing, no I/O; PortNameServer decides what
// the word means for the request it made.
//
// Invariants: a reply whose first component is not UTF-8 data, or whose
// data components are not UTF-8, is a protocol error, never guessed at;
// "key=value" lookups take the first component with that key.

import PortMessaging
import PortNameProtocol
import PortRunLoop
import PortSystem
import PortWire

package struct NameServerReply {
    /// The first component: a `NameServerProtocol.ReplyWord` raw value, or something newer.
    package let word: String
    /// The data components after the word, in order.
    package let strings: [String]
    /// The port components, in order.
    package let ports: [SendRight]

    package init(_ message: PCPortMessage) throws(NameServerError) {
        var strings: [String] = []
        var ports: [SendRight] = []
        for (index, component) in message.components.enumerated() {
            switch component {
            case .port(let right):
                if index == 0 { throw .protocolError("the reply starts with a port, not a word") }
                ports.append(right)
            case .data, .sharedMemory:
                guard let text = component.string else {
                    throw .protocolError("component \(index) of the reply is not UTF-8 text")
                }
                strings.append(text)
            }
        }
        guard !strings.isEmpty else { throw .protocolError("an empty reply (msgid \(message.msgid))") }
        word = strings.removeFirst()
        self.strings = strings
        self.ports = ports
    }

    /// The value of the first "key=value" component with this key.
    package func field(_ key: String) -> String? {
        let prefix = key + "="
        return strings.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// The values of every "key=value" component with this key, in order.
    package func fields(_ key: String) -> [String] {
        let prefix = key + "="
        return strings.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// Every "key=value" component, in order (components without "=" are skipped).
    package var keyValuePairs: [(key: String, value: String)] {
        strings.compactMap { s in
            guard let eq = s.firstIndex(of: "=") else { return nil }
            return (String(s[..<eq]), String(s[s.index(after: eq)...]))
        }
    }

    /// A required integer field.
    package func integer<T: FixedWidthInteger>(_ key: String, as: T.Type = T.self) throws(NameServerError) -> T {
        guard let text = field(key) else { throw .protocolError("the \"\(word)\" reply lacks \(key)=") }
        guard let value = T(text) else { throw .protocolError("\(key)=\(text) is not a number") }
        return value
    }

    /// The error this reply stands for, when its word is one of the
    /// protocol's error words.
    package var failure: NameServerError? {
        let message = field(NameServerProtocol.Field.message) ?? word
        switch NameServerProtocol.ReplyWord(rawValue: word) {
        case .invalidName: return .invalidName(message)
        case .denied: return .denied(message)
        case .limit: return .limit(message)
        case .badRequest: return .badRequest(message)
        case .internal: return .daemonFailure(message)
        default: return nil
        }
    }

    /// The error for a word the request does not expect.
    package func unexpected(for request: String) -> NameServerError {
        failure ?? .protocolError("\"\(word)\" is not an answer to \(request)")
    }
}

/// An owner as the protocol writes it: "pid=…,uid=…" (NAME_OWNER_CHANGED)
/// or "PID:UID" (OWNER's queued entries).
extension NameOwner.Process {
    package init?(ownerField text: String) {
        var pid: Int32?
        var uid: UInt32?
        for part in text.split(separator: ",") {
            if part.hasPrefix("pid=") { pid = Int32(part.dropFirst(4)) }
            if part.hasPrefix("uid=") { uid = UInt32(part.dropFirst(4)) }
        }
        guard let pid, let uid else { return nil }
        self.init(pid: pid, uid: uid)
    }

    package init?(colonPair text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let pid = Int32(parts[0]), let uid = UInt32(parts[1]) else { return nil }
        self.init(pid: pid, uid: uid)
    }
}
