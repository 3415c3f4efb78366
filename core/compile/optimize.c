/* core/compile/optimize.c — per signature: prune the user's graph, copy what is
 * left into a working graph (fed tensors become _Feed nodes), then run the
 * graph passes the config switches on, in their fixed order, with the
 * passes plugins register (core/compile/plugin_passes.c) before dead-node
 * removal.
 *
 * Each pass is its own file (core/compile/pass_*.c); this file only sequences them
 * and knows how to copy a graph. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "plugin/settings.h"
#include "graph/graph_internal.h"
#include "compile/optimize.h"
#include "compile/passes.h"
#include "compile/plugin_passes.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

/* The passes, in the order they run, each switched by a [passes] key. */
static const struct {
  const char *name;
  size_t flag; /* offset of its int switch in wf_config */
  wf__pass_fn *run;
} passes[] = {
    {"cse", offsetof(wf_config, pass_cse), wf__pass_cse},
    {"constant_folding", offsetof(wf_config, pass_constant_folding),
     wf__pass_constant_folding},
    {"dead_nodes", offsetof(wf_config, pass_dead_nodes), wf__pass_dead_nodes},
};

void wf__work_deinit(wf__work *w) {
  wf_graph_free(w->g);
  wf__free(w->feeds);
  wf__free(w->fetches);
  wf__free(w->targets);
  memset(w, 0, sizeof *w);
}

/* Kept nodes in an order where every node comes after the nodes it reads
 * (through edges that stay: data edges not replaced by a feed, and control
 * edges). Returns the count, or -1 when out of memory. */
static int topo_order(const wf_graph *g, const wf__signature *sig,
                      const unsigned char *keep, wf_node **order) {
  int n = g->num_nodes, head = 0, tail = 0;
  int *indeg = wf__calloc((size_t)n + 1, sizeof *indeg);
  if (!indeg)
    return -1;
  for (int id = 0; id < n; id++) {
    if (!keep[id])
      continue;
    const wf_node *nd = g->nodes[id];
    for (int i = 0; i < nd->num_inputs; i++)
      if (!wf__signature_fed(sig, nd->inputs[i].node, nd->inputs[i].index,
                             NULL))
        indeg[id]++;
    indeg[id] += nd->num_control_inputs;
  }
  for (int id = 0; id < n; id++)
    if (keep[id] && indeg[id] == 0)
      order[tail++] = g->nodes[id];
  while (head < tail) {
    const wf_node *nd = order[head++];
    for (int k = 0; k < nd->num_data_consumers; k++) {
      wf_node *c = nd->data_consumers[k];
      if (!keep[c->id])
        continue;
      /* One consumer entry per consuming slot, each counted in indeg, but
       * slots reading a fed output were not counted. */
      int counted = 0;
      for (int i = 0; i < c->num_inputs; i++)
        if (c->inputs[i].node == nd &&
            !wf__signature_fed(sig, nd, c->inputs[i].index, NULL))
          counted++;
      int seen = 0;
      for (int j = 0; j < k; j++)
        seen += nd->data_consumers[j] == c;
      if (seen < counted && --indeg[c->id] == 0)
        order[tail++] = c;
    }
    for (int k = 0; k < nd->num_control_consumers; k++) {
      wf_node *c = nd->control_consumers[k];
      if (keep[c->id] && --indeg[c->id] == 0)
        order[tail++] = c;
    }
  }
  wf__free(indeg);
  return tail;
}

/* Copies node src into w->g with its inputs mapped (map: old id -> new
 * node; feeds: the _Feed outputs). */
