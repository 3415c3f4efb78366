/* plugins/ops/math/arithmetic.c — the graph pass "arithmetic" (order 100,
 * the first of the built-in plugin passes): operations that provably give
 * back their input (or zeros) are bypassed, bit for bit, on every input
 * the graph admits. Each rule below states its condition; rules repeat
 * until none applies. Besides this plugin's Add, Sub and Mul it knows
 * ops-array's Const, Identity, StopGradient, Transpose, Reshape and
 * ZerosLike by name; a rule whose ops are not loaded never matches.
 *
 * It rewires readers and fetches (adding only the ZerosLike of x - x); the
 * bypassed nodes are left for dead-node removal. Nodes with control
 * inputs are never bypassed, since their readers wait for those, and no
 * node whose output is dropped may have any: a bypassed node's effect on
 * timing is always nil. Switched off with [passes] arithmetic = false. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "math_ops.h"

/* ---- reading the graph ------------------------------------------------- */

static int is_op(const wf_node *n, const char *op) {
  return strcmp(wfx_host->node_op(n), op) == 0;
}

static wf_output input(const wf_node *n, int32_t i) {
  return wfx_host->node_input(n, i);
}

static int no_control_inputs(const wf_node *n) {
  return wfx_host->node_num_control_inputs(n) == 0;
}

/* The value of a Const without control inputs (one that fires at once, so
 * dropping an edge from it changes no timing), or NULL. */
static const wf_tensor *plain_const(const wf_node *n) {
  wf_attr_value v;
  if (!is_op(n, "Const") || !no_control_inputs(n) ||
      wfx_host->node_attr(n, "value", &v) || v.type != WF_ATTR_TENSOR)
    return NULL;
  return v.u.tensor;
}

/* The static shape of output o (rank -1 when unknown). */
static wf_shape shape_of(wf_output o) {
  wf_shape s;
  if (wfx_host->node_output_info(o.node, o.index, NULL, &s))
    wfx_shape_set_unknown(&s);
  return s;
}

static int32_t dtype_of(wf_output o) {
  int32_t dt = WF_DTYPE_INVALID;
  wfx_host->node_output_info(o.node, o.index, &dt, NULL);
  return dt;
}

static int is_integer(int32_t t) {
  return t == WF_INT8 || t == WF_UINT8 || t == WF_INT32 || t == WF_INT64;
}

/* The constants the rules look for. For floats the sign of a zero counts:
 * x + (-0) and x - (+0) give x for every x, but -0 + (+0) is +0. */
typedef enum fill { FILL_ONE, FILL_PLUS_ZERO, FILL_MINUS_ZERO } fill;

static int element_is(const void *data, int32_t dt, int64_t i, fill want) {
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
  const void *data = wfx_data(t);
  int64_t n = wfx_count(t);
  for (int64_t i = 0; i < n; i++)
    if (!element_is(data, wfx_dtype(t), i, want))
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
  wf_shape s;
  if (!t)
    return -1;
  wfx_host->tensor_shape(t, &s);
  if (s.rank != 1 || wfx_count(t) > WF_MAX_RANK)
    return -1;
  int len = (int)wfx_count(t), seen[WF_MAX_RANK] = {0};
  for (int i = 0; i < len; i++) {
    int64_t v = wfx_dtype(t) == WF_INT32   ? ((const int32_t *)wfx_data(t))[i]
                : wfx_dtype(t) == WF_INT64 ? ((const int64_t *)wfx_data(t))[i]
                                           : -1;
    if (v < 0 || v >= len || seen[v])
      return -1;
    seen[v] = 1;
    perm[i] = (int)v;
  }
  return len;
}

/* ---- rewriting --------------------------------------------------------- */

/* Makes everything that reads output 0 of n, and the fetches of it, read
 * `to` (same dtype and value). A fetch stays on n when `to` is fed (a
 * signature may not fetch what it feeds; pass_replace keeps it there).
 * *changed is set when anything moved. */
static int bypass(wf_pass_ctx *ctx, wf_node *n, wf_output to, int *changed,
                  wf_status *st) {
  wf_output from = {n, 0};
  int read = wfx_host->pass_num_consumers(ctx, from) > 0;
  int fetched = wfx_host->pass_is_fetched(ctx, from);
  if (wfx_host->pass_replace(ctx, from, to, st))
    return wfx_code(st);
  if (read || (fetched && !wfx_host->pass_is_fetched(ctx, from)))
    *changed = 1;
  return 0;
}

