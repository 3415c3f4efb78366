/* core/base/alloc.c — the host allocator: aligned blocks with a small header in
 * front, so that wf__free releases any of them, plus failure injection and an
 * allocation counter for tests.
 *
 * It does not pool or cache: every call goes to malloc/free. */
#include <config.h>

#include "base/alloc.h"

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sits immediately before every user pointer. Its size keeps 16-byte
 * alignment for the user pointer of small-alignment blocks. */
typedef struct block_header {
  void *base;   /* what malloc returned */
  size_t bytes; /* what the caller asked for */
  size_t align;
  size_t magic;
} block_header;

#define BLOCK_MAGIC ((size_t)0x77656674u) /* "weft" */
#define MIN_ALIGN ((size_t)16)

static atomic_long alloc_count;
static atomic_long fail_at; /* value of alloc_count that fails; 0: off */
static atomic_int fail_sticky;

/* Counts one allocation and says whether an injected failure fires. Off,
 * it costs a relaxed increment and a relaxed load: nothing is ordered by
 * these counters. */
static int injected_failure(void) {
  long n = atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
  long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
  if (at <= 0 || n < at)
    return 0;
  return n == at || atomic_load_explicit(&fail_sticky, memory_order_relaxed);
}

void wf__alloc_fail_after(long n, int sticky) {
  atomic_store(&fail_sticky, sticky != 0);
  atomic_store(&fail_at, n > 0 ? atomic_load(&alloc_count) + n : 0);
}

long wf__alloc_count(void) { return atomic_load(&alloc_count); }

static block_header *header_of(void *p) {
  block_header *h = (block_header *)p - 1;
  assert(h->magic == BLOCK_MAGIC && "pointer not from wf__alloc");
  return h;
}

void *wf__alloc(size_t bytes, size_t align) {
  size_t total;
  uintptr_t user;
  unsigned char *base;
  block_header *h;

  if (align == 0)
    align = 64;
  assert((align & (align - 1)) == 0 && "align must be a power of two");
  if (align < MIN_ALIGN)
    align = MIN_ALIGN;
  if (injected_failure())
    return NULL;
  if (bytes > SIZE_MAX - sizeof(block_header) - align)
    return NULL;
  total = bytes + sizeof(block_header) + align;
  base = malloc(total);
  if (!base)
    return NULL;
  user = ((uintptr_t)base + sizeof(block_header) + align - 1) &
         ~(uintptr_t)(align - 1);
  h = (block_header *)user - 1;
  h->base = base;
  h->bytes = bytes;
  h->align = align;
  h->magic = BLOCK_MAGIC;
  return (void *)user;
}

void *wf__calloc(size_t n, size_t size) {
  void *p;
  if (size != 0 && n > SIZE_MAX / size)
    return NULL;
  p = wf__alloc(n * size, MIN_ALIGN);
  if (p)
    memset(p, 0, n * size);
  return p;
}

void *wf__realloc(void *p, size_t bytes) {
  block_header *h;
  void *q;
  if (!p)
    return wf__alloc(bytes, MIN_ALIGN);
  h = header_of(p);
  q = wf__alloc(bytes, h->align);
  if (!q)
    return NULL;
  memcpy(q, p, h->bytes < bytes ? h->bytes : bytes);
  wf__free(p);
  return q;
}

void wf__free(void *p) {
  block_header *h;
  if (!p)
    return;
  h = header_of(p);
  h->magic = 0; /* a second free trips the assert instead of corrupting */
  free(h->base);
}

char *wf__strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = wf__alloc(len + 1, MIN_ALIGN);
  if (!d)
    return NULL;
  memcpy(d, s, len);
  d[len] = '\0';
  return d;
}

char *wf__strdup(const char *s) { return wf__strndup(s, SIZE_MAX); }

char *wf__asprintf(const char *fmt, ...) {
  va_list ap;
  int len;
  char *s;

  va_start(ap, fmt);
  len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (len < 0)
    return NULL;
  s = wf__alloc((size_t)len + 1, MIN_ALIGN);
  if (!s)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)len + 1, fmt, ap);
  va_end(ap);
  return s;
}