static wf_node *copy_node(wf__work *w, const wf__signature *sig,
                          const wf_node *src, wf_node **map,
                          wf_status *st) {
  wf_node_desc *d = wf__node_desc_new_full(w->g, src->op->def.name,
                                           src->name);
  wf_node_desc_set_device(d, src->device);
  for (int a = 0; a < src->num_attrs; a++)
    wf_node_desc_set_attr(d, src->attrs[a].name, &src->attrs[a].v);
  int at = 0;
  for (int a = 0; a < src->op->num_inputs; a++) {
    const wf_arg_def *arg = &src->op->inputs[a];
    int count = 1;
    if (arg->number_attr) {
      const wf_attr_value *nv = wf__node_attr(src, arg->number_attr);
      count = nv ? (int)nv->u.i : 0;
    }
    wf_output ins[64], *in = count <= 64 ? ins : wf__calloc((size_t)count,
                                                           sizeof *in);
    if (!in) {
      wf_node_desc_free(d);
      wf_status_set(st, WF_RESOURCE_EXHAUSTED, "copying node '%s'",
                    src->name);
      return NULL;
    }
    for (int k = 0; k < count; k++, at++) {
      wf_output o = src->inputs[at];
      int which;
      if (wf__signature_fed(sig, o.node, o.index, &which))
        in[k] = w->feeds[which];
      else
        in[k] = (wf_output){map[o.node->id], o.index};
    }
    if (arg->number_attr)
      wf_node_desc_add_input_list(d, in, count);
    else
      wf_node_desc_add_input(d, in[0]);
    if (in != ins)
      wf__free(in);
  }
  for (int k = 0; k < src->num_control_inputs; k++)
    wf_node_desc_add_control_input(d, map[src->control_inputs[k]->id]);
  return wf_node_desc_finish(d, st);
}

/* Copies the part of g that sig needs into a fresh working graph. */
static int copy_graph(wf_runtime *rt, const wf_graph *g,
                      const wf__signature *sig, wf__work *w, wf_status *st) {
  int n = g->num_nodes, rc = -1;
  unsigned char *keep = wf__calloc((size_t)n + 1, 1);
  wf_node **order = wf__calloc((size_t)n + 1, sizeof *order);
  wf_node **map = wf__calloc((size_t)n + 1, sizeof *map);
  memset(w, 0, sizeof *w);
  w->g = wf_graph_new(rt);
  w->feeds = wf__calloc((size_t)sig->nfeeds + 1, sizeof *w->feeds);
  w->fetches = wf__calloc((size_t)sig->nfetches + 1, sizeof *w->fetches);
  w->targets = wf__calloc((size_t)sig->ntargets + 1, sizeof *w->targets);
  if (!keep || !order || !map || !w->g || !w->feeds || !w->fetches ||
      !w->targets) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "preparing the signature: out of memory");
    goto out;
  }
  int kept = wf__prune(g, sig, keep, st);
  if (kept < 0)
    goto out;
  int ordered = topo_order(g, sig, keep, order);
  if (ordered != kept) {
    wf_status_set(st, ordered < 0 ? WF_RESOURCE_EXHAUSTED : WF_INTERNAL,
                  "preparing the signature: %s",
                  ordered < 0 ? "out of memory" : "the graph has a cycle");
    goto out;
  }
  for (int f = 0; f < sig->nfeeds; f++) {
    const wf_output o = sig->feeds[f];
    char name[512], tensor[320];
    const wf_attr_value *was = strcmp(o.node->op->def.name, "_Feed") == 0
                                   ? wf__node_attr(o.node, "tensor")
                                   : NULL;
    /* Copying a working graph again keeps its feeds' names. */
    if (was) {
      snprintf(name, sizeof name, "%s", o.node->name);
      snprintf(tensor, sizeof tensor, "%s", was->u.s);
    } else {
      snprintf(name, sizeof name, "_feeds/%s_%d", o.node->name, o.index);
      snprintf(tensor, sizeof tensor, "%s:%d", o.node->name, o.index);
    }
    wf_node_desc *d = wf__node_desc_new_full(w->g, "_Feed", name);
    wf_node_desc_set_attr_dtype(d, "dtype", o.node->output_dtypes[o.index]);
    const wf_shape *s = &o.node->output_shapes[o.index];
    wf_node_desc_set_attr_shape(d, "shape", s->dims, s->rank);
    wf_node_desc_set_attr_string(d, "tensor", tensor);
    wf_node *fn = wf_node_desc_finish(d, st);
    if (!fn)
      goto out;
    w->feeds[f] = (wf_output){fn, 0};
  }
  for (int i = 0; i < kept; i++) {
    map[order[i]->id] = copy_node(w, sig, order[i], map, st);
    if (!map[order[i]->id]) {
      wf_status_prefix(st, "preparing the signature");
      goto out;
    }
  }
  for (int f = 0; f < sig->nfetches; f++)
    w->fetches[f] = (wf_output){map[sig->fetches[f].node->id],
                                sig->fetches[f].index};
  for (int t = 0; t < sig->ntargets; t++)
    w->targets[t] = map[sig->targets[t]->id];
  w->sig = (wf__signature){w->feeds,   sig->nfeeds, w->fetches,
                           sig->nfetches, w->targets, sig->ntargets};
  rc = 0;
