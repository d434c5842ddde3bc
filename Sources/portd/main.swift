// main: the portd executable. Everything it does is in the PortDaemon
// library (PortdMain: parse → set up → run → exit code).

import PortDaemon

PortdMain.run()
