// runloop-main-probe: runs PCRunLoop.main on the process's main thread (Swift
// Testing runs tests off it) and reports, one line each, that a block queued
// on DispatchQueue.main and a @MainActor task ran while the main thread was
// inside PCRunLoop.main.run(until:). Exit 0 when both ran, 1 on time-out.
// With the argument `out-of-descriptors`, the main loop's first run comes
// while the process has no descriptor left (libdispatch traps when it
// cannot make the main queue's eventfd): it must run, and a later run,
// with descriptors free again, must drain the main queue.
// With the argument `perform-selector-on-main-thread`, the main thread runs
// `while shouldKeepRunning && run(mode: .default, before: .distantFuture)`
// and another thread clears the flag with `PCRunLoop.main.perform(waitUntilDone:
// false)` (performSelectorOnMainThread:): the loop must end (exit 0), not
// sleep on until the probe's own bound (exit 1).
// RunLoopFoundationTests starts it.

import Dispatch
import Foundation
import PortRunLoop
import PortSystem

var done = 0

if CommandLine.arguments.dropFirst().first == "out-of-descriptors" {
    // The loop itself is made first: making one needs descriptors (and
    // traps without, as CFRunLoop's creation does without Mach ports).
    let loop = PCRunLoop.main
    var hoard: [Int32] = []
    while true {
        let fd = dup(0)
        if fd < 0 { break }
        hoard.append(fd)
    }
    _ = loop.runInMode(.default, timeout: .zero, returnAfterSourceHandled: true)
    for fd in hoard { close(fd) }
    print("first run out of descriptors")
}

if CommandLine.arguments.dropFirst().first == "perform-selector-on-main-thread" {
    nonisolated(unsafe) var shouldKeepRunning = true  // written by the perform, on this thread
    let theRL = PCRunLoop.main
    theRL.add(PCTimer(fireAt: .distantFuture) { _ in }, forMode: .default)  // a source to keep it running
    DispatchQueue.global().async {
        PCRunLoop.main.perform(waitUntilDone: false) {
            shouldKeepRunning = false
            print("stopRunning")
        }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + 10) {
        print("timed out")
        exit(1)
    }
    while shouldKeepRunning && theRL.run(mode: .default, before: .distantFuture) {}
    print("main loop ended")
    exit(0)
}

@MainActor func finish(_ what: String) {
    print(what)
    done += 1
    if done == 2 { exit(0) }
}

DispatchQueue.global().async {
    DispatchQueue.main.async { MainActor.assumeIsolated { finish("main queue") } }
}
Task { @MainActor in finish("main actor") }
PCRunLoop.main.run(until: .now() + .seconds(20))
print("timed out")
exit(1)
