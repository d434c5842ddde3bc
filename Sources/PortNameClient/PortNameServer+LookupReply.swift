// PortNameServer+LookupReply: a LOOKUP's reply read in place, from the
// control channel's receive buffer (a PortMessageView), the path every
// uncached lookup takes: no message, no text per field, no array of
// fields, no generic record.
//
// Invariants: it answers only for a reply the general parser (the view's
// `copy()`, `NameServerReply(_:)`, then `lookupOutcome(_:)`) accepts with the
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
    ///
    /// `serialRead`: the caller read component 0 as "serial=N" already
    /// (ControlChannel.serial(of:), as the control channel does before it
    /// files a reply), so it is not read again.
    static func lookupOutcomeInPlace(_ message: borrowing PortMessageView, serialRead: Bool = false) -> LookupOutcome? {
        typealias F = NameServerProtocol.Field
        let isError: Bool
        switch message.msgid {
        case NameServerProtocol.MessageID.reply: isError = false
        case NameServerProtocol.MessageID.error: isError = true
        default: return nil
        }
        let count = message.componentCount
        guard count > 0, message.kind(ofComponent: 0) == .data else { return nil }  // serial=N first
        var port: SendRight?
        var owner: NameOwner.Process?
        var sawOwner = false
        var errorWord: LookupOutcome?
        var sawError = false
        for index in (serialRead ? 1 : 0)..<count {
            switch message.kind(ofComponent: index) {
            case .port:
                if port == nil { port = message.sendRight(ofComponent: index) }
            case .data:
                guard port == nil else { return nil }  // a field after a port
                // Valid while `message` is borrowed, as here.
                guard let b = message.unsafeBytes(ofComponent: index), let (key, value) = NameServerProtocol.field(b)
                else { return nil }
                // The key is ASCII (`field`); so is a value read below as a
                // number or a word. Any other value is looked at.
                if index == 0 {
                    guard NameServerProtocol.equals(key, F.serial), NameServerProtocol.integer(value, as: UInt32.self) != nil
                    else { return nil }
                } else if !isError, !sawOwner, NameServerProtocol.equals(key, F.owner) {
                    sawOwner = true
                    guard let p = NameOwner.Process(encodedBytes: value) else { return nil }  // and so ASCII
                    owner = p
                } else if isError, !sawError, NameServerProtocol.equals(key, F.error) {
                    sawError = true
                    if NameServerProtocol.equals(value, NameServerProtocol.ErrorWord.notFound.rawValue) {
                        errorWord = .notFound
                    } else if NameServerProtocol.equals(value, NameServerProtocol.ErrorWord.timeout.rawValue) {
                        errorWord = .timedOut
                    } else {
                        return nil  // another word: the general parser's
                    }
                } else if !NameServerProtocol.isASCII(value) {
                    return nil  // UTF-8 or not: the general parser's
                }
            case .sharedMemory:
                return nil
            }
        }
        if isError { return errorWord }
        guard let port, let owner else { return nil }
        return .found(port, owner: owner)
    }
}
