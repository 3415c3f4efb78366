/* plugins/devices/cpu/cpu_describe.c — the text `weft devices` shows for a
 * CPU device: CPU model, cores and processing units, NUMA nodes with their
 * memory, caches per level, and how memory is allocated.
 *
 * It reads the hwloc topology only; it neither changes it nor measures
 * anything (no bandwidth, no clock rates). */
#include <config.h>

#include "cpu_device.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A bounded text being appended to; once full, later appends are dropped
 * and the text is marked as cut. */
typedef struct text {
  char *buf;
  size_t size, len;
  int cut;
} text;

static void put(text *t, const char *fmt, ...) WF_PRINTF_LIKE(2, 3);
static void put(text *t, const char *fmt, ...) {
  va_list ap;
  int n;

  if (t->cut)
    return;
  va_start(ap, fmt);
  n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= t->size - t->len) {
    t->len = t->size - 1;
    t->cut = 1;
    return;
  }
  t->len += (size_t)n;
}

/* Writes a byte count in the largest binary unit that keeps it exact (or
 * nearly: "4.3 GiB" for sizes no unit divides). */
static void put_size(text *t, unsigned long long bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned long long scale = 1;
  int u = 0;

  while (u < 4 && bytes >= scale * 1024) {
    scale *= 1024;
    u++;
  }
  if (bytes % scale == 0)
    put(t, "%llu %s", bytes / scale, units[u]);
  else if (u > 0 && bytes % (scale / 1024) == 0 &&
           bytes / (scale / 1024) < 10000)
    put(t, "%llu %s", bytes / (scale / 1024), units[u - 1]);
  else
    put(t, "%.1f %s", (double)bytes / (double)scale, units[u]);
}

/* A bitmap as a list ("0-3,8-11"). */
static void put_list(text *t, hwloc_const_bitmap_t set) {
  char buf[256];

  if (hwloc_bitmap_list_snprintf(buf, sizeof(buf), set) >= (int)sizeof(buf))
    strcpy(buf + sizeof(buf) - 4, "...");
  put(t, "%s", buf);
}

/* "AMD EPYC, 1 package": the distinct CPU models of the packages that hold
 * the device's PUs, plus the machine's product name when the firmware gives
 * one. */
static void put_model(text *t, hwloc_topology_t topo, hwloc_const_bitmap_t cs) {
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  const char *vendor = hwloc_obj_get_info_by_name(root, "DMISysVendor");
  const char *product = hwloc_obj_get_info_by_name(root, "DMIProductName");
  const char *models[8];
  int num_models = 0, num_packages = 0, more = 0;
  hwloc_obj_t pkg = NULL;

  while ((pkg = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pkg))) {
    const char *m;
    int seen = 0;

    if (!pkg->cpuset || !hwloc_bitmap_intersects(pkg->cpuset, cs))
      continue;
    num_packages++;
    m = hwloc_obj_get_info_by_name(pkg, "CPUModel");
    if (!m || !*m)
      continue;
    for (int i = 0; i < num_models; i++)
      seen |= strcmp(models[i], m) == 0;
    if (seen)
      continue;
    if (num_models < (int)(sizeof(models) / sizeof(models[0])))
      models[num_models++] = m;
    else
      more = 1;
  }
  if (num_models == 0)
    put(t, "CPU model unknown");
  for (int i = 0; i < num_models; i++)
    put(t, "%s%s", i ? " + " : "", models[i]);
  if (more)
    put(t, " + others");
  if (num_packages > 0)
    put(t, ", %d package%s", num_packages, num_packages == 1 ? "" : "s");
  if (product && *product)
    put(t, " (machine: %s%s%s)", vendor && *vendor ? vendor : "",
        vendor && *vendor ? " " : "", product);
  put(t, "\n");
}

/* "2 cores, 2 processing units (PUs 0-1)"; a device with part of the
 * machine also says which part. */
static void put_cores(text *t, const cpudev *dev) {
  const cpudev_plugin *p = dev->plugin;
  int pus = hwloc_bitmap_weight(dev->cpuset);
  int last = dev->first_unit + dev->num_units - 1;

  if (p->unit_type == HWLOC_OBJ_CORE) {
    put(t, "%d core%s", dev->num_units, dev->num_units == 1 ? "" : "s");
    if (dev->num_units < p->num_units) {
      put(t, " of %d (logical core", p->num_units);
      if (last > dev->first_unit)
        put(t, "s %d-%d)", dev->first_unit, last);
      else
        put(t, " %d)", last);
    }
    put(t, ", ");
  } else {
    put(t, "cores unknown to hwloc, ");
  }
  put(t, "%d processing unit%s", pus, pus == 1 ? "" : "s");
  if (p->unit_type == HWLOC_OBJ_PU && dev->num_units < p->num_units)
    put(t, " of %d", p->num_units);
  put(t, " (PUs ");
  put_list(t, dev->cpuset);
  put(t, ")\n");
}

