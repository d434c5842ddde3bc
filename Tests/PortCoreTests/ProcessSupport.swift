// Starting peer processes for tests (through PortCore's Spawn) with a descriptor passed as
// fd 3, and waiting for them.

import Foundation
import Glibc
@testable import PortCore
@testable import PortMessaging
@testable import PortNameClient
@testable import PortNameProtocol
@testable import PortRunLoop
@testable import PortSystem
@testable import PortWire

enum PeerProcess {
    static var fixtures: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path
    }

    /// Starts `argv` with `fd` as its descriptor 3 and stdout to `stdoutFD` if given.
    static func spawn(_ argv: [String], passing fd: Int32, stdoutFD: Int32? = nil) -> pid_t {
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        do {
            // The numbers are the caller's: each is lent for the copy the child gets.
            var descriptors = Spawn.Descriptors()
            try OwnedDescriptor.lending(fd) { (d) throws(SystemCallError) in try descriptors.insert(copyOf: d, as: 3) }
            if let o = stdoutFD {
                try OwnedDescriptor.lending(o) { (d) throws(SystemCallError) in try descriptors.insert(copyOf: d, as: 1) }
            }
            return try Spawn.start(argv, environment: environment, descriptors: descriptors)
        } catch {
            preconditionFailure("spawn \(argv[0]): \(error)")
        }
    }

    /// Waits for `pid`; returns its exit status (or 128 + signal).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }
}
