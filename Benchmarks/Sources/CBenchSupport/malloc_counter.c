/*
 * malloc_counter.c: counts heap allocations per thread, for the allocation
 * figures of portcore-bench (portcore.alloc.*, scripts/bench --json's
 * allocs_per_msg_send and allocs_per_msg_receive).
 *
 * How: this executable defines malloc, calloc, realloc, posix_memalign,
 * aligned_alloc and memalign itself. An executable's definitions come first
 * in the dynamic linker's lookup order, and the linker exports them to the
 * dynamic symbol table because the shared libraries linked in (the Swift
 * runtime, Foundation, libc) reference them: so every allocation of the
 * process, the Swift runtime's swift_slowAlloc included, comes through here
 * and goes on to glibc's own allocator (__libc_malloc and friends, which
 * glibc exports for exactly this). The chunks stay glibc's, so free and
 * malloc_usable_size (which Swift's arrays ask) need no wrapper.
 *
 * Invariants: the counters are thread-local (initial-exec TLS of the
 * executable: no allocation to reach them, so no recursion), counted always
 * (one increment per call: a few instructions beside the allocator's
 * hundred), and read by the thread that wants its own count.
 * bench_malloc_interposed() says whether the interposition took (a
 * benchmark checks it before it reports a count).
 */
#define _GNU_SOURCE
#include "bench_support.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static __thread uint64_t allocations __attribute__((tls_model("initial-exec")));

unsigned long long bench_malloc_count(void) { return allocations; }

__attribute__((visibility("default"))) void *malloc(size_t size) {
    allocations++;
    return __libc_malloc(size);
}

__attribute__((visibility("default"))) void *calloc(size_t count, size_t size) {
    allocations++;
    return __libc_calloc(count, size);
}

__attribute__((visibility("default"))) void *realloc(void *pointer, size_t size) {
    allocations++;
    return __libc_realloc(pointer, size);
}

__attribute__((visibility("default"))) void *memalign(size_t alignment, size_t size) {
    allocations++;
    return __libc_memalign(alignment, size);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t size) {
    allocations++;
    return __libc_memalign(alignment, size);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    allocations++;
    void *p = __libc_memalign(alignment, size);
    if (p == NULL && size != 0) return ENOMEM;
    *out = p;
    return 0;
}

int bench_malloc_interposed(void) {
    uint64_t before = allocations;
    /* A call the compiler cannot fold away: through a volatile pointer. */
    void *(*volatile allocate)(size_t) = malloc;
    extern void free(void *);
    free(allocate(16));
    return allocations == before + 1;
}
