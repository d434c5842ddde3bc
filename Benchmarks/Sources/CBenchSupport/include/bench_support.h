/*
 * bench_support.h: the few Linux calls the Swift benchmarks need that Swift's
 * Glibc module does not export (eventfd, sched_setaffinity with cpu_set_t
 * macros), the descriptor limit, and the per-thread allocation count of
 * malloc_counter.c. Benchmark-only; PortCore has its own
 * System/ layer and this target must not leak into it.
 */
#ifndef PORTD_BENCH_SUPPORT_H
#define PORTD_BENCH_SUPPORT_H

/* Pins the calling thread to `cpu`; 0 on success, -1 with errno set. */
int bench_pin_to_cpu(int cpu);

/* Number of CPUs this process may run on. */
int bench_cpu_count(void);

/* Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit. */
long bench_raise_nofile(void);

/* eventfd(0, EFD_CLOEXEC | (nonblocking ? EFD_NONBLOCK : 0)); -1 on error. */
int bench_eventfd(int nonblocking);

/* Adds one to an eventfd's counter / reads and resets it (blocking if the
 * descriptor is); 0 on success, -1 on error. */
int bench_eventfd_write(int fd);
int bench_eventfd_read(int fd);

/* errno of the last failed call above. */
int bench_errno(void);

/* Heap allocations (malloc, calloc, realloc, the aligned ones) made by the
 * calling thread so far, counted by malloc_counter.c's interposers. */
unsigned long long bench_malloc_count(void);

/* 1 when this process's allocations really go through the counter. */
int bench_malloc_interposed(void);

#endif
