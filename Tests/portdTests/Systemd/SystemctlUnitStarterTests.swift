// SystemctlUnitStarterTests: the command portd runs to ask the service
// manager for a unit (the run itself, through a stand-in systemctl, is in
// ActivationTests).

import Testing

@testable import PortDaemon

@Suite struct SystemctlUnitStarterTests {
    @Test func theSystemAndTheUserManager() {
        #expect(
            SystemctlUnitStarter(userInstance: false).command(for: "a.service")
                == ["systemctl", "start", "--no-block", "a.service"])
        #expect(
            SystemctlUnitStarter(userInstance: true).command(for: "a.service")
                == ["systemctl", "--user", "start", "--no-block", "a.service"])
    }
}
