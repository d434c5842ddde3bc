// WireMessageView: a validated record, read in place. Only `WireDecoder`
// makes one, after every length and count has been checked, so walking the
// table here needs no checks. It borrows the receive buffer and the
// descriptor array: it must not outlive them (it is not Sendable and holds
// unsafe pointers), and `copyComponents()` is the way to keep a message.

/// A decoded port message that reads from its receive buffer without copying.
public struct WireMessageView {
    /// The message ID.
    public let msgid: UInt32
    /// The header flags.
    public let flags: WireFormat.Flags
    /// The number of components.
    public let componentCount: Int
    /// The whole record.
    public let record: UnsafeRawBufferPointer
    /// The descriptors that came with the record, in SCM_RIGHTS order.
    public let descriptors: UnsafeBufferPointer<Int32>

    package init(
        msgid: UInt32, flags: WireFormat.Flags, componentCount: Int,
        record: UnsafeRawBufferPointer, descriptors: UnsafeBufferPointer<Int32>
    ) {
        self.msgid = msgid
        self.flags = flags
        self.componentCount = componentCount
        self.record = record
        self.descriptors = descriptors
    }

    /// The reply port's descriptor (descriptor 0), if the sender gave one.
    public var replyPort: Int32? { flags.contains(.replyPort) ? descriptors[0] : nil }

    /// One component, borrowed from the record.
    public enum Component {
        /// Inline bytes, a slice of the receive buffer.
        case data(UnsafeRawBufferPointer)
        /// A send right.
        case port(Int32)
        /// A memfd said to hold `length` bytes; check it with
        /// `MemFD.checkSealed` before mapping it.
        case largeData(memfd: Int32, length: Int)
    }

    /// The components in order.
    public var components: Components { Components(view: self) }

    /// The components of a view, as a sequence.
    public struct Components: Sequence {
        package let view: WireMessageView

        public func makeIterator() -> Iterator {
            Iterator(
                view: view, entry: WireFormat.headerSize,
                data: WireFormat.headerSize + WireFormat.entrySize * view.componentCount,
                descriptor: view.flags.contains(.replyPort) ? 1 : 0, remaining: view.componentCount)
        }

        public var underestimatedCount: Int { view.componentCount }
    }

    /// Walks the table, the data area and the descriptors in step.
    public struct Iterator: IteratorProtocol {
        package let view: WireMessageView
        package var entry: Int
        package var data: Int
        package var descriptor: Int
        package var remaining: Int

        public mutating func next() -> Component? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let record = view.record
            let kind = record[entry]
            let length = Int(UInt32(littleEndian: record.loadUnaligned(fromByteOffset: entry + 4, as: UInt32.self)))
            entry += WireFormat.entrySize
            switch WireFormat.ComponentKind(rawValue: kind) {
            case .data:
                let slice = UnsafeRawBufferPointer(rebasing: record[data..<(data + length)])
                data += length
                return .data(slice)
            case .port:
                defer { descriptor += 1 }
                return .port(view.descriptors[descriptor])
            case .largeData:
                defer { descriptor += 1 }
                return .largeData(memfd: view.descriptors[descriptor], length: length)
            case nil:
                preconditionFailure("WireMessageView over an unvalidated record")
            }
        }
    }

    /// The components as owned values: data copied out of the receive
    /// buffer, descriptors as numbers (the caller owns them).
    public func copyComponents() -> [PortComponent] {
        var result: [PortComponent] = []
        result.reserveCapacity(componentCount)
        for c in components {
            switch c {
            case .data(let bytes): result.append(.data([UInt8](bytes)))
            case .port(let fd): result.append(.port(fd))
            case .largeData(let fd, let length): result.append(.largeData(memfd: fd, length: length))
            }
        }
        return result
    }
}
