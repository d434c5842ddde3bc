// Watch: `portctl watch [NAME]`: print owner changes of NAME (or of every
// name) as they happen (WATCH; NAME_OWNER_CHANGED), one line or one JSON
// object each, stamped with the time portctl received it, in the same
// form as monitor's owner changes (Monitor.text and Monitor.json). --count N exits 0 after N changes; --timeout S exits 75 when
// S seconds pass without one; when portd goes, 74; when the watcher fell
// behind and portd ended the watch (WATCH_OVERFLOW), 75 after printing the
// changes queued before it.

import ArgumentParser
import PortCore
import PortWire

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print owner changes of a name (or of every name) as they happen.",
        discussion: """
            Each change prints as: the UTC time portctl received it, EVENT NAME, then the old and \
            new owner (pid/uid); with --json, time (text) and time_ms (Unix milliseconds) are \
            members of its object. EVENT is registered, released or replaced. --timeout bounds the wait for each change. \
            A watcher that falls behind (its queue full) is ended by portd: portctl prints the changes \
            queued before that, says how many it missed, and exits 75.

            \(ExitStatus.verbHelpText)
            """
    )

    @Argument(help: "The name to watch (every name when omitted).") var name: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("Exit (status 0) after N changes.", valueName: "n"))
    var count: Int?
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let name { try NameArgument.check(name) }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        try connection.check()
    }

    static func text(_ c: NameOwnerChange) -> String {
        var line = "\(c.event) \(TextEscape.escape(c.name))"
        if let old = c.oldOwner { line += " old=\(old.pid)/\(old.uid)" }
        if let new = c.newOwner { line += " new=\(new.pid)/\(new.uid)" }
        return line
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        let server = try connection.connect()
        let loop = PCRunLoop.current
        let state = WatchState()
        let output = self.output
        let json = output.json
        let count = self.count
        let idle = connection.explicitTimeout
        let watch: NameWatch
        do throws(NameServerError) {
            watch = try server.watch(name, loop: loop, onError: { error in
                state.fail(Failure(error), loop)
            }) { change in
                do throws(Failure) {
                    let now = WallClock.unixMilliseconds()
                    try output.emit(json ? Monitor.json(change, at: now) : Monitor.text(change, at: now))
                } catch {
                    state.fail(error, loop)
                    return
                }
                state.seen(count: count, idle: idle, loop)
            }
        } catch {
            throw Failure(error)
        }
        defer { watch.cancel() }
        do {
            try server.onConnectionLoss(in: loop, forMode: .default) {
                state.lost = true
                loop.stop()
            }
        } catch {
            throw Failure(error)
        }
        output.notice("watching \(name ?? "every name")")
        state.seen(count: nil, idle: idle, loop, counting: false)
        while true {
            if try streamEnds(loop, failure: state.failure, done: state.done, lost: state.lost) { return }
            let deadline = state.deadline
            let r = loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
            if r == .timedOut && MonotonicInstant.now() >= state.deadline && !state.done {
                throw Failure(.timedOut, "no change within \(connection.timeoutText)")
            }
        }
    }
}

/// The end of a streaming verb (watch, monitor) as its loop state says:
/// throws its failure; true when it is done; when portd went (`lost`),
/// first handles what already came (portd's last changes, the ports' last
/// messages) without waiting, then the same, or status 74. False: go on.
/// `failure` and `done` are read again after each message handled.
func streamEnds(
    _ loop: PCRunLoop, failure: @autoclosure () -> Failure?, done: @autoclosure () -> Bool, lost: Bool
) throws(Failure) -> Bool {
    if let f = failure() { throw f }
    if done() { return true }
    guard lost else { return false }
    while !done() && failure() == nil,
        loop.runInMode(.default, timeout: .zero, returnAfterSourceHandled: true) == .handledSource
    {}
    if let f = failure() { throw f }
    if done() { return true }
    throw Failure(.portInvalid, "portd closed the connection")
}

/// What the watch callback and the loop share; only touched on the loop's thread.
private final class WatchState: @unchecked Sendable {
    // Safe to share: every field is read and written on the main thread's
    // run loop only (the watch port is scheduled there).
    var failure: Failure?
    var done = false
    /// portd closed the connection.
    var lost = false
    var seenCount = 0
    var deadline = MonotonicInstant.distantFuture

    func fail(_ f: Failure, _ loop: PCRunLoop) {
        if failure == nil { failure = f }
        loop.stop()
    }

    func seen(count: Int?, idle: Duration?, _ loop: PCRunLoop, counting: Bool = true) {
        if counting { seenCount += 1 }
        if let idle { deadline = .now() + idle }
        if let count, seenCount >= count {
            done = true
            loop.stop()
        }
    }
}
