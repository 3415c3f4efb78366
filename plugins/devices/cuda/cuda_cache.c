/* plugins/devices/cuda/cuda_cache.c — the caching allocator of cuda_cache.h:
 * one LIFO stack of free blocks per bucket, a hash table of the blocks in
 * use (so a free needs no size and a foreign pointer is caught), all under
 * one mutex; the backend is called with the mutex held.
 *
 * It does not split or merge blocks, move a request to a larger bucket, or
 * limit how much it caches: memory goes back to the backend only when the
 * backend runs out, on trim, and when the cache is freed. */
#include <config.h>

#include "cuda_cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/types.h>

/* Four buckets per power of two from 2^9 (WF_CUCACHE_MIN_BLOCK) to 2^63. */
#define MIN_SHIFT 9
#define NUM_BUCKETS ((64 - MIN_SHIFT) * 4)

_Static_assert(WF_CUCACHE_MIN_BLOCK == (size_t)1 << MIN_SHIFT,
               "MIN_SHIFT must match WF_CUCACHE_MIN_BLOCK");

typedef struct stack {
  void **ptrs;
  size_t n, cap;
} stack;

/* A block in use; size 0 marks an empty slot. */
typedef struct live {
  void *ptr;
  size_t size;
} live;

struct cucache {
  cucache_backend backend;
  pthread_mutex_t mu;
  stack free[NUM_BUCKETS];
  live *table; /* open addressing, linear probing; a power of two long */
  size_t table_cap, table_n;
  cucache_stats stats;
};

static int floor_log2(size_t x) {
  assert(x > 0);
  return 63 - __builtin_clzll((unsigned long long)x);
}

size_t cucache_round(size_t bytes) {
  size_t step;

  if (bytes <= WF_CUCACHE_MIN_BLOCK)
    return WF_CUCACHE_MIN_BLOCK;
  /* Bucket sizes in (2^k, 2^(k+1)] are multiples of 2^(k-2). */
  step = (size_t)1 << (floor_log2(bytes - 1) - 2);
  if (bytes > SIZE_MAX - (step - 1))
    return 0;
  return (bytes + step - 1) / step * step;
}

/* The bucket index of a bucket size (from cucache_round). */
static int bucket_of(size_t size) {
  int k = floor_log2(size);
  size_t j = (size - ((size_t)1 << k)) >> (k - 2);

  assert(k >= MIN_SHIFT && j < 4);
  return (k - MIN_SHIFT) * 4 + (int)j;
}

/* Renders bytes for messages: "512 bytes", "3.5 MiB". */
static const char *human(size_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = -1;

  if (bytes < 1024) {
    snprintf(buf, len, "%zu bytes", bytes);
    return buf;
  }
  while (v >= 1024 && u < 3) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, "%.1f %s", v, units[u]);
  return buf;
}

/* ---- the table of blocks in use ----------------------------------------- */

static size_t slot_of(const cucache *c, const void *ptr) {
  /* Device pointers are at least 256-aligned: drop the zero bits. */
  uint64_t h = ((uint64_t)(uintptr_t)ptr >> 8) * UINT64_C(0x9E3779B97F4A7C15);
  return (size_t)(h >> 32) & (c->table_cap - 1);
}

/* Index of ptr's slot, or of the empty slot where it would go. */
static size_t table_find(const cucache *c, const void *ptr) {
  size_t i = slot_of(c, ptr);

  while (c->table[i].size && c->table[i].ptr != ptr)
    i = (i + 1) & (c->table_cap - 1);
  return i;
}

/* Doubles the table (or makes the first); -1 when out of host memory. */
static int table_grow(cucache *c) {
  size_t cap = c->table_cap ? c->table_cap * 2 : 64;
  live *old = c->table;
  size_t old_cap = c->table_cap;
  live *t = calloc(cap, sizeof *t);

  if (!t)
    return -1;
  c->table = t;
  c->table_cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].size)
      c->table[table_find(c, old[i].ptr)] = old[i];
  free(old);
  return 0;
}

/* Records a block in use; -1 when out of host memory. */
static int table_add(cucache *c, void *ptr, size_t size) {
  size_t i;

  if ((c->table_n + 1) * 2 > c->table_cap && table_grow(c))
    return -1;
  i = table_find(c, ptr);
  assert(!c->table[i].size);
  c->table[i] = (live){ptr, size};
  c->table_n++;
  return 0;
}

/* Removes ptr; its size, or 0 when it is not in the table. Later slots of
 * the same run shift back so that lookups never stop early. */
static size_t table_remove(cucache *c, const void *ptr) {
  size_t mask = c->table_cap - 1, i, j, size;

  if (!c->table_cap)
    return 0;
  i = table_find(c, ptr);
  size = c->table[i].size;
  if (!size)
    return 0;
  c->table[i].size = 0;
  c->table_n--;
  for (j = (i + 1) & mask; c->table[j].size; j = (j + 1) & mask) {
    size_t home = slot_of(c, c->table[j].ptr);
    /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
    if ((j > i && (home <= i || home > j)) ||
        (j < i && home <= i && home > j)) {
      c->table[i] = c->table[j];
      c->table[j].size = 0;
      i = j;
    }
  }
  return size;
}

/* ---- cache --------------------------------------------------------------- */

