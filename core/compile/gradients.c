/* core/compile/gradients.c — symbolic differentiation (weft/gradients.h) and the
 * gradient contexts through which op plugins build their part of the
 * backward graph.
 *
 * TensorFlow's algorithm: the nodes between xs and ys are found first; a
 * pending count per node says how many of its consumers on that path have
 * not yet sent their gradients; a node's gradient function runs when the
 * count reaches zero, with several arriving gradients summed by AddN (or,
 * when all are sparse, concatenated). The ops it joins gradients with are
 * found by their role flags (add_node), never by name. It adds nodes; it never rewrites or
 * removes existing ones. */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <weft/gradients.h>
#include <weft/tensor.h>

#include "base/alloc.h"
#include "compile/gradients.h"
#include "graph/graph_internal.h"
#include "base/log.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

/* ---- bookkeeping -------------------------------------------------------------- */

/* One gradient contribution arriving at an output. */
typedef struct contrib {
  wf_output dense;                         /* or: */
  wf_output indices, values, dense_shape;  /* sparse when indices.node */
} contrib;

typedef struct contrib_list {
  contrib *items;
  int n, cap;
} contrib_list;

typedef struct autodiff {
  wf_graph *g;
  wf_status *st;
  int nnodes;            /* nodes that existed before: ids < nnodes */
  unsigned char *between; /* on a path from some x to some y */
  int *pending;          /* consumers on the path still to send gradients */
  int *out_base;         /* first output slot of node id in lists */
  contrib_list *lists;   /* one per output of every old node */
  int warned_densify;
} autodiff;

static int is_float(wf_dtype t) {
  return t == WF_FLOAT32 || t == WF_FLOAT64 || t == WF_FLOAT16 ||
         t == WF_BFLOAT16;
}

static int add_contrib(autodiff *ad, wf_output at, const contrib *c) {
  contrib_list *l = &ad->lists[ad->out_base[at.node->id] + at.index];
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 2;
    contrib *grown = wf__realloc(l->items, (size_t)cap * sizeof *grown);
    if (!grown)
      return wf_status_set(ad->st, WF_RESOURCE_EXHAUSTED,
                           "gradients: out of memory");
    l->items = grown;
    l->cap = cap;
  }
  l->items[l->n++] = *c;
  return 0;
}

/* Adds a node of the op with role flag `role` (WF_OP_ONES_LIKE, ...): the
 * ops autodiff joins the gradient functions' nodes with are found by their
 * role (weft/plugin.h), not by name; the built-in op plugins provide
 * them. */
static wf_node *add_node(autodiff *ad, uint32_t role, const wf_output *in,
                         int n, const wf_attr_item *attrs, int nattrs) {
  static const struct {
    uint32_t flag;
    const char *what;
  } roles[] = {{WF_OP_ONES_LIKE, "the seed dy = 1 (WF_OP_ONES_LIKE)"},
               {WF_OP_ADD_N, "the sum of gradients (WF_OP_ADD_N)"},
               {WF_OP_CONCAT, "the rows of sparse gradients (WF_OP_CONCAT)"},
               {WF_OP_CAST, "sparse gradients' indices (WF_OP_CAST)"},
               {WF_OP_SCATTER_ADD,
                "dense sparse gradients (WF_OP_SCATTER_ADD)"}};
  const wf__op *op = wf__registry_find_op_with_flag(ad->g->rt->reg, role);
  if (!op) {
    const char *what = "?";
    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++)
      if (roles[i].flag == role)
        what = roles[i].what;
    wf_status_set(ad->st, WF_NOT_FOUND,
                  "gradients: no loaded plugin defines the op for %s; the "
                  "built-in op plugins ops-math and ops-array do",
                  what);
    return NULL;
  }
  return wf__node_add_flat(ad->g, op->def.name, NULL, in, n, attrs, nattrs,
                           ad->st);
}

/* Densifies a sparse contribution: UnsortedSegmentSum(values, indices,
 * dense_shape[0]) reshaped to dense_shape. Done only where a dense value is
 * unavoidable (it meets a dense gradient, or flows into a gradient
 * function), and said once in the log. */
static int densify(autodiff *ad, const contrib *c, wf_output *out) {
  if (!ad->warned_densify) {
    ad->warned_densify = 1;
    wf__log(WF_LOG_INFO, "gradients",
            "a sparse gradient from '%s' is turned into a dense tensor where "
            "it meets a dense one or enters a gradient function",
            c->values.node->name);
  }
  wf_output in[3] = {c->values, c->indices, c->dense_shape};
  wf_node *n = add_node(ad, WF_OP_SCATTER_ADD, in, 3, NULL, 0);
  if (!n)
    return -1;
  *out = (wf_output){n, 0};
  return 0;
}

