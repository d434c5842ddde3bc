// An owner whose port stopped listening while its registration stands (it
// invalidated the port but kept its connection to portd): the first LOOKUP
// that finds the connect refused releases the name, so LIST, OWNER and
// LOOKUP agree from then on, and a queued owner gets the name.

import Glibc
import Testing

import PortCore
import PortTestSupport

@Suite struct DeafOwnerTests {
    @Test func aLookupThatFindsThePortDeafReleasesTheName() throws {
        let daemon = try DaemonProcess.started()
        let owner = try daemon.client()
        let user = try daemon.client()
        let svc = "deaf-\(getpid())"
        guard case .registered(let port) = try owner.register(svc) else {
            Issue.record("not registered")
            return
        }
        port.invalidate()  // the listening socket closes; the registration stands
        #expect(try user.lookup(svc, cached: false) == nil)
        #expect(try user.owner(svc) == nil, "OWNER still names the deaf owner")
        #expect(try !user.list().contains { $0.name == svc }, "LIST still shows the name")
        #expect(try owner.release(svc) == .notOwner)
        // The name is free for anyone again.
        guard case .registered(let again) = try user.register(svc) else {
            Issue.record("not registered again")
            return
        }
        again.invalidate()
    }
}
