// BridgeMain: portd-bridge's process shell, parse → set up → run → exit
// status, as portd's. Parsing exits by itself for --help, --version and
// usage errors (64); a bad configuration exits 78 (EX_CONFIG) with every
// error as FILE:LINE: message; a run ends with 0 after SIGTERM/SIGINT.
// The bridge waits for portd at start (it retries, saying so in STATUS=)
// and for NATS always (libnats reconnects); when its connection to portd
// is lost later, every name it imported is gone with it, so it exits 75
// (EX_TEMPFAIL) and the service manager starts it again
// (Restart=on-failure), as a client would reconnect.

import ArgumentParser
import Logging
import PortCore
import PortDaemon
import Foundation

package struct BridgeCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "portd-bridge",
        abstract: "Export and import portd names across hosts through NATS.",
        discussion: """
            The bridge is a client of the local portd: it exports the local names its configuration lists \
            (subjects PREFIX.NAME on NATS, and a JetStream key-value registry) and registers, in the local portd, \
            the names other hosts export that it imports. See portd-bridge(8) and portd-bridge.conf(5).
            """,
        version: PortdVersion.current)

    @Option(help: ArgumentHelp("Read this configuration file (default: the instance's bridge.conf).", valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("The local portd's control socket (overrides [Bridge] Socket= and the instance).", valueName: "path"))
    var socket: String?

    @Flag(help: "Bridge the system instance of portd (default: the per-user instance).")
    var system = false

    @Flag(name: .customLong("check-config"), help: "Check the configuration, print every error as FILE:LINE: message, and exit (0 good, 78 not).")
    var checkConfig = false

    package init() {}
}

package enum BridgeMain {
    static let exitConfiguration: Int32 = 78
    static let exitTemporaryFailure: Int32 = 75

    package static func run() -> Never {
        let command = BridgeCommand.parseOrExit()
        let path = command.config ?? BridgeConfiguration.defaultPath(system: command.system, environment: CurrentProcess.environment)
        let configuration: BridgeConfiguration
        switch load(path, required: command.config != nil) {
        case .success(let c): configuration = c
        case .failure(let errors):
            for e in errors.errors { CurrentProcess.writeStandardError("portd-bridge: \(e)\n") }
            CurrentProcess.exit(exitConfiguration)
        }
        if command.checkConfig {
            _ = try? StandardStream.output.withDescriptor { (out) throws(SystemCallError) in
                try Descriptor.writeAll(out, Array("portd-bridge: the configuration is good: \(path)\n".utf8))
            }
            CurrentProcess.exit(0)
        }
        let logger = LogDestination.bootstrap(identifier: "portd-bridge")
        CurrentProcess.exit(serve(command, path: path, configuration, logger: logger))
    }

    /// Reads the configuration file; a missing file is an empty one unless
    /// it was named on the command line.
    static func load(_ path: String, required: Bool) -> Result<BridgeConfiguration, BridgeConfigurationErrors> {
        let text: String
        do {
            guard let bytes = try FileSystem.contents(ofFile: path, maximumBytes: 1 << 20) else {
                return .failure(.init(errors: [ConfigurationError(file: path, line: nil, "larger than 1 MiB")]))
            }
            guard let t = UTF8Text.string(bytes) else {
                return .failure(.init(errors: [ConfigurationError(file: path, line: nil, "not UTF-8 text")]))
            }
            text = t
        } catch {
            if !required && error.errno == .noSuchFileOrDirectory { text = "" } else {
                return .failure(.init(errors: [ConfigurationError(file: path, line: nil, "cannot be read: \(error)")]))
            }
        }
        return BridgeConfiguration.parse(text, file: path, hostName: (try? CurrentProcess.hostName()) ?? "host")
    }

    private static func serve(_ command: BridgeCommand, path: String, _ configuration: BridgeConfiguration, logger: Logger) -> Int32 {
        let notifier = SystemdNotifier(logger: logger)
        let signals: SharedDescriptor
        do {
            signals = SharedDescriptor(try SignalFD.create(for: [Signal.terminate, Signal.interrupt, Signal.hangUp]))
            try CurrentProcess.ignore(signal: Signal.brokenPipe)
        } catch {
            logger.critical("cannot set up signal handling: \(error)")
            return 1
        }
        let socket = command.socket ?? configuration.socket
        let names: PortNameServer
        var attempt = 0
        while true {
            do throws(NameServerError) {
                names =
                    if let socket { try PortNameServer(socketPath: socket) } else {
                        try PortNameServer(instance: command.system ? .system : .user)
                    }
                break
            } catch {
                if attempt == 0 {
                    logger.warning("portd is not reachable yet (\(error)); retrying")
                    _ = try? notifier.status("Waiting for portd: \(error)")
                }
                attempt += 1
                if let s = try? SignalFD.read(signals.descriptor), s != Signal.hangUp { return 0 }
                Thread.sleep(forTimeInterval: Double(min(100 * attempt, 1000)) / 1000)
            }
        }
        let loop = PCRunLoop.current
        notifier.attach(to: loop)
        let bridge = Bridge(configuration: configuration, names: names, loop: loop, logger: logger)
        var status: Int32 = 0
        try? names.onConnectionLoss(in: loop) {
            logger.error("the connection to portd was lost; the imported names went with it; exiting to be started again")
            status = exitTemporaryFailure
            bridge.shutdown { loop.stop() }
        }
        let signalSource = PortSource(sharing: signals) { _ in
            while let s = try? SignalFD.read(signals.descriptor) {
                if s == Signal.hangUp {
                    logger.info("received SIGHUP, reloading \(path)")
                    _ = try? notifier.reloading(status: "Reloading \(path)")
                    switch load(path, required: command.config != nil) {
                    case .success(let c):
                        bridge.reload(c)
                        _ = try? notifier.ready(status: bridge.statusLine)
                    case .failure(let errors):
                        for e in errors.errors { logger.error("reload: \(e)") }
                        _ = try? notifier.ready(status: "Reload failed; running with the previous configuration")
                    }
                    continue
                }
                logger.info("received \(Signal.name(s)), stopping")
                _ = try? notifier.stopping(status: "Stopping (\(Signal.name(s)))")
                bridge.shutdown { loop.stop() }
            }
        }
        do {
            try loop.add(signalSource, forMode: .common)
            try bridge.start()
        } catch {
            logger.critical("cannot start: \(error)")
            return 1
        }
        let statusTimer = PCTimer(interval: .seconds(5), repeats: true) { _ in _ = try? notifier.status(bridge.statusLine) }
        loop.add(statusTimer, forMode: .common)
        logger.info(
            "bridging \(names.socketPath) as \(configuration.bridgeID)",
            metadata: ["export": "\(configuration.exportPatterns)", "import": "\(configuration.importPatterns)"])
        _ = try? notifier.ready(status: bridge.statusLine)
        loop.runUntilStopped()
        statusTimer.invalidate()
        bridge.close()
        signalSource.invalidate()
        logger.info("stopped", metadata: ["lost-in-flight": "\(bridge.lostInFlight)", "refused": "\(bridge.refused)"])
        return status
    }
}
