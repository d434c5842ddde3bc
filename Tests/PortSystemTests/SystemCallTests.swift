import CPortSystem
import Glibc
import Testing
@testable import PortSystem

@Suite struct SystemCallTests {
    @Test func eventfdSignalAndDrain() throws {
        let fd = try EventFD.create()
        #expect(try EventFD.drain(fd) == false)
        try EventFD.signal(fd)
        try EventFD.signal(fd)
        #expect(try EventFD.drain(fd) == true)
        #expect(try EventFD.drain(fd) == false)
    }

    @Test func errorsNameTheCall() throws {
        let epfd = try Epoll.create()
        let efd = try EventFD.create()
        try Epoll.add(epfd, efd, events: .readable, token: 1)
        #expect(throws: SystemCallError(call: "epoll_ctl(ADD)", errno: .fileExists)) {
            try Epoll.add(epfd, efd, events: .readable, token: 1)
        }
        // Removing twice is idempotent.
        try Epoll.remove(epfd, efd)
        try Epoll.remove(epfd, efd)
    }
}
