// MessageTransport: one port message in, one out, on a connected
// SOCK_SEQPACKET socket: encode, sendmsg with a deadline, recvmsg, decode.
// Shared by SendRight (sending, reading replies) and PCPort (receiving,
// replying).
//
// Invariants: buffers are allocated once per transport and reused (no
// allocation per message but the received message's own storage); a
// received descriptor is owned by exactly one object the moment it is
// parsed, and every descriptor of a record that fails validation is closed
// before the error is reported.

import PortRunLoop
import PortSystem
import PortWire

package final class MessageTransport {
    // Not shared: a transport is used by one thread at a time (its owner's
    // lock or run-loop thread serializes it).
    package let limits: PortLimits
    private var sendBuffer: UnsafeMutableRawBufferPointer
    private let sendControl: ControlMessage.Buffer
    private var receiveBuffer: UnsafeMutableRawBufferPointer?
    private var receiveControl: ControlMessage.Buffer?
    private let descriptorScratch: UnsafeMutableBufferPointer<Int32>

    package init(limits: PortLimits = .default) {
        self.limits = limits
        sendBuffer = .allocate(byteCount: 256, alignment: 8)
        sendControl = ControlMessage.Buffer(descriptors: limits.maxDescriptors, credentials: false)
        descriptorScratch = .allocate(capacity: limits.maxDescriptors)
    }

    deinit {
        sendBuffer.deallocate()
        receiveBuffer?.deallocate()
        descriptorScratch.deallocate()
    }

    // MARK: Sending

    /// Encodes and sends `message` on `fd`, waiting for room until
    /// `deadline`. `replyPort` is a descriptor to pass as the reply right.
    package func send(
        _ message: PCPortMessage, on fd: Int32, replyPort: Int32?, replyExpected: Bool, before deadline: MonotonicInstant
    ) throws(PortError) -> SendResult {
        // Large data components become sealed memfds (only when the record
        // would not fit otherwise); they must live until sendmsg returns.
        var inlineSize = WireFormat.headerSize + WireFormat.entrySize * message.components.count
        for c in message.components { if case .data(let b) = c { inlineSize += b.count } }
        let spill = inlineSize > limits.maxRecordSize
        var spilled: [SharedMemory] = []
        if spill {
            for c in message.components {
                if case .data(let b) = c, b.count >= 4096 {
                    do { spilled.append(try SharedMemory(copying: b)) } catch { throw .system(error) }
                }
            }
            inlineSize = WireFormat.headerSize + WireFormat.entrySize * message.components.count
            for c in message.components { if case .data(let b) = c, b.count < 4096 { inlineSize += b.count } }
        }
        if inlineSize > sendBuffer.count {
            if inlineSize > limits.maxRecordSize {
                throw .wire(.recordTooLarge(size: inlineSize, limit: limits.maxRecordSize))
            }
            sendBuffer.deallocate()
            sendBuffer = .allocate(byteCount: max(inlineSize, sendBuffer.count * 2), alignment: 8)
        }
        // Header, table and inline bytes written straight into the reusable
        // buffer; descriptors in record order into the scratch array.
        let recordLength: Int
        var descriptorCount = 0
        do {
            var writer = try WireWriter(
                into: sendBuffer, msgid: message.msgid, hasReplyPort: replyPort != nil,
                componentCount: message.components.count, limits: limits)
            if let replyPort {
                descriptorScratch[0] = replyPort
                descriptorCount = 1
            }
            var nextSpilled = 0
            for c in message.components {
                switch c {
                case .data(let b) where spill && b.count >= 4096:
                    let m = spilled[nextSpilled]
                    nextSpilled += 1
                    try writer.appendLargeData(length: m.count)
                    descriptorScratch[descriptorCount] = m.fd
                    descriptorCount += 1
                case .data(let b):
                    try writer.appendData(b)
                case .port(let right):
                    try writer.appendPort()
                    descriptorScratch[descriptorCount] = right.fd
                    descriptorCount += 1
                case .sharedMemory(let m):
                    try writer.appendLargeData(length: m.count)
                    descriptorScratch[descriptorCount] = m.fd
                    descriptorCount += 1
                }
            }
            recordLength = try writer.finish()
        } catch {
            throw .wire(error)
        }
        if replyExpected {
            sendBuffer[5] |= WireFormat.Flags.replyExpected.rawValue
        }
        let controlLength = ControlMessage.encode(
            descriptors: UnsafeBufferPointer(rebasing: descriptorScratch[0..<descriptorCount]),
            into: sendControl)
        let record = UnsafeRawBufferPointer(rebasing: sendBuffer[0..<recordLength])
        while true {
            let outcome: UnixSocket.SendOutcome
            do {
                outcome = try UnixSocket.send(fd, record, control: sendControl, controlLength: controlLength)
            } catch {
                throw .system(error)
            }
            switch outcome {
            case .sent:
                withExtendedLifetime(spilled) {}
                return .sent
            case .peerClosed, .connectionReset:
                return .receiverGone
            case .wouldBlock:
                do {
                    if try !Poll.waitWritable(fd, until: deadline) { return .timedOut }
                } catch {
                    throw .system(error)
                }
            }
        }
    }

    // MARK: Receiving

    package enum Received {
        case message(PCPortMessage, replyExpected: Bool)
        case wouldBlock
        case closed
    }

    /// Receives and decodes one record from `fd`. A malformed record throws
    /// after closing every descriptor it carried; the caller then closes the
    /// connection.
    package func receive(on fd: Int32) throws(PortError) -> Received {
        let buffer: UnsafeMutableRawBufferPointer
        let control: ControlMessage.Buffer
        if let b = receiveBuffer, let c = receiveControl {
            buffer = b
            control = c
        } else {
            buffer = .allocate(byteCount: limits.maxRecordSize, alignment: 8)
            control = ControlMessage.Buffer(descriptors: limits.maxDescriptors, credentials: true)
            receiveBuffer = buffer
            receiveControl = control
        }
        let outcome: UnixSocket.ReceiveOutcome
        do {
            outcome = try UnixSocket.receive(fd, into: buffer, control: control)
        } catch {
            throw .system(error)
        }
        let record: UnixSocket.ReceivedRecord
        switch outcome {
        case .wouldBlock: return .wouldBlock
        case .endOfStream, .connectionReset: return .closed
        case .record(let r): record = r
        }
        let parsed = ControlMessage.parse(
            control, length: record.controlLength, truncated: record.controlTruncated,
            descriptors: descriptorScratch)
        let fds = UnsafeBufferPointer(rebasing: descriptorScratch[0..<parsed.descriptorCount])
        var adopted = 0  // descriptors [0, adopted) belong to objects now
        func closeRest() { for i in adopted..<fds.count { SystemCall.close(fds[i]) } }
        if parsed.truncated || parsed.unexpected > 0 {
            closeRest()
            throw .controlTruncated
        }
        if record.truncated {
            closeRest()
            throw .recordTruncated
        }
        let view: WireMessageView
        do {
            view = try WireDecoder.decode(
                UnsafeRawBufferPointer(rebasing: buffer[0..<record.byteCount]), descriptors: fds, limits: limits)
        } catch {
            closeRest()
            throw .wire(error)
        }
        var replyPort: SendRight?
        if let r = view.replyPort {
            replyPort = SendRight(adopting: r)
            adopted += 1
        }
        var components: [PCPortMessage.Component] = []
        components.reserveCapacity(view.componentCount)
        for c in view.components {
            switch c {
            case .data(let bytes):
                components.append(.data(Array(bytes)))
            case .port(let pfd):
                components.append(.port(SendRight(adopting: pfd)))
                adopted += 1
            case .largeData(let memfd, let length):
                do {
                    try MemFD.checkSealed(memfd, length: length)
                } catch {
                    closeRest()
                    throw .unsealedSharedMemory(error)
                }
                adopted += 1  // SharedMemory owns it from here, even when mapping fails
                do {
                    components.append(.sharedMemory(try SharedMemory(adopting: memfd, length: length)))
                } catch {
                    closeRest()
                    throw .system(error)
                }
            }
        }
        var message = PCPortMessage(msgid: view.msgid, components: components, replyPort: replyPort)
        message.sender = parsed.credentials
        return .message(message, replyExpected: view.flags.contains(.replyExpected))
    }
}
