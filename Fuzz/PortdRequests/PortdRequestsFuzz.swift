// PortdRequestsFuzz: the fuzz target of portd's request handling. One input
// is a session of several fake clients against a fresh, real name server
// (PortDaemon's NameServerHarness: NameServerRequest parsing, RequestAccess,
// NameRegistry, the consequences), with no control connection: each record
// is decoded as portd's control port decodes it (WireDecoder, the control
// port's limits) and handed to the name server as the port would hand it.
//
// Input: byte 0 chooses the instance (bit 0: the system instance, else a
// per-user one serving this process's uid) and the limits (bit 1: small
// ones, so that `limit` refusals are reached). Then operations until the
// input ends, each an op byte:
//   - op & 0xC0 == 0xC0: client (op & 3) hangs up (its connection closes;
//     its next record comes on a new connection);
//   - otherwise a record from client (op & 3), with (op >> 2) & 3
//     descriptors (each a connected SOCK_SEQPACKET socket of this process),
//     sent by the connection's maker (bit 5 clear) or by another uid that
//     was handed the connection (bit 5 set); then a 2-byte little-endian
//     length and that many bytes of record.
// Clients: 0 and 1 are this process's uid (two pids), 2 is uid 1000, 3 is
// uid 65534. A record that does not decode closes its client's connection,
// as the port does.
//
// What must hold for every input (a violation traps): nothing in the name
// server traps or touches freed memory (AddressSanitizer); after the
// session the server stops and every descriptor it held is closed (the
// process has exactly the descriptors it had before the session).

import PortCore
import PortDaemon
import PortSystem

enum PortdRequestsFuzz {
    /// A fake client: who made its connection, and the connection.
    private final class Client {
        let credentials: Credentials
        var connectionID: UInt64
        /// portd's end of the connection (the one-shot reply right of a
        /// request) and the client's.
        var portdEnd: SharedDescriptor
        var clientEnd: SharedDescriptor

        init(credentials: Credentials, connectionID: UInt64) throws(SystemCallError) {
            self.credentials = credentials
            self.connectionID = connectionID
            let pair = try UnixSocket.makePair()
            portdEnd = SharedDescriptor(pair.first)
            clientEnd = SharedDescriptor(pair.second)
        }
    }

    // Used on the fuzzing thread only (libFuzzer and the replay call `run`
    // from one thread).
    nonisolated(unsafe) private static var prepared = false
    /// Replay with --trace: each request and the first word of its reply on standard output.
    nonisolated(unsafe) static var trace = false

    /// What lives as long as the process, made once, before the first input
    /// (libFuzzer: LLVMFuzzerInitialize): the run loop.
    static func prepare() {
        guard !prepared else { return }
        prepared = true
        // A weak reference
        // to it (a timer's attachment holds one) allocates its side table
        // once, for the life of the process; made here, outside any input,
        // because LeakSanitizer cannot see the tagged pointer to it and
        // would report it as a leak of the input that made it.
        weak let loop = PCRunLoop.current
        precondition(loop != nil)
    }

    /// A private directory for the name server's files during one input
    /// (removed after it).
    private static func makeDirectory() -> String {
        prepare()
        let path = "/tmp/portd-fuzz-\(CurrentProcess.id)"
        do {
            _ = try FileSystem.makeDirectory(path, permissions: 0o700)
        } catch {
            preconditionFailure("cannot make \(path): \(error)")
        }
        return path
    }

    private static func openDescriptors() -> Int {
        ((try? FileSystem.entries(ofDirectory: "/proc/self/fd")) ?? nil)?.count ?? 0
    }

    /// Runs the session `input`; with `checkDescriptors`, checks that it
    /// left no descriptor open (meaningless where other threads open and
    /// close descriptors meanwhile, as in a test run).
    static func run(_ input: UnsafeRawBufferPointer, checkDescriptors: Bool = true) {
        guard let config = input.first else { return }
        let dir = makeDirectory()
        let descriptorsBefore = openDescriptors()
        defer { _ = try? FileSystem.removeDirectory(dir) }
        let me = CurrentProcess.id
        let myUID = CurrentProcess.userID
        do {
            let server = try NameServerHarness(
                socketPath: "\(dir)/portd.sock", onlyUID: config & 1 == 0 ? myUID : nil, smallLimits: config & 2 != 0,
                loop: PCRunLoop.current)
            try session(input.dropFirst(), server: server, identities: [
                Credentials(pid: me, uid: myUID, gid: myUID),
                Credentials(pid: me &+ 1, uid: myUID, gid: myUID),
                Credentials(pid: me &+ 2, uid: 1000, gid: 1000),
                Credentials(pid: me &+ 3, uid: 65534, gid: 65534),
            ])
            server.stop()
        } catch {
            preconditionFailure("the harness failed: \(error)")
        }
        let now = openDescriptors()
        precondition(!checkDescriptors || now == descriptorsBefore, "descriptors leaked: \(now) open, \(descriptorsBefore) before")
    }

