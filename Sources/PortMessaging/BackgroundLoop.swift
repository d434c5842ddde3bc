// BackgroundLoop: one run-loop thread per process, started on first use, that
// serves ports and replies for Swift concurrency (PCPort.messages, the async
// SendRight.request). One thread for all of them, never one per port.
//
// A plain pthread, not Foundation's Thread: PortCore does not link
// Foundation, so that a command-line tool built on it starts fast.

import PortRunLoop
import PortSystem
import PortWire

package final class BackgroundLoop: Sendable {
    package static let shared = BackgroundLoop()
    package let loop: PCRunLoop

    private init() {
        let handoff = Handoff()
        SystemThread.startDetached(backgroundLoopMain, argument: Unmanaged.passRetained(handoff).toOpaque())
        handoff.ready.wait()
        loop = handoff.loop!
    }

    /// What the new thread hands back.
    fileprivate final class Handoff: @unchecked Sendable {
        // Safe to share: `loop` is written once on the new thread before
        // `ready.signal()` and read once after `ready.wait()`.
        var loop: PCRunLoop?
        package let ready = Completion()
    }
}

/// The background thread: a C-convention function (a closure literal passed
/// to pthread_create from a main-actor context traps in Swift 6).
private func backgroundLoopMain(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let handoff = Unmanaged<BackgroundLoop.Handoff>.fromOpaque(arg!).takeRetainedValue()
    let loop = PCRunLoop.current
    // Keeps the mode non-empty, so the loop never finishes.
    loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
    handoff.loop = loop
    handoff.ready.signal()
    while true { loop.run() }
}
