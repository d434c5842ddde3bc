// MessageRendering: a port message as portctl prints it.
//
// Text (for people): a heading line, then one line per component: data as
// an escaped, quoted string (TextEscape: never a raw control byte), a port
// as <port>. A component longer than `textLimit` bytes shows its first
// `textLimit` bytes and says how many there are; --json shows everything.
//
// JSON (for scripts): one object per message, on one line; each component
// is {"kind":"data","length":N,"text":…} when its bytes are UTF-8, else
// {"kind":"data","length":N,"base64":…}; a port is {"kind":"port"}.

import PortCore

enum MessageRendering {
    /// The most bytes of one component text output shows.
    static let textLimit = 4096

    /// The heading of a received message: msgid, sender, whether it wants a reply.
    static func heading(_ message: PCPortMessage) -> String {
        var line = "msgid=\(message.msgid)"
        if let s = message.sender { line += " from pid=\(s.pid) uid=\(s.uid) gid=\(s.gid)" }
        if message.replyPort != nil { line += " (reply port)" }
        return line
    }

    /// One line per component, each prefixed with `indent`.
    static func componentLines(_ message: PCPortMessage, indent: String = "") -> [String] {
        message.components.map { indent + text(of: $0) }
    }

    /// A component as one printable line.
    static func text(of component: PCPortMessage.Component) -> String {
        switch component {
        case .port: return "<port>"
        case .data(let bytes): return bytes.withUnsafeBytes { text(ofBytes: $0) }
        case .sharedMemory(let memory): return memory.withUnsafeBytes { text(ofBytes: $0) }
        }
    }

    static func text(ofBytes bytes: UnsafeRawBufferPointer) -> String {
        if bytes.count <= textLimit { return TextEscape.quoted(bytes) }
        return TextEscape.quoted(UnsafeRawBufferPointer(rebasing: bytes[..<textLimit]))
            + "… (\(bytes.count) bytes, first \(textLimit) shown; --json shows all)"
    }

    /// The message as a JSON object; `leading` members come first.
    static func json(_ message: PCPortMessage, leading: [(String, JSONObject.Value)] = []) -> JSONObject {
        let sender = message.sender
        return JSONObject(
            leading + [
                ("msgid", .unsigned(UInt64(message.msgid))),
                ("pid", sender.map { .integer(Int64($0.pid)) } ?? .null),
                ("uid", sender.map { .unsigned(UInt64($0.uid)) } ?? .null),
                ("gid", sender.map { .unsigned(UInt64($0.gid)) } ?? .null),
                ("reply_port", .bool(message.replyPort != nil)),
                ("components", .array(message.components.map { .object(json(of: $0)) })),
            ])
    }

    static func json(of component: PCPortMessage.Component) -> JSONObject {
        switch component {
        case .port: return JSONObject([("kind", .string("port"))])
        case .data(let bytes): return bytes.withUnsafeBytes { json(ofBytes: $0) }
        case .sharedMemory(let memory): return memory.withUnsafeBytes { json(ofBytes: $0) }
        }
    }

    static func json(ofBytes bytes: UnsafeRawBufferPointer) -> JSONObject {
        var members: [(String, JSONObject.Value)] = [("kind", .string("data")), ("length", .integer(Int64(bytes.count)))]
        if let text = String(validating: bytes, as: UTF8.self) {
            members.append(("text", .string(text)))
        } else {
            members.append(("base64", .string(Base64.encode(bytes))))
        }
        return JSONObject(members)
    }

    /// The bytes of every data component, concatenated (for --raw).
    static func rawBytes(_ message: PCPortMessage) -> [UInt8] {
        var out: [UInt8] = []
        for c in message.components {
            switch c {
            case .data(let b): out += b
            case .sharedMemory(let m): m.withUnsafeBytes { out += $0 }
            case .port: continue
            }
        }
        return out
    }
}
