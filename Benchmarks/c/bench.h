/*
 * bench.h: what every C baseline shares: the monotonic clock, samples and
 * their statistics, and the one result-line format scripts/bench parses.
 *
 * A result line is space-separated key=value pairs, always starting with
 * name= cpus= unit=; latencies carry median= p99= mean= (in unit) and
 * ops_per_s=, throughputs carry value= (in unit) and, where bytes move,
 * mb_per_s= (seqpacket_oneway prints its own, with its repetitions).
 * Nothing else is printed on stdout; diagnostics go to stderr.
 * Header-only (static inline functions) so each program is one `cc` command.
 *
 * Placement (BENCH_CPUS): on a VM, waking a process on an idle other CPU
 * costs tens of microseconds, far more than the software being measured, so
 * every program pins its parties itself and says where in cpus=:
 *   same   every party on CPU 0 (software cost: syscalls, context switches);
 *   split  party 0 (client, receiver) on CPU 0, party 1 (server, senders)
 *          on CPU 1 (adds the cross-CPU wake-up a real deployment may pay).
 * Figures are only compared with figures of the same placement.
 */
#ifndef PORTD_BENCH_H
#define PORTD_BENCH_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Nanoseconds on CLOCK_MONOTONIC: the clock PortCore's run loop uses. */
static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void die(const char *what) {
    fprintf(stderr, "%s: %s\n", what, strerror(errno));
    exit(1);
}

/* "same" or "split", from BENCH_CPUS (default same). */
static inline const char *placement(void) {
    const char *p = getenv("BENCH_CPUS");
    return p && strcmp(p, "split") == 0 ? "split" : "same";
}

/* Pins the calling process (or thread) to its party's CPU. */
static inline void pin_party(int party) {
    int cpu = strcmp(placement(), "split") == 0 ? party : 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) < 0) die("sched_setaffinity");
}

static inline int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts `ns` in place and prints one latency line, in microseconds. The
 * p99 is the sample at rank ceil(0.99 n) - 1 of the sorted list. */
static inline void report_latency(const char *name, uint64_t *ns, size_t n, const char *extra) {
    qsort(ns, n, sizeof ns[0], cmp_u64);
    long double sum = 0;
    for (size_t i = 0; i < n; i++) sum += ns[i];
    size_t p99 = (size_t)((n * 99 + 99) / 100);
    if (p99 > 0) p99--;
    double mean = (double)(sum / n);
    printf("name=%s cpus=%s unit=us median=%.3f p99=%.3f mean=%.3f ops_per_s=%.0f n=%zu%s%s\n",
           name, placement(), ns[n / 2] / 1e3, ns[p99] / 1e3, mean / 1e3, 1e9 / mean, n,
           extra ? " " : "", extra ? extra : "");
    fflush(stdout);
}

/* Scales an iteration count by BENCH_SCALE (e.g. 0.1 for a smoke run). */
static inline size_t scaled(size_t n) {
    const char *s = getenv("BENCH_SCALE");
    if (!s) return n;
    double f = atof(s);
    size_t r = (size_t)(n * f);
    return r < 10 ? 10 : r;
}

/* Raises the soft descriptor limit to the hard one (10,000 idle sources). */
static inline void raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* write/read exactly n bytes on a blocking descriptor (pipes for start/stop). */
static inline void write_full(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0) { if (errno == EINTR) continue; die("write"); }
        p += r; n -= (size_t)r;
    }
}

static inline void read_full(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0) { if (errno == EINTR) continue; die("read"); }
        if (r == 0) { fprintf(stderr, "read: unexpected end of file\n"); exit(1); }
        p += r; n -= (size_t)r;
    }
}

#endif
