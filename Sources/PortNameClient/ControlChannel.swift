// ControlChannel: one connection to portd's control socket, with requests
// matched to replies by serial (portd-protocol(7), NAME SERVER): any number
// of threads send requests on it at once, and each gets the reply that
// echoes its serial, in whatever order portd answers (a LOOKUP that waits
// does not hold up a STATUS sent after it).
//
// How: sending is serialised by `sendLock` (one record per request, with
// its own transport); reading is done by whichever waiting thread finds no
// one else reading (leader/follower): it polls the socket until its own
// deadline, reads one record, files it under its serial and wakes the
// others, then checks whether the reply was its own. A reply whose request
// gave up waiting (its serial is no longer awaited) is dropped, its
// descriptors closed. The end of the connection, or a record that is not a
// valid port message, fails every request waiting and every later one.
//
// Invariants: at most one thread reads at a time (`reading`); `awaited`
// holds the serials of requests still waiting, `arrived` only replies to
// them; serials are never 0 (0 is portd's own: a refusal of the
// connection, which fails everyone with its message).

import PortMessaging
import PortNameProtocol
import PortSystem
import PortWire

final class ControlChannel: @unchecked Sendable {
    // Safe to share: `right` is itself thread-safe; the transports are used
    // only with `sendLock` held (sending) or by the one reading thread
    // (`reading`, under `condition`'s mutex); every other field is read and
    // written only with `condition`'s mutex held.
    let right: SendRight
    private let sendLock = Lock()
    private let sendTransport: MessageTransport
    private let receiveTransport: MessageTransport
    private let condition = Condition()
    private var nextSerial: UInt32 = 1
    private var awaited: Set<UInt32> = []
    private var arrived: [UInt32: PCPortMessage] = [:]
    private var reading = false
    private var failure: NameServerError?

    init(right: SendRight, limits: PortLimits) {
        self.right = right
        sendTransport = MessageTransport(limits: limits)
        receiveTransport = MessageTransport(limits: limits)
    }

    /// A serial for a request (never 0).
    func makeSerial() -> UInt32 {
        condition.withLock {
            let s = nextSerial
            nextSerial = nextSerial == .max ? 1 : nextSerial + 1
            return s
        }
    }

    enum Outcome {
        case reply(PCPortMessage)
        case sendTimedOut
        case receiveTimedOut
    }

    /// Sends `message` (its first field "serial=`serial`") as a request and
    /// waits up to `receiveTimeout` for the reply that echoes the serial.
    func request(
        _ message: PCPortMessage, serial: UInt32, sendTimeout: Duration, receiveTimeout: Duration
    ) throws(NameServerError) -> Outcome {
        try condition.withLock { () throws(NameServerError) in
            if let failure { throw failure }
            awaited.insert(serial)
        }
        let sent: SendResult
        do {
            sent = try sendLock.withLock { () throws(PortError) -> SendResult in
                guard let connection = right.currentConnection() else { throw .invalidated }
                return try sendTransport.send(
                    message, on: connection.descriptor, replyPort: message.replyPort, replyExpected: true,
                    before: .now() + sendTimeout)
            }
        } catch {
            forget(serial)
            if case .invalidated = error { throw .connectionLost }
            throw .transport(error)
        }
        switch sent {
        case .sent, .receiverGone:
            // A gone portd may have left a record (a refusal of the
            // connection): reading finds it, then the end.
            break
        case .timedOut:
            forget(serial)
            return .sendTimedOut
        }
        return try awaitReply(serial, until: .now() + receiveTimeout)
    }

    private func forget(_ serial: UInt32) {
        condition.withLock {
            awaited.remove(serial)
            arrived[serial] = nil
        }
    }

    private enum Turn {
        case done(PCPortMessage)
        case failed(NameServerError)
        case timedOut
        case read
    }

    private func awaitReply(_ serial: UInt32, until deadline: MonotonicInstant) throws(NameServerError) -> Outcome {
        while true {
            let turn: Turn = condition.withLock {
                while true {
                    if let reply = arrived.removeValue(forKey: serial) {
                        awaited.remove(serial)
                        return .done(reply)
                    }
                    if let failure {
                        awaited.remove(serial)
                        return .failed(failure)
                    }
                    if MonotonicInstant.now() >= deadline {
                        awaited.remove(serial)
                        return .timedOut
                    }
                    if !reading {
                        reading = true
                        return .read
                    }
                    _ = condition.wait(until: deadline)
                }
            }
            switch turn {
            case .done(let reply): return .reply(reply)
            case .failed(let error): throw error
            case .timedOut: return .receiveTimedOut
            case .read: readOne(until: deadline)
            }
        }
    }

    /// The reading thread's turn: waits until a record comes or `deadline`,
    /// reads it, files it, and hands the turn back.
    private func readOne(until deadline: MonotonicInstant) {
        var record: PCPortMessage?
        var ended: NameServerError?
        if let connection = right.currentConnection() {
            do {
                let remaining = deadline - .now()
                let ready = try Poll.wait(
                    connection.descriptor, for: .readable, timeout: remaining < .zero ? .zero : remaining)
                if !ready.isEmpty {
                    switch try receiveTransport.receive(on: connection.descriptor) {
                    case .message(let m, _): record = m
                    case .wouldBlock: break
                    case .closed: ended = .connectionLost
                    }
                }
            } catch let error as PortError {
                ended = .transport(error)
            } catch {
                ended = .connectionLost
            }
        } else {
            ended = .connectionLost
        }
        condition.withLock {
            reading = false
            if let ended, failure == nil { failure = ended }
            if let record { file(record) }
        }
        condition.broadcast()
    }

    /// Mutex held: files a record under its serial, or drops it.
    private func file(_ record: PCPortMessage) {
        let serial = record.components.first?.string.flatMap(NameServerField.init(text:)).flatMap {
            $0.key == NameServerProtocol.Field.serial ? UInt32($0.value) : nil
        }
        guard let serial else {
            failure = .protocolError("a record without serial=N on the control connection (msgid \(record.msgid))")
            return
        }
        if serial == 0 {
            // portd's own: the connection is refused (a limit), then closed.
            let reply = try? NameServerReply(record)
            failure = reply?.failure ?? .connectionLost
            return
        }
        if awaited.contains(serial) { arrived[serial] = record }
        // Otherwise the reply to a request that gave up waiting: dropped.
    }
}
