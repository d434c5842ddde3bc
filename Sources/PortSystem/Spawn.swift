// Spawn: starting and reaping child processes (posix_spawn(3), waitpid(2),
// kill(2)), for a tool that runs a command per message or hands a socket to
// a program the way socket activation does.
//
// Invariants: the child gets exactly the descriptors it is given (every
// descriptor PortCore creates is CLOEXEC; `Descriptors` maps child numbers
// to duplicates of ours, installed with dup2, which clears CLOEXEC on the
// copy); to make that mapping safe whatever the numbers, each duplicate is
// numbered above its target and the dup2s run in ascending target order, so
// no dup2 overwrites a duplicate still needed (each is above every target
// installed before it), and a source already at its target number still
// loses CLOEXEC. The duplicates are the table's own, closed once the child
// is started. The child
// starts with no signal blocked and SIGPIPE, SIGINT, SIGTERM, SIGHUP,
// SIGCHLD at their defaults, whatever the parent did with them.

import CPortSystem
import Glibc

package enum Spawn {
    /// How a child ended.
    package enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// The shell's convention: the exit code, or 128 + the signal.
        package var shellStatus: Int32 {
            switch self {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
        }

        package var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signaled(let signal): "killed by signal \(signal)"
            }
        }
    }

    /// A child's descriptor table beyond what it inherits: for each child
    /// descriptor number (0, 1, 2 included: an unmapped standard stream is
    /// inherited as is), a duplicate of one of ours, made when it is added
    /// and owned by the table until the child is started.
    package struct Descriptors: ~Copyable {
        /// Child numbers, in the order added; `copies` holds their sources.
        fileprivate var targets: [Int32] = []
        fileprivate var copies: OwnedDescriptors

        /// An empty table with room for `capacity` descriptors.
        package init(capacity: Int = 8) {
            copies = OwnedDescriptors(capacity: capacity)
        }

        /// Gives the child a duplicate of `descriptor` as its number
        /// `child`; the caller keeps its own.
        package mutating func insert(copyOf descriptor: borrowing OwnedDescriptor, as child: Int32) throws(SystemCallError) {
            precondition(child >= 0 && !targets.contains(child), "Spawn.Descriptors: child descriptor \(child) given twice")
            copies.append(try Descriptor.duplicate(descriptor, atLeast: child + 1))
            targets.append(child)
        }

        /// Gives the child `descriptor` as its number `child`; the caller's
        /// is gone (so that, for a pipe, the child alone holds that end).
        package mutating func insert(_ descriptor: consuming OwnedDescriptor, as child: Int32) throws(SystemCallError) {
            try insert(copyOf: descriptor, as: child)
        }
    }

    /// Starts `arguments[0]` (searched in PATH unless it holds a "/") with
    /// `arguments` and `environment` ("NAME=value" strings), giving it
    /// `descriptors`, whose duplicates are closed once it started. Returns
    /// the pid. The corresponding C function is `posix_spawnp`.
    package static func start(
        _ arguments: [String], environment: [String], descriptors: consuming Descriptors = Descriptors(capacity: 0)
    ) throws(SystemCallError) -> Int32 {
        precondition(!arguments.isEmpty, "Spawn.start needs a program")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for i in descriptors.targets.indices.sorted(by: { descriptors.targets[$0] < descriptors.targets[$1] }) {
            posix_spawn_file_actions_adddup2(&actions, descriptors.copies.number(at: i), descriptors.targets[i])
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        // posix_spawn returns the error instead of setting errno.
        let r = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        _ = consume descriptors  // the child has its copies; ours close now
        if r != 0 { throw SystemCallError(call: "posix_spawnp(\(arguments[0]))", errno: .init(rawValue: r)) }
        return pid
    }

    /// Waits for `pid` to end (blocking), or, with `block` false, returns
    /// nil when it still runs. The corresponding C function is `waitpid`.
    package static func wait(_ pid: Int32, block: Bool = true) throws(SystemCallError) -> Termination? {
        var status: Int32 = 0
        let r = try SystemCall.must("waitpid(\(pid))") { waitpid(pid, &status, block ? 0 : WNOHANG) }
        if r == 0 { return nil }
        // WIFSIGNALED / WTERMSIG / WEXITSTATUS, which Swift does not import.
        let signal = status & 0x7f
        return signal != 0 ? .signaled(signal) : .exited((status >> 8) & 0xff)
    }

    /// A descriptor that polls readable once `pid` (our child) has exited,
    /// whatever thread its SIGCHLD goes to; close it after reaping. The
    /// corresponding C function is `pidfd_open` (Linux 5.3).
    package static func exitDescriptor(_ pid: Int32) throws(SystemCallError) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try SystemCall.must("pidfd_open(\(pid))") { port_pidfd_open(pid) })
    }

    /// Sends `signal` to `pid`; a process that is already gone is not an
    /// error. The corresponding C function is `kill`.
    package static func signal(_ pid: Int32, _ signal: Int32) throws(SystemCallError) {
        do {
            _ = try SystemCall.must("kill(\(pid), \(signal))") { kill(pid, signal) }
        } catch where error.errno == .noSuchProcess {
        }
    }

    /// The environment of this process, as "NAME=value" strings.
    package static var currentEnvironment: [String] {
        var result: [String] = []
        var p = environ
        while let entry = p.pointee {
            result.append(String(cString: entry))
            p += 1
        }
        return result
    }
}
