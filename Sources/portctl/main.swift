// main: portctl's process shell, parse → run → exit code (docs/DESIGN.md §5),
// all three done by swift-argument-parser: a verb's `run()` either returns
// (status 0) or throws an ExitCode from ExitStatus after printing why.
// SIGPIPE is ignored first, so a closed standard output or a command that
// stops reading its input is an error value (EPIPE), not a crash.

import PortCore

try? CurrentProcess.ignore(signal: Signal.brokenPipe)
PortctlCommand.main()
