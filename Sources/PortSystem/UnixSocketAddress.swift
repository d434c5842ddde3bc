// UnixSocketAddress: an AF_UNIX address (unix(7)), either a filesystem path
// or an abstract name (written "@name", no file, gone with the socket).
//
// Invariants: a path is non-empty, has no NUL byte and fits `sun_path` with
// its terminating NUL (at most 107 bytes); an abstract name fits after the
// leading NUL (at most 107 bytes) and is passed with its exact length, since
// the kernel compares abstract names over addrlen, NULs and all. Checked at
// construction, so `bind` and `connect` never truncate a name silently.

import CPortSystem
import Glibc

/// A checked `sockaddr_un`.
public struct UnixSocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// Why a name is not a valid AF_UNIX address.
    public enum Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        case empty
        case containsNul
        case tooLong(bytes: Int, limit: Int)

        public var description: String {
            switch self {
            case .empty: "AF_UNIX address: empty name"
            case .containsNul: "AF_UNIX address: name contains a NUL byte"
            case .tooLong(let n, let limit): "AF_UNIX address: \(n) bytes, at most \(limit) fit in sun_path"
            }
        }
    }

    /// Bytes of `sun_path` a name may use (108 minus the NUL that ends a
    /// path or starts an abstract name).
    public static let maxNameBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// The filesystem path, or nil for an abstract name.
    public let path: String?
    /// The abstract name without its leading NUL, or nil for a path.
    public let abstractName: String?

    /// A filesystem path.
    public init(path: String) throws(Error) {
        try Self.check(path)
        self.path = path
        self.abstractName = nil
    }

    /// An abstract name (Linux only): no file, no cleanup.
    public init(abstract name: String) throws(Error) {
        try Self.check(name)
        self.path = nil
        self.abstractName = name
    }

    /// "@name" for an abstract name, anything else for a path.
    public init(_ string: String) throws(Error) {
        if string.hasPrefix("@") {
            try self.init(abstract: String(string.dropFirst()))
        } else {
            try self.init(path: string)
        }
    }

    private static func check(_ name: String) throws(Error) {
        let n = name.utf8.count
        if n == 0 { throw .empty }
        if name.utf8.contains(0) { throw .containsNul }
        if n > maxNameBytes { throw .tooLong(bytes: n, limit: maxNameBytes) }
    }

    public var description: String { path ?? "@" + (abstractName ?? "") }

    /// This address with its `sockaddr_un` filled once, for an address
    /// connected to again and again (portd connects to a name's socket
    /// file on every LOOKUP of it): `UnixSocket.connect` then copies it
    /// instead of filling it each time.
    package struct Filled: @unchecked Sendable {
        // Safe to share: immutable, and sockaddr_un is plain bytes.
        package let address: UnixSocketAddress
        let sun: sockaddr_un
        let length: socklen_t
    }

    /// This address, its `sockaddr_un` filled (`Filled`).
    package var filled: Filled {
        withSockAddr { sa, length in
            Filled(
                address: self, sun: UnsafeRawPointer(sa).load(as: sockaddr_un.self), length: length)
        }
    }

    /// Calls `body` with a filled `sockaddr_un` and its exact length.
    package func withSockAddr<R, E: Swift.Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R
    ) throws(E) -> R {
        var sun = sockaddr_un()
        sun.sun_family = sa_family_t(AF_UNIX)
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        let name = Array((path ?? abstractName ?? "").utf8)
        let leading = path == nil ? 1 : 0  // abstract: sun_path[0] == 0
        withUnsafeMutableBytes(of: &sun.sun_path) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            for (i, b) in name.enumerated() { raw[leading + i] = b }
        }
        // A path is passed with its NUL; an abstract name with exactly its bytes.
        let length = pathOffset + leading + name.count + (path == nil ? 0 : 1)
        return try withUnsafePointer(to: &sun) { p throws(E) -> R in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(E) -> R in
                try body(sa, socklen_t(length))
            }
        }
    }
}
