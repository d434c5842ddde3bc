// TestWireTransport: the send and receive paths a port will take, assembled
// from the pieces under test (WireEncoder/WireDecoder, ControlMessage,
// UnixSocket.send/receive) with buffers allocated once. Test-only: the port
// layer builds its own.

import Glibc
import PortSystem
import PortWire

package final class TestWireTransport {
    package let limits: PortLimits
    package let sendBuffer: UnsafeMutableRawBufferPointer
    package let receiveBuffer: UnsafeMutableRawBufferPointer
    package let sendDescriptors: UnsafeMutableBufferPointer<Int32>
    package let receiveDescriptors: UnsafeMutableBufferPointer<Int32>
    package let sendControl: ControlMessage.Buffer
    package let receiveControl: ControlMessage.Buffer

    package init(limits: PortLimits = .default) {
        self.limits = limits
        sendBuffer = .allocate(byteCount: limits.maxRecordSize, alignment: 8)
        receiveBuffer = .allocate(byteCount: limits.maxRecordSize, alignment: 8)
        sendDescriptors = .allocate(capacity: limits.maxDescriptors)
        receiveDescriptors = .allocate(capacity: limits.maxDescriptors)
        sendControl = ControlMessage.Buffer(descriptors: limits.maxDescriptors, credentials: true)
        receiveControl = ControlMessage.Buffer(descriptors: limits.maxDescriptors, credentials: true)
    }

    deinit {
        sendBuffer.deallocate()
        receiveBuffer.deallocate()
        sendDescriptors.deallocate()
        receiveDescriptors.deallocate()
    }

    package func send(
        _ fd: Int32, msgid: UInt32, replyPort: Int32? = nil, components: [PortComponent],
        credentials: Credentials? = nil
    ) throws -> UnixSocket.SendOutcome {
        let e = try WireEncoder.encode(
            msgid: msgid, replyPort: replyPort, components: components, into: sendBuffer,
            descriptors: sendDescriptors, limits: limits)
        let controlLength = ControlMessage.encode(
            descriptors: UnsafeBufferPointer(rebasing: sendDescriptors[0..<e.descriptorCount]),
            credentials: credentials, into: sendControl)
        return try UnixSocket.send(
            fd, UnsafeRawBufferPointer(rebasing: sendBuffer[0..<e.byteCount]), control: sendControl,
            controlLength: controlLength)
    }

    package struct Received {
        package var msgid: UInt32
        package var replyPort: Int32?
        package var components: [PortComponent]
        package var credentials: Credentials?
    }

    package enum ReceiveError: Error, Equatable {
        case outcome(UnixSocket.ReceiveOutcome)
        case wire(WireError)
        case truncated
    }

    /// Receives and decodes one message; on a decoding error closes every
    /// received descriptor, as the port layer must.
    package func receive(_ fd: Int32) throws -> Received {
        let outcome = try UnixSocket.receive(fd, into: receiveBuffer, control: receiveControl)
        guard case .record(let r) = outcome else { throw ReceiveError.outcome(outcome) }
        let control = ControlMessage.parse(
            receiveControl, length: r.controlLength, truncated: r.controlTruncated, descriptors: receiveDescriptors)
        let fds = UnsafeBufferPointer(rebasing: receiveDescriptors[0..<control.descriptorCount])
        if r.truncated || control.truncated {
            for d in fds { close(d) }
            throw ReceiveError.truncated
        }
        do {
            let view = try WireDecoder.decode(
                UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<r.byteCount]), descriptors: fds, limits: limits)
            return Received(
                msgid: view.msgid, replyPort: view.replyPort, components: view.copyComponents(),
                credentials: control.credentials)
        } catch {
            for d in fds { close(d) }
            throw ReceiveError.wire(error)
        }
    }
}
