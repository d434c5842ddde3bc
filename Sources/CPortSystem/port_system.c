/* GNU extensions wrapped where _GNU_SOURCE can be defined (see the header). */
#define _GNU_SOURCE
#include <malloc.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <sys/syscall.h>
#include <stddef.h>
#include "port_system.h"

int port_accept4(int fd, int flags) { return accept4(fd, NULL, NULL, flags); }
int port_memfd_create(const char *name, unsigned int flags) { return memfd_create(name, flags); }
int port_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }
int port_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
int port_errno(void) { return errno; }
pid_t port_gettid(void) { return (pid_t)syscall(SYS_gettid); }
int port_add_seals(int fd, unsigned int seals) { return fcntl(fd, F_ADD_SEALS, seals); }
int port_get_seals(int fd) { return fcntl(fd, F_GET_SEALS); }
int port_recvmmsg(int fd, port_mmsghdr *msgs, unsigned int vlen, int flags) {
    return recvmmsg(fd, (struct mmsghdr *)msgs, vlen, flags, NULL);
}

/* The header mirrors these without _GNU_SOURCE; keep the mirrors honest. */
_Static_assert(PORT_MFD_CLOEXEC == MFD_CLOEXEC, "MFD_CLOEXEC");
_Static_assert(PORT_SEEK_DATA == SEEK_DATA, "SEEK_DATA");
_Static_assert(PORT_SEEK_HOLE == SEEK_HOLE, "SEEK_HOLE");
_Static_assert(PORT_MFD_ALLOW_SEALING == MFD_ALLOW_SEALING, "MFD_ALLOW_SEALING");
_Static_assert(PORT_F_ADD_SEALS == F_ADD_SEALS, "F_ADD_SEALS");
_Static_assert(PORT_F_GET_SEALS == F_GET_SEALS, "F_GET_SEALS");
_Static_assert(PORT_O_PATH == O_PATH, "O_PATH");
_Static_assert(PORT_F_SEAL_SEAL == F_SEAL_SEAL, "F_SEAL_SEAL");
_Static_assert(PORT_F_SEAL_SHRINK == F_SEAL_SHRINK, "F_SEAL_SHRINK");
_Static_assert(PORT_F_SEAL_GROW == F_SEAL_GROW, "F_SEAL_GROW");
_Static_assert(PORT_F_SEAL_WRITE == F_SEAL_WRITE, "F_SEAL_WRITE");
_Static_assert(PORT_SCM_CREDENTIALS == SCM_CREDENTIALS, "SCM_CREDENTIALS");
_Static_assert(PORT_SO_PASSCRED == SO_PASSCRED, "SO_PASSCRED");
_Static_assert(PORT_SO_PEERCRED == SO_PEERCRED, "SO_PEERCRED");
_Static_assert(sizeof(port_ucred) == sizeof(struct ucred), "struct ucred");
_Static_assert(sizeof(port_mmsghdr) == sizeof(struct mmsghdr), "struct mmsghdr");
_Static_assert(offsetof(port_mmsghdr, msg_len) == offsetof(struct mmsghdr, msg_len), "mmsghdr.msg_len");

int port_malloc_trim(void) { return malloc_trim(0); }
