// NameServerReply+Client: a reply of portd as the client takes it: from the
// message the control channel matched to its request, with what does not
// follow the protocol as NameServerError.protocolError, and the protocol's
// error words as the NameServerError a caller branches on. PortNameServer
// decides what the other errors mean for the request it made.

import PortMessaging
import PortNameProtocol
import PortWire

extension NameServerReply where Port == SendRight {
    /// Takes apart the reply `message`.
    package init(_ message: PCPortMessage) throws(NameServerError) {
        do throws(NameServerProtocol.Violation) {
            try self.init(msgid: message.msgid, components: message.nameServerComponents)
        } catch {
            throw NameServerError(error)
        }
    }
}

extension NameServerReply {
    /// The error this reply stands for, when it is an ERROR that fails any
    /// request ("not-found", "timeout", "not-owner", "already-owned" and
    /// "not-declared" are answers the request's method turns into outcomes).
    var failure: NameServerError? {
        guard let (word, message) = error else { return nil }
        switch NameServerProtocol.ErrorWord(rawValue: word) {
        case .invalidName: return .invalidName(message)
        case .denied: return .denied(message)
        case .limit: return .limit(message)
        case .badRequest, .helloRequired: return .badRequest(message)
        case .unsupportedVersion: return .unsupportedVersion(message)
        case .internal: return .daemonFailure(message)
        default: return nil
        }
    }

    /// The error for a reply the request does not expect.
    package func unexpected(for request: String) -> NameServerError {
        if let failure { return failure }
        if let (word, message) = error { return .protocolError("\"\(word)\" (\(message)) is not an answer to \(request)") }
        return .protocolError("an unexpected reply to \(request)")
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

extension NameServerNotification where Port == SendRight {
    /// Reads a message that came to a port of the client.
    package init(_ message: PCPortMessage) throws(NameServerError) {
        self = try NameServerError.parsing { () throws(NameServerProtocol.Violation) in
            try NameServerNotification(msgid: message.msgid, components: message.nameServerComponents)
        }
    }
}
