// NameServerRequest: one request to the name server, parsed and checked
// from a port message (portd-protocol(7), NAME SERVER). Pure: no state, no
// I/O; the name server switches on the result.
//
// Rules: every component of a request is a data component holding one
// UTF-8 "key=value" field (a port or a memfd component is a bad request);
// the first field is "serial=N"; there are at most
// NameServerProtocol.maximumRequestFields fields, adding up to at most
// `maximumBytes` bytes; the keys are exactly those of the msgid's row in
// the page, each once except REGISTER's "option=" and HELLO's "version=";
// names are checked by PortName. The first failure wins, in the order:
// size, kinds, serial, count, msgid, keys, name, values. Every msgid,
// option word and field key is NameServerProtocol's.

import PortCore

enum NameServerRequest: Equatable, Sendable {
    case status
    /// `remote`: the host(s) the name is served for (a bridge's import).
    case register(PortName, RegistrationOptions, remote: String?)
    case release(PortName)
    /// `wait` nil: answer now.
    case lookUp(PortName, wait: Duration?)
    /// nil: every name.
    case watch(PortName?)
    /// LIST, continuing after the name given (a previous reply said "more").
    case list(after: PortName?)
    /// OWNER, the page of the queue starting at place `from` (0 is the
    /// next owner; a previous reply said "more").
    case owner(PortName, from: Int)
    case checkIn(PortName)
    /// HELLO with the versions the client speaks.
    case hello(versions: [String])

    /// Why a message is not a request portd can serve, and the serial to
    /// answer with (0 when the request had none).
    enum Refusal: Error, Equatable, Sendable {
        case badRequest(String)
        case invalidName(PortName.Invalid)
        case tooLarge(bytes: Int, limit: Int)
    }

    /// The request's name for logs.
    var verb: String {
        switch self {
        case .status: "STATUS"
        case .register: "REGISTER"
        case .release: "RELEASE"
        case .lookUp: "LOOKUP"
        case .watch: "WATCH"
        case .list: "LIST"
        case .owner: "OWNER"
        case .checkIn: "CHECKIN"
        case .hello: "HELLO"
        }
    }

    /// The name the request is about, if any.
    var name: PortName? {
        switch self {
        case .status, .list, .hello: nil
        case .register(let n, _, _), .release(let n), .lookUp(let n, _), .owner(let n, _), .checkIn(let n): n
        case .watch(let n): n
        }
    }

    /// Parses a request: its serial (0 when it has none that can be
    /// read), and the request or why it is refused. `hasReplyPort`: the
    /// request carried a REPLY_PORT (required by WATCH).
    static func parse(
        msgid: UInt32, components: [PCPortMessage.Component], hasReplyPort: Bool, maximumBytes: Int
    ) -> (serial: UInt32, result: Result<NameServerRequest, Refusal>) {
        var size = 0
        var fields: [NameServerField] = []
        var serial: UInt32 = 0
        for (i, component) in components.enumerated() {
            guard case .data(let bytes) = component else {
                return (serial, .failure(.badRequest("component \(i) is not data; requests carry key=value text only")))
            }
            size += bytes.count
            if size > maximumBytes { return (serial, .failure(.tooLarge(bytes: size, limit: maximumBytes))) }
            guard let text = UTF8Text.string(bytes) else {
                return (serial, .failure(.badRequest("component \(i) is not UTF-8")))
            }
            // A value is text without NUL (portd-protocol(7), NAME SERVER):
            // a component holding one is not a field, whatever follows.
            if bytes.contains(0) {
                return (serial, .failure(.badRequest("component \(i) holds a NUL byte; a field is key=value text without NUL")))
            }
            guard let field = NameServerField(text: text) else {
                return (serial, .failure(.badRequest("component \(i) is not a key=value field")))
            }
            if i == 0 {
                guard field.key == NameServerProtocol.Field.serial, let n = decimal(field.value), n > 0 else {
                    return (0, .failure(.badRequest("a request starts with serial=N, N from 1 to 4294967295")))
                }
                serial = n
                continue
            }
            fields.append(field)
        }
        guard serial != 0 else {
            return (0, .failure(.badRequest("a request starts with serial=N, N from 1 to 4294967295")))
        }
        guard components.count <= NameServerProtocol.maximumRequestFields else {
            return (serial, .failure(.badRequest(
                "a request has at most \(NameServerProtocol.maximumRequestFields) fields, not \(components.count)")))
        }
        do throws(Refusal) {
            return (serial, .success(try parse(msgid: msgid, fields: fields, hasReplyPort: hasReplyPort)))
        } catch {
            return (serial, .failure(error))
        }
    }

