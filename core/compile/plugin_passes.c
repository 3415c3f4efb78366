/* core/compile/plugin_passes.c — graph passes that plugins register
 * (wf_pass_def): running them on a signature's working graph in their
 * order, each switchable by name in [passes], each checked afterwards and
 * undone when it failed or broke the graph; and the host table's node_*
 * and pass_* entries through which they read and rewrite it.
 *
 * The core's own passes are pass_*.c; when which pass runs is
 * core/compile/optimize.c's. */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/tensor.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/status_internal.h"
#include "compile/placement.h"
#include "compile/plugin_passes.h"
#include "compile/prune.h"
#include "graph/graph_internal.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"
#include "plugin/settings.h"

struct wf_pass_ctx {
  wf__work *work;
  wf_runtime *rt;
};

/* ---- nodes ---------------------------------------------------------------- */

const char *wf__node_op_of(const wf_node *n) { return n->op->def.name; }
const char *wf__node_name_of(const wf_node *n) { return n->name; }
const char *wf__node_device_of(const wf_node *n) { return n->device; }
int32_t wf__node_num_inputs_of(const wf_node *n) { return n->num_inputs; }
int32_t wf__node_num_outputs_of(const wf_node *n) { return n->num_outputs; }

wf_output wf__node_input_of(const wf_node *n, int32_t i) {
  if (i < 0 || i >= n->num_inputs)
    return (wf_output){NULL, 0};
  return n->inputs[i];
}

int wf__node_output_info(const wf_node *n, int32_t i, int32_t *dtype,
                         wf_shape *shape) {
  if (i < 0 || i >= n->num_outputs)
    return -1;
  if (dtype)
    *dtype = n->output_dtypes[i];
  if (shape)
    *shape = n->output_shapes[i];
  return 0;
}

int wf__node_attr_of(const wf_node *n, const char *name, wf_attr_value *out) {
  const wf_attr_value *v = wf__node_attr(n, name);
  if (!v)
    return -1;
  *out = *v;
  return 0;
}

int32_t wf__node_num_control_inputs_of(const wf_node *n) {
  return n->num_control_inputs;
}

wf_node *wf__node_control_input_of(const wf_node *n, int32_t i) {
  return i >= 0 && i < n->num_control_inputs ? n->control_inputs[i] : NULL;
}

int32_t wf__node_num_control_consumers_of(const wf_node *n) {
  return n->num_control_consumers;
}

/* ---- reading the working graph ------------------------------------------- */

int32_t wf__pass_num_nodes(const wf_pass_ctx *ctx) {
  return ctx->work->g->num_nodes;
}

wf_node *wf__pass_node(const wf_pass_ctx *ctx, int32_t i) {
  const wf_graph *g = ctx->work->g;
  return i >= 0 && i < g->num_nodes ? g->nodes[i] : NULL;
}

/* The slots of c that read output o. */
static int32_t slots_reading(const wf_node *c, wf_output o) {
  int32_t count = 0;
  for (int i = 0; i < c->num_inputs; i++)
    if (c->inputs[i].node == o.node && c->inputs[i].index == o.index)
      count++;
  return count;
}

static int by_address(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (wf_node *const *)a;
  uintptr_t y = (uintptr_t) * (wf_node *const *)b;
  return (x > y) - (x < y);
}

/* Consumer lists this long are sorted to find each consumer once (a
 * node read by thousands would otherwise cost their square). */
#define FEW_CONSUMERS 32

