// PortError: the one error type of the ports layer, and the results that
// are outcomes rather than errors (expected outcomes are values, docs/DESIGN.md §9).

import PortRunLoop
import PortSystem
import PortWire

/// A failure of the transport itself: the kernel refused a call, or a peer
/// sent a record that is not a port message.
public enum PortError: Error, Sendable, CustomStringConvertible {
    /// A system call failed.
    case system(SystemCallError)
    /// A record could not be encoded or decoded.
    case wire(WireError)
    /// A received large component was not a sealed memfd of the stated size.
    case unsealedSharedMemory(MemFD.ValidationError)
    /// The kernel dropped descriptors of a record (MSG_CTRUNC).
    case controlTruncated
    /// A record was longer than the receive buffer (MSG_TRUNC).
    case recordTruncated
    /// A record carried a descriptor opened with O_PATH, which opens
    /// nothing (no socket, no memory to map): refused on receipt, like a
    /// malformed record.
    case pathOnlyDescriptor
    /// The port or right was invalidated by its owner.
    case invalidated
    /// Another request on this right is waiting for its reply (one at a time per right).
    case requestInProgress
    /// A requester's queue was full when its reply was due: it sends
    /// requests without reading the replies. Its connection is closed.
    case peerNotReading

    public var description: String {
        switch self {
        case .system(let e): e.description
        case .wire(let e): "malformed port message: \(e)"
        case .unsealedSharedMemory(let e): "large component refused: \(e)"
        case .controlTruncated: "control data truncated (descriptors lost)"
        case .recordTruncated: "record longer than the receive buffer"
        case .pathOnlyDescriptor: "a descriptor opened with O_PATH (it opens nothing) was refused"
        case .invalidated: "the port was invalidated"
        case .requestInProgress: "another request on this right is waiting for its reply"
        case .peerNotReading: "the requester does not read its replies (its queue is full); disconnected"
        }
    }
}

/// How a send ended.
public enum SendResult: Sendable, Equatable {
    /// The message is in the receiver's queue.
    case sent
    /// The receiver's queue stayed full until the deadline.
    case timedOut
    /// The receiver is gone (exited, or invalidated its port).
    case receiverGone
}

/// How a request ended. CF's kCFMessagePortSuccess is `.reply` for a
/// request that waited for its reply, `.sent` for a one-way one.
public enum RequestResult: Sendable {
    /// The reply.
    case reply(PCPortMessage)
    /// A one-way request (no receive timeout, no reply mode: CF's NULL
    /// replyMode) is in the receiver's queue; no reply was asked for.
    case sent
    /// The request could not be queued before the send deadline.
    case sendTimedOut
    /// No reply came before the receive deadline.
    case receiveTimedOut
    /// The port is gone (before or while waiting for the reply).
    case invalidPort

    /// The reply, if there was one.
    public var reply: PCPortMessage? {
        if case .reply(let m) = self { return m }
        return nil
    }
}