    /// The fields of one request, checked against its row: `once` keys at
    /// most once, `many` keys any number of times, nothing else.
    private struct Fields {
        let verb: String
        var single: [String: String] = [:]
        var multiple: [String: [String]] = [:]

        init(_ fields: [NameServerField], verb: String, once: [String], many: [String] = []) throws(Refusal) {
            self.verb = verb
            for f in fields {
                if once.contains(f.key) {
                    guard single[f.key] == nil else { throw .badRequest("\(verb) has \(f.key)= twice") }
                    single[f.key] = f.value
                } else if many.contains(f.key) {
                    multiple[f.key, default: []].append(f.value)
                } else {
                    let allowed = (once + many).map { "\($0)=" }
                    throw .badRequest(
                        "\(verb) takes \(allowed.isEmpty ? "no field but serial=" : allowed.joined(separator: ", ")), not \(f.key)=")
                }
            }
        }

        func required(_ key: String) throws(Refusal) -> String {
            guard let v = single[key] else { throw .badRequest("\(verb) needs \(key)=") }
            return v
        }

        func number(_ key: String) throws(Refusal) -> UInt32? {
            guard let v = single[key] else { return nil }
            guard let n = NameServerRequest.decimal(v) else {
                throw .badRequest("\(verb)'s \(key)= is a number from 0 to 4294967295, not \"\(v)\"")
            }
            return n
        }
    }

    private static func parse(msgid: UInt32, fields: [NameServerField], hasReplyPort: Bool) throws(Refusal) -> NameServerRequest {
        typealias MessageID = NameServerProtocol.MessageID
        typealias F = NameServerProtocol.Field
        switch msgid {
        case MessageID.hello:
            let f = try Fields(fields, verb: "HELLO", once: [], many: [F.protocol])
            let versions = f.multiple[F.protocol] ?? []
            guard !versions.isEmpty else { throw .badRequest("HELLO needs at least one protocol=") }
            return .hello(versions: versions)
        case MessageID.status:
            _ = try Fields(fields, verb: "STATUS", once: [])
            return .status
        case MessageID.list:
            let f = try Fields(fields, verb: "LIST", once: [F.after])
            return .list(after: try f.single[F.after].map(validName))
        case MessageID.register:
            let f = try Fields(fields, verb: "REGISTER", once: [F.name, F.remote], many: [F.option])
            let name = try validName(try f.required(F.name))
            let remote = f.single[F.remote]
            if let remote, !Self.isRemoteLabel(remote) {
                throw .badRequest("remote=\(remote): 1 to 255 of A-Z a-z 0-9 . _ - and commas")
            }
            var options: RegistrationOptions = []
            for word in f.multiple[F.option] ?? [] {
                guard let option = RegistrationOptions(word: word) else {
                    throw .badRequest("unknown REGISTER option \"\(word)\"")
                }
                options.insert(option)
            }
            return .register(name, options, remote: remote)
        case MessageID.release:
            let f = try Fields(fields, verb: "RELEASE", once: [F.name])
            return .release(try validName(try f.required(F.name)))
        case MessageID.lookup:
            let f = try Fields(fields, verb: "LOOKUP", once: [F.name, F.waitMilliseconds])
            let name = try validName(try f.required(F.name))
            let ms = try f.number(F.waitMilliseconds) ?? 0
            return .lookUp(name, wait: ms == 0 ? nil : .milliseconds(ms))
        case MessageID.watch:
            let f = try Fields(fields, verb: "WATCH", once: [F.name])
            guard hasReplyPort else { throw .badRequest("WATCH must carry the watcher's port as its reply port (REPLY_PORT)") }
            return .watch(try f.single[F.name].map(validName))
        case MessageID.owner:
            let f = try Fields(fields, verb: "OWNER", once: [F.name, F.from])
            return .owner(try validName(try f.required(F.name)), from: Int(try f.number(F.from) ?? 0))
        case MessageID.checkIn:
            let f = try Fields(fields, verb: "CHECKIN", once: [F.name])
            return .checkIn(try validName(try f.required(F.name)))
        default:
            throw .badRequest("unknown msgid 0x\(String(msgid, radix: 16, uppercase: true))")
        }
    }