out:
  wf__free(keep);
  wf__free(order);
  wf__free(map);
  if (rc)
    wf__work_deinit(w);
  return rc;
}

int wf__work_copy(wf_runtime *rt, const wf__work *w, wf__work *out,
                  wf_status *st) {
  return copy_graph(rt, w->g, &w->sig, out, st) ? wf_status_code(st) : 0;
}

/* Dead-node removal: the working graph is copied again with only what its
 * signature needs, so nodes other passes left unused disappear (and graph
 * dumps show the graph that runs). */
int wf__pass_dead_nodes(wf__pass_env *env, wf_status *st) {
  wf__work fresh;
  if (copy_graph(env->rt, env->work->g, &env->work->sig, &fresh, st))
    return wf_status_code(st);
  /* Fed tensors of the old working graph are outputs of _Feed nodes: the
   * copy made new _Feed nodes for them (named after the old ones). */
  wf__work_deinit(env->work);
  *env->work = fresh;
  return 0;
}

/* Graphviz dumps after plugin passes, numbered on from the core's. */
typedef struct dump_state {
  wf__work *work;
  const char *dir;
  int *step;
} dump_state;

static int dump_after(void *arg, const char *name, wf_status *st) {
  dump_state *d = arg;
  char what[160];
  snprintf(what, sizeof what, "after-%s", name);
  return wf__dump_work(d->work, d->dir, (*d->step)++, what, st);
}

int wf__work_build_dump(wf_runtime *rt, const wf_graph *g,
                        const wf__signature *sig, wf__work *out,
                        const char *dump_dir, wf_status *st) {
  if (copy_graph(rt, g, sig, out, st))
    return wf_status_code(st) ? wf_status_code(st) : WF_INTERNAL;
  int step = 1, rc = 0;
  if (dump_dir)
    rc = wf__dump_work(out, dump_dir, step++, "pruned", st);
  wf__pass_env env = {out, rt, rt->cfg};
  dump_state ds = {out, dump_dir, &step};
  for (size_t p = 0; p < sizeof passes / sizeof passes[0] && !rc; p++) {
    /* Plugins' passes run after the core's rewrites and before dead-node
     * removal. */
    if (passes[p].run == wf__pass_dead_nodes &&
        (rc = wf__run_plugin_passes(&env, dump_dir ? dump_after : NULL, &ds,
                                    st)))
      break;
    const int *on = (const int *)((const char *)rt->cfg + passes[p].flag);
    if (!*on)
      continue;
    rc = passes[p].run(&env, st);
    if (rc) {
      wf_status_prefix(st, "graph pass '%s'", passes[p].name);
      break;
    }
    if (dump_dir) {
      char what[64];
      snprintf(what, sizeof what, "after-%s", passes[p].name);
      rc = wf__dump_work(out, dump_dir, step++, what, st);
    }
  }
  if (rc)
    wf__work_deinit(out);
  return rc;
}

int wf__work_build(wf_runtime *rt, const wf_graph *g, const wf__signature *sig,
                   wf__work *out, wf_status *st) {
  return wf__work_build_dump(rt, g, sig, out, NULL, st);
}
