// PortReadAheadTests: a port reads the records queued on a connection,
// beyond the first of its turn, up to a pass's share in one recvmmsg
// (MessageTransport, "Reading ahead"). Records read ahead are no longer in
// the socket, so epoll does not report them. These tests hold what the port
// must still do with them, each with records queued before the loop runs,
// so that they are read ahead: serve them in the socket's order after a
// request ended the connection's turn (after the perform requests its
// handler queued, as CF runs blocks before the next message), serve them
// in a run nested in a handler, and give them up with their descriptors
// when the connection or the port goes, or when a record before them is
// malformed; and the end of one connection's stream, read ahead behind its
// records, ends that connection only.

import Synchronization
import Testing
import PortRunLoop
import PortSystem
@testable import PortMessaging

@Suite struct PortReadAheadTests {
    /// What the handlers saw, in order.
    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Runs `loop` in `.default` until `done` or 20 s.
    private func run(_ loop: PCRunLoop, until done: () -> Bool) {
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !done() && MonotonicInstant.now() < deadline {
            loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
        }
    }

    /// Queues `message` on `right`'s connection as it is; as a request
    /// when `request` (whose reply nobody reads).
    private func queue(_ message: PCPortMessage, on right: SendRight, request: Bool = false) throws {
        let connection = try #require(right.currentConnection())
        let sent = try MessageTransport().send(
            message, on: connection.descriptor, replyPort: nil, replyExpected: request, before: .now())
        #expect(sent == .sent)
    }

    @Test(arguments: [false, true])
    func aRequestEndsItsConnectionsTurnAndWhatWasReadAheadComesAfterItsHandlersPerforms(view: Bool) throws {
        let loop = PCRunLoop.current
        let log = Log()
        func handle(_ msgid: UInt32) {
            log.add("m\(msgid)")
            if msgid == 1 { loop.perform(inModes: [.default]) { log.add("performed") } }
        }
        let port =
            view
            ? PCPort(viewHandler: { v in
                handle(v.msgid)
                return nil
            })
            : PCPort { m in
                handle(m.msgid)
                return nil
            }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        try queue(PCPortMessage(msgid: 0, strings: ["first, read alone"]), on: right)
        try queue(PCPortMessage(msgid: 1, strings: ["a request"]), on: right, request: true)
        for i in 2...5 { try queue(PCPortMessage(msgid: UInt32(i), strings: ["behind it"]), on: right) }

        run(loop) { log.all.count >= 7 }
        #expect(log.all == ["m0", "m1", "performed", "m2", "m3", "m4", "m5"])
    }

    @Test func aRunNestedInAHandlerServesTheRecordsReadAheadInOrder() throws {
        let loop = PCRunLoop.current
        let log = Log()
        let port = PCPort { m in
            log.add("m\(m.msgid)")
            if m.msgid == 1 {
                // Waits, in a nested run, for the records queued behind this one.
                let deadline = MonotonicInstant.now() + .seconds(20)
                while log.all.count < 6 && MonotonicInstant.now() < deadline {
                    loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
                }
                log.add("nested run ended")
            }
            return nil
        }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        for i in 0...5 { try queue(PCPortMessage(msgid: UInt32(i), strings: ["queued"]), on: right) }

        run(loop) { log.all.count >= 7 }
        #expect(log.all == ["m0", "m1", "m2", "m3", "m4", "m5", "nested run ended"])
    }

    /// A view handler that runs the loop nested while its view holds
    /// rights (a port component): the records the nested run receives are
    /// parsed with descriptor counts of their own, not added to those of
    /// the record lent (each was refused as carrying one descriptor too
    /// many, its connection closed).
    @Test func aRunNestedInAViewHandlerWhoseViewHoldsARightServesTheNextRecords() throws {
        let loop = PCRunLoop.current
        let target = PCPort()
        defer { target.invalidate() }
        try target.schedule(in: loop, forMode: .default)
        let log = Log()
        let errors = Log()
        let port = PCPort(viewHandler: { v in
            log.add("m\(v.msgid)")
            if v.msgid == 1 {
                let deadline = MonotonicInstant.now() + .seconds(20)
                while log.all.count < 4 && errors.all.isEmpty && MonotonicInstant.now() < deadline {
                    loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
                }
                log.add("nested run ended")
            }
            return nil
        })
        port.onError { errors.add("\($0)") }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        try queue(PCPortMessage(msgid: 0, strings: ["first, read alone"]), on: right)
        try queue(PCPortMessage(msgid: 1, components: [.port(try target.makeSendRight())]), on: right)
        try queue(PCPortMessage(msgid: 2, strings: ["no right"]), on: right)
        try queue(PCPortMessage(msgid: 3, components: [.port(try target.makeSendRight())]), on: right)

        run(loop) { log.all.count >= 5 || !errors.all.isEmpty }
        #expect(errors.all == [])
        #expect(log.all == ["m0", "m1", "m2", "m3", "nested run ended"])
        #expect(port.connectionCount == 1)
    }

