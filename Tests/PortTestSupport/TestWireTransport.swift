// TestWireTransport: the send and receive paths a port will take, assembled
// from the pieces under test (WireEncoder/WireDecoder, ControlMessage,
// UnixSocket.send/receive) with buffers allocated once. Test-only: the port
// layer builds its own. Descriptors in components are plain numbers the
// test owns: sent ones are lent for the call; received ones are handed to
// the test, which closes them.

import Glibc
import PortSystem
import PortWire

package final class TestWireTransport {
    package let limits: PortLimits
    package let sendBuffer: UnsafeMutableRawBufferPointer
    package let receiveBuffer: UnsafeMutableRawBufferPointer
    package let sendDescriptors: UnsafeMutableBufferPointer<Int32>
    package let sendControl: ControlMessage.Buffer
    package let receiveControl: ControlMessage.Buffer

    package init(limits: PortLimits = .default) {
        self.limits = limits
        sendBuffer = .allocate(byteCount: limits.maxRecordSize, alignment: 8)
        receiveBuffer = .allocate(byteCount: limits.maxRecordSize, alignment: 8)
        sendDescriptors = .allocate(capacity: limits.maxDescriptors)
        sendControl = ControlMessage.Buffer(descriptors: limits.maxDescriptors, credentials: true)
        receiveControl = ControlMessage.Buffer(descriptors: limits.maxDescriptors, credentials: true)
    }

    deinit {
        sendBuffer.deallocate()
        receiveBuffer.deallocate()
        sendDescriptors.deallocate()
    }

    package func send(
        _ fd: borrowing OwnedDescriptor, msgid: UInt32, replyPort: Int32? = nil, components: [PortComponent],
        credentials: Credentials? = nil
    ) throws -> UnixSocket.SendOutcome {
        let e = try WireEncoder.encode(
            msgid: msgid, replyPort: replyPort, components: components, into: sendBuffer,
            descriptors: sendDescriptors, limits: limits)
        sendControl.reset()
        for i in 0..<e.descriptorCount { sendControl.append(number: sendDescriptors[i]) }
        let controlLength = sendControl.finish(credentials: credentials)
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
    package func receive(_ fd: borrowing OwnedDescriptor) throws -> Received {
        let outcome = try UnixSocket.receive(fd, into: receiveBuffer, control: receiveControl)
        guard case .record(let r) = outcome else { throw ReceiveError.outcome(outcome) }
        var descriptors = OwnedDescriptors(capacity: limits.maxDescriptors)  // closes what it still holds
        let control = ControlMessage.parse(
            receiveControl, length: r.controlLength, truncated: r.controlTruncated, into: &descriptors)
        if r.truncated || control.truncated { throw ReceiveError.truncated }
        let view: WireMessageView
        do {
            view = try WireDecoder.decode(
                UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<r.byteCount]), descriptorCount: descriptors.count,
                limits: limits)
        } catch {
            throw ReceiveError.wire(error)
        }
        // The test owns the numbers from here.
        var numbers: [Int32] = []
        for i in 0..<descriptors.count { numbers.append(descriptors.take(at: i).take()) }
        return numbers.withUnsafeBufferPointer { fds in
            Received(
                msgid: view.msgid, replyPort: view.replyPortDescriptorIndex.map { fds[$0] },
                components: view.copyComponents(descriptors: fds), credentials: control.credentials)
        }
    }
}
