// PortdUnitTests: portd's loop-independent parts, without a daemon process:
// journal fields, stderr lines, log destination, the choice of the control
// socket among passed descriptors, the hand-over of the control socket's
// descriptor, and the listener's rule that it removes only the socket file
// it created.

import Glibc
import Logging
import Testing

@testable import PortCore
@testable import PortMessaging
@testable import PortNameClient
@testable import PortNameProtocol
@testable import PortRunLoop
@testable import PortSystem
@testable import PortWire
@testable import portd

@Suite struct JournalLogHandlerTests {
    @Test func fieldsOfAnEntry() {
        let fields = JournalLogHandler.fields(
            level: .warning, message: "two\nlines", error: "boom",
            metadata: ["peer-pid": "12", "message": "spoof", "_PID": "1", "9lives": "x"],
            identifier: "portd", file: "portd/Daemon.swift", function: "run()", line: 42)
        #expect(
            fields == [
                "MESSAGE=two\nlines", "PRIORITY=4", "SYSLOG_IDENTIFIER=portd", "CODE_FILE=portd/Daemon.swift",
                "CODE_LINE=42", "CODE_FUNC=run()", "ERROR=boom",
                "PORTD_9LIVES=x", "PID=1", "PORTD_MESSAGE=spoof", "PEER_PID=12",
            ])
    }

    @Test func fieldNames() {
        #expect(JournalLogHandler.fieldName(forMetadataKey: "client.uid") == "CLIENT_UID")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "__x") == "X")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "") == "PORTD_")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "priority") == "PORTD_PRIORITY")
        #expect(JournalLogHandler.fieldName(forMetadataKey: String(repeating: "a", count: 100)).count == 64)
    }

    @Test func priorities() {
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected { #expect(JournalLogHandler.priority(of: level) == priority) }
    }
}

@Suite struct StderrLogHandlerTests {
    @Test func oneLinePerEvent() {
        #expect(
            StderrLogHandler.line(identifier: "portd", level: .info, message: "listening on /x", error: nil, metadata: [:])
                == "portd: info: listening on /x\n")
        #expect(
            StderrLogHandler.line(
                identifier: "portd", level: .error, message: "a\nb", error: "e", metadata: ["z": "1", "a": "2"])
                == "portd: error: a\\nb: e a=2 z=1\n")
    }
}

@Suite struct LogDestinationTests {
    @Test func journalOnlyWhenStandardErrorIsTheJournalStream() {
        #expect(LogDestination.detect(journalStream: "8:12345", standardError: (8, 12345)) == .journal)
        #expect(LogDestination.detect(journalStream: "8:12345", standardError: (8, 999)) == .standardError)
        #expect(LogDestination.detect(journalStream: nil, standardError: (8, 12345)) == .standardError)
        #expect(LogDestination.detect(journalStream: "garbage", standardError: (8, 12345)) == .standardError)
        #expect(LogDestination.detect(journalStream: "8:12345", standardError: nil) == .standardError)
    }

    @Test func levels() {
        #expect(LogDestination.level(from: nil) == .info)
        #expect(LogDestination.level(from: "DEBUG") == .debug)
        #expect(LogDestination.level(from: "nonsense") == .info)
    }
}

@Suite struct ListenFDsTests {
    private func passed(_ names: String...) -> [ListenFDs.Passed] {
        names.enumerated().map { ListenFDs.Passed(fileDescriptor: 3 + Int32($0.offset), name: $0.element) }
    }

    @Test func choosesTheControlSocket() {
        let named = ListenFDs.selectControl(from: passed("declared-a", "control", "declared-b"))
        #expect(named.control == ListenFDs.Passed(fileDescriptor: 4, name: "control"))
        #expect(named.others.map(\.name) == ["declared-a", "declared-b"])

        #expect(ListenFDs.selectControl(from: passed("unknown")).control?.fileDescriptor == 3)
        #expect(ListenFDs.selectControl(from: passed("portd.socket")).control?.fileDescriptor == 3)
        #expect(ListenFDs.selectControl(from: passed("something-else")).control == nil)
        #expect(ListenFDs.selectControl(from: passed("unknown", "unknown")).control == nil)
        #expect(ListenFDs.selectControl(from: []).control == nil)
    }

    @Test func notifierTextStaysOnOneLine() {
        #expect(SystemdNotifier.oneLine("a\nb\r\nc") == "a b c")
    }
}

@Suite struct ControlEndpointTests {
    private func temporaryDirectory() -> String {
        var template = Array("/tmp/portd-unit-XXXXXX".utf8CString)
        return String(cString: mkdtemp(&template)!)
    }

    @Test func aHandedOverDescriptorIsNotClosedByTheListener() throws {
        let dir = temporaryDirectory()
        defer { rmdir(dir) }
        let location = DaemonSocketLocation(path: "\(dir)/s.sock", origin: .option)
        let listener = try ControlListener.bind(at: location, userID: getuid())
        let fd = listener.handOverDescriptor()
        listener.close()
        #expect(!exists(location.path), "the file goes with the listener")
        // The descriptor still listens: whoever took it closes it.
        let status = try FileSystem.status(ofDescriptor: fd)
        #expect(status.kind == .socket)
        fd.close()
    }

    @Test func listenerRemovesOnlyTheFileItCreated() throws {
        let dir = temporaryDirectory()
        defer { rmdir(dir) }
        let path = "\(dir)/s.sock"
        let listener = try ControlListener.bind(at: DaemonSocketLocation(path: path, origin: .option), userID: getuid())
        // Someone replaces the file behind its back (e.g. an operator's rm and a new daemon).
        try FileSystem.remove(path)
        let other = try LocalSocket.make(.seqPacket)  // open to the end
        try LocalSocket.bind(other, path: path)
        listener.close()
        listener.close()  // idempotent
        #expect(try FileSystem.status(ofPath: path)?.kind == .socket, "the other socket's file must survive")
        try FileSystem.remove(path)
    }

    @Test func listenerRefusesALiveSocketAndNamesItsPid() throws {
        let dir = temporaryDirectory()
        defer { rmdir(dir) }
        let location = DaemonSocketLocation(path: "\(dir)/s.sock", origin: .option)
        let first = try ControlListener.bind(at: location, userID: getuid())
        defer { first.close() }
        do {
            _ = try ControlListener.bind(at: location, userID: getuid())
            Issue.record("a second listener bound a live socket")
        } catch .alreadyRunning(let path, let pid) {
            #expect(path == location.path)
            #expect(pid == getpid())
        }
    }
}
