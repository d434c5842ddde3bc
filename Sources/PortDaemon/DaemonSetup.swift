// DaemonSetup: everything portd prepares before it serves, in this order,
// and undoes after: (1) SIGTERM/SIGINT blocked and routed to a signalfd,
// before any thread exists, so no thread ever takes them asynchronously;
// SIGPIPE ignored (sends use MSG_NOSIGNAL; this covers a closed stderr);
// (2) the control socket: the one systemd passed (socket activation), else
// bound at the resolved path (ControlListener: never a live daemon's);
// (3) the port directory beside it (`<socket>.ports`, private, stale
// socket files removed, except those of declared ports whose sockets the
// service manager passed back from its file-descriptor store: those are
// adopted, and a passed socket that is not one of them is closed); (4) the name server's settings: the per-user
// instance serves portd's own uid only; the system instance everyone, as
// the policy in the settings decides (the configuration is wired in here).
// Any failure is logged as one clear line and start-up stops with status 1.
//
// Ownership: the setup owns the listener's socket file until `tearDown()`
// (its descriptor goes to the name server's port); the signalfd is shared
// with Daemon's run-loop source. Every descriptor the service manager
// passed is adopted here exactly once: the control socket by the listener,
// a declared port's socket as a SharedDescriptor (the name server's from
// then on), anything else closed.

import Logging
import PortCore

struct DaemonSetup {
    let logger: Logger
    let listener: ControlListener
    let signalDescriptor: SharedDescriptor
    let notifier: SystemdNotifier
    let startedAt: MonotonicInstant
    let portDirectory: PortDirectory
    /// Declared ports' sockets passed back by the service manager, by name.
    let restoredDeclaredPorts: [String: DeclaredPorts.Restored]
    /// Port names whose entries in the store are cleared (FDSTOREREMOVE=1)
    /// before their socket is stored again: a bad or extra one was passed.
    let clearStoredDeclaredPorts: Set<String>
    let settings: NameServerSettings
    /// Where the configuration came from, to read it again on SIGHUP.
    let configurationPaths: ConfigurationPaths
    let configurationRequired: Bool
    let onlyUID: UInt32?

