// MessageServer: the receiving half of `listen` and `checkin`: serves one
// port on the main thread's run loop until --count messages were handled
// (success), --timeout passed without a message (status 75), the peer the
// port depends on went away (status 74), or output failed.
//
// Each message is either printed (MessageRendering) or handed to --exec's
// command (MessageCommand), whose output becomes the reply when the message
// has a reply port. A request's reply is the handler's return value, which
// the port sends (so a monitorable port's monitors see it too); a message
// with a reply port of its own is answered through that port. A message
// printed without --exec that expects a reply gets an empty one (PCPort's
// rule for requests nobody answers).

import PortCore

final class MessageServer {
    private let port: PCPort
    private let name: String
    private let serve: ServeOptions
    private let output: OutputOptions
    private let idleTimeout: Duration?
    private let loop = PCRunLoop.current
    private var handled = 0
    private var failure: Failure?
    /// How the run ends once the messages already queued are handled.
    private var pendingFailure: Failure?
    private var finished = false
    private var idleDeadline: MonotonicInstant

    init(port: PCPort, name: String, serve: ServeOptions, output: OutputOptions, idleTimeout: Duration?) {
        self.port = port
        self.name = name
        self.serve = serve
        self.output = output
        self.idleTimeout = idleTimeout
        self.idleDeadline = idleTimeout.map { .now() + $0 } ?? .distantFuture
    }

    /// Ends the run with `failure` (from a callback on this loop).
    func fail(_ failure: Failure) {
        if self.failure == nil { self.failure = failure }
        loop.stop()
    }

    /// Ends the run with `failure` after the messages that already arrived
    /// are handled: a peer that sends and then exits is seen hanging up in
    /// the same pass as its last messages, and those still count.
    func failAfterDraining(_ failure: Failure) {
        if pendingFailure == nil { pendingFailure = failure }
        loop.stop()
    }

    /// Serves until done; throws how it ended unless it ended well.
    func run() throws(Failure) {
        port.setHandler { [unowned self] message in self.handle(message) }
        do {
            try port.schedule(in: loop, forMode: .default)
        } catch {
            throw Failure(.failure, "cannot serve \(name): \(error)")
        }
        defer { port.remove(from: loop, forMode: .default) }
        while !finished && failure == nil {
            if let pendingFailure {
                // Handle whatever is ready now, then stop.
                while !finished && failure == nil,
                    loop.runInMode(.default, timeout: .zero, returnAfterSourceHandled: true) == .handledSource
                {}
                if finished || failure != nil { break }
                throw pendingFailure
            }
            switch loop.runInMode(.default, before: idleDeadline, returnAfterSourceHandled: true) {
            case .timedOut where MonotonicInstant.now() >= idleDeadline:
                let seconds = idleTimeout.map { ConnectionValues.format(Double($0.nanosecondsClamped) / 1e9) } ?? "?"
                throw Failure(.timedOut, "no message for \(name) within \(seconds) s")
            case .finished:
                throw Failure(.portInvalid, "the port of \(name) is no longer valid")
            default:
                // On the main thread the loop is PCRunLoop.main, whose common
                // modes are never empty (it services the main dispatch queue),
                // so an invalidated port shows here, not as .finished.
                if !port.isValid { throw Failure(.portInvalid, "the port of \(name) is no longer valid") }
                continue
            }
        }
        if let failure { throw failure }
    }

    /// Prints or runs --exec for `message`; returns a request's reply.
    private func handle(_ message: PCPortMessage) -> PCPortMessage? {
        guard !finished && failure == nil else { return nil }
        var reply: PCPortMessage?
        do {
            if let exec = serve.exec {
                reply = try execute(exec, for: message)
            } else if output.json {
                let limit = MessageRendering.limit(serve.maxBytes, json: true)
                try output.emit(MessageRendering.json(message, leading: [("name", .string(name))], limit: limit).text)
            } else {
                let limit = MessageRendering.limit(serve.maxBytes, json: false)
                try output.emit(
                    ([MessageRendering.heading(message)]
                        + MessageRendering.componentLines(message, indent: "  ", limit: limit))
                        .joined(separator: "\n"))
            }
        } catch {
            fail(error)
            return nil
        }
        handled += 1
        if let idleTimeout { idleDeadline = .now() + idleTimeout }
        if let count = serve.count, handled >= count {
            finished = true
            loop.stop()
        }
        return reply
    }

    /// Runs `command` for `message`: returns a request's reply; answers a
    /// message with a reply port through it.
    private func execute(_ command: String, for message: PCPortMessage) throws(Failure) -> PCPortMessage? {
        let reply = message.replyPort
        let (bytes, termination) = try MessageCommand(command: command, name: name).run(
            for: message, captureOutput: reply != nil)
        if termination != .exited(0) {
            output.notice("command for msgid \(message.msgid) \(termination)")
        }
        guard let reply else { return nil }
        if message.expectsReply { return PCPortMessage(msgid: message.msgid, components: [.data(bytes)]) }
        do {
            switch try reply.send(PCPortMessage(msgid: message.msgid, components: [.data(bytes)])) {
            case .sent: break
            case .timedOut: output.notice("the reply to msgid \(message.msgid) could not be sent in time")
            case .receiverGone: output.notice("the sender of msgid \(message.msgid) went away before the reply")
            }
        } catch {
            output.notice("cannot reply to msgid \(message.msgid): \(error)")
        }
        return nil
    }
}
