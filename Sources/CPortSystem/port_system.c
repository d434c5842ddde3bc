/* GNU extensions wrapped where _GNU_SOURCE can be defined (see the header). */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include "port_system.h"

int port_accept4(int fd, int flags) { return accept4(fd, NULL, NULL, flags); }
int port_memfd_create(const char *name, unsigned int flags) { return memfd_create(name, flags); }
int port_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }
int port_errno(void) { return errno; }
