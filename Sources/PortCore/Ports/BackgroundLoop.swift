// BackgroundLoop: one run-loop thread per process, started on first use, that
// serves ports and replies for Swift concurrency (PCPort.messages, the async
// SendRight.request). One thread for all of them, never one per port.

import Foundation

final class BackgroundLoop: Sendable {
    static let shared = BackgroundLoop()
    let loop: PCRunLoop

    private init() {
        let ready = Completion()
        let box = LoopBox()
        let thread = Thread {
            let loop = PCRunLoop.current
            box.loop = loop
            // Keeps the mode non-empty, so the loop never finishes.
            loop.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)
            ready.signal()
            while true { loop.run() }
        }
        thread.name = "PortCore.background"
        thread.start()
        ready.wait()
        loop = box.loop!
    }

    private final class LoopBox: @unchecked Sendable {
        // Safe to share: written once on the new thread before
        // `ready.signal()`, read once after `ready.wait()`.
        var loop: PCRunLoop?
    }
}