    /// A view is valid for the whole call of its handler, a run nested in
    /// it included: the records that run receives (on another connection,
    /// read the plain way) must not be written over the lent one.
    @Test func aViewStaysItsOwnAcrossARunNestedInItsHandler() throws {
        let loop = PCRunLoop.current
        let log = Log()
        let port = PCPort(viewHandler: { v in
            let before = v.string(ofComponent: 0) ?? "?"
            log.add(before)
            if before == "outer" {
                let deadline = MonotonicInstant.now() + .seconds(20)
                while log.all.count < 2 && MonotonicInstant.now() < deadline {
                    loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
                }
                log.add("after the nested run: \(v.string(ofComponent: 0) ?? "?")")
            }
            return nil
        })
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let first = try port.makeSendRight()
        let second = try port.makeSendRight()
        try queue(PCPortMessage(msgid: 1, strings: ["outer"]), on: first)
        try queue(PCPortMessage(msgid: 2, strings: ["INNER"]), on: second)

        run(loop) { log.all.count >= 3 }
        #expect(log.all == ["outer", "INNER", "after the nested run: outer"])
    }

    @Test(arguments: ["closeConnection", "invalidate"])
    func recordsReadAheadOfAConnectionThatGoesAreGivenUpAndTheirRightsClosed(_ how: String) throws {
        let loop = PCRunLoop.current
        // Each message carries a right to `target`, the only one once sent:
        // `target` sees every right that is closed as a connection that goes.
        let target = PCPort()
        defer { target.invalidate() }
        try target.schedule(in: loop, forMode: .default)
        let log = Log()
        let port = PCPort()
        port.setHandler { [unowned port] m in
            log.add("m\(m.msgid)")
            if m.msgid == 1, let id = m.connectionID {
                if how == "invalidate" { port.invalidate() } else { port.closeConnection(id) }
            }
            return nil
        }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        for i in 0...5 {
            try queue(PCPortMessage(msgid: UInt32(i), components: [.port(try target.makeSendRight())]), on: right)
        }
        #expect(target.connectionCount == 6)

        run(loop) { target.connectionCount == 0 }
        #expect(target.connectionCount == 0, "rights read ahead were not closed")
        #expect(log.all == ["m0", "m1"])
    }

    /// Records left read ahead when a request ended the turn, and the port
    /// invalidated before they were served (here by a perform request the
    /// request's handler queued, which runs first; or by another thread;
    /// or removed from its loop): their rights are closed by the
    /// invalidation, not held until the port object goes.
    @Test(arguments: ["perform", "removed"])
    func recordsReadAheadOfAPortInvalidatedBetweenPassesAreGivenUp(_ how: String) throws {
        let loop = PCRunLoop.current
        let target = PCPort()
        defer { target.invalidate() }
        try target.schedule(in: loop, forMode: .default)
        let log = Log()
        let port = PCPort()
        port.setHandler { [unowned port] m in
            log.add("m\(m.msgid)")
            if m.msgid == 1 {
                if how == "removed" { port.remove(from: loop, forMode: .default) }
                loop.perform(inModes: [.default]) {
                    port.invalidate()
                    log.add("invalidated")
                }
            }
            return nil
        }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        try queue(PCPortMessage(msgid: 0, strings: ["first, read alone"]), on: right)
        try queue(PCPortMessage(msgid: 1, strings: ["a request"]), on: right, request: true)
        for i in 2...5 {
            try queue(PCPortMessage(msgid: UInt32(i), components: [.port(try target.makeSendRight())]), on: right)
        }
        #expect(target.connectionCount == 4)

        run(loop) { log.all.contains("invalidated") && target.connectionCount == 0 }
        #expect(log.all == ["m0", "m1", "invalidated"])
        #expect(target.connectionCount == 0, "rights read ahead were held by the invalidated port")
    }

