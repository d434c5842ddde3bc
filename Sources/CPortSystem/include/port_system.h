/*
 * port_system.h: the kernel interfaces PortCore needs that Swift's Glibc
 * module does not export (epoll, eventfd, timerfd, signalfd, memfd, struct
 * ucred, SCM_CREDENTIALS) and the CMSG_* function-like macros, which Swift
 * never imports. Thin wrappers only: errno handling and policy live in Swift
 * (Sources/PortCore/System).
 */
#ifndef PORT_SYSTEM_H
#define PORT_SYSTEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <errno.h>

/* struct ucred needs _GNU_SOURCE, which cannot reach the prebuilt Glibc
 * module; this mirror has the same layout (see unix(7)). */
typedef struct port_ucred {
    pid_t pid;
    uid_t uid;
    gid_t gid;
} port_ucred;

#define PORT_SCM_CREDENTIALS 0x02 /* SCM_CREDENTIALS, unix(7) */
#define PORT_SO_PASSCRED 16       /* SO_PASSCRED, socket(7) */
#define PORT_SO_PEERCRED 17       /* SO_PEERCRED, socket(7) */
#define PORT_SO_PEERGROUPS 59     /* SO_PEERGROUPS, socket(7), Linux 4.13 */

/* open(2)'s O_PATH (x86-64 and arm64 alike): glibc defines it only under
 * _GNU_SOURCE. port_system.c checks it against the real definition. */
#define PORT_O_PATH 010000000

/* memfd_create(2) flags and file seals (fcntl(2), "File Sealing"): defined by
 * glibc only under _GNU_SOURCE. port_system.c checks these against the real
 * definitions at compile time. */
#define PORT_MFD_CLOEXEC 0x0001U
#define PORT_MFD_ALLOW_SEALING 0x0002U
#define PORT_MFD_NOEXEC_SEAL 0x0008U /* Linux 6.3+; EINVAL before */
#define PORT_F_ADD_SEALS 1033
#define PORT_F_GET_SEALS 1034
#define PORT_F_SEAL_SEAL 0x0001
#define PORT_F_SEAL_SHRINK 0x0002
#define PORT_F_SEAL_GROW 0x0004
#define PORT_F_SEAL_WRITE 0x0008
#define PORT_F_SEAL_FUTURE_WRITE 0x0010
#define PORT_F_SEAL_EXEC 0x0020
/* lseek(2) whences that find data and holes (Linux 3.1; shmem since 3.8). */
#define PORT_SEEK_DATA 3
#define PORT_SEEK_HOLE 4

/* The largest number of descriptors one SCM_RIGHTS message may carry
 * (SCM_MAX_FD in the kernel's include/net/scm.h; not exported to user space). */
#define PORT_SCM_MAX_FD 253

/* CMSG_* (cmsg(3)) as functions. */
static inline struct cmsghdr *port_cmsg_firsthdr(struct msghdr *m) { return CMSG_FIRSTHDR(m); }
static inline struct cmsghdr *port_cmsg_nxthdr(struct msghdr *m, struct cmsghdr *c) { return CMSG_NXTHDR(m, c); }
static inline unsigned char *port_cmsg_data(struct cmsghdr *c) { return CMSG_DATA(c); }
static inline size_t port_cmsg_space(size_t len) { return CMSG_SPACE(len); }
static inline size_t port_cmsg_len(size_t len) { return CMSG_LEN(len); }

/* GNU extensions, defined in port_system.c under _GNU_SOURCE. */
int port_accept4(int fd, int flags);
int port_memfd_create(const char *name, unsigned int flags);
int port_pipe2(int fds[2], int flags);
/* pidfd_open(2) (Linux 5.3): a descriptor that polls readable when the
 * process exits; CLOEXEC by definition. */
int port_pidfd_open(pid_t pid);
/* gettid(2): the calling thread's id (the process id on the main thread). */
pid_t port_gettid(void);
/* fcntl(F_ADD_SEALS / F_GET_SEALS): fcntl is variadic, so it gets a fixed
 * signature here. */
int port_add_seals(int fd, unsigned int seals);
int port_get_seals(int fd);
/* recvmmsg(2) (many records in one call), without a timeout: struct
 * mmsghdr needs _GNU_SOURCE, so this mirror has its layout, checked in
 * port_system.c. */
typedef struct port_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
} port_mmsghdr;
int port_recvmmsg(int fd, port_mmsghdr *msgs, unsigned int vlen, int flags);

/* malloc_trim(3): glibc's <malloc.h> is not part of Swift's Glibc module. */
int port_malloc_trim(void);

/* errno as a function: Swift reads it right after the call it belongs to. */
int port_errno(void);

/* libdispatch's interface for the main run loop (the one Core Foundation
 * uses): the main queue's wake-up descriptor (an eventfd on Linux, owned by
 * libdispatch, readable when work was queued on the main queue) and the call
 * that drains the main queue, on the main thread. Exported by libdispatch but
 * declared in no public header. */
int _dispatch_get_main_queue_handle_4CF(void);
void _dispatch_main_queue_callback_4CF(void *msg);

/* ThreadSanitizer's annotations (compiler-rt's tsan_interface.h): referenced
 * only by code compiled with PORTD_TSAN, which scripts/test defines in its
 * ThreadSanitizer build, where the runtime that defines them is linked in. */
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);

#endif