int32_t wf__pass_num_consumers(const wf_pass_ctx *ctx, wf_output o) {
  (void)ctx;
  int32_t count = 0;
  int n;
  wf_node **sorted;
  if (!o.node)
    return 0;
  n = o.node->num_data_consumers;
  /* A consumer appears once per slot it reads the node with; count the
   * slots that read this output, each consumer once. */
  if (n > FEW_CONSUMERS &&
      (sorted = wf__calloc((size_t)n, sizeof *sorted)) != NULL) {
    memcpy(sorted, o.node->data_consumers, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, by_address);
    for (int k = 0; k < n; k++)
      if (k == 0 || sorted[k] != sorted[k - 1])
        count += slots_reading(sorted[k], o);
    wf__free(sorted);
    return count;
  }
  for (int k = 0; k < n; k++) {
    const wf_node *c = o.node->data_consumers[k];
    int seen = 0;
    for (int j = 0; j < k && !seen; j++)
      seen = o.node->data_consumers[j] == c;
    if (!seen) /* else its slots were counted the first time */
      count += slots_reading(c, o);
  }
  return count;
}

int wf__pass_is_fetched(const wf_pass_ctx *ctx, wf_output o) {
  const wf__signature *sig = &ctx->work->sig;
  for (int f = 0; f < sig->nfetches; f++)
    if (sig->fetches[f].node == o.node && sig->fetches[f].index == o.index)
      return 1;
  return 0;
}

/* Whether op is one of the '|'-separated names in want. */
static int op_in(const char *op, const char *want) {
  size_t n = strlen(op);
  for (const char *p = want; *p;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && strncmp(p, op, n) == 0)
      return 1;
    if (!bar)
      break;
    p = bar + 1;
  }
  return 0;
}

int wf__pass_match(const wf_pass_ctx *ctx, wf_node *root,
                   const wf_pattern_node *pattern, int32_t n, wf_node **out) {
  if (!root || n < 1 || pattern[0].parent != -1)
    return 0;
  for (int32_t k = 0; k < n; k++) {
    const wf_pattern_node *p = &pattern[k];
    wf_node *node;
    if (k == 0) {
      node = root;
    } else {
      if (p->parent < 0 || p->parent >= k)
        return 0;
      const wf_node *parent = out[p->parent];
      if (p->parent_input < 0 || p->parent_input >= parent->num_inputs)
        return 0;
      wf_output in = parent->inputs[p->parent_input];
      node = in.node;
      if (p->single_use && (wf__pass_num_consumers(ctx, in) != 1 ||
                            wf__pass_is_fetched(ctx, in)))
        return 0;
    }
    if (p->op && !op_in(node->op->def.name, p->op))
      return 0;
    out[k] = node;
  }
  return 1;
}

/* Whether available device d has a kernel for op with dtype the config
 * allows. */
static int device_has_kernel(const wf_runtime *rt, int d, const char *op,
                             int32_t dtype) {
  return rt->devices[d].desc.available &&
         wf__registry_find_allowed_kernel(rt->reg, rt->cfg, op,
                                          rt->devices[d].type->def.type,
                                          (wf_dtype)dtype, NULL) != NULL;
}

int wf__pass_has_kernel(const wf_pass_ctx *ctx, const char *op,
                        const char *device, int32_t dtype) {
  const wf_runtime *rt = ctx->rt;
  int want = -1;
  if (!op)
    return 0;
  if (device && device[0] && (want = wf__resolve_device(rt, device)) < 0)
    return 0;
  for (int d = 0; d < rt->num_devices; d++)
    if ((want < 0 || d == want) && device_has_kernel(rt, d, op, dtype))
      return 1;
  return 0;
}

/* Placement's choice for a lone node (compile/placement.c): the request
 * when it can be met, else the first device of the order that can. */
int32_t wf__pass_kernel_device(const wf_pass_ctx *ctx, const char *op,
                               const char *device, int32_t dtype) {
  const wf_runtime *rt = ctx->rt;
  int want;

  if (!op)
    return -1;
  if (device && device[0] && (want = wf__resolve_device(rt, device)) >= 0 &&
      device_has_kernel(rt, want, op, dtype))
    return want;
  for (int d = 0; d < rt->num_devices; d++)
    if (device_has_kernel(rt, d, op, dtype))
      return d;
  return -1;
}

/* ---- rewriting it --------------------------------------------------------- */

