// ControlListenerTests: portd's control socket without a daemon process:
// the hand-over of its descriptor, the listener's rule that it removes only
// the socket file it created, and its refusal of a live socket.

import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct ControlListenerTests {
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
