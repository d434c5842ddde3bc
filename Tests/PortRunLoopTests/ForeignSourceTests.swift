// ForeignSourceTests: a source for a descriptor another library owns
// (PortSource(watchingForeign:for:handler:)) fires while that descriptor is
// ready, and never closes it: the source watches a duplicate of it.

import Glibc
import PortSystem
import PortTestSupport
import Synchronization
import Testing

@testable import PortRunLoop

@Suite struct ForeignSourceTests {
    @Test func aForeignDescriptorIsWatchedAndNeverClosed() throws {
        let ends = try Pipe.make()
        let read = ends.read.rawValue  // "the library's" number: the test keeps owning it
        let fired = Mutex(0)
        let loop = try PCRunLoop.detached()
        let source = try PortSource(watchingForeign: read, for: .readable) { s in
            fired.withLock { $0 += 1 }
            var byte: UInt8 = 0
            _ = Glibc.read(read, &byte, 1)  // drained through the library's number
        }
        try loop.add(source, forMode: .default)
        #expect(loop.runInMode(.default, timeout: .zero) == .timedOut)  // nothing ready
        #expect(try Descriptor.writeAll(ends.write, [1]))
        #expect(loop.runInMode(.default, timeout: .seconds(5), returnAfterSourceHandled: true) == .handledSource)
        #expect(fired.withLock { $0 } == 1)
        // Writable interest on the write end: ready at once.
        let writable = try PortSource(watchingForeign: ends.write.rawValue, for: .writable) { s in s.invalidate() }
        try loop.add(writable, forMode: .default)
        #expect(loop.runInMode(.default, timeout: .seconds(5), returnAfterSourceHandled: true) == .handledSource)
        source.invalidate()
        // The library's descriptors are still open and still a pipe.
        #expect(fcntl(read, F_GETFD) >= 0)
        #expect(try Descriptor.writeAll(ends.write, [2]))
        var byte: UInt8 = 0
        #expect(Glibc.read(read, &byte, 1) == 1 && byte == 2)
        _ = consume ends
    }
}
