// ChildCommandTests: the two ways portctl runs other programs, with real
// processes: --exec's command per message (its environment, its standard
// input, its output as the reply, a command that does not read its input,
// a large input that must not deadlock against the output), and
// register's socket-activation handoff to a Python child that takes its
// listening socket from descriptor 3 and checks LISTEN_PID/LISTEN_FDS/
// LISTEN_FDNAMES as sd_listen_fds(3) would.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import portctl
import PortActivation

@Suite struct MessageCommandTests {
    /// portctl's main ignores SIGPIPE so that a command that stops reading
    /// is an EPIPE value; the test process must do the same.
    init() { Glibc.signal(SIGPIPE, SIG_IGN) }

    @Test func environmentDescribesTheMessage() throws {
        let right = try PCPort().makeSendRight()
        var m = PCPortMessage(msgid: 9, components: [.data([1, 2, 3]), .port(right), .data([])])
        m.replyPort = right
        #expect(
            MessageCommand.variables(for: m, name: "svc") == [
                "PORTCTL_NAME=svc", "PORTCTL_MSGID=9", "PORTCTL_SENDER_PID=", "PORTCTL_SENDER_UID=",
                "PORTCTL_SENDER_GID=", "PORTCTL_ORIGIN=", "PORTCTL_REPLY=1", "PORTCTL_COMPONENTS=3",
                "PORTCTL_LENGTHS=3 port 0",
            ])
        #expect(
            MessageCommand.environment(base: ["A=1", "PORTCTL_MSGID=1", "LISTEN_FDS=2"], adding: ["B=2"]) == ["A=1", "B=2"])
    }

    @Test func stdinIsTheDataAndStdoutTheReply() throws {
        let m = PCPortMessage(msgid: 5, components: [.data(Array("ab".utf8)), .data([0, 0x0a]), .data(Array("c".utf8))])
        let command = MessageCommand(command: #"printf '%s|' "$PORTCTL_MSGID" "$PORTCTL_LENGTHS"; od -An -c"#, name: "svc")
        let (out, ended) = try command.run(for: m, captureOutput: true)
        #expect(ended == .exited(0))
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.hasPrefix("5|2 2 1|"))
        #expect(text.split(separator: "|").last!.split(separator: " ") == ["a", "b", "\\0", "\\n", "c\n"])
    }

    @Test func aCommandThatIgnoresItsInputAndFails() throws {
        let big = PCPortMessage(msgid: 1, components: [.data([UInt8](repeating: 7, count: 1 << 20))])
        let (out, ended) = try MessageCommand(command: "echo early; exit 3", name: "svc").run(for: big, captureOutput: true)
        #expect(out == Array("early\n".utf8))
        #expect(ended == .exited(3))
    }

    @Test func largeInputAndOutputDoNotDeadlock() throws {
        // 8 MiB through `cat`: both pipes fill many times over.
        let payload = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let shared = try SharedMemory(copying: payload)
        let m = PCPortMessage(msgid: 1, components: [.sharedMemory(shared)])
        let (out, ended) = try MessageCommand(command: "cat", name: "svc").run(for: m, captureOutput: true)
        #expect(ended == .exited(0))
        #expect(out.count == payload.count)
        #expect(out == payload)
    }
}

@Suite struct SocketActivationTests {
    static let child = #"""
        import os, socket, sys
        assert os.environ["LISTEN_PID"] == str(os.getpid()), (os.environ.get("LISTEN_PID"), os.getpid())
        assert os.environ["LISTEN_FDS"] == "1"
        assert os.environ["LISTEN_FDNAMES"] == "svc"
        assert os.environ["EXTRA"] == "yes"
        s = socket.socket(fileno=3)
        assert s.type == socket.SOCK_SEQPACKET and s.getblocking()
        try:
            os.fstat(4)
            sys.exit("descriptor 4 leaked into the child")
        except OSError:
            pass
        c, _ = s.accept()
        print(c.recv(100).decode(), sys.argv[1], flush=True)
        sys.exit(int(sys.argv[2]))
        """#

    @Test func pythonTakesItsSocketFromDescriptorThree() throws {
        let path = "/tmp/portctl-activation-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let listening = try UnixSocket.makeSocket()
        try UnixSocket.bind(listening, to: UnixSocketAddress(path: path))
        try UnixSocket.listen(listening)
        // Something is already waiting in the backlog when the child starts.
        let client = try UnixSocket.makeSocket()
        _ = try UnixSocket.connect(client, to: UnixSocketAddress(path: path))
        #expect(try LocalSocket.send(client, Array("hello".utf8)))

        let pipe = try Pipe.make()
        let read = pipe.read
        let write = pipe.write
        let saved = dup(1)
        dup2(write.rawValue, 1)  // the child's standard output is inherited from ours
        write.close()
        let portd = try UnixSocket.makePair()  // stands for the connection to portd, which stays up
        let ended = try SocketActivation.run(
            ["python3", "-c", Self.child, "arg", "4"], listening: listening, name: "svc", extraEnvironment: ["EXTRA=yes"],
            portd: portd.first
        ).termination
        dup2(saved, 1)
        close(saved)
        let printed = String(decoding: try Descriptor.readAll(read), as: UTF8.self)
        #expect(ended == .exited(4), "child printed: \(printed)")
        #expect(printed == "hello arg\n")
    }

    /// portd went away (its connection hung up): the command is sent
    /// SIGTERM and waited for, and the ending says why.
    @Test func theCommandIsStoppedWhenPortdGoesAway() throws {
        let listening = try UnixSocket.makeSocket()
        let pair = try UnixSocket.makePair()
        let portd = pair.first
        pair.second.close()  // portd is gone before the command even runs
        let ended = try SocketActivation.run(["sleep", "60"], listening: listening, name: "n", portd: portd)
        #expect(ended.portdWentAway)
        #expect(ended.termination == .signaled(SIGTERM))
    }

    @Test func wrapperArgumentsAndEnvironment() {
        #expect(SocketActivationLaunch.arguments(for: ["prog", "a b"]) == ["/bin/sh", "-c", SocketActivationLaunch.listenPIDWrapper, "prog", "a b"])
        #expect(
            SocketActivationLaunch.environment(base: ["LISTEN_PID=1", "LISTEN_FDS=9", "HOME=/h"], name: "n") == [
                "HOME=/h", "LISTEN_FDS=1", "LISTEN_FDNAMES=n",
            ])
    }

    @Test func aMissingProgramIs127() throws {
        let listening = try UnixSocket.makeSocket()
        let pipe = try Pipe.make()
        let write = pipe.write
        let saved = dup(2)
        dup2(write.rawValue, 2)  // keep the shell's "not found" out of the test log
        write.close()
        let portd = try UnixSocket.makePair()
        let ended = try SocketActivation.run(["/nonexistent/portctl-test"], listening: listening, name: "n", portd: portd.first)
            .termination
        dup2(saved, 2)
        close(saved)
        #expect(ended == .exited(127))
    }
}
