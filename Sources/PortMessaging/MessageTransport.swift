// MessageTransport: one port message in, one out, on a connected
// SOCK_SEQPACKET socket: encode, sendmsg with a deadline, recvmsg, decode.
// Shared by SendRight (sending, reading replies) and PCPort (receiving,
// replying).
//
// Invariants: buffers are allocated once per transport and reused (no
// allocation per message but the received message's own storage, and that
// storage too is reused once the receiver let go of it: see "Reuse"). A
// descriptor being sent is lent by its owner (the SendRight or SharedMemory
// in the message, each held until sendmsg returned). A received descriptor
// is owned from the moment it is parsed: by the transport's OwnedDescriptors,
// then by the one object it becomes (SendRight, SharedMemory); every one a
// record left unclaimed, as when it fails validation, is closed before the
// receive returns.
//
// Reuse: a received message's component list and data arrays are Swift
// arrays (PCPortMessage's public API). The transport keeps the list of the
// last message it handed out when that message held only data of at most
// 16 KiB a component (never one with rights or shared memory: keeping those
// would hold their descriptors open), and at the next receive takes it
// back: emptied with its capacity kept, its data arrays kept as spares that
// the next data components are copied into. Copy-on-write makes this safe and invisible: when the
// receiver still holds the message (or any copy of an array), emptying or
// refilling the transport's reference allocates fresh storage instead of
// touching the receiver's. A handler that drops its message, or a requester
// that drops each reply, so receives with no allocation at all.
//
// Reading ahead (PCPort's serve): given a connection's id and how many
// records it may still take this pass, a receive with nothing read ahead
// takes up to that many queued records in one recvmmsg (a `ReceiveBatch`
// of `readAheadCapacity` slots, allocated at the first) and returns the
// first; the next receives for that connection return the rest, in order,
// before the socket is read again. With a limit of 1 it is a plain
// recvmsg: PCPort reads a turn's first record so, because recvmmsg of a
// queue holding one record (a request) costs a second, empty read in the
// kernel, and reads ahead from the second on. Only one connection's records are read
// ahead at a time: a receive for another connection while some are waiting
// (a handler running the loop, which serves another connection) reads one
// record the plain way, as does any receive while a view of a read-ahead
// record is lent (its slot must not be overwritten). Records read ahead
// are no longer in the socket, so epoll does not report them: the port
// has them served when its turn ends early (a request) or a handler runs
// the loop (PCPort.noteReadAhead). Records of a connection or port that
// went are given up by `dropReadAhead`, which closes their descriptors
// (the records are lost, as they are when the socket closes unread); so
// does deinit.
//
// Descriptors read ahead: the kernel installs every descriptor a record
// carries when it is read, up to `limits.maxDescriptors` a record, so 15
// records read ahead could hold 3,795 before their turn, where a record
// read alone holds 253. In a process at the usual RLIMIT_NOFILE of 1024
// that filled the table: handlers failed with EMFILE and the records whose
// descriptors found no room arrived truncated (MSG_CTRUNC), closing their
// connection. So the records read ahead beyond a batch's first, by every
// transport of the process together, may carry at most a quarter of the
// soft RLIMIT_NOFILE (as it was at the first read-ahead): each is counted as `limits.maxDescriptors` from
// before the call (`reserveReadAhead`) until it is taken or given up, and
// a batch takes only as many as that leaves room for (none: one record
// read the plain way).
//
// Views (`receiveView`): the same record, parsed and validated the same
// way, lent to a closure as a PortMessageView instead of copied into a
// message: data components stay slices of the receive buffer, laid out in a
// component table the transport allocates once (at the first view) and
// reuses. Both are valid until the closure returns, also across a receive
// nested in it (a handler running the loop), which reads into a receive
// buffer and component table of its own, freed when the closure returns;
// the next receive overwrites them. Descriptors are owned exactly as in
// `receive(on:)`, and taken out of the transport's list before the closure
// runs, so that a nested receive's record is counted on its own.

import PortRunLoop
import PortSystem
import PortWire
import Synchronization

