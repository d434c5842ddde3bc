// MessageRendering: a port message as portctl prints it.
//
// Text (for people): a heading line, then one line per component: data as
// an escaped, quoted string (TextEscape: never a raw control byte), a port
// as <port>.
//
// JSON (for scripts): one object per message, on one line; each component
// is {"kind":"data","length":N,"text":…} when its bytes are UTF-8, else
// {"kind":"data","length":N,"base64":…}; a port is {"kind":"port"}.
//
// Both show at most a limit of bytes of each component (--max-bytes N;
// by default 4096 in text, 64 KiB in JSON), so a 1 GiB memfd component
// prints a bounded line instead of a 1.4 GB one: text says how many bytes
// there are and how many it shows, JSON adds "truncated":true and the
// first N bytes ("text" only when those bytes are UTF-8, less the first
// bytes of a character the cut split; else "base64"). Only the
// bytes shown are read. --raw and --exec always get every byte.

import ArgumentParser
import PortCore
import PortWire

enum MessageRendering {
    /// The most bytes of one component text output shows by default.
    static let textLimit = 4096
    /// The most bytes of one data component JSON output shows by default.
    static let jsonLimit = 65536

    /// The help of --max-bytes (listen, checkin, request).
    static let maxBytesHelp = ArgumentHelp(
        "Show at most N bytes of each component: longer ones are cut, and say so "
            + "(default 4096, or 65536 with --json).",
        valueName: "n")

    /// The limit in force: --max-bytes when given, else the format's default.
    static func limit(_ maxBytes: Int?, json: Bool) -> Int { maxBytes ?? (json ? jsonLimit : textLimit) }

    /// The check of --max-bytes, for validate().
    static func check(maxBytes: Int?) throws {
        if let problem = problem(maxBytes: maxBytes) { throw ValidationError(problem) }
    }

    /// What is wrong with --max-bytes, or nil (the check of both parsers of request).
    static func problem(maxBytes: Int?) -> String? {
        if let maxBytes, maxBytes < 0 { return "--max-bytes must be 0 or more" }
        return nil
    }

    /// The heading of a received message: msgid, sender, whether it wants a reply.
    static func heading(_ message: PCPortMessage) -> String {
        var line = "msgid=\(message.msgid)"
        if let s = message.sender { line += " from pid=\(s.pid) uid=\(s.uid) gid=\(s.gid)" }
        if let o = message.origin { line += " origin " + Array(o.text.utf8).withUnsafeBytes { TextEscape.quoted($0) } }
        if message.replyPort != nil { line += " (reply port)" }
        return line
    }

    /// One line per component, each prefixed with `indent`.
    static func componentLines(_ message: PCPortMessage, indent: String = "", limit: Int = textLimit) -> [String] {
        message.components.map { indent + text(of: $0, limit: limit) }
    }

    /// A component as one printable line.
    static func text(of component: PCPortMessage.Component, limit: Int = textLimit) -> String {
        switch component {
        case .port: return "<port>"
        case .data(let bytes): return bytes.withUnsafeBytes { text(ofBytes: $0, limit: limit) }
        case .sharedMemory(let memory): return memory.withUnsafeBytes { text(ofBytes: $0, limit: limit) }
        }
    }

    /// `length`: the component's full length when `bytes` are only its
    /// first bytes (a monitor's copy), else `bytes.count`.
    static func text(ofBytes bytes: UnsafeRawBufferPointer, limit: Int = textLimit, length: Int? = nil) -> String {
        let total = length ?? bytes.count
        if total <= limit && bytes.count == total { return TextEscape.quoted(bytes) }
        let shown = min(limit, bytes.count)
        return TextEscape.quoted(UnsafeRawBufferPointer(rebasing: bytes[..<shown]))
            + "… (\(total) bytes, first \(shown) shown)"
    }

    /// The message as a JSON object; `leading` members come first.
    static func json(
        _ message: PCPortMessage, leading: [(String, JSONObject.Value)] = [], limit: Int = jsonLimit
    ) -> JSONObject {
        let sender = message.sender
        return JSONObject(
            leading + [
                ("msgid", .unsigned(UInt64(message.msgid))),
                ("pid", sender.map { .integer(Int64($0.pid)) } ?? .null),
                ("uid", sender.map { .unsigned(UInt64($0.uid)) } ?? .null),
                ("gid", sender.map { .unsigned(UInt64($0.gid)) } ?? .null),
                ("reply_port", .bool(message.replyPort != nil)),
                ("origin", message.origin.map { .string($0.text) } ?? .null),
                ("components", .array(message.components.map { .object(json(of: $0, limit: limit)) })),
            ])
    }

    static func json(of component: PCPortMessage.Component, limit: Int = jsonLimit) -> JSONObject {
        switch component {
        case .port: return JSONObject([("kind", .string("port"))])
        case .data(let bytes): return bytes.withUnsafeBytes { json(ofBytes: $0, limit: limit) }
        case .sharedMemory(let memory): return memory.withUnsafeBytes { json(ofBytes: $0, limit: limit) }
        }
    }

    /// `length` as for `text(ofBytes:limit:length:)`.
    static func json(ofBytes bytes: UnsafeRawBufferPointer, limit: Int = jsonLimit, length: Int? = nil) -> JSONObject {
        let total = length ?? bytes.count
        var members: [(String, JSONObject.Value)] = [("kind", .string("data")), ("length", .integer(Int64(total)))]
        guard total > limit || bytes.count < total else {
            if let text = String(validating: bytes, as: UTF8.self) {
                members.append(("text", .string(text)))
            } else {
                members.append(("base64", .string(Base64.encode(bytes))))
            }
            return JSONObject(members)
        }
        members.append(("truncated", .bool(true)))
        let shown = UnsafeRawBufferPointer(rebasing: bytes[..<min(limit, bytes.count)])
        // The cut may split a character: only then are its first bytes
        // left out. Any other invalid byte makes the whole cut base64.
        let kept = shown.count - incompleteTail(shown)
        if let text = String(validating: UnsafeRawBufferPointer(rebasing: shown[..<kept]), as: UTF8.self) {
            members.append(("text", .string(text)))
        } else {
            members.append(("base64", .string(Base64.encode(shown))))
        }
        return JSONObject(members)
    }

    /// How many bytes at the end of `bytes` are the start of a UTF-8
    /// character the cut split (a lead byte and fewer continuation bytes
    /// than it announces); 0 when the last character is whole or the end
    /// is not UTF-8 at all.
    static func incompleteTail(_ bytes: UnsafeRawBufferPointer) -> Int {
        var i = bytes.count - 1
        var continuations = 0
        while i >= 0 && continuations < 3 && bytes[i] & 0xC0 == 0x80 {
            continuations += 1
            i -= 1
        }
        guard i >= 0 else { return 0 }
        let lead = bytes[i]
        let length = switch lead {
        case 0xC2...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF4: 4
        default: 1
        }
        return length > 1 && continuations + 1 < length ? continuations + 1 : 0
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