    /// Prepares the daemon, or logs why it cannot and returns nil.
    static func prepare(_ command: PortdCommand, logger: Logger, startedAt: MonotonicInstant) -> DaemonSetup? {
        let signalDescriptor: SharedDescriptor
        do {
            signalDescriptor = SharedDescriptor(try SignalFD.create(for: [Signal.terminate, Signal.interrupt, Signal.hangUp]))
            try CurrentProcess.ignore(signal: Signal.brokenPipe)
            // One descriptor per client: use the whole hard limit.
            let descriptors = try CurrentProcess.raiseDescriptorLimit()
            logger.debug("descriptor limit \(descriptors)")
        } catch {
            logger.critical("cannot set up signal handling: \(error)")
            return nil
        }

        let userID = CurrentProcess.userID
        let configurationPaths = ConfigurationPaths.resolve(
            explicitFile: command.config, instance: command.instance, environment: CurrentProcess.environment)
        let configuration: PortdConfiguration
        do {
            configuration = try PortdConfiguration.load(configurationPaths, requireFile: command.config != nil)
        } catch {
            logger.error("\(error)")
            return nil
        }
        let onlyUID: UInt32? = command.instance == .system ? nil : userID
        let location = DaemonPaths.resolve(
            explicitPath: command.socket, instance: command.instance, userID: userID,
            environment: CurrentProcess.environment)

        let listener: ControlListener
        let storedPorts: [(name: String, fileDescriptor: Int32)]
        do {
            let passed = ListenFDs.classify(try ListenFDs.take())
            let control = passed.control
            storedPorts = passed.declaredPorts
            for extra in passed.unused {
                logger.warning(
                    "closing a descriptor from the service manager that portd does not use",
                    metadata: ["fd": "\(extra.fileDescriptor)", "fdname": "\(extra.name)"])
                OwnedDescriptor(adopting: extra.fileDescriptor).close()
            }
            if let control {
                listener = try ControlListener.adopt(control, path: location.path)
                logger.info(
                    "serving the control socket passed by the service manager",
                    metadata: ["fd": "\(control.fileDescriptor)", "fdname": "\(control.name)"])
            } else {
                listener = try ControlListener.bind(
                    at: location, userID: userID, openToEveryone: command.instance == .system)
                if listener.replacedStaleSocket {
                    logger.notice("replaced the stale socket file at \(location.path) (nobody listened on it: a portd that died left it)")
                }
                logger.info("listening on \(location.path)")
            }
        } catch let error as ControlListener.StartError {
            logger.error("\(error)")
            return nil
        } catch {
            logger.error("cannot take the descriptors passed by the service manager: \(error)")
            return nil
        }

        // Sockets from the file-descriptor store: each must be a listening
        // socket bound in this portd's port directory; for a name stored
        // more than once the first that checks out serves, the others are
        // closed (their files removed, a live file must not stop start-up)
        // and the name is cleared in the store before its socket is stored
        // again, so the store holds exactly one socket per port.
        let directoryPath = PortDirectory.path(forControlSocket: listener.path)
        var keeping: [(name: String, fd: SharedDescriptor, fileName: String)] = []
        var clearStored: Set<String> = []
        for (name, number) in storedPorts {
            let fd = OwnedDescriptor(adopting: number)  // closed unless kept
            do throws(PortDirectory.Problem) {
                guard ListenFDs.isListeningSequentialPacketSocket(fd) else {
                    throw .notAdoptable(descriptor: fd.description, reason: "it is not a listening SOCK_SEQPACKET socket")
                }
                let fileName = try PortDirectory.declaredFileName(of: fd, inDirectory: directoryPath)
                keeping.append((name, SharedDescriptor(fd), fileName))
            } catch {
                logger.warning("closing the stored socket of \(name): \(error)", metadata: ["name": "\(name)"])
                clearStored.insert(name)
            }
        }

        let portDirectory: PortDirectory
        var restored: [String: DeclaredPorts.Restored] = [:]
        do {
            let (directory, removed) = try PortDirectory.prepare(
                path: directoryPath, userID: userID, keeping: Set(keeping.map(\.fileName)))
            portDirectory = directory
            if removed > 0 { logger.info("removed \(removed) stale port sockets from \(directory.path)") }
        } catch {
            logger.error("\(error)")
            listener.close()
            return nil  // `keeping` closes with it
        }
        var spare: [(name: String, fd: SharedDescriptor, fileName: String)] = []
        for k in keeping {
            if restored[k.name] != nil {
                spare.append(k)
                continue
            }
            do {
                restored[k.name] = .init(
                    fileDescriptor: k.fd, file: try portDirectory.adopt(fileName: k.fileName, fd: k.fd.descriptor))
            } catch {
                logger.warning("closing the stored socket of \(k.name): \(error)", metadata: ["name": "\(k.name)"])
                clearStored.insert(k.name)  // its socket closes with `keeping`
            }
        }
        for k in spare {
            logger.warning(
                "closing another stored socket of \(k.name) (one port, one socket)", metadata: ["name": "\(k.name)"])
            clearStored.insert(k.name)  // its socket closes with `keeping` and `spare`
            if let used = restored[k.name], !used.file.path.hasSuffix("/" + k.fileName),
                let file = try? portDirectory.adopt(fileName: k.fileName, fd: k.fd.descriptor)
            {
                portDirectory.remove(file)
            }
        }

        return DaemonSetup(
            logger: logger, listener: listener, signalDescriptor: signalDescriptor,
            notifier: SystemdNotifier(logger: logger), startedAt: startedAt, portDirectory: portDirectory,
            restoredDeclaredPorts: restored, clearStoredDeclaredPorts: clearStored,
            settings: NameServerSettings(configuration: configuration, onlyUID: onlyUID, daemonUID: userID),
            configurationPaths: configurationPaths, configurationRequired: command.config != nil, onlyUID: onlyUID)
    }

    /// Reads the configuration again (SIGHUP); nil, after logging why, when it has an error.
    func reloadSettings() -> NameServerSettings? {
        do {
            let c = try PortdConfiguration.load(configurationPaths, requireFile: configurationRequired)
            return NameServerSettings(configuration: c, onlyUID: onlyUID, daemonUID: CurrentProcess.userID)
        } catch {
            logger.error("reload failed, keeping the previous configuration: \(error)")
            return nil
        }
    }

    /// Removes the socket file (when portd created it) and closes the listener.
    func tearDown() {
        listener.close()
    }
}
