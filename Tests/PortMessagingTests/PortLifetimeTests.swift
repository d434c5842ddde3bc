// Lifetimes as Apple's: a run loop retains the ports added to it (NSRunLoop
// addPort:forMode:), a scheduled port is a source even before any right to
// it exists (so run() blocks: the keep-alive thread), and releasing the last
// Swift reference to a scheduled port does not invalidate it; an invalidation
// handler added to a port already invalid runs at once, as CF's does.

import Synchronization
import Testing
import PortRunLoop
import PortSystem
import PortTestSupport
@testable import PortMessaging

@Suite(.serialized) struct PortLifetimeTests {
    /// `[[NSRunLoop currentRunLoop] addPort:[NSMachPort port] forMode:NSDefaultRunLoopMode];
    /// [[NSRunLoop currentRunLoop] run];` keeps the thread in its loop, and
    /// work performed on that loop from another thread runs there.
    @Test func anAnonymousPortKeepsRunBlockingAndPerformsRun() throws {
        let waiting = Completion()
        let returned = Completion()
        let weakPort = WeakPort()
        let thread = LoopThread { loop in
            let observer = RunLoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in waiting.signal() }
            loop.add(observer, forMode: .default)
            do {
                let port = PCPort()
                weakPort.port = port
                try? loop.add(port, forMode: .default)
            }  // nobody holds the port but the loop from here
            loop.run()
            returned.signal()
        }
        thread.go()
        #expect(waiting.wait(timeout: .seconds(10)), "run() returned instead of waiting on the port")
        let ran = Completion()
        thread.loop.perform(inModes: [.default]) { ran.signal() }
        #expect(ran.wait(timeout: .seconds(10)))
        // Foundation's run() goes on after stop(); it returns once the mode
        // is empty: the port's invalidation takes the loop's last source.
        thread.loop.perform(inModes: [.default]) { weakPort.port?.invalidate() }
        thread.join()
        #expect(returned.wait(timeout: .seconds(0)))
    }

    /// Listings 3-12/3-15: once installed, the port can be freed; the loop
    /// keeps it, and messages sent to it are handled.
    @Test func aScheduledPortOutlivesItsLastReference() throws {
        let got = Completion()
        let thread = LoopThread { loop in loop.run() }
        let weakPort = WeakPort()
        let right: SendRight
        do {
            let port = PCPort { _ in
                got.signal()
                return nil
            }
            weakPort.port = port
            try thread.loop.add(port, forMode: .default)
            right = try port.makeSendRight()
        }
        #expect(weakPort.port != nil)
        thread.go()
        #expect(try right.send(PCPortMessage(msgid: 7), timeout: .seconds(5)) == .sent)
        #expect(got.wait(timeout: .seconds(10)))
        // Removing the port from its only mode lets the loop go of it.
        let removed = Completion()
        thread.loop.perform(inModes: [.default]) {
            if let p = weakPort.port { thread.loop.remove(p, forMode: .default) }
            removed.signal()
        }
        #expect(removed.wait(timeout: .seconds(10)))
        #expect(weakPort.port == nil)
        thread.join()  // the mode is empty now: run() returns
        right.invalidate()
    }

    /// Invalidating a scheduled port releases it from its loops.
    @Test func invalidatingAScheduledPortReleasesIt() throws {
        let loop = try PCRunLoop.detached()
        weak var weakPort: PCPort?
        do {
            let port = PCPort()
            weakPort = port
            try loop.add(port, forMode: .default)
            try loop.add(port, forMode: .default)  // again: once is enough
        }
        #expect(weakPort != nil)
        weakPort?.invalidate()
        #expect(weakPort == nil)
        #expect(loop.runInMode(.default, timeout: .zero) == .finished)
    }

    /// CFMessagePortSetInvalidationCallBack: "If the port is already
    /// invalid, callout is invoked immediately." A handler added after the
    /// port was invalidated (by another thread, a moment earlier) runs at
    /// once, on the calling thread; one added before runs once, at the
    /// invalidation.
    @Test func anInvalidationHandlerAddedToAnInvalidPortRunsAtOnce() {
        let port = PCPort()
        let r = Recorder()
        port.onInvalidation { r.add("before") }
        port.invalidate()
        #expect(r.all == ["before"])
        port.onInvalidation { r.add("after") }
        #expect(r.all == ["before", "after"], "a handler added to an invalid port was never called")
        port.invalidate()  // idempotent: nobody is called again
        #expect(r.all == ["before", "after"])
    }
}

/// A weak reference the test and a loop thread both look at.
final class WeakPort: @unchecked Sendable {
    // Safe to share: written before the loop thread is told to look, and
    // read by it only inside a perform the test waits for.
    weak var port: PCPort?
}
