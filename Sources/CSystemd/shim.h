#ifndef PORTD_CSYSTEMD_SHIM_H
#define PORTD_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#endif
