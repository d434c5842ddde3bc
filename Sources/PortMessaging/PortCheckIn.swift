// The check-in handshake of Apple's Run Loops guide (listings 3-12 to 3-15, 3-17 to 3-19):
// a worker creates its own port, and sends a check-in message (msgid 100,
// kCheckinMessage) to the server's port with its own port as the reply port
// and, optionally, its name as a component. The server keeps that right:
// from then on each side can send to the other. A worker that dies after
// checking in is reported to the server (its right hangs up).
//
// (Not to be confused with claiming a declared name from the name server,
// launchd's check-in, which the name server implements.)

import PortRunLoop
import PortSystem
import PortWire
import Synchronization

/// A worker that checked in, as the server sees it.
public struct CheckedInWorker: Sendable {
    /// The name the worker gave, if any (the first component, as UTF-8).
    public let name: String?
    /// A send right to the worker's port.
    public let port: SendRight
    /// Who sent the check-in, as the kernel reported it.
    public let credentials: Credentials?
}

extension SendRight {
    /// The worker half: sends the check-in message to the server this right
    /// leads to, with a right to `workerPort` as the reply port.
    @discardableResult
    public func checkIn(
        workerPort: PCPort, name: String? = nil, msgid: UInt32 = WireFormat.checkInMessageID,
        timeout: Duration = .seconds(30)
    ) throws(PortError) -> SendResult {
        let components: [PCPortMessage.Component] = name.map { [.data(Array($0.utf8))] } ?? []
        return try send(PCPortMessage(msgid: msgid, components: components), timeout: timeout, replyPort: workerPort)
    }
}

/// The server half: a port handler that takes check-in messages, keeps each
/// worker's right, and tells `onCheckIn` and, when the worker's port goes
/// away, `onWorkerGone`. Other messages go to `otherMessages`.
///
/// Each worker kept holds a descriptor (its right), for as long as its
/// port lives; any peer that can send to the server's port can check in.
/// So the server keeps at most `maxWorkersPerUID` workers of one uid (as
/// the kernel reports the sender) at a time: a check-in beyond that is
/// refused (its right closed at once, `onCheckIn` not called), and a
/// worker that goes makes room again.
public final class CheckInServer: @unchecked Sendable {
    // Safe to share: `state` is a Mutex; everything else is immutable.
    public let msgid: UInt32
    /// The most workers of one uid kept at a time.
    public let maxWorkersPerUID: Int
    private let loop: PCRunLoop
    private let mode: PCRunLoop.Mode
    private let onCheckIn: (CheckedInWorker) -> Void
    private let onWorkerGone: ((CheckedInWorker) -> Void)?
    private let otherMessages: PCPort.Handler?
    private let state = Mutex<Workers>(Workers())

    /// The workers kept, and how many of each uid.
    private struct Workers {
        var byID: [ObjectIdentifier: CheckedInWorker] = [:]
        var countByUID: [UInt32: Int] = [:]
    }

    /// The uid a worker is counted against (a sender the kernel did not
    /// name counts against one key of its own).
    private static func uid(of worker: CheckedInWorker) -> UInt32 { worker.credentials?.uid ?? .max }

    /// Invalidation of workers is watched on `loop` in `mode` (the loop the
    /// server's port is scheduled on).
    public init(
        msgid: UInt32 = WireFormat.checkInMessageID, loop: PCRunLoop, mode: PCRunLoop.Mode = .common,
        maxWorkersPerUID: Int = 256,
        onCheckIn: @escaping (CheckedInWorker) -> Void, onWorkerGone: ((CheckedInWorker) -> Void)? = nil,
        otherMessages: PCPort.Handler? = nil
    ) {
        self.msgid = msgid
        self.maxWorkersPerUID = max(1, maxWorkersPerUID)
        self.loop = loop
        self.mode = mode
        self.onCheckIn = onCheckIn
        self.onWorkerGone = onWorkerGone
        self.otherMessages = otherMessages
    }

    /// The workers checked in and still alive.
    public var workers: [CheckedInWorker] { state.withLockAnnotated { Array($0.byID.values) } }

    /// Installs this server as `port`'s handler.
    public func serve(_ port: PCPort) {
        port.setHandler { [self] m in handle(m) }
    }

    /// Handles one message: a check-in is consumed, anything else forwarded.
    public func handle(_ message: PCPortMessage) -> PCPortMessage? {
        guard message.msgid == msgid, let right = message.replyPort else {
            return otherMessages?(message)
        }
        let worker = CheckedInWorker(
            name: message.components.first?.string, port: right, credentials: message.sender)
        let id = ObjectIdentifier(right)
        let uid = Self.uid(of: worker)
        let kept = state.withLockAnnotated { (workers: inout Workers) -> Bool in
            let n = workers.countByUID[uid, default: 0]
            guard n < maxWorkersPerUID else { return false }
            workers.countByUID[uid] = n + 1
            workers.byID[id] = worker
            return true
        }
        guard kept else {
            right.invalidate()  // refused: its descriptor goes now
            return nil
        }
        do {
            try right.onInvalidation(in: loop, forMode: mode) { [weak self] in
                guard let self else { return }
                let gone = self.state.withLockAnnotated { (workers: inout Workers) -> CheckedInWorker? in
                    guard let gone = workers.byID.removeValue(forKey: id) else { return nil }
                    let n = workers.countByUID[uid, default: 1] - 1
                    workers.countByUID[uid] = n > 0 ? n : nil
                    return gone
                }
                if let gone { self.onWorkerGone?(gone) }
            }
        } catch {
            // Cannot watch it: it is still usable, and a send will tell.
        }
        onCheckIn(worker)
        return nil
    }
}
