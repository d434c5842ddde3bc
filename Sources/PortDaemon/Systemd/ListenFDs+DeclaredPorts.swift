// ListenFDs+DeclaredPorts: sorting the descriptors systemd passes at start
// into the control socket, the declared ports' sockets coming back from the
// file-descriptor store, and the rest.
//
// Names: a declared port's socket is stored as "port/NAME". The brief said
// "port:NAME", but systemd refuses ":" in a descriptor name (it separates
// the names in LISTEN_FDNAMES; sd_pid_notify_with_fds(3): "arbitrary ASCII
// characters except control characters or ':'", at most 255), and a port
// name never contains "/", so "port/" is an unambiguous prefix. "port/" +
// at most 200 bytes of name stays within 255.
//
// Invariants: every passed descriptor lands in exactly one place, so the
// caller can close whatever it does not use; when the same port name comes
// more than once (several sockets stored under one name), all are listed
// in the order passed, for the caller to take the first that checks out;
// a "port/…" descriptor is never taken for the control socket, even when
// it is the only one passed. Pure.

extension ListenFDs {
    /// The FDNAME prefix of declared ports' sockets.
    static let declaredPortPrefix = "port/"

    /// FDNAME= for the socket of the declared port `name`.
    static func fileDescriptorName(forDeclaredPort name: String) -> String {
        declaredPortPrefix + name
    }

    /// The declared port a descriptor name stands for, or nil.
    static func declaredPortName(fromFileDescriptorName fdName: String) -> String? {
        guard fdName.hasPrefix(declaredPortPrefix), fdName.count > declaredPortPrefix.count else { return nil }
        return String(fdName.dropFirst(declaredPortPrefix.count))
    }

    /// The passed descriptors, sorted by what they are for.
    struct Classified: Equatable, Sendable {
        /// The control socket (see `selectControl(from:)`).
        var control: Passed?
        /// Declared ports' sockets with their port names, in the order
        /// passed (a name may come more than once).
        var declaredPorts: [(name: String, fileDescriptor: Int32)]
        /// Everything else: the caller closes these.
        var unused: [Passed]

        static func == (a: Classified, b: Classified) -> Bool {
            a.control == b.control && a.unused == b.unused
                && a.declaredPorts.map(\.name) == b.declaredPorts.map(\.name)
                && a.declaredPorts.map(\.fileDescriptor) == b.declaredPorts.map(\.fileDescriptor)
        }

        /// The first socket passed back for the declared port `name`, if any.
        func declaredPort(named name: String) -> Int32? {
            declaredPorts.first { $0.name == name }?.fileDescriptor
        }
    }

    /// Sorts `passed` into the control socket, declared ports and the rest.
    static func classify(_ passed: [Passed]) -> Classified {
        var ports: [(name: String, fileDescriptor: Int32)] = []
        var rest: [Passed] = []
        for descriptor in passed {
            if let name = declaredPortName(fromFileDescriptorName: descriptor.name) {
                ports.append((name, descriptor.fileDescriptor))
            } else {
                rest.append(descriptor)
            }
        }
        let (control, others) = selectControl(from: rest)  // `others` keeps the order passed
        return Classified(control: control, declaredPorts: ports, unused: others)
    }
}