cucache *cucache_new(const cucache_backend *backend) {
  cucache *c;

  assert(backend && backend->malloc && backend->free);
  c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->backend = *backend;
  if (!c->backend.name)
    c->backend.name = "device";
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

static void backend_free(cucache *c, void *ptr) {
  c->backend.free(c->backend.ctx, ptr);
  c->stats.backend_frees++;
}

/* Gives every cached block back; the mutex is held. */
static size_t trim_locked(cucache *c) {
  size_t freed = 0;

  for (int b = 0; b < NUM_BUCKETS; b++) {
    stack *s = &c->free[b];
    for (size_t i = 0; i < s->n; i++)
      backend_free(c, s->ptrs[i]);
    s->n = 0;
  }
  freed = c->stats.cached;
  c->stats.cached = 0;
  return freed;
}

size_t cucache_free(cucache *c) {
  size_t leaked = 0;

  if (!c)
    return 0;
  trim_locked(c);
  for (size_t i = 0; i < c->table_cap; i++) {
    if (!c->table[i].size)
      continue;
    leaked += c->table[i].size;
    backend_free(c, c->table[i].ptr);
  }
  for (int b = 0; b < NUM_BUCKETS; b++)
    free(c->free[b].ptrs);
  free(c->table);
  pthread_mutex_destroy(&c->mu);
  free(c);
  return leaked;
}

/* Asks the backend for a block of size; when it is out of memory and
 * blocks are cached, empties the cache and asks once more. Mutex held. */
static int backend_alloc(cucache *c, size_t size, size_t bytes,
                         void **out, char *why, size_t whylen) {
  char reason[256], h1[32], h2[32], h3[32];
  size_t flushed = 0;
  int rc;

  reason[0] = '\0';
  rc = c->backend.malloc(c->backend.ctx, size, out, reason, sizeof reason);
  if (rc == WF_CUCACHE_BACKEND_NOMEM && c->stats.cached) {
    flushed = trim_locked(c);
    c->stats.flushes++;
    reason[0] = '\0';
    rc = c->backend.malloc(c->backend.ctx, size, out, reason, sizeof reason);
  }
  if (rc == WF_CUCACHE_BACKEND_OK) {
    c->stats.backend_allocs++;
    return 0;
  }
  *out = NULL;
  if (rc == WF_CUCACHE_BACKEND_NOMEM) {
    snprintf(why, whylen,
             "%s: out of memory allocating %zu bytes (a %s block) with %s "
             "in use%s%s (%s)",
             c->backend.name, bytes, human(size, h1, sizeof h1),
             human(c->stats.in_use, h2, sizeof h2),
             flushed ? ", after giving back the cache's " : "",
             flushed ? human(flushed, h3, sizeof h3) : "",
             reason[0] ? reason : "the backend gave no reason");
    return WF_RESOURCE_EXHAUSTED;
  }
  snprintf(why, whylen, "%s: allocating %zu bytes failed (%s)",
           c->backend.name, bytes,
           reason[0] ? reason : "the backend gave no reason");
  return WF_INTERNAL;
}

int cucache_block_alloc(cucache *c, size_t bytes, void **out,
                            char *why, size_t whylen) {
  size_t size = cucache_round(bytes);
  stack *s;
  void *ptr = NULL;
  int rc = 0;

  assert(c && out && why && whylen > 0);
  *out = NULL;
  why[0] = '\0';
  if (bytes == 0)
    return 0;
  if (!size) {
    snprintf(why, whylen, "%s: %zu bytes is more than any device holds",
             c->backend.name, bytes);
    return WF_RESOURCE_EXHAUSTED;
  }
  s = &c->free[bucket_of(size)];
  pthread_mutex_lock(&c->mu);
  if (s->n) {
    ptr = s->ptrs[--s->n];
    c->stats.cached -= size;
    c->stats.hits++;
  } else if ((rc = backend_alloc(c, size, bytes, &ptr, why, whylen)) != 0) {
    goto out;
  }
  if (table_add(c, ptr, size)) {
    /* The block cannot be tracked: it goes back rather than leak. */
    backend_free(c, ptr);
    snprintf(why, whylen,
             "%s: out of host memory for the allocator's bookkeeping",
             c->backend.name);
    rc = WF_RESOURCE_EXHAUSTED;
    goto out;
  }
  c->stats.allocs++;
  c->stats.in_use += size;
  if (c->stats.in_use > c->stats.peak)
    c->stats.peak = c->stats.in_use;
  *out = ptr;

out:
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int cucache_block_free(cucache *c, void *ptr) {
  size_t size;
  stack *s;

  if (!ptr)
    return 0;
  pthread_mutex_lock(&c->mu);
  size = table_remove(c, ptr);
  if (!size) {
    pthread_mutex_unlock(&c->mu);
    return -1;
  }
  c->stats.in_use -= size;
  s = &c->free[bucket_of(size)];
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    void **grown = realloc(s->ptrs, cap * sizeof *grown);
    if (!grown) {
      /* No room to remember it: the backend takes it back now. */
      backend_free(c, ptr);
      pthread_mutex_unlock(&c->mu);
      return 0;
    }
    s->ptrs = grown;
    s->cap = cap;
  }
  s->ptrs[s->n++] = ptr;
  c->stats.cached += size;
  pthread_mutex_unlock(&c->mu);
  return 0;
}

size_t cucache_trim(cucache *c) {
  size_t freed;

  pthread_mutex_lock(&c->mu);
  freed = trim_locked(c);
  pthread_mutex_unlock(&c->mu);
  return freed;
}

void cucache_stats_get(cucache *c, cucache_stats *out) {
  pthread_mutex_lock(&c->mu);
  *out = c->stats;
  pthread_mutex_unlock(&c->mu);
}