/* One run of NUMA nodes with consecutive numbers and the same memory
 * size: "3: 32 GiB" or "0-1: 64 GiB each". */
static void put_node_run(text *t, unsigned first, unsigned last,
                         unsigned long long bytes, int comma) {
  put(t, "%s%u", comma ? ", " : "", first);
  if (last > first)
    put(t, "-%u", last);
  put(t, ": ");
  if (bytes) {
    put_size(t, bytes);
    if (last > first)
      put(t, " each");
  } else {
    put(t, "memory size unknown");
  }
}

/* "NUMA nodes 0-1: 64 GiB each, 2: 32 GiB (4 on the machine)": the nodes
 * local to the device. */
static void put_numa(text *t, const cpudev *dev) {
  hwloc_topology_t topo = dev->plugin->topo;
  hwloc_obj_t node = NULL;
  unsigned first = 0, last = 0;
  unsigned long long bytes = 0;
  int n = 0, runs = 0;

  put(t, "NUMA node%s ", hwloc_bitmap_weight(dev->nodeset) == 1 ? "" : "s");
  while ((node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node))) {
    unsigned long long b = node->attr->numanode.local_memory;

    if (!hwloc_bitmap_isset(dev->nodeset, node->os_index))
      continue;
    if (n > 0 && node->os_index == last + 1 && b == bytes) {
      last = node->os_index;
      continue;
    }
    if (n > 0)
      put_node_run(t, first, last, bytes, runs++ > 0);
    first = last = node->os_index;
    bytes = b;
    n++;
  }
  if (n > 0)
    put_node_run(t, first, last, bytes, runs > 0);
  else
    put(t, "none reported by hwloc");
  put(t, " (%d on the machine)\n", dev->plugin->num_numa);
}

/* One cache level: "L2 2 x 1 MiB", counting the caches that serve any of
 * the device's PUs, grouped by size (hybrid CPUs mix them), marked shared
 * when one also serves PUs outside the device. Returns 1 if any. */
static int put_cache_level(text *t, const cpudev *dev, hwloc_obj_type_t type,
                           int first) {
  unsigned long long sizes[8];
  int counts[8], num_sizes = 0, shared = 0, any = 0;
  hwloc_obj_t c = NULL;
  char name[32] = "";

  while ((c = hwloc_get_next_obj_by_type(dev->plugin->topo, type, c))) {
    int i;

    if (c->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION || !c->cpuset ||
        !hwloc_bitmap_intersects(c->cpuset, dev->cpuset))
      continue;
    if (!any)
      hwloc_obj_type_snprintf(name, sizeof(name), c, 0);
    any = 1;
    shared |= !hwloc_bitmap_isincluded(c->cpuset, dev->cpuset);
    for (i = 0; i < num_sizes && sizes[i] != c->attr->cache.size; i++)
      ;
    if (i == (int)(sizeof(sizes) / sizeof(sizes[0]))) {
      i--; /* more distinct sizes than anyone builds: fold into the last */
    } else if (i == num_sizes) {
      sizes[i] = c->attr->cache.size;
      counts[i] = 0;
      num_sizes++;
    }
    counts[i]++;
  }
  if (!any)
    return 0;
  put(t, "%s%s ", first ? "" : ", ", name);
  for (int i = 0; i < num_sizes; i++) {
    put(t, "%s%d x ", i ? " + " : "", counts[i]);
    put_size(t, sizes[i]);
  }
  if (shared)
    put(t, " (shared with other devices)");
  return 1;
}

static void put_caches(text *t, const cpudev *dev) {
  static const hwloc_obj_type_t levels[] = {
      HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE,
      HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE};
  int n = 0;

  put(t, "caches: ");
  for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
    n += put_cache_level(t, dev, levels[i], n == 0);
  if (n == 0)
    put(t, "none reported by hwloc");
  put(t, "\n");
}

static void put_memory(text *t, const cpudev *dev) {
  const cpudev_plugin *p = dev->plugin;

  put(t, "memory: host memory aligned to %zu bytes", WF_CPU_MIN_ALIGN);
  if (atomic_load(&dev->bind)) {
    put(t, ", bound to NUMA node%s ",
        hwloc_bitmap_weight(dev->nodeset) == 1 ? "" : "s");
    put_list(t, dev->nodeset);
  } else if (p->num_numa > 1) {
    put(t, ", not NUMA-bound (hwloc cannot bind memory here)");
  }
}

void cpudev_describe(const cpudev *dev, char *out, size_t size) {
  text t = {.buf = out, .size = size};

  if (size == 0)
    return;
  out[0] = '\0';
  put_model(&t, dev->plugin->topo, dev->cpuset);
  put_cores(&t, dev);
  put_numa(&t, dev);
  put_caches(&t, dev);
  put_memory(&t, dev);
  if (t.cut && size > 4)
    memcpy(out + size - 4, "...", 4);
}
