// Test support for run-loop tests: threads that own loops, a thread-safe
// recorder, and descriptors to make ready.

import Foundation
import Glibc
import Synchronization
import PortRunLoop
import PortSystem

/// Appends strings from any thread.
package final class Recorder: Sendable {
    private let items = Mutex<[String]>([])
    package init() {}
    package func add(_ s: String) { items.withLock { $0.append(s) } }
    package var all: [String] { items.withLock { $0 } }
    package func count(of s: String) -> Int { all.filter { $0 == s }.count }
}

/// A thread that owns a run loop. `start` runs `body` on it; `join` waits.
package final class LoopThread: @unchecked Sendable {
    // Safe to share: `loop` is written once on the new thread before
    // `ready.signal()` and read only after `ready.wait()`; `finished` is a
    // Completion (its own lock).
    package private(set) var loop: PCRunLoop!
    private let ready = Completion()
    private let finished = Completion()
    private let proceed = Completion()
    private let body: @Sendable (PCRunLoop) -> Void

    /// Creates the thread and its loop; `body` runs after `go()`.
    package init(_ body: @escaping @Sendable (PCRunLoop) -> Void) {
        self.body = body
        let t = Thread { [self] in
            self.loop = PCRunLoop.current
            self.ready.signal()
            self.proceed.wait()
            self.body(self.loop)
            self.finished.signal()
        }
        t.start()
        ready.wait()
    }

    package func go() { proceed.signal() }

    package func join() { finished.wait() }

    /// Runs `body` on a new loop thread and waits for it.
    package static func run(_ body: @escaping @Sendable (PCRunLoop) -> Void) {
        let t = LoopThread(body)
        t.go()
        t.join()
    }
}

/// An eventfd to stand for a port: `makeReady()` makes it readable.
package final class ReadyFD: Sendable {
    /// Shared with the sources that watch it.
    package let fd: SharedDescriptor
    package init() throws { fd = SharedDescriptor(try EventFD.create()) }
    package func makeReady() { try! EventFD.signal(fd.descriptor) }
    @discardableResult package func drain() -> Bool { try! EventFD.drain(fd.descriptor) }
}

/// Records every activity of `mode` under `name`.
package func recordActivities(_ loop: PCRunLoop, _ mode: PCRunLoop.Mode, _ r: Recorder, prefix: String = "") -> RunLoopObserver {
    let o = RunLoopObserver(activities: .all) { _, a in r.add(prefix + a.description) }
    loop.add(o, forMode: mode)
    return o
}
