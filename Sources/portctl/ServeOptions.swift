// ServeOptions: what `listen` and `checkin` do with the messages their port
// receives: print each (text or --json, at most --max-bytes of each
// component), or run --exec COMMAND for each; stop after --count messages;
// give up when --timeout passes without one.

import ArgumentParser

struct ServeOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("Exit (status 0) after N messages.", valueName: "n"))
    var count: Int?

    @Option(
        help: ArgumentHelp(
            "Run COMMAND (with /bin/sh -c) once per message: data components on its standard input, "
                + "details in PORTCTL_* variables; its output is the reply.",
            valueName: "command"))
    var exec: String?

    @Option(parsing: .unconditional, help: MessageRendering.maxBytesHelp)
    var maxBytes: Int?

    func validate() throws {
        try MessageRendering.check(maxBytes: maxBytes)
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let exec, exec.isEmpty { throw ValidationError("--exec needs a command") }
    }
}
