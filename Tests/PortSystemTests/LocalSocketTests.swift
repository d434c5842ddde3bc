// LocalSocketTests: the provisional AF_UNIX wrappers on real sockets:
// record boundaries, truncation, end of stream, peer credentials, errors
// that name the call, abstract datagram sockets. (Connecting to portd's
// socket is PortNameServerTests' business.)

import Glibc
import Testing

@testable import PortSystem

@Suite struct LocalSocketTests {
    /// A listening socket in a fresh directory, with a connected client and the accepted server end.
    final class Pair {
        let directory: String
        let path: String
        let listener: OwnedDescriptor
        let client: OwnedDescriptor
        let server: OwnedDescriptor

        init() throws {
            var template = Array("/tmp/portd-sock-XXXXXX".utf8CString)
            directory = String(cString: mkdtemp(&template)!)
            path = "\(directory)/s.sock"
            listener = try LocalSocket.make(.seqPacket)
            try LocalSocket.bind(listener, path: path)
            try UnixSocket.listen(listener)
            client = try LocalSocket.make(.seqPacket)
            #expect(try LocalSocket.connect(client, path: path) == .connected)
            guard let accepted = try LocalSocket.accept(listener) else {
                throw SystemCallError(call: "accept4", errno: .resourceTemporarilyUnavailable)
            }
            server = accepted
        }

        deinit {
            // The sockets close with the object.
            _ = try? FileSystem.remove(path)
            rmdir(directory)
        }
    }

    @Test func recordsKeepTheirBoundaries() throws {
        let pair = try Pair()
        #expect(try LocalSocket.send(pair.client, Array("one".utf8)))
        #expect(try LocalSocket.send(pair.client, Array("second".utf8)))
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(try LocalSocket.receive(pair.server, into: &buffer) == .record(count: 3, truncated: false))
        #expect(try LocalSocket.receive(pair.server, into: &buffer) == .record(count: 6, truncated: false))
        #expect(try LocalSocket.receive(pair.server, into: &buffer) == .wouldBlock)
        #expect(try LocalSocket.accept(pair.listener) == nil)
    }

    @Test func truncationIsReportedAndEndOfStreamIsSeen() throws {
        let pair = try Pair()
        #expect(try LocalSocket.send(pair.client, [UInt8](repeating: 7, count: 100)))
        var small = [UInt8](repeating: 0, count: 10)
        #expect(try LocalSocket.receive(pair.server, into: &small) == .record(count: 10, truncated: true))
        shutdown(pair.client.rawValue, Int32(SHUT_WR))
        #expect(try LocalSocket.receive(pair.server, into: &small) == .endOfStream)
    }

    @Test func peerCredentialsNameThisProcess() throws {
        let pair = try Pair()
        let peer = try LocalSocket.peerCredentials(pair.server)
        #expect(peer.pid == getpid())
        #expect(peer.uid == getuid())
    }

    @Test func errorsNameTheCall() throws {
        let fd = try LocalSocket.make(.seqPacket)
        #expect(throws: SystemCallError(call: "connect(/nonexistent/x.sock)", errno: .noSuchFileOrDirectory)) {
            try LocalSocket.connect(fd, path: "/nonexistent/x.sock")
        }
        let long = "/tmp/" + String(repeating: "x", count: LocalSocket.maximumPathLength)
        #expect(throws: SystemCallError(call: "bind(\(long))", errno: .fileNameTooLong)) {
            try LocalSocket.bind(fd, path: long)
        }
    }

    @Test func abstractDatagrams() throws {
        let name = "portd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let receiver = try LocalSocket.make(.datagram)
        try LocalSocket.bind(receiver, abstractName: name)
        let sender = try LocalSocket.make(.datagram)
        #expect(try LocalSocket.connect(sender, abstractName: name) == .connected)
        #expect(try LocalSocket.send(sender, Array("READY=1".utf8)))
        #expect(try LocalSocket.wait(receiver, for: .readable, timeout: .seconds(5)).contains(.readable))
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(try LocalSocket.receive(receiver, into: &buffer) == .record(count: 7, truncated: false))
        #expect(try LocalSocket.wait(receiver, for: .readable, timeout: .zero).isEmpty)
    }
}
