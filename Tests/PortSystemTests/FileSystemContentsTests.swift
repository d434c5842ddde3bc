// FileSystem+Contents: reading a small file whole (missing is nil; too
// large, a directory, a FIFO are errors, and a FIFO is never waited on) and
// listing a directory (without "." and "..").

import Foundation
import Glibc
import Testing

@testable import PortSystem

@Suite struct FileSystemContentsTests {
    private func temporaryDirectory() throws -> String {
        var template = Array("/tmp/portcore-fs-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemCallError(call: "mkdtemp", errno: .noSuchFileOrDirectory) }
        return String(cString: made)
    }

    @Test func readsAFileWhole() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }  // more than one read
        try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/f"))
        #expect(try FileSystem.contents(ofFile: "\(dir)/f", maximumBytes: 40_000) == bytes)
        try Data().write(to: URL(fileURLWithPath: "\(dir)/empty"))
        #expect(try FileSystem.contents(ofFile: "\(dir)/empty", maximumBytes: 10) == [])
        #expect(try FileSystem.contents(ofFile: "\(dir)/missing", maximumBytes: 10) == nil)
    }

    @Test func refusesWhatIsNotASmallRegularFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(count: 11).write(to: URL(fileURLWithPath: "\(dir)/f"))
        #expect(throws: SystemCallError(call: "read(\(dir)/f)", errno: .fileTooLarge)) {
            try FileSystem.contents(ofFile: "\(dir)/f", maximumBytes: 10)
        }
        #expect(throws: SystemCallError(call: "read(\(dir))", errno: .isDirectory)) {
            try FileSystem.contents(ofFile: dir, maximumBytes: 10)
        }
        // A FIFO without a writer: refused at once (a blocking open would hang here).
        #expect(mkfifo("\(dir)/fifo", 0o600) == 0)
        #expect(throws: SystemCallError(call: "read(\(dir)/fifo)", errno: .invalidArgument)) {
            try FileSystem.contents(ofFile: "\(dir)/fifo", maximumBytes: 10)
        }
    }

    @Test func listsADirectory() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try FileSystem.entries(ofDirectory: dir) == [])
        for name in ["b.conf", ".hidden", "a"] { try Data().write(to: URL(fileURLWithPath: "\(dir)/\(name)")) }
        try FileManager.default.createDirectory(atPath: "\(dir)/sub", withIntermediateDirectories: false)
        #expect(try FileSystem.entries(ofDirectory: dir)?.sorted() == [".hidden", "a", "b.conf", "sub"])
        #expect(try FileSystem.entries(ofDirectory: "\(dir)/missing") == nil)
        #expect(throws: SystemCallError(call: "open(\(dir)/a, O_DIRECTORY)", errno: .notDirectory)) {
            try FileSystem.entries(ofDirectory: "\(dir)/a")
        }
    }
}
