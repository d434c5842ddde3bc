/*
 * seqpacket_pingpong: round-trip latency of an AF_UNIX SOCK_SEQPACKET
 * ping-pong between two processes (fork), the baseline for PortCore's
 * request/reply. Each round trip is one record each way, timed by the client
 * with CLOCK_MONOTONIC; warm-up round trips are not recorded.
 *
 * Variants, for 16 B and 1 KiB payloads:
 *   blocking      both sides block in recv: the physical limit.
 *   epoll_server  the server does what an event loop does: epoll_wait, then
 *                 recv until EAGAIN, replying to each record.
 *   epoll_both    the client also waits for the reply in epoll_wait (as a
 *                 request waiting in a private run-loop mode would).
 *
 * Usage: seqpacket_pingpong [ITERATIONS]   (default 20000, times BENCH_SCALE)
 * The client is party 0 and the server party 1 (see BENCH_CPUS in bench.h).
 */
#include "bench.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>

enum variant { BLOCKING, EPOLL_SERVER, EPOLL_BOTH };
static const char *variant_names[] = {"blocking", "epoll_server", "epoll_both"};

#define WARMUP 1000
#define MAX_PAYLOAD 1024

static void set_nonblocking(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) die("fcntl");
}

/* Echoes every record back until the peer closes. */
static void serve(int fd, enum variant v) {
    char buf[MAX_PAYLOAD];
    if (v == BLOCKING) {
        for (;;) {
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n == 0) return;
            if (n < 0) { if (errno == EINTR) continue; die("server recv"); }
            if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n) die("server send");
        }
    }
    set_nonblocking(fd);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
    for (;;) {
        struct epoll_event out[8];
        int k = epoll_wait(ep, out, 8, -1);
        if (k < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
        for (;;) { /* drain, as a run-loop port handler must */
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n == 0) return;
            if (n < 0) {
                if (errno == EAGAIN) break;
                if (errno == EINTR) continue;
                die("server recv");
            }
            if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n) die("server send");
        }
    }
}

/* One request/reply from the client side. */
static void round_trip(int fd, int ep, const char *msg, size_t size, char *reply) {
    if (send(fd, msg, size, MSG_NOSIGNAL) != (ssize_t)size) die("client send");
    if (ep < 0) {
        ssize_t n;
        while ((n = recv(fd, reply, MAX_PAYLOAD, 0)) < 0 && errno == EINTR) {}
        if (n != (ssize_t)size) die("client recv");
        return;
    }
    for (;;) {
        struct epoll_event out[1];
        int k = epoll_wait(ep, out, 1, -1);
        if (k < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
        ssize_t n = recv(fd, reply, MAX_PAYLOAD, 0);
        if (n == (ssize_t)size) return;
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        die("client recv");
    }
}

static void run(size_t size, enum variant v, size_t iterations) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) die("socketpair");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        pin_party(1);
        close(sv[0]);
        serve(sv[1], v);
        _exit(0);
    }
    close(sv[1]);
    int fd = sv[0], ep = -1;
    if (v == EPOLL_BOTH) {
        set_nonblocking(fd);
        ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) die("epoll_create1");
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
    }
    char msg[MAX_PAYLOAD], reply[MAX_PAYLOAD];
    memset(msg, 0x5a, sizeof msg);
    uint64_t *samples = malloc(iterations * sizeof *samples);
    if (!samples) die("malloc");
    for (size_t i = 0; i < WARMUP; i++) round_trip(fd, ep, msg, size, reply);
    for (size_t i = 0; i < iterations; i++) {
        uint64_t t0 = now_ns();
        round_trip(fd, ep, msg, size, reply);
        samples[i] = now_ns() - t0;
    }
    close(fd);
    if (ep >= 0) close(ep);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "server exited abnormally\n");
        exit(1);
    }
    char name[96];
    snprintf(name, sizeof name, "c.seqpacket.rtt.%s.%s", size == 16 ? "16B" : "1KiB", variant_names[v]);
    report_latency(name, samples, iterations, NULL);
    free(samples);
}

int main(int argc, char **argv) {
    pin_party(0);
    size_t iterations = scaled(argc > 1 ? strtoul(argv[1], NULL, 10) : 20000);
    static const size_t sizes[] = {16, 1024};
    for (size_t s = 0; s < 2; s++)
        for (int v = BLOCKING; v <= EPOLL_BOTH; v++) run(sizes[s], (enum variant)v, iterations);
    return 0;
}
