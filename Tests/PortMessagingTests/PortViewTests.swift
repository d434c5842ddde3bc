// PortViewTests: ports with a view handler (PortMessageView, issue 13), over
// real sockets. A view shows what a closure handler would have been given
// (msgid, data, rights, shared memory, sender, connection); what a handler
// keeps (`copy()`, `bytes(ofComponent:)`) survives the receive buffer being
// overwritten by later records; requests are answered by the return value
// or later through a kept reply port; a malformed record closes only its
// connection, closes the descriptors it carried and is reported to
// `onError`; monitors get their copy; the two kinds of handler replace each
// other, record by record.

import Foundation
import Glibc
import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
import PortWire
@testable import PortMessaging

/// What a handler saw of one message, in plain values.
private struct Seen: Sendable {
    var msgid: UInt32
    var kinds: [PortMessageView.ComponentKind]
    var bytes: [[UInt8]?]
    var sender: Credentials?
    var connectionID: UInt64?
    var connectionCredentials: Credentials?
    var hasReplyPort: Bool

    init(_ m: PCPortMessage) {
        msgid = m.msgid
        kinds = m.components.map {
            switch $0 {
            case .data: .data
            case .port: .port
            case .sharedMemory: .sharedMemory
            }
        }
        bytes = m.components.map(\.bytes)
        sender = m.sender
        connectionID = m.connectionID
        connectionCredentials = m.connectionCredentials
        hasReplyPort = m.replyPort != nil
    }

    init(_ v: borrowing PortMessageView) {
        msgid = v.msgid
        kinds = (0..<v.componentCount).map { v.kind(ofComponent: $0) }
        bytes = (0..<v.componentCount).map { v.bytes(ofComponent: $0) }
        sender = v.sender
        connectionID = v.connectionID
        connectionCredentials = v.connectionCredentials
        hasReplyPort = v.replyPort != nil
    }
}

