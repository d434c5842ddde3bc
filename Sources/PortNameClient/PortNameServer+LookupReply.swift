// PortNameServer+LookupReply: a LOOKUP's reply read from the message's
// bytes in place, the path every uncached lookup takes: no text per
// field, no array of fields, no generic record.
//
// Invariants: it answers only for a reply the general parser
// (`NameServerReply(message)`, then `lookupOutcome(_:)`) accepts with the
// same outcome, and only for the three common ones: "found" (a REPLY with
// a port and an owner=), "not-found", "timeout". Anything else, or
// anything unusual (a component that is not ASCII, shared memory, a
// malformed field, an error word it does not handle), is nil, and the
// general parser then answers or throws as it always did.
// LookupReplyTests compares the two on seeded random replies and edge cases.

import PortMessaging
import PortNameProtocol
import PortWire

extension PortNameServer {
    /// The outcome of the LOOKUP reply `message` when it is a plain one,
    /// read in place; nil to leave it to the general parser.
    static func lookupOutcomeInPlace(_ message: PCPortMessage) -> LookupOutcome? {
        typealias F = NameServerProtocol.Field
        let isError: Bool
        switch message.msgid {
        case NameServerProtocol.MessageID.reply: isError = false
        case NameServerProtocol.MessageID.error: isError = true
        default: return nil
        }
        var port: SendRight?
        var owner: NameOwner.Process?
        var sawOwner = false
        var errorWord: LookupOutcome?
        var sawError = false
        var index = 0
        for component in message.components {
            defer { index += 1 }
            switch component {
            case .port(let right):
                if port == nil { port = right }
            case .data(let bytes):
                guard port == nil else { return nil }  // a field after a port
                let ok = bytes.withUnsafeBytes { (b) -> Bool in
                    guard NameServerProtocol.isASCII(b), let (key, value) = NameServerProtocol.field(b) else { return false }
                    if index == 0 {
                        return NameServerProtocol.equals(key, F.serial) && NameServerProtocol.integer(value, as: UInt32.self) != nil
                    }
                    if !isError, !sawOwner, NameServerProtocol.equals(key, F.owner) {
                        sawOwner = true
                        owner = NameOwner.Process(encodedBytes: value)
                    } else if isError, !sawError, NameServerProtocol.equals(key, F.error) {
                        sawError = true
                        if NameServerProtocol.equals(value, NameServerProtocol.ErrorWord.notFound.rawValue) {
                            errorWord = .notFound
                        } else if NameServerProtocol.equals(value, NameServerProtocol.ErrorWord.timeout.rawValue) {
                            errorWord = .timedOut
                        }
                    }
                    return true
                }
                guard ok else { return nil }
            case .sharedMemory:
                return nil
            }
        }
        guard index > 0, case .data = message.components[0] else { return nil }  // no serial=N first
        if isError { return errorWord }
        guard let port, let owner else { return nil }
        return .found(port, owner: owner)
    }
}
