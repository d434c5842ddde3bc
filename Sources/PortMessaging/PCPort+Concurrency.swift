// Ports for Swift concurrency: a port's messages as an AsyncSequence, and
// requests that suspend instead of blocking a thread. Both are served by the
// process's one BackgroundLoop thread (not a thread per port).

import PortRunLoop
import PortSystem
import PortWire
import Synchronization

extension PCPort {
    /// The port's messages as an AsyncSequence. Replaces the port's handler;
    /// schedules the port on the background loop unless `loop` is given.
    /// Requests that arrive this way get an empty reply unless answered
    /// through `replyPort` by whoever keeps the message. The stream ends
    /// when the port is invalidated.
    public func messages(
        on loop: PCRunLoop? = nil, mode: PCRunLoop.Mode = .default,
        bufferingPolicy: AsyncStream<PCPortMessage>.Continuation.BufferingPolicy = .unbounded
    ) throws(PortError) -> AsyncStream<PCPortMessage> {
        let (stream, continuation) = AsyncStream<PCPortMessage>.makeStream(bufferingPolicy: bufferingPolicy)
        setHandler { m in
            continuation.yield(m)
            return nil
        }
        onInvalidation { continuation.finish() }
        try schedule(in: loop ?? BackgroundLoop.shared.loop, forMode: mode)
        return stream
    }
}

extension SendRight {
    /// `request` for async code: the caller suspends (no thread blocks) until
    /// the reply arrives, read by a source on the background loop. The send
    /// itself may wait up to `sendTimeout` for room in a full queue. A zero
    /// (or negative) `receiveTimeout` is a one-way request, as for the
    /// synchronous `request`: sent as a plain message, `.sent` once queued.
    public func request(
        _ message: PCPortMessage, sendTimeout: Duration = .seconds(30), receiveTimeout: Duration = .seconds(30)
    ) async throws(PortError) -> RequestResult {
        if receiveTimeout <= .zero { return try sendOneWay(message, sendTimeout: sendTimeout) }
        let result: Result<RequestResult, PortError> = await withCheckedContinuation { continuation in
            do throws(PortError) {
                if let early = try request(
                    message, sendTimeout: sendTimeout, receiveTimeout: receiveTimeout, on: BackgroundLoop.shared.loop,
                    completion: { continuation.resume(returning: $0) })
                {
                    continuation.resume(returning: .success(early))
                }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }

    /// `request` for a server that must never block its run loop (a bridge
    /// forwarding requests, say): sends `message` as a request, waiting at
    /// most `sendTimeout` for room in a full queue (`.zero`: not at all),
    /// and returns. The outcome comes to `completion`, once, on `loop`'s
    /// thread in `mode`: the reply, `.receiveTimedOut` after
    /// `receiveTimeout`, `.invalidPort`, or the error that closed the
    /// connection. Returns the outcome instead (and never calls
    /// `completion`) when there is nothing to wait for: `.sendTimedOut`,
    /// `.invalidPort`. One request at a time per right, as with the async
    /// `request`: a second before the first's outcome throws
    /// `.requestInProgress`. Any thread.
    public func request(
        _ message: PCPortMessage, sendTimeout: Duration = .zero, receiveTimeout: Duration, on loop: PCRunLoop,
        mode: PCRunLoop.Mode = .default, completion: @escaping @Sendable (Result<RequestResult, PortError>) -> Void
    ) throws(PortError) -> RequestResult? {
        if let early = try beginAsyncRequest(message, sendTimeout: sendTimeout) { return early }
        guard let connection = currentConnection() else {
            endAsyncRequest()
            throw .invalidated  // invalidated since the request went out
        }
        let finished = Mutex(false)
        let cleanup = Mutex<(PortSource?, PCTimer?)>((nil, nil))
        @Sendable func finish(_ r: Result<RequestResult, PortError>) {
            guard finished.withLockAnnotated({ f in defer { f = true }; return !f }) else { return }
            let (s, t) = cleanup.withLockAnnotated { $0 }
            s?.invalidate()
            t?.invalidate()
            self.endAsyncRequest()
            completion(r)
        }
        let source = PortSource(sharing: connection, events: .readable) { _ in
            if let r = self.readAsyncReply() { finish(r) }
        }
        let timer = PCTimer(fireAt: loop.clock.now() + receiveTimeout) { _ in finish(.success(.receiveTimedOut)) }
        cleanup.withLockAnnotated { $0 = (source, timer) }
        do throws(SystemCallError) {
            try loop.add(source, forMode: mode)
            loop.add(timer, forMode: mode)
        } catch {
            finish(.failure(.system(error)))
        }
        return nil
    }
}