    private static func session(
        _ bytes: Slice<UnsafeRawBufferPointer>, server: NameServerHarness, identities: [Credentials]
    ) throws {
        var nextConnection: UInt64 = 1
        var clients: [Client] = []
        for identity in identities {
            clients.append(try Client(credentials: identity, connectionID: nextConnection))
            nextConnection += 1
        }
        var at = bytes.startIndex
        let limits = NameServerHarness.controlPortLimits
        while at < bytes.endIndex {
            let op = bytes[at]
            at += 1
            let client = clients[Int(op & 3)]
            if op & 0xC0 == 0xC0 {
                try hangUp(client, server, &nextConnection)
                continue
            }
            guard bytes.endIndex - at >= 2 else { return }
            let length = min(Int(bytes[at]) | Int(bytes[at + 1]) << 8, bytes.endIndex - at - 2)
            at += 2
            let record = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + length)])
            at += length

            var descriptors: [SendRight] = []
            for _ in 0..<Int((op >> 2) & 3) {
                let pair = try UnixSocket.makePair()
                descriptors.append(SendRight(descriptor: pair.first))  // pair.second, the far end, closes here
            }
            guard let message = decode(record, descriptors: descriptors, limits: limits) else {
                try hangUp(client, server, &nextConnection)  // the port drops a connection that sent a malformed record
                continue
            }
            var sender = client.credentials
            if op & 0x20 != 0 { sender = Credentials(pid: sender.pid &+ 100, uid: sender.uid &+ 1, gid: sender.gid &+ 1) }
            deliver(message.message, replyExpected: message.replyExpected, from: client, sender: sender, to: server)
        }
    }

    /// The message a port makes of `record`, as MessageTransport.receive does; nil when it is malformed.
    private static func decode(
        _ record: UnsafeRawBufferPointer, descriptors: [SendRight], limits: PortLimits
    ) -> (message: PCPortMessage, replyExpected: Bool)? {
        guard let view = try? WireDecoder.decode(record, descriptorCount: descriptors.count, limits: limits) else {
            return nil
        }
        var components: [PCPortMessage.Component] = []
        for c in view.components {
            switch c {
            case .data(let bytes): components.append(.data(Array(bytes)))
            case .port(let i): components.append(.port(descriptors[i]))
            case .largeData: return nil  // the control port's limits allow none
            }
        }
        let replyPort = view.replyPortDescriptorIndex.map { descriptors[$0] }
        return (PCPortMessage(msgid: view.msgid, components: components, replyPort: replyPort),
                view.flags.contains(.replyExpected))
    }

    /// Hands `message` to the server as PCPort does (deliverRequest for a
    /// request: the passed reply port kept aside, the connection as the
    /// one-shot reply right).
    private static func deliver(
        _ received: PCPortMessage, replyExpected: Bool, from client: Client, sender: Credentials, to server: NameServerHarness
    ) {
        var message = received
        message.setReceived(
            sender: sender, connectionID: client.connectionID, connectionCredentials: client.credentials,
            passedReplyPort: replyExpected ? received.replyPort : nil, expectsReply: replyExpected)
        if replyExpected {
            message.replyPort = SendRight(
                connection: client.portdEnd, oneShotReply: true, limits: NameServerHarness.controlPortLimits)
        }
        let reply = server.handle(message)
        if trace {
            let request = received.components.map { $0.string ?? "<port>" }
            let answer = reply.map { $0.components.map { $0.string ?? "<port>" } } ?? []
            print("client \(client.connectionID) uid \(sender.uid): \(String(received.msgid, radix: 16)) \(request) -> \(answer)")
        }
    }

    private static func hangUp(_ client: Client, _ server: NameServerHarness, _ next: inout UInt64) throws {
        server.clientGone(client.connectionID)
        let pair = try UnixSocket.makePair()
        client.portdEnd = SharedDescriptor(pair.first)
        client.clientEnd = SharedDescriptor(pair.second)
        client.connectionID = next
        next += 1
    }
}
