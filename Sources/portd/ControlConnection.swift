// ControlConnection: one client's accepted connection to the control
// socket, speaking the PROVISIONAL status exchange (ProvisionalStatus in
// PortCore): every record is a request, every request gets one reply record.
//
// Invariants: `serviceReadable` reads until EAGAIN (the run loop's sources
// are level-triggered and must drain), answering each record in order; it
// never blocks: a client whose receive queue is full, that sends a record
// larger than `maximumRequestSize`, or that resets, is disconnected
// (`.close`) without affecting anyone else. The connection does not own its
// descriptor: the run-loop source that serves it does, and closes it when
// invalidated.

import Logging
import PortCore

final class ControlConnection {
    /// Larger requests are refused by disconnecting (provisional limit).
    static let maximumRequestSize = 4096

    /// What the daemon should do with the connection after serving it.
    enum Disposition: Equatable {
        case keep
        case close(reason: String)
    }

    let fileDescriptor: Int32
    /// Who connected (SO_PEERCRED), when the kernel could say.
    let peer: LocalSocket.PeerCredentials?
    private var buffer = [UInt8](repeating: 0, count: maximumRequestSize)

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        self.peer = try? LocalSocket.peerCredentials(fileDescriptor)
    }

    /// Reads and answers every queued request. `status` is asked once per
    /// status request, so each reply has a fresh uptime.
    func serviceReadable(status: () -> DaemonStatus) -> Disposition {
        do {
            while true {
                switch try LocalSocket.receive(fileDescriptor, into: &buffer) {
                case .wouldBlock:
                    return .keep
                case .endOfStream:
                    return .close(reason: "closed by the client")
                case .record(_, truncated: true):
                    return .close(reason: "request larger than \(Self.maximumRequestSize) bytes")
                case .record(let count, truncated: false):
                    let request = buffer[..<count]
                    let reply =
                        ProvisionalStatus.isStatusRequest(request)
                        ? ProvisionalStatus.encode(status()) : ProvisionalStatus.unknownRequestReply
                    guard try LocalSocket.send(fileDescriptor, reply) else {
                        return .close(reason: "the client does not read its replies")
                    }
                }
            }
        } catch {
            return .close(reason: error.description)
        }
    }
}
