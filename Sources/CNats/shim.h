#ifndef PORTD_CNATS_SHIM_H
#define PORTD_CNATS_SHIM_H
/* libnats, the official NATS C client (Debian libnats-dev), for
 * portd-bridge only. Nothing but the library's own header: every policy
 * lives in Swift (Sources/PortBridge/Nats*.swift). */
#include <nats/nats.h>
#endif
