// PassedPortCheck: the kernel's word on a port a client hands portd to
// keep (a WATCH's watcher port, a REGISTER's notification port). portd
// sends its own messages there later, with its own credentials, so it must
// not be made a confused deputy: the descriptor must be an AF_UNIX
// SOCK_SEQPACKET socket (SO_DOMAIN, SO_TYPE), connected and not listening,
// whose far end belongs to the requesting client's uid (SO_PEERCRED on the
// descriptor names the process at the other end: for a right the client
// minted with socketpair, the client itself), and that is not a connection
// to portd itself: not to its control socket, not to a socket in its port
// directory (whose listening sockets portd made, whoever holds them now).
// Its receiver must still be there: a port whose other end is closed
// already would only cost portd a failed send later (for a queued owner,
// a listening socket made and unlinked for nothing).
// These are told by the address the far end is bound to (getpeername),
// not by its pid: portd's control socket may have been bound by the
// service manager, and a hosted name server shares its process with its
// clients. The control-socket rule is also what keeps a client from
// passing its own control connection: portd would hold the client's end,
// never see the connection close, and the client's names would outlive it.
//
// Invariants: pure apart from the getsockopt/getpeername calls on the
// descriptor; the first failing rule is the reason given; a descriptor
// that cannot be examined is refused.

import PortCore

struct PassedPortCheck {
    /// The control socket's path ("" when unknown).
    let controlSocketPath: String
    /// The port directory's path.
    let portDirectoryPath: String

    /// Why `right`, passed by `sender` as its `role` ("watcher port",
    /// "notification port"), is refused; nil when portd may keep it.
    func refusal(of right: SendRight, role: String, sender: Credentials) -> String? {
        let verdict = right.withDescriptor { fd -> String? in
            let kind: UnixSocket.Kind
            do {
                kind = try UnixSocket.kind(of: fd)
            } catch {
                return "the \(role) is not a socket (\(error))"
            }
            guard kind.isUnix else { return "the \(role) is not an AF_UNIX socket" }
            guard kind.isSequentialPacket else { return "the \(role) is not a SOCK_SEQPACKET socket" }
            guard !kind.isListening else { return "the \(role) is a listening socket, not a connection" }
            let peer: Credentials
            do {
                peer = try UnixSocket.peerCredentials(fd)
            } catch {
                return "the \(role) is not connected (\(error))"
            }
            guard peer.pid > 0 else { return "the \(role) is not connected" }
            let path: String?
            do {
                path = try UnixSocket.peerPath(fd)
            } catch {
                return "the \(role) is not connected (\(error))"
            }
            if let path {
                if !controlSocketPath.isEmpty && path == controlSocketPath {
                    return "the \(role) is a connection to portd's control socket"
                }
                if path.hasPrefix(portDirectoryPath + "/") {
                    return "the \(role) is a connection to a port portd serves, not one of the client's own"
                }
            }
            guard peer.uid == sender.uid else {
                return "the \(role) is connected to a process of uid \(peer.uid), not to the requester (uid \(sender.uid)); pass a port of your own"
            }
            if Self.hungUp(fd) { return "the \(role)'s receiver is gone (its other end was closed)" }
            return nil
        }
        return verdict ?? "the \(role) was closed"
    }

    /// Whether the other end of `right` is closed (or `right` is): one
    /// poll(2), no waiting.
    static func receiverIsGone(_ right: SendRight) -> Bool {
        right.withDescriptor { fd in hungUp(fd) } ?? true
    }

    private static func hungUp(_ fd: borrowing OwnedDescriptor) -> Bool {
        guard let ready = try? LocalSocket.wait(fd, for: [], timeout: .zero) else { return false }
        return !ready.isDisjoint(with: [.hangUp, .error])
    }
}
