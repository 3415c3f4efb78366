/* plugins/devices/cpu/cpu_plugin.c — the "device-cpu" plugin: registers the
 * "cpu" device type, loads the hwloc topology and cuts it into devices
 * (one by default, N with WEFT_CPU_DEVICES=N).
 *
 * It does not describe devices (cpu_describe.c), allocate their memory
 * (cpu_alloc.c) or pin threads; the fast kernels it registers and the
 * kernel libraries' thread setup are in cpu_kernels.c. */
#include <config.h>

#include "cpu_device.h"
#include "cpu_kernels.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLUGIN_NAME "device-cpu"

/* How many devices to cut: the config's [devices] cpu_devices when set,
 * else WEFT_CPU_DEVICES; 1 when neither is. Anything but a whole number
 * from 1 to the number of cores is refused. */
static int devices_wanted(const cpudev_plugin *p, int *n, wf_status *st) {
  const char *env = getenv(WF_CPU_DEVICES_ENV);
  char fromcfg[32];
  int64_t cfg = WF_HOST_HAS(wfx_host, config_int)
                    ? wfx_host->config_int("devices", "cpu_devices")
                    : -1;
  const char *source = WF_CPU_DEVICES_ENV;
  if (cfg > 0) {
    snprintf(fromcfg, sizeof fromcfg, "%lld", (long long)cfg);
    env = fromcfg;
    source = "[devices] cpu_devices";
  }
  const char *unit = p->unit_type == HWLOC_OBJ_CORE ? "cores"
                                                    : "processing units";
  char *end;
  long v;

  *n = 1;
  if (!env || !*env)
    return 0;
  errno = 0;
  v = strtol(env, &end, 10);
  if (end == env || *end || v < 1) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: %s=\"%s\" is not a number of CPU devices: "
                         "use a whole number from 1 to %d (this machine's "
                         "%s)",
                         PLUGIN_NAME, source, env, p->num_units, unit);
    return WF_INVALID_ARGUMENT;
  }
  if (errno == ERANGE || v > p->num_units) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: %s=%s asks for more CPU devices than this "
                         "machine has %s (%d): each device needs at least "
                         "one; use 1 to %d",
                         PLUGIN_NAME, source, env, unit, p->num_units,
                         p->num_units);
    return WF_INVALID_ARGUMENT;
  }
  *n = (int)v;
  return 0;
}

static void set_free(cpudev_set *set) {
  for (int i = 0; i < set->num_devices; i++) {
    hwloc_bitmap_free(set->devices[i].cpuset);
    hwloc_bitmap_free(set->devices[i].nodeset);
  }
  wfx_host->free(set);
}

/* Device i of n gets units [i*U/n, (i+1)*U/n): sizes differ by at most one
 * and every unit belongs to exactly one device. Assumes 1 <= n <= U. */
static int set_new(cpudev_plugin *p, int n, cpudev_set **out,
                   wf_status *st) {
  cpudev_set *set;
  size_t bytes = sizeof(*set) + (size_t)n * sizeof(set->devices[0]);

  assert(n >= 1 && n <= p->num_units);
  set = wfx_host->alloc(bytes, 0);
  if (!set)
    goto nomem;
  memset(set, 0, bytes);
  for (int i = 0; i < n; i++) {
    cpudev *d = &set->devices[i];
    int end = (int)((long long)(i + 1) * p->num_units / n);

    d->plugin = p;
    d->index = i;
    d->first_unit = (int)((long long)i * p->num_units / n);
    d->num_units = end - d->first_unit;
    d->cpuset = hwloc_bitmap_alloc();
    d->nodeset = hwloc_bitmap_alloc();
    set->num_devices = i + 1; /* set_free releases this device's bitmaps */
    if (!d->cpuset || !d->nodeset)
      goto nomem;
    for (int u = d->first_unit; u < end; u++) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(p->topo, p->unit_type,
                                              (unsigned)u);
      assert(obj && obj->cpuset);
      if (hwloc_bitmap_or(d->cpuset, d->cpuset, obj->cpuset) < 0)
        goto nomem;
    }
    if (hwloc_cpuset_to_nodeset(p->topo, d->cpuset, d->nodeset) < 0)
      goto nomem;
    atomic_init(&d->bind, p->can_bind);
    atomic_init(&d->bind_warned, 0);
  }
  *out = set;
  return 0;

nomem:
  if (set)
    set_free(set);
  wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                       "%s: out of memory while setting up %d CPU device%s",
                       PLUGIN_NAME, n, n == 1 ? "" : "s");
  return WF_RESOURCE_EXHAUSTED;
}

static int cpu_enumerate(void *plugin_state, wf_device_desc *out, int max,
                         wf_status *st) {
  cpudev_plugin *p = plugin_state;
  cpudev_set *set;
  int n;

  if (devices_wanted(p, &n, st))
    return -1;
  if (n > max) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: %s=%d asks for more CPU devices than the core "
                         "takes from one device type (%d)",
                         PLUGIN_NAME, WF_CPU_DEVICES_ENV, n, max);
    return -1;
  }
  /* The same cut as last time reuses its devices: states stay stable. */
  set = p->sets;
  if (!set || set->num_devices != n) {
    if (set_new(p, n, &set, st))
      return -1;
    set->next = p->sets;
    p->sets = set;
  }
  for (int i = 0; i < n; i++) {
    wf_device_desc *d = WF_STRUCT_AT(out, i);
    size_t len;
    snprintf(d->name, sizeof(d->name), "cpu:%d", i);
    cpudev_describe(&set->devices[i], d->description,
                        sizeof(d->description));
    /* The kernel libraries' thread layout on a line of its own. */
    len = strlen(d->description);
    if (len + 2 < sizeof(d->description)) {
      d->description[len++] = '\n';
      cpu_kernels_describe(d->description + len,
                               sizeof(d->description) - len);
    }
    d->available = 1;
    d->reason[0] = '\0';
    d->state = &set->devices[i];
    /* Pin executor threads only when the cores are split between devices:
     * one device may use them all, as the core's own pool does. */
    if (WF_STRUCT_HAS(d, wf_device_desc, cpus)) {
      d->cpus[0] = '\0';
      if (n > 1 && hwloc_bitmap_list_snprintf(d->cpus, sizeof d->cpus,
                                              set->devices[i].cpuset) < 0)
        d->cpus[0] = '\0';
    }
  }
  return n;
}

