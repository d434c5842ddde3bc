// The man page against the code: examples/wire_roundtrip.py implements
// portd-protocol(7) from the page alone; these tests check that the Swift
// encoder writes the same bytes, that the Swift decoder reads the script's
// records, and that a real exchange over AF_UNIX (descriptors, a sealed
// memfd, credentials, both directions) works between the two.

import Glibc
import Testing
import PortSystem
import PortTestSupport
@testable import PortWire

@Suite struct ManPageInteropTests {
    static let script = SourceTree.path("examples/wire_roundtrip.py")

    @Test func pythonRecordsMatchSwiftRecords() throws {
        let child = try ChildProcess(executable: "python3", arguments: [Self.script, "hex"])
        let status = try child.waitForExit()
        let output = child.standardOutput
        #expect(status == 0, "wire_roundtrip.py hex failed:\n\(output)\(child.standardError)")

        // The same messages as the script's SAMPLES, encoded here.
        let expected: [String: (UInt32, Int32?, [PortComponent])] = [
            "empty": (42, nil, []),
            "checkin": (100, 7, [.data(Array("worker".utf8))]),
            "mixed": (0x0102_0304, 10, WireGoldenTests.mixedComponents),
            "python": (0xCAFE, nil, [.data(Array("from python".utf8)), .data((0...255).map { UInt8($0) })]),
        ]
        var seen = Set<String>()
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ")
            try #require(fields.count == 3, "line \(line)")
            let name = String(fields[0])
            let record = Hex.bytes(String(fields[2]))
            let (msgid, reply, components) = try #require(expected[name], "unknown sample \(name)")
            let swift = try WireEncoder.encode(msgid: msgid, replyPort: reply, components: components)
            #expect(Hex.string(swift.bytes) == String(fields[2]), "\(name): Swift and the man page disagree")
            #expect(Int(fields[1]) == swift.descriptors.count, "\(name): descriptor count")
            let decoded = try WireDecoder.decode(record, descriptors: swift.descriptors)
            #expect(decoded.msgid == msgid)
            #expect(decoded.replyPort == reply)
            #expect(decoded.components == components)
            seen.insert(name)
        }
        #expect(seen == Set(expected.keys))
    }

    @Test func exchangeWithPythonOverASocket() throws {
        let address = try UnixSocketAddress(abstract: "portd-interop-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        let listener = try UnixSocket.makeSocket()
        try UnixSocket.bind(listener, to: address)
        // Set before anyone connects: accepted sockets inherit it, so the
        // very first record carries SCM_CREDENTIALS.
        try UnixSocket.setPassCredentials(listener, true)
        try UnixSocket.listen(listener)

        let child = try ChildProcess(executable: "python3", arguments: [Self.script, "connect", address.description])
        defer { if child.isRunning { child.signal(SIGKILL) } }

        try #require(waitReadable(listener.rawValue), "python did not connect")
        guard let connection = try UnixSocket.accept(listener) else {
            Issue.record("nothing to accept")
            return
        }
        try #require(waitReadable(connection.rawValue), "python sent nothing")

        let t = TestWireTransport()
        let m = try t.receive(connection)
        // The kernel's word for who sent it: the child itself.
        #expect(m.credentials == Credentials(pid: child.pid, uid: getuid(), gid: getgid()))
        #expect(m.msgid == 7)
        let reply = OwnedDescriptor(adopting: try #require(m.replyPort))
        try #require(m.components.count == 3)
        #expect(m.components[0] == .data(Array("hello from python".utf8)))
        guard case .port(let portNumber) = m.components[1], case .largeData(let memfdNumber, let length) = m.components[2] else {
            Issue.record("components \(m.components)")
            return
        }
        let port = OwnedDescriptor(adopting: portNumber)
        let memfd = OwnedDescriptor(adopting: memfdNumber)

        // The large component: sealed by the script as the page says, mapped here.
        #expect(length == 100_000)
        try MemFD.checkSealed(memfd, length: length)
        let region = try MemFD.mapReadOnly(memfd, length: length)
        let matches = region.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) }
        MemFD.unmap(region)
        #expect(matches)

        // Back to Python: through the port it sent, and on its reply port
        // with its own port handed back.
        #expect(try t.send(port, msgid: 9, components: [.data(Array("via your port".utf8))]) == .sent(12 + 8 + 13))
        #expect(
            try t.send(reply, msgid: 8, components: [.data(Array("reply:hello from python".utf8)), .port(port.rawValue)])
                == .sent(12 + 16 + 23))

        #expect(try child.waitForExit() == 0, "\(child.standardError)")
        #expect(child.standardOutput == "ok\n")
    }
}
