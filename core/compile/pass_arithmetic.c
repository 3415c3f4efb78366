/* core/compile/pass_arithmetic.c — arithmetic simplification on a signature's
 * working graph: operations that provably give back their input (or zeros)
 * are bypassed, bit for bit, on every input the graph admits. Each rule
 * below states its condition; rules repeat until none applies.
 *
 * It rewires consumers and fetches (adding only the ZerosLike of x - x);
 * the bypassed nodes are left for dead-node removal. Nodes with control
 * inputs are never bypassed, since their consumers wait for those, and no
 * node whose output is dropped may have any: a bypassed node's effect on
 * timing is always nil. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <weft/tensor.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "compile/passes.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

/* ---- reading the graph ------------------------------------------------- */

static int is_op(const wf_node *n, const char *op) {
  return strcmp(n->op->def.name, op) == 0;
}

/* The value of a Const without control inputs (one that fires at once, so
 * dropping an edge from it changes no timing), or NULL. */
static const wf_tensor *plain_const(const wf_node *n) {
  if (!is_op(n, "Const") || n->num_control_inputs > 0)
    return NULL;
  const wf_attr_value *v = wf__node_attr(n, "value");
  return v && v->type == WF_ATTR_TENSOR ? v->u.tensor : NULL;
}

static const wf_shape *shape_of(wf_output o) {
  return &o.node->output_shapes[o.index];
}

static int is_integer(wf_dtype t) {
  return t == WF_INT8 || t == WF_UINT8 || t == WF_INT32 || t == WF_INT64;
}

/* The constants the rules look for. For floats the sign of a zero counts:
 * x + (-0) and x - (+0) give x for every x, but -0 + (+0) is +0. */
typedef enum fill { FILL_ONE, FILL_PLUS_ZERO, FILL_MINUS_ZERO } fill;

static int element_is(const void *data, wf_dtype dt, int64_t i, fill want) {
  int one = want == FILL_ONE, neg = want == FILL_MINUS_ZERO;
  switch (dt) {
  case WF_FLOAT32: {
    float f = ((const float *)data)[i];
    return one ? f == 1.0f : f == 0.0f && !signbit(f) == !neg;
  }
  case WF_FLOAT64: {
    double f = ((const double *)data)[i];
    return one ? f == 1.0 : f == 0.0 && !signbit(f) == !neg;
  }
  case WF_FLOAT16:
  case WF_BFLOAT16: {
    uint16_t b = ((const uint16_t *)data)[i];
    if (one)
      return b == (dt == WF_FLOAT16 ? 0x3C00 : 0x3F80);
    return b == (neg ? 0x8000 : 0x0000);
  }
  /* Integers have one zero. */
  case WF_INT8:
    return ((const int8_t *)data)[i] == (one ? 1 : 0);
  case WF_UINT8:
    return ((const uint8_t *)data)[i] == (one ? 1 : 0);
  case WF_INT32:
    return ((const int32_t *)data)[i] == (one ? 1 : 0);
  case WF_INT64:
    return ((const int64_t *)data)[i] == (one ? 1 : 0);
  default:
    return 0;
  }
}

static int all_are(const wf_tensor *t, fill want) {
  const void *data = wf_tensor_data(t);
  int64_t n = wf_tensor_count(t);
  for (int64_t i = 0; i < n; i++)
    if (!element_is(data, wf_tensor_dtype(t), i, want))
      return 0;
  return 1;
}

/* 1 when broadcasting x against a constant of shape c gives exactly x's
 * shape for every tensor x of static shape xs: xs has a known rank no
 * smaller than c's, and each of c's dims (aligned to the right) is 1 or
 * equals x's dim, which is then known. */
static int broadcast_keeps(const wf_shape *xs, const wf_shape *c) {
  if (xs->rank < 0 || c->rank < 0 || c->rank > xs->rank)
    return 0;
  for (int i = 1; i <= c->rank; i++) {
    int64_t cd = c->dims[c->rank - i], xd = xs->dims[xs->rank - i];
    if (cd != 1 && (xd < 0 || cd != xd))
      return 0;
  }
  return 1;
}

/* The permutation held by a plain Const of rank 1 (int32 or int64) into
 * perm; its length, or -1 when it is not one or not a permutation of
 * 0..len-1. */
static int const_perm(const wf_node *n, int *perm) {
  const wf_tensor *t = plain_const(n);
  if (!t || wf_tensor_rank(t) != 1 || wf_tensor_count(t) > WF_MAX_RANK)
    return -1;
  int len = (int)wf_tensor_count(t), seen[WF_MAX_RANK] = {0};
  for (int i = 0; i < len; i++) {
    int64_t v = wf_tensor_dtype(t) == WF_INT32
                    ? ((const int32_t *)wf_tensor_data(t))[i]
                : wf_tensor_dtype(t) == WF_INT64
                    ? ((const int64_t *)wf_tensor_data(t))[i]
                    : -1;
    if (v < 0 || v >= len || seen[v])
      return -1;
    seen[v] = 1;
    perm[i] = (int)v;
  }
  return len;
}

