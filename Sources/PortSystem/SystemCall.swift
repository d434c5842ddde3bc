// SystemCall: the one chokepoint every system call in PortCore goes through.
//
// Policy (SwiftNIO's): EINTR is retried; EAGAIN/EWOULDBLOCK is
// a value (`.wouldBlock`), not an error; EBADF and EFAULT are programmer
// errors and trap; everything else throws a `SystemCallError` naming the call.
// Nothing outside PortSystem reads errno. close(2) is not here: it belongs
// to OwnedDescriptor, the one owner of every descriptor.

import CPortSystem
import Glibc
import SystemPackage

/// A system call failed. `description` reads like "epoll_ctl(ADD): Bad file descriptor".
public struct SystemCallError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The call that failed, as in its man page, with a detail where useful.
    public let call: String
    /// What the kernel said.
    public let errno: Errno

    public init(call: String, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(errno.description)" }
}

/// The outcome of a non-blocking call that may have nothing to do.
@usableFromInline
package enum IOResult<T> {
    case done(T)
    case wouldBlock
}

@usableFromInline
package enum SystemCall {
    /// Runs `body` (a call returning -1 on failure) with the errno policy above.
    @inlinable @inline(__always)
    package static func run<T: FixedWidthInteger>(
        _ name: @autoclosure () -> String, _ body: () -> T
    ) throws(SystemCallError) -> IOResult<T> {
        while true {
            let r = body()
            if r != -1 { return .done(r) }
            let e = port_errno()
            switch e {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EBADF, EFAULT:
                preconditionFailure("\(name()): \(Errno(rawValue: e)) (a descriptor or buffer PortCore owns is wrong)")
            default:
                throw SystemCallError(call: name(), errno: Errno(rawValue: e))
            }
        }
    }

    /// As `run`, for calls on blocking or always-ready descriptors where
    /// EAGAIN is itself an error.
    @inlinable @inline(__always)
    package static func must<T: FixedWidthInteger>(
        _ name: @autoclosure () -> String, _ body: () -> T
    ) throws(SystemCallError) -> T {
        switch try run(name(), body) {
        case .done(let r): return r
        case .wouldBlock: throw SystemCallError(call: name(), errno: .resourceTemporarilyUnavailable)
        }
    }
}
