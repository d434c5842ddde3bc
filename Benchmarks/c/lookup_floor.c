/*
 * lookup_floor: the kernel's floor under portd.lookup.8clients: the system
 * calls a name server cannot avoid to answer a LOOKUP with a fresh
 * connection to the name's owner, made by C with nothing else around them.
 *
 *   8 clients (threads, party 0), each with its own SOCK_SEQPACKET
 *   connection to the server: send a 48-byte request, wait for the reply
 *   (blocking recvmsg), take the descriptor it carries, close it.
 *
 *   the server (a thread, party 1), as portd: one epoll over its client
 *   connections (level-triggered, one record per ready connection per
 *   pass); per request: recvmsg, socket(AF_UNIX, SOCK_SEQPACKET), connect()
 *   to the owner's socket file (non-blocking: EAGAIN when the owner's
 *   backlog is full, answered as portd answers `limit`, and the client
 *   asks again), sendmsg of a 32-byte reply carrying the connected socket
 *   (SCM_RIGHTS), close.
 *
 *   the owner (a thread, party 1): its listening socket bound in a
 *   directory of its own; accept4 and close each connection (the least an
 *   owner can do).
 *
 * No parsing, no registry, no credentials check, no logging: what is left
 * is the kernel's work (and the scheduler's, with 10 threads), the floor
 * portd's figure is argued from (docs/BENCHMARKS.md).
 *
 * With --server-process the server runs in a process of its own (forked
 * once the connections exist), as portd does: every LOOKUP then crosses
 * between two address spaces twice, which a name server cannot avoid.
 *
 * Usage: lookup_floor [--server-process] [LOOKUPS]   (default 100000,
 * times BENCH_SCALE). Prints c.lookup.8clients (c.lookup.8clients.process
 * with --server-process; unit=msg/s) and, on stderr, how many LOOKUPs
 * were asked again because the owner's backlog was full.
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#define CLIENTS 8

static struct sockaddr_un owner_address;
static int server_ends[CLIENTS];
static int client_ends[CLIENTS];
static size_t shares[CLIENTS];
static atomic_long retries;
static atomic_int stop_owner;

static void *owner_main(void *arg) {
    int listener = *(int *)arg;
    pin_party(1);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("owner epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = listener};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev) < 0) die("owner epoll_ctl");
    while (!atomic_load(&stop_owner)) {
        struct epoll_event got[8];
        int n = epoll_wait(ep, got, 8, 100);
        if (n < 0) { if (errno == EINTR) continue; die("owner epoll_wait"); }
        for (int i = 0; i < n; i++) {
            for (;;) {
                int c = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0) { if (errno == EAGAIN || errno == EINTR) break; die("owner accept4"); }
                close(c);
            }
        }
    }
    close(ep);
    return NULL;
}

/* One LOOKUP answered: a connected socket, or a 'limit' reply (no descriptor). */
static void answer(int fd) {
    char request[64];
    struct iovec iov = {.iov_base = request, .iov_len = sizeof request};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n <= 0) { if (n < 0 && (errno == EAGAIN || errno == EINTR)) return; die("server recvmsg"); }
    char reply[32] = "serial=1\0name=bench.floor\0found";
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) die("server socket");
    int connected = connect(s, (struct sockaddr *)&owner_address, sizeof owner_address) == 0;
    if (!connected && errno != EAGAIN) die("server connect");
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec out = {.iov_base = reply, .iov_len = sizeof reply};
    struct msghdr r = {.msg_iov = &out, .msg_iovlen = 1};
    if (connected) {
        r.msg_control = control;
        r.msg_controllen = sizeof control;
        struct cmsghdr *c = CMSG_FIRSTHDR(&r);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &s, sizeof s);
    } else {
        reply[sizeof reply - 1] = 'L';  /* the client reads: limit */
    }
    if (sendmsg(fd, &r, MSG_NOSIGNAL) != (ssize_t)sizeof reply) die("server sendmsg");
    close(s);
}

