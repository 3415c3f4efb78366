/* plugins/devices/cpu/cpu_alloc.c — the CPU device's allocator: aligned host
 * memory, NUMA-local to the device's cores where the machine has several
 * NUMA nodes and hwloc can bind, plain posix_memalign memory otherwise.
 *
 * It does not pool, cache or zero memory: each call is one system
 * allocation. */
#include <config.h>

#include "cpu_device.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Sits immediately before every pointer handed out, so that free knows how
 * the block was made whatever size the caller passes back. */
typedef struct block_header {
  void *base;     /* what posix_memalign or hwloc returned */
  size_t total;   /* bytes at base (hwloc_free needs them) */
  uint32_t kind;  /* BLOCK_PLAIN or BLOCK_BOUND */
  uint32_t magic; /* BLOCK_MAGIC while live */
} block_header;

#define BLOCK_PLAIN 1u /* posix_memalign: free() */
#define BLOCK_BOUND 2u /* hwloc_alloc_membind: hwloc_free() */
#define BLOCK_MAGIC UINT32_C(0x63707521) /* "cpu!" */

_Static_assert(sizeof(block_header) <= WF_CPU_MIN_ALIGN,
               "the header must fit in the alignment padding");

/* Allocates NUMA-local memory for dev, or returns NULL when the system will
 * not bind it. A refusal other than lack of memory switches binding off for
 * the device, with one warning, so that later calls do not retry. */
static void *alloc_bound(cpudev *dev, size_t total) {
  const cpudev_plugin *p = dev->plugin;
  void *base;
  int err;

  base = hwloc_alloc_membind(p->topo, total, dev->nodeset,
                             HWLOC_MEMBIND_BIND,
                             HWLOC_MEMBIND_STRICT | HWLOC_MEMBIND_BYNODESET);
  if (base)
    return base;
  err = errno;
  if (err != ENOMEM) {
    atomic_store(&dev->bind, 0);
    if (!atomic_exchange(&dev->bind_warned, 1))
      wfx_host->log(WF_LOG_WARNING, "device-cpu",
                    "cpu:%d: the system refused to bind memory to its NUMA "
                    "nodes (%s); allocating unbound memory from now on",
                    dev->index, strerror(err));
  }
  return NULL;
}

void *cpudev_alloc(void *device_state, size_t bytes, size_t align) {
  cpudev *dev = device_state;
  unsigned char *base = NULL;
  uint32_t kind = BLOCK_PLAIN;
  uintptr_t user;
  size_t total;
  block_header *h;

  assert(dev && dev->plugin);
  assert((align & (align - 1)) == 0 && "align must be a power of two");
  if (align < WF_CPU_MIN_ALIGN)
    align = WF_CPU_MIN_ALIGN;
  /* Room for the header and for aligning a base that is only page- (or
   * less) aligned: the user pointer lies within [base + header, base +
   * header + align). */
  if (bytes > SIZE_MAX - sizeof(block_header) - align)
    return NULL;
  total = bytes + sizeof(block_header) + align;
  if (atomic_load(&dev->bind)) {
    base = alloc_bound(dev, total);
    if (base)
      kind = BLOCK_BOUND;
  }
  if (!base) {
    void *mem;
    if (posix_memalign(&mem, align, total))
      return NULL;
    base = mem;
  }
  user = ((uintptr_t)base + sizeof(block_header) + align - 1) &
         ~(uintptr_t)(align - 1);
  assert(user + bytes <= (uintptr_t)base + total);
  h = (block_header *)user - 1;
  h->base = base;
  h->total = total;
  h->kind = kind;
  h->magic = BLOCK_MAGIC;
  return (void *)user;
}

void cpudev_free(void *device_state, void *ptr, size_t bytes) {
  cpudev *dev = device_state;
  block_header *h;
  void *base;

  (void)bytes; /* the header knows the block's real size */
  if (!ptr)
    return;
  assert(dev && dev->plugin);
  h = (block_header *)ptr - 1;
  assert(h->magic == BLOCK_MAGIC &&
         "pointer not from this device's allocator, or freed twice");
  h->magic = 0;
  base = h->base;
  if (h->kind == BLOCK_BOUND) {
    hwloc_free(dev->plugin->topo, base, h->total);
  } else {
    assert(h->kind == BLOCK_PLAIN);
    free(base);
  }
}
