/*
 * seqpacket_rights: the baseline for passing a send right in a request
 * (portcore.port.rtt.right): a round trip over an AF_UNIX SOCK_SEQPACKET
 * socketpair between two processes, both blocking, in which each request
 * carries one descriptor (SCM_RIGHTS; the same socket every time, as a
 * PortCore message lends its right's socket) and the sender's credentials
 * (SO_PASSCRED on the server's end, as a port has), in a record the size
 * of PortCore's (12-byte header, one 8-byte table entry). The server
 * receives the descriptor, closes it, and answers with a 12-byte record.
 *
 * Usage: seqpacket_rights [ITERATIONS]   (default 20000, times BENCH_SCALE)
 * Prints c.seqpacket.rtt.right.blocking. Client party 0, server party 1.
 */
#include "bench.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#define WARMUP 1000

static void serve(int fd) {
    char buf[64];
    char control[CMSG_SPACE(sizeof(int) * 4) + CMSG_SPACE(sizeof(struct ucred))];
    for (;;) {
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
        ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
        if (n == 0) return;
        if (n < 0) { if (errno == EINTR) continue; die("server recvmsg"); }
        int got = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                int passed;
                memcpy(&passed, CMSG_DATA(c), sizeof passed);
                close(passed);
                got++;
            }
        }
        if (got != 1) die("server: no descriptor");
        if (send(fd, buf, 12, MSG_NOSIGNAL) != 12) die("server send");
    }
}

static void round_trip(int fd, int passed) {
    char msg[20] = {0}, reply[64];
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &passed, sizeof passed);
    if (sendmsg(fd, &m, MSG_NOSIGNAL) != (ssize_t)sizeof msg) die("client sendmsg");
    ssize_t n;
    while ((n = recv(fd, reply, sizeof reply, 0)) < 0 && errno == EINTR) {}
    if (n != 12) die("client recv");
}

int main(int argc, char **argv) {
    pin_party(0);
    size_t iterations = scaled(argc > 1 ? strtoul(argv[1], NULL, 10) : 20000);
    int sv[2], spare[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) die("socketpair");
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, spare) < 0) die("socketpair");
    int on = 1;
    if (setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0) die("SO_PASSCRED");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        pin_party(1);
        close(sv[0]);
        close(spare[0]);
        close(spare[1]);
        serve(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    uint64_t *samples = malloc(iterations * sizeof *samples);
    if (!samples) die("malloc");
    for (size_t i = 0; i < WARMUP; i++) round_trip(sv[0], spare[0]);
    for (size_t i = 0; i < iterations; i++) {
        uint64_t t0 = now_ns();
        round_trip(sv[0], spare[0]);
        samples[i] = now_ns() - t0;
    }
    close(sv[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "server exited abnormally\n");
        exit(1);
    }
    report_latency("c.seqpacket.rtt.right.blocking", samples, iterations, NULL);
    free(samples);
    return 0;
}
