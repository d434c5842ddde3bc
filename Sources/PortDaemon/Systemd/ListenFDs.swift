// ListenFDs: descriptors the service manager passed at start (socket
// activation via portd.socket, and later the file-descriptor store), read
// with sd_listen_fds_with_names(3).
//
// Invariants: they are taken once, at start, before any thread exists, and
// LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES are removed from the environment
// then, so no child ever mistakes them for its own. libsystemd has set
// FD_CLOEXEC on each. The control socket is the descriptor named `control`
// (FileDescriptorName=control in portd.socket); a single unnamed one (a
// socket unit without FileDescriptorName=, or systemd-socket-activate
// without --fdname) is accepted too. Whatever is chosen must be a listening
// AF_UNIX SOCK_SEQPACKET socket (sd_is_socket_unix(3)), or portd refuses it.
// Until DaemonSetup adopts each (as an OwnedDescriptor, exactly once: the
// control socket in ControlListener.adopt, the others where it checks them),
// a passed descriptor is only a number with a name, so that sorting them
// stays a pure function.

import CSystemd
import PortCore

enum ListenFDs {
    /// One descriptor passed by the service manager.
    struct Passed: Sendable, Equatable {
        let fileDescriptor: Int32
        /// Its FileDescriptorName=/FDNAME=, or "unknown" when none was given.
        let name: String
    }

    /// The name portd.socket gives the control socket.
    static let controlName = "control"

    /// Takes the passed descriptors (empty when not socket-activated). The
    /// corresponding C function is `sd_listen_fds_with_names`.
    static func take() throws(SystemCallError) -> [Passed] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        let count = sd_listen_fds_with_names(1, &names)
        if count < 0 { throw SystemCallError(call: "sd_listen_fds_with_names", errno: .init(rawValue: -count)) }
        defer {
            if let names { portd_free_strv(names, count) }
        }
        return (0..<Int(count)).map { i in
            let name = names?[i].map { String(cString: $0) } ?? "unknown"
            return Passed(fileDescriptor: SD_LISTEN_FDS_START + Int32(i), name: name)
        }
    }

    /// Splits the passed descriptors into the control socket (if any) and the rest. Pure.
    static func selectControl(from passed: [Passed]) -> (control: Passed?, others: [Passed]) {
        if let i = passed.firstIndex(where: { $0.name == controlName }) {
            var others = passed
            let control = others.remove(at: i)
            return (control, others)
        }
        if passed.count == 1, passed[0].name == "unknown" || passed[0].name.hasSuffix(".socket") {
            return (passed[0], [])
        }
        return (nil, passed)
    }

    /// Whether `fd` is a listening AF_UNIX SOCK_SEQPACKET socket, as the
    /// kernel says (UnixSocket.kind); anything else, a non-socket included, is not.
    static func isListeningSequentialPacketSocket(_ fd: borrowing OwnedDescriptor) -> Bool {
        (try? UnixSocket.kind(of: fd)) == .sequentialPacket(listening: true)
    }
}
