// NameServerRequest: one request to the name server, parsed and checked
// from a port message (portd-protocol(7), NAME SERVER). Pure: no state, no
// I/O; the name server switches on the result.
//
// Rules: every component of a request is a data component holding UTF-8
// (a port or a memfd component is a bad request); the components add up to
// at most `maximumBytes` bytes; the count and the words are exactly those
// of the msgid's row in the table; names are checked by PortName. The
// first failure wins, in the order: size, kinds, msgid, count, name, words.
// Every msgid, option word and field key is NameServerProtocol's.

import PortCore

enum NameServerRequest: Equatable, Sendable {
    case status
    case register(PortName, RegistrationOptions)
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

    /// Why a message is not a request portd can serve.
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
        }
    }

    /// The name the request is about, if any.
    var name: PortName? {
        switch self {
        case .status, .list: nil
        case .register(let n, _), .release(let n), .lookUp(let n, _), .owner(let n, _), .checkIn(let n): n
        case .watch(let n): n
        }
    }

    /// Parses a request. `hasReplyPort`: the request carried a REPLY_PORT
    /// (required by WATCH).
    static func parse(
        msgid: UInt32, components: [PCPortMessage.Component], hasReplyPort: Bool, maximumBytes: Int
    ) -> Result<NameServerRequest, Refusal> {
        var size = 0
        var words: [String] = []
        for (i, component) in components.enumerated() {
            guard case .data(let bytes) = component else {
                return .failure(.badRequest("component \(i) is not data; requests carry UTF-8 strings only"))
            }
            size += bytes.count
            if size > maximumBytes { return .failure(.tooLarge(bytes: size, limit: maximumBytes)) }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .failure(.badRequest("component \(i) is not UTF-8"))
            }
            words.append(text)
        }
        do throws(Refusal) {
            return .success(try parse(msgid: msgid, words: words, hasReplyPort: hasReplyPort))
        } catch {
            return .failure(error)
        }
    }

    private static func parse(msgid: UInt32, words: [String], hasReplyPort: Bool) throws(Refusal) -> NameServerRequest {
        func count(_ allowed: ClosedRange<Int>, _ what: String) throws(Refusal) {
            guard allowed.contains(words.count) else {
                throw .badRequest("\(what) takes \(describe(allowed)), not \(words.count)")
            }
        }
        typealias MessageID = NameServerProtocol.MessageID
        typealias Field = NameServerProtocol.Field
        switch msgid {
        case MessageID.status:
            try count(0...0, "STATUS")
            return .status
        case MessageID.list:
            try count(0...1, "LIST")
            guard let word = words.first else { return .list(after: nil) }
            guard let after = NameServerProtocol.value(ofField: Field.after, in: word) else {
                throw .badRequest("unknown LIST word \"\(word)\"")
            }
            return .list(after: try validName(String(after)))
        case MessageID.register:
            try count(1...Int.max, "REGISTER")
            let name = try validName(words[0])
            var options: RegistrationOptions = []
            for word in words.dropFirst() {
                guard let option = RegistrationOptions(word: word) else {
                    throw .badRequest("unknown REGISTER option \"\(word)\"")
                }
                options.insert(option)
            }
            return .register(name, options)
        case MessageID.release:
            try count(1...1, "RELEASE")
            return .release(try validName(words[0]))
        case MessageID.lookup:
            try count(1...2, "LOOKUP")
            let name = try validName(words[0])
            guard words.count == 2 else { return .lookUp(name, wait: nil) }
            let option = words[1]
            guard let value = NameServerProtocol.value(ofField: Field.waitMilliseconds, in: option), let ms = UInt32(value)
            else {
                throw .badRequest(
                    "LOOKUP's second component is \"\(NameServerProtocol.field(Field.waitMilliseconds, "N"))\" (N from 0 to 4294967295), not \"\(option)\"")
            }
            return .lookUp(name, wait: ms == 0 ? nil : .milliseconds(ms))
        case MessageID.watch:
            try count(0...1, "WATCH")
            guard hasReplyPort else { throw .badRequest("WATCH must carry the watcher's port as its reply port (REPLY_PORT)") }
            return .watch(words.isEmpty ? nil : try validName(words[0]))
        case MessageID.owner:
            try count(1...2, "OWNER")
            let name = try validName(words[0])
            guard words.count == 2 else { return .owner(name, from: 0) }
            guard let value = NameServerProtocol.value(ofField: Field.from, in: words[1]), let from = UInt32(value) else {
                throw .badRequest(
                    "OWNER's second component is \"\(NameServerProtocol.field(Field.from, "N"))\" (N from 0 to 4294967295), not \"\(words[1])\"")
            }
            return .owner(name, from: Int(from))
        case MessageID.checkIn:
            try count(1...1, "CHECKIN")
            return .checkIn(try validName(words[0]))
        default:
            throw .badRequest("unknown msgid 0x\(String(msgid, radix: 16, uppercase: true))")
        }
    }

    private static func validName(_ text: String) throws(Refusal) -> PortName {
        do {
            return try PortName(validating: text)
        } catch {
            throw .invalidName(error)
        }
    }

    private static func describe(_ r: ClosedRange<Int>) -> String {
        func unit(_ n: Int) -> String { n == 1 ? "1 component" : "\(n) components" }
        if r.upperBound == Int.max { return "at least \(unit(r.lowerBound))" }
        if r.lowerBound == r.upperBound { return unit(r.lowerBound) }
        return "\(r.lowerBound) to \(unit(r.upperBound))"
    }
}