package final class MessageTransport {
    // Not shared: a transport is used by one thread at a time (its owner's
    // lock or run-loop thread serializes it), so the fields marked
    // @exclusivity(unchecked) on the per-message path skip the runtime's
    // dynamic exclusivity check: no two accesses can overlap.
    package let limits: PortLimits
    private var sendBuffer: UnsafeMutableRawBufferPointer
    private let sendControl: ControlMessage.Buffer
    private var receiveBuffer: UnsafeMutableRawBufferPointer?
    private var receiveControl: ControlMessage.Buffer?
    /// The descriptors of the record being received (empty between receives).
    @exclusivity(unchecked) private var received: OwnedDescriptors
    /// The connections of the send rights a record being sent lends, held
    /// until sendmsg returned (empty between sends; capacity kept).
    @exclusivity(unchecked) private var lent: [SharedDescriptor] = []
    /// The component list of the last all-data message handed out (see
    /// "Reuse"); empty when there is none.
    @exclusivity(unchecked) private var handedOut: [PCPortMessage.Component] = []
    /// The component table of the record lent as a view (`receiveView`);
    /// allocated at the first view, `limits.maxComponents` entries.
    private var viewSlots: UnsafeMutableBufferPointer<PortMessageView.Slot>?
    /// Data arrays taken back from earlier messages, to copy into.
    @exclusivity(unchecked) private var spareData: [[UInt8]] = []
    /// At most this many spare data arrays, each of at most this capacity:
    /// what a burst of small messages needs, without pinning large buffers.
    private static let maxSpares = 16
    private static let maxSpareCapacity = 16 * 1024
    /// Records read ahead (see "Reading ahead"): allocated at the first
    /// receive that reads ahead.
    @exclusivity(unchecked) private var batch: UnixSocket.ReceiveBatch?
    /// Read ahead, not yet returned: slots `batchNext..<batchCount`.
    @exclusivity(unchecked) private var batchNext = 0
    @exclusivity(unchecked) private var batchCount = 0
    /// The connection the records read ahead came from.
    @exclusivity(unchecked) private var batchConnection: UInt64 = 0
    /// A connection whose stream ended behind the records read ahead: its
    /// next receive, once they are taken, reports `.closed`.
    @exclusivity(unchecked) private var endedConnection: UInt64?
    /// Several records were just read ahead (`takeNewReadAhead`).
    @exclusivity(unchecked) private var newReadAhead = false
    /// A view of a read-ahead record is lent (`receiveView`): its slot
    /// must not be read into again.
    @exclusivity(unchecked) private var lendingReadAhead = false
    /// The most records read in one call: a pass's default share.
    package static let readAheadCapacity = 16
    /// The descriptors the records read ahead, beyond each batch's first,
    /// may carry, counted for every transport of the process (see
    /// "Descriptors read ahead").
    private static let descriptorsReadAhead = Atomic<Int>(0)
    /// How many that is: a quarter of the soft RLIMIT_NOFILE, read at
    /// the first read-ahead of the process (a limit raised later, as
    /// daemons do at start, is not seen: the share stays the smaller one).
    private static let readAheadDescriptorBudget: Int = CurrentProcess.descriptorLimit().map { $0 / 4 } ?? .max

    /// Which connection a receive reads from, and how many records it may
    /// still take in this pass (see "Reading ahead").
    package struct ReadAhead {
        package var connectionID: UInt64
        package var limit: Int
        package init(connectionID: UInt64, limit: Int) {
            self.connectionID = connectionID
            self.limit = limit
        }
    }

    package init(limits: PortLimits = .default) {
        self.limits = limits
        sendBuffer = .allocate(byteCount: 256, alignment: 8)
        sendControl = ControlMessage.Buffer(descriptors: limits.maxDescriptors, credentials: false)
        received = OwnedDescriptors(capacity: limits.maxDescriptors)
        lent.reserveCapacity(limits.maxDescriptors)
    }

    deinit {
        dropReadAhead()
        batch?.deallocate()
        sendBuffer.deallocate()
        receiveBuffer?.deallocate()
        viewSlots?.deallocate()
    }

    // MARK: Sending

    /// Encodes and sends `message` on `connection`, waiting for room until
    /// `deadline`. `replyPort` is the right to pass as the reply port. A
    /// right in the message that was invalidated throws `.invalidated`.
    package func send(
        _ message: PCPortMessage, on connection: borrowing OwnedDescriptor, replyPort: SendRight?, replyExpected: Bool,
        before deadline: @autoclosure () -> MonotonicInstant
    ) throws(PortError) -> SendResult {
        defer { if !lent.isEmpty { lent.removeAll(keepingCapacity: true) } }
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
        // buffer; descriptors lent to the control buffer in record order.
        let recordLength: Int
        var invalidatedRight = false
        sendControl.reset()
        do {
            var writer = try WireWriter(
                into: sendBuffer, msgid: message.msgid, hasReplyPort: replyPort != nil,
                componentCount: message.components.count, limits: limits)
            if let replyPort, !lend(replyPort) { invalidatedRight = true }
            var nextSpilled = 0
            for c in message.components {
                switch c {
                case .data(let b) where spill && b.count >= 4096:
                    let m = spilled[nextSpilled]
                    nextSpilled += 1
                    try writer.appendLargeData(length: m.count)
                    sendControl.append(m.descriptor)
                case .data(let b):
                    try writer.appendData(b)
                case .port(let right):
                    try writer.appendPort()
                    if !lend(right) { invalidatedRight = true }
                case .sharedMemory(let m):
                    try writer.appendLargeData(length: m.count)
                    sendControl.append(m.descriptor)
                }
            }
            recordLength = try writer.finish()
        } catch {
            throw .wire(error)
        }
        if invalidatedRight { throw .invalidated }
        if replyExpected {
            sendBuffer[5] |= WireFormat.Flags.replyExpected.rawValue
        }
        let controlLength = sendControl.finish()
        let record = UnsafeRawBufferPointer(rebasing: sendBuffer[0..<recordLength])
        // The deadline, worked out the first time the queue is found full
        // (most sends never get there: no clock read), then kept: a retry
        // must not move it (a relative timeout would start again).
        var limit: MonotonicInstant?
        while true {
            let outcome: UnixSocket.SendOutcome
            do {
                outcome = try UnixSocket.send(connection, record, control: sendControl, controlLength: controlLength)
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
                    let until = limit ?? deadline()
                    limit = until
                    if try !Poll.waitWritable(connection, until: until) { return .timedOut }
                } catch {
                    throw .system(error)
                }
            }
        }
    }

    /// Lends `right`'s socket to the control message being written, holding
    /// the right's connection until the send returns; false when the right
    /// was invalidated.
    private func lend(_ right: SendRight) -> Bool {
        guard let c = right.currentConnection() else { return false }
        lent.append(c)
        sendControl.append(c.descriptor)
        return true
    }

    // MARK: Receiving

    package enum Received {
        case message(PCPortMessage, replyExpected: Bool)
        case wouldBlock
        case closed
    }

    /// Receives and decodes one record from `connection`. A malformed
    /// record throws after closing every descriptor it carried; the caller
    /// then closes the connection. `waiting`: on a blocking socket, sleeps
    /// in recvmsg until a record comes or the socket's receive timeout
    /// passes (`.wouldBlock`; see `UnixSocket.receive(waiting:)`).
    package func receive(
        on connection: borrowing OwnedDescriptor, readingAhead readAhead: ReadAhead? = nil, waiting: Bool = false
    ) throws(PortError) -> Received {
        // Whatever no object takes below is closed on return.
        defer { received.closeAll() }
        let view: WireMessageView
        let sender: Credentials?
        switch try receiveRecord(on: connection, readAhead, waiting: waiting) {
        case .wouldBlock: return .wouldBlock
        case .closed: return .closed
        case .record(let v, let s):
            view = v
            sender = s
        }
        var replyPort: SendRight?
        if let i = view.replyPortDescriptorIndex {
            replyPort = SendRight(descriptor: received.take(at: i))
        }
        var components = reclaimComponents()
        components.reserveCapacity(view.componentCount)
        var onlyData = true
        for c in view.components {
            switch c {
            case .data(let bytes):
                if bytes.count > Self.maxSpareCapacity { onlyData = false }  // not kept: see maxSpareCapacity
                components.append(.data(copy(bytes)))
            case .port(let i):
                onlyData = false
                components.append(.port(SendRight(descriptor: received.take(at: i))))
            case .largeData(let i, let length):
                onlyData = false
                components.append(.sharedMemory(try mapLargeData(at: i, length: length)))
            }
        }
        if onlyData { handedOut = components }
        return .message(
            PCPortMessage(msgid: view.msgid, components: consume components, replyPort: consume replyPort, sender: sender),
            replyExpected: view.flags.contains(.replyExpected))
    }

    package enum ReceivedView {
        /// A record was lent to the closure as a view.
        case viewed
        case wouldBlock
        case closed
    }

    /// Receives one record from `connection` and lends it to `body` as a
    /// view (see "Views"), with whether the sender expects a reply; `body`
    /// may set the view's receiver-side fields (connection, reply ports)
    /// before handing it on. The same checks, errors and descriptor
    /// ownership as `receive(on:)`: a malformed record throws (and `body`
    /// is not called) after closing every descriptor it carried; every
    /// descriptor no object took is closed before this returns.
    /// `waiting`: as `receive(on:readingAhead:waiting:)`'s.
    package func receiveView(
        on connection: borrowing OwnedDescriptor, readingAhead readAhead: ReadAhead? = nil, waiting: Bool = false,
        _ body: (inout PortMessageView, _ replyExpected: Bool) -> Void
    ) throws(PortError) -> ReceivedView {
        defer { received.closeAll() }
        let view: WireMessageView
        let sender: Credentials?
        let wasLending = lendingReadAhead
        switch try receiveRecord(on: connection, readAhead, waiting: waiting) {
        case .wouldBlock: return .wouldBlock
        case .closed: return .closed
        case .record(let v, let s):
            view = v
            sender = s
        }
        let slots: UnsafeMutableBufferPointer<PortMessageView.Slot>
        if let s = viewSlots {
            slots = s
        } else {
            slots = .allocate(capacity: max(limits.maxComponents, 1))
            viewSlots = slots
        }
        var replyPort: SendRight?
        if let i = view.replyPortDescriptorIndex {
            replyPort = SendRight(descriptor: received.take(at: i))
        }
        // Rights and shared memory become their objects here, in record
        // order, as in `receive(on:)`; an all-data record allocates nothing.
        var objects: [PCPortMessage.Component] = []
        var n = 0
        for c in view.components {
            // The decoder checked componentCount <= limits.maxComponents.
            switch c {
            case .data(let bytes):
                slots.initializeElement(at: n, to: PortMessageView.Slot(bytes: bytes, object: -1))
            case .port(let i):
                slots.initializeElement(
                    at: n, to: PortMessageView.Slot(bytes: UnsafeRawBufferPointer(start: nil, count: 0), object: objects.count))
                objects.append(.port(SendRight(descriptor: received.take(at: i))))
            case .largeData(let i, let length):
                let memory = try mapLargeData(at: i, length: length)
                slots.initializeElement(at: n, to: PortMessageView.Slot(bytes: memory.region, object: objects.count))
                objects.append(.sharedMemory(memory))
            }
            n += 1
        }
        var lent = PortMessageView(
            msgid: view.msgid, slots: UnsafeBufferPointer(rebasing: slots[0..<n]), objects: objects,
            replyPort: replyPort, sender: sender)
        // Every descriptor is an object's now: `received` is emptied, so
        // that a receive nested in `body` (a handler running the loop)
        // parses its record's descriptors from index 0, its count its own.
        received.closeAll()
        // A read-ahead record's slot stays as it is while the view lives.
        lendingReadAhead = wasLending || readAhead != nil
        // So do the receive buffer and component table the view points
        // into: a receive nested in `body` (a handler running the loop)
        // reads into buffers of its own, freed when `body` returns.
        let lentBuffer = receiveBuffer
        let lentControl = receiveControl
        receiveBuffer = nil
        receiveControl = nil
        viewSlots = nil
        body(&lent, view.flags.contains(.replyExpected))
        receiveBuffer?.deallocate()
        viewSlots?.deallocate()
        receiveBuffer = lentBuffer
        receiveControl = lentControl
        viewSlots = slots
        lendingReadAhead = wasLending
        return .viewed
    }

    private enum Record {
        case record(WireMessageView, sender: Credentials?)
        case wouldBlock
        case closed
    }

    /// The next record of `connection`: read ahead (see "Reading ahead")
    /// or received now, then decoded: the record, validated, its
    /// descriptors owned by `received` (the caller closes what no object
    /// takes, also when this throws).
    @inline(__always)  // one function per receive path, as before views
    private func receiveRecord(
        on connection: borrowing OwnedDescriptor, _ readAhead: ReadAhead?, waiting: Bool = false
    ) throws(PortError) -> Record {
        if let readAhead {
            if batchNext < batchCount {
                if batchConnection == readAhead.connectionID {
                    releaseReadAhead(1)
                    return try takeReadAhead()
                }
            } else if endedConnection == readAhead.connectionID {
                endedConnection = nil
                return .closed
            } else if readAhead.limit > 1 && !lendingReadAhead {
                let room = reserveReadAhead(readAhead.limit - 1)
                if room > 0 { return try readAheadRecords(on: connection, id: readAhead.connectionID, limit: 1 + room) }
            }
        }
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
        var outcome: UnixSocket.ReceiveOutcome
        var reset = false
        do {
            outcome = try UnixSocket.receive(connection, into: buffer, control: control, waiting: waiting)
            if case .connectionReset = outcome {
                reset = true
                // The peer closed with records of ours unread. Linux reports
                // ECONNRESET once, before the records the peer sent us and
                // left queued (a server's refusal of the connection, a
                // last reply): read on, they come next, then end of stream.
                outcome = try UnixSocket.receive(connection, into: buffer, control: control)
            }
        } catch {
            throw .system(error)
        }
        switch outcome {
        case .wouldBlock: return reset ? .closed : .wouldBlock
        case .endOfStream, .connectionReset: return .closed
        case .record(let record):
            return try decode(
                UnsafeMutableRawBufferPointer(rebasing: buffer[0..<record.byteCount]), control.pointer, control.capacity,
                record)
        }
    }

    /// Receives up to `limit` records of the connection in one call and
    /// returns the first (see "Reading ahead"); `limit - 1` records were
    /// reserved (`reserveReadAhead`): what is not read ahead is released.
    @inline(never)  // the plain path stays as it was
    private func readAheadRecords(
        on connection: borrowing OwnedDescriptor, id: UInt64, limit: Int
    ) throws(PortError) -> Record {
        var reserved = limit - 1
        defer { releaseReadAhead(reserved) }
        let slots: UnixSocket.ReceiveBatch
        if let b = batch {
            slots = b
        } else {
            slots = UnixSocket.ReceiveBatch(
                capacity: Self.readAheadCapacity, recordSize: limits.maxRecordSize, descriptors: limits.maxDescriptors)
            batch = slots
        }
        var outcome: UnixSocket.BatchOutcome
        var reset = false
        do {
            outcome = try UnixSocket.receive(connection, into: slots, upTo: limit)
            if case .connectionReset = outcome {
                reset = true  // as in `receiveRecord`: read on
                outcome = try UnixSocket.receive(connection, into: slots, upTo: limit)
            }
        } catch {
            throw .system(error)
        }
        switch outcome {
        case .wouldBlock: return reset ? .closed : .wouldBlock
        case .endOfStream, .connectionReset: return .closed
        case .records(let n, let ended):
            batchConnection = id
            batchNext = 0
            batchCount = n
            // Held from here (the first is returned now): released as taken.
            reserved -= n - 1
            if ended { endedConnection = id }
            newReadAhead = n > 1
            return try takeReadAhead()
        }
    }

    /// The next record read ahead, decoded.
    private func takeReadAhead() throws(PortError) -> Record {
        let i = batchNext
        batchNext += 1
        if batchNext == batchCount {
            batchNext = 0
            batchCount = 0
        }
        // Force-unwrapped: records are read ahead only into `batch`.
        let slots = batch.unsafelyUnwrapped
        let record = slots.record(i)
        return try decode(
            UnsafeMutableRawBufferPointer(rebasing: slots.buffer(i)[0..<record.byteCount]), slots.control(i),
            slots.controlSize, record)
    }

    /// Whether the last receive read records ahead of the one it
    /// returned; true once per batch (so that the port can have them
    /// served by a run nested in its handler: PCPort.noteReadAhead).
    package func takeNewReadAhead() -> Bool {
        guard newReadAhead else { return false }
        newReadAhead = false
        return true
    }

    /// Whether records of connection `id` were read ahead and not returned yet.
    package func hasReadAhead(of id: UInt64) -> Bool {
        batchNext < batchCount && batchConnection == id
    }

    /// Gives up the records read ahead (of connection `id` only, when
    /// given): their descriptors are closed.
    package func dropReadAhead(of id: UInt64? = nil) {
        guard batchNext < batchCount, id == nil || id == batchConnection, let slots = batch else { return }
        // A list of its own: `received` may hold a record being delivered.
        var dropped = OwnedDescriptors(capacity: limits.maxDescriptors)
        for i in batchNext..<batchCount {
            let record = slots.record(i)
            _ = ControlMessage.parse(
                slots.control(i), capacity: slots.controlSize, length: record.controlLength,
                truncated: record.controlTruncated, into: &dropped)
            dropped.closeAll()
        }
        releaseReadAhead(batchCount - batchNext)
        batchNext = 0
        batchCount = 0
    }

    /// Reserves room for up to `wanted` records read ahead, each counted
    /// as `limits.maxDescriptors` descriptors, within the process's share
    /// (see "Descriptors read ahead"); returns how many (0: read the plain
    /// way). Released by `releaseReadAhead`.
    private func reserveReadAhead(_ wanted: Int) -> Int {
        let each = limits.maxDescriptors
        guard each > 0 else { return wanted }
        let budget = Self.readAheadDescriptorBudget
        var held = Self.descriptorsReadAhead.load(ordering: .relaxed)
        while true {
            let n = min(wanted, max(0, budget - held) / each)
            if n == 0 { return 0 }
            let (done, now) = Self.descriptorsReadAhead.compareExchange(
                expected: held, desired: held + n * each, ordering: .relaxed)
            if done { return n }
            held = now
        }
    }

    /// Gives back the room of `records` records read ahead (taken, given
    /// up, or not read after all).
    @inline(__always)
    private func releaseReadAhead(_ records: Int) {
        guard records > 0, limits.maxDescriptors > 0 else { return }
        Self.descriptorsReadAhead.subtract(records * limits.maxDescriptors, ordering: .relaxed)
    }

    /// Decodes a received record: its descriptors owned by `received`
    /// from here, then the checks, then the wire format.
    @inline(__always)
    private func decode(
        _ bytes: UnsafeMutableRawBufferPointer, _ control: UnsafeMutableRawPointer, _ controlCapacity: Int,
        _ record: UnixSocket.ReceivedRecord
    ) throws(PortError) -> Record {
        // Owned from here (by `received`).
        let parsed = ControlMessage.parse(
            control, capacity: controlCapacity, length: record.controlLength, truncated: record.controlTruncated,
            into: &received)
        if parsed.truncated || parsed.unexpected > 0 { throw .controlTruncated }
        if record.truncated { throw .recordTruncated }
        // Hostile until the kernel says what they are: an O_PATH descriptor
        // opens nothing, so every later call on it (the socket and memfd
        // checks, sendmsg, mmap) would fail with EBADF, a trap.
        if received.count > 0 {
            let pathOnly: Bool
            do { pathOnly = try received.containsPathOnly() } catch { throw .system(error) }
            if pathOnly { throw .pathOnlyDescriptor }
        }
        do {
            let view = try WireDecoder.decode(
                UnsafeRawBufferPointer(bytes), descriptorCount: received.count, limits: limits)
            return .record(view, sender: parsed.credentials)
        } catch {
            throw .wire(error)
        }
    }

    /// Takes the memfd at position `i` of the record (whose length the
    /// decoder held to `maxLargeComponentBytes`), checks its seals and
    /// that all of it is allocated, and maps it (closed here if refused;
    /// the SharedMemory's otherwise).
    private func mapLargeData(at i: Int, length: Int) throws(PortError) -> SharedMemory {
        let memfd = received.take(at: i)
        do {
            try MemFD.checkSealed(memfd, length: length)
        } catch {
            throw .unsealedSharedMemory(error)
        }
        do {
            return try SharedMemory(mapping: memfd, length: length)
        } catch {
            throw .system(error)
        }
    }

    /// Takes back the component list of the last message handed out: its
    /// data arrays become spares, the list comes back empty with its
    /// capacity (fresh storage when the receiver still holds it).
    private func reclaimComponents() -> [PCPortMessage.Component] {
        guard !handedOut.isEmpty else { return [] }
        var list: [PCPortMessage.Component] = []
        swap(&list, &handedOut)
        // Popped, so each component moves out (no retain and release of
        // it, and no generic removeAll); the capacity stays.
        while let c = list.popLast() {
            if spareData.count < Self.maxSpares, case .data(let bytes) = c, bytes.capacity <= Self.maxSpareCapacity {
                spareData.append(bytes)
            }
        }
        return list
    }

    /// `bytes` in an array: a spare one refilled when there is one (its
    /// storage is reused if nobody else holds it, see "Reuse").
    private func copy(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        guard var array = spareData.popLast() else { return Array(bytes) }
        array.replaceSubrange(array.startIndex..<array.endIndex, with: bytes)
        return array
    }
}
