/* core/compile/work.c — the working graph of one signature
 * (core/compile/work.h): copying the part of a graph a signature needs,
 * in an order where every node follows its inputs, with fed tensors made
 * _Feed nodes; and freeing it. The passes rewrite it afterwards
 * (core/compile/optimize.c runs them). */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "compile/work.h"
#include "graph/graph_internal.h"
#include "plugin/runtime_internal.h"

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
  /* last[c]: 1 + the order position of the node whose consumers last
   * reached c, so that a consumer listed once per slot is taken once. */
  int *last = wf__calloc((size_t)n + 1, sizeof *last);
  if (!indeg || !last) {
    wf__free(indeg);
    wf__free(last);
    return -1;
  }
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
      if (!keep[c->id] || last[c->id] == head)
        continue;
      last[c->id] = head;
      /* c is listed once per slot reading nd, each slot counted in indeg
       * unless it reads a fed output: all of them arrive now. */
      int counted = 0;
      for (int i = 0; i < c->num_inputs; i++)
        if (c->inputs[i].node == nd &&
            !wf__signature_fed(sig, nd, c->inputs[i].index, NULL))
          counted++;
      if (counted > 0 && (indeg[c->id] -= counted) == 0)
        order[tail++] = c;
    }
    for (int k = 0; k < nd->num_control_consumers; k++) {
      wf_node *c = nd->control_consumers[k];
      if (keep[c->id] && --indeg[c->id] == 0)
        order[tail++] = c;
    }
  }
  wf__free(indeg);
  wf__free(last);
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

int wf__work_new(wf_runtime *rt, const wf_graph *g,
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
  return wf__work_new(rt, w->g, &w->sig, out, st) ? wf_status_code(st) : 0;
}

