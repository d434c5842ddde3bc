// BridgeRecord: a port message as the payload of a NATS message — the
// record of portd-protocol(7), version 1, with no descriptors. There is no
// codec of the bridge's own: the record is written with PortWire's writer
// and read back with PortWire's decoder, under the same checks any local
// receiver applies (limits sized to the NATS server's max_payload).
//
// What cannot cross (v1): descriptors. A port component or a reply port
// passed with a one-way message is refused (the sender's connection is
// closed, as a local receiver closes one that sent an invalid record); a
// large component (a sealed memfd) travels as a data component while the
// whole record fits the server's payload limit, and arrives as data (the
// local send makes it a memfd again when it is too large for one record).

import PortCore

/// Why a message cannot cross: an error code and text for the NATS reply
/// (portd-bridge(8), "Errors") or the log.
struct BridgeRefusal: Error, Sendable, CustomStringConvertible {
    let code: Int
    let text: String
    init(_ code: Int, _ text: String) {
        self.code = code
        self.text = text
    }
    var description: String { "\(code) \(text)" }

    static func malformed(_ e: WireError) -> BridgeRefusal { .init(400, "malformed record: \(e)") }
    static let rights = BridgeRefusal(403, "a record with a port right or a reply port cannot cross hosts")
    static func tooLarge(_ size: Int, _ limit: Int) -> BridgeRefusal {
        .init(413, "the record is \(size) bytes; the NATS server takes at most \(limit)")
    }
}

enum BridgeRecord {
    /// Room kept for the headers inside the server's max_payload.
    static let headerRoom = 4096

    /// The limits a record read from NATS is checked against: no
    /// descriptors at all, and no more bytes than the payload could hold.
    static func limits(maxPayload: Int) -> PortLimits {
        var l = PortLimits.default
        l.maxRecordSize = max(maxPayload, WireFormat.headerSize)
        l.maxDescriptors = 0
        return l
    }

    /// The record of `message` (REPLY_EXPECTED when `request`), at most
    /// `maxBytes` long. `passedReplyPort`: a reply port the message carried.
    static func encode(_ message: PCPortMessage, request: Bool, hasPassedPort: Bool, maxBytes: Int) throws(BridgeRefusal) -> [UInt8] {
        if hasPassedPort { throw .rights }
        var size = WireFormat.headerSize + WireFormat.entrySize * message.components.count
        for c in message.components {
            switch c {
            case .data(let b): size += b.count
            case .sharedMemory(let m): size += m.count
            case .port: throw .rights
            }
        }
        if size > maxBytes { throw .tooLarge(size, maxBytes) }
        var record = [UInt8](repeating: 0, count: size)
        var limits = PortLimits.default
        limits.maxRecordSize = max(size, WireFormat.headerSize)
        do {
            // PortWire's calls throw WireError; the closures here are
            // untyped (typed-throws closures crashed this compiler).
            try record.withUnsafeMutableBytes { buffer in
                var w = try WireWriter(
                    into: buffer, msgid: message.msgid, hasReplyPort: false, componentCount: message.components.count,
                    limits: limits)
                for c in message.components {
                    switch c {
                    case .data(let b): try w.appendData(b)
                    case .sharedMemory(let m): try m.withUnsafeBytes { try w.appendData($0) }
                    case .port: break
                    }
                }
                _ = try w.finish()
            }
        } catch let error as WireError {
            throw .malformed(error)
        } catch {
            throw BridgeRefusal(400, "\(error)")
        }
        if request { record[5] |= WireFormat.Flags.replyExpected.rawValue }
        return record
    }

    /// A record read from NATS: the message to deliver (data components
    /// only) and whether it is a request.
    static func decode(_ bytes: [UInt8], maxPayload: Int) throws(BridgeRefusal) -> (message: PCPortMessage, request: Bool) {
        let limits = limits(maxPayload: maxPayload)
        var components: [PCPortMessage.Component] = []
        var msgid: UInt32 = 0
        var request = false
        do {
            try bytes.withUnsafeBytes { raw in
                let view = try WireDecoder.decode(raw, descriptorCount: 0, limits: limits)
                components.reserveCapacity(view.componentCount)
                for c in view.components {
                    switch c {
                    case .data(let p): components.append(.data(Array(p)))
                    // Unreachable with no descriptors (the decoder counts
                    // them), kept so that a change there cannot slip through.
                    case .port, .largeData: throw WireError.tooManyDescriptors(count: 1, limit: 0)
                    }
                }
                msgid = view.msgid
                request = view.flags.contains(.replyExpected)
            }
        } catch let error as WireError {
            switch error {
            case .tooManyDescriptors, .descriptorCountMismatch: throw .rights
            default: throw .malformed(error)
            }
        } catch {
            throw BridgeRefusal(400, "\(error)")
        }
        return (PCPortMessage(msgid: msgid, components: components), request)
    }
}
