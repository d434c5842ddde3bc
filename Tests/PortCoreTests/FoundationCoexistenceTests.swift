// A file that imports both Foundation and PortCore must compile without
// qualifying names: PortCore prefixes exactly the names Foundation already
// declares (RunLoop, Timer, Port, PortMessage, PortDelegate, MessagePort)
// with `PC`. This file uses every public PortCore type unqualified, next to
// Foundation's namesakes (the name-server client's types included).

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
        _ = (foundationLoop, foundationMode, foundationTimer, instant, clock, activity, result, mode)
        // A mode of this test's own: the default mode of this (shared,
        // cooperative) thread's loop may hold what other tests scheduled.
        let own: PCRunLoop.Mode = "FoundationCoexistenceTests"
        loop.add(timer, forMode: own)
        loop.add(source, forMode: own)
        loop.add(observer, forMode: own)
        timer.invalidate()
        source.invalidate()
        observer.invalidate()
        #expect(loop.runInMode(own, timeout: .zero) == .finished)
    }

    /// The view a port lends its view handler: no Foundation namesake, so
    /// no prefix; `PCPort { _ in nil }` still compiles (not ambiguous).
    @Test func portMessageViewNamesDoNotCollide() throws {
        let kind: PortMessageView.ComponentKind = .sharedMemory
        let handler: PCPort.ViewHandler = { (view: borrowing PortMessageView) in view.copy() }
        let viewing = PCPort(viewHandler: handler)
        let plain = PCPort { _ in nil }
        let foundationMessage: PortMessage.Type = PortMessage.self
        _ = (kind, foundationMessage)
        viewing.invalidate()
        plain.invalidate()
    }

    /// Foundation on Linux declares no PortNameServer (NSPortNameServer's
    /// Swift name on Darwin), so the name-server client needs no prefix.
    @Test func nameServerTypesDoNotCollide() throws {
        let client: PortNameServer.Type = PortNameServer.self
        let error: NameServerError = .connectionLost
        let options: RegistrationOptions = [.allowReplacement]
        let outcome: ReleaseOutcome = .released
        let owner = NameOwner.Process(pid: 1, uid: 0)
        let change = NameOwnerChange(name: "a", event: .known(.registered), oldOwner: nil, newOwner: owner)
        let entry = NameEntry(name: "a", owner: owner, sinceMilliseconds: 0, queuedCount: 0)
        let watch: NameWatch.Type = NameWatch.self
        let lookup: LookupOutcome = .notFound
        let registration: RegistrationOutcome = .queued
        let declared: DeclaredCheckInOutcome = .notDeclared
        let port: Port.Type = Port.self  // Foundation's, beside PortCore's PCPort
        _ = (client, error, options, outcome, change, entry, watch, lookup, registration, declared, port)
        #expect(NameServerProtocol.isValidName("a"))
    }
}