static void *server_main(void *arg) {
    (void)arg;
    pin_party(1);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("server epoll_create1");
    for (int i = 0; i < CLIENTS; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = server_ends[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, server_ends[i], &ev) < 0) die("server epoll_ctl");
    }
    int open_clients = CLIENTS;
    while (open_clients > 0) {
        struct epoll_event got[CLIENTS];
        int n = epoll_wait(ep, got, CLIENTS, -1);
        if (n < 0) { if (errno == EINTR) continue; die("server epoll_wait"); }
        for (int i = 0; i < n; i++) {
            if (got[i].events & (EPOLLHUP | EPOLLERR)) {
                epoll_ctl(ep, EPOLL_CTL_DEL, got[i].data.fd, NULL);
                open_clients--;
                continue;
            }
            answer(got[i].data.fd);
        }
    }
    close(ep);
    return NULL;
}

static void *client_main(void *arg) {
    int index = (int)(intptr_t)arg;
    int fd = client_ends[index];
    pin_party(0);
    char request[48] = "serial=1\0name=bench.floor\0cached=0";
    for (size_t done = 0; done < shares[index];) {
        if (send(fd, request, sizeof request, MSG_NOSIGNAL) != (ssize_t)sizeof request) die("client send");
        char reply[64];
        char control[CMSG_SPACE(sizeof(int) * 4)];
        struct iovec iov = {.iov_base = reply, .iov_len = sizeof reply};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
        ssize_t n;
        while ((n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {}
        if (n != 32) die("client recvmsg");
        int right = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(&right, CMSG_DATA(c), sizeof right);
        }
        if (right < 0) {
            atomic_fetch_add(&retries, 1);
            sched_yield();
            continue;
        }
        close(right);
        done++;
    }
    shutdown(fd, SHUT_RDWR);
    return NULL;
}

int main(int argc, char **argv) {
    int server_process = argc > 1 && strcmp(argv[1], "--server-process") == 0;
    if (server_process) { argc--; argv++; }
    size_t lookups = scaled(argc > 1 ? strtoul(argv[1], NULL, 10) : 100000);
    raise_nofile();
    char directory[] = "/tmp/lookup-floor-XXXXXX";
    if (!mkdtemp(directory)) die("mkdtemp");
    owner_address.sun_family = AF_UNIX;
    snprintf(owner_address.sun_path, sizeof owner_address.sun_path, "%s/p1", directory);
    int listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listener < 0) die("socket");
    if (bind(listener, (struct sockaddr *)&owner_address, sizeof owner_address) < 0) die("bind");
    if (listen(listener, SOMAXCONN) < 0) die("listen");
    for (int i = 0; i < CLIENTS; i++) {
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) die("socketpair");
        client_ends[i] = pair[0];
        server_ends[i] = pair[1];
        shares[i] = lookups / CLIENTS + ((size_t)i < lookups % CLIENTS ? 1 : 0);
    }
    pthread_t owner, server, clients[CLIENTS];
    pid_t child = -1;
    if (server_process) {
        child = fork();
        if (child < 0) die("fork");
        if (child == 0) {
            for (int i = 0; i < CLIENTS; i++) close(client_ends[i]);
            close(listener);
            server_main(NULL);
            _exit(0);
        }
        for (int i = 0; i < CLIENTS; i++) close(server_ends[i]);
    }
    if (pthread_create(&owner, NULL, owner_main, &listener) != 0) die("pthread_create");
    if (!server_process && pthread_create(&server, NULL, server_main, NULL) != 0) die("pthread_create");
    uint64_t t0 = now_ns();
    for (int i = 0; i < CLIENTS; i++) {
        if (pthread_create(&clients[i], NULL, client_main, (void *)(intptr_t)i) != 0) die("pthread_create");
    }
    for (int i = 0; i < CLIENTS; i++) pthread_join(clients[i], NULL);
    uint64_t elapsed = now_ns() - t0;
    if (server_process) {
        int status;
        if (waitpid(child, &status, 0) < 0) die("waitpid");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("the server process failed");
    } else {
        pthread_join(server, NULL);
    }
    atomic_store(&stop_owner, 1);
    pthread_join(owner, NULL);
    unlink(owner_address.sun_path);
    rmdir(directory);
    printf("name=c.lookup.8clients%s cpus=%s unit=msg/s value=%.0f mb_per_s=0.0 n=%zu\n",
           server_process ? ".process" : "", placement(),
           lookups * 1e9 / (double)elapsed, lookups);
    fflush(stdout);
    long r = atomic_load(&retries);
    if (r > 0) fprintf(stderr, "lookup_floor: %ld LOOKUPs answered limit (the owner's backlog full) and asked again\n", r);
    return 0;
}