/* 1 when memory can be bound to NUMA nodes here: only worth it (and only
 * meaningful) with more than one node, on the running system. */
static int can_bind(hwloc_topology_t topo, int num_numa) {
  const struct hwloc_topology_support *s = hwloc_topology_get_support(topo);

  return num_numa > 1 && hwloc_topology_is_thissystem(topo) && s &&
         s->membind && s->membind->alloc_membind && s->membind->bind_membind;
}

static void cpu_fini(void *state) {
  cpudev_plugin *p = state;

  if (!p)
    return;
  while (p->sets) {
    cpudev_set *next = p->sets->next;
    set_free(p->sets);
    p->sets = next;
  }
  if (p->topo)
    hwloc_topology_destroy(p->topo);
  cpu_kernels_fini();
  wfx_host->free(p);
}

/* The host table, for every file of the plugin: ABI 1.3, whose
 * kernel_output_shape gives the fast kernels their output shapes and whose
 * kernels may decline a node (supports). */
WFX_HOST_DEFINE(1, 3);

static int cpu_init(const wf_host *host, void **state, wf_status *st) {
  cpudev_plugin *p;
  int n, code;

  if (WFX_HOST_INIT(host, PLUGIN_NAME, st))
    return WF_FAILED_PRECONDITION;
  p = wfx_host->alloc(sizeof(*p), 0);
  if (!p) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory for the plugin's state",
                         PLUGIN_NAME);
    return WF_RESOURCE_EXHAUSTED;
  }
  memset(p, 0, sizeof(*p));
  /* First, so that every later failure's cpu_fini balances it. */
  if ((code = cpu_kernels_init(st)) != 0) {
    wfx_host->free(p);
    return code;
  }
  if (hwloc_topology_init(&p->topo) < 0) {
    code = WF_INTERNAL;
    wfx_host->status_set(st, code, "%s: hwloc_topology_init failed: %s",
                         PLUGIN_NAME, strerror(errno));
    p->topo = NULL;
    goto fail;
  }
#if HWLOC_API_VERSION >= 0x00020100
  /* Without hwloc's x86 backend: the sysfs one finds the same cores,
   * caches and NUMA nodes, and the x86 one moves this thread onto every
   * PU in turn to run cpuid there (slow to start on a busy machine). */
  hwloc_topology_set_components(p->topo,
                                HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
#endif
  if (hwloc_topology_load(p->topo) < 0) {
    code = WF_INTERNAL;
    wfx_host->status_set(st, code,
                         "%s: hwloc could not read this machine's topology "
                         "(hwloc_topology_load: %s)",
                         PLUGIN_NAME, strerror(errno));
    goto fail;
  }
  p->unit_type = HWLOC_OBJ_CORE;
  n = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_CORE);
  if (n <= 0) {
    p->unit_type = HWLOC_OBJ_PU;
    n = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_PU);
  }
  if (n <= 0) {
    code = WF_FAILED_PRECONDITION;
    wfx_host->status_set(st, code,
                         "%s: hwloc found no cores and no processing units "
                         "this process may run on",
                         PLUGIN_NAME);
    goto fail;
  }
  p->num_units = n;
  p->num_numa = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_NUMANODE);
  p->can_bind = can_bind(p->topo, p->num_numa);
  *state = p;
  return 0;

fail:
  cpu_fini(p);
  return code;
}

static const wf_device_def cpu_device = {
    WF_STRUCT_INIT(wf_device_def),
    .type = "cpu",
    .doc = "The host CPU. One device, cpu:0, owns every core by default; "
           "with " WF_CPU_DEVICES_ENV "=N in the environment the cores are "
           "split in hwloc order into N devices cpu:0 .. cpu:N-1 of "
           "neighbouring cores (N from 1 to the number of cores). Memory "
           "is host memory aligned to 64 bytes (or more when asked), bound "
           "to the device's NUMA nodes on machines with more than one.",
    .enumerate = cpu_enumerate,
    .alloc = cpudev_alloc,
    .free = cpudev_free,
};

static const wf_device_def *const cpu_devices[] = {&cpu_device, NULL};

static const wf_plugin_desc cpu_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = PLUGIN_NAME,
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "CPU device: hwloc topology (cores, NUMA nodes, caches), "
                   "NUMA-aware aligned host memory; fast kernels on oneDNN "
                   "and OpenBLAS (matrix products, convolutions, pooling, "
                   "activations, softmax, batch normalisation, LSTM, GRU)",
    .kernels = cpu_kernels,
    .devices = cpu_devices,
    .init = cpu_init,
    .fini = cpu_fini,
};

WF_PLUGIN(device_cpu, cpu_plugin)
