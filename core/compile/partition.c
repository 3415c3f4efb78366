/* core/compile/partition.c — splitting a placed working graph between devices:
 * every data edge that crosses devices becomes a _Send/_Recv pair (one per
 * tensor and destination device, shared by the consumers there), every
 * control edge that crosses becomes a _SendControl/_RecvControl pair, and
 * each pair gets a rendezvous slot. Sends become targets of the signature so
 * pruning keeps them.
 *
 * It builds no executors; core/exec/executor.c makes one per device from the
 * result. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "compile/partition.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

typedef struct transfer {
  wf_output src;
  int device; /* destination */
  wf_node *recv;
} transfer;

typedef struct added {
  wf_node *node;
  int device;
  const wf__kernel *kernel;
} added;

typedef struct state {
  wf_runtime *rt;
  wf__work *w;
  transfer *xfers;
  int num_xfers;
  added *nodes;
  int num_added;
  int slots;
} state;

static int remember(state *s, wf_node *n, int device, const char *op,
                    wf_status *st) {
  const wf__kernel *k =
      wf__registry_find_kernel(s->rt->reg, op, "host", WF_DTYPE_INVALID);
  if (!k)
    return wf_status_set(st, WF_INTERNAL, "no host kernel for '%s'", op);
  added *grown =
      wf__realloc(s->nodes, (size_t)(s->num_added + 1) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "partitioning: out of memory");
  s->nodes = grown;
  s->nodes[s->num_added++] = (added){n, device, k};
  return 0;
}

static int add_target(wf__work *w, wf_node *n, wf_status *st) {
  wf_node **grown = wf__realloc(
      w->targets, (size_t)(w->sig.ntargets + 1) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "partitioning: out of memory");
  w->targets = grown;
  w->targets[w->sig.ntargets++] = n;
  w->sig.targets = w->targets;
  return 0;
}

static wf_attr_item int_item(const char *name, int64_t v) {
  return (wf_attr_item){name, {.type = WF_ATTR_INT, .count = 1, .u.i = v}};
}

static wf_attr_item str_item(const char *name, const char *v) {
  return (wf_attr_item){name, {.type = WF_ATTR_STRING, .count = 1, .u.s = v}};
}

/* The _Recv on device `dst` of tensor src (made with its _Send on the first
 * request). */
static wf_node *recv_for(state *s, const wf__placement *p, wf_output src,
                         int dst, wf_status *st) {
  for (int i = 0; i < s->num_xfers; i++)
    if (s->xfers[i].src.node == src.node &&
        s->xfers[i].src.index == src.index && s->xfers[i].device == dst)
      return s->xfers[i].recv;
  wf_graph *g = s->w->g;
  int from = p->device[src.node->id];
  char key[320];
  snprintf(key, sizeof key, "%s:%d->%s", src.node->name, src.index,
           s->rt->devices[dst].desc.name);
  int slot = s->slots++;
  wf_attr_item sa[2] = {int_item("slot", slot), str_item("key", key)};
  wf_node *send = wf__node_add_flat(g, "_Send", NULL, &src, 1, sa, 2, st);
  if (!send || remember(s, send, from, "_Send", st) ||
      add_target(s->w, send, st))
    return NULL;
  const wf_shape *shape = &src.node->output_shapes[src.index];
  wf_attr_item ra[4] = {
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1,
                 .u.dtype = src.node->output_dtypes[src.index]}},
      {"shape", {.type = WF_ATTR_SHAPE, .count = 1, .u.shape = *shape}},
      int_item("slot", slot), str_item("key", key)};
  wf_node *recv = wf__node_add_flat(g, "_Recv", NULL, NULL, 0, ra, 4, st);
  if (!recv || remember(s, recv, dst, "_Recv", st))
    return NULL;
  transfer *grown =
      wf__realloc(s->xfers, (size_t)(s->num_xfers + 1) * sizeof *grown);
  if (!grown) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "partitioning: out of memory");
    return NULL;
  }
  s->xfers = grown;
  s->xfers[s->num_xfers++] = (transfer){src, dst, recv};
  return recv;
}

