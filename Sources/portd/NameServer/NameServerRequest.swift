// NameServerRequest: one request to the name server, parsed and checked
// from a port message (portd-protocol(7), NAME SERVER). Pure: no state, no
// I/O; the name server switches on the result.
//
// Rules: every component of a request is a data component holding UTF-8
// (a port or a memfd component is a bad request); the components add up to
// at most `maximumBytes` bytes; the count and the words are exactly those
// of the msgid's row in the table; names are checked by PortName. The
// first failure wins, in the order: size, kinds, msgid, count, name, words.

import PortCore

enum NameServerRequest: Equatable, Sendable {
    case status
    case register(PortName, RegisterOptions)
    case release(PortName)
    /// `wait` nil: answer now.
    case lookUp(PortName, wait: Duration?)
    /// nil: every name.
    case watch(PortName?)
    /// LIST, continuing after the name given (a previous reply said "more").
    case list(after: PortName?)
    case owner(PortName)
    case checkIn(PortName)

    /// The msgids of the protocol (in the reserved range 0xFFFF0000+).
    enum MessageID {
        static let status: UInt32 = 0xFFFF_0001
        static let register: UInt32 = 0xFFFF_0002
        static let release: UInt32 = 0xFFFF_0003
        static let lookUp: UInt32 = 0xFFFF_0004
        static let watch: UInt32 = 0xFFFF_0005
        static let list: UInt32 = 0xFFFF_0006
        static let owner: UInt32 = 0xFFFF_0007
        static let checkIn: UInt32 = 0xFFFF_0008
        /// Sent by portd to a watcher's port.
        static let nameOwnerChanged: UInt32 = 0xFFFF_0100
        /// Sent by portd to a queued owner's port when it gets the name.
        static let nameAcquired: UInt32 = 0xFFFF_0101
        static let nameLost: UInt32 = 0xFFFF_0102
    }

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
        case .register(let n, _), .release(let n), .lookUp(let n, _), .owner(let n), .checkIn(let n): n
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
        switch msgid {
        case MessageID.status:
            try count(0...0, "STATUS")
            return .status
        case MessageID.list:
            try count(0...1, "LIST")
            guard let word = words.first else { return .list(after: nil) }
            guard word.hasPrefix("after=") else { throw .badRequest("unknown LIST word \"\(word)\"") }
            return .list(after: try validName(String(word.dropFirst("after=".count))))
        case MessageID.register:
            try count(1...Int.max, "REGISTER")
            let name = try validName(words[0])
            var options: RegisterOptions = []
            for word in words.dropFirst() {
                switch word {
                case "allow-replacement": options.insert(.allowReplacement)
                case "replace-existing": options.insert(.replaceExisting)
                case "do-not-queue": options.insert(.doNotQueue)
                default: throw .badRequest("unknown REGISTER option \"\(word)\"")
                }
            }
            return .register(name, options)
        case MessageID.release:
            try count(1...1, "RELEASE")
            return .release(try validName(words[0]))
        case MessageID.lookUp:
            try count(1...2, "LOOKUP")
            let name = try validName(words[0])
            guard words.count == 2 else { return .lookUp(name, wait: nil) }
            let option = words[1]
            guard option.hasPrefix("wait_ms="), let ms = UInt32(option.dropFirst("wait_ms=".count)) else {
                throw .badRequest("LOOKUP's second component is \"wait_ms=N\" (N from 0 to 4294967295), not \"\(option)\"")
            }
            return .lookUp(name, wait: ms == 0 ? nil : .milliseconds(ms))
        case MessageID.watch:
            try count(0...1, "WATCH")
            guard hasReplyPort else { throw .badRequest("WATCH must carry the watcher's port as its reply port (REPLY_PORT)") }
            return .watch(words.isEmpty ? nil : try validName(words[0]))
        case MessageID.owner:
            try count(1...1, "OWNER")
            return .owner(try validName(words[0]))
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
