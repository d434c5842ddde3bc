#ifndef PORTD_CSYSTEMD_SHIM_H
#define PORTD_CSYSTEMD_SHIM_H
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

/* Frees the name array sd_listen_fds_with_names(3) returns: each of its
 * `count` strings, then the array (both malloc'd by libsystemd). */
static inline void portd_free_strv(char **names, int count) {
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
}
#endif
