/* core/plugin/registry.h — what plugins registered: ops, kernels, gradients,
 * device types, readers and graph passes; and the choice of a kernel among
 * those registered for one op and device type under the config's [kernels]
 * rules.
 *
 * Entries are the core's normalised copies of the plugins' structs (the
 * current ABI layout, members a plugin's older struct lacks zeroed); strings
 * and functions stay borrowed from the plugin, which stays loaded as long as
 * the registry. A plugin's entries are added all or nothing. */
#ifndef WF_CORE_REGISTRY_H
#define WF_CORE_REGISTRY_H

#include <weft/plugin.h>

#include "graph/op.h"

typedef struct wf__registry wf__registry;
struct wf_config;


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
/* The first op (by name) whose flags include flag (a role such as
 * WF_OP_CONSTANT), or NULL. */
const wf__op *wf__registry_find_op_with_flag(const wf__registry *r,
                                             uint32_t flag);

/* Kernels, sorted by op, device type, then priority (highest first). */
int wf__registry_kernel_count(const wf__registry *r);
const wf__kernel *wf__registry_kernel_at(const wf__registry *r, int i);
/* Index of the first kernel of op on device_type in that order (or of
 * where it would be). */
int wf__registry_kernel_first(const wf__registry *r, const char *op,
                              const char *device_type);
/* The highest-priority kernel for op on device_type whose type_attr allows
 * dtype (dtype WF_DTYPE_INVALID matches kernels without a type constraint),
 * ignoring the config's [kernels] rules (for the core's own transfer
 * kernels); NULL if none. */
const wf__kernel *wf__registry_find_kernel(const wf__registry *r,
                                           const char *op,
                                           const char *device_type,
                                           wf_dtype dtype);

/* ---- choosing a kernel under the config's [kernels] rules ---------------- */

/* 1 when the [kernels] item (LABEL, OP:LABEL or OP:*, as core/plugin/config.c
 * checks them) names k: k's op is OP when one is given, and LABEL is '*',
 * or equals k's label or one of its '/'-separated parts, ignoring case. */
int wf__kernel_rule_matches(const char *item, const wf__kernel *k);
/* The [kernels] deny item of cfg that excludes k, or NULL when k may be
 * chosen (always NULL for cfg NULL). *at (when at is not NULL) gets where
 * the item was set: "FILE:LINE", or "config". Borrowed from cfg. */
const char *wf__kernel_denied(const struct wf_config *cfg, const wf__kernel *k,
                              const char **at);
/* The first [kernels] prefer item of cfg that names k, or NULL; *rank (when
 * rank is not NULL) gets its position in the list, INT_MAX when none. */
const char *wf__kernel_preferred(const struct wf_config *cfg,
                                 const wf__kernel *k, int *rank);

/* The dtype a node gives attribute attr (a kernel's type_attr), or
 * WF_DTYPE_INVALID when it has no such dtype attribute. */
typedef wf_dtype wf__attr_dtype_fn(const char *attr, const void *user);

/* What wf__registry_choose_kernel looked at, for messages. */
typedef struct wf__kernel_choice {
  int index;         /* the chosen kernel's index in the kernel list, or -1 */
  int num_kernels;   /* kernels of the op on the device type */
  int num_fitting;   /* of those, accepting the node's dtypes */
  int num_denied;    /* of the fitting ones, excluded by [kernels] deny */
  int num_preferred; /* of the fitting allowed ones, named by prefer */
  int num_declined;  /* of the fitting allowed ones, whose supports said no */
} wf__kernel_choice;

/* The kernel a node of op placed on device_type runs: of the kernels there
 * whose type attribute accepts the dtype dtype_of(attr, user) gives (a
 * kernel without one accepts any node), those cfg does not deny; of these
 * the one named by the earliest [kernels] prefer item, else the highest
 * priority (equal priorities: the first registered). cfg NULL applies no
 * rules. NULL when none is left or op is not registered; *out (may be NULL)
 * says what there was. */
const wf__kernel *
wf__registry_choose_kernel(const wf__registry *r, const struct wf_config *cfg,
                           const char *op, const char *device_type,
                           wf__attr_dtype_fn *dtype_of, const void *user,
                           const wf_node *node, wf__kernel_choice *out);
/* wf__registry_choose_kernel for a node that gives every kernel's type
 * attribute dtype (WF_DTYPE_INVALID: a node without one). */
const wf__kernel *wf__registry_find_allowed_kernel(
    const wf__registry *r, const struct wf_config *cfg, const char *op,
    const char *device_type, wf_dtype dtype, wf__kernel_choice *out);

/* 1 for the first call on r, 0 for every later one (atomic): whoever first
 * applies a config to r's registrations reports, once, what in the config
 * names nothing registered. */
int wf__registry_claim_notice(wf__registry *r);

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
