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
// one else reading (leader/follower): it waits for a record until its own
// deadline, reads one, files it under its serial and wakes the others,
// then checks whether the reply was its own. The record is lent as a view
// of the receive buffer: a plain reply to a LOOKUP is filed as its outcome,
// read there (PortNameServer+LookupReply), any other record as a message. A reply whose request
// gave up waiting (its serial is no longer awaited) is dropped, its
// descriptors closed. The end of the connection, or a record that is not a
// valid port message, fails every request waiting and every later one.
//
// The reader sleeps in recvmsg itself, as a C client does, not in poll
// and then recvmsg: the socket is blocking (only this reader's receive
// ever waits: every other send and receive on it says MSG_DONTWAIT), and
// SO_RCVTIMEO bounds the wait well inside the reader's deadline (the
// kernel may fire it an eighth late, on its timer wheel), set once and
// kept while it fits (see `receiveWait`). When it passes, the reader looks
// at its deadline again; the last stretch before a deadline, and any
// deadline too close for that, is waited for in poll as before. So a
// request waits no longer than it did, and a request after another makes
// two system calls: sendmsg and recvmsg.
//
// Invariants: at most one thread reads at a time (`reading`); `pending`
// holds the serials of requests still waiting (a few: one per waiting
// thread, so a list, searched from the front), and a reply only for them;
// serials are never 0 (0 is portd's own: a refusal of the connection,
// which fails everyone with its message).

import PortMessaging
import PortNameProtocol
import PortSystem
import PortWire

final class ControlChannel: @unchecked Sendable {
    // Safe to share: `right` is itself thread-safe; the transports,
    // `scratch` and `scratchName` are used only with `sendLock` held (sending) or by the one
    // reading thread (`reading`, under `condition`'s mutex; so is
    // `armedReceiveTimeout`); every other field is read and written only
    // with `condition`'s mutex held. Those locks are what keeps accesses
    // apart, so the fields touched per request skip the runtime's dynamic
    // exclusivity check (@exclusivity(unchecked)): no two can overlap.
    let right: SendRight
    private let sendLock = Lock()
    private let sendTransport: MessageTransport
    private let receiveTransport: MessageTransport
    private let condition = Condition()
    @exclusivity(unchecked) private var nextSerial: UInt32 = 1
    /// A request waiting, and its reply once filed.
    private struct Pending {
        var serial: UInt32
        /// A LOOKUP: its reply is read in place when it is a plain one.
        var lookup = false
        var reply: Reply?
    }

    /// A reply as filed: the message, or a LOOKUP's outcome read in place
    /// from the receive buffer (PortNameServer.lookupOutcomeInPlace), so
    /// that no message is made of it.
    enum Reply {
        case message(PCPortMessage)
        case lookup(LookupOutcome)
    }
    @exclusivity(unchecked) private var pending: [Pending] = []
    @exclusivity(unchecked) private var reading = false
    @exclusivity(unchecked) private var failure: NameServerError?
    /// The reading thread's: SO_RCVTIMEO as it set it last, in
    /// nanoseconds (nil: never).
    @exclusivity(unchecked) private var armedReceiveTimeout: Int64?
    /// `sendLock`'s: the components of the last request, whose arrays the
    /// next one is written into (once the transport let go of them).
    @exclusivity(unchecked) private var scratch: [PCPortMessage.Component] = []
    /// `sendLock`'s: the name whose "name=" field `scratch[1]` holds (the
    /// last request was a LOOKUP of it), else nil.
    @exclusivity(unchecked) private var scratchName: String?

    /// The client's timeout, and in nanoseconds: most requests wait by
    /// it, and Duration's conversion is a 128-bit division.
    private let usualTimeout: Duration
    private let usualTimeoutNanoseconds: Int64

    /// `right`'s socket is blocking (PortNameServer.connect): the reader
    /// sleeps in recvmsg. `timeout`: the one most requests give.
    init(right: SendRight, limits: PortLimits, timeout: Duration) {
        self.right = right
        usualTimeout = timeout
        usualTimeoutNanoseconds = timeout.nanosecondsClamped
        sendTransport = MessageTransport(limits: limits)
        receiveTransport = MessageTransport(limits: limits)
    }