/* ---- the rules ---------------------------------------------------------- */

/* Identity(x), StopGradient(x) -> x. A working graph is executed, never
 * differentiated, so StopGradient has no role left in it. An Identity that
 * asks for a device other than its input's is kept: it may be a copy
 * between devices. */
static int rule_identity(wf_pass_ctx *ctx, wf_node *n, int *changed,
                         wf_status *st) {
  if (!is_op(n, "Identity") && !is_op(n, "StopGradient"))
    return 0;
  wf_output x = input(n, 0);
  const char *dev = wfx_host->node_device(n);
  if (dev[0] && strcmp(dev, wfx_host->node_device(x.node)) != 0)
    return 0;
  return bypass(ctx, n, x, changed, st);
}

/* x * 1, 1 * x -> x; x + (-0), (-0) + x, x - (+0) -> x (for integers any
 * zero). The constant is a plain Const whose every element is exactly that
 * identity element, and broadcasting it against x cannot change x's shape
 * (broadcast_keeps), so the result is x element for element: x * 1 is x
 * for every float including NaN, infinities and -0, and x - (+0), x + (-0)
 * are x including -0. x + (+0) is not simplified for floats: it turns -0
 * into +0. */
static int rule_identity_element(wf_pass_ctx *ctx, wf_node *n, int *changed,
                                 wf_status *st) {
  int mul = is_op(n, "Mul"), add = is_op(n, "Add"), sub = is_op(n, "Sub");
  if (!mul && !add && !sub)
    return 0;
  for (int k = 0; k < 2; k++) {
    if (sub && k == 0)
      continue; /* 0 - x is not x */
    wf_output x = input(n, 1 - k);
    const wf_tensor *c = plain_const(input(n, k).node);
    wf_shape cs, xs = shape_of(x);
    if (!c)
      continue;
    wfx_host->tensor_shape(c, &cs);
    fill want = mul ? FILL_ONE : add ? FILL_MINUS_ZERO : FILL_PLUS_ZERO;
    if (broadcast_keeps(&xs, &cs) && all_are(c, want))
      return bypass(ctx, n, x, changed, st);
  }
  return 0;
}

/* x - x -> ZerosLike(x), for integer types only: for floats x - x is NaN
 * where x is NaN or infinite. Both inputs are the same tensor, so the
 * result has x's shape. ZerosLike still reads x, so x is still computed
 * first (and fails the step where it would have). Only where placement
 * would put the ZerosLike on the device it would put the Sub on
 * (pass_kernel_device): a device with a Sub kernel and no ZerosLike one
 * keeps its Sub rather than see the work move to another device. */
static int rule_self_subtract(wf_pass_ctx *ctx, wf_node *n, int *changed,
                              wf_status *st) {
  wf_output a, b;
  int32_t dt;
  if (!is_op(n, "Sub") || !is_integer(dt = dtype_of((wf_output){n, 0})))
    return 0;
  a = input(n, 0);
  b = input(n, 1);
  const char *dev = wfx_host->node_device(n);
  int32_t zd;
  if (a.node != b.node || a.index != b.index ||
      (zd = wfx_host->pass_kernel_device(ctx, "ZerosLike", dev, dt)) < 0 ||
      zd != wfx_host->pass_kernel_device(ctx, "Sub", dev, dt))
    return 0;
  char name[WFX_WHAT_MAX];
  wf_node *z = wfx_host->pass_add_node(
      ctx, "ZerosLike", wfx_pass_name(ctx, n, "zeros", name, sizeof name),
      dev[0] ? dev : NULL, &a, 1, NULL, 0, st);
  if (!z)
    return wfx_code(st);
  return bypass(ctx, n, (wf_output){z, 0}, changed, st);
}

/* Transpose(x, p) -> x when p is the identity, and Transpose(Transpose(x,
 * p1), p2) -> x when the composition (p1[p2[i]] = i) is. Permutations are
 * plain Consts of length rank(x), x's rank known, so neither Transpose
 * could fail; the inner one may keep other readers. */