/* ---- rewriting --------------------------------------------------------- */

static int output_read(const wf_output o) {
  for (int k = 0; k < o.node->num_data_consumers; k++) {
    const wf_node *c = o.node->data_consumers[k];
    for (int i = 0; i < c->num_inputs; i++)
      if (c->inputs[i].node == o.node && c->inputs[i].index == o.index)
        return 1;
  }
  return 0;
}

static int fetched(const wf__work *w, const wf_node *n) {
  for (int f = 0; f < w->sig.nfetches; f++)
    if (w->fetches[f].node == n)
      return 1;
  return 0;
}

/* Makes everything that reads `from` read `to` (same dtype and value).
 * A fetch moves too, unless `to` is fed: a signature may not fetch what it
 * feeds, so such a fetch stays on `from`. *changed is set when anything
 * moved. */
static int replace(wf__work *w, wf_output from, wf_output to, int *changed,
                   wf_status *st) {
  if (output_read(from)) {
    if (wf__graph_redirect(w->g, from, to, st))
      return wf_status_code(st);
    *changed = 1;
  }
  if (wf__signature_fed(&w->sig, to.node, to.index, NULL))
    return 0;
  for (int f = 0; f < w->sig.nfetches; f++) {
    if (w->fetches[f].node == from.node && w->fetches[f].index == from.index) {
      w->fetches[f] = to;
      *changed = 1;
    }
  }
  return 0;
}

/* ---- the rules ---------------------------------------------------------- */

/* Identity(x), StopGradient(x) -> x. The working graph is executed, never
 * differentiated, so StopGradient has no role left in it. An Identity that
 * asks for a device other than its input's is kept: it may be a copy
 * between devices. */
static int rule_identity(wf__work *w, wf_node *n, int *changed, wf_status *st) {
  if (!is_op(n, "Identity") && !is_op(n, "StopGradient"))
    return 0;
  wf_output x = n->inputs[0];
  if (n->device[0] && strcmp(n->device, x.node->device) != 0)
    return 0;
  return replace(w, (wf_output){n, 0}, x, changed, st);
}

/* x * 1, 1 * x -> x; x + (-0), (-0) + x, x - (+0) -> x (for integers any
 * zero). The constant is a plain Const whose every element is exactly that
 * identity element, and broadcasting it against x cannot change x's shape
 * (broadcast_keeps), so the result is x element for element: x * 1 is x
 * for every float including NaN, infinities and -0, and x - (+0), x + (-0)
 * are x including -0. x + (+0) is not simplified for floats: it turns -0
 * into +0. */
static int rule_identity_element(wf__work *w, wf_node *n, int *changed,
                                 wf_status *st) {
  int mul = is_op(n, "Mul"), add = is_op(n, "Add"), sub = is_op(n, "Sub");
  if (!mul && !add && !sub)
    return 0;
  for (int k = 0; k < 2; k++) {
    if (sub && k == 0)
      continue; /* 0 - x is not x */
    wf_output x = n->inputs[1 - k];
    const wf_tensor *c = plain_const(n->inputs[k].node);
    wf_shape cs;
    if (!c)
      continue;
    wf_tensor_shape(c, &cs);
    fill want = mul ? FILL_ONE : add ? FILL_MINUS_ZERO : FILL_PLUS_ZERO;
    if (broadcast_keeps(shape_of(x), &cs) && all_are(c, want))
      return replace(w, (wf_output){n, 0}, x, changed, st);
  }
  return 0;
}

/* x - x -> ZerosLike(x), for integer types only: for floats x - x is NaN
 * where x is NaN or infinite. Both inputs are the same tensor, so the
 * result has x's shape. ZerosLike still reads x, so x is still computed
 * first (and fails the step where it would have). */
static int rule_self_subtract(wf__pass_env *env, wf_node *n, int *changed,
                              wf_status *st) {
  wf__work *w = env->work;
  if (!is_op(n, "Sub") || !is_integer(n->output_dtypes[0]))
    return 0;
  wf_output a = n->inputs[0], b = n->inputs[1];
  if (a.node != b.node || a.index != b.index ||
      !wf__registry_find_op(env->rt->reg, "ZerosLike"))
    return 0;
  char base[512], name[560];
  snprintf(base, sizeof base, "%s_zeros", n->name);
  wf_graph_unique_name(w->g, base, name, sizeof name);
  wf_node_desc *d = wf__node_desc_new_full(w->g, "ZerosLike", name);
  wf_node_desc_add_input(d, a);
  wf_node_desc_set_device(d, n->device);
  wf_node *z = wf_node_desc_finish(d, st);
  if (!z)
    return wf_status_code(st);
  return replace(w, (wf_output){n, 0}, (wf_output){z, 0}, changed, st);
}