    /// Mutex held: `serial` is awaited.
    private func awaitLocked(_ serial: UInt32, lookup: Bool = false) {
        pending.append(Pending(serial: serial, lookup: lookup))
    }

    /// Mutex held: `serial`'s reply when it came (no longer awaited then).
    private func takeReplyLocked(_ serial: UInt32) -> Reply? {
        for i in pending.indices where pending[i].serial == serial {
            guard let reply = pending[i].reply.take() else { return nil }
            pending.swapAt(i, pending.count - 1)  // the order of `pending` does not matter
            pending.removeLast()
            return reply
        }
        return nil
    }

    /// Mutex held: `serial` is no longer awaited (its reply, if filed, dropped).
    private func leaveLocked(_ serial: UInt32) {
        for i in pending.indices where pending[i].serial == serial {
            pending.swapAt(i, pending.count - 1)
            pending.removeLast()
            return
        }
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

    @exclusivity(unchecked) private var greeting = Greeting.none

    enum Outcome {
        case reply(Reply)
        /// HELLO alone was answered (`hello(timeout:)`).
        case greeted
        case sendTimedOut
        case receiveTimedOut
    }

    /// What a request says after its serial.
    enum Body {
        /// These fields, in order.
        case fields([NameServerField])
        /// LOOKUP's: "name=NAME", then "wait_ms=N" when given: the bytes
        /// `.fields` of those two would make, without the array.
        case lookup(name: String, waitMilliseconds: Int?)
    }

    /// portd's answer to HELLO, saying HELLO now if no request did yet;
    /// nil when it did not come within `timeout`.
    func hello(timeout: Duration) throws(NameServerError) -> NameServerHello? {
        if case .done(let h) = condition.withLock({ greeting }) { return h }
        _ = try request(nil, .fields([]), replyPort: nil, sendTimeout: timeout, receiveTimeout: timeout)
        if case .done(let h) = condition.withLock({ greeting }) { return h }
        return nil
    }

    /// Sends request `msgid` ("serial=N", then `body`; HELLO first when
    /// this is the connection's first request) and waits up to
    /// `receiveTimeout` for the reply that echoes its serial. `msgid` nil:
    /// HELLO alone.
    func request(
        _ msgid: UInt32?, _ body: Body, replyPort: SendRight?, sendTimeout: Duration,
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
                awaitLocked(s)
                helloSerial = s
            }
            guard msgid != nil else { return (helloSerial, nil) }
            let serial = makeSerialLocked()
            if case .lookup = body { awaitLocked(serial, lookup: true) } else { awaitLocked(serial) }
            return (helloSerial, serial)
        }
        let deadline = after(sendTimeout)
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
                var message = PCPortMessage(
                    msgid: msgid, components: Self.requestComponents(serial: serial, body, scratch: &scratch, name: &scratchName))
                message.replyPort = replyPort
                let r = try sendTransport.send(
                    message, on: connection.descriptor, replyPort: replyPort, replyExpected: true, before: deadline)
                message.components = []  // `scratch` is the one reference left: reused in place next time
                return r
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
        return try awaitReply(serial, until: after(receiveTimeout))
    }

    /// `.now() + timeout`, without converting the usual timeout again.
    private func after(_ timeout: Duration) -> MonotonicInstant {
        guard timeout == usualTimeout, usualTimeoutNanoseconds >= 0 else { return .now() + timeout }
        let now = MonotonicInstant.now().nanoseconds
        return MonotonicInstant(
            nanoseconds: min(now &+ UInt64(usualTimeoutNanoseconds), MonotonicInstant.distantFuture.nanoseconds))
    }

    /// Mutex held: takes HELLO's answer if it came; throws (and fails the
    /// connection) when it is a refusal.
    private func settleGreetingLocked() throws(NameServerError) {
        guard case .sent(let s) = greeting, case .message(let record)? = takeReplyLocked(s) else { return }
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
            leaveLocked(serial)
        }
    }

    private enum Turn {
        case done(Reply)
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
                func leave() { if let serial { leaveLocked(serial) } }
                while true {
                    do throws(NameServerError) {
                        try settleGreetingLocked()
                    } catch {
                        leave()
                        return .failed(error)
                    }
                    if let serial, let reply = takeReplyLocked(serial) {
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
    /// reads it, files it, and hands the turn back. The record is lent as
    /// a view of the receive buffer: a plain reply to a LOOKUP is read
    /// there, any other becomes a message (`copy()`, what `receive` makes).
    private func readOne(until deadline: MonotonicInstant) {
        var ended: NameServerError?
        if let connection = right.currentConnection() {
            do {
                // Both below 2^63 (distantFuture is half of UInt64's range).
                let remaining = Int64(bitPattern: deadline.nanoseconds &- MonotonicInstant.now().nanoseconds)
                var waiting = false
                var ready = true
                if let wait = receiveWait(remaining) {
                    // Asleep in recvmsg until a record or `wait` (see the top).
                    if armedReceiveTimeout != wait {
                        try LocalSocket.setReceiveTimeout(connection.descriptor, .nanoseconds(wait))
                        armedReceiveTimeout = wait
                    }
                    waiting = true
                } else {
                    ready = try !Poll.wait(
                        connection.descriptor, for: .readable, timeout: .nanoseconds(max(0, remaining))
                    ).isEmpty
                }
                if ready {
                    let received = try receiveTransport.receiveView(on: connection.descriptor, waiting: waiting) {
                        view, _ in file(view)
                    }
                    if case .closed = received { ended = .connectionLost }
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
        }
        condition.broadcast()
    }

    /// Files the record `view` under its serial (the reader's, before it
    /// hands its turn back): a plain reply to a LOOKUP read in place, with
    /// the mutex held (short, and no allocation), any
    /// other record copied out into a message first, without it.
    private func file(_ view: borrowing PortMessageView) {
        let serial = Self.serial(of: view)
        if let serial, serial != 0 {
            let filed = condition.withLock { () -> Bool in
                for i in pending.indices where pending[i].serial == serial {
                    guard pending[i].lookup, let outcome = PortNameServer.lookupOutcomeInPlace(view, serialRead: true)
                    else { return false }
                    pending[i].reply = .lookup(outcome)
                    return true
                }
                return true  // a reply to a request that gave up waiting: dropped
            }
            if filed { return }
        }
        let message = view.copy()
        condition.withLock { file(serial, msgid: view.msgid, .message(message)) }
    }

    /// How long the reader may sleep in recvmsg with `remaining` left
    /// before its deadline (SO_RCVTIMEO), or nil: too little left, wait in
    /// poll. The kernel may end that sleep up to an eighth of it plus two
    /// jiffies late (its timer wheel), so it asks for at most three
    /// quarters of what is left less 20 ms, which ends inside the deadline
    /// at any HZ from 100. The timeout already set is kept while it fits
    /// and is not much shorter than that (a setsockopt saved per request:
    /// requests of one timeout all fit the first one's); a new one is
    /// rounded down (to 250 ms from a second on, else to 10 ms) so that
    /// the next requests fit it too.
    /// All in nanoseconds: Duration's arithmetic is on 128 bits, and this
    /// runs on every request.
    private func receiveWait(_ remaining: Int64) -> Int64? {
        let usable = (remaining - Self.receiveTimeoutMargin) / 4 * 3
        guard usable >= Self.shortestReceiveTimeout else { return nil }
        if let armed = armedReceiveTimeout, armed <= usable, armed >= Self.second || armed * 4 >= usable { return armed }
        let grain: Int64 = usable >= Self.second ? 250_000_000 : 10_000_000
        return usable - usable % grain
    }

    private static let second: Int64 = 1_000_000_000
    private static let receiveTimeoutMargin: Int64 = 20_000_000
    /// Below this, the reader polls: a last stretch this short costs no more
    /// in poll, and waits to the millisecond.
    private static let shortestReceiveTimeout: Int64 = 50_000_000

    /// Mutex held: files a record under its serial, or drops it.
    private func file(_ serial: UInt32?, msgid: UInt32, _ reply: Reply) {
        guard let serial else {
            failure = .protocolError("a record without serial=N on the control connection (msgid \(msgid))")
            return
        }
        if serial == 0 {
            // portd's own: the connection is refused (a limit), then closed.
            guard case .message(let record) = reply else { return }  // serial 0 is never read in place
            let reply = try? NameServerReply(record)
            failure = reply?.failure ?? .connectionLost
            return
        }
        for i in pending.indices where pending[i].serial == serial {
            pending[i].reply = reply
            return
        }
        // Otherwise the reply to a request that gave up waiting: dropped.
    }

    /// The serial of a record whose first component is "serial=N", read
    /// from its bytes in place (what taking it as text, then as a field,
    /// then `UInt32(value)` answers: LookupReplyTests).
    static func serial(of record: borrowing PortMessageView) -> UInt32? {
        guard record.componentCount > 0, let bytes = record.unsafeBytes(ofComponent: 0),
            let (key, value) = NameServerProtocol.field(bytes),
            NameServerProtocol.equals(key, NameServerProtocol.Field.serial)
        else { return nil }
        return NameServerProtocol.integer(value, as: UInt32.self)
    }

    /// The components of request `serial` with `body` (the bytes
    /// `PCPortMessage(request:serial:_:)` makes of its fields:
    /// LookupReplyTests), written into `scratch`'s arrays, each reused in
    /// place when the last message built on them is gone, as it is after
    /// its send. A LOOKUP of the name the last one asked for (`name`, kept
    /// with `scratch`: a client asks for the same names again and again,
    /// as `send(_:to:)` does each time) leaves that field as it is. The
    /// channel's `scratch` and `scratchName` are `sendLock`'s.
    static func requestComponents(
        serial: UInt32, _ body: Body, scratch: inout [PCPortMessage.Component], name lastName: inout String?
    ) -> [PCPortMessage.Component] {
        typealias F = NameServerProtocol.Field
        var n = 0
        // Component n's array, emptied with its capacity (moved out of
        // `scratch`, so that it is the only reference and is written in place).
        func take() -> [UInt8] {
            guard n < scratch.count else { return [] }
            var bytes: [UInt8] = []
            if case .data(let b) = scratch[n] { bytes = b }
            scratch[n] = .data([])
            bytes.removeAll(keepingCapacity: true)
            return bytes
        }
        func put(_ bytes: consuming [UInt8]) {
            if n < scratch.count { scratch[n] = .data(bytes) } else { scratch.append(.data(bytes)) }
            n += 1
        }
        var b = take()
        Self.append(F.serial, to: &b)
        b.append(UInt8(ascii: "="))
        NameServerProtocol.appendDecimal(UInt64(serial), to: &b)
        put(b)
        switch body {
        case .fields(let fields):
            lastName = nil
            for f in fields {
                b = take()
                Self.append(f.key, to: &b)
                b.append(UInt8(ascii: "="))
                Self.append(f.value, to: &b)
                put(b)
            }
        case .lookup(let name, let waitMilliseconds):
            if lastName == name, scratch.count > 1 {
                n += 1  // "name=NAME" already
            } else {
                b = take()
                Self.append(F.name, to: &b)
                b.append(UInt8(ascii: "="))
                Self.append(name, to: &b)
                put(b)
                lastName = name
            }
            if let waitMilliseconds {
                b = take()
                Self.append(F.waitMilliseconds, to: &b)
                b.append(UInt8(ascii: "="))
                if waitMilliseconds < 0 { b.append(UInt8(ascii: "-")) }
                NameServerProtocol.appendDecimal(UInt64(waitMilliseconds.magnitude), to: &b)
                put(b)
            }
        }
        if scratch.count > n { scratch.removeLast(scratch.count - n) }
        return scratch
    }

    /// Appends `text`'s UTF-8 in one copy (stepping its UTF-8 view costs
    /// several times more).
    private static func append(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }
}
