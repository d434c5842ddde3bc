// runloop-main-probe: runs PCRunLoop.main on the process's main thread (Swift
// Testing runs tests off it) and reports, one line each, that a block queued
// on DispatchQueue.main and a @MainActor task ran while the main thread was
// inside PCRunLoop.main.run(until:). Exit 0 when both ran, 1 on time-out.
// RunLoopFoundationTests starts it.

import Dispatch
import Foundation
import PortRunLoop
import PortSystem

var done = 0

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
