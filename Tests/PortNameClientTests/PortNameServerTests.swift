// PortNameServerTests: the name-server client's parts that need no daemon:
// the naming rule, replies taken apart (words, fields, ports, errors), the
// records (LIST lines, OWNER, STATUS, NAME_OWNER_CHANGED), and connecting:
// no socket, a stale socket, a listener that never answers, an untrusted
// fallback directory, and a peer that hangs up. The requests against a
// daemon, the real portd, are in NameServerClientTests.

import Glibc
import Testing

import PortCore
@testable import PortNameClient

@Suite struct NameRuleTests {
    @Test func validNames() {
        for name in ["a", "svc", "org.example.Service_2", "x-y", "_", "A.b..c", String(repeating: "n", count: 200)] {
            #expect(NameServerProtocol.isValidName(name), "\(name)")
        }
    }

    @Test func invalidNames() {
        for name in ["", ".", "..", ".hidden", "a/b", "/abs", "sp ace", "tab\t", "nul\0", "ü", "a:b", String(repeating: "n", count: 201)] {
            #expect(NameServerProtocol.nameProblem(name) != nil, "\(name)")
        }
    }
}

@Suite struct NameServerReplyTests {
    private func message(_ parts: [PCPortMessage.Component]) -> PCPortMessage {
        PCPortMessage(msgid: 1, components: parts)
    }

    private func d(_ s: String) -> PCPortMessage.Component { .data(Array(s.utf8)) }

    @Test func wordFieldsAndPorts() throws {
        let right = try PCPort().makeSendRight()
        let reply = try NameServerReply(message([d("found"), .port(right), d("pid=12"), d("uid=1000"), d("pid=13"), d("free text")]))
        #expect(reply.word == "found")
        #expect(reply.ports.count == 1 && reply.ports[0] === right)
        #expect(reply.field("pid") == "12")
        #expect(reply.fields("pid") == ["12", "13"])
        #expect(try reply.integer("uid", as: UInt32.self) == 1000)
        #expect(reply.keyValuePairs.map(\.key) == ["pid", "uid", "pid"])
        #expect(reply.failure == nil)
    }

    @Test func malformedReplies() throws {
        let right = try PCPort().makeSendRight()
        #expect(throws: NameServerError.self) { try NameServerReply(self.message([])) }
        #expect(throws: NameServerError.self) { try NameServerReply(self.message([.port(right)])) }
        #expect(throws: NameServerError.self) { try NameServerReply(self.message([.data([0xff, 0xfe])])) }
        let missing = try NameServerReply(message([d("ok")]))
        #expect(throws: NameServerProtocol.Violation.self) { try missing.integer("pid", as: Int32.self) }
        let notNumber = try NameServerReply(message([d("ok"), d("pid=x")]))
        #expect(throws: NameServerProtocol.Violation.self) { try notNumber.integer("pid", as: Int32.self) }
    }

    @Test func errorWordsBecomeErrors() throws {
        let cases: [(String, (NameServerError) -> Bool)] = [
            ("invalid-name", { if case .invalidName("why") = $0 { true } else { false } }),
            ("denied", { if case .denied("why") = $0 { true } else { false } }),
            ("limit", { if case .limit("why") = $0 { true } else { false } }),
            ("bad-request", { if case .badRequest("why") = $0 { true } else { false } }),
            ("internal", { if case .daemonFailure("why") = $0 { true } else { false } }),
        ]
        for (word, matches) in cases {
            let reply = try NameServerReply(message([d(word), d("message=why")]))
            let failure = try #require(reply.failure, "\(word)")
            #expect(matches(failure), "\(word) gave \(failure)")
        }
        let odd = try NameServerReply(message([d("surprise")]))
        if case .protocolError = odd.unexpected(for: "STATUS") {} else { Issue.record("not a protocol error") }
    }

