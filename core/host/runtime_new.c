/* core/host/runtime_new.c — making a runtime: the core's own op sets (one
 * table, below), then the plugins the config allows, then the devices
 * they offer, every plugin handed the host table. The runtime itself and
 * its loading are core/plugin's; this file only puts the rooms together,
 * so no lower room needs to know the higher ones' op sets. */
#include <config.h>

#include "host/host.h"

#include "data/dataset.h"
#include "dist/cluster_internal.h"
#include "exec/core_ops.h"
#include "exec/kernel.h"
#include "io/checkpoint_internal.h"
#include "plugin/runtime_internal.h"
#include "plugin/settings.h"

/* The op sets built into the core, registered before any plugin in this
 * order: the graph's own ops (Const, Placeholder, Send/Recv...), the
 * input pipeline's, checkpoints' and a job's (task transfers). */
static const wf_plugin_desc *(*const builtins[])(void) = {
    wf__core_ops,
    wf__data_ops,
    wf__checkpoint_ops,
    wf__cluster_ops,
};

wf_runtime *wf__runtime_new_empty(const wf_config *cfg, wf_status *st) {
  wf_runtime *rt = wf__runtime_alloc(cfg, wf__host(), st);
  if (rt) {
    rt->job = &wf__cluster_job;
    rt->run_kernel = wf__kernel_run;
  }
  return rt;
}

/* The built-in op sets are part of the core: a config that denies one is
 * refused rather than silently not obeyed. (A load list governs plugin
 * files; the built-ins are loaded whether it names them or not.) */
static int check_deny(const wf_config *cfg, wf_status *st) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
    const char *name = builtins[i]()->name;
    if (wf__strlist_has(&cfg->plugin_deny, name))
      return wf_status_set(
          st, WF_INVALID_ARGUMENT,
          "config %s: [plugins] deny names '%s', which is built into the "
          "core and cannot be denied (deny applies to plugin files)",
          cfg->plugin_deny_from ? cfg->plugin_deny_from : "(program)",
          name);
  }
  return WF_OK;
}

wf_runtime *wf_runtime_new(const wf_config *cfg, wf_status *st) {
  if (cfg && check_deny(cfg, st))
    return NULL;
  wf_runtime *rt = wf__runtime_new_empty(cfg, st);
  if (!rt)
    return NULL;
  wf__runtime_publish_threads(rt->cfg); /* plugins may ask during init */
  wf__runtime_set_creating(rt);
  int rc = 0;
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0] && !rc; i++)
    rc = wf__runtime_add_plugin(rt, builtins[i](), "(built in)", NULL, st);
  rc = rc || wf__loader_load_all(rt, st) ||
       wf__runtime_enumerate_devices(rt, st);
  wf__runtime_set_creating(NULL);
  if (rc) {
    wf_runtime_free(rt);
    return NULL;
  }
  return rt;
}