static int check_output(const wf_pass_ctx *ctx, wf_output o, const char *what,
                        wf_status *st) {
  if (!o.node || o.node->graph != ctx->work->g)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: not a node of the working graph", what);
  if (o.index < 0 || o.index >= o.node->num_outputs)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: node '%s' has no output %d", what, o.node->name,
                         (int)o.index);
  return 0;
}

wf_node *wf__pass_add_node(wf_pass_ctx *ctx, const char *op, const char *name,
                           const char *device, const wf_output *inputs,
                           int32_t ninputs, const wf_attr_item *attrs,
                           int32_t nattrs, wf_status *st) {
  for (int32_t i = 0; i < ninputs; i++)
    if (check_output(ctx, inputs[i], "adding a node", st))
      return NULL;
  wf_node_desc *d = wf__node_desc_flat(ctx->work->g, op, name, inputs,
                                       ninputs, attrs, nattrs);
  if (device)
    wf_node_desc_set_device(d, device);
  return wf_node_desc_finish(d, st);
}

int wf__pass_set_input(wf_pass_ctx *ctx, wf_node *n, int32_t i, wf_output src,
                       wf_status *st) {
  if (check_output(ctx, src, "rewiring an input", st))
    return wf_status_code(st);
  if (!n || n->graph != ctx->work->g || i < 0 || i >= n->num_inputs)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "rewiring an input: node '%s' has no input %d",
                         n ? n->name : "(null)", (int)i);
  wf_dtype want = n->inputs[i].node->output_dtypes[n->inputs[i].index];
  wf_dtype have = src.node->output_dtypes[src.index];
  if (want != have)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "rewiring input %d of node '%s': it reads %s, "
                         "'%s:%d' is %s",
                         (int)i, n->name, wf_dtype_name(want), src.node->name,
                         (int)src.index, wf_dtype_name(have));
  return wf__node_set_input(n, i, src, st);
}

int wf__pass_replace(wf_pass_ctx *ctx, wf_output old, wf_output with,
                     wf_status *st) {
  if (check_output(ctx, old, "replacing a value", st) ||
      check_output(ctx, with, "replacing a value", st))
    return wf_status_code(st);
  wf_dtype a = old.node->output_dtypes[old.index];
  wf_dtype b = with.node->output_dtypes[with.index];
  if (a != b)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "replacing '%s:%d' (%s) by '%s:%d' (%s): the dtypes "
                         "differ",
                         old.node->name, (int)old.index, wf_dtype_name(a),
                         with.node->name, (int)with.index, wf_dtype_name(b));
  if (wf__graph_redirect(ctx->work->g, old, with, st))
    return wf_status_code(st);
  wf__work *w = ctx->work;
  /* A signature may not fetch what it feeds: such a fetch stays. */
  if (wf__signature_fed(&w->sig, with.node, with.index, NULL))
    return 0;
  for (int f = 0; f < w->sig.nfetches; f++)
    if (w->fetches[f].node == old.node && w->fetches[f].index == old.index)
      w->fetches[f] = with;
  return 0;
}

int wf__pass_add_control_edge(wf_pass_ctx *ctx, wf_node *from, wf_node *to,
                              wf_status *st) {
  return wf_graph_add_control_edge(ctx->work->g, from, to, st);
}

void wf__pass_remove_control_edge(wf_pass_ctx *ctx, wf_node *from,
                                  wf_node *to) {
  if (from && to && from->graph == ctx->work->g && to->graph == from->graph)
    wf__graph_remove_control_edge(from, to);
}

/* ---- running them --------------------------------------------------------- */

/* The working graph's problems after a pass, or 0: a cycle (through data
 * or control edges), or a signature the graph no longer satisfies. */