    /// A port invalidated by the handler of a record with others read
    /// ahead behind it: the connection closes with the port (its holder
    /// sees it hang up), the port object still held.
    @Test(arguments: [false, true])
    func aPortInvalidatedWithRecordsReadAheadHangsUpTheirConnection(request: Bool) throws {
        let loop = PCRunLoop.current
        let log = Log()
        let port = PCPort()
        port.setHandler { [unowned port] m in
            log.add("m\(m.msgid)")
            if m.msgid == 1 { port.invalidate() }
            return nil
        }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        try queue(PCPortMessage(msgid: 0, strings: ["first, read alone"]), on: right)
        try queue(PCPortMessage(msgid: 1, strings: ["invalidates"]), on: right, request: request)
        for i in 2...5 { try queue(PCPortMessage(msgid: UInt32(i), strings: ["read ahead"]), on: right) }

        run(loop) { log.all.count >= 2 }
        #expect(log.all == ["m0", "m1"])
        let connection = try #require(right.currentConnection())
        let ready = try Poll.wait(connection.descriptor, for: .readHangUp, timeout: .zero)
        #expect(ready.contains(.hangUp), "the invalidated port still holds the connection")
    }

    @Test func aMalformedRecordClosesItsConnectionAndTheRecordsReadAheadBehindItAreGivenUp() throws {
        let loop = PCRunLoop.current
        let target = PCPort()
        defer { target.invalidate() }
        try target.schedule(in: loop, forMode: .default)
        let log = Log()
        let errors = Log()
        let port = PCPort { m in
            log.add("m\(m.msgid)")
            return nil
        }
        port.onError { errors.add("\($0)") }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        try queue(PCPortMessage(msgid: 0, strings: ["first, read alone"]), on: right)
        try queue(PCPortMessage(msgid: 1, components: [.port(try target.makeSendRight())]), on: right)
        let connection = try #require(right.currentConnection())
        let garbage = [UInt8](repeating: 0xFF, count: 24)
        #expect(try garbage.withUnsafeBytes { try UnixSocket.send(connection.descriptor, $0) } == .sent(24))
        for i in 3...4 {
            try queue(PCPortMessage(msgid: UInt32(i), components: [.port(try target.makeSendRight())]), on: right)
        }
        #expect(target.connectionCount == 3)

        run(loop) { target.connectionCount == 0 && !errors.all.isEmpty }
        #expect(log.all == ["m0", "m1"])
        #expect(errors.all.count == 1)
        #expect(target.connectionCount == 0, "rights read ahead behind the malformed record were not closed")
    }

    @Test func theEndOfOneConnectionReadAheadEndsThatConnectionOnly() throws {
        let loop = PCRunLoop.current
        let log = Log()
        let gone = Log()
        let port = PCPort { m in
            log.add(m.components.first?.string ?? "")
            return nil
        }
        port.onDisconnect { gone.add("\($0)") }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        // 15 records and the end: the end is read ahead with the last 14,
        // within one turn's share of 16.
        do {
            let ending = try port.makeSendRight()
            for i in 0..<15 { try queue(PCPortMessage(msgid: 1, strings: ["a\(i)"]), on: ending) }
        }
        // More than a share: read in the next passes, after that end.
        let staying = try port.makeSendRight()
        for i in 0..<40 { try queue(PCPortMessage(msgid: 2, strings: ["b\(i)"]), on: staying) }

        run(loop) { log.all.count >= 55 && !gone.all.isEmpty }
        #expect(log.all.filter { $0.hasPrefix("a") } == (0..<15).map { "a\($0)" })
        #expect(log.all.filter { $0.hasPrefix("b") } == (0..<40).map { "b\($0)" })
        #expect(gone.all.count == 1)
        #expect(port.connectionCount == 1, "the connection that stays was closed")
    }

    /// A connection its server's pacing (`setPacing`, portd's share of a
    /// pass per uid) holds back while records of it were read ahead comes
    /// back in a later pass: epoll does not report what is no longer in
    /// the socket.
    @Test func aConnectionHeldBackByPacingWithRecordsReadAheadIsServedLater() throws {
        let loop = PCRunLoop.current
        let log = Log()
        let refusals = Mutex(0)
        let port = PCPort { m in
            log.add("m\(m.msgid)")
            if m.msgid == 1 { refusals.withLock { $0 = 1 } }
            return nil
        }
        port.setPacing { _, _ in
            refusals.withLock { left in
                guard left > 0 else { return true }
                left -= 1
                return false
            }
        }
        defer { port.invalidate() }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()
        try queue(PCPortMessage(msgid: 0, strings: ["first, read alone"]), on: right)
        try queue(PCPortMessage(msgid: 1, strings: ["a request"]), on: right, request: true)
        for i in 2...5 { try queue(PCPortMessage(msgid: UInt32(i), strings: ["behind it"]), on: right) }

        run(loop) { log.all.count >= 6 }
        #expect(log.all == ["m0", "m1", "m2", "m3", "m4", "m5"])
        #expect(refusals.withLock { $0 } == 0, "the pacing held the connection back once")
    }
}