    @Test func listLines() {
        #expect(
            NameEntry(listLine: "svc\t12\t1000\t1795279621007\t2")
                == NameEntry(name: "svc", owner: .init(pid: 12, uid: 1000), sinceMilliseconds: 1_795_279_621_007, queuedCount: 2))
        for bad in ["svc\t12\t1000\t5", "\t1\t1\t1\t0", "svc\tx\t1\t1\t0", "svc 1 1 1 0"] {
            #expect(NameEntry(listLine: bad) == nil, "\(bad)")
        }
    }

    @Test func ownerChanges() throws {
        let id = NameServerProtocol.MessageID.nameOwnerChanged
        let registered = try NameOwnerChange(PCPortMessage(msgid: id, strings: ["svc", "registered", "", "pid=5,uid=7"]))
        #expect(registered == NameOwnerChange(name: "svc", event: .known(.registered), oldOwner: nil, newOwner: .init(pid: 5, uid: 7)))
        let replaced = try NameOwnerChange(PCPortMessage(msgid: id, strings: ["svc", "replaced", "pid=5,uid=7", "pid=6,uid=7"]))
        #expect(replaced.oldOwner == .init(pid: 5, uid: 7) && replaced.newOwner == .init(pid: 6, uid: 7))
        let newer = try NameOwnerChange(PCPortMessage(msgid: id, strings: ["svc", "frobbed", "", ""]))
        #expect(newer.event == .other("frobbed"))
        #expect(throws: NameServerError.self) { try NameOwnerChange(PCPortMessage(msgid: 1, strings: ["svc", "released", "", ""])) }
        #expect(throws: NameServerError.self) { try NameOwnerChange(PCPortMessage(msgid: id, strings: ["svc", "released", ""])) }
        #expect(throws: NameServerError.self) { try NameOwnerChange(PCPortMessage(msgid: id, strings: ["svc", "released", "pid=x", ""])) }
    }

    @Test func statusFields() throws {
        let reply = try NameServerReply(
            message([
                d("ok"), d("version=0.1.0"), d("pid=42"), d("uptime_ms=1234"), d("names=3"), d("clients=2"),
                d("lookups=9"), d("refusals=1"), d("declared=0"), d("future=yes"),
            ]))
        let status = try NameServerStatus(reply)
        #expect(status.version == "0.1.0" && status.pid == 42 && status.uptimeMilliseconds == 1234)
        #expect(status.names == 3 && status.clients == 2 && status.lookups == 9 && status.refusals == 1 && status.declared == 0)
        #expect(status.fields.last == NameServerStatus.Field(key: "future", value: "yes"))
        #expect(throws: NameServerProtocol.Violation.self) { try NameServerStatus(try NameServerReply(self.message([self.d("ok"), self.d("pid=1")]))) }
    }

    @Test func registrationOptionWords() {
        #expect(RegistrationOptions([.doNotQueue, .allowReplacement, .replaceExisting]).words == [
            "allow-replacement", "replace-existing", "do-not-queue",
        ])
        #expect(RegistrationOptions().words.isEmpty)
    }
}

@Suite struct PortNameServerConnectTests {
    /// A fresh directory under /tmp, removed at the end.
    /// A listening socket at `path` that never accepts on its own: a "daemon" that does not answer.
    private func silentListener(at path: String) throws -> OwnedDescriptor {
        let listener = try UnixSocket.makeSocket()
        try UnixSocket.bind(listener, to: UnixSocketAddress(path: path))
        try UnixSocket.listen(listener)
        return listener
    }

    private func withDirectory(_ body: (String) throws -> Void) throws {
        var template = Array("/tmp/portd-ns-XXXXXX".utf8CString)
        let dir = String(cString: try #require(mkdtemp(&template)))
        defer {
            if let d = opendir(dir) {
                while let e = readdir(d) {
                    let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                    if name != "." && name != ".." { unlink("\(dir)/\(name)") }
                }
                closedir(d)
            }
            rmdir(dir)
        }
        try body(dir)
    }

    @Test func noSocketAndStaleSocketAreNotRunning() throws {
        try withDirectory { dir in
            #expect {
                _ = try PortNameServer(socketPath: "\(dir)/none.sock")
            } throws: { error in
                if case .notRunning(let s) = error as? NameServerError { return s == "\(dir)/none.sock" }
                return false
            }
            let stale = "\(dir)/stale.sock"
            let fd = try UnixSocket.makeSocket()
            try UnixSocket.bind(fd, to: UnixSocketAddress(path: stale))
            fd.close()
            #expect {
                _ = try PortNameServer(socketPath: stale)
            } throws: { error in
                if case .notRunning = error as? NameServerError { true } else { false }
            }
        }
    }

    @Test func aSilentListenerTimesOutAndAHangUpIsConnectionLost() throws {
        try withDirectory { dir in
            let path = "\(dir)/silent.sock"
            let listener = try silentListener(at: path)
            // The connect succeeds through the backlog; the reply never comes.
            let client = try PortNameServer(socketPath: path, timeout: .milliseconds(50))
            #expect {
                _ = try client.status()
            } throws: { error in
                if case .timedOut = error as? NameServerError { true } else { false }
            }
            // Now the "daemon" accepts and hangs up at once.
            guard let accepted = try UnixSocket.accept(listener) else {
                Issue.record("nothing to accept")
                return
            }
            accepted.close()
            #expect {
                _ = try client.status()
            } throws: { error in
                if case .connectionLost = error as? NameServerError { true } else { false }
            }
        }
    }

    @Test func anUntrustedFallbackDirectoryIsRefused() throws {
        try withDirectory { dir in
            chmod(dir, 0o777)
            let location = DaemonSocketLocation(path: "\(dir)/portd.sock", origin: .userFallback)
            #expect {
                _ = try PortNameServer(location: location)
            } throws: { error in
                if case .untrustedDirectory = error as? NameServerError { true } else { false }
            }
        }
    }

    @Test func badNamesFailBeforeAnyRequest() throws {
        try withDirectory { dir in
            let path = "\(dir)/silent.sock"
            let listener = try silentListener(at: path)
            defer { _ = listener.rawValue }  // open to the end
            let client = try PortNameServer(socketPath: path, timeout: .milliseconds(50))
            for bad in ["a/b", "..", ""] {
                #expect {
                    _ = try client.lookup(bad)
                } throws: { error in
                    if case .invalidName = error as? NameServerError { true } else { false }
                }
            }
        }
    }
}
