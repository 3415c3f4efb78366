/* core/plugin/settings.h — the parsed configuration behind wf_config (see
 * weft/runtime.h); read and written by core/plugin/config.c. */
#ifndef WF_CORE_SETTINGS_H
#define WF_CORE_SETTINGS_H

#include <weft/runtime.h>

typedef struct wf__strlist {
  char **items;
  int n;
} wf__strlist;

struct wf_config {
  /* [plugins] */
  wf__strlist plugin_paths; /* paths = dir1, dir2 (files or directories) */
  wf__strlist plugin_load;  /* load = name, name: only these (empty: all) */
  wf__strlist plugin_deny;  /* deny = name, name */
  char *plugin_load_from;   /* file that set load (NULL: set by the program) */
  char *plugin_deny_from;   /* file that set deny (NULL: set by the program) */
  int plugin_strict;        /* strict = true */
  int plugin_env_path;      /* use_env_path = true: honour WEFT_PLUGIN_PATH */
  int plugin_default_dir;   /* use_default_dir = true */
  /* [devices] */
  wf__strlist device_order; /* order = cuda, cpu */
  wf__strlist device_order_at; /* where each item was set, as below */
  int cpu_devices;          /* cpu_devices = N: split the CPU (0: one) */
  /* [threads] */
  int inter_op;             /* inter_op = N (0: automatic) */
  int intra_op;             /* intra_op = N (0: automatic) */
  int pin;                  /* pin = true */
  int adapt;                /* adapt = true: intra-op teams of one thread
                               while other work crowds the cores (off by
                               default: see plugins/devices/cpu/README.md) */
  /* [passes] */
  int pass_prune, pass_cse, pass_constant_folding, pass_dead_nodes,
      pass_placement;
  long long constant_folding_max_bytes;
  /* Plugin passes by name ([passes] NAME = false / true): the ones
   * switched off, and where each was set ("FILE:LINE" or "config"). */
  wf__strlist plugin_passes_off, plugin_passes_off_at;
  int memory_plan;          /* memory_plan = true: arenas and in-place
                               outputs (core/compile/memplan.h) */
  /* [kernels]: rules over the kernels registered for one device type. An
   * item is LABEL (matches a kernel whose label, or one of its '/'-separated
   * parts, equals it ignoring case) or OP:LABEL (only op OP's kernels;
   * LABEL may be '*' for all of them). */
  wf__strlist kernel_deny;   /* deny = onednn, Conv2D:reference */
  wf__strlist kernel_prefer; /* prefer = reference: ranked first, in order */
  /* Where each item of kernel_deny and kernel_prefer was set, for messages:
   * "FILE:LINE", or "config" when a program set it; parallel lists. */
  wf__strlist kernel_deny_at, kernel_prefer_at;
  /* [cluster] (weft/cluster.h) */
  wf__strlist cluster_transport; /* transport = mpi | none (empty: first) */
  int cluster_heartbeat_timeout_ms; /* 0: the default, 10 s */
  /* [debug] */
  int check_numerics; /* check_numerics = true: a float output holding
                         NaN or Inf fails the step at its node */
  /* Files loaded, for messages. */
  wf__strlist files;
};

/* A deep copy of cfg (owned by the caller), or NULL when out of memory. */
wf_config *wf__config_copy(const wf_config *cfg);
/* The value of a number or boolean setting ("devices", "cpu_devices");
 * -1 when there is no such key or it is not a number. */
int wf__config_int(const wf_config *cfg, const char *section, const char *key,
                   int64_t *out);
/* 1 when name is in the list. */
int wf__strlist_has(const wf__strlist *l, const char *name);

#endif
