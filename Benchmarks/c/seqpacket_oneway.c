/*
 * seqpacket_oneway: one-way throughput over AF_UNIX SOCK_SEQPACKET, the
 * baseline for PortCore's one-way sends. Senders are forked processes, each
 * with its own connected socketpair to the receiver (as each send right is);
 * they start together on a byte from a pipe, send as fast as blocking sends
 * allow, and the receiver times from the start signal to the last record.
 *
 * Cases:
 *   1 sender, 64 B and 4 KiB, receiver blocking in recv or, as an event
 *   loop does, in epoll_wait followed by recv until EAGAIN;
 *   1 sender, 64 B, two more epoll receivers that say what PortCore's
 *   receive pays and what it could save: `epoll_passcred` receives with
 *   SO_PASSCRED on and a control buffer (recvmsg, as PortCore does: the
 *   sender's credentials come with every record), `epoll_recvmmsg` the
 *   same with recvmmsg(2), up to 16 records a call (each slot 64 KiB);
 *   8 senders, 64 B, one epoll receiver draining whichever is ready.
 *
 * Usage: seqpacket_oneway [MESSAGES]   (per run, default 60000, times
 * BENCH_SCALE; 5 runs per case, the median reported). The receiver is
 * party 0, every sender party 1.
 */
#include "bench.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define MAX_SENDERS 8
#define MAX_PAYLOAD 4096
#define BATCH 16

/* How the receiver waits and reads. */
enum mode { BLOCKING, EPOLL, EPOLL_PASSCRED, EPOLL_RECVMMSG };
static const char *mode_name[] = {"blocking", "epoll", "epoll_passcred", "epoll_recvmmsg"};

/* Reads what is queued on fd until EAGAIN or end of stream; returns the
 * records of `size` read (anything else is fatal). */
static uint64_t drain(int fd, size_t size, enum mode mode) {
    static char slots[BATCH][65536];
    static char control[BATCH][CMSG_SPACE(sizeof(struct ucred))];
    uint64_t got = 0;
    if (mode == EPOLL_RECVMMSG) {
        struct mmsghdr m[BATCH];
        struct iovec iov[BATCH];
        for (;;) {
            memset(m, 0, sizeof m);
            for (int i = 0; i < BATCH; i++) {
                iov[i] = (struct iovec){.iov_base = slots[i], .iov_len = sizeof slots[i]};
                m[i].msg_hdr.msg_iov = &iov[i];
                m[i].msg_hdr.msg_iovlen = 1;
                m[i].msg_hdr.msg_control = control[i];
                m[i].msg_hdr.msg_controllen = sizeof control[i];
            }
            int n = recvmmsg(fd, m, BATCH, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, NULL);
            if (n < 0 && errno == EAGAIN) return got;
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) die("recvmmsg");
            for (int i = 0; i < n; i++) {
                if (m[i].msg_len == 0) return got; /* end of stream: every later slot says so too */
                if (m[i].msg_len != size) die("recvmmsg length");
                got++;
            }
        }
    }
    for (;;) {
        ssize_t n;
        if (mode == EPOLL_PASSCRED) {
            struct iovec iov = {.iov_base = slots[0], .iov_len = sizeof slots[0]};
            struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
            h.msg_control = control[0];
            h.msg_controllen = sizeof control[0];
            n = recvmsg(fd, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        } else {
            n = recv(fd, slots[0], MAX_PAYLOAD, 0);
        }
        if (n == (ssize_t)size) { got++; continue; }
        if (n < 0 && errno == EAGAIN) return got;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) return got; /* sender done and closed */
        die("recv");
    }
}

static void sender(int fd, int go, size_t size, uint64_t count) {
    char buf[MAX_PAYLOAD];
    memset(buf, 0xa5, sizeof buf);
    char b;
    read_full(go, &b, 1);
    for (uint64_t i = 0; i < count; i++) {
        ssize_t n = send(fd, buf, size, MSG_NOSIGNAL);
        if (n != (ssize_t)size) {
            if (n < 0 && errno == EINTR) { i--; continue; }
            die("sender send");
        }
    }
}

