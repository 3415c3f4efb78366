/* plugins/devices/cpu/cpu_device.h — the CPU device plugin's state: the hwloc
 * topology, the device instances cut from it, and the functions its files
 * share. Internal to the plugin (and to its test, which inspects a device's
 * cpuset); nothing here crosses the plugin boundary except as a void *. */
#ifndef WF_PLUGINS_DEVICES_CPU_CPU_DEVICE_H
#define WF_PLUGINS_DEVICES_CPU_CPU_DEVICE_H

#include <weft/plugin_aux.h>

#include <hwloc.h>
#include <stdatomic.h>
#include <stddef.h>

/* Names the environment variable that splits the machine's cores into that
 * many devices (cpu:0 .. cpu:N-1). A config key will replace it. */
#define WF_CPU_DEVICES_ENV "WEFT_CPU_DEVICES"

/* Smallest alignment the allocator hands out. */
#define WF_CPU_MIN_ALIGN ((size_t)64)

typedef struct cpudev_plugin cpudev_plugin;

/* One CPU device: a run of whole cores (in hwloc's logical order, so that a
 * device keeps cores that share caches and NUMA nodes together). Lives from
 * the enumeration that made it until the plugin's fini. */
typedef struct cpudev {
  const cpudev_plugin *plugin;
  int index;              /* N in "cpu:N" */
  int first_unit;         /* logical index of its first core */
  int num_units;          /* how many cores */
  hwloc_bitmap_t cpuset;  /* the PUs of its cores */
  hwloc_bitmap_t nodeset; /* NUMA nodes local to cpuset */
  /* Allocations are bound to nodeset. Cleared (once, with a warning) when
   * the system refuses to bind, after which memory is plain. */
  atomic_int bind;
  atomic_int bind_warned;
} cpudev;

/* The devices of one enumeration. Older sets are kept, not freed, because
 * the core may still hold their device states. */
typedef struct cpudev_set {
  struct cpudev_set *next;
  int num_devices;
  cpudev devices[];
} cpudev_set;

struct cpudev_plugin {
  hwloc_topology_t topo;
  /* What devices are cut from: cores, or PUs where hwloc reports no cores. */
  hwloc_obj_type_t unit_type;
  int num_units;
  int num_numa;
  /* More than one NUMA node, and hwloc can allocate bound memory here. */
  int can_bind;
  cpudev_set *sets; /* newest first */
};

/* Writes the human-readable description of dev into out (at most size
 * bytes, always terminated; an over-long text ends in "..."). */
void cpudev_describe(const cpudev *dev, char *out, size_t size);

/* The device allocator (wf_device_def.alloc/free): align is 0 or a power of
 * two; memory is at least WF_CPU_MIN_ALIGN-aligned, NUMA-local to the
 * device when the plugin can bind, and freed only by cpudev_free.
 * Thread-safe. Returns NULL when out of memory. */
void *cpudev_alloc(void *device_state, size_t bytes, size_t align);
void cpudev_free(void *device_state, void *ptr, size_t bytes);

#endif
