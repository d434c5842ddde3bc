// main: portctl's process shell, parse → run → exit code (STYLE.md §13),
// all three done by swift-argument-parser: a verb's `run()` either returns
// (status 0) or throws an ExitCode from ExitStatus after printing why.

PortctlCommand.main()
