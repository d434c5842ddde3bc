// PortSource+Foreign: a source for a descriptor that another library owns,
// such as a C network client's socket hosted on a run loop (libnats's
// natsOptions_SetEventLoop: the library tells the loop which socket to
// watch for reading and writing, and closes that socket itself).
//
// Invariants: PortCore never closes the library's number. The source
// watches its own duplicate of it (same open file description, so epoll
// reports the same readiness), closed when the source is invalidated; the
// library may close its number at any time without the loop ever watching
// a number reused for something else. Invalidate the source when the
// library says it is done with the socket (its detach), or a duplicate
// keeps the socket's file open.

import PortSystem

extension PortSource {
    /// What a foreign descriptor is watched for.
    public struct Readiness: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Data to read, or the peer hung up.
        public static let readable = Readiness(rawValue: 1)
        /// Room to write.
        public static let writable = Readiness(rawValue: 2)

        var events: Epoll.Events {
            var e: Epoll.Events = []
            if contains(.readable) { e.insert(.readable) }
            if contains(.writable) { e.insert(.writable) }
            return e
        }
    }

    /// Watches `number`, a descriptor another library owns and closes, for
    /// `readiness`. The source holds a duplicate of it (see the file's
    /// opening comment) and calls `handler` on the loop's thread while the
    /// descriptor is ready (level-triggered). The corresponding C function
    /// is `fcntl(F_DUPFD_CLOEXEC)`.
    public convenience init(
        watchingForeign number: Int32, for readiness: Readiness, handler: @escaping (PortSource) -> Void
    ) throws(SystemCallError) {
        let duplicate = try Descriptor.duplicate(foreign: number)
        self.init(descriptor: duplicate, events: readiness.events, handler: handler)
    }
}
