// NameServerReply: the messages portd sends for the name-server protocol:
// replies to requests, NAME_OWNER_CHANGED to watchers, NAME_ACQUIRED to a
// queued owner. Every data component is a UTF-8 string; an error reply is
// an error word followed by one "message=..." component for people.
// Pure: builds values, sends nothing.

import PortCore

enum NameServerReply {
    /// The first component of an error reply.
    enum ErrorWord: String, Sendable {
        case invalidName = "invalid-name"
        case denied
        case limit
        case badRequest = "bad-request"
        case notFound = "not-found"
        case timeout
        case `internal`
    }

    /// A component of a reply.
    enum Part {
        case text(String)
        case port(SendRight)
    }

    /// A reply (or event) of strings and ports, in order.
    static func make(_ msgid: UInt32, _ parts: [Part]) -> PCPortMessage {
        PCPortMessage(
            msgid: msgid,
            components: parts.map {
                switch $0 {
                case .text(let s): .data(Array(s.utf8))
                case .port(let r): .port(r)
                }
            })
    }

    /// A reply of strings only.
    static func words(_ msgid: UInt32, _ words: String...) -> PCPortMessage {
        make(msgid, words.map { .text($0) })
    }

    /// An error reply: the word, then "message=...".
    static func error(_ msgid: UInt32, _ word: ErrorWord, _ message: String) -> PCPortMessage {
        words(msgid, word.rawValue, "message=\(message)")
    }

    /// "pid=P,uid=U" for an owner in NAME_OWNER_CHANGED, "" for none.
    static func ownerField(_ owner: Credentials?) -> String {
        owner.map { "pid=\($0.pid),uid=\($0.uid)" } ?? ""
    }

    /// NAME_OWNER_CHANGED: NAME, EVENT, OLD, NEW.
    static func ownerChanged(_ change: OwnerChange) -> PCPortMessage {
        words(
            NameServerRequest.MessageID.nameOwnerChanged, change.name.value, change.kind.rawValue,
            ownerField(change.old?.credentials), ownerField(change.new?.credentials))
    }

    /// NAME_LOST: NAME, and the new owner's pid= and uid=.
    static func nameLost(_ name: PortName, to owner: Credentials) -> PCPortMessage {
        words(NameServerRequest.MessageID.nameLost, name.value, "pid=\(owner.pid)", "uid=\(owner.uid)")
    }

    /// NAME_ACQUIRED: NAME and the name's listening socket.
    static func nameAcquired(_ name: PortName, listening: SendRight) -> PCPortMessage {
        make(NameServerRequest.MessageID.nameAcquired, [.text(name.value), .port(listening)])
    }
}
