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

/* An importer a plugin provides (weft/import.h), normalised likewise. */
typedef struct wf__importer {
  wf_importer_def def;
  const char *plugin;
} wf__importer;

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
  wf__importer *importers;
  int num_importers;
  /* The table handed to every plugin's init (core/host/host.c). */
  const wf_host *host;
  /* The job this runtime joined (core/dist/cluster.c), NULL before, and
   * this runtime's task in it (0 before). */
  struct wf__cluster *_Atomic cluster;
  _Atomic int32_t task;
  /* What executors and sessions call to reach the job (core/dist's
   * wf__cluster_job, installed by core/host); NULL: this task alone. */
  const struct wf__job *job;
  /* Runs kernel k on node n's inputs outside any step, as constant folding
   * does at compile time (core/exec/kernel.c's wf__kernel_run, installed by
   * core/host); NULL: nothing is folded. */
  int (*run_kernel)(const wf__kernel *k, const wf_node *n,
                    const wf_tensor *const *inputs, wf_tensor **outputs,
                    wf_status *st);
};

struct wf__work;
struct wf__dist;
struct wf__dist_step;

/* A job of processes as the rooms below core/dist see it: a table of
 * core/dist/cluster.c's functions (their contracts are in
 * core/dist/cluster_internal.h). */
typedef struct wf__job {
  int (*split)(wf_runtime *rt, struct wf__work *w, const unsigned char *keep,
               struct wf__dist **out, wf_status *st);
  void (*dist_free)(struct wf__dist *d);
  struct wf__dist_step *(*step_begin)(struct wf__dist *d, uint64_t session,
                                      int64_t step, uint64_t *uid,
                                      wf_status *st);
  int (*step_end)(struct wf__dist_step *ds, int code, wf_status *st);
  void (*cancel_step)(struct wf__cluster *c, uint64_t uid, int code,
                      const char *msg);
  int (*watch)(struct wf__cluster *c, const struct wf__dist *d, char *msg,
               size_t len);
  void (*session_closed)(wf_runtime *rt, uint64_t session);
  /* Leaves the job when the runtime is freed. */
  void (*leave)(wf_runtime *rt);
} wf__job;

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
