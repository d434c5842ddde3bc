/*
 * loop_baseline: the kernel primitives a PortCore run loop is built on,
 * measured raw, as baselines for the run-loop benchmarks of issue 2:
 *
 *   c.eventfd.wakeup        a thread asleep in epoll_wait on an eventfd is
 *                           woken by another thread's write; latency from
 *                           just before the write to just after the wait
 *                           returns (baseline for signal() -> perform).
 *   c.timerfd.lateness.1ms  a one-shot CLOCK_MONOTONIC timerfd armed for an
 *                           absolute deadline 1 ms ahead, waited for in
 *                           epoll_wait; lateness = wake-up - deadline
 *                           (baseline for a PCTimer's lateness).
 *   c.epoll.pass.idleN      epoll_wait(timeout 0) with N registered eventfds
 *                           that never become ready, N = 1 and 10,000; each
 *                           sample is the mean of a batch of 100 calls
 *                           (baseline for one run-loop pass).
 *
 * Usage: loop_baseline [SCALE-INDEPENDENT: none]; counts scale with
 * BENCH_SCALE. The signalling thread is party 0, the woken thread party 1.
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

/* --- wake-up ----------------------------------------------------------- */

struct wake {
    int ep, signal_fd, done_fd;
    size_t n;
    _Atomic uint64_t sent_at;
    uint64_t *samples;
};

static void *waiter(void *arg) {
    struct wake *w = arg;
    pin_party(1);
    for (size_t i = 0; i < w->n;) {
        struct epoll_event ev;
        int k = epoll_wait(w->ep, &ev, 1, -1);
        uint64_t t = now_ns();
        if (k < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
        uint64_t v;
        if (read(w->signal_fd, &v, 8) != 8) die("read(eventfd)");
        w->samples[i++] = t - atomic_load(&w->sent_at);
        uint64_t one = 1;
        if (write(w->done_fd, &one, 8) != 8) die("write(eventfd)");
    }
    return NULL;
}

static void wakeup(size_t n) {
    struct wake w = {.n = n};
    w.samples = malloc(n * sizeof *w.samples);
    w.ep = epoll_create1(EPOLL_CLOEXEC);
    w.signal_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    w.done_fd = eventfd(0, EFD_CLOEXEC); /* blocking: the signaller waits on it */
    if (!w.samples || w.ep < 0 || w.signal_fd < 0 || w.done_fd < 0) die("setup");
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(w.ep, EPOLL_CTL_ADD, w.signal_fd, &ev) < 0) die("epoll_ctl");
    pthread_t t;
    if (pthread_create(&t, NULL, waiter, &w) != 0) die("pthread_create");
    /* Between signals the waiter must be back asleep: a short pause. */
    struct timespec gap = {.tv_nsec = 50000};
    for (size_t i = 0; i < n; i++) {
        nanosleep(&gap, NULL);
        atomic_store(&w.sent_at, now_ns());
        uint64_t one = 1, v;
        if (write(w.signal_fd, &one, 8) != 8) die("write(eventfd)");
        if (read(w.done_fd, &v, 8) != 8) die("read(eventfd)");
    }
    pthread_join(t, NULL);
    report_latency("c.eventfd.wakeup", w.samples, n, NULL);
    close(w.ep); close(w.signal_fd); close(w.done_fd);
    free(w.samples);
}

/* --- timer lateness ------------------------------------------------------ */

static void timer_lateness(size_t n) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    uint64_t *samples = malloc(n * sizeof *samples);
    if (ep < 0 || tfd < 0 || !samples) die("setup");
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) die("epoll_ctl");
    for (size_t i = 0; i < n; i++) {
        uint64_t deadline = now_ns() + 1000000;
        struct itimerspec its = {.it_value = {.tv_sec = (time_t)(deadline / 1000000000u),
                                              .tv_nsec = (long)(deadline % 1000000000u)}};
        if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) die("timerfd_settime");
        for (;;) {
            int k = epoll_wait(ep, &ev, 1, -1);
            if (k > 0) break;
            if (k < 0 && errno != EINTR) die("epoll_wait");
        }
        samples[i] = now_ns() - deadline;
        uint64_t expirations;
        if (read(tfd, &expirations, 8) != 8) die("read(timerfd)");
    }
    report_latency("c.timerfd.lateness.1ms", samples, n, NULL);
    close(ep); close(tfd);
    free(samples);
}

/* --- pass cost ------------------------------------------------------------ */

#define BATCH 100

static void pass_cost(size_t idle, size_t n) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int *fds = malloc(idle * sizeof *fds);
    uint64_t *samples = malloc(n * sizeof *samples);
    if (ep < 0 || !fds || !samples) die("setup");
    for (size_t i = 0; i < idle; i++) {
        fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (fds[i] < 0) die("eventfd (raise the descriptor limit)");
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) die("epoll_ctl");
    }
    struct epoll_event out[64];
    for (size_t i = 0; i < 1000; i++) epoll_wait(ep, out, 64, 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        for (int b = 0; b < BATCH; b++)
            if (epoll_wait(ep, out, 64, 0) != 0) die("epoll_wait: an idle source is ready");
        samples[i] = (now_ns() - t0) / BATCH;
    }
    char name[64];
    snprintf(name, sizeof name, "c.epoll.pass.idle%zu", idle);
    report_latency(name, samples, n, "batch=100");
    for (size_t i = 0; i < idle; i++) close(fds[i]);
    close(ep);
    free(fds); free(samples);
}

int main(void) {
    pin_party(0);
    raise_nofile();
    wakeup(scaled(5000));
    timer_lateness(scaled(500));
    pass_cost(1, scaled(2000));
    pass_cost(10000, scaled(2000));
    return 0;
}
