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
        switch try beginAsyncRequest(message, sendTimeout: sendTimeout) {
        case .some(let early): return early
        case .none: break
        }
        guard let connection = currentConnection() else {
            endAsyncRequest()
            throw .invalidated  // invalidated since the request went out
        }
        let result: Result<RequestResult, PortError> = await withCheckedContinuation { continuation in
            let loop = BackgroundLoop.shared.loop
            let finished = Mutex(false)
            let cleanup = Mutex<(PortSource?, PCTimer?)>((nil, nil))
            @Sendable func finish(_ r: Result<RequestResult, PortError>) {
                guard finished.withLockAnnotated({ f in defer { f = true }; return !f }) else { return }
                let (s, t) = cleanup.withLockAnnotated { $0 }
                s?.invalidate()
                t?.invalidate()
                self.endAsyncRequest()
                continuation.resume(returning: r)
            }
            let source = PortSource(sharing: connection, events: .readable) { _ in
                if let r = self.readAsyncReply() { finish(r) }
            }
            let timer = PCTimer(fireAt: loop.clock.now() + receiveTimeout) { _ in finish(.success(.receiveTimedOut)) }
            cleanup.withLockAnnotated { $0 = (source, timer) }
            do throws(SystemCallError) {
                try loop.add(source, forMode: .default)
                loop.add(timer, forMode: .default)
            } catch {
                finish(.failure(.system(error)))
            }
        }
        return try result.get()
    }
}