static int check_graph(const wf__work *w, wf_status *st) {
  const wf_graph *g = w->g;
  int n = g->num_nodes, done = 0, head = 0, tail = 0;
  int *indeg = wf__calloc((size_t)n + 1, sizeof *indeg);
  int *queue = wf__calloc((size_t)n + 1, sizeof *queue);
  unsigned char *keep = wf__calloc((size_t)n + 1, 1);
  int rc = 0;
  if (!indeg || !queue || !keep) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "checking the graph: out of memory");
    goto out;
  }
  for (int id = 0; id < n; id++)
    indeg[id] = g->nodes[id]->num_inputs + g->nodes[id]->num_control_inputs;
  for (int id = 0; id < n; id++)
    if (indeg[id] == 0)
      queue[tail++] = id;
  while (head < tail) {
    const wf_node *nd = g->nodes[queue[head++]];
    done++;
    /* Each consumer is listed once per slot it reads, as indeg counts. */
    for (int k = 0; k < nd->num_data_consumers; k++)
      if (--indeg[nd->data_consumers[k]->id] == 0)
        queue[tail++] = nd->data_consumers[k]->id;
    for (int k = 0; k < nd->num_control_consumers; k++)
      if (--indeg[nd->control_consumers[k]->id] == 0)
        queue[tail++] = nd->control_consumers[k]->id;
  }
  if (done != n) {
    const wf_node *in_cycle = NULL;
    for (int id = 0; id < n && !in_cycle; id++)
      if (indeg[id] > 0)
        in_cycle = g->nodes[id];
    rc = wf_status_set(st, WF_INVALID_ARGUMENT,
                       "the graph has a cycle (through node '%s')",
                       in_cycle ? in_cycle->name : "?");
    goto out;
  }
  if (wf__prune(g, &w->sig, keep, st) < 0)
    rc = wf_status_code(st);
out:
  wf__free(indeg);
  wf__free(queue);
  wf__free(keep);
  return rc;
}

static const char *switched_off(const wf_config *cfg, const char *name) {
  for (int i = 0; i < cfg->plugin_passes_off.n; i++)
    if (strcmp(cfg->plugin_passes_off.items[i], name) == 0)
      return cfg->plugin_passes_off_at.items[i];
  return NULL;
}

int wf__run_plugin_passes(wf__pass_env *env,
                          int (*after_each)(void *arg, const char *name,
                                            wf_status *st),
                          void *arg, wf_status *st) {
  wf_runtime *rt = env->rt;
  int count = wf__registry_pass_count(rt->reg);
  for (int i = 0; i < count; i++) {
    const wf__pass *p = wf__registry_pass_at(rt->reg, i);
    if (!p->def.run || switched_off(rt->cfg, p->def.name))
      continue;
    /* The graph as it was, to go back to if the pass fails or breaks it.
     * With dead-node removal on, the pass works on the copy, which holds
     * only what the signature needs: what earlier passes replaced is gone
     * and no longer counts as a reader of what it read. */
    wf__work before;
    if (wf__work_copy(rt, env->work, &before, st))
      return wf_status_code(st);
    if (rt->cfg->pass_dead_nodes) {
      wf__work t = *env->work;
      *env->work = before;
      before = t;
    }
    wf_pass_ctx ctx = {env->work, rt};
    wf_status ps = {WF_OK, NULL};
    int rc = p->def.run(&ctx, &ps);
    if (!rc && ps.code != WF_OK)
      rc = ps.code;
    if (!rc)
      rc = check_graph(env->work, &ps);
    if (rc) {
      wf__work_deinit(env->work);
      *env->work = before;
      const char *why = wf_status_message(&ps);
      if (rt->cfg->plugin_strict) {
        wf_status_set(st, rc,
                      "graph pass '%s' (plugin '%s') failed: %s ([plugins] "
                      "strict)",
                      p->def.name, p->plugin, why);
        wf_status_reset(&ps);
        return wf_status_code(st);
      }
      wf__log(WF_LOG_WARNING, "passes",
              "graph pass '%s' (plugin '%s') failed and its change was "
              "discarded: %s",
              p->def.name, p->plugin, why);
      wf_status_reset(&ps);
      continue;
    }
    wf__work_deinit(&before);
    wf_status_reset(&ps);
    if (after_each && after_each(arg, p->def.name, st))
      return wf_status_code(st);
  }
  return 0;
}
