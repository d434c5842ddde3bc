// ControlChannel: one connection to portd's control socket, with requests
// matched to replies by serial (portd-protocol(7), NAME SERVER): any number
// of threads send requests on it at once, and each gets the reply that
// echoes its serial, in whatever order portd answers (a LOOKUP that waits
// does not hold up a STATUS sent after it).
//
// HELLO is pipelined: the first request goes out right behind it, with no
// round trip of its own; its answer is read with the request's. A HELLO
// that fails (another protocol version, a uid portd does not serve) fails
// that request and every later one with HELLO's error.
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

    /// A serial for a request (never 0). Mutex held.
    private func makeSerialLocked() -> UInt32 {
        let s = nextSerial
        nextSerial = nextSerial == .max ? 1 : nextSerial + 1
        return s
    }

    /// Where HELLO is. Mutex held to read or write.
    private enum Greeting {
        case none
        case sent(serial: UInt32)
        case done(NameServerHello)
    }

    private var greeting = Greeting.none

    enum Outcome {
        case reply(PCPortMessage)
        /// HELLO alone was answered (`hello(timeout:)`).
        case greeted
        case sendTimedOut
        case receiveTimedOut
    }

    /// portd's answer to HELLO, saying HELLO now if no request did yet;
    /// nil when it did not come within `timeout`.
    func hello(timeout: Duration) throws(NameServerError) -> NameServerHello? {
        if case .done(let h) = condition.withLock({ greeting }) { return h }
        _ = try request(nil, [], replyPort: nil, sendTimeout: timeout, receiveTimeout: timeout)
        if case .done(let h) = condition.withLock({ greeting }) { return h }
        return nil
    }

    /// Sends request `msgid` ("serial=N", then `fields`; HELLO first when
    /// this is the connection's first request) and waits up to
    /// `receiveTimeout` for the reply that echoes its serial. `msgid` nil:
    /// HELLO alone.
    func request(
        _ msgid: UInt32?, _ fields: [NameServerField], replyPort: SendRight?, sendTimeout: Duration,
        receiveTimeout: Duration
    ) throws(NameServerError) -> Outcome {
        typealias F = NameServerProtocol.Field
        // `serial` nil: HELLO alone, whose answer is the greeting.
        let (helloSerial, serial): (UInt32?, UInt32?) = try condition.withLock { () throws(NameServerError) in
            try settleGreetingLocked()
            if let failure { throw failure }
            var helloSerial: UInt32?
            if case .none = greeting {
                let s = makeSerialLocked()
                greeting = .sent(serial: s)
                awaited.insert(s)
                helloSerial = s
            }
            guard msgid != nil else { return (helloSerial, nil) }
            let serial = makeSerialLocked()
            awaited.insert(serial)
            return (helloSerial, serial)
        }
        let deadline = MonotonicInstant.now() + sendTimeout
        let sent: SendResult
        do {
            sent = try sendLock.withLock { () throws(PortError) -> SendResult in
                guard let connection = right.currentConnection() else { throw .invalidated }
                if let helloSerial {
                    let hello = PCPortMessage(
                        request: NameServerProtocol.MessageID.hello, serial: helloSerial,
                        NameServerProtocol.versions.map { NameServerField(F.protocol, $0) })
                    let r = try sendTransport.send(
                        hello, on: connection.descriptor, replyPort: nil, replyExpected: true, before: deadline)
                    if r == .timedOut { return r }
                }
                guard let msgid, let serial else { return .sent }
                var message = PCPortMessage(request: msgid, serial: serial, fields)
                message.replyPort = replyPort
                return try sendTransport.send(
                    message, on: connection.descriptor, replyPort: replyPort, replyExpected: true, before: deadline)
            }
        } catch {
            if let serial { forget(serial) }
            if case .invalidated = error { throw .connectionLost }
            throw .transport(error)
        }
        if sent == .timedOut {
            if let serial { forget(serial) }
            return .sendTimedOut
        }
        // .sent or .receiverGone: a gone portd may have left a record (a
        // refusal of the connection); reading finds it, then the end.
        return try awaitReply(serial, until: .now() + receiveTimeout)
    }

    /// Mutex held: takes HELLO's answer if it came; throws (and fails the
    /// connection) when it is a refusal.
    private func settleGreetingLocked() throws(NameServerError) {
        guard case .sent(let s) = greeting, let record = arrived.removeValue(forKey: s) else { return }
        awaited.remove(s)
        do throws(NameServerError) {
            let reply = try NameServerReply(record)
            if reply.isError { throw reply.unexpected(for: "HELLO") }
            greeting = .done(
                try NameServerError.parsing { () throws(NameServerProtocol.Violation) in try NameServerHello(reply: reply) })
        } catch {
            failure = error
            throw error
        }
    }

    private func forget(_ serial: UInt32) {
        condition.withLock {
            awaited.remove(serial)
            arrived[serial] = nil
        }
    }

    private enum Turn {
        case done(PCPortMessage)
        case greeted
        case failed(NameServerError)
        case timedOut
        case read
    }

    /// Waits for the reply to `serial` (nil: for HELLO's answer) until
    /// `deadline`, reading when no other thread does. HELLO's answer is
    /// taken by whichever waiter finds it filed; its refusal fails every
    /// request, and says more than the request's own loss.
    private func awaitReply(_ serial: UInt32?, until deadline: MonotonicInstant) throws(NameServerError) -> Outcome {
        while true {
            let turn: Turn = condition.withLock {
                func leave() { if let serial { awaited.remove(serial) } }
                while true {
                    do throws(NameServerError) {
                        try settleGreetingLocked()
                    } catch {
                        leave()
                        return .failed(error)
                    }
                    if let serial, let reply = arrived.removeValue(forKey: serial) {
                        awaited.remove(serial)
                        return .done(reply)
                    }
                    if serial == nil, case .done = greeting { return .greeted }
                    if let failure {
                        leave()
                        return .failed(failure)
                    }
                    if MonotonicInstant.now() >= deadline {
                        leave()
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
            case .greeted: return .greeted
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