static int rule_transpose(wf_pass_ctx *ctx, wf_node *n, int *changed,
                          wf_status *st) {
  if (!is_op(n, "Transpose"))
    return 0;
  int p2[WF_MAX_RANK], p1[WF_MAX_RANK];
  wf_output y = input(n, 0);
  int r = const_perm(input(n, 1).node, p2);
  if (r < 0 || shape_of(y).rank != r)
    return 0;
  int identity = 1;
  for (int i = 0; i < r; i++)
    identity &= p2[i] == i;
  if (identity)
    return bypass(ctx, n, y, changed, st);
  wf_node *inner = y.node;
  if (!is_op(inner, "Transpose") || !no_control_inputs(inner))
    return 0;
  wf_output x = input(inner, 0);
  if (const_perm(input(inner, 1).node, p1) != r || shape_of(x).rank != r)
    return 0;
  for (int i = 0; i < r; i++)
    if (p1[p2[i]] != i)
      return 0;
  return bypass(ctx, n, x, changed, st);
}

/* Reshape(Reshape(x, s1), s2) -> Reshape(x, s2): a reshape depends only on
 * the element count and the row-major order, both unchanged by the inner
 * one. Only when the inner one cannot fail: s1 a plain Const, x's shape and
 * the inner output's shape fully known (shape inference checked them).
 * Then Reshape(x, s) -> x when s gives x's own fully known shape. */
static int rule_reshape(wf_pass_ctx *ctx, wf_node *n, int *changed,
                        wf_status *st) {
  if (!is_op(n, "Reshape"))
    return 0;
  wf_node *inner = input(n, 0).node;
  if (is_op(inner, "Reshape") && no_control_inputs(inner) &&
      plain_const(input(inner, 1).node)) {
    wf_shape xs = shape_of(input(inner, 0)),
             is = shape_of((wf_output){inner, 0});
    if (wfx_shape_is_known(&xs) && wfx_shape_is_known(&is)) {
      if (wfx_host->pass_set_input(ctx, n, 0, input(inner, 0), st))
        return wfx_code(st);
      *changed = 1;
    }
  }
  wf_output x = input(n, 0);
  wf_shape xs = shape_of(x), ns = shape_of((wf_output){n, 0});
  if (no_control_inputs(n) && plain_const(input(n, 1).node) &&
      wfx_shape_is_known(&xs) && wfx_shape_equal(&xs, &ns))
    return bypass(ctx, n, x, changed, st);
  return 0;
}

/* Runs the rules on n until one changes something. */
static int simplify(wf_pass_ctx *ctx, wf_node *n, int *changed,
                    wf_status *st) {
  int done = 0;
  /* rule_reshape may keep n (moving only its input) and checks n's control
   * inputs itself; every other rule drops n. */
  if (rule_reshape(ctx, n, &done, st))
    return wfx_code(st);
  if (!done && no_control_inputs(n) &&
      (rule_identity(ctx, n, &done, st) ||
       (!done && rule_identity_element(ctx, n, &done, st)) ||
       (!done && rule_self_subtract(ctx, n, &done, st)) ||
       (!done && rule_transpose(ctx, n, &done, st))))
    return wfx_code(st);
  *changed |= done;
  return 0;
}

static int run_arithmetic(wf_pass_ctx *ctx, wf_status *st) {
  int changed = 1;
  while (changed) {
    changed = 0;
    int32_t n = wfx_host->pass_num_nodes(ctx);
    for (int32_t i = 0; i < n; i++) {
      wf_node *nd = wfx_host->pass_node(ctx, i);
      wf_output out = {nd, 0};
      /* Nodes nothing reads any more are left alone (every rule's op has
       * one output). */
      if (wfx_host->node_num_outputs(nd) != 1 ||
          (wfx_host->pass_num_consumers(ctx, out) == 0 &&
           !wfx_host->pass_is_fetched(ctx, out)))
        continue;
      if (simplify(ctx, nd, &changed, st)) {
        char why[512];
        snprintf(why, sizeof why, "%s", wfx_host->status_message(st));
        return wfx_fail(st, wfx_code(st), "simplifying node '%s': %s",
                        wfx_host->node_name(nd), why);
      }
    }
  }
  return 0;
}

const wf_pass_def math_arithmetic_pass = {
    WF_STRUCT_INIT(wf_pass_def),
    .name = "arithmetic",
    .doc = "bypasses x * 1, x + 0, x - 0, integer x - x, identity and "
           "inverse transposes, reshapes of reshapes, Identity and "
           "StopGradient where each is exact",
    .order = 100,
    .run = run_arithmetic};
