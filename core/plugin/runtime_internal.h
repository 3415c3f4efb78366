/* core/plugin/runtime_internal.h — the runtime's internals: config, registry, plugins and
 * device instances, shared by the loader, the graph and the CLI's API. */
#ifndef WF_CORE_RUNTIME_H
#define WF_CORE_RUNTIME_H

#include <weft/runtime.h>

#include "plugin/settings.h"
#include "plugin/registry.h"

struct wf__dl;

/* One plugin the loader looked at, loaded or not. */
typedef struct wf__plugin {
  char *name;
  char *path;
  struct wf__dl *dl;          /* NULL when refused or in-process */
  const wf_plugin_desc *raw;  /* as the plugin returned it */
  wf_plugin_desc desc;        /* normalised to the current layout */
  void *state;                /* from desc.init */
  int initialised;            /* init ran and fini is owed */
  int abi_major, abi_minor, abi_capped;
  wf_plugin_state load_state;
  char *reason;
  int num_ops, num_kernels, num_gradients, num_devices, num_readers,
      num_passes;
} wf__plugin;

typedef struct wf__device {
  wf_device_desc desc;
  const wf__device_type *type;
  const char *plugin;
} wf__device;

/* A transport a plugin provides (weft/cluster.h), normalised to the
 * current layout (members a smaller def lacks read as NULL). */
typedef struct wf__transport {
  wf_transport_def def;
  const char *plugin;
  void *plugin_state;
} wf__transport;

struct wf__cluster;

struct wf_runtime {
  wf_config *cfg;
  wf__registry *reg;
  wf__plugin **plugins;
  int num_plugins;
  wf__device *devices;
  int num_devices;
  wf__transport *transports;
  int num_transports;
  /* The table handed to every plugin's init (core/host/host.c). */
  const wf_host *host;
  /* The job this runtime joined (core/dist/cluster.c), NULL before; and
   * what leaves it when the runtime is freed (set with it). */
  struct wf__cluster *_Atomic cluster;
  void (*leave_job)(wf_runtime *rt);
};

/* A runtime with no plugins yet, whose plugins will be given host
 * (core/host/runtime_new.c makes runtimes with the core's table). */
wf_runtime *wf__runtime_alloc(const wf_config *cfg, const wf_host *host,
                              wf_status *st);
/* Marks rt as the runtime this thread is creating (NULL: none), whose
 * config the host table's config_int reads. */
void wf__runtime_set_creating(const wf_runtime *rt);
/* Publishes cfg's thread split to plugins (the host table's threads). */
void wf__runtime_publish_threads(const wf_config *cfg);
/* Registers an in-process plugin description as if loaded from `path`
 * (the loader's last step; also used by tests and static builds). The
 * plugin is recorded either way; on refusal the code is returned and st
 * says why ("PATH: reason"). path NULL: "(preloaded)". dl (may be NULL) is
 * taken over: closed on refusal, else when the runtime is freed. A plugin
 * whose init fails owes no fini; one refused after init gets its fini at
 * once. */
int wf__runtime_add_plugin(wf_runtime *rt, const wf_plugin_desc *desc,
                           const char *path, struct wf__dl *dl, wf_status *st);
/* Records a plugin that was refused or denied before its description could
 * be registered (not loadable, shadowed, denied by the config, a missing
 * dependency). name NULL: made from the file name. abi_major/minor: as
 * built, -1 if unknown. Returns 0, or RESOURCE_EXHAUSTED with st set. */
int wf__runtime_record(wf_runtime *rt, const char *name, const char *path,
                       int abi_major, int abi_minor, wf_plugin_state state,
                       const char *reason, wf_status *st);
/* The loaded plugin called name, or NULL. */
const wf__plugin *wf__runtime_find_loaded(const wf_runtime *rt,
                                          const char *name);
/* Enumerates device instances of every registered device type, in the
 * config's preference order. Called by wf_runtime_new after loading. */
int wf__runtime_enumerate_devices(wf_runtime *rt, wf_status *st);

/* The thread split: [threads] inter_op and intra_op, each 0 meaning "from
 * the topology": intra_op = the cores, inter_op = cores / intra_op (at
 * least 1). Valid before any runtime exists (defaults). */
void wf__threads(const wf_config *cfg, int32_t *inter_op, int32_t *intra_op);
/* The host table's config_int: a setting of the runtime being created. */
int64_t wf__host_config_int(const char *section, const char *key);
/* The host table's entry: the split of the most recently created runtime. */
void wf__host_threads(int32_t *inter_op, int32_t *intra_op);

/* Loads every plugin the config allows into rt (core/plugin/loader.c). */
int wf__loader_load_all(wf_runtime *rt, wf_status *st);

#endif
