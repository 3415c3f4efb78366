/* core/registry.h — what plugins registered: ops, kernels, gradients,
 * device types, readers and graph passes.
 *
 * Entries are the core's normalised copies of the plugins' structs (the
 * current ABI layout, members a plugin's older struct lacks zeroed); strings
 * and functions stay borrowed from the plugin, which stays loaded as long as
 * the registry. A plugin's entries are added all or nothing. */
#ifndef WF_CORE_REGISTRY_H
#define WF_CORE_REGISTRY_H

#include <weft/plugin.h>

typedef struct wf__registry wf__registry;

typedef struct wf__op {
  wf_op_def def;       /* inputs/outputs/attrs point at the arrays below */
  wf_arg_def *inputs;  /* num_inputs entries + WF_ARG_END */
  wf_arg_def *outputs; /* num_outputs entries + WF_ARG_END */
  wf_attr_def *attrs;  /* num_attrs entries + WF_ATTR_END */
  int num_inputs, num_outputs, num_attrs;
  const char *plugin;  /* registering plugin's name */
} wf__op;

typedef struct wf__kernel {
  wf_kernel_def def;
  const char *plugin;
} wf__kernel;

typedef struct wf__gradient {
  wf_gradient_def def;
  const char *plugin;
} wf__gradient;

typedef struct wf__device_type {
  wf_device_def def;
  const char *plugin;
  void *plugin_state; /* the plugin's init state, passed to enumerate */
} wf__device_type;

typedef struct wf__reader {
  wf_reader_def def;
  const char *plugin;
} wf__reader;

typedef struct wf__pass {
  wf_pass_def def;
  const char *plugin;
} wf__pass;

wf__registry *wf__registry_new(void);
void wf__registry_free(wf__registry *r);

/* Registers everything desc lists, in the name of plugin `plugin` with init
 * state `state`. desc has been normalised to the current layout. Checks
 * every entry first (well-formed definitions; a different definition of an
 * op, or a second kernel with the same key, from another plugin names both
 * plugins) and changes nothing on error. An op defined identically by two
 * plugins is accepted once. */
int wf__registry_add(wf__registry *r, const char *plugin, void *state,
                     const wf_plugin_desc *desc, wf_status *st);

/* Ops, sorted by name. */
int wf__registry_op_count(const wf__registry *r);
const wf__op *wf__registry_op_at(const wf__registry *r, int i);
const wf__op *wf__registry_find_op(const wf__registry *r, const char *name);
/* Index of an op argument or attribute by name; -1 if absent. */
int wf__op_attr_index(const wf__op *op, const char *name);

/* Kernels, sorted by op, device type, then priority (highest first). */
int wf__registry_kernel_count(const wf__registry *r);
const wf__kernel *wf__registry_kernel_at(const wf__registry *r, int i);
/* The best kernel for op on device_type whose type_attr allows dtype
 * (dtype WF_DTYPE_INVALID matches kernels without a type constraint);
 * NULL if none. */
const wf__kernel *wf__registry_find_kernel(const wf__registry *r,
                                           const char *op,
                                           const char *device_type,
                                           wf_dtype dtype);

const wf__gradient *wf__registry_find_gradient(const wf__registry *r,
                                               const char *op);

int wf__registry_device_type_count(const wf__registry *r);
const wf__device_type *wf__registry_device_type_at(const wf__registry *r,
                                                   int i);
int wf__registry_reader_count(const wf__registry *r);
const wf__reader *wf__registry_reader_at(const wf__registry *r, int i);
/* Passes sorted by order, then name. */
int wf__registry_pass_count(const wf__registry *r);
const wf__pass *wf__registry_pass_at(const wf__registry *r, int i);

#endif
