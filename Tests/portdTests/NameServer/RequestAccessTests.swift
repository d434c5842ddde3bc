// RequestAccessTests: the name server's access decisions as the pure
// function they are: the per-user instance's restriction (sender and
// connection maker), a declared name refused to REGISTER, the register and
// look-up policies with uid and groups, WATCH of every name, LIST entries
// and events, CHECKIN rights by uid and by group; and the exact texts a
// refused client reads.

import Testing

import PortCore
@testable import PortDaemon

private func name(_ s: String) -> PortName { try! PortName(validating: s) }

@Suite struct RequestAccessTests {
    /// Settings whose policies allow names starting with "open." to uid 1000
    /// or group 50, and look-ups of anything but "secret.*".
    private var settings: NameServerSettings {
        var s = NameServerSettings(onlyUID: nil)
        s.mayRegister = { name, uid, gids in name.value.hasPrefix("open.") && (uid == 1000 || gids.contains(50)) }
        s.mayLookUp = { name, _, _ in !name.value.hasPrefix("secret.") }
        return s
    }

    @Test func thePerUserInstanceServesItsOwnUIDOnly() {
        let mine = NameServerSettings(onlyUID: 1000)
        let me = Caller(uid: 1000, groups: [1000])
        #expect(RequestAccess.anyRequest(connectorUID: 1000).decide(by: me, under: mine) == .allow)
        #expect(RequestAccess.anyRequest(connectorUID: nil).decide(by: me, under: mine) == .allow)
        #expect(
            RequestAccess.anyRequest(connectorUID: 1000).decide(by: Caller(uid: 1001, groups: []), under: mine)
                == .deny("this portd serves uid 1000 only, not uid 1001"))
        #expect(
            RequestAccess.anyRequest(connectorUID: 1002).decide(by: me, under: mine)
                == .deny("this portd serves uid 1000 only, not uid 1002"), "a descriptor passed from another user")
        #expect(
            RequestAccess.anyRequest(connectorUID: 1002).decide(by: Caller(uid: 1001, groups: []), under: mine)
                == .deny("this portd serves uid 1000 only, not uid 1001"), "the sender is named first")
        #expect(RequestAccess.anyRequest(connectorUID: 7).decide(by: me, under: settings) == .allow, "the system instance")
    }

    @Test func registerByPolicyUIDAndGroups() {
        let user = Caller(uid: 1000, groups: [1000])
        let member = Caller(uid: 2000, groups: [2000, 50])
        let stranger = Caller(uid: 2000, groups: [2000])
        #expect(RequestAccess.register(name("open.a"), declared: false).decide(by: user, under: settings) == .allow)
        #expect(RequestAccess.register(name("open.a"), declared: false).decide(by: member, under: settings) == .allow)
        #expect(
            RequestAccess.register(name("open.a"), declared: false).decide(by: stranger, under: settings)
                == .deny("uid 2000 may not register open.a"))
        #expect(
            RequestAccess.register(name("closed"), declared: false).decide(by: user, under: settings)
                == .deny("uid 1000 may not register closed"))
        #expect(
            RequestAccess.register(name("open.a"), declared: true).decide(by: user, under: settings)
                == .deny("open.a is a declared port; its service claims it with CHECKIN"), "before any policy")
    }

    @Test func lookUpWatchAndSee() {
        let anyone = Caller(uid: 3000, groups: [])
        #expect(RequestAccess.lookUp(name("a")).decide(by: anyone, under: settings) == .allow)
        #expect(
            RequestAccess.lookUp(name("secret.x")).decide(by: anyone, under: settings)
                == .deny("uid 3000 may not look up secret.x"))
        #expect(RequestAccess.watch(nil).decide(by: anyone, under: settings) == .allow, "every name: events are filtered")
        #expect(
            RequestAccess.watch(name("secret.x")).decide(by: anyone, under: settings)
                == .deny("uid 3000 may not watch secret.x"))
        #expect(RequestAccess.see(name("a")).decide(by: anyone, under: settings) == .allow)
        #expect(RequestAccess.see(name("secret.x")).decide(by: anyone, under: settings) != .allow)
    }

    @Test func checkInByUIDOrGroup() {
        let port = name("svc")
        let access = RequestAccess.checkIn(port, uids: [1000], gids: [60])
        #expect(access.decide(by: Caller(uid: 1000, groups: [1000]), under: settings) == .allow)
        #expect(access.decide(by: Caller(uid: 2000, groups: [2000, 60]), under: settings) == .allow)
        #expect(
            access.decide(by: Caller(uid: 2000, groups: [2000]), under: settings)
                == .deny("uid 2000 may not check in for svc"))
        #expect(
            RequestAccess.checkIn(port, uids: [], gids: []).decide(by: Caller(uid: 0, groups: [0]), under: settings)
                != .allow, "nobody listed, nobody allowed")
    }
}
