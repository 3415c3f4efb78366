/* core/plugin/kernel_choice.c — choosing a kernel for a node: the
 * registry's choice under the config's [kernels] rules, with messages
 * saying why none fits, and what `weft ops` asks of it (weft/runtime.h).
 * Running the kernel is core/exec/kernel.c's. */
#include <config.h>

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "graph/graph_internal.h"
#include "graph/tensor_internal.h"
#include "plugin/config_notes.h"
#include "plugin/kernel_choice.h"
#include "plugin/settings.h"
#include "plugin/runtime_internal.h"

/* ---- selection ---------------------------------------------------------- */

/* The dtype the node gives the kernel's type attribute, or
 * WF_DTYPE_INVALID when the node has no such dtype attribute. */
static wf_dtype node_type_attr(const wf_node *n, const char *attr) {
  const wf_attr_value *v = wf__node_attr(n, attr);
  if (!v || v->type != WF_ATTR_DTYPE)
    return WF_DTYPE_INVALID;
  return (wf_dtype)v->u.dtype;
}

/* wf__attr_dtype_fn for a node at user. */
static wf_dtype node_dtype_of(const char *attr, const void *user) {
  return node_type_attr(user, attr);
}

/* Appends the dtype names of mask to buf ("float32|int32"). */
static void mask_str(uint32_t mask, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 1; d < WF__DTYPE_END; d++) {
    int w;
    if (!(mask & WF_DTYPE_BIT(d)))
      continue;
    w = snprintf(buf + used, len - used, "%s%s", used ? "|" : "",
                 wf_dtype_name((wf_dtype)d));
    if (w < 0 || (size_t)w >= len - used)
      return;
    used += (size_t)w;
  }
}

/* 1 when k accepts what n gives its type attribute. */
static int kernel_fits(const wf__kernel *k, const wf_node *n) {
  wf_dtype dt;
  if (!k->def.type_attr)
    return 1;
  dt = node_type_attr(n, k->def.type_attr);
  return dt != WF_DTYPE_INVALID && (k->def.dtypes & WF_DTYPE_BIT(dt));
}

const wf__kernel *wf__kernel_choose(const wf_runtime *rt, const wf_node *n,
                                    const char *device_type,
                                    wf__kernel_choice *out) {
  assert(rt && n && device_type);
  return wf__registry_choose_kernel(rt->reg, rt->cfg, n->op->def.name,
                                    device_type, node_dtype_of, n, n, out);
}

size_t wf__kernel_denials(const wf_runtime *rt, const wf_node *n,
                          const char *device_type, char *buf, size_t len) {
  const wf__registry *r = rt->reg;
  const char *op = n->op->def.name;
  int count = wf__registry_kernel_count(r);
  size_t used = 0;

  assert(len > 0);
  buf[0] = '\0';
  for (int i = wf__registry_kernel_first(r, op, device_type); i < count; i++) {
    const wf__kernel *k = wf__registry_kernel_at(r, i);
    const char *item, *at = NULL;
    int w;
    if (strcmp(k->def.op, op) != 0 ||
        strcmp(k->def.device_type, device_type) != 0)
      break;
    if (!kernel_fits(k, n) || !(item = wf__kernel_denied(rt->cfg, k, &at)))
      continue;
    w = snprintf(buf + used, len - used,
                 "%s%s (plugin %s) by [kernels] deny = %s (%s)",
                 used ? "; " : "", k->def.label ? k->def.label : "unlabelled",
                 k->plugin, item, at);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
  return used;
}

const wf__kernel *wf__kernel_select(const wf_runtime *rt, const wf_node *n,
                                    const char *device_type, wf_status *st) {
  const wf__registry *r = rt->reg;
  const char *op = n->op->def.name;
  int count = wf__registry_kernel_count(r), i;
  wf__kernel_choice c;
  const wf__kernel *k;
  char have[512];
  size_t used = 0;

  k = wf__kernel_choose(rt, n, device_type, &c);
  if (k)
    return k;

  if (c.num_denied > 0) {
    wf__kernel_denials(rt, n, device_type, have, sizeof have);
    wf_status_set(st, WF_NOT_FOUND,
                  "node '%s' (op '%s'): the config denies every kernel on "
                  "device type '%s' for its dtypes: %s",
                  n->name, op, device_type, have);
    return NULL;
  }
  if (c.num_declined > 0) {
    wf_status_set(st, WF_NOT_FOUND,
                  "node '%s' (op '%s'): every kernel on device type '%s' for "
                  "its dtypes declines it (their supports hooks: an "
                  "attribute, rank or shape they do not handle)",
                  n->name, op, device_type);
    return NULL;
  }
  /* None: say what there is for this op on this device type. */
  have[0] = '\0';
  for (i = wf__registry_kernel_first(r, op, device_type); i < count; i++) {
    const wf__kernel *o = wf__registry_kernel_at(r, i);
    char types[160];
    const char *given;
    int w;
    if (strcmp(o->def.op, op) != 0 ||
        strcmp(o->def.device_type, device_type) != 0)
      break;
    mask_str(o->def.dtypes, types, sizeof types);
    given = wf_dtype_name(node_type_attr(n, o->def.type_attr));
    w = snprintf(have + used, sizeof have - used, "%s%s=%s (node has %s)",
                 used ? "; " : "", o->def.type_attr, types,
                 given ? given : "no dtype");
    if (w < 0 || (size_t)w >= sizeof have - used)
      break;
    used += (size_t)w;
  }
  if (used)
    wf_status_set(st, WF_NOT_FOUND,
                  "node '%s' (op '%s'): no kernel on device type '%s' for "
                  "its dtypes; kernels there take %s",
                  n->name, op, device_type, have);
  else
    wf_status_set(st, WF_NOT_FOUND,
                  "node '%s' (op '%s'): no kernel registered for device "
                  "type '%s'",
                  n->name, op, device_type);
  return NULL;
}

/* ---- what `weft ops` asks (weft/runtime.h) ------------------------------- */

const char *wf_runtime_kernel_denied(const wf_runtime *rt, int i) {
  assert(rt && i >= 0 && i < wf__registry_kernel_count(rt->reg));
  wf__config_notice(rt);
  return wf__kernel_denied(rt->cfg, wf__registry_kernel_at(rt->reg, i), NULL);
}

const char *wf_runtime_kernel_preferred(const wf_runtime *rt, int i) {
  assert(rt && i >= 0 && i < wf__registry_kernel_count(rt->reg));
  wf__config_notice(rt);
  return wf__kernel_preferred(rt->cfg, wf__registry_kernel_at(rt->reg, i),
                              NULL);
}

int wf_runtime_kernel_select(const wf_runtime *rt, const char *op,
                             const char *device_type, wf_dtype dtype) {
  wf__kernel_choice c;
  assert(rt && op && device_type);
  wf__config_notice(rt);
  wf__registry_find_allowed_kernel(rt->reg, rt->cfg, op, device_type, dtype,
                                   &c);
  return c.index;
}