/* Carries the control edge from -> to across devices. */
static int carry_control(state *s, const wf__placement *p, wf_node *from,
                         wf_node *to, wf_status *st) {
  wf_graph *g = s->w->g;
  char key[320];
  snprintf(key, sizeof key, "^%s->%s", from->name,
           s->rt->devices[p->device[to->id]].desc.name);
  int slot = s->slots++;
  wf_attr_item a[2] = {int_item("slot", slot), str_item("key", key)};
  wf_node_desc *d = wf_node_desc_new(g, "_SendControl", NULL);
  for (int i = 0; i < 2; i++)
    wf_node_desc_set_attr(d, a[i].name, &a[i].value);
  wf_node_desc_add_control_input(d, from);
  wf_node *send = wf_node_desc_finish(d, st);
  if (!send || remember(s, send, p->device[from->id], "_SendControl", st) ||
      add_target(s->w, send, st))
    return -1;
  wf_node *recv = wf__node_add_flat(g, "_RecvControl", NULL, NULL, 0, a, 2,
                                    st);
  if (!recv || remember(s, recv, p->device[to->id], "_RecvControl", st))
    return -1;
  wf__graph_remove_control_edge(from, to);
  return wf_graph_add_control_edge(g, recv, to, st);
}

int wf__partition(wf_runtime *rt, wf__work *w, wf__placement *p,
                  const unsigned char *keep, wf_status *st) {
  wf_graph *g = w->g;
  int n0 = g->num_nodes, rc = 0;
  state s = {rt, w, NULL, 0, NULL, 0, 0};
  for (int id = 0; id < n0 && !rc; id++) {
    wf_node *nd = g->nodes[id];
    int dn = p->device[id];
    if (!keep[id] || dn < 0)
      continue;
    for (int i = 0; i < nd->num_inputs && !rc; i++) {
      wf_output src = nd->inputs[i];
      int ds = src.node->id < n0 ? p->device[src.node->id] : -1;
      if (ds < 0 || ds == dn)
        continue; /* fed, or on the same device */
      wf_node *recv = recv_for(&s, p, src, dn, st);
      rc = recv ? wf__node_set_input(nd, i, (wf_output){recv, 0}, st)
                : (int)wf_status_code(st);
    }
    /* Iterate over a copy: carrying an edge rewrites the list. */
    int nc = nd->num_control_inputs;
    wf_node *ctl[64];
    for (int k = 0; k < nc && !rc; k += 64) {
      int m = nc - k < 64 ? nc - k : 64;
      memcpy(ctl, nd->control_inputs + k, (size_t)m * sizeof *ctl);
      for (int j = 0; j < m && !rc; j++) {
        int dc = ctl[j]->id < n0 ? p->device[ctl[j]->id] : -1;
        if (dc >= 0 && dc != dn)
          rc = carry_control(&s, p, ctl[j], nd, st) ? (int)wf_status_code(st)
                                                    : 0;
      }
    }
  }
  if (!rc && s.num_added > 0) {
    int n = g->num_nodes;
    int *dev = wf__realloc(p->device, (size_t)n * sizeof *dev);
    if (dev)
      p->device = dev;
    const wf__kernel **ker =
        dev ? wf__realloc(p->kernel, (size_t)n * sizeof *ker) : NULL;
    if (!ker) {
      rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "partitioning: out of memory");
    } else {
      p->kernel = ker;
      for (int id = n0; id < n; id++) {
        p->device[id] = -1;
        p->kernel[id] = NULL;
      }
      for (int i = 0; i < s.num_added; i++) {
        p->device[s.nodes[i].node->id] = s.nodes[i].device;
        p->kernel[s.nodes[i].node->id] = s.nodes[i].kernel;
      }
    }
  }
  wf__free(s.xfers);
  wf__free(s.nodes);
  if (rc)
    return -1;
  return s.slots;
}
