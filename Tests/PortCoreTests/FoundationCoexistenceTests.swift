// A file that imports both Foundation and PortCore must compile without
// qualifying names: PortCore prefixes exactly the names Foundation already
// declares (RunLoop, Timer, Port, PortMessage, PortDelegate, MessagePort)
// with `PC`. This file uses every public PortCore type unqualified, next to
// Foundation's namesakes.

import Foundation
import PortCore
import Testing

@Suite struct FoundationCoexistenceTests {
    @Test func namesDoNotCollide() throws {
        let loop: PCRunLoop = PCRunLoop.current
        let foundationLoop: RunLoop = RunLoop.current
        let mode: PCRunLoop.Mode = .default
        let foundationMode: RunLoop.Mode = .default
        let timer = PCTimer(fireAt: .distantFuture) { _ in }
        let foundationTimer = Timer(timeInterval: 1, repeats: false) { _ in }
        let source = RunLoopSource { _ in }
        let observer = RunLoopObserver(activities: .all) { _, _ in }
        let instant: MonotonicInstant = .now()
        let clock: any RunLoopClock = ManualClock()
        let activity: PCRunLoop.Activity = .entry
        let result: PCRunLoop.RunResult = .finished
        _ = (foundationLoop, foundationMode, foundationTimer, instant, clock, activity, result)
        loop.add(timer, forMode: mode)
        loop.add(source, forMode: mode)
        loop.add(observer, forMode: mode)
        timer.invalidate()
        source.invalidate()
        observer.invalidate()
        #expect(loop.run(mode: mode, timeout: .zero) == .finished)
    }
}
