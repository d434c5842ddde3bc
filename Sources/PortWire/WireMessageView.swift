// WireMessageView: a validated record, read in place. Only `WireDecoder`
// makes one, after every length and count has been checked, so walking the
// table here needs no checks. It borrows the receive buffer: it must not
// outlive it (it is not Sendable and holds an unsafe pointer).
//
// Descriptors: the wire layer is pure and owns none. A port or large
// component names its descriptor by position in the record's SCM_RIGHTS
// list (the reply port, when there is one, is position 0); the layer that
// received the record owns the descriptors (PortSystem's OwnedDescriptors)
// and takes each out by that position.

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
    /// How many descriptors came with the record (as many as it calls for).
    public let descriptorCount: Int

    package init(
        msgid: UInt32, flags: WireFormat.Flags, componentCount: Int,
        record: UnsafeRawBufferPointer, descriptorCount: Int
    ) {
        self.msgid = msgid
        self.flags = flags
        self.componentCount = componentCount
        self.record = record
        self.descriptorCount = descriptorCount
    }

    /// The position of the reply port's descriptor (0), if the sender gave one.
    public var replyPortDescriptorIndex: Int? { flags.contains(.replyPort) ? 0 : nil }

    /// One component, borrowed from the record.
    public enum Component {
        /// Inline bytes, a slice of the receive buffer.
        case data(UnsafeRawBufferPointer)
        /// A send right: the descriptor at this position of the record's list.
        case port(descriptorIndex: Int)
        /// A memfd said to hold `length` bytes, at this position of the
        /// record's descriptor list; check it with `MemFD.checkSealed`
        /// before mapping it.
        case largeData(descriptorIndex: Int, length: Int)
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
        var entry: Int
        var data: Int
        var descriptor: Int
        var remaining: Int

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
                return .port(descriptorIndex: descriptor)
            case .largeData:
                defer { descriptor += 1 }
                return .largeData(descriptorIndex: descriptor, length: length)
            case nil:
                preconditionFailure("WireMessageView over an unvalidated record")
            }
        }
    }

    /// The components as values: data copied out of the receive buffer,
    /// descriptors as the numbers at their positions in `descriptors` (the
    /// numbers the record came with; whoever owns them still does). For
    /// tests and tools that read records without owning descriptors.
    package func copyComponents(descriptors: UnsafeBufferPointer<Int32>) -> [PortComponent] {
        var result: [PortComponent] = []
        result.reserveCapacity(componentCount)
        for c in components {
            switch c {
            case .data(let bytes): result.append(.data([UInt8](bytes)))
            case .port(let i): result.append(.port(descriptors[i]))
            case .largeData(let i, let length): result.append(.largeData(memfd: descriptors[i], length: length))
            }
        }
        return result
    }
}