int wf__gradient_dense(wf_graph *g, const wf_gradient *gr, wf_output *out,
                       wf_status *st) {
  autodiff ad = {.g = g, .st = st};
  contrib c = {.indices = gr->indices, .values = gr->values,
               .dense_shape = gr->dense_shape};
  *out = gr->dense;
  if (gr->dense.node || !gr->indices.node)
    return 0;
  return densify(&ad, &c, out) ? wf_status_code(st) : 0;
}

/* Sums the contributions of one output into *out (dense) or keeps them
 * sparse when every one is. Returns 0 with out->dense.node NULL when there
 * is nothing. */
static int sum_contribs(autodiff *ad, contrib_list *l, int allow_sparse,
                        contrib *out) {
  memset(out, 0, sizeof *out);
  if (l->n == 0)
    return 0;
  int nsparse = 0;
  for (int i = 0; i < l->n; i++)
    nsparse += l->items[i].indices.node != NULL;
  if (nsparse == l->n && allow_sparse) {
    if (l->n == 1) {
      *out = l->items[0];
      return 0;
    }
    /* Concatenate indices and values: repeated rows add up downstream. */
    wf_output *idx = wf__calloc((size_t)l->n, sizeof *idx);
    wf_output *val = wf__calloc((size_t)l->n, sizeof *val);
    int rc = -1;
    if (!idx || !val) {
      wf_status_set(ad->st, WF_RESOURCE_EXHAUSTED, "gradients: out of memory");
      goto done_sparse;
    }
    int mixed = 0;
    for (int i = 0; i < l->n; i++) {
      idx[i] = l->items[i].indices;
      val[i] = l->items[i].values;
      mixed |= idx[i].node->output_dtypes[idx[i].index] !=
               idx[0].node->output_dtypes[idx[0].index];
    }
    /* Gathers of the same params with int32 and int64 indices: the
     * indices meet as int64. */
    for (int i = 0; mixed && i < l->n; i++) {
      if (idx[i].node->output_dtypes[idx[i].index] == WF_INT64)
        continue;
      wf_attr_item to = {"DstT",
                         {.type = WF_ATTR_DTYPE, .count = 1,
                          .u.dtype = WF_INT64}};
      wf_node *cast = add_node(ad, WF_OP_CAST, &idx[i], 1, &to, 1);
      if (!cast)
        goto done_sparse;
      idx[i] = (wf_output){cast, 0};
    }
    wf_attr_item axis = {"axis", {.type = WF_ATTR_INT, .count = 1, .u.i = 0}};
    wf_node *ci = add_node(ad, WF_OP_CONCAT, idx, l->n, &axis, 1);
    wf_node *cv = ci ? add_node(ad, WF_OP_CONCAT, val, l->n, &axis, 1) : NULL;
    if (!cv)
      goto done_sparse;
    out->indices = (wf_output){ci, 0};
    out->values = (wf_output){cv, 0};
    out->dense_shape = l->items[0].dense_shape;
    rc = 0;
  done_sparse:
    wf__free(idx);
    wf__free(val);
    return rc;
  }
  wf_output *terms = wf__calloc((size_t)l->n, sizeof *terms);
  if (!terms)
    return wf_status_set(ad->st, WF_RESOURCE_EXHAUSTED,
                         "gradients: out of memory");
  int rc = 0;
  for (int i = 0; i < l->n && rc == 0; i++) {
    if (l->items[i].indices.node)
      rc = densify(ad, &l->items[i], &terms[i]);
    else
      terms[i] = l->items[i].dense;
  }
  if (rc == 0) {
    if (l->n == 1) {
      out->dense = terms[0];
    } else {
      wf_node *sum = add_node(ad, WF_OP_ADD_N, terms, l->n, NULL, 0);
      if (!sum)
        rc = -1;
      else
        out->dense = (wf_output){sum, 0};
    }
  }
  wf__free(terms);
  return rc;
}

/* ---- gradient contexts -------------------------------------------------------- */

struct wf_grad_ctx {
  autodiff *ad;
  const wf_node *node;
  wf_output *out_grads; /* node->num_outputs: summed, dense; node NULL: none */
  contrib *in_grads;    /* node->num_inputs: what the function set */
};

