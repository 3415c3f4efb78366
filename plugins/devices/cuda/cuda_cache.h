/* plugins/devices/cuda/cuda_cache.h — a caching allocator over a backend's
 * malloc/free pair: size-bucketed free lists, statistics, and an
 * out-of-memory path that empties the cache and retries once.
 *
 * It knows nothing of CUDA: the plugin's backend is cudaMalloc/cudaFree on
 * one device (cuda_plugin.c), the test's is a fake that can run out of
 * memory on demand. Blocks are opaque pointers that the cache never
 * dereferences. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_CACHE_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* Smallest block handed out; every block size is a multiple of it. */
#define WF_CUCACHE_MIN_BLOCK ((size_t)512)

/* What a backend's malloc returns. */
#define WF_CUCACHE_BACKEND_OK 0
#define WF_CUCACHE_BACKEND_NOMEM 1 /* out of memory: emptying the cache may help */
#define WF_CUCACHE_BACKEND_ERROR 2 /* any other failure: retrying will not */

/* Allocates `bytes` (a bucket size, > 0) into *out. On failure returns
 * WF_CUCACHE_BACKEND_NOMEM or _ERROR and writes why (terminated, at most
 * whylen bytes), e.g. "cudaErrorMemoryAllocation: out of memory". */
typedef int cucache_malloc_fn(void *ctx, size_t bytes, void **out,
                                  char *why, size_t whylen);
/* Gives back a block that malloc returned. */
typedef void cucache_free_fn(void *ctx, void *ptr);

typedef struct cucache_backend {
  cucache_malloc_fn *malloc;
  cucache_free_fn *free;
  void *ctx;
  const char *name; /* for messages: "cuda:0" */
} cucache_backend;

typedef struct cucache_stats {
  size_t in_use;   /* bytes of the blocks handed out (bucket sizes) */
  size_t cached;   /* bytes of free blocks kept for reuse */
  size_t peak;     /* the largest in_use so far */
  uint64_t allocs; /* successful cucache_block_alloc calls (bytes > 0) */
  uint64_t hits;   /* of which a cached block served */
  uint64_t backend_allocs;
  uint64_t backend_frees;
  uint64_t flushes; /* times an out-of-memory backend made the cache empty */
} cucache_stats;

typedef struct cucache cucache;

/* The bucket size a request of `bytes` gets: WF_CUCACHE_MIN_BLOCK up to
 * it, then the next of four steps per power of two (2^k, 1.25 2^k,
 * 1.5 2^k, 1.75 2^k), so at most a quarter is wasted. 0 when bytes is too
 * large to round. */
size_t cucache_round(size_t bytes);

/* A new, empty cache over backend (copied). Owned by the caller; free it
 * with cucache_free. NULL when out of host memory. */
cucache *cucache_new(const cucache_backend *backend);

/* Gives every block back to the backend — cached ones and any still in
 * use — and frees the cache. Returns how many bytes were still in use
 * (blocks their owners never freed). c may be NULL. */
size_t cucache_free(cucache *c);

/* A block of at least `bytes` into *out: a cached block of the same
 * bucket when there is one, else a new one from the backend. When the
 * backend is out of memory and blocks are cached, they are all given back
 * and the backend is asked once more. bytes == 0 gives *out = NULL.
 * Returns 0, or a WF_* status code with why (terminated, at most whylen
 * bytes) saying what was asked and what the cache held:
 * WF_RESOURCE_EXHAUSTED when memory ran out (device or host), WF_INTERNAL
 * when the backend failed otherwise. Thread-safe. */
int cucache_block_alloc(cucache *c, size_t bytes, void **out,
                            char *why, size_t whylen);

/* Takes back a block from cucache_block_alloc and keeps it for reuse.
 * The caller must be done with it: work still queued on the block must be
 * ordered before any later user's (same stream) or complete. Returns 0,
 * or -1 when ptr is not a block this cache handed out (nothing changes).
 * ptr NULL is a no-op. Thread-safe. */
int cucache_block_free(cucache *c, void *ptr);

/* Gives every cached (free) block back to the backend; returns the bytes
 * given back. Blocks in use are untouched. Thread-safe. */
size_t cucache_trim(cucache *c);

/* A snapshot of the statistics. Thread-safe. */
void cucache_stats_get(cucache *c, cucache_stats *out);

#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_CACHE_H */