/// A named port (a listening socket in the abstract namespace, so its
/// connections have a connector) with `make`'s handler, served on its own
/// loop thread, and a right to it.
private func namedPort(_ make: (consuming OwnedDescriptor) throws -> PCPort) throws -> (ServedPort, SendRight) {
    let address = try UnixSocketAddress(abstract: "portd-view-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
    let listening = try UnixSocket.makeSocket()
    try UnixSocket.bind(listening, to: address)
    try UnixSocket.listen(listening)
    let served = try ServedPort(port: try make(listening))
    let fd = try UnixSocket.makeSocket()
    #expect(try UnixSocket.connect(fd, to: address) == .connected)
    return (served, SendRight(descriptor: fd))
}

/// Deterministic bytes, each differing from its neighbours.
private func noise(_ count: Int, seed: UInt32) -> [UInt8] {
    var x = seed | 1
    return (0..<count).map { _ in
        x ^= x << 13; x ^= x >> 17; x ^= x << 5
        return UInt8(truncatingIfNeeded: x)
    }
}

@Suite(.serialized) struct PortViewTests {
    @Test func aViewShowsWhatAClosureHandlerIsGiven() throws {
        // One message with three data components (one empty), a send right
        // and a component too large for a record (shared memory), sent with
        // a reply port, to a closure-handler port and to a view-handler port.
        let large = noise(PortLimits.default.maxRecordSize + 1, seed: 77)
        let viaRight = Recorder()
        let relayed = Completion()
        let target = try ServedPort { m in
            viaRight.add(m.components.first?.string ?? "?")
            relayed.signal()
            return nil
        }
        defer { target.stop() }

        let closureSeen = Mutex<Seen?>(nil)
        let closureDone = Completion()
        let (closurePort, toClosure) = try namedPort { fd in
            try PCPort(listeningDescriptor: fd) { m in
                closureSeen.withLock { $0 = Seen(m) }
                closureDone.signal()
                return nil
            }
        }
        defer { closurePort.stop() }

        struct Extra: Sendable {
            var digests: [UInt64?]
            var spanCounts: [Int?]
            var firstBytes: [UInt8?]
            var sameRight: Bool
            var noRightForData: Bool
            var copy: Seen
            var large: Int?
        }
        let viewSeen = Mutex<Seen?>(nil)
        let extra = Mutex<Extra?>(nil)
        let viewDone = Completion()
        let (viewPort, toView) = try namedPort { fd in
            try PCPort(listeningDescriptor: fd, viewHandler: { v in
                let copy = v.copy()
                var same = false
                if case .port(let r)? = copy.components.dropFirst(3).first { same = r === v.sendRight(ofComponent: 3) }
                let n = v.componentCount
                extra.withLock {
                    $0 = Extra(
                        digests: (0..<n).map { i in v.withUnsafeBytes(ofComponent: i) { fnv1a($0) } },
                        spanCounts: (0..<n).map { i in v.withSpan(ofComponent: i) { $0.byteCount } },
                        firstBytes: (0..<n).map { i in
                            v.withSpan(ofComponent: i) { s in s.byteCount > 0 ? s.unsafeLoad(fromByteOffset: 0, as: UInt8.self) : nil } ?? nil
                        },
                        sameRight: same && v.sendRight(ofComponent: 3) === v.sendRight(ofComponent: 3),
                        noRightForData: v.sendRight(ofComponent: 0) == nil && v.sharedMemory(ofComponent: 0) == nil,
                        copy: Seen(copy), large: v.sharedMemory(ofComponent: 4)?.count)
                }
                viewSeen.withLock { $0 = Seen(v) }
                // The right in the view is a working right to its port.
                _ = try? v.sendRight(ofComponent: 3)?.send(PCPortMessage(msgid: 1, strings: ["via the view's right"]))
                viewDone.signal()
                return nil
            })
        }
        defer { viewPort.stop() }

        let replyTo = PCPort()
        defer { replyTo.invalidate() }
        for (right, done) in [(toClosure, closureDone), (toView, viewDone)] {
            let message = PCPortMessage(
                msgid: 42,
                components: [
                    .data(Array("hello".utf8)), .data([]), .data([0, 1, 0, 255]), .port(try target.port.makeSendRight()),
                    .data(large),
                ])
            #expect(try right.send(message, timeout: .seconds(20), replyPort: replyTo) == .sent)
            #expect(done.wait(timeout: .seconds(60)))
        }
        let a = try #require(closureSeen.withLock { $0 })
        let v = try #require(viewSeen.withLock { $0 })
        let e = try #require(extra.withLock { $0 })
        #expect(v.msgid == 42 && a.msgid == 42)
        #expect(v.kinds == [.data, .data, .data, .port, .sharedMemory])
        #expect(v.kinds == a.kinds)
        #expect(v.bytes[0] == Array("hello".utf8) && v.bytes[1] == [] && v.bytes[2] == [0, 1, 0, 255])
        #expect(v.bytes[3] == nil)
        #expect(v.bytes[4] == large)
        #expect(v.bytes == a.bytes)
        #expect(v.sender == Credentials(pid: getpid(), uid: getuid(), gid: getgid()))
        #expect(v.sender == a.sender)
        #expect(v.connectionID != nil && v.connectionID == a.connectionID)
        #expect(v.connectionCredentials != nil && v.connectionCredentials == a.connectionCredentials)
        #expect(v.hasReplyPort && a.hasReplyPort)
        // In place: digests, spans and first bytes of every component.
        #expect(e.digests == a.bytes.map { $0.map { fnv1a($0) } })
        #expect(e.spanCounts == a.bytes.map { $0?.count })
        #expect(e.firstBytes == a.bytes.map { $0?.first })
        #expect(e.sameRight, "sendRight(ofComponent:) is the object copy() carries")
        #expect(e.noRightForData)
        #expect(e.large == large.count)
        // copy() is what the closure handler got.
        #expect(e.copy.msgid == a.msgid && e.copy.kinds == a.kinds && e.copy.bytes == a.bytes)
        #expect(e.copy.sender == a.sender && e.copy.connectionID == a.connectionID)
        #expect(e.copy.connectionCredentials == a.connectionCredentials && e.copy.hasReplyPort)
        #expect(relayed.wait(timeout: .seconds(60)))
        #expect(viaRight.all == ["via the view's right"])
    }

    /// The receive buffer is overwritten by every record: what a view
    /// handler kept through `copy()` or `bytes(ofComponent:)` must not be.
    @Test func bytesKeptFromViewsStayIntactWhileLaterRecordsOverwriteTheBuffer() throws {
        func payload(_ i: Int, _ part: Int) -> [UInt8] { noise(1 + (i * 37 + part * 11) % 300, seed: UInt32(i * 7 + part)) }
        let count = 90
        let keptMessages = Mutex<[PCPortMessage]>([])
        let keptBytes = Mutex<[(msgid: UInt32, bytes: [UInt8])]>([])
        let all = Completion()
        let served = try ServedPort(port: PCPort(viewHandler: { v in
            switch v.msgid % 3 {
            case 0: keptMessages.withLock { $0.append(v.copy()) }
            case 1: keptBytes.withLock { $0.append((v.msgid, v.bytes(ofComponent: v.componentCount - 1)!)) }
            default: break
            }
            if v.msgid == UInt32(count - 1) { all.signal() }
            return nil
        }))
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        for i in 0..<count {
            let parts = 1 + i % 3
            let message = PCPortMessage(msgid: UInt32(i), components: (0..<parts).map { .data(payload(i, $0)) })
            #expect(try right.send(message, timeout: .seconds(20)) == .sent)
        }
        #expect(all.wait(timeout: .seconds(60)))
        let messages = keptMessages.withLock { $0 }
        #expect(messages.count == count / 3)
        for m in messages {
            let i = Int(m.msgid)
            #expect(m.components.map(\.bytes) == (0..<(1 + i % 3)).map { payload(i, $0) })
        }
        let bytes = keptBytes.withLock { $0 }
        #expect(bytes.count == count / 3)
        for (msgid, b) in bytes {
            let i = Int(msgid)
            #expect(b == payload(i, i % 3))
        }
    }

    @Test func viewRequestsAreAnsweredByTheReturnValueOrLaterThroughAKeptReplyPort() throws {
        let kept = Mutex<[SendRight]>([])
        let passed = Mutex<(passed: Bool, distinct: Bool, copyHasBoth: Bool)?>(nil)
        let served = try ServedPort(port: PCPort(viewHandler: { v in
            if let p = v.passedReplyPort {
                let copy = v.copy()
                passed.withLock {
                    $0 = (true, p !== v.replyPort, copy.passedReplyPort === p && copy.replyPort === v.replyPort)
                }
            }
            switch v.msgid % 3 {
            case 0:
                return PCPortMessage(msgid: v.msgid + 1, strings: ["re: " + (v.string(ofComponent: 0) ?? "?")])
            case 1:
                return nil
            default:
                let right = v.replyPort!
                kept.withLock { $0.append(right) }
                let msgid = v.msgid
                PCRunLoop.current.perform(after: .milliseconds(2), inModes: [.default]) {
                    _ = try? right.send(PCPortMessage(msgid: msgid, strings: ["later \(msgid)"]), timeout: .seconds(5))
                }
                return nil
            }
        }))
        defer { served.stop() }
        let right = try served.port.makeSendRight()
        for i in 0..<30 {
            let r = try right.request(PCPortMessage(msgid: UInt32(i), strings: ["q\(i)"]), receiveTimeout: .seconds(20))
            let reply = try #require(r.reply, "request \(i): \(r)")
            switch i % 3 {
            case 0:
                #expect(reply.msgid == UInt32(i + 1))
                #expect(reply.components.first?.string == "re: q\(i)")
            case 1:
                #expect(reply.msgid == UInt32(i))
                #expect(reply.components.isEmpty)
            default:
                #expect(reply.components.first?.string == "later \(i)")
            }
        }
        #expect(kept.withLock { $0.count } == 10)
        #expect(passed.withLock { $0 } == nil)
        // A request that carries a reply port: the view shows it beside the
        // one-shot reply right, as PCPortMessage does.
        let replyPair = try UnixSocket.makePair()
        var request = PCPortMessage(msgid: 3, strings: ["with a port"])
        request.replyPort = SendRight(descriptor: replyPair.second)
        let reply = try #require(try right.request(request, receiveTimeout: .seconds(20)).reply)
        #expect(reply.components.first?.string == "re: with a port")
        let p = try #require(passed.withLock { $0 })
        #expect(p.passed && p.distinct && p.copyHasBoth)
    }

    @Test func aMalformedRecordClosesOnlyThatConnectionAndTheDescriptorsItCarried() throws {
        let errors = Recorder()
        let disconnected = Recorder()
        let received = Recorder()
        let done = Completion()
        let served = try ServedPort(port: PCPort(viewHandler: { v in
            received.add(v.string(ofComponent: 0) ?? "")
            done.signal()
            return nil
        }))
        served.port.onError { e in errors.add("\(e)") }
        served.port.onDisconnect { id in disconnected.add("\(id)") }
        defer { served.stop() }
        let bad = try served.port.makeSendRight()
        let good = try served.port.makeSendRight()
        // Garbage, with a descriptor attached: one end of a socket pair,
        // whose other end must then see the port close it.
        let pair = try UnixSocket.makePair()
        let mine = pair.first
        let theirs = pair.second
        let control = ControlMessage.Buffer(descriptors: 1, credentials: false)
        control.reset()
        control.append(theirs)
        let length = control.finish()
        let garbage: [UInt8] = Array("not a port message".utf8)
        let sent = try garbage.withUnsafeBytes { raw in
            try bad.withDescriptor { fd in try UnixSocket.send(fd, raw, control: control, controlLength: length) }
        }
        guard case .sent? = sent else {
            Issue.record("garbage not sent: \(String(describing: sent))")
            return
        }
        _ = consume theirs  // closes here: the port holds the only other copy
        LoopThread.run { loop in
            try! bad.onInvalidation(in: loop, forMode: .default) {}
            #expect(loop.runInMode(.default, timeout: .seconds(10), returnAfterSourceHandled: true) == .handledSource)
        }
        #expect(try bad.send(PCPortMessage(msgid: 1), timeout: .seconds(1)) == .receiverGone)
        #expect(try good.send(PCPortMessage(msgid: 2, strings: ["still served"])) == .sent)
        #expect(done.wait(timeout: .seconds(60)))
        #expect(received.all == ["still served"])
        #expect(errors.all.count == 1)
        #expect(errors.all.first?.contains("bad magic") == true)
        #expect(disconnected.all == ["1"])
        // The descriptor the garbage carried was closed: end of stream.
        let closed = waitReadable(mine.rawValue)
        #expect(closed, "the descriptor the malformed record carried is still open")
        var byte: UInt8 = 0
        if closed { #expect(recv(mine.rawValue, &byte, 1, Int32(MSG_DONTWAIT)) == 0) }
    }

    @Test func aMonitorGetsACopyOfWhatAViewHandlerIsLent() throws {
        let handled = Mutex<[UInt32]>([])
        let handledOne = Flag()
        let owner = PCPort(viewHandler: { v in
            handled.withLock { $0.append(v.msgid) }
            handledOne.signal()
            return nil
        })
        defer { owner.invalidate() }
        owner.allowsMonitoring = true
        try owner.schedule(in: BackgroundLoop.shared.loop, forMode: .default)
        let right = try owner.makeSendRight()
        let events = Mutex<[PortMonitorSubscription.Event]>([])
        let outcome = try PortMonitorSubscription.subscribe(to: right, loop: .current) { e in
            events.withLock { $0.append(e) }
        }
        guard case .monitoring = outcome else {
            Issue.record("not subscribed: \(outcome)")
            return
        }
        let other = PCPort()
        defer { other.invalidate() }
        let message = PCPortMessage(msgid: 7, components: [.data([9, 8]), .port(try other.makeSendRight())])
        #expect(try right.send(message) == .sent)
        let loop = PCRunLoop.current
        let deadline = MonotonicInstant.now() + .seconds(20)
        while events.withLock({ $0.isEmpty }) && MonotonicInstant.now() < deadline {
            _ = loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
        }
        guard case .message(let copy)? = events.withLock({ $0.first }) else {
            Issue.record("no copy: \(events.withLock { $0 })")
            return
        }
        #expect(copy.msgid == 7 && copy.sequence == 1 && !copy.isRequest)
        #expect(copy.descriptorCount == 1)
        #expect(copy.components.map(\.kind) == [.data, .port])
        #expect(copy.components.map(\.bytes) == [[9, 8], []])
        #expect(handledOne.wait())
        #expect(handled.withLock { $0 } == [7])
    }

    /// Setting one kind of handler clears the other, and each record goes
    /// to the handler set when it is delivered, also when the handler
    /// itself switches them within a pass (the port chooses arrays or views
    /// once per pass: the records were all queued before the port was
    /// served, so one pass reads them all).
    @Test(arguments: [false, true])
    func closureAndViewHandlersReplaceEachOtherRecordByRecord(startWithView: Bool) throws {
        let log = Recorder()
        let all = Completion()
        let port = PCPort()
        let portRef = Mutex<PCPort?>(port)
        @Sendable func viaClosure(_ m: PCPortMessage) -> PCPortMessage? {
            log.add("closure \(m.msgid) \(m.components.first?.string ?? "?")")
            if m.msgid == 1 || m.msgid == 4 { portRef.withLock { $0 }?.setViewHandler(viaView) }
            if m.msgid == 5 { all.signal() }
            return nil
        }
        @Sendable func viaView(_ v: borrowing PortMessageView) -> PCPortMessage? {
            log.add("view \(v.msgid) \(v.string(ofComponent: 0) ?? "?")")
            if v.msgid == 2 { portRef.withLock { $0 }?.setHandler(viaClosure) }
            if v.msgid == 5 { all.signal() }
            return nil
        }
        if startWithView {
            port.setHandler(viaClosure)
            port.setViewHandler(viaView)  // clears the closure
        } else {
            port.setViewHandler(viaView)
            port.setHandler(viaClosure)  // clears the view handler
        }
        let right = try port.makeSendRight()
        for i in 0..<6 { #expect(try right.send(PCPortMessage(msgid: UInt32(i), strings: ["m\(i)"])) == .sent) }
        let served = try ServedPort(port: port)
        defer {
            served.stop()
            portRef.withLock { $0 = nil }
        }
        #expect(all.wait(timeout: .seconds(60)))
        let first = startWithView ? ["view 0 m0", "view 1 m1"] : ["closure 0 m0", "closure 1 m1"]
        #expect(log.all == first + ["view 2 m2", "closure 3 m3", "closure 4 m4", "view 5 m5"])
    }

    /// The fallback for a view handler set by another thread after a record
    /// was read as a message: the message lent as a view, whose copy is the
    /// message again.
    @Test func aMessageLentAsAViewCopiesBackToItself() throws {
        let other = PCPort()
        defer { other.invalidate() }
        let memory = try SharedMemory(copying: [4, 5, 6])
        let right = try other.makeSendRight()
        let message = PCPortMessage(
            msgid: 11, components: [.data([1, 2]), .port(right), .data([]), .sharedMemory(memory), .data([3])])
        let (seen, copy) = PortMessageView.lend(message) { v in (Seen(v), v.copy()) }
        #expect(seen.msgid == 11)
        #expect(seen.kinds == [.data, .port, .data, .sharedMemory, .data])
        #expect(seen.bytes == [[1, 2], nil, [], [4, 5, 6], [3]])
        #expect(copy.components.map(\.bytes) == message.components.map(\.bytes))
        if case .port(let r) = copy.components[1] { #expect(r === right) } else { Issue.record("not a port") }
        if case .sharedMemory(let m) = copy.components[3] { #expect(m === memory) } else { Issue.record("not shared memory") }
    }
}