int32_t wf__grad_num_inputs(const wf_grad_ctx *c) {
  return c->node->num_inputs;
}
int32_t wf__grad_num_outputs(const wf_grad_ctx *c) {
  return c->node->num_outputs;
}
wf_output wf__grad_input(const wf_grad_ctx *c, int32_t i) {
  if (i < 0 || i >= c->node->num_inputs)
    return (wf_output){NULL, 0};
  return c->node->inputs[i];
}
wf_output wf__grad_output(const wf_grad_ctx *c, int32_t i) {
  if (i < 0 || i >= c->node->num_outputs)
    return (wf_output){NULL, 0};
  return (wf_output){(wf_node *)c->node, i};
}
wf_output wf__grad_output_grad(const wf_grad_ctx *c, int32_t i) {
  if (i < 0 || i >= c->node->num_outputs)
    return (wf_output){NULL, 0};
  return c->out_grads[i];
}
int wf__grad_attr(const wf_grad_ctx *c, const char *name, wf_attr_value *out) {
  const wf_attr_value *v = wf__node_attr(c->node, name);
  if (!v)
    return -1;
  *out = *v;
  return 0;
}
int wf__grad_tensor_info(const wf_grad_ctx *c, wf_output t, int32_t *dtype,
                         wf_shape *shape) {
  if (!t.node || t.node->graph != c->ad->g || t.index < 0 ||
      t.index >= t.node->num_outputs)
    return -1;
  if (dtype)
    *dtype = t.node->output_dtypes[t.index];
  if (shape)
    *shape = t.node->output_shapes[t.index];
  return 0;
}
wf_node *wf__grad_add_node(wf_grad_ctx *c, const char *op,
                           const wf_output *inputs, int32_t ninputs,
                           const wf_attr_item *attrs, int32_t nattrs,
                           wf_status *st) {
  return wf__node_add_flat(c->ad->g, op, NULL, inputs, ninputs, attrs, nattrs,
                           st);
}
void wf__grad_set_input_grad(wf_grad_ctx *c, int32_t i, wf_output g) {
  if (i < 0 || i >= c->node->num_inputs)
    return;
  memset(&c->in_grads[i], 0, sizeof c->in_grads[i]);
  c->in_grads[i].dense = g;
}
void wf__grad_set_input_grad_sparse(wf_grad_ctx *c, int32_t i,
                                    wf_output indices, wf_output values,
                                    wf_output dense_shape) {
  if (i < 0 || i >= c->node->num_inputs)
    return;
  memset(&c->in_grads[i], 0, sizeof c->in_grads[i]);
  c->in_grads[i].indices = indices;
  c->in_grads[i].values = values;
  c->in_grads[i].dense_shape = dense_shape;
}
const char *wf__grad_node_name(const wf_grad_ctx *c) { return c->node->name; }

/* ---- the algorithm ---------------------------------------------------------------- */

static int check_outputs(const wf_graph *g, const wf_output *o, int n,
                         const char *what, wf_status *st) {
  for (int i = 0; i < n; i++) {
    if (!o[i].node || o[i].node->graph != g)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "gradients: %s %d is not a node of this graph",
                           what, i);
    if (o[i].index < 0 || o[i].index >= o[i].node->num_outputs)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "gradients: %s %d: node '%s' has no output %d",
                           what, i, o[i].node->name, o[i].index);
  }
  return 0;
}

/* Marks the nodes between xs and ys: reachable forward from an x node and
 * backward from a y node through data edges. */
static int mark_between(autodiff *ad, const wf_output *ys, int nys,
                        const wf_output *xs, int nxs) {
  int n = ad->nnodes;
  unsigned char *fwd = wf__calloc((size_t)n + 1, 1);
  unsigned char *bwd = wf__calloc((size_t)n + 1, 1);
  wf_node **stack = wf__calloc((size_t)n + 1, sizeof *stack);
  int top = 0;
  if (!fwd || !bwd || !stack) {
    wf__free(fwd);
    wf__free(bwd);
    wf__free(stack);
    return wf_status_set(ad->st, WF_RESOURCE_EXHAUSTED,
                         "gradients: out of memory");
  }
  for (int i = 0; i < nxs; i++)
    if (!fwd[xs[i].node->id]) {
      fwd[xs[i].node->id] = 1;
      stack[top++] = xs[i].node;
    }
  while (top > 0) {
    wf_node *nd = stack[--top];
    for (int k = 0; k < nd->num_data_consumers; k++) {
      wf_node *c = nd->data_consumers[k];
      if (c->id < n && !fwd[c->id]) {
        fwd[c->id] = 1;
        stack[top++] = c;
      }
    }
  }
  for (int i = 0; i < nys; i++)
    if (!bwd[ys[i].node->id]) {
      bwd[ys[i].node->id] = 1;
      stack[top++] = ys[i].node;
    }
  while (top > 0) {
    wf_node *nd = stack[--top];
    for (int k = 0; k < nd->num_inputs; k++) {
      wf_node *p = nd->inputs[k].node;
      if (!bwd[p->id]) {
        bwd[p->id] = 1;
        stack[top++] = p;
      }
    }
  }
  for (int id = 0; id < n; id++)
    ad->between[id] = fwd[id] && bwd[id];
  wf__free(fwd);
  wf__free(bwd);
  wf__free(stack);
  return 0;
}

