/*
 * memfd_transfer: the baseline for a 64 MiB PortCore component sent as a
 * sealed memfd (issue 3). One transfer is what the port has to do, done by
 * hand: the sender (party 0) creates a memfd, writes 64 MiB into it, seals
 * it (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW) and sends the descriptor
 * with SCM_RIGHTS in a SOCK_SEQPACKET record; the receiver (party 1, a
 * forked process) checks the seals and the size, maps it read-only, reads
 * every byte (a sum of 64-bit words), unmaps, closes and answers with the
 * sum. A sample is the whole exchange, from memfd_create to the answer.
 *
 * Usage: memfd_transfer [TRANSFERS]   (default 20, times BENCH_SCALE).
 * Prints c.memfd.64MiB with mb_per_s (64 MiB / mean time).
 */
#include "bench.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SIZE (64u << 20)
#define SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)

static uint64_t sum_words(const uint64_t *p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += p[i];
    return s;
}

static void receiver(int sock) {
    for (;;) {
        char byte;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } control;
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = control.buf, .msg_controllen = sizeof control.buf};
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n == 0) return;
        if (n < 0) { if (errno == EINTR) continue; die("recvmsg"); }
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (!c || c->cmsg_type != SCM_RIGHTS || (msg.msg_flags & MSG_CTRUNC)) {
            fprintf(stderr, "memfd_transfer: no descriptor\n");
            exit(1);
        }
        int fd;
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
        struct stat st;
        if ((fcntl(fd, F_GET_SEALS) & SEALS) != SEALS || fstat(fd, &st) < 0 || st.st_size != SIZE) {
            fprintf(stderr, "memfd_transfer: bad seals or size\n");
            exit(1);
        }
        const uint64_t *p = mmap(NULL, SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) die("mmap");
        uint64_t s = sum_words(p, SIZE / 8);
        munmap((void *)p, SIZE);
        close(fd);
        if (send(sock, &s, sizeof s, MSG_NOSIGNAL) != sizeof s) die("send");
    }
}

int main(int argc, char **argv) {
    pin_party(0);
    size_t n = scaled(argc > 1 ? strtoul(argv[1], NULL, 10) : 20);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) die("socketpair");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        pin_party(1);
        close(sv[0]);
        receiver(sv[1]);
        _exit(0);
    }
    close(sv[1]);

    uint64_t *data = malloc(SIZE);
    if (!data) die("malloc");
    for (size_t i = 0; i < SIZE / 8; i++) data[i] = i;
    uint64_t expected = sum_words(data, SIZE / 8);
    uint64_t *samples = malloc((n + 2) * sizeof *samples);
    if (!samples) die("malloc");
    for (size_t i = 0; i < n + 2; i++) { /* the first 2 are warm-up */
        uint64_t t0 = now_ns();
        int fd = memfd_create("portd-bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) die("memfd_create");
        if (ftruncate(fd, SIZE) < 0) die("ftruncate");
        for (size_t off = 0; off < SIZE;) {
            ssize_t w = pwrite(fd, (char *)data + off, SIZE - off, (off_t)off);
            if (w < 0) { if (errno == EINTR) continue; die("pwrite"); }
            off += (size_t)w;
        }
        if (fcntl(fd, F_ADD_SEALS, SEALS) < 0) die("F_ADD_SEALS");
        char byte = 'c';
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } control;
        memset(&control, 0, sizeof control);
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = control.buf, .msg_controllen = sizeof control.buf};
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
        if (sendmsg(sv[0], &msg, MSG_NOSIGNAL) != 1) die("sendmsg");
        close(fd);
        uint64_t sum;
        if (recv(sv[0], &sum, sizeof sum, 0) != sizeof sum) die("recv");
        if (sum != expected) { fprintf(stderr, "memfd_transfer: wrong sum\n"); exit(1); }
        samples[i] = now_ns() - t0;
    }
    close(sv[0]);
    waitpid(pid, NULL, 0);
    long double total = 0;
    for (size_t i = 2; i < n + 2; i++) total += samples[i];
    char extra[64];
    snprintf(extra, sizeof extra, "mb_per_s=%.1f", SIZE / 1e6 / ((double)(total / n) / 1e9));
    report_latency("c.memfd.64MiB", samples + 2, n, extra);
    return 0;
}
