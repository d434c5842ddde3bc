// OwnerQueueTests: handing a name down its queue is bounded per pass of
// portd's loop (issue 26, item 2). A released name went to each queued
// owner in turn, all in the pass of the RELEASE: for a queue of owners
// whose notification ports were dead, portd made a listening socket, failed
// a send and unlinked it for every one of them before serving anyone else.
// Checked by counting, not timing: the control port reads one record of a
// connection a pass (NameServer.controlRecordsPerPass), so an OWNER sent
// right behind the RELEASE on the same connection is answered in the next
// pass, and its queue_length says how much of the queue was walked in
// between: at most two passes' share (NameServer.handoversPerPass), not the
// whole queue. The rest is walked in later passes: a live queued owner
// behind the dead ones gets NAME_ACQUIRED.
//
// And a notification port whose receiver is already gone is refused when
// it is given (bad-request): before, portd took it and queued its client.

import Foundation
import Glibc
import Testing

import PortCore
import PortTestSupport
@testable import PortDaemon

@Suite struct OwnerQueueTests {
    /// `script` run by python3 with the reference client importable (as
    /// root, with descriptors to spare).
    static func python(_ script: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(
            executable: "/usr/bin/prlimit",
            arguments: ["--nofile=4096:4096", "/usr/bin/python3", "-c", script, SourceTree.path("examples")] + arguments,
            environment: ChildProcess.cleanEnvironment())
    }

    @Test func aReleasedNameIsHandedDownItsQueueAShareAPass() throws {
        let portd = try DaemonProcess.started()
        let queued = 200
        let child = try Self.python(
            """
            import sys
            sys.path.insert(0, sys.argv[1])
            import portd_client as pc
            path, name, n = sys.argv[2], "org.example.queue", int(sys.argv[3])
            owner = pc.Client(path)
            owner.register(name)
            waiting = []
            for _ in range(n):
                c = pc.Client(path)
                r = c.register(name, reply_port=True)
                assert r.result == "queued", r
                r.events.sock.close()  # its receiver goes once it is queued
                waiting.append(c)
            last = pc.Client(path)  # behind them all, and listening
            r = last.register(name, reply_port=True)
            assert r.result == "queued", r
            released = owner.submit_release(name)
            asked = owner.submit(pc.OWNER, [("name", name)])
            released.result()
            try:
                print("queue_length", asked.result().get("queue_length"), flush=True)
            except pc.PortdError as e:
                print(e.error, flush=True)
            event = r.events.receive(timeout=20)
            print("last:", type(event).__name__, getattr(event, "name", None), flush=True)
            """, [portd.socketPath, "\(queued)"])
        #expect(try child.waitForExit() == 0, "\(child.standardError)")
        let lines = child.standardOutput.split(separator: "\n")
        let words = lines.first?.split(separator: " ") ?? []
        try #require(words.first == "queue_length", "the queue was walked to its end: \(child.standardOutput)")
        let left = Int(words.last ?? "") ?? -1
        #expect(left >= queued - 2 * NameServer.handoversPerPass, "queue_length \(left)")
        // The rest of the queue is walked in later passes: the live owner
        // behind the dead ones gets the name.
        #expect(lines.last == "last: NameAcquired org.example.queue", "\(child.standardOutput)")
        #expect(try portd.stop() == 0)
    }

    @Test func aNotificationPortWhoseReceiverIsGoneIsRefused() throws {
        let portd = try DaemonProcess.started()
        let child = try Self.python(
            """
            import sys
            sys.path.insert(0, sys.argv[1])
            import portd_client as pc
            c = pc.Client(sys.argv[2])
            events = pc.EventPort()
            events.sock.close()
            try:
                r = c.register("org.example.dead", reply_port=events)
                print("accepted", r.result, flush=True)
            except pc.PortdError as e:
                print(e.error, e.message, sep="\\t", flush=True)
            """, [portd.socketPath])
        #expect(try child.waitForExit() == 0, "\(child.standardError)")
        let fields = child.standardOutput.split(separator: "\t").map(String.init)
        #expect(fields.first == "bad-request", "\(child.standardOutput)")
        #expect(fields.dropFirst().first?.contains("receiver is gone") == true, "\(child.standardOutput)")
        #expect(try portd.stop() == 0)
    }
}
