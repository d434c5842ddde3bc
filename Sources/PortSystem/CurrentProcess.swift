// CurrentProcess: the calling process itself: its ids, its environment, its
// signal dispositions and its standard error. The executables' process
// shells (portd, portctl) use these instead of calling libc directly.
//
// Invariants: reads of the environment happen before threads start or are
// read-only (no setenv here); writes to standard error never raise SIGPIPE
// into a crash (portd ignores SIGPIPE) and never block forever on a full
// pipe (a descriptor someone set non-blocking drops the rest of the line).

import CPortSystem
import Glibc

package enum CurrentProcess {
    /// Raises the soft limit on open descriptors to the hard limit (a daemon
    /// holds one per client) and returns the new soft limit. The
    /// corresponding C functions are `getrlimit` and `setrlimit`.
    @discardableResult
    package static func raiseDescriptorLimit() throws(SystemCallError) -> UInt64 {
        var limit = rlimit()
        _ = try SystemCall.must("getrlimit(RLIMIT_NOFILE)") { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = try SystemCall.must("setrlimit(RLIMIT_NOFILE)") { setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// The soft limit on open descriptors (RLIMIT_NOFILE), or nil when it
    /// cannot be read or is unlimited. The corresponding C function is
    /// `getrlimit`.
    package static func descriptorLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max,
            limit.rlim_cur <= UInt64(Int.max)
        else { return nil }
        return Int(limit.rlim_cur)
    }

    /// The corresponding C function is `getpid`.
    package static var id: Int32 { getpid() }

    /// The real user id. The corresponding C function is `getuid`.
    package static var userID: UInt32 { getuid() }

    /// The value of an environment variable, or nil when unset. The
    /// corresponding C function is `getenv`.
    /// This host's name (the kernel's nodename). The corresponding C
    /// function is `gethostname`.
    package static func hostName() throws(SystemCallError) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        _ = try SystemCall.must("gethostname") { gethostname(&buffer, buffer.count - 1) }
        let end = buffer.firstIndex(of: 0) ?? buffer.count
        return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    package static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    /// Sets `signal` to be ignored (SIG_IGN), e.g. SIGPIPE in a daemon whose
    /// standard error may be a closed pipe. The corresponding C function is `sigaction`.
    package static func ignore(signal: Int32) throws(SystemCallError) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = SIG_IGN
        sigemptyset(&action.sa_mask)
        _ = try SystemCall.must("sigaction(\(signal))") { sigaction(signal, &action, nil) }
    }

    /// Writes all of `text` to standard error, best effort: a failed write
    /// drops the rest (there is nowhere left to report it). The corresponding
    /// C function is `write(STDERR_FILENO)`.
    package static func writeStandardError(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let result = try? bytes.withUnsafeBytes { raw in
                try SystemCall.run("write(stderr)") { write(STDERR_FILENO, raw.baseAddress, raw.count) }
            }
            guard case .done(let n)? = result, n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }

    /// Ends the process with `status`, running atexit handlers and flushing
    /// stdio. The corresponding C function is `exit`.
    package static func exit(_ status: Int32) -> Never { Glibc.exit(status) }
}

/// The standard streams: descriptors the process has from its start and
/// never closes, so they are lent, never owned.
package enum StandardStream: Sendable {
    case input, output, error

    /// The stream's descriptor number (0, 1, 2), as a child sees it too.
    package var number: Int32 {
        switch self {
        case .input: STDIN_FILENO
        case .output: STDOUT_FILENO
        case .error: STDERR_FILENO
        }
    }

    /// Lends the stream's descriptor to `body`; it stays open afterwards.
    package func withDescriptor<R: ~Copyable, E: Error>(_ body: (borrowing OwnedDescriptor) throws(E) -> R) throws(E) -> R {
        try OwnedDescriptor.lending(number, to: body)  // the process's, not ours to close
    }
}
