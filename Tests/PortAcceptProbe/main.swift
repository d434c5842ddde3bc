// port-accept-probe: a port whose listening socket is replaced (its name
// registered again, or a new portd) around a pause of accepting for lack of
// descriptors (EMFILE), in a process of its own, since it uses up every
// descriptor it may open. PortAcceptTests (PortMessagingTests) starts it
// with a directory for its sockets and a scenario:
//
//   replaced-while-paused   accepting pauses (EMFILE), then the listener is
//                           replaced: the new one stays out of the loop until
//                           a connection closes, then the old one's backlog
//                           is accepted and served and the old socket closes,
//                           and the new one accepts.
//   paused-while-draining   the listener is replaced with a connection still
//                           waiting on the old one, then accepting that one
//                           fails (EMFILE): it pauses instead of dropping the
//                           old socket with its backlog, which is accepted
//                           and served once a connection closes.
//   paused-without-connections
//                           accepting pauses (EMFILE) on a port with no
//                           connection, so none can close to resume it: the
//                           retry after PCPort.acceptRetryDelay does, once
//                           descriptors are free again.
//   read-ahead-descriptors  (started at RLIMIT_NOFILE 1024, hard 8192) 15
//                           records of 253 rights each queued behind a
//                           first one, the soft limit back at 1024 when the
//                           port reads them: the records it reads ahead
//                           stay within a quarter of the table, so every
//                           one arrives whole and no connection is closed.
//
// It prints one line per step and exits 0 when every step went as
// expected, 1 at the first that did not (the line says which).

import Glibc
import PortMessaging
import PortRunLoop
import PortSystem
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    print(
        "usage: port-accept-probe DIRECTORY replaced-while-paused|paused-while-draining|paused-without-connections|read-ahead-descriptors"
    )
    exit(2)
}
let directory = arguments[1]
let scenario = arguments[2]

func fail(_ what: String) -> Never {
    print("FAILED: \(what)")
    exit(1)
}

func step(_ what: String) { print(what) }

/// A listening socket bound at `path`.
func listeningSocket(_ path: String) -> OwnedDescriptor {
    do {
        let fd = try UnixSocket.makeSocket()
        try UnixSocket.bind(fd, to: UnixSocketAddress(path: path))
        try UnixSocket.listen(fd)
        return fd
    } catch {
        fail("listening at \(path): \(error)")
    }
}

/// A send right connected to the socket at `path` (the connection waits in
/// its backlog until the port accepts it).
func connect(_ path: String) -> SendRight {
    do {
        let fd = try UnixSocket.makeSocket()
        guard try UnixSocket.connect(fd, to: UnixSocketAddress(path: path)) == .connected else { fail("backlog of \(path) full") }
        return SendRight(descriptor: fd)
    } catch {
        fail("connecting to \(path): \(error)")
    }
}

/// Whether something still listens at `path` (ECONNREFUSED once the
/// listening socket bound there is closed).
func listens(_ path: String) -> Bool {
    do {
        let fd = try UnixSocket.makeSocket()
        _ = try UnixSocket.connect(fd, to: UnixSocketAddress(path: path))
        return true
    } catch let error as SystemCallError where error.errno == .connectionRefused {
        return false
    } catch {
        fail("probing \(path): \(error)")
    }
}

/// Every descriptor the process may still open, taken (dup of stdin).
final class Hoard {
    private var fds: [Int32] = []
    func takeAll() {
        while true {
            let fd = dup(0)
            if fd < 0 {
                guard errno == EMFILE else { fail("dup: errno \(errno)") }
                return
            }
            fds.append(fd)
        }
    }
    func release(_ n: Int = .max) {
        for _ in 0..<min(n, fds.count) { close(fds.removeLast()) }
    }
}

let received = Mutex<[UInt32]>([])
let loop = PCRunLoop.current
let port: PCPort
do {
    port = try PCPort(listeningDescriptor: listeningSocket("\(directory)/old.sock")) { message in
        received.withLock { $0.append(message.msgid) }
        return nil
    }
} catch {
    fail("port: \(error)")
}
let failures = Mutex<[String]>([])
port.onError { error in failures.withLock { $0.append("\(error)") } }
port.nameListeningSocket("svc")  // the name a new socket for "svc" replaces
do { try port.schedule(in: loop, forMode: .default) } catch { fail("schedule: \(error)") }

/// Runs the loop until `done` holds (10 s at most, then fails with `what`).
func run(until what: String, _ done: () -> Bool) {
    let deadline = MonotonicInstant.now() + .seconds(10)
    while !done() {
        if MonotonicInstant.now() >= deadline { fail("timed out waiting: \(what)") }
        _ = loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
    }
}

/// Runs one pass that handles the listener: it accepts, or pauses.
func runOnePass(_ what: String) {
    if loop.runInMode(.default, timeout: .seconds(10), returnAfterSourceHandled: true) != .handledSource {
        fail("no source handled: \(what)")
    }
}