/* Runs the gradient function of node nd, whose output gradients are all
 * known, and passes what it sets to the producers of its inputs. */
static int backprop_node(autodiff *ad, wf_node *nd) {
  int nout = nd->num_outputs, nin = nd->num_inputs;
  wf_output *out_grads = wf__calloc((size_t)nout + 1, sizeof *out_grads);
  contrib *in_grads = wf__calloc((size_t)nin + 1, sizeof *in_grads);
  int rc = 0, any = 0;
  if (!out_grads || !in_grads) {
    rc = wf_status_set(ad->st, WF_RESOURCE_EXHAUSTED,
                       "gradients: out of memory");
    goto done;
  }
  /* Only inputs on the path want a gradient; a node none of whose float
   * inputs is on it (an x itself, a variable read) runs no function, and
   * its arriving gradients are left as they are (sparse ones stay sparse
   * for the caller). */
  int wanted = 0;
  for (int i = 0; i < nin; i++) {
    wf_output in = nd->inputs[i];
    if (in.node->id < ad->nnodes && ad->between[in.node->id] &&
        is_float(in.node->output_dtypes[in.index]))
      wanted = 1;
  }
  if (!wanted)
    goto done;
  const wf__gradient *gr = wf__registry_find_gradient(ad->g->rt->reg,
                                                      nd->op->def.name);
  /* No gradient flows through (StopGradient, ...): nothing to sum. */
  if (gr && ((gr->def.flags & WF_GRAD_NOT_DIFFERENTIABLE) || !gr->def.fn))
    goto done;
  for (int o = 0; o < nout; o++) {
    contrib sum;
    if (sum_contribs(ad, &ad->lists[ad->out_base[nd->id] + o], 0, &sum)) {
      rc = wf_status_code(ad->st);
      goto done;
    }
    out_grads[o] = sum.dense;
    any |= sum.dense.node != NULL;
  }
  if (!any)
    goto done;
  if (!gr) {
    rc = wf_status_set(ad->st, WF_NOT_FOUND,
                       "gradients: op '%s' (node '%s') has no gradient "
                       "registered, and it lies between the xs and the ys",
                       nd->op->def.name, nd->name);
    goto done;
  }
  struct wf_grad_ctx ctx = {ad, nd, out_grads, in_grads};
  const char *base = strrchr(nd->name, '/');
  char scope[256];
  snprintf(scope, sizeof scope, "%s_grad", base ? base + 1 : nd->name);
  int pushed = wf_graph_push_scope(ad->g, scope, NULL) == 0;
  wf_status fst = {WF_OK, NULL};
  int frc = gr->def.fn(&ctx, &fst);
  if (pushed)
    wf_graph_pop_scope(ad->g);
  if (frc || fst.code) {
    rc = wf_status_set(ad->st, fst.code ? fst.code : WF_INTERNAL,
                       "gradients: the gradient of node '%s' (op '%s', "
                       "plugin '%s') failed: %s",
                       nd->name, nd->op->def.name, gr->plugin,
                       fst.message ? fst.message : "no message");
    wf_status_reset(&fst);
    goto done;
  }
  wf_status_reset(&fst);
  for (int i = 0; i < nin; i++) {
    wf_output in = nd->inputs[i];
    contrib *c = &in_grads[i];
    if (!c->dense.node && !c->indices.node)
      continue;
    if (in.node->id >= ad->nnodes || !ad->between[in.node->id])
      continue;
    if ((rc = add_contrib(ad, in, c)))
      goto done;
  }
done:
  wf__free(out_grads);
  wf__free(in_grads);
  return rc;
}