    /// A LOOKUP in its usual form, read from the record's bytes in place:
    /// "serial=N", then "name=NAME" and at most one "wait_ms=N", every
    /// component data and the whole within `maximumBytes`. Nil for any
    /// other record, which `parse` then reads (and refuses, or not), so
    /// this answers only where `parse` answers `.success(.lookUp)` with the
    /// same serial, name and wait (NameServerRequestTests compares the two
    /// on seeded random records). No field becomes a String; the name is
    /// `known` again when its bytes are `known`'s (one String less per
    /// LOOKUP of the same name: 2,900 instructions of a LOOKUP's 36,700 in
    /// portd went to reading it through `parse`).
    static func parseLookUp(
        _ view: borrowing PortMessageView, maximumBytes: Int, known: PortName?
    ) -> (serial: UInt32, name: PortName, wait: Duration?)? {
        let count = view.componentCount
        guard view.msgid == NameServerProtocol.MessageID.lookup, count >= 2, count <= 3 else { return nil }
        var size = 0
        var serial: UInt32 = 0
        var name: PortName?
        var wait: UInt32?
        for i in 0..<count {
            guard view.kind(ofComponent: i) == .data else { return nil }
            let ok = view.withUnsafeBytes(ofComponent: i) { (bytes) -> Bool in
                size += bytes.count
                if size > maximumBytes { return false }
                if i == 0 {
                    guard let n = Self.decimal(bytes, after: Self.serialKey), n > 0 else { return false }
                    serial = n
                    return true
                }
                if name == nil, let text = Self.value(bytes, after: Self.nameKey) {
                    name = Self.portName(text, known: known)
                    return name != nil
                }
                if wait == nil, let n = Self.decimal(bytes, after: Self.waitKey) {
                    wait = n
                    return true
                }
                return false
            }
            guard ok == true else { return nil }
        }
        guard let name else { return nil }
        let ms = wait ?? 0
        return (serial, name, ms == 0 ? nil : .milliseconds(ms))
    }

    // The keys `parseLookUp` reads, with their "=", as bytes.
    private static let serialKey = Array("\(NameServerProtocol.Field.serial)=".utf8)
    private static let nameKey = Array("\(NameServerProtocol.Field.name)=".utf8)
    private static let waitKey = Array("\(NameServerProtocol.Field.waitMilliseconds)=".utf8)

    /// The bytes after `key` when `bytes` starts with it.
    private static func value(_ bytes: UnsafeRawBufferPointer, after key: [UInt8]) -> UnsafeRawBufferPointer? {
        guard bytes.count >= key.count else { return nil }
        for j in 0..<key.count where bytes[j] != key[j] { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[key.count...])
    }

    /// `decimal` of the bytes after `key`: 1 to 10 digits, at most 4294967295.
    private static func decimal(_ bytes: UnsafeRawBufferPointer, after key: [UInt8]) -> UInt32? {
        guard let digits = value(bytes, after: key), !digits.isEmpty, digits.count <= 10 else { return nil }
        var n: UInt64 = 0
        for b in digits {
            guard b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") else { return nil }
            n = n * 10 + UInt64(b &- UInt8(ascii: "0"))
        }
        return n <= UInt64(UInt32.max) ? UInt32(n) : nil
    }

    /// The valid name `text` spells: `known` when it is the same bytes,
    /// else checked as `PortName(validating:)` checks (nil when invalid).
    private static func portName(_ text: UnsafeRawBufferPointer, known: PortName?) -> PortName? {
        if let known {
            var k = known.value
            let same = k.withUTF8 { (utf8) -> Bool in
                guard utf8.count == text.count else { return false }
                for j in 0..<text.count where utf8[j] != text[j] { return false }
                return true
            }
            if same { return known }
        }
        // Only name bytes (ASCII) pass `PortName(validating:)`: anything
        // else is left to `parse`, so the String made here is the text
        // UTF8Text.string would have made.
        for b in text where !NameServerProtocol.isNameByte(b) { return nil }
        return try? PortName(validating: String(decoding: text, as: UTF8.self))
    }

    /// A number as the page writes it: decimal digits only (no sign), at
    /// most 4294967295.
    static func decimal(_ text: String) -> UInt32? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return UInt32(text)
    }

    private static func validName(_ text: String) throws(Refusal) -> PortName {
        do {
            return try PortName(validating: text)
        } catch {
            throw .invalidName(error)
        }
    }
}

extension NameServerRequest {
    /// A REGISTER's `remote=`: host labels, as portd-bridge's IDs are,
    /// separated by commas.
    static func isRemoteLabel(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 255
            && s.unicodeScalars.allSatisfy {
                ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || ".-_,".unicodeScalars.contains($0)
            }
    }
}
