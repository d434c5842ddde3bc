// OutputCollector: a child's output read as it comes, by a thread of its
// own, for a chatty child that runs for a whole test (a nats-server logs
// every connection and every reconnect attempt): nothing has to read its
// pipe for it to keep running, and a test waits for a line of its log as
// an event (the collector signals every chunk it appends).

import Foundation
import Glibc
import PortSystem

package final class OutputCollector: @unchecked Sendable {
    // `condition` protects `bytes` and `ended`; the reader thread appends,
    // tests read. Nothing else is mutable.
    private let condition = NSCondition()
    private var bytes: [UInt8] = []
    private var ended = false

    /// Starts reading `fd` (the collector's from here: closed at its end of file).
    package init(reading fd: Int32) {
        let reader = Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fd, &chunk, chunk.count)
                if n < 0 && errno == EINTR { continue }
                condition.lock()
                if n > 0 { bytes += chunk[..<n] } else { ended = true }
                condition.broadcast()
                condition.unlock()
                if n <= 0 { break }
            }
            close(fd)
        }
        reader.start()
    }

    /// Everything read so far.
    package var text: String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Waits until the text after byte `offset` contains `needle`; returns
    /// the byte offset just past its first occurrence there (for waiting for
    /// the next one). Fails when the output ends first or at the deadline.
    @discardableResult
    package func waitFor(_ needle: String, after offset: Int = 0, timeout: Duration = HarnessTimeout) throws -> Int {
        let deadline = Date.now.addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        let wanted = Array(needle.utf8)
        condition.lock()
        defer { condition.unlock() }
        var searched = offset
        while true {
            if let end = Self.find(wanted, in: bytes, from: max(offset, searched - wanted.count)) { return end }
            searched = bytes.count
            if ended {
                throw HarnessError.unexpected("output ended before \"\(needle)\": \(String(decoding: bytes, as: UTF8.self))")
            }
            if !condition.wait(until: deadline) {
                throw HarnessError.timedOut("\"\(needle)\" in output (got \(String(decoding: bytes, as: UTF8.self)))")
            }
        }
    }

    /// Waits for the end of the output (the child and whatever inherited the pipe exited); the whole text.
    package func waitForEnd(timeout: Duration = HarnessTimeout) throws -> String {
        let deadline = Date.now.addingTimeInterval(Double(timeout.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while !ended {
            if !condition.wait(until: deadline) { throw HarnessError.timedOut("end of output") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Byte count read so far (an offset for `waitFor(_:after:)`).
    package var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return bytes.count
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty else { return max(start, 0) }
        var i = max(start, 0)
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i + needle.count }
            i += 1
        }
        return nil
    }
}
