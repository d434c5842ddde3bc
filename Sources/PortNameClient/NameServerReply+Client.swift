// NameServerReply+Client: a reply of portd as the client takes it: from the
// message SendRight.request returned, with what does not follow the
// protocol as NameServerError.protocolError, and the protocol's error words
// as the NameServerError a caller branches on. PortNameServer decides what
// the other words mean for the request it made.

import PortMessaging
import PortNameProtocol
import PortWire

extension NameServerReply where Port == SendRight {
    /// Takes apart the reply `message`.
    package init(_ message: PCPortMessage) throws(NameServerError) {
        do {
            try self.init(parsing: message.nameServerComponents, msgid: message.msgid)
        } catch {
            throw NameServerError(error)
        }
    }
}

extension NameServerReply {
    /// The error this reply stands for, when its word is one of the
    /// protocol's errors that fail a request ("not-found" and "timeout"
    /// are answers to LOOKUP and OWNER instead).
    var failure: NameServerError? {
        guard let (word, message) = error else { return nil }
        switch word {
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

extension NameServerError {
    /// A message that does not follow the protocol.
    package init(_ violation: NameServerProtocol.Violation) {
        self = .protocolError(violation.message)
    }

    /// Runs `body`, a parse of the vocabulary, turning its violation into `.protocolError`.
    package static func parsing<T>(_ body: () throws(NameServerProtocol.Violation) -> T) throws(NameServerError) -> T {
        do {
            return try body()
        } catch {
            throw NameServerError(error)
        }
    }
}

extension NameOwnerChange {
    /// Parses the message portd sends a watcher.
    package init(_ message: PCPortMessage) throws(NameServerError) {
        let texts = message.components.map(\.string)
        self = try NameServerError.parsing { () throws(NameServerProtocol.Violation) in
            try NameOwnerChange(msgid: message.msgid, texts: texts)
        }
    }
}
