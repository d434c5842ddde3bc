// ListenFDsTests: the choice of the control socket among the descriptors
// systemd passes (LISTEN_FDNAMES), and notification text kept on one line.

import Testing

@testable import PortDaemon

@Suite struct ListenFDsTests {
    private func passed(_ names: String...) -> [ListenFDs.Passed] {
        names.enumerated().map { ListenFDs.Passed(fileDescriptor: 3 + Int32($0.offset), name: $0.element) }
    }

    @Test func choosesTheControlSocket() {
        let named = ListenFDs.selectControl(from: passed("declared-a", "control", "declared-b"))
        #expect(named.control == ListenFDs.Passed(fileDescriptor: 4, name: "control"))
        #expect(named.others.map(\.name) == ["declared-a", "declared-b"])

        #expect(ListenFDs.selectControl(from: passed("unknown")).control?.fileDescriptor == 3)
        #expect(ListenFDs.selectControl(from: passed("portd.socket")).control?.fileDescriptor == 3)
        #expect(ListenFDs.selectControl(from: passed("something-else")).control == nil)
        #expect(ListenFDs.selectControl(from: passed("unknown", "unknown")).control == nil)
        #expect(ListenFDs.selectControl(from: []).control == nil)
    }

    @Test func notifierTextStaysOnOneLine() {
        #expect(SystemdNotifier.oneLine("a\nb\r\nc") == "a b c")
    }
}
