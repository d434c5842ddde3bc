// PortdMain: portd's process shell, parse → set up → run → exit code
// (docs/DESIGN.md §5). Parsing exits by itself for --help, --version and usage
// errors (64); a failed set-up has been logged and exits 1; a run ends with
// the status Daemon returns (0 after SIGTERM/SIGINT). The executable's
// main.swift only calls this, so everything portd does lives in this library,
// where tests and fuzz targets reach it.

import PortCore

package enum PortdMain {
    package static func run() -> Never {
        let startedAt = MonotonicInstant.now()
        let command = PortdCommand.parseOrExit()
        if command.checkConfig { checkConfiguration(command) }
        let logger = LogDestination.bootstrap()
        guard let setup = DaemonSetup.prepare(command, logger: logger, startedAt: startedAt) else { CurrentProcess.exit(1) }
        let status = Daemon(setup).run()
        setup.tearDown()
        CurrentProcess.exit(status)
    }

    /// `portd --check-config`: like `nginx -t` and `sshd -t`.
    private static func checkConfiguration(_ command: PortdCommand) -> Never {
        let paths = ConfigurationPaths.resolve(
            explicitFile: command.config, instance: command.instance, environment: CurrentProcess.environment)
        let (errors, files) = PortdConfiguration.check(paths, requireFile: command.config != nil)
        for error in errors { CurrentProcess.writeStandardError("portd: \(error)\n") }
        if errors.isEmpty {
            let read = files.isEmpty ? "no file (the defaults)" : files.joined(separator: ", ")
            _ = try? StandardStream.output.withDescriptor { (out) throws(SystemCallError) in
                try Descriptor.writeAll(out, Array("portd: the configuration is good: \(read)\n".utf8))
            }
            CurrentProcess.exit(0)
        }
        CurrentProcess.exit(1)
    }
}
