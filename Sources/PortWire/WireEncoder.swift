// WireEncoder: a whole message (msgid, reply port, `PortComponent`s) to one
// record and its descriptors' numbers in SCM_RIGHTS order, written into
// buffers the caller owns and reuses: no allocation per message. `package`,
// as PortComponent is: PortCore's own sending path writes the record with
// WireWriter and lends owned descriptors to the control message itself. Sizes, counts and limits
// are checked in a first pass, so a message that cannot be sent fails with
// exact figures before anything is written.
//
// Components come as a concrete [PortComponent], not `some Collection`: an
// unspecialised generic call from another module allocated three times per
// message; with the array, encode + sendmsg + recvmsg + decode measured zero
// allocations per message (release build, malloc counted by LD_PRELOAD).

/// Encodes port messages (see portd-protocol(7)).
package enum WireEncoder {
    /// What `encode` wrote.
    package struct Encoded: Hashable, Sendable {
        /// Bytes of the record, from the start of the buffer.
        package var byteCount: Int
        /// Descriptors to pass with SCM_RIGHTS, from the start of the descriptor buffer.
        package var descriptorCount: Int
    }

    /// The record length `components` encode to (header, table, inline data).
    package static func encodedSize(of components: [PortComponent]) -> Int {
        var n = WireFormat.headerSize + WireFormat.entrySize * components.count
        for c in components {
            if case .data(let bytes) = c { n += bytes.count }
        }
        return n
    }

    /// Descriptors a message with these components calls for.
    package static func descriptorCount(of components: [PortComponent], hasReplyPort: Bool) -> Int {
        var n = hasReplyPort ? 1 : 0
        for c in components where c.kind != .data { n += 1 }
        return n
    }

    /// Writes the record for a message into `buffer` and the descriptors
    /// to pass with it into `descriptors`: `replyPort` first when given,
    /// then each port's and large component's descriptor in component order.
    /// The descriptors are only copied; the caller still owns them.
    package static func encode(
        msgid: UInt32, replyPort: Int32?, components: [PortComponent],
        into buffer: UnsafeMutableRawBufferPointer, descriptors: UnsafeMutableBufferPointer<Int32>,
        limits: PortLimits = .default
    ) throws(WireError) -> Encoded {
        if components.count > limits.maxComponents {
            throw .tooManyComponents(count: components.count, limit: limits.maxComponents)
        }
        let size = encodedSize(of: components)
        if size > limits.maxRecordSize { throw .recordTooLarge(size: size, limit: limits.maxRecordSize) }
        if size > buffer.count { throw .bufferTooSmall(needed: size, capacity: buffer.count) }
        let fds = descriptorCount(of: components, hasReplyPort: replyPort != nil)
        if fds > limits.maxDescriptors { throw .tooManyDescriptors(count: fds, limit: limits.maxDescriptors) }
        if fds > descriptors.count { throw .bufferTooSmall(needed: fds, capacity: descriptors.count) }

        var writer = try WireWriter(
            into: buffer, msgid: msgid, hasReplyPort: replyPort != nil,
            componentCount: components.count, limits: limits)
        var d = 0
        if let replyPort {
            descriptors[0] = replyPort
            d = 1
        }
        for c in components {
            switch c {
            case .data(let bytes):
                try writer.appendData(bytes)
            case .port(let fd):
                try writer.appendPort()
                descriptors[d] = fd
                d += 1
            case .largeData(let memfd, let length):
                try writer.appendLargeData(length: length)
                descriptors[d] = memfd
                d += 1
            }
        }
        return Encoded(byteCount: try writer.finish(), descriptorCount: d)
    }

    /// As `encode(msgid:replyPort:components:into:descriptors:limits:)`,
    /// returning new arrays: for tests and cold paths.
    package static func encode(
        msgid: UInt32, replyPort: Int32? = nil, components: [PortComponent], limits: PortLimits = .default
    ) throws(WireError) -> (bytes: [UInt8], descriptors: [Int32]) {
        let size = encodedSize(of: components)
        if size > limits.maxRecordSize { throw .recordTooLarge(size: size, limit: limits.maxRecordSize) }
        var bytes = [UInt8](repeating: 0, count: size)
        var fds = [Int32](repeating: -1, count: descriptorCount(of: components, hasReplyPort: replyPort != nil))
        let result = bytes.withUnsafeMutableBytes { raw in
            fds.withUnsafeMutableBufferPointer { d in
                Result { () throws(WireError) in
                    try encode(
                        msgid: msgid, replyPort: replyPort, components: components, into: raw, descriptors: d,
                        limits: limits)
                }
            }
        }
        let encoded = try result.get()
        precondition(encoded.byteCount == size && encoded.descriptorCount == fds.count)
        return (bytes, fds)
    }
}
