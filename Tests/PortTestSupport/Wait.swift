// Waiting for a descriptor in tests: poll(2) with a generous timeout, so a
// test waits for the event itself, never for a guessed time.

import Glibc
import PortSystem

/// True when `fd` became readable (or hung up) within the timeout.
package func waitReadable(_ fd: Int32, timeoutMilliseconds: Int32 = 20_000) -> Bool {
    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    while true {
        let r = poll(&p, 1, timeoutMilliseconds)
        if r == -1 && errno == EINTR { continue }
        return r == 1
    }
}

/// FD_CLOEXEC is set on `fd`.
package func isCloseOnExec(_ fd: Int32) -> Bool {
    fcntl(fd, F_GETFD) & FD_CLOEXEC != 0
}

/// O_NONBLOCK is set on `fd`.
package func isNonBlocking(_ fd: Int32) -> Bool {
    fcntl(fd, F_GETFL) & O_NONBLOCK != 0
}

/// True when `fd` became readable (or hung up) within the timeout.
package func waitReadable(_ fd: borrowing OwnedDescriptor, timeoutMilliseconds: Int32 = 20_000) -> Bool {
    waitReadable(fd.rawValue, timeoutMilliseconds: timeoutMilliseconds)
}

/// FD_CLOEXEC is set on `fd`.
package func isCloseOnExec(_ fd: borrowing OwnedDescriptor) -> Bool { isCloseOnExec(fd.rawValue) }

/// O_NONBLOCK is set on `fd`.
package func isNonBlocking(_ fd: borrowing OwnedDescriptor) -> Bool { isNonBlocking(fd.rawValue) }
