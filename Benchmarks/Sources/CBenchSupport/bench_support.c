/*
 * bench_support.c: see include/bench_support.h. _GNU_SOURCE is defined here
 * because cpu_set_t and sched_setaffinity are GNU extensions.
 */
#define _GNU_SOURCE
#include "bench_support.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

int bench_pin_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

int bench_cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return CPU_COUNT(&set);
}

long bench_raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
    }
    return (long)rl.rlim_cur;
}

int bench_eventfd(int nonblocking) {
    return eventfd(0, EFD_CLOEXEC | (nonblocking ? EFD_NONBLOCK : 0));
}

int bench_eventfd_write(int fd) {
    uint64_t one = 1;
    for (;;) {
        ssize_t r = write(fd, &one, sizeof one);
        if (r == (ssize_t)sizeof one) return 0;
        if (r < 0 && errno == EINTR) continue;
        return -1;
    }
}

int bench_eventfd_read(int fd) {
    uint64_t value;
    for (;;) {
        ssize_t r = read(fd, &value, sizeof value);
        if (r == (ssize_t)sizeof value) return 0;
        if (r < 0 && errno == EINTR) continue;
        return -1;
    }
}

int bench_errno(void) { return errno; }