func send(_ msgid: UInt32, on right: SendRight) {
    do {
        guard try right.send(PCPortMessage(msgid: msgid), timeout: .seconds(5)) == .sent else { fail("send \(msgid)") }
    } catch {
        fail("send \(msgid): \(error)")
    }
}

/// Replaces the port's listening socket by a new one at new.sock.
func replaceListener() {
    let named: PCPort
    do { named = try PCPort(listeningDescriptor: listeningSocket("\(directory)/new.sock")) } catch { fail("new port: \(error)") }
    do { try port.adoptListeningSocket(of: named, name: "svc") } catch { fail("adopt: \(error)") }
}

if scenario == "read-ahead-descriptors" {
    /// Sets the soft RLIMIT_NOFILE.
    func setSoftLimit(_ n: rlim_t) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { fail("getrlimit") }
        limit.rlim_cur = n
        guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { fail("setrlimit \(n): errno \(errno)") }
    }
    _ = loop.runInMode(.default, timeout: .zero, returnAfterSourceHandled: true)
    // Room to send them: descriptors in flight count against the sender's limit.
    setSoftLimit(8192)
    let right: SendRight
    let pair: UnixSocket.Pair
    do {
        right = try port.makeSendRight()
        pair = try UnixSocket.makePair()
    } catch {
        fail("right: \(error)")
    }
    send(0, on: right)
    for msgid in UInt32(1)...15 {
        var rights: [PCPortMessage.Component] = []
        do {
            for _ in 0..<253 { rights.append(.port(SendRight(descriptor: try Descriptor.duplicate(pair.first)))) }
            guard try right.send(PCPortMessage(msgid: msgid, components: rights), timeout: .seconds(5)) == .sent else {
                fail("send \(msgid)")
            }
        } catch {
            fail("send \(msgid): \(error)")
        }
    }
    step("15 records of 253 rights queued")
    setSoftLimit(1024)
    run(until: "16 records served") { received.withLock { $0.count } == 16 || !failures.withLock { $0.isEmpty } }
    let errors = failures.withLock { $0 }
    guard errors.isEmpty else { fail("port errors: \(errors), after \(received.withLock { $0.count }) records") }
    guard received.withLock({ $0 }) == Array(0...15) else { fail("served out of order: \(received.withLock { $0 })") }
    step("every record served whole")
    withExtendedLifetime(right) {}
    port.invalidate()
    step("done")
    exit(0)
}

if scenario == "paused-without-connections" {
    let waiting = connect("\(directory)/old.sock")
    send(1, on: waiting)
    let hoard = Hoard()
    hoard.takeAll()
    runOnePass("the failed accept")
    guard port.connectionCount == 0 else { fail("accepted with no descriptor left") }
    step("accepting paused")
    hoard.release()
    run(until: "the connection accepted and served (message 1) with none closed") {
        received.withLock { $0.contains(1) }
    }
    step("accepted after the retry")
    let errors = failures.withLock { $0 }
    guard errors.isEmpty else { fail("port errors: \(errors)") }
    withExtendedLifetime(waiting) {}
    port.invalidate()
    step("done")
    exit(0)
}

// A first connection, accepted and kept: closing it later resumes accepting.
var keeper: SendRight? = connect("\(directory)/old.sock")
run(until: "the first connection accepted") { port.connectionCount == 1 }
step("first connection accepted")
// A connection in the old socket's backlog, with a message.
let early = connect("\(directory)/old.sock")
send(1, on: early)
let hoard = Hoard()

switch scenario {
case "replaced-while-paused":
    hoard.takeAll()
    runOnePass("the failed accept")
    guard port.connectionCount == 1 else { fail("accepted with no descriptor left") }
    step("accepting paused")
    hoard.release(1)  // room for the new listening socket
    replaceListener()
    step("listener replaced while paused")
case "paused-while-draining":
    replaceListener()
    step("listener replaced with a connection waiting on the old one")
    hoard.takeAll()
    runOnePass("the failed accept on the old socket")
    guard port.connectionCount == 1 else { fail("accepted with no descriptor left") }
    step("accepting paused")
default:
    fail("unknown scenario \(scenario)")
}

hoard.release()
// A connection to the new socket, with a message.
let late = connect("\(directory)/new.sock")
send(2, on: late)
// A connection closes: accepting resumes, on the old socket and the new.
keeper?.invalidate()
keeper = nil
run(until: "the old socket's backlog served (message 1)") { received.withLock { $0.contains(1) } }
step("old backlog served")
run(until: "the new socket's connection served (message 2)") { received.withLock { $0.contains(2) } }
step("new listener accepted")
// Its backlog accepted, the old socket closed: nothing listens there.
guard !listens("\(directory)/old.sock") else { fail("the old listening socket is still open") }
step("old socket closed")
guard listens("\(directory)/new.sock") else { fail("the new listening socket is closed") }
let errors = failures.withLock { $0 }
guard errors.isEmpty else { fail("port errors: \(errors)") }
withExtendedLifetime((early, late)) {}
port.invalidate()
step("done")
exit(0)
