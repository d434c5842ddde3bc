// Register: `portctl register NAME -- COMMAND [ARGS...]`: hold NAME while
// COMMAND runs, handing COMMAND the receive right as socket activation
// does (SocketActivation: descriptor 3, LISTEN_FDS, LISTEN_PID,
// LISTEN_FDNAMES), so a program in any language can own a name. NAME is
// released when COMMAND exits (portctl closes its connection to portd),
// and portctl exits with COMMAND's status (128 + N for a signal N). When
// portd goes away first, COMMAND is sent SIGTERM and portctl exits 74
// (as listen does when portd goes).

import ArgumentParser
import PortCore

struct Register: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Hold a name while a command runs, handing it the name's socket as descriptor 3.",
        discussion: """
            COMMAND gets the name's listening socket as descriptor 3, with LISTEN_FDS=1, \
            LISTEN_FDNAMES=NAME and LISTEN_PID set to its own pid (sd_listen_fds(3)). \
            portctl exits with COMMAND's exit status once it ends, and the name is released. \
            A COMMAND that cannot be found is reported before the name is taken (status 127, as a shell). \
            If portd goes away while COMMAND runs (it stopped or crashed), the name is gone: \
            portctl sends COMMAND SIGTERM, waits for it and exits with 74, so a supervisor can \
            start it again against the new portd. \
            SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to portctl are relayed to COMMAND. \
            When the name is taken, portctl waits in its queue (unless --no-queue) and starts COMMAND \
            once it gets the name; --timeout bounds that wait (no bound without it) and each answer of portd. \
            portctl prints nothing on standard output (what appears there is COMMAND's): --json is \
            accepted as by every verb and changes nothing; --quiet drops the notice of a wait in the queue.

            \(ExitStatus.verbHelpText)
            """
    )

    @Argument(help: "The name to hold.") var name: String
    @OptionGroup var ownership: OwnershipOptions<RegisterOwnership>
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command to run, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        try NameArgument.check(name)
        if command.isEmpty { throw ValidationError("give the command to run after --") }
        try connection.check()
    }

    func run() throws { try reporting(json: output.json, execute) }

    func execute() throws(Failure) {
        // Found before the name is taken, and said in portctl's words (not
        // a shell's): status 127, as a shell gives for a missing command.
        guard FileSystem.executablePath(of: command[0], searchPath: CurrentProcess.environment("PATH")) != nil else {
            throw Failure(
                exitCode: 127,
                "cannot run \(command[0]): \(command[0].contains("/") ? "no executable file there" : "not found in PATH")")
        }
        let server = try connection.connect()
        let port = try ownership.take(name, on: server, connection: connection, output: output)
        // The child talks to the same portd as we do.
        let extra = ["\(DaemonPaths.socketVariable)=\(server.socketPath)"]
        let outcome: SocketActivation.Ending??
        do {
            outcome = try port.withReceiveRight { (listening) throws(SystemCallError) in
                try server.withConnection { (portd) throws(SystemCallError) in
                    try SocketActivation.run(
                        command, listening: listening, name: name, extraEnvironment: extra, portd: portd)
                }
            }
        } catch {
            throw Failure(.failure, "cannot run \(command[0]): \(error)")
        }
        guard case .some(.some(let ending)) = outcome else {
            throw Failure(.protocolError, "portd passed no listening socket for \(name)")
        }
        withExtendedLifetime(port) {}
        server.invalidate()  // releases the name now, before we exit
        if ending.portdWentAway {
            throw Failure(
                .portInvalid,
                "portd went away while \(command[0]) ran: \(name) is no longer registered; \(command[0]) was sent SIGTERM and ended (\(ending.termination))"
            )
        }
        if ending.termination != .exited(0) { throw Failure.silent(exitCode: ending.termination.shellStatus) }
    }
}