int wf_graph_add_gradients(wf_graph *g, const wf_output *ys, int nys,
                           const wf_output *dys, const wf_output *xs, int nxs,
                           wf_gradient *dxs, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  if (!st)
    st = &local;
  autodiff ad = {0};
  int rc = 0, pushed = 0;
  wf_node **queue = NULL;
  ad.g = g;
  ad.st = st;
  ad.nnodes = g->num_nodes;
  for (int i = 0; i < nxs; i++)
    memset(&dxs[i], 0, sizeof dxs[i]);
  if ((rc = check_outputs(g, ys, nys, "y", st)) ||
      (rc = check_outputs(g, xs, nxs, "x", st)) ||
      (dys && (rc = check_outputs(g, dys, nys, "dy", st))))
    goto out;
  for (int i = 0; i < nys; i++) {
    wf_dtype t = ys[i].node->output_dtypes[ys[i].index];
    if (!is_float(t)) {
      rc = wf_status_set(st, WF_INVALID_ARGUMENT,
                         "gradients: y %d ('%s:%d') is %s; only floating "
                         "point tensors have gradients",
                         i, ys[i].node->name, ys[i].index, wf_dtype_name(t));
      goto out;
    }
  }
  int n = ad.nnodes;
  ad.between = wf__calloc((size_t)n + 1, 1);
  ad.pending = wf__calloc((size_t)n + 1, sizeof *ad.pending);
  ad.out_base = wf__calloc((size_t)n + 1, sizeof *ad.out_base);
  queue = wf__calloc((size_t)n + 1, sizeof *queue);
  if (!ad.between || !ad.pending || !ad.out_base || !queue)
    goto oom;
  int nslots = 0;
  for (int id = 0; id < n; id++) {
    ad.out_base[id] = nslots;
    nslots += g->nodes[id]->num_outputs;
  }
  ad.lists = wf__calloc((size_t)nslots + 1, sizeof *ad.lists);
  if (!ad.lists)
    goto oom;
  if ((rc = mark_between(&ad, ys, nys, xs, nxs)))
    goto out;

  /* Pending counts: consumers on the path, one per consuming input. */
  for (int id = 0; id < n; id++) {
    if (!ad.between[id])
      continue;
    wf_node *nd = g->nodes[id];
    for (int k = 0; k < nd->num_inputs; k++) {
      wf_node *p = nd->inputs[k].node;
      if (ad.between[p->id])
        ad.pending[p->id]++;
    }
  }

  /* A scope that is taken is made unique: gradients, gradients_1, ... */
  pushed = wf_graph_push_scope(g, "gradients", NULL) == 0;

  /* Seed the ys. */
  for (int i = 0; i < nys; i++) {
    contrib c = {0};
    if (dys) {
      c.dense = dys[i];
    } else {
      wf_node *ones = add_node(&ad, WF_OP_ONES_LIKE, &ys[i], 1, NULL, 0);
      if (!ones) {
        rc = wf_status_code(st);
        goto out;
      }
      c.dense = (wf_output){ones, 0};
    }
    if ((rc = add_contrib(&ad, ys[i], &c)))
      goto out;
  }

  /* Walk backwards: a node is ready when every consumer on the path has
   * sent its gradients. */
  int head = 0, tail = 0;
  for (int id = 0; id < n; id++)
    if (ad.between[id] && ad.pending[id] == 0)
      queue[tail++] = g->nodes[id];
  while (head < tail) {
    wf_node *nd = queue[head++];
    if ((rc = backprop_node(&ad, nd)))
      goto out;
    for (int k = 0; k < nd->num_inputs; k++) {
      wf_node *p = nd->inputs[k].node;
      if (ad.between[p->id] && --ad.pending[p->id] == 0)
        queue[tail++] = p;
    }
  }

  /* Collect each x's gradient: sparse stays sparse when every contribution
   * is. */
  for (int i = 0; i < nxs; i++) {
    contrib sum;
    contrib_list *l = &ad.lists[ad.out_base[xs[i].node->id] + xs[i].index];
    if ((rc = sum_contribs(&ad, l, 1, &sum)))
      goto out;
    dxs[i].dense = sum.dense;
    dxs[i].indices = sum.indices;
    dxs[i].values = sum.values;
    dxs[i].dense_shape = sum.dense_shape;
  }
  goto out;
oom:
  rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "gradients: out of memory");
out:
  /* Helpers that add nodes answer -1 with st set: return st's code. */
  if (rc < 0)
    rc = wf_status_code(st) != WF_OK ? wf_status_code(st) : WF_INTERNAL;
  if (pushed)
    wf_graph_pop_scope(g);
  if (ad.lists) {
    int total = 0;
    for (int id = 0; id < ad.nnodes; id++)
      total += g->nodes[id]->num_outputs;
    for (int s = 0; s < total; s++)
      wf__free(ad.lists[s].items);
  }
  wf__free(ad.lists);
  wf__free(ad.between);
  wf__free(ad.pending);
  wf__free(ad.out_base);
  wf__free(queue);
  if (rc)
    for (int i = 0; i < nxs; i++)
      memset(&dxs[i], 0, sizeof dxs[i]);
  wf_status_reset(&local);
  return rc;
}
