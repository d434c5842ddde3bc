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
    private func d(_ s: String) -> PCPortMessage.Component { .data(Array(s.utf8)) }

    private let reply = NameServerProtocol.MessageID.reply
    private let error = NameServerProtocol.MessageID.error

    @Test func fieldsAndPorts() throws {
        let right = try PCPort().makeSendRight()
        let parsed = try NameServerReply(
            PCPortMessage(msgid: reply, components: [d("serial=4"), d("name=svc"), d("owner=12:1000:7"), d("pid=13"), .port(right)]))
        #expect(!parsed.isError && parsed.serial == 4)
        #expect(parsed.ports.count == 1 && parsed.ports[0] === right)
        #expect(parsed.value("name") == "svc")
        #expect(try parsed.record.owner("owner", in: "t") == NameOwner.Process(pid: 12, uid: 1000, client: 7))
        #expect(try parsed.record.integer("pid", as: Int32.self, in: "t") == 13)
        #expect(parsed.failure == nil)
    }

    @Test func malformedReplies() throws {
        let right = try PCPort().makeSendRight()
        #expect(throws: NameServerError.self) { try NameServerReply(PCPortMessage(msgid: self.reply, components: [])) }
        #expect(throws: NameServerError.self) { try NameServerReply(PCPortMessage(msgid: self.reply, components: [.port(right)])) }
        #expect(throws: NameServerError.self) { try NameServerReply(PCPortMessage(msgid: self.reply, components: [.data([0xff, 0xfe])])) }
        #expect(throws: NameServerError.self) { try NameServerReply(PCPortMessage(msgid: 7, components: [self.d("serial=1")])) }
        let missing = try NameServerReply(PCPortMessage(msgid: reply, components: [d("serial=1")]))
        #expect(throws: NameServerProtocol.Violation.self) { try missing.record.integer("pid", as: Int32.self, in: "t") }
        let notNumber = try NameServerReply(PCPortMessage(msgid: reply, components: [d("serial=1"), d("pid=x")]))
        #expect(throws: NameServerProtocol.Violation.self) { try notNumber.record.integer("pid", as: Int32.self, in: "t") }
        let badOwner = try NameServerReply(PCPortMessage(msgid: reply, components: [d("serial=1"), d("owner=1:2")]))
        #expect(throws: NameServerProtocol.Violation.self) { try badOwner.record.owner("owner", in: "t") }
    }

    /// A field splits at its first "=", its key is one or more of a-z,
    /// 0-9 and "_", and its value is any UTF-8 (the split works on the
    /// text's bytes in place).
    @Test func fieldsSplitAtTheirFirstEqualsSign() {
        let split: [(String, (String, String)?)] = [
            ("serial=1", ("serial", "1")),
            ("a=b=c", ("a", "b=c")),
            ("message=", ("message", "")),
            ("k_9=née ✓ 🚀", ("k_9", "née ✓ 🚀")),
            ("=value", nil),
            ("novalue", nil),
            ("", nil),
            ("Key=1", nil),
            ("ke-y=1", nil),
            ("né=1", nil),
        ]
        for (text, expected) in split {
            let field = NameServerField(text: text)
            #expect(field?.key == expected?.0 && field?.value == expected?.1, "\(text)")
        }
    }

    @Test func errorWordsBecomeErrors() throws {
        let cases: [(String, (NameServerError) -> Bool)] = [
            ("invalid-name", { if case .invalidName("why") = $0 { true } else { false } }),
            ("denied", { if case .denied("why") = $0 { true } else { false } }),
            ("limit", { if case .limit("why") = $0 { true } else { false } }),
            ("bad-request", { if case .badRequest("why") = $0 { true } else { false } }),
            ("hello-required", { if case .badRequest("why") = $0 { true } else { false } }),
            ("unsupported-version", { if case .unsupportedVersion("why") = $0 { true } else { false } }),
            ("internal", { if case .daemonFailure("why") = $0 { true } else { false } }),
        ]
        for (word, matches) in cases {
            let parsed = try NameServerReply(PCPortMessage(msgid: error, components: [d("serial=1"), d("error=\(word)"), d("message=why")]))
            let failure = try #require(parsed.failure, "\(word)")
            #expect(matches(failure), "\(word) gave \(failure)")
        }
        let odd = try NameServerReply(PCPortMessage(msgid: error, components: [d("serial=1"), d("error=surprise")]))
        if case .protocolError = odd.unexpected(for: "STATUS") {} else { Issue.record("not a protocol error") }
    }

    @Test func listEntries() throws {
        let page = try NameServerReply(
            PCPortMessage(
                msgid: reply,
                components: [
                    d("serial=1"), d("more=0"), d("name=svc"), d("owner=12:1000:3"), d("since_ms=1795279621007"),
                    d("queue_length=2"), d("future=1"), d("name=decl"), d("owner=1:0:0"), d("since_ms=5"), d("queue_length=0"),
                    d("declared=1"), d("checked_in=99"),
                ])
        ).listPage()
        #expect(!page.more)
        #expect(
            page.entries == [
                NameEntry(name: "svc", owner: .init(pid: 12, uid: 1000, client: 3), sinceMilliseconds: 1_795_279_621_007, queuedCount: 2),
                NameEntry(name: "decl", owner: .init(pid: 1, uid: 0), sinceMilliseconds: 5, queuedCount: 0, isDeclared: true, checkedInPID: 99),
            ])
        for bad in [["name=svc", "owner=12:1000", "since_ms=1", "queue_length=0"], ["name=svc", "owner=1:1:1", "since_ms=x", "queue_length=0"], ["name=svc"]] {
            #expect(throws: NameServerProtocol.Violation.self, "\(bad)") {
                try NameServerReply(PCPortMessage(msgid: self.reply, components: [self.d("serial=1"), self.d("more=0")] + bad.map(self.d))).listPage()
            }
        }
    }

    @Test func ownerChanges() throws {
        let id = NameServerProtocol.MessageID.nameOwnerChanged
        func change(_ fields: [String]) throws -> NameOwnerChange {
            guard case .ownerChanged(_, let c) = try NameServerNotification(PCPortMessage(msgid: id, strings: fields)) else {
                throw NameServerError.protocolError("not a change")
            }
            return c
        }
        let registered = try change(["serial=1", "name=svc", "event=registered", "new=5:7:1"])
        #expect(registered == NameOwnerChange(name: "svc", event: .known(.registered), oldOwner: nil, newOwner: .init(pid: 5, uid: 7, client: 1)))
        let replaced = try change(["serial=1", "name=svc", "event=replaced", "old=5:7:1", "new=6:7:2"])
        #expect(replaced.oldOwner == .init(pid: 5, uid: 7, client: 1) && replaced.newOwner == .init(pid: 6, uid: 7, client: 2))
        let newer = try change(["serial=1", "name=svc", "event=frobbed"])
        #expect(newer.event == .other("frobbed"))
        #expect(throws: NameServerError.self) { try NameServerNotification(PCPortMessage(msgid: 1, strings: ["serial=1", "name=svc", "event=released"])) }
        #expect(throws: NameServerError.self) { try change(["serial=1", "name=svc"]) }
        #expect(throws: NameServerError.self) { try change(["serial=1", "name=svc", "event=released", "old=x"]) }
        #expect(throws: NameServerError.self) { try change(["name=svc", "event=released"]) }
    }

    @Test func statusFields() throws {
        let parsed = try NameServerReply(
            PCPortMessage(msgid: reply, components: [
                d("serial=1"), d("version=0.1.0"), d("protocol=1.0"), d("pid=42"), d("uptime_ms=1234"), d("names=3"), d("clients=2"),
                d("lookups=9"), d("refusals=1"), d("declared=0"), d("future=yes"),
            ]))
        let status = try NameServerStatus(parsed)
        #expect(status.version == "0.1.0" && status.pid == 42 && status.uptimeMilliseconds == 1234)
        #expect(status.names == 3 && status.clients == 2 && status.lookups == 9 && status.refusals == 1 && status.declared == 0)
        #expect(status.fields.last == NameServerStatus.Field(key: "future", value: "yes"))
        #expect(throws: NameServerProtocol.Violation.self) {
            try NameServerStatus(try NameServerReply(PCPortMessage(msgid: self.reply, components: [self.d("serial=1"), self.d("pid=1")])))
        }
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
                if case .timedOut(let what) = error as? NameServerError { return what.contains("did not answer STATUS") }
                return false
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

    /// With a timeout long enough, the reader sleeps in recvmsg under
    /// SO_RCVTIMEO (ControlChannel), set again when the time left shrinks,
    /// and waits the last stretch in poll: a silent portd still times the
    /// request out, and a hang-up still ends the wait (end of stream, not
    /// the deadline: the second client's 30 s would fail the test).
    @Test func aReaderAsleepInRecvmsgTimesOutAndSeesAHangUp() throws {
        try withDirectory { dir in
            let path = "\(dir)/silent.sock"
            let silent = try silentListener(at: path)
            let client = try PortNameServer(socketPath: path, timeout: .milliseconds(400))
            #expect {
                _ = try client.status()
            } throws: { error in
                if case .timedOut(let what) = error as? NameServerError { return what.contains("did not answer STATUS") }
                return false
            }
            #expect {
                _ = try client.resolve("svc")
            } throws: { error in
                if case .timedOut(let what) = error as? NameServerError { return what.contains("did not answer LOOKUP svc") }
                return false
            }
            silent.close()
            let hangingUp = "\(dir)/hangs-up.sock"
            let listener = try silentListener(at: hangingUp)
            let patient = try PortNameServer(socketPath: hangingUp, timeout: .seconds(30))
            guard let accepted = try UnixSocket.accept(listener) else {
                Issue.record("nothing to accept")
                return
            }
            accepted.close()
            #expect {
                _ = try patient.resolve("svc")
            } throws: { error in
                if case .connectionLost = error as? NameServerError { true } else { false }
            }
        }
    }

    @Test func anUntrustedFallbackDirectoryIsRefused() throws {
        try withDirectory { dir in
            chmod(dir, 0o777)
            let location = DaemonSocketLocation(path: "\(dir)/portd/portd.sock", origin: .userFallback)
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
