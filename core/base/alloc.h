/* core/base/alloc.h — the host allocator: aligned memory that may cross the
 * plugin boundary, with failure injection for tests.
 *
 * Every allocation of the core that a test may want to fail goes through
 * here. wf__free accepts what wf__alloc, wf__calloc and wf__realloc
 * return, and NULL. */
#ifndef WF_CORE_ALLOC_H
#define WF_CORE_ALLOC_H

#include <stddef.h>

/* align: a power of two, 0 means 64. Returns NULL when out of memory (or
 * when an injected failure fires). */
void *wf__alloc(size_t bytes, size_t align);
void *wf__calloc(size_t n, size_t size); /* 16-byte aligned, zeroed */
void *wf__realloc(void *p, size_t bytes); /* for wf__calloc'd memory */
void wf__free(void *p);
char *wf__strdup(const char *s);
char *wf__strndup(const char *s, size_t n);
/* printf into a new wf__alloc'd string; NULL when out of memory. */
char *wf__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Failure injection (tests): the n-th allocation from now (1 = the next
 * one) fails, and every one after it if `sticky`. n = 0 switches it off.
 * Not thread-safe with respect to concurrent allocations. */
void wf__alloc_fail_after(long n, int sticky);
/* Number of allocations since the process started (for tests that count). */
long wf__alloc_count(void);

#endif