/* One timed run; returns the nanoseconds from the start signal to the last record. */
static uint64_t run(int senders, size_t size, enum mode mode, uint64_t per_sender) {
    int fds[MAX_SENDERS], go[2];
    pid_t pids[MAX_SENDERS];
    if (pipe2(go, O_CLOEXEC) < 0) die("pipe2");
    for (int s = 0; s < senders; s++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) die("socketpair");
        pids[s] = fork();
        if (pids[s] < 0) die("fork");
        if (pids[s] == 0) {
            pin_party(1);
            close(sv[0]);
            close(go[1]);
            sender(sv[1], go[0], size, per_sender);
            _exit(0);
        }
        close(sv[1]);
        fds[s] = sv[0];
    }
    close(go[0]);

    int ep = -1;
    if (mode != BLOCKING) {
        ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) die("epoll_create1");
        for (int s = 0; s < senders; s++) {
            int fl = fcntl(fds[s], F_GETFL);
            if (fcntl(fds[s], F_SETFL, fl | O_NONBLOCK) < 0) die("fcntl");
            int on = 1;
            if (mode >= EPOLL_PASSCRED && setsockopt(fds[s], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0)
                die("setsockopt SO_PASSCRED");
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)s};
            if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[s], &ev) < 0) die("epoll_ctl");
        }
    }

    char buf[MAX_PAYLOAD];
    uint64_t total = per_sender * (uint64_t)senders, got = 0;
    char start[MAX_SENDERS];
    memset(start, 'g', sizeof start);
    uint64_t t0 = now_ns();
    write_full(go[1], start, (size_t)senders);
    if (mode == BLOCKING) {
        while (got < total) {
            ssize_t n = recv(fds[0], buf, sizeof buf, 0);
            if (n == (ssize_t)size) got++;
            else if (!(n < 0 && errno == EINTR)) die("recv");
        }
    } else {
        while (got < total) {
            struct epoll_event out[MAX_SENDERS];
            int k = epoll_wait(ep, out, MAX_SENDERS, -1);
            if (k < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
            for (int i = 0; i < k; i++) got += drain(fds[out[i].data.u32], size, mode); /* as a port handler must */
        }
    }
    uint64_t elapsed = now_ns() - t0;
    close(go[1]);
    for (int s = 0; s < senders; s++) {
        int status;
        waitpid(pids[s], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "sender exited abnormally\n");
            exit(1);
        }
        close(fds[s]);
    }
    if (ep >= 0) close(ep);
    return elapsed;
}

/* REPS runs of one case; reports the median run (throughput is noisier than
 * latency: one preempted sender skews a whole run), and the slowest and
 * fastest as min_per_s= and max_per_s=. */
#define REPS 5
static void measure(int senders, size_t size, enum mode mode, uint64_t per_run) {
    uint64_t per_sender = per_run / (uint64_t)senders, elapsed[REPS];
    for (int r = 0; r < REPS; r++) elapsed[r] = run(senders, size, mode, per_sender);
    qsort(elapsed, REPS, sizeof elapsed[0], cmp_u64);
    char name[96];
    snprintf(name, sizeof name, "c.seqpacket.oneway.%s.%dto1.%s",
             size == 64 ? "64B" : "4KiB", senders, mode_name[mode]);
    uint64_t count = per_sender * (uint64_t)senders;
    printf("name=%s cpus=%s unit=msg/s value=%.0f mb_per_s=%.1f n=%llu reps=%d min_per_s=%.0f max_per_s=%.0f\n",
           name, placement(), count / (elapsed[REPS / 2] / 1e9),
           count * (double)size / (elapsed[REPS / 2] / 1e9) / 1e6, (unsigned long long)count, REPS,
           count / (elapsed[REPS - 1] / 1e9), count / (elapsed[0] / 1e9));
    fflush(stdout);
}

int main(int argc, char **argv) {
    pin_party(0);
    uint64_t messages = scaled(argc > 1 ? strtoul(argv[1], NULL, 10) : 60000);
    measure(1, 64, BLOCKING, messages);
    measure(1, 64, EPOLL, messages);
    measure(1, 64, EPOLL_PASSCRED, messages);
    measure(1, 64, EPOLL_RECVMMSG, messages);
    measure(1, 4096, BLOCKING, messages);
    measure(1, 4096, EPOLL, messages);
    measure(8, 64, EPOLL, messages);
    return 0;
}