/* Transpose(x, p) -> x when p is the identity, and Transpose(Transpose(x,
 * p1), p2) -> x when the composition (p1[p2[i]] = i) is. Permutations are
 * plain Consts of length rank(x), x's rank known, so neither Transpose
 * could fail; the inner one may keep other consumers. */
static int rule_transpose(wf__work *w, wf_node *n, int *changed,
                          wf_status *st) {
  if (!is_op(n, "Transpose"))
    return 0;
  int p2[WF_MAX_RANK], p1[WF_MAX_RANK];
  wf_output y = n->inputs[0];
  int r = const_perm(n->inputs[1].node, p2);
  if (r < 0 || shape_of(y)->rank != r)
    return 0;
  int identity = 1;
  for (int i = 0; i < r; i++)
    identity &= p2[i] == i;
  if (identity)
    return replace(w, (wf_output){n, 0}, y, changed, st);
  wf_node *inner = y.node;
  if (!is_op(inner, "Transpose") || inner->num_control_inputs > 0)
    return 0;
  wf_output x = inner->inputs[0];
  if (const_perm(inner->inputs[1].node, p1) != r || shape_of(x)->rank != r)
    return 0;
  for (int i = 0; i < r; i++)
    if (p1[p2[i]] != i)
      return 0;
  return replace(w, (wf_output){n, 0}, x, changed, st);
}

/* Reshape(Reshape(x, s1), s2) -> Reshape(x, s2): a reshape depends only on
 * the element count and the row-major order, both unchanged by the inner
 * one. Only when the inner one cannot fail: s1 a plain Const, x's shape and
 * the inner output's shape fully known (shape inference checked them).
 * Then Reshape(x, s) -> x when s gives x's own fully known shape. */
static int rule_reshape(wf__work *w, wf_node *n, int *changed, wf_status *st) {
  if (!is_op(n, "Reshape"))
    return 0;
  wf_node *inner = n->inputs[0].node;
  if (is_op(inner, "Reshape") && inner->num_control_inputs == 0 &&
      plain_const(inner->inputs[1].node) &&
      wf_shape_is_known(shape_of(inner->inputs[0])) &&
      wf_shape_is_known(&inner->output_shapes[0])) {
    if (wf__node_set_input(n, 0, inner->inputs[0], st))
      return wf_status_code(st);
    *changed = 1;
  }
  wf_output x = n->inputs[0];
  if (n->num_control_inputs == 0 && plain_const(n->inputs[1].node) &&
      wf_shape_is_known(shape_of(x)) &&
      wf_shape_equal(shape_of(x), &n->output_shapes[0]))
    return replace(w, (wf_output){n, 0}, x, changed, st);
  return 0;
}

/* Runs the rules on n until one changes something. */
static int simplify(wf__pass_env *env, wf_node *n, int *changed,
                    wf_status *st) {
  wf__work *w = env->work;
  int done = 0;
  /* rule_reshape may keep n (moving only its input) and checks n's control
   * inputs itself; every other rule drops n. */
  if (rule_reshape(w, n, &done, st))
    return wf_status_code(st);
  if (!done && n->num_control_inputs == 0 &&
      (rule_identity(w, n, &done, st) ||
       (!done && rule_identity_element(w, n, &done, st)) ||
       (!done && rule_self_subtract(env, n, &done, st)) ||
       (!done && rule_transpose(w, n, &done, st))))
    return wf_status_code(st);
  *changed |= done;
  return 0;
}

int wf__pass_arithmetic(wf__pass_env *env, wf_status *st) {
  wf__work *w = env->work;
  int rc = 0, changed = 1;
  while (changed && !rc) {
    changed = 0;
    int n = w->g->num_nodes;
    unsigned char *live = wf__calloc((size_t)n + 1, 1);
    if (!live)
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "arithmetic simplification: out of memory");
    if (wf__prune(w->g, &w->sig, live, st) < 0) {
      wf__free(live);
      return wf_status_code(st);
    }
    for (int id = 0; id < n && !rc; id++) {
      wf_node *nd = w->g->nodes[id];
      /* Nodes nothing reads any more are left alone. */
      if (!live[id] || (nd->num_data_consumers == 0 && !fetched(w, nd)))
        continue;
      rc = simplify(env, nd, &changed, st);
      if (rc)
        wf_status_prefix(st, "simplifying node '%s'", nd->name);
    }
    wf__free(live);
  }
  return rc;
}
