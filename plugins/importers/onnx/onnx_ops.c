/* plugins/importers/onnx/onnx_ops.c — the ONNX op mappings: each ONNX op
 * (default domain) as weft ops with ONNX's semantics at the model's opset
 * (axis conventions, attributes that became inputs, broadcasting, auto_pad,
 * count_include_pad, ...). Where weft has the op it is used; what only
 * ONNX defines is built from several weft ops or from the plugin's own
 * ops (onnx_kernels.c). Parameters ONNX allows as inputs but weft needs
 * while building (axes, pads, perm) must be constants (an initializer or
 * a Constant node); otherwise the node is refused naming the input. */
#include <config.h>

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

#define NONE ((wf_output){NULL, 0})
#define OK(st) (wfx_code(st) == 0)

/* ---- small helpers ----------------------------------------------------- */

static int need_in(ox_node *n, int i, wf_status *st) {
  if (i >= n->nin || !n->in[i])
    return wfx_fail(st, WF_INVALID_ARGUMENT, "input %d is required", i);
  return 0;
}

/* Input i as a weft output (required). */
static wf_output X(ox_node *n, int i, wf_status *st) {
  if (!OK(st) || need_in(n, i, st))
    return NONE;
  return ox_use(n, n->in[i], st);
}

static int has_in(const ox_node *n, int i) { return i < n->nin && n->in[i]; }

static int rank_of(wf_output o) {
  wf_shape s;
  ox_shape_of(o, &s);
  return s.rank;
}

static int out1(ox_node *n, wf_output o, wf_status *st) {
  return ox_set_out(n, 0, o, st);
}

static wf_attr_item item_ints(const char *name, const int64_t *v, int count) {
  return (wf_attr_item){
      .name = name,
      .value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = count,
                .u.ints = v}};
}

static wf_attr_item item_str(const char *name, const char *s) {
  return (wf_attr_item){
      .name = name, .value = {.type = WF_ATTR_STRING, .count = 1, .u.s = s}};
}

static int norm_axis(ox_node *n, int64_t axis, int rank, wf_status *st) {
  if (rank < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the input's rank must be known while importing"),
           -1;
  if (axis < -rank || axis >= rank)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "axis %lld is out of range for rank %d", (long long)axis,
                   rank),
           -1;
  return (int)(axis < 0 ? axis + rank : axis);
}

static wf_output transpose(ox_node *n, wf_output x, const int64_t *perm,
                           int r, wf_status *st) {
  return ox_add2(n, "Transpose", x, ox_const_i64(n, perm, r, st), st);
}

static wf_output reshape(ox_node *n, wf_output x, const int64_t *dims, int r,
                         wf_status *st) {
  return ox_add2(n, "Reshape", x, ox_const_i64(n, dims, r, st), st);
}

static wf_output shape_i64(ox_node *n, wf_output x, wf_status *st) {
  wf_attr_item a = WFX_ITEM_DTYPE("out_type", WF_INT64);
  return ox_add(n, "Shape", &x, 1, &a, 1, st);
}

static wf_output cast(ox_node *n, wf_output x, int32_t dt, wf_status *st) {
  if (!x.node || ox_dtype_of(x) == dt)
    return x;
  wf_attr_item a = WFX_ITEM_DTYPE("DstT", dt);
  return ox_add(n, "Cast", &x, 1, &a, 1, st);
}

/* A scalar constant of x's dtype. */
static wf_output scalar_like(ox_node *n, wf_output x, double v,
                             wf_status *st) {
  return ox_scalar(n, ox_dtype_of(x), v, st);
}

static wf_output reduce(ox_node *n, const char *op, wf_output x,
                        const int64_t *axes, int naxes, int keep,
                        wf_status *st) {
  wf_attr_item a[2] = {item_ints("axes", axes, naxes),
                       WFX_ITEM_BOOL("keep_dims", keep)};
  return ox_add(n, op, &x, 1, a, 2, st);
}

static wf_output logical_not(ox_node *n, wf_output x, wf_status *st) {
  return ox_add2(n, "Equal", x, ox_scalar(n, WF_BOOL, 0, st), st);
}

static wf_output empty(ox_node *n, int32_t dtype, wf_status *st);

/* ---- elementwise ------------------------------------------------------- */

#define MAP_OP(fname, wop)                                                     \
  static int fname(ox_node *n, wf_status *st) {                                \
    return out1(n, ox_add1(n, wop, X(n, 0, st), st), st);                      \
  }
MAP_OP(m_relu, "Relu")
MAP_OP(m_sigmoid, "Sigmoid")
MAP_OP(m_tanh, "Tanh")
MAP_OP(m_exp, "Exp")
MAP_OP(m_log, "Log")
MAP_OP(m_sqrt, "Sqrt")
MAP_OP(m_abs, "Abs")
MAP_OP(m_neg, "Neg")
MAP_OP(m_softplus, "Softplus")
MAP_OP(m_identity, "Identity")

#define MAP_BIN(fname, wop)                                                    \
  static int fname(ox_node *n, wf_status *st) {                                \
    return out1(n, ox_add2(n, wop, X(n, 0, st), X(n, 1, st), st), st);         \
  }
MAP_BIN(m_add, "Add")
MAP_BIN(m_sub, "Sub")
MAP_BIN(m_mul, "Mul")
MAP_BIN(m_div, "Div")
MAP_BIN(m_equal, "Equal")
MAP_BIN(m_less, "Less")
MAP_BIN(m_greater, "Greater")

/* The plugin's own elementwise functions (OnnxMath, onnx_kernels.c). */
static wf_output math_fn(ox_node *n, const char *fn, wf_output x,
                         wf_status *st) {
  wf_attr_item a = item_str("fn", fn);
  return ox_add(n, "OnnxMath", &x, 1, &a, 1, st);
}

#define MAP_FN(fname, fn)                                                      \
  static int fname(ox_node *n, wf_status *st) {                                \
    return out1(n, math_fn(n, fn, X(n, 0, st), st), st);                       \
  }
MAP_FN(m_erf, "erf")
MAP_FN(m_floor, "floor")
MAP_FN(m_ceil, "ceil")
MAP_FN(m_round, "round")
MAP_FN(m_sign, "sign")
MAP_FN(m_sin, "sin")
MAP_FN(m_cos, "cos")
MAP_FN(m_tan, "tan")
MAP_FN(m_asin, "asin")
MAP_FN(m_acos, "acos")
MAP_FN(m_atan, "atan")
MAP_FN(m_sinh, "sinh")
MAP_FN(m_cosh, "cosh")
MAP_FN(m_asinh, "asinh")
MAP_FN(m_acosh, "acosh")
MAP_FN(m_atanh, "atanh")

static int m_reciprocal(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  return out1(n, ox_add2(n, "Div", scalar_like(n, x, 1, st), x, st), st);
}

static int m_pow(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), y = X(n, 1, st);
  return out1(n, ox_add2(n, "Pow", x, cast(n, y, ox_dtype_of(x), st), st), st);
}

static int m_not(ox_node *n, wf_status *st) {
  return out1(n, logical_not(n, X(n, 0, st), st), st);
}

static int m_and(ox_node *n, wf_status *st) {
  wf_output a = X(n, 0, st), b = X(n, 1, st);
  wf_output in[3] = {a, b, ox_scalar(n, WF_BOOL, 0, st)};
  return out1(n, ox_add(n, "Select", in, 3, NULL, 0, st), st);
}

static int m_or(ox_node *n, wf_status *st) {
  wf_output a = X(n, 0, st), b = X(n, 1, st);
  wf_output in[3] = {a, ox_scalar(n, WF_BOOL, 1, st), b};
  return out1(n, ox_add(n, "Select", in, 3, NULL, 0, st), st);
}

static int m_xor(ox_node *n, wf_status *st) {
  wf_output e = ox_add2(n, "Equal", X(n, 0, st), X(n, 1, st), st);
  return out1(n, logical_not(n, e, st), st);
}

static int m_less_equal(ox_node *n, wf_status *st) {
  wf_output g = ox_add2(n, "Greater", X(n, 0, st), X(n, 1, st), st);
  return out1(n, logical_not(n, g, st), st);
}

static int m_greater_equal(ox_node *n, wf_status *st) {
  wf_output l = ox_add2(n, "Less", X(n, 0, st), X(n, 1, st), st);
  return out1(n, logical_not(n, l, st), st);
}

static int m_where(ox_node *n, wf_status *st) {
  wf_output in[3] = {X(n, 0, st), X(n, 1, st), X(n, 2, st)};
  return out1(n, ox_add(n, "Select", in, 3, NULL, 0, st), st);
}

/* Sum, Mean, Max, Min of any number of broadcasting inputs. */
/* float16/bfloat16 through float32 (weft's arithmetic lacks them): the
 * input widened, and the result narrowed back. */
static wf_output widen(ox_node *n, wf_output x, wf_status *st) {
  int32_t dt = ox_dtype_of(x);
  if (dt != WF_FLOAT16 && dt != WF_BFLOAT16)
    return x;
  wf_attr_item a = WFX_ITEM_DTYPE("DstT", WF_FLOAT32);
  return ox_add(n, "OnnxCast", &x, 1, &a, 1, st);
}

static wf_output narrow(ox_node *n, wf_output y, int32_t dt, wf_status *st) {
  if (dt != WF_FLOAT16 && dt != WF_BFLOAT16)
    return y;
  wf_attr_item a = WFX_ITEM_DTYPE("DstT", dt);
  return ox_add(n, "OnnxCast", &y, 1, &a, 1, st);
}

static int variadic(ox_node *n, const char *op, int mean, wf_status *st) {
  int32_t dt0 = has_in(n, 0) ? n->in[0]->dtype : WF_FLOAT32;
  if (dt0 == WF_FLOAT16 || dt0 == WF_BFLOAT16) {
    wf_output acc = widen(n, X(n, 0, st), st);
    int count = 1;
    for (int i = 1; i < n->nin; i++)
      if (has_in(n, i)) {
        acc = ox_add2(n, op, acc, widen(n, X(n, i, st), st), st);
        count++;
      }
    if (mean)
      acc = ox_add2(n, "Div", acc, scalar_like(n, acc, count, st), st);
    return out1(n, narrow(n, acc, dt0, st), st);
  }
  wf_output acc = X(n, 0, st);
  int count = 1;
  for (int i = 1; i < n->nin; i++)
    if (has_in(n, i)) {
      acc = ox_add2(n, op, acc, X(n, i, st), st);
      count++;
    }
  if (n->nin == 1 || count == 1)
    acc = ox_add1(n, "Identity", acc, st);
  if (mean)
    acc = ox_add2(n, "Div", acc, scalar_like(n, acc, count, st), st);
  return out1(n, acc, st);
}
static int m_sum(ox_node *n, wf_status *st) {
  return variadic(n, "Add", 0, st);
}
static int m_mean(ox_node *n, wf_status *st) {
  return variadic(n, "Add", 1, st);
}
static int m_max(ox_node *n, wf_status *st) {
  return variadic(n, "Maximum", 0, st);
}
static int m_min(ox_node *n, wf_status *st) {
  return variadic(n, "Minimum", 0, st);
}

static int m_leaky_relu(ox_node *n, wf_status *st) {
  wf_attr_item a = WFX_ITEM_FLOAT("alpha", ox_attr_f(n, "alpha", 0.01));
  wf_output x = X(n, 0, st);
  return out1(n, ox_add(n, "LeakyRelu", &x, 1, &a, 1, st), st);
}

/* x for x >= 0 (or > 0), else neg. */
static wf_output where_neg(ox_node *n, wf_output x, wf_output neg,
                           wf_status *st) {
  wf_output c = ox_add2(n, "Less", x, scalar_like(n, x, 0, st), st);
  wf_output in[3] = {c, neg, x};
  return ox_add(n, "Select", in, 3, NULL, 0, st);
}

static int m_elu(ox_node *n, wf_status *st) {
  double alpha = ox_attr_f(n, "alpha", 1.0);
  wf_output x = X(n, 0, st), y = ox_add1(n, "Elu", x, st);
  if (alpha != 1.0)
    y = where_neg(n, x, ox_add2(n, "Mul", y, scalar_like(n, x, alpha, st), st),
                  st);
  return out1(n, y, st);
}

static int m_selu(ox_node *n, wf_status *st) {
  double alpha = ox_attr_f(n, "alpha", 1.67326319217681884765625);
  double gamma = ox_attr_f(n, "gamma", 1.05070102214813232421875);
  wf_output x = X(n, 0, st), e = ox_add1(n, "Elu", x, st);
  wf_output y =
      where_neg(n, x, ox_add2(n, "Mul", e, scalar_like(n, x, alpha, st), st),
                st);
  return out1(n, ox_add2(n, "Mul", y, scalar_like(n, x, gamma, st), st), st);
}

static int m_celu(ox_node *n, wf_status *st) {
  double alpha = ox_attr_f(n, "alpha", 1.0);
  wf_output x = X(n, 0, st);
  /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) = alpha elu(x/alpha) */
  wf_output e = ox_add1(
      n, "Elu", ox_add2(n, "Div", x, scalar_like(n, x, alpha, st), st), st);
  wf_output y = ox_add2(n, "Mul", e, scalar_like(n, x, alpha, st), st);
  return out1(n, where_neg(n, x, y, st), st);
}

static int m_prelu(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), s = X(n, 1, st);
  wf_shape xs, ss;
  ox_shape_of(x, &xs);
  ox_shape_of(s, &ss);
  /* a slope per channel (C,) against (N, C, ...), as opsets before 7
   * broadcast it (and exporters still write) */
  if (ss.rank == 1 && xs.rank > 2 && ss.dims[0] == xs.dims[1] &&
      ss.dims[0] != xs.dims[xs.rank - 1] && ss.dims[0] > 1) {
    int64_t d[WF_MAX_RANK];
    d[0] = -1;
    for (int i = 1; i < xs.rank - 1; i++)
      d[i] = 1;
    s = reshape(n, s, d, xs.rank - 1, st);
  }
  return out1(n, where_neg(n, x, ox_add2(n, "Mul", x, s, st), st), st);
}

static int m_thresholded_relu(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_output c = ox_add2(
      n, "Greater", x, scalar_like(n, x, ox_attr_f(n, "alpha", 1.0), st), st);
  wf_output in[3] = {c, x, scalar_like(n, x, 0, st)};
  return out1(n, ox_add(n, "Select", in, 3, NULL, 0, st), st);
}

static wf_output clamp(ox_node *n, wf_output x, wf_output lo, wf_output hi,
                       wf_status *st) {
  if (lo.node)
    x = ox_add2(n, "Maximum", x, lo, st);
  if (hi.node)
    x = ox_add2(n, "Minimum", x, hi, st);
  return x;
}

static wf_output hard_sigmoid(ox_node *n, wf_output x, double alpha,
                              double beta, wf_status *st) {
  wf_output y = ox_add2(
      n, "Add", ox_add2(n, "Mul", x, scalar_like(n, x, alpha, st), st),
      scalar_like(n, x, beta, st), st);
  return clamp(n, y, scalar_like(n, x, 0, st), scalar_like(n, x, 1, st), st);
}

static int m_hard_sigmoid(ox_node *n, wf_status *st) {
  return out1(n,
              hard_sigmoid(n, X(n, 0, st), ox_attr_f(n, "alpha", 0.2),
                           ox_attr_f(n, "beta", 0.5), st),
              st);
}

static int m_hard_swish(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  return out1(n,
              ox_add2(n, "Mul", x, hard_sigmoid(n, x, 1.0 / 6, 0.5, st), st),
              st);
}

static int m_softsign(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_output d = ox_add2(n, "Add", ox_add1(n, "Abs", x, st),
                        scalar_like(n, x, 1, st), st);
  return out1(n, ox_add2(n, "Div", x, d, st), st);
}

static int m_mish(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_output t = ox_add1(n, "Tanh", ox_add1(n, "Softplus", x, st), st);
  return out1(n, ox_add2(n, "Mul", x, t, st), st);
}

static int m_clip(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), lo = NONE, hi = NONE;
  if (ox_attr(n, "min") || ox_attr(n, "max")) { /* opset < 11 */
    lo = scalar_like(n, x, ox_attr_f(n, "min", -INFINITY), st);
    hi = scalar_like(n, x, ox_attr_f(n, "max", INFINITY), st);
  } else {
    if (has_in(n, 1))
      lo = X(n, 1, st);
    if (has_in(n, 2))
      hi = X(n, 2, st);
  }
  wf_output y = clamp(n, x, lo, hi, st);
  if (!lo.node && !hi.node)
    y = ox_add1(n, "Identity", x, st);
  return out1(n, y, st);
}

static int half(int32_t dt) { return dt == WF_FLOAT16 || dt == WF_BFLOAT16; }

/* x cast to dt: numbers by Cast (OnnxCast for the half types), strings
 * by ops-string's AsString (numbers written as NumPy's str() writes them,
 * which is how ONNX's reference casts) and StringToNumber. */
static wf_output cast_to(ox_node *n, wf_output x, int32_t dt, wf_status *st) {
  int32_t from = ox_dtype_of(x);
  if (dt == WF_STRING && from == WF_STRING)
    return ox_add1(n, "Identity", x, st);
  if (dt == WF_STRING) {
    wf_attr_item a = WFX_ITEM_BOOL("shortest", 1);
    return ox_add(n, "AsString", &x, 1, &a, 1, st);
  }
  if (from == WF_STRING) {
    wf_attr_item a = WFX_ITEM_DTYPE("out_type", dt);
    return ox_add(n, "StringToNumber", &x, 1, &a, 1, st);
  }
  wf_attr_item a = WFX_ITEM_DTYPE("DstT", dt);
  return ox_add(n, half(dt) || half(from) ? "OnnxCast" : "Cast", &x, 1, &a,
                1, st);
}

static int m_cast(ox_node *n, wf_status *st) {
  int64_t to = ox_attr_i(n, "to", 0);
  int32_t dt = ox_dtype((int32_t)to);
  if (dt == WF_DTYPE_INVALID)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "cast to %s: weft lacks that element type",
                   ox_onnx_type_name((int32_t)to));
  return out1(n, cast_to(n, X(n, 0, st), dt, st), st);
}

static int m_cast_like(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), like = X(n, 1, st);
  return out1(n, cast_to(n, x, ox_dtype_of(like), st), st);
}

/* ---- constants and shapes ---------------------------------------------- */

static int m_constant(ox_node *n, wf_status *st) {
  const Onnx__AttributeProto *a;
  wf_tensor *t = NULL;
  wf_shape s = {.rank = 0};
  if ((a = ox_attr(n, "value")) && a->t) {
    t = ox_tensor(a->t, n->im->dir, st);
  } else if ((a = ox_attr(n, "value_float"))) {
    if ((t = wfx_host->tensor_new(WF_FLOAT32, &s, st)))
      *(float *)wfx_host->tensor_data(t) = a->f;
  } else if ((a = ox_attr(n, "value_int"))) {
    if ((t = wfx_host->tensor_new(WF_INT64, &s, st)))
      *(int64_t *)wfx_host->tensor_data(t) = a->i;
  } else if ((a = ox_attr(n, "value_floats"))) {
    s = (wf_shape){.rank = 1, .dims = {(int64_t)a->n_floats}};
    if ((t = wfx_host->tensor_new(WF_FLOAT32, &s, st)) && a->n_floats)
      memcpy(wfx_host->tensor_data(t), a->floats, a->n_floats * 4);
  } else if ((a = ox_attr(n, "value_ints"))) {
    s = (wf_shape){.rank = 1, .dims = {(int64_t)a->n_ints}};
    if ((t = wfx_host->tensor_new(WF_INT64, &s, st)) && a->n_ints)
      memcpy(wfx_host->tensor_data(t), a->ints, a->n_ints * 8);
  } else if ((a = ox_attr(n, "value_string")) ||
             (a = ox_attr(n, "value_strings"))) {
    int list = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    s = (wf_shape){.rank = list, .dims = {(int64_t)a->n_strings}};
    t = ox_strings(list ? a->strings : &a->s, list ? a->n_strings : 1, &s,
                   st);
  } else {
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "a Constant without a value, value_float(s), "
                   "value_int(s) or value_string(s) attribute (sparse "
                   "values are not supported)");
  }
  return ox_set_const_out(n, 0, t, st);
}

static wf_tensor *ints_tensor(const int64_t *v, int count, wf_status *st) {
  wf_shape s = {.rank = 1, .dims = {count}};
  wf_tensor *t = wfx_host->tensor_new(WF_INT64, &s, st);
  if (t && count)
    memcpy(wfx_host->tensor_data(t), v, (size_t)count * 8);
  return t;
}

static int m_shape(ox_node *n, wf_status *st) {
  if (need_in(n, 0, st))
    return wfx_code(st);
  wf_shape s = n->in[0]->shape;
  if (n->in[0]->out.node)
    ox_shape_of(n->in[0]->out, &s);
  int64_t start = ox_attr_i(n, "start", 0), end = ox_attr_i(n, "end", INT_MAX);
  if (s.rank >= 0) {
    if (start < 0)
      start += s.rank;
    if (end < 0)
      end += s.rank;
    start = start < 0 ? 0 : start > s.rank ? s.rank : start;
    end = end < 0 ? 0 : end > s.rank ? s.rank : end;
    if (end < start)
      end = start;
    if (wfx_shape_is_known(&s)) /* folded: the shape is known now */
      return ox_set_const_out(
          n, 0, ints_tensor(s.dims + start, (int)(end - start), st), st);
  }
  wf_output sh = shape_i64(n, X(n, 0, st), st);
  if (ox_attr(n, "start") || ox_attr(n, "end")) {
    if (s.rank < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "start/end need the input's rank while importing");
    int64_t b = start, sz = end - start;
    sh = ox_add(n, "Slice",
                (wf_output[]){sh, ox_const_i64(n, &b, 1, st),
                              ox_const_i64(n, &sz, 1, st)},
                3, NULL, 0, st);
  }
  return out1(n, sh, st);
}

static int m_size(ox_node *n, wf_status *st) {
  if (need_in(n, 0, st))
    return wfx_code(st);
  wf_shape s = n->in[0]->shape;
  if (n->in[0]->out.node)
    ox_shape_of(n->in[0]->out, &s);
  if (wfx_shape_is_known(&s)) {
    wf_shape sc = {.rank = 0};
    wf_tensor *t = wfx_host->tensor_new(WF_INT64, &sc, st);
    if (t)
      *(int64_t *)wfx_host->tensor_data(t) = wfx_shape_count(&s);
    return ox_set_const_out(n, 0, t, st);
  }
  wf_output x = X(n, 0, st);
  wf_attr_item a = WFX_ITEM_DTYPE("out_type", WF_INT64);
  return out1(n, ox_add(n, "Size", &x, 1, &a, 1, st), st);
}

static int m_constant_of_shape(ox_node *n, wf_status *st) {
  const Onnx__AttributeProto *a = ox_attr(n, "value");
  wf_tensor *v;
  wf_shape sc = {.rank = 0};
  if (a && a->t) {
    v = ox_tensor(a->t, n->im->dir, st);
    if (v && wfx_host->tensor_count(v) != 1) {
      wfx_host->tensor_release(v);
      return ox_fail(n, st, WF_INVALID_ARGUMENT,
                     "attribute 'value' must hold one element");
    }
    if (v) { /* as a scalar */
      wf_tensor *s = wfx_host->tensor_reshape(v, &sc, st);
      wfx_host->tensor_release(v);
      v = s;
    }
  } else if ((v = wfx_host->tensor_new(WF_FLOAT32, &sc, st)))
    *(float *)wfx_host->tensor_data(v) = 0;
  wf_output val = ox_const(n, v, st);
  wf_output dims = X(n, 0, st);
  return out1(n, ox_add2(n, "Fill", cast(n, dims, WF_INT64, st), val, st), st);
}

/* ---- linear algebra ---------------------------------------------------- */

static int m_matmul(ox_node *n, wf_status *st) {
  wf_output a = X(n, 0, st), b = X(n, 1, st);
  int ra = rank_of(a), rb = rank_of(b);
  if (!OK(st))
    return wfx_code(st);
  if (ra < 0 || rb < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the ranks of both inputs must be known while importing");
  if (ra == 2 && rb == 2)
    return out1(n, ox_add2(n, "MatMul", a, b, st), st);
  wf_shape as, bs;
  ox_shape_of(a, &as);
  ox_shape_of(b, &bs);
  if (ra > 2 && rb == 2 && bs.dims[0] >= 0 && bs.dims[1] >= 0) {
    /* (..., K) x (K, N), a linear layer: one 2-d product of the rows,
     * shaped back to (..., N) */
    int64_t d2[2] = {-1, bs.dims[0]}, zero = 0, lead = ra - 1;
    wf_output y = ox_add2(n, "MatMul", reshape(n, a, d2, 2, st), b, st);
    wf_output sh = ox_add(n, "Slice",
                          (wf_output[]){shape_i64(n, a, st),
                                        ox_const_i64(n, &zero, 1, st),
                                        ox_const_i64(n, &lead, 1, st)},
                          3, NULL, 0, st);
    wf_attr_item ca = WFX_ITEM_INT("axis", 0);
    wf_output full = ox_add(
        n, "Concat",
        (wf_output[]){sh, ox_const_i64(n, &bs.dims[1], 1, st)}, 2, &ca, 1,
        st);
    return out1(n, ox_add2(n, "Reshape", y, full, st), st);
  }
  /* rank-1 operands: a row (a) or a column (b), dropped afterwards */
  wf_attr_item e0 = WFX_ITEM_INT("axis", 0), e1 = WFX_ITEM_INT("axis", -1);
  if (ra == 1)
    a = ox_add(n, "ExpandDims", &a, 1, &e0, 1, st);
  if (rb == 1)
    b = ox_add(n, "ExpandDims", &b, 1, &e1, 1, st);
  wf_output y = ox_add2(n, "BatchMatMul", a, b, st);
  int64_t sq[2];
  int nsq = 0;
  int ry = (ra > rb ? ra : rb) + (ra == 1 && rb == 1 ? 1 : 0);
  if (ra == 1 && rb == 1)
    ry = 2;
  if (ra == 1)
    sq[nsq++] = ry - 2;
  if (rb == 1)
    sq[nsq++] = ry - 1;
  if (nsq) {
    wf_attr_item a1 = item_ints("squeeze_dims", sq, nsq);
    y = ox_add(n, "Squeeze", &y, 1, &a1, 1, st);
  }
  return out1(n, y, st);
}

static int m_gemm(ox_node *n, wf_status *st) {
  double alpha = ox_attr_f(n, "alpha", 1), beta = ox_attr_f(n, "beta", 1);
  wf_output a = X(n, 0, st), b = X(n, 1, st);
  wf_attr_item at[2] = {WFX_ITEM_BOOL("transpose_a", ox_attr_i(n, "transA", 0)),
                        WFX_ITEM_BOOL("transpose_b", ox_attr_i(n, "transB", 0))};
  wf_output in[2] = {a, b};
  wf_output y = ox_add(n, "MatMul", in, 2, at, 2, st);
  if (alpha != 1)
    y = ox_add2(n, "Mul", y, scalar_like(n, y, alpha, st), st);
  if (has_in(n, 2) && beta != 0) {
    wf_output c = X(n, 2, st);
    if (beta != 1)
      c = ox_add2(n, "Mul", c, scalar_like(n, c, beta, st), st);
    y = ox_add2(n, "Add", y, c, st);
  }
  return out1(n, y, st);
}

/* ---- shape ops --------------------------------------------------------- */

static int m_reshape(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int64_t dims[WF_MAX_RANK];
  int allowzero = (int)ox_attr_i(n, "allowzero", 0);
  int r;
  wf_shape xs;
  ox_shape_of(x, &xs);
  if (n->im->opset < 5) {
    const int64_t *v;
    r = ox_attr_ints(n, "shape", &v);
    if (r < 0 || r > WF_MAX_RANK)
      return ox_fail(n, st, WF_INVALID_ARGUMENT,
                     "attribute 'shape' is missing or too long");
    memcpy(dims, v, (size_t)r * 8);
  } else
    r = ox_const_ints(n, 1, dims, WF_MAX_RANK, st);
  if (r > WF_MAX_RANK)
    return ox_fail(n, st, WF_UNIMPLEMENTED, "a shape of rank %d", r);
  if (r >= 0) {
    int dynamic_zero = 0;
    for (int i = 0; i < r; i++)
      if (dims[i] == 0 && !allowzero) {
        if (i < xs.rank && xs.dims[i] >= 0)
          dims[i] = xs.dims[i];
        else
          dynamic_zero = 1;
      }
    if (!dynamic_zero)
      return out1(n, reshape(n, x, dims, r, st), st);
  }
  /* The shape at run time: zeros copy the input's dimension there. */
  wf_output s = cast(n, X(n, 1, st), WF_INT64, st);
  if (!allowzero) {
    if (xs.rank < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "a shape computed at run time needs the input's rank "
                     "while importing");
    /* the input's dims padded to weft's largest rank, cut to the shape's
     * length: zeros there copy them (a zero past the input's rank stays 0,
     * which Reshape then refuses unless the input is empty) */
    int64_t b = 0;
    wf_output xsh = shape_i64(n, x, st);
    if (xs.rank < WF_MAX_RANK) {
      int64_t pads[2] = {0, WF_MAX_RANK - xs.rank};
      wf_attr_item pv = WFX_ITEM_FLOAT("constant_values", 0);
      wf_output in[2] = {xsh, reshape(n, ox_const_i64(n, pads, 2, st),
                                      (int64_t[]){1, 2}, 2, st)};
      xsh = ox_add(n, "Pad", in, 2, &pv, 1, st);
    }
    xsh = ox_add(n, "Slice",
                 (wf_output[]){xsh, ox_const_i64(n, &b, 1, st),
                               shape_i64(n, s, st)},
                 3, NULL, 0, st);
    wf_output z = ox_add2(n, "Equal", s, ox_scalar_i64(n, 0, st), st);
    s = ox_add(n, "Select", (wf_output[]){z, xsh, s}, 3, NULL, 0, st);
  }
  return out1(n, ox_add2(n, "Reshape", x, s, st), st);
}

static int m_flatten(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape s;
  ox_shape_of(x, &s);
  if (!OK(st))
    return wfx_code(st);
  if (s.rank < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the input's rank must be known while importing");
  int64_t axis = ox_attr_i(n, "axis", 1);
  if (axis < 0)
    axis += s.rank;
  if (axis < 0 || axis > s.rank)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "axis %lld for rank %d",
                   (long long)ox_attr_i(n, "axis", 1), s.rank);
  int64_t a = 1, b = 1;
  int ka = 1, kb = 1;
  for (int i = 0; i < s.rank; i++) {
    int64_t *p = i < axis ? &a : &b;
    int *k = i < axis ? &ka : &kb;
    if (s.dims[i] < 0)
      *k = 0;
    else
      *p *= s.dims[i];
  }
  if (ka || kb) {
    int64_t d[2] = {ka ? a : -1, kb ? b : -1};
    return out1(n, reshape(n, x, d, 2, st), st);
  }
  /* both halves unknown: their products at run time */
  wf_output sh = shape_i64(n, x, st);
  int64_t b0 = 0, s0 = axis, b1 = axis, s1 = -1;
  wf_output p0 = reduce(
      n, "Prod",
      ox_add(n, "Slice",
             (wf_output[]){sh, ox_const_i64(n, &b0, 1, st),
                           ox_const_i64(n, &s0, 1, st)},
             3, NULL, 0, st),
      NULL, 0, 1, st);
  wf_output p1 = reduce(
      n, "Prod",
      ox_add(n, "Slice",
             (wf_output[]){sh, ox_const_i64(n, &b1, 1, st),
                           ox_const_i64(n, &s1, 1, st)},
             3, NULL, 0, st),
      NULL, 0, 1, st);
  wf_attr_item ca = WFX_ITEM_INT("axis", 0);
  wf_output d = ox_add(n, "Concat", (wf_output[]){p0, p1}, 2, &ca, 1, st);
  return out1(n, ox_add2(n, "Reshape", x, d, st), st);
}

static int m_transpose(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int r = rank_of(x);
  const int64_t *pv;
  int64_t perm[WF_MAX_RANK];
  int np = ox_attr_ints(n, "perm", &pv);
  if (!OK(st))
    return wfx_code(st);
  if (np < 0) {
    if (r < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "without 'perm' the input's rank must be known");
    for (int i = 0; i < r; i++)
      perm[i] = r - 1 - i;
    np = r;
  } else {
    if (np > WF_MAX_RANK)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "perm is too long");
    if (np > 0) /* an empty list has no array behind it */
      memcpy(perm, pv, (size_t)np * 8);
  }
  return out1(n, transpose(n, x, perm, np, st), st);
}

/* Axes from attribute `name` (older opsets) or input i (newer). Count, or
 * -1 when there are none. */
static int axes_of(ox_node *n, const char *name, int input, int64_t *axes,
                   wf_status *st) {
  const int64_t *v;
  int k = ox_attr_ints(n, name, &v);
  if (k >= 0) {
    if (k > WF_MAX_RANK)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "too many axes"), -2;
    memcpy(axes, v, (size_t)k * 8);
    return k;
  }
  if (input >= 0 && has_in(n, input)) {
    k = ox_const_ints(n, input, axes, WF_MAX_RANK, st);
    if (k < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "input %d (axes) must be a constant (an initializer or "
                     "a Constant node)",
                     input),
             -2;
    if (k > WF_MAX_RANK)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "too many axes"), -2;
    return k;
  }
  return -1;
}

/* Squeeze/Unsqueeze whose axes input is known at run time only. */
static int runtime_axes_reshape(ox_node *n, const char *mode, wf_status *st) {
  wf_attr_item a = item_str("mode", mode);
  wf_output in[2] = {X(n, 0, st), cast(n, X(n, 1, st), WF_INT64, st)};
  return out1(n, ox_add(n, "OnnxAxesReshape", in, 2, &a, 1, st), st);
}

static int runtime_axes(const ox_node *n, int i) {
  return !ox_attr(n, "axes") && has_in(n, i) && !n->in[i]->konst;
}

static int m_squeeze(ox_node *n, wf_status *st) {
  int64_t axes[WF_MAX_RANK];
  if (runtime_axes(n, 1))
    return runtime_axes_reshape(n, "squeeze", st);
  wf_output x = X(n, 0, st);
  int k = axes_of(n, "axes", 1, axes, st);
  if (k < -1)
    return wfx_code(st);
  if (k < 0) { /* every size-1 dimension */
    wf_shape s;
    ox_shape_of(x, &s);
    if (!wfx_shape_is_known(&s))
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "without axes the input's shape must be known");
    k = 0;
    for (int i = 0; i < s.rank; i++)
      if (s.dims[i] == 1)
        axes[k++] = i;
  }
  if (k == 0)
    return out1(n, ox_add1(n, "Identity", x, st), st);
  wf_attr_item a = item_ints("squeeze_dims", axes, k);
  return out1(n, ox_add(n, "Squeeze", &x, 1, &a, 1, st), st);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int m_unsqueeze(ox_node *n, wf_status *st) {
  int64_t axes[WF_MAX_RANK];
  if (runtime_axes(n, 1))
    return runtime_axes_reshape(n, "unsqueeze", st);
  wf_output x = X(n, 0, st);
  int k = axes_of(n, "axes", 1, axes, st), r = rank_of(x);
  if (k < -1)
    return wfx_code(st);
  if (k < 0)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "axes are required");
  if (r < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the input's rank must be known while importing");
  int ro = r + k;
  if (ro > WF_MAX_RANK)
    return ox_fail(n, st, WF_UNIMPLEMENTED, "rank %d is above weft's %d", ro,
                   WF_MAX_RANK);
  for (int i = 0; i < k; i++) {
    if (axes[i] < -ro || axes[i] >= ro)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "axis %lld for rank %d",
                     (long long)axes[i], ro);
    if (axes[i] < 0)
      axes[i] += ro;
  }
  qsort(axes, (size_t)k, sizeof axes[0], cmp_i64);
  for (int i = 0; i < k; i++) {
    wf_attr_item a = WFX_ITEM_INT("axis", axes[i]);
    x = ox_add(n, "ExpandDims", &x, 1, &a, 1, st);
  }
  if (k == 0)
    x = ox_add1(n, "Identity", x, st);
  return out1(n, x, st);
}

static int m_concat(ox_node *n, wf_status *st) {
  wf_output in[OX_MAX_IO];
  int k = 0;
  for (int i = 0; i < n->nin; i++)
    if (has_in(n, i))
      in[k++] = X(n, i, st);
  if (!OK(st))
    return wfx_code(st);
  if (k == 0)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "no inputs");
  wf_attr_item a = WFX_ITEM_INT("axis", ox_attr_i(n, "axis", 1));
  if (k == 1)
    return out1(n, ox_add1(n, "Identity", in[0], st), st);
  return out1(n, ox_add(n, "Concat", in, k, &a, 1, st), st);
}

/* x[begin:end] along axis (static bounds, end clamped by StridedSlice). */
static wf_output slice_axis(ox_node *n, wf_output x, int r, int axis,
                            int64_t begin, int64_t end, wf_status *st) {
  int64_t b[WF_MAX_RANK] = {0}, e[WF_MAX_RANK] = {0}, s[WF_MAX_RANK];
  int64_t mask = ((int64_t)1 << r) - 1;
  for (int i = 0; i < r; i++)
    s[i] = 1;
  b[axis] = begin;
  e[axis] = end;
  mask &= ~((int64_t)1 << axis);
  wf_attr_item a[2] = {WFX_ITEM_INT("begin_mask", mask),
                       WFX_ITEM_INT("end_mask", mask)};
  wf_output in[4] = {x, ox_const_i64(n, b, r, st), ox_const_i64(n, e, r, st),
                     ox_const_i64(n, s, r, st)};
  return ox_add(n, "StridedSlice", in, 4, a, 2, st);
}

static int m_split(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape s;
  ox_shape_of(x, &s);
  int axis = norm_axis(n, ox_attr_i(n, "axis", 0), s.rank, st);
  int64_t parts[OX_MAX_IO];
  const int64_t *pv;
  int np = ox_attr_ints(n, "split", &pv);
  if (axis < 0 || !OK(st))
    return wfx_code(st);
  if (np >= 0) {
    if (np > OX_MAX_IO)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "split is too long");
    memcpy(parts, pv, (size_t)np * 8);
  } else if (has_in(n, 1)) {
    np = ox_const_ints(n, 1, parts, OX_MAX_IO, st);
    if (np < 0) { /* sizes known at run time: piece i from their sums */
      wf_output sp = cast(n, X(n, 1, st), WF_INT64, st);
      int64_t ax = axis, one = 1, zero = 0;
      for (int k = 0; k < n->nout; k++) {
        int64_t kk = k, k1 = k + 1;
        wf_output b = reduce(
            n, "Sum",
            ox_add(n, "Slice",
                   (wf_output[]){sp, ox_const_i64(n, &zero, 1, st),
                                 ox_const_i64(n, &kk, 1, st)},
                   3, NULL, 0, st),
            NULL, 0, 1, st);
        wf_output en = reduce(
            n, "Sum",
            ox_add(n, "Slice",
                   (wf_output[]){sp, ox_const_i64(n, &zero, 1, st),
                                 ox_const_i64(n, &k1, 1, st)},
                   3, NULL, 0, st),
            NULL, 0, 1, st);
        wf_output in[5] = {x, b, en, ox_const_i64(n, &ax, 1, st),
                           ox_const_i64(n, &one, 1, st)};
        if (ox_set_out(n, k, ox_add(n, "OnnxSlice", in, 5, NULL, 0, st), st))
          return wfx_code(st);
      }
      return 0;
    }
  }
  if (np < 0) { /* equal parts */
    if (s.dims[axis] >= 0 && s.dims[axis] % n->nout != 0) {
      /* opset 18 allows a smaller last part */
      int64_t each = (s.dims[axis] + n->nout - 1) / n->nout, at = 0;
      for (int i = 0; i < n->nout; i++, at += each)
        if (ox_set_out(n, i, slice_axis(n, x, s.rank, axis, at, at + each, st),
                       st))
          return wfx_code(st);
      return 0;
    }
    wf_attr_item a[2] = {WFX_ITEM_INT("num_split", n->nout),
                         WFX_ITEM_INT("axis", axis)};
    wf_output y = n->nout == 1 ? ox_add1(n, "Identity", x, st)
                               : ox_add(n, "Split", &x, 1, a, 2, st);
    for (int i = 0; i < n->nout; i++)
      if (ox_set_out(n, i, ox_out(y, n->nout == 1 ? 0 : i), st))
        return wfx_code(st);
    return 0;
  }
  if (np != n->nout)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "split has %d parts for %d outputs", np, n->nout);
  int64_t at = 0;
  for (int i = 0; i < np; i++) {
    if (ox_set_out(n, i,
                   slice_axis(n, x, s.rank, axis, at, at + parts[i], st), st))
      return wfx_code(st);
    at += parts[i];
  }
  return 0;
}

/* Slice with parameters known at run time only (OnnxSlice). */
static int slice_runtime(ox_node *n, wf_output x, wf_status *st) {
  wf_output starts = cast(n, X(n, 1, st), WF_INT64, st);
  wf_output in[5] = {x, starts, cast(n, X(n, 2, st), WF_INT64, st)};
  wf_shape ss;
  ox_shape_of(starts, &ss);
  if (!OK(st))
    return wfx_code(st);
  int k = ss.rank == 1 ? (int)ss.dims[0] : -1;
  if ((!has_in(n, 3) || !has_in(n, 4)) && (k < 0 || k > WF_MAX_RANK))
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "without axes or steps the length of starts must be "
                   "known while importing");
  int64_t def[WF_MAX_RANK];
  if (k > WF_MAX_RANK)
    k = WF_MAX_RANK; /* only read when axes or steps are absent (k fits) */
  for (int i = 0; i < k; i++)
    def[i] = i;
  in[3] = has_in(n, 3) ? cast(n, X(n, 3, st), WF_INT64, st)
                       : ox_const_i64(n, def, k, st);
  for (int i = 0; i < k; i++)
    def[i] = 1;
  in[4] = has_in(n, 4) ? cast(n, X(n, 4, st), WF_INT64, st)
                       : ox_const_i64(n, def, k, st);
  return out1(n, ox_add(n, "OnnxSlice", in, 5, NULL, 0, st), st);
}

static int m_slice(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape s;
  ox_shape_of(x, &s);
  int r = s.rank;
  int64_t starts[WF_MAX_RANK], ends[WF_MAX_RANK], axes[WF_MAX_RANK],
      steps[WF_MAX_RANK];
  int ns, ne, na = -1, nst = -1;
  if (!OK(st))
    return wfx_code(st);
  if (r < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the input's rank must be known while importing");
  if (n->im->opset < 10) {
    const int64_t *v;
    ns = ox_attr_ints(n, "starts", &v);
    if (ns > 0 && ns <= WF_MAX_RANK)
      memcpy(starts, v, (size_t)ns * 8);
    ne = ox_attr_ints(n, "ends", &v);
    if (ne > 0 && ne <= WF_MAX_RANK)
      memcpy(ends, v, (size_t)ne * 8);
    na = ox_attr_ints(n, "axes", &v);
    if (na > 0 && na <= WF_MAX_RANK)
      memcpy(axes, v, (size_t)na * 8);
  } else {
    if ((has_in(n, 1) && !n->in[1]->konst) ||
        (has_in(n, 2) && !n->in[2]->konst) ||
        (has_in(n, 3) && !n->in[3]->konst) ||
        (has_in(n, 4) && !n->in[4]->konst))
      return slice_runtime(n, x, st);
    ns = ox_const_ints(n, 1, starts, WF_MAX_RANK, st);
    ne = ox_const_ints(n, 2, ends, WF_MAX_RANK, st);
    if (has_in(n, 3) &&
        (na = ox_const_ints(n, 3, axes, WF_MAX_RANK, st)) < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "input 3 (axes) must be a constant");
    if (has_in(n, 4) &&
        (nst = ox_const_ints(n, 4, steps, WF_MAX_RANK, st)) < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "input 4 (steps) must be a constant");
    if (ns < 0 || ne < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "inputs 1 and 2 (starts, ends) must be constants");
  }
  if (ns != ne || ns > r || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "starts, ends, axes and steps differ in length");
  int64_t b[WF_MAX_RANK] = {0}, e[WF_MAX_RANK] = {0}, sp[WF_MAX_RANK];
  int64_t bmask = ((int64_t)1 << r) - 1, emask = bmask;
  for (int i = 0; i < r; i++)
    sp[i] = 1;
  for (int i = 0; i < ns; i++) {
    int ax = na >= 0 ? norm_axis(n, axes[i], r, st) : i;
    if (ax < 0)
      return wfx_code(st);
    int64_t step = nst >= 0 ? steps[i] : 1;
    if (step == 0)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "a step of 0");
    sp[ax] = step;
    const int64_t big = (int64_t)1 << 40;
    if (starts[i] > -big && starts[i] < big) {
      b[ax] = starts[i];
      bmask &= ~((int64_t)1 << ax);
    } else if ((step > 0) != (starts[i] < 0)) {
      /* starting past the far end: an empty slice */
      b[ax] = step > 0 ? big : -big;
      bmask &= ~((int64_t)1 << ax);
    }
    if (ends[i] > -big && ends[i] < big) {
      e[ax] = ends[i];
      emask &= ~((int64_t)1 << ax);
    } else if ((step > 0) != (ends[i] > 0)) {
      e[ax] = step > 0 ? -big : big;
      emask &= ~((int64_t)1 << ax);
    }
  }
  /* StridedSlice clamps out-of-range bounds; clamp huge ones here so
   * that they cannot overflow: a bound beyond a dimension clamps anyway */
  for (int i = 0; i < r; i++) {
    int64_t d = s.dims[i] >= 0 ? s.dims[i] : ((int64_t)1 << 40);
    if (b[i] > d)
      b[i] = d;
    if (b[i] < -d - 1)
      b[i] = -d - 1;
    if (e[i] > d)
      e[i] = d;
    if (e[i] < -d - 1)
      e[i] = -d - 1;
    /* Python's -d-1 end means "before the first" for negative steps, but
     * StridedSlice wraps negatives once: use the mask instead */
    if (sp[i] < 0 && e[i] == -d - 1)
      emask |= (int64_t)1 << i;
    if (sp[i] > 0 && b[i] == -d - 1)
      b[i] = 0;
  }
  wf_attr_item a[2] = {WFX_ITEM_INT("begin_mask", bmask),
                       WFX_ITEM_INT("end_mask", emask)};
  wf_output in[4] = {x, ox_const_i64(n, b, r, st), ox_const_i64(n, e, r, st),
                     ox_const_i64(n, sp, r, st)};
  return out1(n, ox_add(n, "StridedSlice", in, 4, a, 2, st), st);
}

static int m_gather(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), idx = X(n, 1, st);
  int r = rank_of(x);
  int axis = norm_axis(n, ox_attr_i(n, "axis", 0), r, st);
  if (axis < 0 || !OK(st))
    return wfx_code(st);
  /* negative indices count from the end of the axis */
  int nonneg = 0;
  if (n->in[1]->konst) {
    const wf_tensor *t = n->in[1]->konst;
    int64_t c = wfx_host->tensor_count(t);
    int32_t dt = wfx_host->tensor_dtype(t);
    const void *d = wfx_host->tensor_data(t);
    nonneg = 1;
    for (int64_t k = 0; k < c; k++)
      if ((dt == WF_INT64 ? ((const int64_t *)d)[k]
                          : ((const int32_t *)d)[k]) < 0)
        nonneg = 0;
  }
  if (!nonneg) {
    int32_t it = ox_dtype_of(idx);
    wf_attr_item ot = WFX_ITEM_DTYPE("out_type", it);
    wf_output sh = ox_add(n, "Shape", &x, 1, &ot, 1, st);
    int64_t b = axis, one = 1;
    wf_output dim = ox_add(
        n, "Slice",
        (wf_output[]){sh, ox_const_i64(n, &b, 1, st),
                      ox_const_i64(n, &one, 1, st)},
        3, NULL, 0, st);
    wf_output c = ox_add2(n, "Less", idx, ox_scalar(n, it, 0, st), st);
    idx = ox_add(n, "Select",
                 (wf_output[]){c, ox_add2(n, "Add", idx, dim, st), idx}, 3,
                 NULL, 0, st);
  }
  wf_attr_item a = WFX_ITEM_INT("axis", axis);
  return out1(n, ox_add(n, "Gather", (wf_output[]){x, idx}, 2, &a, 1, st),
              st);
}

static int m_tile(ox_node *n, wf_status *st) {
  return out1(n,
              ox_add2(n, "Tile", X(n, 0, st),
                      cast(n, X(n, 1, st), WF_INT64, st), st),
              st);
}

static int m_expand(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), s = cast(n, X(n, 1, st), WF_INT64, st);
  wf_output c = ox_add2(n, "Fill", s, ox_scalar(n, WF_BOOL, 1, st), st);
  return out1(n, ox_add(n, "Select", (wf_output[]){c, x, x}, 3, NULL, 0, st),
              st);
}

static int m_pad(ox_node *n, wf_status *st) {
  char mode[32];
  ox_attr_s(n, "mode", "constant", mode, sizeof mode);
  wf_output x = X(n, 0, st);
  int r = rank_of(x);
  int64_t pads[2 * WF_MAX_RANK], axes[WF_MAX_RANK];
  int np;
  double value = 0;
  if (!OK(st))
    return wfx_code(st);
  if (r < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the input's rank must be known while importing");
  if (n->im->opset < 11) {
    const int64_t *v;
    np = ox_attr_ints(n, n->im->opset < 2 ? "paddings" : "pads", &v);
    if (np < 0 || np > 2 * WF_MAX_RANK)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "bad 'pads' attribute");
    memcpy(pads, v, (size_t)np * 8);
    value = ox_attr_f(n, "value", 0);
  } else {
    np = ox_const_ints(n, 1, pads, 2 * WF_MAX_RANK, st);
    if (np < 0 || (has_in(n, 2) && !n->in[2]->konst)) {
      /* pads or the value known at run time only */
      if (has_in(n, 3))
        return ox_fail(n, st, WF_UNIMPLEMENTED,
                       "axes with pads known at run time only");
      wf_attr_item a = item_str("mode", mode);
      wf_output in[3] = {x, cast(n, X(n, 1, st), WF_INT64, st),
                         has_in(n, 2) ? X(n, 2, st)
                                      : empty(n, ox_dtype_of(x), st)};
      return out1(n, ox_add(n, "OnnxPadRT", in, 3, &a, 1, st), st);
    }
    if (has_in(n, 2)) {
      const wf_tensor *t = n->in[2]->konst;
      if (!t)
        return ox_fail(n, st, WF_UNIMPLEMENTED,
                       "input 2 (constant_value) must be a constant");
      const void *d = wfx_host->tensor_data(t);
      switch (wfx_host->tensor_dtype(t)) {
      case WF_FLOAT32:
        value = *(const float *)d;
        break;
      case WF_FLOAT64:
        value = *(const double *)d;
        break;
      case WF_INT32:
        value = *(const int32_t *)d;
        break;
      case WF_INT64:
        value = (double)*(const int64_t *)d;
        break;
      case WF_INT8:
        value = *(const int8_t *)d;
        break;
      case WF_UINT8:
      case WF_BOOL:
        value = *(const uint8_t *)d;
        break;
      }
    }
  }
  int na = -1;
  if (has_in(n, 3) && (na = ox_const_ints(n, 3, axes, WF_MAX_RANK, st)) < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED, "input 3 (axes) must be a constant");
  int k = na >= 0 ? na : r;
  if (np != 2 * k)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "%d pads for %d axes (2 per axis)", np, k);
  int64_t pp[WF_MAX_RANK][2] = {{0}};
  int neg = 0;
  for (int i = 0; i < k; i++) {
    int ax = na >= 0 ? norm_axis(n, axes[i], r, st) : i;
    if (ax < 0)
      return wfx_code(st);
    pp[ax][0] = pads[i];
    pp[ax][1] = pads[i + k];
    neg |= pads[i] < 0 || pads[i + k] < 0;
  }
  if (strcmp(mode, "constant") != 0) {
    if (neg)
      return ox_fail(n, st, WF_UNIMPLEMENTED, "negative pads with mode %s",
                     mode);
    int64_t flat[2 * WF_MAX_RANK];
    for (int i = 0; i < r; i++) {
      flat[2 * i] = pp[i][0];
      flat[2 * i + 1] = pp[i][1];
    }
    wf_attr_item a[2] = {item_ints("pads", flat, 2 * r),
                         item_str("mode", mode)};
    return out1(n, ox_add(n, "OnnxPad", &x, 1, a, 2, st), st);
  }
  int64_t flat[2 * WF_MAX_RANK];
  for (int i = 0; i < r; i++) {
    flat[2 * i] = pp[i][0] > 0 ? pp[i][0] : 0;
    flat[2 * i + 1] = pp[i][1] > 0 ? pp[i][1] : 0;
  }
  wf_attr_item a = WFX_ITEM_FLOAT("constant_values", value);
  wf_output y = ox_add(n, "Pad",
                       (wf_output[]){x, reshape(n, ox_const_i64(n, flat, 2 * r,
                                                                st),
                                                (int64_t[]){r, 2}, 2, st)},
                       2, &a, 1, st);
  for (int i = 0; i < r && neg; i++) /* negative pads crop */
    if (pp[i][0] < 0 || pp[i][1] < 0)
      y = slice_axis(n, y, r, i, pp[i][0] < 0 ? -pp[i][0] : 0,
                     pp[i][1] < 0 ? pp[i][1] : ((int64_t)1 << 40), st);
  return out1(n, y, st);
}

/* ---- reductions -------------------------------------------------------- */

static int reduce_axes(ox_node *n, int64_t *axes, int *noop, wf_status *st) {
  /* axes became an input in opset 13 for ReduceSum, 18 for the others */
  int k = axes_of(n, "axes", 1, axes, st);
  *noop = 0;
  if (k == -1 || k == 0) {
    k = 0;
    *noop = ox_attr_i(n, "noop_with_empty_axes", 0) != 0;
  }
  return k;
}

static int reduce_op(ox_node *n, const char *op, const char *pre,
                     const char *post, wf_status *st) {
  int64_t axes[WF_MAX_RANK];
  int noop;
  if (runtime_axes(n, 1)) {
    if (strcmp(op, "Sum") != 0 || pre || post)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "input 1 (axes) must be a constant for this reduction");
    wf_attr_item a[2] = {
        WFX_ITEM_INT("keepdims", ox_attr_i(n, "keepdims", 1)),
        WFX_ITEM_INT("noop_with_empty_axes",
                     ox_attr_i(n, "noop_with_empty_axes", 0))};
    wf_output in[2] = {X(n, 0, st), cast(n, X(n, 1, st), WF_INT64, st)};
    return out1(n, ox_add(n, "OnnxReduceSum", in, 2, a, 2, st), st);
  }
  int k = reduce_axes(n, axes, &noop, st);
  wf_output x = X(n, 0, st);
  if (k < 0 || !OK(st))
    return wfx_code(st);
  int keep = (int)ox_attr_i(n, "keepdims", 1);
  if (pre && strcmp(pre, "abs") == 0)
    x = ox_add1(n, "Abs", x, st);
  else if (pre && strcmp(pre, "square") == 0)
    x = ox_add2(n, "Mul", x, x, st);
  else if (pre && strcmp(pre, "exp") == 0)
    x = ox_add1(n, "Exp", x, st);
  if (noop)
    return out1(n, ox_add1(n, "Identity", x, st), st);
  wf_output y = reduce(n, op, x, axes, k, keep, st);
  if (post && strcmp(post, "sqrt") == 0)
    y = ox_add1(n, "Sqrt", y, st);
  else if (post && strcmp(post, "log") == 0)
    y = ox_add1(n, "Log", y, st);
  return out1(n, y, st);
}
static int m_reduce_sum(ox_node *n, wf_status *st) {
  return reduce_op(n, "Sum", NULL, NULL, st);
}
static int m_reduce_mean(ox_node *n, wf_status *st) {
  return reduce_op(n, "Mean", NULL, NULL, st);
}
static int m_reduce_max(ox_node *n, wf_status *st) {
  return reduce_op(n, "Max", NULL, NULL, st);
}
static int m_reduce_min(ox_node *n, wf_status *st) {
  return reduce_op(n, "Min", NULL, NULL, st);
}
static int m_reduce_prod(ox_node *n, wf_status *st) {
  return reduce_op(n, "Prod", NULL, NULL, st);
}
static int m_reduce_l1(ox_node *n, wf_status *st) {
  return reduce_op(n, "Sum", "abs", NULL, st);
}
static int m_reduce_l2(ox_node *n, wf_status *st) {
  return reduce_op(n, "Sum", "square", "sqrt", st);
}
static int m_reduce_sum_square(ox_node *n, wf_status *st) {
  return reduce_op(n, "Sum", "square", NULL, st);
}
static int m_reduce_log_sum(ox_node *n, wf_status *st) {
  return reduce_op(n, "Sum", NULL, "log", st);
}
static int m_reduce_log_sum_exp(ox_node *n, wf_status *st) {
  return reduce_op(n, "Sum", "exp", "log", st);
}

static int arg_op(ox_node *n, int min, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape s;
  ox_shape_of(x, &s);
  int axis = norm_axis(n, ox_attr_i(n, "axis", 0), s.rank, st);
  if (axis < 0 || !OK(st))
    return wfx_code(st);
  int last = (int)ox_attr_i(n, "select_last_index", 0);
  if (min) {
    if (ox_dtype_of(x) == WF_UINT8)
      x = cast(n, x, WF_INT32, st);
    x = ox_add1(n, "Neg", x, st);
  }
  if (last) { /* search the reversed axis; index = D - 1 - found */
    int64_t b[WF_MAX_RANK] = {0}, e[WF_MAX_RANK] = {0}, sp[WF_MAX_RANK];
    for (int i = 0; i < s.rank; i++)
      sp[i] = i == axis ? -1 : 1;
    int64_t m = ((int64_t)1 << s.rank) - 1;
    wf_attr_item a[2] = {WFX_ITEM_INT("begin_mask", m),
                         WFX_ITEM_INT("end_mask", m)};
    x = ox_add(n, "StridedSlice",
               (wf_output[]){x, ox_const_i64(n, b, s.rank, st),
                             ox_const_i64(n, e, s.rank, st),
                             ox_const_i64(n, sp, s.rank, st)},
               4, a, 2, st);
  }
  wf_attr_item a[2] = {WFX_ITEM_INT("axis", axis),
                       WFX_ITEM_DTYPE("output_type", WF_INT64)};
  wf_output y = ox_add(n, "ArgMax", &x, 1, a, 2, st);
  if (last) {
    wf_output sh = shape_i64(n, x, st);
    int64_t b = axis, one = 1;
    wf_output d = ox_add(n, "Slice",
                         (wf_output[]){sh, ox_const_i64(n, &b, 1, st),
                                       ox_const_i64(n, &one, 1, st)},
                         3, NULL, 0, st);
    d = ox_add2(n, "Sub", d, ox_scalar_i64(n, 1, st), st);
    y = ox_add2(n, "Sub", d, y, st);
  }
  if (ox_attr_i(n, "keepdims", 1)) {
    wf_attr_item e = WFX_ITEM_INT("axis", axis);
    y = ox_add(n, "ExpandDims", &y, 1, &e, 1, st);
  }
  return out1(n, y, st);
}
static int m_argmax(ox_node *n, wf_status *st) { return arg_op(n, 0, st); }
static int m_argmin(ox_node *n, wf_status *st) { return arg_op(n, 1, st); }

/* ---- softmax ----------------------------------------------------------- */

static int softmax_op(ox_node *n, const char *op, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape s;
  ox_shape_of(x, &s);
  if (!OK(st))
    return wfx_code(st);
  if (s.rank < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the input's rank must be known while importing");
  if (s.rank == 0)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "a scalar input");
  if (n->im->opset < 13) { /* over the flattened dims from axis on */
    int64_t axis = ox_attr_i(n, "axis", 1);
    int a = norm_axis(n, axis, s.rank, st);
    if (a < 0)
      return wfx_code(st);
    if (a == s.rank - 1)
      return out1(n, ox_add1(n, op, x, st), st);
    int64_t inner = 1;
    for (int i = a; i < s.rank; i++)
      inner = s.dims[i] < 0 || inner < 0 ? -1 : inner * s.dims[i];
    if (inner < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "the dimensions from axis on must be known");
    int64_t d2[2] = {-1, inner};
    wf_output y = ox_add1(n, op, reshape(n, x, d2, 2, st), st);
    return out1(n, ox_add2(n, "Reshape", y, shape_i64(n, x, st), st), st);
  }
  int a = norm_axis(n, ox_attr_i(n, "axis", -1), s.rank, st);
  if (a < 0)
    return wfx_code(st);
  if (a == s.rank - 1)
    return out1(n, ox_add1(n, op, x, st), st);
  int64_t perm[WF_MAX_RANK];
  for (int i = 0; i < s.rank; i++)
    perm[i] = i;
  perm[a] = s.rank - 1;
  perm[s.rank - 1] = a;
  wf_output y = ox_add1(n, op, transpose(n, x, perm, s.rank, st), st);
  return out1(n, transpose(n, y, perm, s.rank, st), st);
}
static int m_softmax(ox_node *n, wf_status *st) {
  return softmax_op(n, "Softmax", st);
}
static int m_log_softmax(ox_node *n, wf_status *st) {
  return softmax_op(n, "LogSoftmax", st);
}

/* ---- normalisation ----------------------------------------------------- */

static int m_batch_norm(ox_node *n, wf_status *st) {
  if (ox_attr_i(n, "training_mode", 0) && n->im->opset >= 14) {
    /* the batch's statistics; the running ones moved towards them */
    wf_output in[5] = {X(n, 0, st), X(n, 1, st), X(n, 2, st), X(n, 3, st),
                       X(n, 4, st)};
    wf_attr_item a[3] = {
        WFX_ITEM_FLOAT("epsilon", ox_attr_f(n, "epsilon", 1e-5)),
        WFX_ITEM_BOOL("is_training", 1), item_str("data_format", "NCHW")};
    wf_output y = ox_add(n, "BatchNorm", in, 5, a, 3, st);
    double mom = ox_attr_f(n, "momentum", 0.9);
    if (ox_set_out(n, 0, y, st))
      return wfx_code(st);
    for (int k = 1; k < 3 && k < n->nout; k++) {
      wf_output run = ox_add2(n, "Mul", in[2 + k],
                              scalar_like(n, in[0], mom, st), st);
      wf_output cur = ox_add2(n, "Mul", ox_out(y, k),
                              scalar_like(n, in[0], 1 - mom, st), st);
      if (ox_set_out(n, k, ox_add2(n, "Add", run, cur, st), st))
        return wfx_code(st);
    }
    return 0;
  }
  if (ox_attr_i(n, "training_mode", 0) || (n->nout > 1 && n->im->opset >= 14))
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "training mode before opset 14 is not supported");
  wf_output in[5] = {X(n, 0, st), X(n, 1, st), X(n, 2, st), X(n, 3, st),
                     X(n, 4, st)};
  wf_attr_item a[3] = {WFX_ITEM_FLOAT("epsilon", ox_attr_f(n, "epsilon", 1e-5)),
                       WFX_ITEM_BOOL("is_training", 0),
                       item_str("data_format", "NCHW")};
  if (OK(st) && rank_of(in[0]) == 1)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "the input needs rank >= 2");
  return out1(n, ox_add(n, "BatchNorm", in, 5, a, 3, st), st);
}

/* (x - mean) / sqrt(var + eps) over axes [from, r), keeping dims. */
static wf_output normalize(ox_node *n, wf_output x, int from, int r,
                           double eps, wf_output *mean_out,
                           wf_output *inv_out, wf_status *st) {
  int64_t axes[WF_MAX_RANK];
  int k = 0;
  for (int i = from; i < r; i++)
    axes[k++] = i;
  wf_output mean = reduce(n, "Mean", x, axes, k, 1, st);
  wf_output d = ox_add2(n, "Sub", x, mean, st);
  wf_output var = reduce(n, "Mean", ox_add2(n, "Mul", d, d, st), axes, k, 1, st);
  wf_output inv = ox_add1(
      n, "Rsqrt", ox_add2(n, "Add", var, scalar_like(n, x, eps, st), st), st);
  if (mean_out)
    *mean_out = mean;
  if (inv_out)
    *inv_out = inv;
  return ox_add2(n, "Mul", d, inv, st);
}

static int m_layer_norm(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), mean, inv;
  int r = rank_of(x);
  int axis = norm_axis(n, ox_attr_i(n, "axis", -1), r, st);
  if (axis < 0 || !OK(st))
    return wfx_code(st);
  /* one output, scale and bias of the normalised dims' size: the fused op */
  wf_shape xs;
  ox_shape_of(x, &xs);
  int64_t inner = 1;
  for (int i = axis; i < r; i++)
    inner = xs.dims[i] < 0 || inner < 0 ? -1 : inner * xs.dims[i];
  int fits = inner > 0 && (n->nout == 1 || (!n->p->output[1][0] &&
                                            (n->nout < 3 ||
                                             !n->p->output[2][0])));
  for (int k = 1; k < 3 && fits; k++)
    if (has_in(n, k)) {
      wf_shape ks = n->in[k]->shape;
      fits = wfx_shape_is_known(&ks) && wfx_shape_count(&ks) == inner;
    }
  /* the last axis with a (C,) scale and bias: ops-nn's LayerNorm, which
   * device plugins run fast */
  int last = fits && axis == r - 1 && has_in(n, 2);
  for (int k = 1; k < 3 && last; k++)
    last = n->in[k]->shape.rank == 1;
  if (last) {
    wf_output in[3] = {x, X(n, 1, st), X(n, 2, st)};
    wf_attr_item a[1] = {
        WFX_ITEM_FLOAT("epsilon", ox_attr_f(n, "epsilon", 1e-5))};
    return out1(n, ox_add(n, "LayerNorm", in, 3, a, 1, st), st);
  }
  if (fits) {
    int32_t dt = ox_dtype_of(x);
    wf_output in[3] = {x, X(n, 1, st),
                       has_in(n, 2) ? X(n, 2, st) : empty(n, dt, st)};
    wf_attr_item a[2] = {WFX_ITEM_INT("axis", axis),
                         WFX_ITEM_FLOAT("epsilon",
                                        ox_attr_f(n, "epsilon", 1e-5))};
    return out1(n, ox_add(n, "OnnxLayerNorm", in, 3, a, 2, st), st);
  }
  wf_output y = normalize(n, x, axis, r, ox_attr_f(n, "epsilon", 1e-5), &mean,
                          &inv, st);
  y = ox_add2(n, "Mul", y, X(n, 1, st), st);
  if (has_in(n, 2))
    y = ox_add2(n, "Add", y, X(n, 2, st), st);
  if (ox_set_out(n, 0, y, st))
    return wfx_code(st);
  if (n->nout > 1 && ox_set_out(n, 1, mean, st))
    return wfx_code(st);
  if (n->nout > 2 && ox_set_out(n, 2, inv, st))
    return wfx_code(st);
  return 0;
}

/* scale and bias (C,) against x (N, C, ...): reshaped to (C, 1, ...). */
static wf_output per_channel(ox_node *n, wf_output v, int r, wf_status *st) {
  int64_t d[WF_MAX_RANK];
  d[0] = -1;
  for (int i = 1; i < r - 1; i++)
    d[i] = 1;
  return reshape(n, v, d, r - 1, st);
}

static int m_instance_norm(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int r = rank_of(x);
  if (!OK(st))
    return wfx_code(st);
  if (r < 3)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "the input needs rank >= 3 (known while importing)");
  wf_output y =
      normalize(n, x, 2, r, ox_attr_f(n, "epsilon", 1e-5), NULL, NULL, st);
  y = ox_add2(n, "Mul", y, per_channel(n, X(n, 1, st), r, st), st);
  y = ox_add2(n, "Add", y, per_channel(n, X(n, 2, st), r, st), st);
  return out1(n, y, st);
}

static int m_dropout(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int zero_ratio = has_in(n, 1) && n->in[1]->konst &&
                   wfx_host->tensor_count(n->in[1]->konst) == 1 &&
                   ((wfx_host->tensor_dtype(n->in[1]->konst) == WF_FLOAT32 &&
                     *(const float *)wfx_host->tensor_data(
                         n->in[1]->konst) == 0) ||
                    (wfx_host->tensor_dtype(n->in[1]->konst) == WF_FLOAT64 &&
                     *(const double *)wfx_host->tensor_data(
                         n->in[1]->konst) == 0));
  if (!zero_ratio && has_in(n, 2) && !n->in[2]->konst) {
    /* training_mode known at run time only: decided there */
    wf_output r = has_in(n, 1) ? X(n, 1, st) : scalar_like(n, x, 0.5, st);
    wf_output in[3] = {x, r, X(n, 2, st)};
    wf_output y = ox_add(n, "OnnxDropout", in, 3, NULL, 0, st);
    if (ox_set_out(n, 0, y, st))
      return wfx_code(st);
    return n->nout > 1 ? ox_set_out(n, 1, ox_out(y, 1), st) : 0;
  }
  if (!zero_ratio && has_in(n, 2) &&
      *(const uint8_t *)wfx_host->tensor_data(n->in[2]->konst))
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "training mode with a non-zero ratio is not supported "
                   "(inference only)");
  if (ox_set_out(n, 0, ox_add1(n, "Identity", x, st), st))
    return wfx_code(st);
  if (n->nout > 1) { /* the mask: everything kept */
    wf_output m = ox_add2(n, "Fill", shape_i64(n, x, st),
                          ox_scalar(n, WF_BOOL, 1, st), st);
    return ox_set_out(n, 1, m, st);
  }
  return 0;
}

/* ---- convolution and pooling ------------------------------------------- */

typedef struct win {
  int nsp;                                  /* spatial dims */
  int64_t k[WF_MAX_RANK], s[WF_MAX_RANK];   /* kernel, strides */
  int64_t d[WF_MAX_RANK];                   /* dilations */
  int64_t pb[WF_MAX_RANK], pe[WF_MAX_RANK]; /* pads before and after */
} win;

/* Reads kernel_shape (or the filter's), strides, dilations, pads and
 * (with autopad) auto_pad for nsp spatial dims of x (N, C, spatial...) */
static int window_pads(ox_node *n, const wf_shape *xs, const int64_t *kernel,
                       int nsp, int ceil_mode, int autopad, win *w,
                       wf_status *st);

static int window_pads(ox_node *n, const wf_shape *xs, const int64_t *kernel,
                       int nsp, int ceil_mode, int autopad, win *w,
                       wf_status *st) {
  const int64_t *v;
  int c;
  char ap[32];
  memset(w, 0, sizeof *w);
  if (nsp < 1 || nsp > WF_MAX_RANK - 2)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "%d spatial dimensions", nsp);
  w->nsp = nsp;
  for (int i = 0; i < nsp; i++) {
    w->k[i] = kernel[i];
    w->s[i] = w->d[i] = 1;
  }
  if ((c = ox_attr_ints(n, "strides", &v)) >= 0) {
    if (c != nsp)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "strides has %d entries", c);
    memcpy(w->s, v, (size_t)c * 8);
  }
  if ((c = ox_attr_ints(n, "dilations", &v)) >= 0) {
    if (c != nsp)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "dilations has %d entries",
                     c);
    memcpy(w->d, v, (size_t)c * 8);
  }
  if ((c = ox_attr_ints(n, "pads", &v)) >= 0) {
    if (c != 2 * nsp)
      return ox_fail(n, st, WF_INVALID_ARGUMENT, "pads has %d entries", c);
    for (int i = 0; i < nsp; i++) {
      w->pb[i] = v[i];
      w->pe[i] = v[i + nsp];
    }
  }
  for (int i = 0; i < nsp; i++)
    if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 ||
        w->pe[i] < 0)
      return ox_fail(n, st, WF_INVALID_ARGUMENT,
                     "kernel, strides and dilations must be positive and "
                     "pads non-negative");
  ox_attr_s(n, "auto_pad", "NOTSET", ap, sizeof ap);
  if (!autopad)
    snprintf(ap, sizeof ap, "NOTSET");
  int same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
  if (strcmp(ap, "VALID") == 0)
    for (int i = 0; i < nsp; i++)
      w->pb[i] = w->pe[i] = 0;
  for (int i = 0; i < nsp; i++) {
    int64_t in = xs->rank == nsp + 2 ? xs->dims[2 + i] : -1;
    int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
    if (same) {
      if (in < 0)
        return ox_fail(n, st, WF_UNIMPLEMENTED,
                       "auto_pad %s needs the spatial dimensions while "
                       "importing",
                       ap);
      int64_t out = (in + w->s[i] - 1) / w->s[i];
      int64_t total = (out - 1) * w->s[i] + ek - in;
      if (total < 0)
        total = 0;
      w->pb[i] = ap[5] == 'L' ? (total + 1) / 2 : total / 2;
      w->pe[i] = total - w->pb[i];
    } else if (ceil_mode) {
      if (in < 0)
        return ox_fail(n, st, WF_UNIMPLEMENTED,
                       "ceil_mode needs the spatial dimensions while "
                       "importing");
      int64_t span = in + w->pb[i] + w->pe[i] - ek;
      int64_t out = (span + w->s[i] - 1) / w->s[i] + 1;
      /* the last window must start inside the input or its left padding */
      if ((out - 1) * w->s[i] >= in + w->pb[i])
        out--;
      int64_t extra = (out - 1) * w->s[i] + ek - (in + w->pb[i] + w->pe[i]);
      if (extra > 0)
        w->pe[i] += extra;
    }
  }
  return 0;
}

static int window(ox_node *n, const wf_shape *xs, const int64_t *kernel,
                  int nsp, int ceil_mode, win *w, wf_status *st) {
  return window_pads(n, xs, kernel, nsp, ceil_mode, 1, w, st);
}

/* x (N, C, L) as (N, C, 1, L) and back, for 1-d windows on 2-d ops. */
static wf_output to_2d(ox_node *n, wf_output x, wf_status *st) {
  wf_attr_item a = WFX_ITEM_INT("axis", 2);
  return ox_add(n, "ExpandDims", &x, 1, &a, 1, st);
}
static wf_output from_2d(ox_node *n, wf_output x, wf_status *st) {
  int64_t d = 2;
  wf_attr_item a = item_ints("squeeze_dims", &d, 1);
  return ox_add(n, "Squeeze", &x, 1, &a, 1, st);
}
static void win_to_2d(win *w) {
  if (w->nsp != 1)
    return;
  w->k[1] = w->k[0], w->s[1] = w->s[0], w->d[1] = w->d[0];
  w->pb[1] = w->pb[0], w->pe[1] = w->pe[0];
  w->k[0] = w->s[0] = w->d[0] = 1;
  w->pb[0] = w->pe[0] = 0;
  w->nsp = 2;
}

static wf_output pad_spatial(ox_node *n, wf_output x, const win *w,
                             double value, wf_status *st) {
  int any = 0;
  int64_t p[8] = {0};
  for (int i = 0; i < 2; i++) {
    p[4 + 2 * i] = w->pb[i];
    p[5 + 2 * i] = w->pe[i];
    any |= w->pb[i] || w->pe[i];
  }
  if (!any)
    return x;
  wf_attr_item a = WFX_ITEM_FLOAT("constant_values", value);
  return ox_add(
      n, "Pad",
      (wf_output[]){x, reshape(n, ox_const_i64(n, p, 8, st),
                               (int64_t[]){4, 2}, 2, st)},
      2, &a, 1, st);
}

/* The window's strides, dilations and pads as OnnxConv/OnnxPool take
 * them. */
static int win_items(const win *w, int64_t *buf, wf_attr_item *a) {
  int k = w->nsp;
  for (int i = 0; i < k; i++) {
    buf[i] = w->s[i];
    buf[k + i] = w->d[i];
    buf[2 * k + i] = w->pb[i];
    buf[3 * k + i] = w->pe[i];
  }
  a[0] = item_ints("strides", buf, k);
  a[1] = item_ints("dilations", buf + k, k);
  a[2] = item_ints("pads", buf + 2 * k, 2 * k);
  return 3;
}

/* OnnxConv for what Conv2D does not take (3-d and more). */
static int conv_nd(ox_node *n, wf_output x, wf_output f, const win *w,
                   int64_t group, wf_status *st) {
  int64_t buf[4 * WF_MAX_RANK];
  wf_attr_item a[4];
  int na = win_items(w, buf, a);
  a[na++] = WFX_ITEM_INT("group", group);
  wf_output b = has_in(n, 2) ? X(n, 2, st) : empty(n, ox_dtype_of(x), st);
  return out1(n, ox_add(n, "OnnxConv", (wf_output[]){x, f, b}, 3, a, na, st),
              st);
}

/* A (O, I, H, W) float filter known now as a variable in (H, W, I, O). */
static wf_output hwio_weight(ox_node *n, ox_val *v, wf_status *st) {
  const wf_tensor *t = v->konst;
  wf_shape s, o;
  wfx_host->tensor_shape(t, &s);
  o = (wf_shape){.rank = 4, .dims = {s.dims[2], s.dims[3], s.dims[1],
                                     s.dims[0]}};
  int32_t dt = wfx_host->tensor_dtype(t);
  wf_tensor *r = OK(st) ? wfx_host->tensor_new(dt, &o, st) : NULL;
  if (!r)
    return NONE;
  size_t es = wfx_dtype_size(dt);
  const char *src = wfx_host->tensor_data(t);
  char *dst = wfx_host->tensor_data(r);
  int64_t O = s.dims[0], I = s.dims[1], H = s.dims[2], W = s.dims[3];
  for (int64_t a = 0; a < O; a++)
    for (int64_t b = 0; b < I; b++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++)
          memcpy(dst + (((h * W + w) * I + b) * O + a) * es,
                 src + (((a * I + b) * H + h) * W + w) * es, es);
  char name[128];
  snprintf(name, sizeof name, "%.100s.hwio", v->name);
  return ox_weight(n, name, r, st);
}

static int m_conv(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), f = X(n, 1, st);
  wf_shape xs, fs;
  ox_shape_of(x, &xs);
  ox_shape_of(f, &fs);
  if (!OK(st))
    return wfx_code(st);
  if (!wfx_shape_is_known(&fs) || fs.rank < 3)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the filter's shape must be known while importing (rank "
                   ">= 3)");
  int nsp = fs.rank - 2;
  int64_t group = ox_attr_i(n, "group", 1);
  const int64_t *kv;
  int64_t kernel[WF_MAX_RANK];
  for (int i = 0; i < nsp; i++)
    kernel[i] = fs.dims[2 + i];
  if (ox_attr_ints(n, "kernel_shape", &kv) == nsp)
    for (int i = 0; i < nsp; i++)
      kernel[i] = kv[i];
  win w;
  if (window(n, &xs, kernel, nsp, 0, &w, st))
    return wfx_code(st);
  if (nsp > 2 || group > OX_MAX_IO)
    return conv_nd(n, x, f, &w, group, st);
  if (group < 1 || fs.dims[0] % group)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "group %lld does not divide the %lld output channels",
                   (long long)group, (long long)fs.dims[0]);
  if (nsp == 1) {
    x = to_2d(n, x, st);
    f = to_2d(n, f, st);
    win_to_2d(&w);
  }
  /* OIHW -> HWIO: a weight known now is stored rearranged, so that the
   * Transpose does not run at every step */
  int64_t perm[4] = {2, 3, 1, 0};
  if (group == 1 && n->in[1]->konst && nsp == 2)
    f = hwio_weight(n, n->in[1], st), perm[0] = 0, perm[1] = 1, perm[2] = 2,
    perm[3] = 3;
  int64_t strides[4] = {1, 1, w.s[0], w.s[1]};
  int64_t dil[4] = {1, 1, w.d[0], w.d[1]};
  int64_t pads[8] = {0, 0, 0, 0, w.pb[0], w.pe[0], w.pb[1], w.pe[1]};
  wf_attr_item a[5] = {item_ints("strides", strides, 4),
                       item_str("padding", "EXPLICIT"),
                       item_ints("explicit_paddings", pads, 8),
                       item_ints("dilations", dil, 4),
                       item_str("data_format", "NCHW")};
  wf_output y;
  if (group == 1) {
    wf_output hwio = perm[0] == 0 ? f : transpose(n, f, perm, 4, st);
    y = ox_add(n, "Conv2D", (wf_output[]){x, hwio}, 2, a, 5, st);
  } else {
    if (group > OX_MAX_IO)
      return ox_fail(n, st, WF_UNIMPLEMENTED, "more than %d groups",
                     OX_MAX_IO);
    wf_attr_item sx[2] = {WFX_ITEM_INT("num_split", group),
                          WFX_ITEM_INT("axis", 1)};
    wf_attr_item sf[2] = {WFX_ITEM_INT("num_split", group),
                          WFX_ITEM_INT("axis", 0)};
    wf_output xsplit = ox_add(n, "Split", &x, 1, sx, 2, st);
    wf_output fsplit = ox_add(n, "Split", &f, 1, sf, 2, st);
    wf_output parts[OX_MAX_IO];
    for (int g = 0; g < group; g++)
      parts[g] = ox_add(
          n, "Conv2D",
          (wf_output[]){ox_out(xsplit, g),
                        transpose(n, ox_out(fsplit, g), perm, 4, st)},
          2, a, 5, st);
    wf_attr_item ca = WFX_ITEM_INT("axis", 1);
    y = ox_add(n, "Concat", parts, (int)group, &ca, 1, st);
  }
  if (has_in(n, 2)) {
    wf_attr_item df = item_str("data_format", "NCHW");
    y = ox_add(n, "BiasAdd", (wf_output[]){y, X(n, 2, st)}, 2, &df, 1, st);
  }
  if (nsp == 1)
    y = from_2d(n, y, st);
  return out1(n, y, st);
}

/* OnnxPool of kind ("max", "avg", "lp") over window w. */
static int pool_nd(ox_node *n, wf_output x, const char *kind, const win *w,
                   const int64_t *kernel, wf_status *st) {
  int64_t buf[4 * WF_MAX_RANK];
  wf_attr_item a[10];
  int na = win_items(w, buf, a);
  a[na++] = item_str("kind", kind);
  a[na++] = item_ints("kernel_shape", kernel, w->nsp);
  a[na++] = WFX_ITEM_INT("ceil_mode", ox_attr_i(n, "ceil_mode", 0));
  a[na++] = WFX_ITEM_INT("count_include_pad",
                         ox_attr_i(n, "count_include_pad", 0));
  a[na++] = WFX_ITEM_INT("p", ox_attr_i(n, "p", 2));
  a[na++] = WFX_ITEM_INT("storage_order", ox_attr_i(n, "storage_order", 0));
  wf_output y = ox_add(n, "OnnxPool", &x, 1, a, na, st);
  if (ox_set_out(n, 0, y, st))
    return wfx_code(st);
  if (n->nout > 1)
    return ox_set_out(n, 1, ox_out(y, 1), st);
  return 0;
}

static int pool(ox_node *n, int max, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape xs;
  ox_shape_of(x, &xs);
  const int64_t *kv;
  int nk = ox_attr_ints(n, "kernel_shape", &kv);
  if (!OK(st))
    return wfx_code(st);
  if (nk >= 1 && nk <= WF_MAX_RANK - 2) {
    /* what the 2-d ops do not: 3-d and more, dilations, Indices, storage
     * order 0, integers with padding: the plugin's N-d kernel */
    const int64_t *dv;
    int nd = ox_attr_ints(n, "dilations", &dv), dil = 0;
    for (int i = 0; i < nd; i++)
      dil |= dv[i] != 1;
    int flt = ox_dtype_of(x) == WF_FLOAT32 || ox_dtype_of(x) == WF_FLOAT64;
    if (nk > 2 || dil || (max && n->nout > 1) || !flt ||
        (max && ox_attr_i(n, "storage_order", 0))) {
      win w;
      if (window(n, &xs, kv, nk, 0, &w, st))
        return wfx_code(st);
      return pool_nd(n, x, max ? "max" : "avg", &w, kv, st);
    }
  }
  if (nk != 1 && nk != 2)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "1-d and 2-d pooling is supported (kernel_shape has %d "
                   "entries)",
                   nk);
  if (xs.rank >= 0 && xs.rank != nk + 2)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "a %d-d kernel for an input of rank %d", nk, xs.rank);
  if (max && n->nout > 1)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the Indices output is not supported");
  if (max && ox_attr_i(n, "storage_order", 0))
    return ox_fail(n, st, WF_UNIMPLEMENTED, "storage_order 1");
  win w;
  if (window(n, &xs, kv, nk, (int)ox_attr_i(n, "ceil_mode", 0), &w, st))
    return wfx_code(st);
  if (nk == 1) {
    x = to_2d(n, x, st);
    win_to_2d(&w);
  }
  for (int i = 0; i < 2; i++)
    if (w.d[i] != 1)
      return ox_fail(n, st, WF_UNIMPLEMENTED, "dilated pooling");
  int64_t ks[4] = {1, 1, w.k[0], w.k[1]}, ss[4] = {1, 1, w.s[0], w.s[1]};
  wf_attr_item a[5] = {item_ints("ksize", ks, 4), item_ints("strides", ss, 4),
                       item_str("padding", "VALID"),
                       item_str("data_format", "NCHW")};
  wf_output y;
  /* padding less than the window, ignored by max and left out of the
   * average's count: the pool's own EXPLICIT padding (no padded copy) */
  int64_t ep[8] = {0, 0, 0, 0, w.pb[0], w.pe[0], w.pb[1], w.pe[1]};
  int inside = 1, any = 0;
  for (int i = 0; i < 2; i++) {
    inside &= w.pb[i] < w.k[i] && w.pe[i] < w.k[i];
    any |= w.pb[i] || w.pe[i];
  }
  int flt = ox_dtype_of(x) == WF_FLOAT32 || ox_dtype_of(x) == WF_FLOAT64;
  if (any && inside && flt &&
      (max || !ox_attr_i(n, "count_include_pad", 0))) {
    a[2] = item_str("padding", "EXPLICIT");
    a[4] = item_ints("explicit_paddings", ep, 8);
    y = ox_add(n, max ? "MaxPool" : "AvgPool", &x, 1, a, 5, st);
  } else if (max) {
    y = ox_add(n, "MaxPool",
               (wf_output[]){pad_spatial(n, x, &w, -INFINITY, st)}, 1, a, 4,
               st);
    if (ox_dtype_of(x) != WF_FLOAT32 && ox_dtype_of(x) != WF_FLOAT64 &&
        (w.pb[0] || w.pb[1] || w.pe[0] || w.pe[1]))
      return ox_fail(n, st, WF_UNIMPLEMENTED, "padded integer max pooling");
  } else {
    int include = (int)ox_attr_i(n, "count_include_pad", 0);
    wf_output px = pad_spatial(n, x, &w, 0, st);
    y = ox_add(n, "AvgPool", &px, 1, a, 4, st);
    if (!include && (w.pb[0] || w.pb[1] || w.pe[0] || w.pe[1])) {
      /* mean over the window's input elements only: divide by the share
       * of them, the average of a padded tensor of ones */
      wf_output ones = ox_add2(n, "Fill", shape_i64(n, x, st),
                               scalar_like(n, x, 1, st), st);
      wf_output cnt = ox_add(n, "AvgPool",
                             (wf_output[]){pad_spatial(n, ones, &w, 0, st)},
                             1, a, 4, st);
      y = ox_add2(n, "Div", y, cnt, st);
    }
  }
  if (nk == 1)
    y = from_2d(n, y, st);
  return out1(n, y, st);
}
static int m_max_pool(ox_node *n, wf_status *st) { return pool(n, 1, st); }

static int m_lp_pool(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape xs;
  ox_shape_of(x, &xs);
  const int64_t *kv;
  int nk = ox_attr_ints(n, "kernel_shape", &kv);
  win w;
  if (!OK(st))
    return wfx_code(st);
  if (nk < 1 || window(n, &xs, kv, nk, 0, &w, st))
    return wfx_code(st) ? wfx_code(st)
                        : ox_fail(n, st, WF_INVALID_ARGUMENT,
                                  "kernel_shape is required");
  return pool_nd(n, x, "lp", &w, kv, st);
}

static int m_conv_transpose(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), f = X(n, 1, st);
  wf_shape xs, fs;
  ox_shape_of(x, &xs);
  ox_shape_of(f, &fs);
  if (!OK(st))
    return wfx_code(st);
  if (!wfx_shape_is_known(&fs) || fs.rank < 3 || xs.rank != fs.rank)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the filter's shape and the input's rank must be known "
                   "while importing");
  int nsp = fs.rank - 2;
  int64_t k[WF_MAX_RANK], op[WF_MAX_RANK] = {0}, os[WF_MAX_RANK];
  const int64_t *v;
  for (int i = 0; i < nsp; i++)
    k[i] = fs.dims[2 + i];
  if (ox_attr_ints(n, "kernel_shape", &v) == nsp)
    memcpy(k, v, (size_t)nsp * 8);
  win w;
  char ap[32];
  ox_attr_s(n, "auto_pad", "NOTSET", ap, sizeof ap);
  /* the strides, dilations and explicit pads; auto_pad is ConvTranspose's */
  if (window_pads(n, &xs, k, nsp, 0, 0, &w, st))
    return wfx_code(st);
  int c = ox_attr_ints(n, "output_padding", &v);
  if (c == nsp)
    memcpy(op, v, (size_t)nsp * 8);
  int nos = ox_attr_ints(n, "output_shape", &v);
  if (nos >= nsp)
    memcpy(os, v + (nos - nsp), (size_t)nsp * 8);
  int same = strncmp(ap, "SAME", 4) == 0;
  if (nos >= nsp || same) {
    for (int i = 0; i < nsp; i++) {
      int64_t in = xs.dims[2 + i];
      if (in < 0)
        return ox_fail(n, st, WF_UNIMPLEMENTED,
                       "output_shape and auto_pad need the spatial "
                       "dimensions while importing");
      int64_t out = nos >= nsp ? os[i] : in * w.s[i];
      int64_t total = w.s[i] * (in - 1) + op[i] + (k[i] - 1) * w.d[i] + 1 -
                      out;
      if (total < 0) { /* more output than the input reaches: pad at end */
        op[i] -= total;
        total = 0;
      }
      if (strcmp(ap, "SAME_UPPER") == 0 || (!same && nos >= nsp)) {
        w.pb[i] = total / 2;
        w.pe[i] = total - total / 2;
      } else {
        w.pb[i] = total - total / 2;
        w.pe[i] = total / 2;
      }
    }
  }
  int64_t buf[4 * WF_MAX_RANK];
  wf_attr_item a[5];
  int na = win_items(&w, buf, a);
  a[na++] = WFX_ITEM_INT("group", ox_attr_i(n, "group", 1));
  a[na++] = item_ints("output_padding", op, nsp);
  wf_output b = has_in(n, 2) ? X(n, 2, st) : empty(n, ox_dtype_of(x), st);
  return out1(n,
              ox_add(n, "OnnxConvTranspose", (wf_output[]){x, f, b}, 3, a, na,
                     st),
              st);
}
static int m_avg_pool(ox_node *n, wf_status *st) { return pool(n, 0, st); }

static int global_pool(ox_node *n, const char *op, wf_status *st) {
  wf_output x = X(n, 0, st);
  int r = rank_of(x);
  if (!OK(st))
    return wfx_code(st);
  if (r < 3)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "the input needs rank >= 3 (known while importing)");
  int64_t axes[WF_MAX_RANK];
  for (int i = 2; i < r; i++)
    axes[i - 2] = i;
  return out1(n, reduce(n, op, x, axes, r - 2, 1, st), st);
}
static int m_global_avg_pool(ox_node *n, wf_status *st) {
  return global_pool(n, "Mean", st);
}
static int m_global_max_pool(ox_node *n, wf_status *st) {
  return global_pool(n, "Max", st);
}

/* ---- ops of the plugin's own -------------------------------------------- */

static int m_gather_elements(ox_node *n, wf_status *st) {
  wf_attr_item a = WFX_ITEM_INT("axis", ox_attr_i(n, "axis", 0));
  wf_output in[2] = {X(n, 0, st), X(n, 1, st)};
  return out1(n, ox_add(n, "OnnxGatherElements", in, 2, &a, 1, st), st);
}

static int m_trilu(ox_node *n, wf_status *st) {
  wf_attr_item a = WFX_ITEM_INT("upper", ox_attr_i(n, "upper", 1));
  wf_output k = has_in(n, 1) ? cast(n, X(n, 1, st), WF_INT64, st)
                             : ox_scalar_i64(n, 0, st);
  wf_output in[2] = {X(n, 0, st), k};
  return out1(n, ox_add(n, "OnnxTrilu", in, 2, &a, 1, st), st);
}

static int m_range(ox_node *n, wf_status *st) {
  wf_output in[3] = {X(n, 0, st), X(n, 1, st), X(n, 2, st)};
  return out1(n, ox_add(n, "OnnxRange", in, 3, NULL, 0, st), st);
}

static int m_mod(ox_node *n, wf_status *st) {
  wf_attr_item a = WFX_ITEM_INT("fmod", ox_attr_i(n, "fmod", 0));
  wf_output x = X(n, 0, st);
  int32_t dt = ox_dtype_of(x);
  wf_output in[2] = {widen(n, x, st), widen(n, X(n, 1, st), st)};
  return out1(n, narrow(n, ox_add(n, "OnnxMod", in, 2, &a, 1, st), dt, st),
              st);
}

static int m_cumsum(ox_node *n, wf_status *st) {
  wf_attr_item a[2] = {WFX_ITEM_INT("exclusive", ox_attr_i(n, "exclusive", 0)),
                       WFX_ITEM_INT("reverse", ox_attr_i(n, "reverse", 0))};
  wf_output in[2] = {X(n, 0, st), X(n, 1, st)};
  return out1(n, ox_add(n, "OnnxCumSum", in, 2, a, 2, st), st);
}

static int m_isnan(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  return out1(n, logical_not(n, ox_add2(n, "Equal", x, x, st), st), st);
}

static int m_isinf(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int pos = (int)ox_attr_i(n, "detect_positive", 1);
  int neg = (int)ox_attr_i(n, "detect_negative", 1);
  wf_output p = ox_add2(n, "Equal", x, scalar_like(n, x, INFINITY, st), st);
  wf_output m = ox_add2(n, "Equal", x, scalar_like(n, x, -INFINITY, st), st);
  wf_output y;
  if (pos && neg)
    y = ox_add(n, "Select", (wf_output[]){p, p, m}, 3, NULL, 0, st);
  else if (pos)
    y = p;
  else if (neg)
    y = m;
  else /* nothing detected: all false */
    y = ox_add2(n, "Fill", shape_i64(n, x, st), ox_scalar(n, WF_BOOL, 0, st),
                st);
  return out1(n, y, st);
}

/* OneHot of (indices, depth) along axis with values (off, on). */
static wf_output one_hot(ox_node *n, wf_output idx, wf_output depth,
                         wf_output off, wf_output on, int64_t axis,
                         wf_status *st) {
  depth = reshape(n, cast(n, depth, WF_INT32, st), NULL, 0, st);
  if (ox_dtype_of(idx) != WF_INT32 && ox_dtype_of(idx) != WF_INT64)
    idx = cast(n, idx, WF_INT64, st);
  /* negative indices count from depth */
  wf_output d = cast(n, depth, ox_dtype_of(idx), st);
  wf_output c = ox_add2(n, "Less", idx, scalar_like(n, idx, 0, st), st);
  idx = ox_add(n, "Select",
               (wf_output[]){c, ox_add2(n, "Add", idx, d, st), idx}, 3, NULL,
               0, st);
  wf_attr_item a = WFX_ITEM_INT("axis", axis);
  return ox_add(n, "OneHot", (wf_output[]){idx, depth, on, off}, 4, &a, 1,
                st);
}

static int m_one_hot(ox_node *n, wf_status *st) {
  wf_output idx = X(n, 0, st), vals = X(n, 2, st);
  int r = rank_of(idx);
  int64_t axis = ox_attr_i(n, "axis", -1);
  if (!OK(st))
    return wfx_code(st);
  if (r < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the indices' rank must be known while importing");
  if (axis < -r - 1 || axis > r)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "axis %lld for rank %d",
                   (long long)axis, r + 1);
  if (axis < 0)
    axis += r + 1;
  int64_t zero = 0, one = 1, len = 1;
  wf_output off = reshape(
      n,
      ox_add(n, "Slice",
             (wf_output[]){vals, ox_const_i64(n, &zero, 1, st),
                           ox_const_i64(n, &len, 1, st)},
             3, NULL, 0, st),
      NULL, 0, st);
  wf_output on = reshape(
      n,
      ox_add(n, "Slice",
             (wf_output[]){vals, ox_const_i64(n, &one, 1, st),
                           ox_const_i64(n, &len, 1, st)},
             3, NULL, 0, st),
      NULL, 0, st);
  return out1(n, one_hot(n, idx, X(n, 1, st), off, on, axis, st), st);
}

static int m_hardmax(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape s;
  ox_shape_of(x, &s);
  if (!OK(st))
    return wfx_code(st);
  int a = norm_axis(n, ox_attr_i(n, "axis", n->im->opset < 13 ? 1 : -1),
                    s.rank, st);
  if (a < 0)
    return wfx_code(st);
  wf_output in = x;
  int ax = a;
  if (n->im->opset < 13 && a != s.rank - 1) { /* over the flattened tail */
    int64_t inner = 1;
    for (int i = a; i < s.rank; i++)
      inner = s.dims[i] < 0 || inner < 0 ? -1 : inner * s.dims[i];
    if (inner < 0)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "the dimensions from axis on must be known");
    in = reshape(n, x, (int64_t[]){-1, inner}, 2, st);
    ax = 1;
  }
  wf_attr_item am[2] = {WFX_ITEM_INT("axis", ax),
                        WFX_ITEM_DTYPE("output_type", WF_INT64)};
  wf_output idx = ox_add(n, "ArgMax", &in, 1, am, 2, st);
  wf_output sh = shape_i64(n, in, st);
  int64_t b = ax, one = 1;
  wf_output d = ox_add(n, "Slice",
                       (wf_output[]){sh, ox_const_i64(n, &b, 1, st),
                                     ox_const_i64(n, &one, 1, st)},
                       3, NULL, 0, st);
  wf_output y = one_hot(n, idx, d, scalar_like(n, x, 0, st),
                        scalar_like(n, x, 1, st), ax, st);
  if (in.node != x.node)
    y = ox_add2(n, "Reshape", y, shape_i64(n, x, st), st);
  return out1(n, y, st);
}

/* log_softmax along axis 1 of x (rank r known). */
static wf_output log_softmax_axis1(ox_node *n, wf_output x, int r,
                                   wf_status *st) {
  if (r == 2)
    return ox_add1(n, "LogSoftmax", x, st);
  int64_t perm[WF_MAX_RANK];
  for (int i = 0; i < r; i++)
    perm[i] = i;
  perm[1] = r - 1;
  perm[r - 1] = 1;
  wf_output y = ox_add1(n, "LogSoftmax", transpose(n, x, perm, r, st), st);
  return transpose(n, y, perm, r, st);
}

static wf_output nll(ox_node *n, wf_output x, wf_output target, int wi,
                     wf_status *st) {
  char red[16];
  ox_attr_s(n, "reduction", "mean", red, sizeof red);
  const Onnx__AttributeProto *ig = ox_attr(n, "ignore_index");
  wf_output w;
  if (has_in(n, wi))
    w = X(n, wi, st);
  else { /* weight 1 per class */
    int64_t b = 1, one = 1;
    wf_output c = ox_add(n, "Slice",
                         (wf_output[]){shape_i64(n, x, st),
                                       ox_const_i64(n, &b, 1, st),
                                       ox_const_i64(n, &one, 1, st)},
                         3, NULL, 0, st);
    w = ox_add2(n, "Fill", c, scalar_like(n, x, 1, st), st);
  }
  wf_attr_item a[3] = {item_str("reduction", red),
                       WFX_ITEM_INT("ignore_index", ig ? ig->i : 0),
                       WFX_ITEM_INT("has_ignore_index", ig != NULL)};
  return ox_add(n, "OnnxNLLLoss", (wf_output[]){x, target, w}, 3, a, 3, st);
}

static int m_nll_loss(ox_node *n, wf_status *st) {
  return out1(n, nll(n, X(n, 0, st), X(n, 1, st), 2, st), st);
}

static int m_sce_loss(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int r = rank_of(x);
  if (!OK(st))
    return wfx_code(st);
  if (r < 2)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the scores' rank (>= 2) must be known while importing");
  wf_output lp = log_softmax_axis1(n, x, r, st);
  if (ox_set_out(n, 0, nll(n, lp, X(n, 1, st), 2, st), st))
    return wfx_code(st);
  if (n->nout > 1)
    return ox_set_out(n, 1, ox_add1(n, "Identity", lp, st), st);
  return 0;
}

/* An empty (0,) tensor of dtype, for an absent optional input. */
static wf_output empty(ox_node *n, int32_t dtype, wf_status *st) {
  wf_shape s = {.rank = 1, .dims = {0}};
  if (!OK(st))
    return NONE;
  return ox_const(n, wfx_host->tensor_new(dtype, &s, st), st);
}

static wf_output resize(ox_node *n, wf_output x, wf_output roi,
                        wf_output scales, wf_output sizes, const char *mode,
                        const char *ctm, const char *nearest,
                        wf_status *st) {
  wf_attr_item a[6] = {
      item_str("mode", mode), item_str("coordinate_transformation_mode", ctm),
      item_str("nearest_mode", nearest),
      WFX_ITEM_FLOAT("cubic_coeff_a", ox_attr_f(n, "cubic_coeff_a", -0.75)),
      WFX_ITEM_INT("exclude_outside", ox_attr_i(n, "exclude_outside", 0)),
      WFX_ITEM_FLOAT("extrapolation_value",
                     ox_attr_f(n, "extrapolation_value", 0))};
  wf_output in[4] = {x, roi, cast(n, scales, WF_FLOAT32, st),
                     cast(n, sizes, WF_INT64, st)};
  return ox_add(n, "OnnxResize", in, 4, a, 6, st);
}

static int m_resize(ox_node *n, wf_status *st) {
  char mode[32], ctm[48], nm[48];
  ox_attr_s(n, "mode", "nearest", mode, sizeof mode);
  if (ox_attr_i(n, "antialias", 0) || ox_attr(n, "axes") ||
      ox_attr(n, "keep_aspect_ratio_policy"))
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "antialias, axes and keep_aspect_ratio_policy are not "
                   "supported");
  wf_output x = X(n, 0, st);
  if (n->im->opset < 11) { /* Resize-10: scales only, as Upsample */
    ox_attr_s(n, "mode", "nearest", mode, sizeof mode);
    return out1(n,
                resize(n, x, empty(n, WF_FLOAT32, st), X(n, 1, st),
                       empty(n, WF_INT64, st), mode, "asymmetric", "floor",
                       st),
                st);
  }
  ox_attr_s(n, "coordinate_transformation_mode", "half_pixel", ctm,
            sizeof ctm);
  ox_attr_s(n, "nearest_mode", "round_prefer_floor", nm, sizeof nm);
  wf_output roi = has_in(n, 1) ? X(n, 1, st) : empty(n, WF_FLOAT32, st);
  if (ox_dtype_of(roi) != WF_FLOAT32 && ox_dtype_of(roi) != WF_FLOAT64)
    roi = cast(n, roi, WF_FLOAT32, st);
  wf_output sc = has_in(n, 2) ? X(n, 2, st) : empty(n, WF_FLOAT32, st);
  wf_output sz = has_in(n, 3) ? X(n, 3, st) : empty(n, WF_INT64, st);
  return out1(n, resize(n, x, roi, sc, sz, mode, ctm, nm, st), st);
}

static int m_upsample(ox_node *n, wf_status *st) {
  char mode[32];
  ox_attr_s(n, "mode", "nearest", mode, sizeof mode);
  wf_output x = X(n, 0, st), sc;
  const float *fv;
  int k = ox_attr_floats(n, "scales", &fv);
  if (k >= 0) { /* opset 7-8: an attribute */
    wf_shape s = {.rank = 1, .dims = {k}};
    wf_tensor *t = OK(st) ? wfx_host->tensor_new(WF_FLOAT32, &s, st) : NULL;
    if (t && k)
      memcpy(wfx_host->tensor_data(t), fv, (size_t)k * sizeof(float));
    sc = ox_const(n, t, st);
  } else
    sc = X(n, 1, st);
  if (strcmp(mode, "bilinear") == 0)
    snprintf(mode, sizeof mode, "linear");
  return out1(n,
              resize(n, x, empty(n, WF_FLOAT32, st), sc,
                     empty(n, WF_INT64, st), mode, "asymmetric", "floor", st),
              st);
}

/* ---- sequences --------------------------------------------------------- */

/* Sequences have a length known while importing; a position known only at
 * run time picks among the tensors with OnnxPick. */

static ox_val *seq_in(ox_node *n, int i, wf_status *st) {
  if (need_in(n, i, st))
    return NULL;
  if (!n->in[i]->is_seq) {
    ox_fail(n, st, WF_INVALID_ARGUMENT, "input %d '%s' is not a sequence", i,
            n->in[i]->name);
    return NULL;
  }
  return n->in[i];
}

/* values[k] chosen by the int64 scalar idx at run time. */
static wf_output pick(ox_node *n, wf_output idx, const wf_output *values,
                      int k, wf_status *st) {
  wf_output in[OX_MAX_IO + 1];
  if (k > OX_MAX_IO) {
    ox_fail(n, st, WF_UNIMPLEMENTED, "a sequence of more than %d tensors",
            OX_MAX_IO);
    return NONE;
  }
  in[0] = idx;
  for (int i = 0; i < k; i++)
    in[i + 1] = values[i];
  wf_attr_item a = WFX_ITEM_INT("N", k);
  return ox_add(n, "OnnxPick", in, k + 1, &a, 1, st);
}

/* A position input as an int64 scalar, negatives counted from len (+
 * extra: insert accepts len itself). */
static wf_output position(ox_node *n, int i, int64_t len, wf_status *st) {
  wf_output p = reshape(n, cast(n, X(n, i, st), WF_INT64, st), NULL, 0, st);
  wf_output c = ox_add2(n, "Less", p, ox_scalar_i64(n, 0, st), st);
  wf_output in[3] = {c, ox_add2(n, "Add", p, ox_scalar_i64(n, len, st), st),
                     p};
  return ox_add(n, "Select", in, 3, NULL, 0, st);
}

/* The index (0, 1 or 2) of the candidate for slot i: i < p, i == p, i > p. */
static wf_output three_way(ox_node *n, int64_t i, wf_output p, wf_status *st) {
  wf_output iv = ox_scalar_i64(n, i, st);
  wf_output lt = ox_add2(n, "Less", iv, p, st);
  wf_output eq = ox_add2(n, "Equal", iv, p, st);
  wf_output inner =
      ox_add(n, "Select",
             (wf_output[]){eq, ox_scalar_i64(n, 1, st), ox_scalar_i64(n, 2, st)},
             3, NULL, 0, st);
  return ox_add(n, "Select", (wf_output[]){lt, ox_scalar_i64(n, 0, st), inner},
                3, NULL, 0, st);
}

static int m_sequence_empty(ox_node *n, wf_status *st) {
  int32_t dt = ox_dtype((int32_t)ox_attr_i(n, "dtype", 1));
  if (dt == WF_DTYPE_INVALID)
    return ox_fail(n, st, WF_UNIMPLEMENTED, "a sequence of a type weft lacks");
  return ox_set_seq_out(n, 0, NULL, 0, dt, st);
}

static int m_sequence_construct(ox_node *n, wf_status *st) {
  wf_output e[OX_MAX_IO];
  for (int i = 0; i < n->nin; i++)
    e[i] = X(n, i, st);
  if (!OK(st))
    return wfx_code(st);
  return ox_set_seq_out(n, 0, e, n->nin, n->nin ? ox_dtype_of(e[0]) : 1, st);
}

static int m_sequence_insert(ox_node *n, wf_status *st) {
  ox_val *sq = seq_in(n, 0, st);
  wf_output t = X(n, 1, st), e[OX_MAX_IO];
  if (!sq || !OK(st))
    return wfx_code(st);
  int len = sq->nseq;
  if (len + 1 > OX_MAX_IO)
    return ox_fail(n, st, WF_UNIMPLEMENTED, "a sequence of more than %d "
                   "tensors", OX_MAX_IO);
  if (!has_in(n, 2)) {
    if (len > 0) /* an empty sequence's list may be NULL */
      memcpy(e, sq->seq, sizeof *e * (size_t)len);
    e[len] = t;
  } else {
    wf_output p = position(n, 2, len, st);
    for (int i = 0; i <= len; i++) {
      wf_output c[3] = {i < len ? sq->seq[i] : t, t, i > 0 ? sq->seq[i - 1] : t};
      e[i] = pick(n, three_way(n, i, p, st), c, 3, st);
    }
  }
  return ox_set_seq_out(n, 0, e, len + 1, ox_dtype_of(t), st);
}

static int m_sequence_erase(ox_node *n, wf_status *st) {
  ox_val *sq = seq_in(n, 0, st);
  wf_output e[OX_MAX_IO];
  if (!sq || !OK(st))
    return wfx_code(st);
  int len = sq->nseq;
  if (len == 0)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "erasing from an empty "
                   "sequence");
  if (!has_in(n, 1)) {
    if (len > 1)
      memcpy(e, sq->seq, sizeof *e * (size_t)(len - 1));
  } else {
    wf_output p = position(n, 1, len, st);
    for (int i = 0; i < len - 1; i++) {
      wf_output c[3] = {sq->seq[i], sq->seq[i + 1], sq->seq[i + 1]};
      e[i] = pick(n, three_way(n, i, p, st), c, 3, st);
    }
  }
  return ox_set_seq_out(n, 0, e, len - 1, sq->dtype, st);
}

static int m_sequence_at(ox_node *n, wf_status *st) {
  ox_val *sq = seq_in(n, 0, st);
  if (!sq || !OK(st))
    return wfx_code(st);
  if (sq->nseq == 0)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "an empty sequence");
  return out1(n, pick(n, position(n, 1, sq->nseq, st), sq->seq, sq->nseq, st),
              st);
}

static int m_sequence_length(ox_node *n, wf_status *st) {
  ox_val *sq = seq_in(n, 0, st);
  wf_shape sc = {.rank = 0};
  if (!sq)
    return wfx_code(st);
  wf_tensor *t = wfx_host->tensor_new(WF_INT64, &sc, st);
  if (t)
    *(int64_t *)wfx_host->tensor_data(t) = sq->nseq;
  return ox_set_const_out(n, 0, t, st);
}

static int m_concat_from_sequence(ox_node *n, wf_status *st) {
  ox_val *sq = seq_in(n, 0, st);
  wf_output e[OX_MAX_IO];
  if (!sq)
    return wfx_code(st);
  if (sq->nseq == 0)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "an empty sequence");
  int64_t axis = ox_attr_i(n, "axis", 0);
  int newax = (int)ox_attr_i(n, "new_axis", 0);
  for (int i = 0; i < sq->nseq; i++) {
    e[i] = sq->seq[i];
    if (newax) {
      wf_attr_item a = WFX_ITEM_INT("axis", axis);
      e[i] = ox_add(n, "ExpandDims", &e[i], 1, &a, 1, st);
    }
  }
  if (sq->nseq == 1)
    return out1(n, ox_add1(n, "Identity", e[0], st), st);
  wf_attr_item a = WFX_ITEM_INT("axis", axis);
  return out1(n, ox_add(n, "Concat", e, sq->nseq, &a, 1, st), st);
}

static int m_split_to_sequence(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), e[OX_MAX_IO];
  wf_shape s;
  ox_shape_of(x, &s);
  int axis = norm_axis(n, ox_attr_i(n, "axis", 0), s.rank, st);
  int keep = (int)ox_attr_i(n, "keepdims", 1);
  if (axis < 0 || !OK(st))
    return wfx_code(st);
  int64_t d = s.dims[axis];
  int k = 0;
  if (!has_in(n, 1)) { /* pieces of one along axis */
    if (d < 0 || d > OX_MAX_IO)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "the split dimension must be known and at most %d",
                     OX_MAX_IO);
    for (k = 0; k < d; k++) {
      e[k] = slice_axis(n, x, s.rank, axis, k, k + 1, st);
      if (!keep) {
        int64_t ax = axis;
        wf_attr_item a = item_ints("squeeze_dims", &ax, 1);
        e[k] = ox_add(n, "Squeeze", &e[k], 1, &a, 1, st);
      }
    }
    return ox_set_seq_out(n, 0, e, k, ox_dtype_of(x), st);
  }
  wf_output sp = cast(n, X(n, 1, st), WF_INT64, st);
  wf_shape ss;
  ox_shape_of(sp, &ss);
  if (!OK(st))
    return wfx_code(st);
  if (ss.rank == 0) { /* equal pieces of that size, the last smaller */
    int64_t sz[1];
    if (ox_const_ints(n, 1, sz, 1, st) != 1 || d < 0 || sz[0] < 1)
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "a scalar split must be a positive constant and the "
                     "dimension known");
    for (int64_t at = 0; at < d; at += sz[0]) {
      if (k == OX_MAX_IO)
        return ox_fail(n, st, WF_UNIMPLEMENTED, "more than %d pieces",
                       OX_MAX_IO);
      e[k++] = slice_axis(n, x, s.rank, axis, at, at + sz[0], st);
    }
    return ox_set_seq_out(n, 0, e, k, ox_dtype_of(x), st);
  }
  if (ss.rank != 1 || ss.dims[0] < 0 || ss.dims[0] > OX_MAX_IO)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the number of pieces must be known while importing");
  /* piece i: [sum(split[:i]), sum(split[:i+1])) along axis, at run time */
  int64_t ax = axis, one = 1, zero = 0;
  for (k = 0; k < ss.dims[0]; k++) {
    int64_t kk = k, k1 = k + 1;
    wf_output b = reduce(
        n, "Sum",
        ox_add(n, "Slice",
               (wf_output[]){sp, ox_const_i64(n, &zero, 1, st),
                             ox_const_i64(n, &kk, 1, st)},
               3, NULL, 0, st),
        NULL, 0, 1, st);
    wf_output en = reduce(
        n, "Sum",
        ox_add(n, "Slice",
               (wf_output[]){sp, ox_const_i64(n, &zero, 1, st),
                             ox_const_i64(n, &k1, 1, st)},
               3, NULL, 0, st),
        NULL, 0, 1, st);
    wf_output in[5] = {x, b, en, ox_const_i64(n, &ax, 1, st),
                       ox_const_i64(n, &one, 1, st)};
    e[k] = ox_add(n, "OnnxSlice", in, 5, NULL, 0, st);
  }
  return ox_set_seq_out(n, 0, e, k, ox_dtype_of(x), st);
}

static int m_shrink(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  double lambd = ox_attr_f(n, "lambd", 0.5), bias = ox_attr_f(n, "bias", 0);
  wf_output lo = ox_add2(n, "Less", x, scalar_like(n, x, -lambd, st), st);
  wf_output hi = ox_add2(n, "Greater", x, scalar_like(n, x, lambd, st), st);
  wf_output up = ox_add2(n, "Add", x, scalar_like(n, x, bias, st), st);
  wf_output dn = ox_add2(n, "Sub", x, scalar_like(n, x, bias, st), st);
  wf_output y = ox_add(n, "Select",
                       (wf_output[]){hi, dn, scalar_like(n, x, 0, st)}, 3,
                       NULL, 0, st);
  return out1(n, ox_add(n, "Select", (wf_output[]){lo, up, y}, 3, NULL, 0, st),
              st);
}

/* ---- more of the plugin's own ops ------------------------------------- */

static int m_scatter_elements(ox_node *n, wf_status *st) {
  char red[16];
  ox_attr_s(n, "reduction", "none", red, sizeof red);
  wf_attr_item a[2] = {WFX_ITEM_INT("axis", ox_attr_i(n, "axis", 0)),
                       item_str("reduction", red)};
  wf_output in[3] = {X(n, 0, st), X(n, 1, st), X(n, 2, st)};
  return out1(n, ox_add(n, "OnnxScatterElements", in, 3, a, 2, st), st);
}

static int m_gather_nd(ox_node *n, wf_status *st) {
  wf_attr_item a = WFX_ITEM_INT("batch_dims", ox_attr_i(n, "batch_dims", 0));
  wf_output in[2] = {X(n, 0, st), X(n, 1, st)};
  return out1(n, ox_add(n, "OnnxGatherND", in, 2, &a, 1, st), st);
}

static int m_scatter_nd(ox_node *n, wf_status *st) {
  char red[16];
  ox_attr_s(n, "reduction", "none", red, sizeof red);
  wf_attr_item a = item_str("reduction", red);
  wf_output in[3] = {X(n, 0, st), X(n, 1, st), X(n, 2, st)};
  return out1(n, ox_add(n, "OnnxScatterND", in, 3, &a, 1, st), st);
}

static int m_eye_like(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int32_t dt = ox_attr(n, "dtype") ? ox_dtype((int32_t)ox_attr_i(n, "dtype", 1))
                                   : ox_dtype_of(x);
  if (dt == WF_DTYPE_INVALID || half(dt))
    return ox_fail(n, st, WF_UNIMPLEMENTED, "an output type weft lacks");
  wf_attr_item a[2] = {WFX_ITEM_INT("k", ox_attr_i(n, "k", 0)),
                       WFX_ITEM_DTYPE("dtype", dt)};
  return out1(n, ox_add(n, "OnnxEyeLike", &x, 1, a, 2, st), st);
}

static int m_topk(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), k;
  if (n->im->opset < 10)
    k = ox_const_i64(n, (int64_t[]){ox_attr_i(n, "k", 1)}, 1, st);
  else
    k = reshape(n, cast(n, X(n, 1, st), WF_INT64, st), (int64_t[]){1}, 1, st);
  wf_attr_item a[2] = {WFX_ITEM_INT("axis", ox_attr_i(n, "axis", -1)),
                       WFX_ITEM_INT("largest", ox_attr_i(n, "largest", 1))};
  wf_output y = ox_add(n, "OnnxTopK", (wf_output[]){x, k}, 2, a, 2, st);
  if (ox_set_out(n, 0, y, st))
    return wfx_code(st);
  return n->nout > 1 ? ox_set_out(n, 1, ox_out(y, 1), st) : 0;
}

static int m_lrn(ox_node *n, wf_status *st) {
  wf_attr_item a[4] = {WFX_ITEM_FLOAT("alpha", ox_attr_f(n, "alpha", 1e-4)),
                       WFX_ITEM_FLOAT("beta", ox_attr_f(n, "beta", 0.75)),
                       WFX_ITEM_FLOAT("bias", ox_attr_f(n, "bias", 1.0)),
                       WFX_ITEM_INT("size", ox_attr_i(n, "size", 1))};
  wf_output x = X(n, 0, st);
  return out1(n, ox_add(n, "OnnxLRN", &x, 1, a, 4, st), st);
}

static int m_nonzero(ox_node *n, wf_status *st) {
  return out1(n, ox_add1(n, "OnnxNonZero", X(n, 0, st), st), st);
}

static int m_compress(ox_node *n, wf_status *st) {
  wf_attr_item a[2] = {WFX_ITEM_INT("axis", ox_attr_i(n, "axis", 0)),
                       WFX_ITEM_INT("has_axis", ox_attr(n, "axis") != NULL)};
  wf_output in[2] = {X(n, 0, st), X(n, 1, st)};
  return out1(n, ox_add(n, "OnnxCompress", in, 2, a, 2, st), st);
}

static int m_reverse_sequence(ox_node *n, wf_status *st) {
  wf_attr_item a[2] = {
      WFX_ITEM_INT("time_axis", ox_attr_i(n, "time_axis", 0)),
      WFX_ITEM_INT("batch_axis", ox_attr_i(n, "batch_axis", 1))};
  wf_output in[2] = {X(n, 0, st), cast(n, X(n, 1, st), WF_INT64, st)};
  return out1(n, ox_add(n, "OnnxReverseSequence", in, 2, a, 2, st), st);
}

static int m_einsum(ox_node *n, wf_status *st) {
  char eq[256];
  wf_output in[OX_MAX_IO];
  ox_attr_s(n, "equation", "", eq, sizeof eq);
  for (int i = 0; i < n->nin; i++)
    in[i] = X(n, i, st);
  wf_attr_item a[2] = {item_str("equation", eq), WFX_ITEM_INT("N", n->nin)};
  return out1(n, ox_add(n, "OnnxEinsum", in, n->nin, a, 2, st), st);
}

static int window_op(ox_node *n, const char *kind, wf_status *st) {
  int32_t dt = ox_dtype((int32_t)ox_attr_i(n, "output_datatype", 1));
  if (dt == WF_DTYPE_INVALID || half(dt))
    return ox_fail(n, st, WF_UNIMPLEMENTED, "an output type weft lacks");
  wf_attr_item a[3] = {item_str("kind", kind),
                       WFX_ITEM_INT("periodic", ox_attr_i(n, "periodic", 1)),
                       WFX_ITEM_DTYPE("dtype", dt)};
  wf_output x = X(n, 0, st);
  return out1(n, ox_add(n, "OnnxWindow", &x, 1, a, 3, st), st);
}
static int m_hann(ox_node *n, wf_status *st) {
  return window_op(n, "hann", st);
}
static int m_hamming(ox_node *n, wf_status *st) {
  return window_op(n, "hamming", st);
}
static int m_blackman(ox_node *n, wf_status *st) {
  return window_op(n, "blackman", st);
}

static int m_det(ox_node *n, wf_status *st) {
  return out1(n, ox_add1(n, "OnnxDet", X(n, 0, st), st), st);
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth by Reshape and Transpose;
 * the input's shape must be known. */
static int space_depth(ox_node *n, int to_space, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_shape s;
  ox_shape_of(x, &s);
  int64_t b = ox_attr_i(n, "blocksize", 0);
  char mode[8];
  ox_attr_s(n, "mode", "DCR", mode, sizeof mode);
  if (!OK(st))
    return wfx_code(st);
  if (s.rank != 4 || !wfx_shape_is_known(&s) || b < 1)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "a (N, C, H, W) input of a shape known while importing and "
                   "a positive blocksize");
  int64_t N = s.dims[0], C = s.dims[1], H = s.dims[2], W = s.dims[3];
  if (to_space) {
    if (C % (b * b))
      return ox_fail(n, st, WF_INVALID_ARGUMENT,
                     "blocksize^2 does not divide the channels");
    int64_t c = C / (b * b);
    int crd = strcmp(mode, "CRD") == 0;
    int64_t d6[6] = {N, b, b, c, H, W}, c6[6] = {N, c, b, b, H, W};
    int64_t p_dcr[6] = {0, 3, 4, 1, 5, 2}, p_crd[6] = {0, 1, 4, 2, 5, 3};
    wf_output y = transpose(n, reshape(n, x, crd ? c6 : d6, 6, st),
                            crd ? p_crd : p_dcr, 6, st);
    return out1(n, reshape(n, y, (int64_t[]){N, c, H * b, W * b}, 4, st), st);
  }
  if (H % b || W % b)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "blocksize does not divide the spatial dimensions");
  int64_t d6[6] = {N, C, H / b, b, W / b, b}, p[6] = {0, 3, 5, 1, 2, 4};
  wf_output y = transpose(n, reshape(n, x, d6, 6, st), p, 6, st);
  return out1(n, reshape(n, y, (int64_t[]){N, C * b * b, H / b, W / b}, 4, st),
              st);
}
static int m_depth_to_space(ox_node *n, wf_status *st) {
  return space_depth(n, 1, st);
}
static int m_space_to_depth(ox_node *n, wf_status *st) {
  return space_depth(n, 0, st);
}

static int m_mvn(ox_node *n, wf_status *st) {
  int64_t axes[WF_MAX_RANK] = {0, 2, 3};
  const int64_t *v;
  int k = ox_attr_ints(n, "axes", &v);
  if (k > WF_MAX_RANK)
    return ox_fail(n, st, WF_INVALID_ARGUMENT, "too many axes");
  if (k >= 0)
    memcpy(axes, v, (size_t)k * 8);
  else
    k = 3;
  wf_output x = X(n, 0, st);
  wf_output mean = reduce(n, "Mean", x, axes, k, 1, st);
  wf_output ex2 = reduce(n, "Mean", ox_add2(n, "Mul", x, x, st), axes, k, 1, st);
  wf_output var = ox_add2(n, "Sub", ex2, ox_add2(n, "Mul", mean, mean, st), st);
  wf_output sd = ox_add2(n, "Add", ox_add1(n, "Sqrt", var, st),
                         scalar_like(n, x, 1e-9, st), st);
  return out1(n, ox_add2(n, "Div", ox_add2(n, "Sub", x, mean, st), sd, st),
              st);
}

/* A per-axis quantisation parameter (C,) shaped to broadcast along axis of
 * a rank-r tensor; a scalar stays. */
static wf_output along_axis(ox_node *n, wf_output v, int r, int64_t axis,
                            wf_status *st) {
  if (rank_of(v) != 1 || r < 1)
    return v;
  int a = (int)(axis < 0 ? axis + r : axis);
  int64_t d[WF_MAX_RANK];
  for (int i = 0; i < r; i++)
    d[i] = i == a ? -1 : 1;
  return reshape(n, v, d, r, st);
}

/* round(x / scale) + zero point, saturated to zp's type. */
static wf_output quantize(ox_node *n, wf_output x, wf_output scale,
                          wf_output zp, int32_t qt, wf_status *st) {
  wf_output q = math_fn(n, "round", ox_add2(n, "Div", x, scale, st), st);
  if (zp.node)
    q = ox_add2(n, "Add", q, cast(n, zp, ox_dtype_of(x), st), st);
  double lo = qt == WF_UINT8 ? 0 : -128, hi = qt == WF_UINT8 ? 255 : 127;
  q = clamp(n, q, scalar_like(n, q, lo, st), scalar_like(n, q, hi, st), st);
  return cast(n, q, qt, st);
}

static int m_quantize_linear(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int r = rank_of(x);
  int64_t axis = ox_attr_i(n, "axis", 1);
  wf_output sc = along_axis(n, X(n, 1, st), r, axis, st);
  wf_output zp = has_in(n, 2) ? along_axis(n, X(n, 2, st), r, axis, st)
                              : (wf_output){NULL, 0};
  int32_t qt = zp.node ? ox_dtype_of(zp) : WF_UINT8;
  if (qt != WF_UINT8 && qt != WF_INT8)
    return ox_fail(n, st, WF_UNIMPLEMENTED, "quantising to %s",
                   wfx_dtype_name(qt));
  return out1(n, quantize(n, cast(n, x, ox_dtype_of(sc), st), sc, zp, qt, st),
              st);
}

static int m_dequantize_linear(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  int r = rank_of(x);
  int64_t axis = ox_attr_i(n, "axis", 1);
  wf_output sc = along_axis(n, X(n, 1, st), r, axis, st);
  int32_t ft = ox_dtype_of(sc);
  wf_output y = cast(n, x, ft, st);
  if (has_in(n, 2))
    y = ox_add2(n, "Sub", y,
                cast(n, along_axis(n, X(n, 2, st), r, axis, st), ft, st), st);
  return out1(n, ox_add2(n, "Mul", y, sc, st), st);
}

static int m_dynamic_quantize_linear(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st);
  wf_output zero = scalar_like(n, x, 0, st);
  wf_output mn = ox_add2(n, "Minimum", reduce(n, "Min", x, NULL, 0, 0, st),
                         zero, st);
  wf_output mx = ox_add2(n, "Maximum", reduce(n, "Max", x, NULL, 0, 0, st),
                         zero, st);
  wf_output sc = ox_add2(n, "Div", ox_add2(n, "Sub", mx, mn, st),
                         scalar_like(n, x, 255, st), st);
  wf_output zpf = clamp(
      n, math_fn(n, "round", ox_add2(n, "Sub", zero,
                                     ox_add2(n, "Div", mn, sc, st), st), st),
      zero, scalar_like(n, x, 255, st), st);
  wf_output zp = cast(n, zpf, WF_UINT8, st);
  if (ox_set_out(n, 0, quantize(n, x, sc, zp, WF_UINT8, st), st) ||
      (n->nout > 1 && ox_set_out(n, 1, sc, st)) ||
      (n->nout > 2 && ox_set_out(n, 2, zp, st)))
    return wfx_code(st);
  return 0;
}

/* x - zp in int32 (zp per row of a, per column of b: shaped by the caller). */
static wf_output minus_zp(ox_node *n, wf_output x, wf_output zp,
                          wf_status *st) {
  x = cast(n, x, WF_INT32, st);
  return zp.node ? ox_add2(n, "Sub", x, cast(n, zp, WF_INT32, st), st) : x;
}

static int m_matmul_integer(ox_node *n, wf_status *st) {
  wf_output a = X(n, 0, st), b = X(n, 1, st);
  wf_output za = has_in(n, 2) ? X(n, 2, st) : (wf_output){NULL, 0};
  wf_output zb = has_in(n, 3) ? X(n, 3, st) : (wf_output){NULL, 0};
  if (za.node && rank_of(za) == 1) /* per row of a */
    za = reshape(n, za, (int64_t[]){-1, 1}, 2, st);
  a = minus_zp(n, a, za, st);
  b = minus_zp(n, b, zb, st);
  int ra = rank_of(a), rb = rank_of(b);
  if (!OK(st))
    return wfx_code(st);
  return out1(n,
              ra == 2 && rb == 2 ? ox_add2(n, "MatMul", a, b, st)
                                 : ox_add2(n, "BatchMatMul", a, b, st),
              st);
}

/* Conv on x - x_zp and w - w_zp in float32 (exact for 8-bit values). */
static int m_conv_integer(ox_node *n, wf_status *st) {
  wf_output x = cast(n, minus_zp(n, X(n, 0, st),
                                 has_in(n, 2) ? X(n, 2, st)
                                              : (wf_output){NULL, 0},
                                 st),
                     WF_FLOAT32, st);
  wf_output w = cast(n, X(n, 1, st), WF_FLOAT32, st);
  if (has_in(n, 3))
    w = ox_add2(n, "Sub", w,
                along_axis(n, cast(n, X(n, 3, st), WF_FLOAT32, st), 4, 0, st),
                st);
  wf_shape xs, ws;
  ox_shape_of(x, &xs);
  ox_shape_of(w, &ws);
  if (!OK(st))
    return wfx_code(st);
  if (!wfx_shape_is_known(&ws) || ws.rank < 3)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the filter's shape must be known while importing");
  int nsp = ws.rank - 2;
  int64_t kernel[WF_MAX_RANK];
  for (int i = 0; i < nsp; i++)
    kernel[i] = ws.dims[2 + i];
  win wn;
  if (window(n, &xs, kernel, nsp, 0, &wn, st))
    return wfx_code(st);
  int64_t buf[4 * WF_MAX_RANK];
  wf_attr_item a[4];
  int na = win_items(&wn, buf, a);
  a[na++] = WFX_ITEM_INT("group", ox_attr_i(n, "group", 1));
  wf_output y = ox_add(n, "OnnxConv",
                       (wf_output[]){x, w, empty(n, WF_FLOAT32, st)}, 3, a, na,
                       st);
  return out1(n, cast(n, y, WF_INT32, st), st);
}

static int m_qlinear_matmul(ox_node *n, wf_status *st) {
  /* dequantise a and b, multiply in float, quantise the product */
  wf_output a = X(n, 0, st), as = X(n, 1, st), az = X(n, 2, st);
  wf_output b = X(n, 3, st), bs = X(n, 4, st), bz = X(n, 5, st);
  wf_output ys = X(n, 6, st), yz = X(n, 7, st);
  if (!OK(st))
    return wfx_code(st);
  int32_t qt = ox_dtype_of(yz);
  if (rank_of(az) == 1)
    az = reshape(n, az, (int64_t[]){-1, 1}, 2, st),
    as = reshape(n, as, (int64_t[]){-1, 1}, 2, st);
  wf_output fa = ox_add2(n, "Mul",
                         cast(n, minus_zp(n, a, az, st), WF_FLOAT32, st), as, st);
  wf_output fb = ox_add2(n, "Mul",
                         cast(n, minus_zp(n, b, bz, st), WF_FLOAT32, st), bs, st);
  int ra = rank_of(fa), rb = rank_of(fb);
  wf_output p = ra == 2 && rb == 2 ? ox_add2(n, "MatMul", fa, fb, st)
                                   : ox_add2(n, "BatchMatMul", fa, fb, st);
  return out1(n, quantize(n, p, ys, yz, qt, st), st);
}

static int m_bit_shift(ox_node *n, wf_status *st) {
  char d[8];
  ox_attr_s(n, "direction", "", d, sizeof d);
  wf_output x = X(n, 0, st), y = X(n, 1, st);
  if (!OK(st))
    return wfx_code(st);
  wf_output p = ox_add2(n, "Pow", scalar_like(n, x, 2, st), y, st);
  if (strcmp(d, "LEFT") == 0)
    return out1(n, ox_add2(n, "Mul", x, p, st), st);
  if (strcmp(d, "RIGHT") == 0)
    return out1(n, ox_add2(n, "Div", x, p, st), st);
  return ox_fail(n, st, WF_INVALID_ARGUMENT, "direction '%s'", d);
}

static int rnn(ox_node *n, const char *cell, wf_status *st) {
  char dir[16];
  ox_attr_s(n, "direction", "forward", dir, sizeof dir);
  int64_t hs = ox_attr_i(n, "hidden_size", 0);
  const Onnx__AttributeProto *acts = ox_attr(n, "activations");
  if (ox_attr(n, "activation_alpha") || ox_attr(n, "activation_beta") ||
      ox_attr_i(n, "input_forget", 0))
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "activation_alpha/beta and input_forget are not "
                   "supported");
  char buf[8][32];
  const char *names[8];
  int na = 0;
  for (size_t i = 0; acts && i < acts->n_strings && na < 8; i++, na++) {
    snprintf(buf[na], sizeof buf[0], "%.*s", (int)acts->strings[i].len,
             (const char *)acts->strings[i].data);
    names[na] = buf[na];
  }
  wf_output x = X(n, 0, st);
  int32_t dt = ox_dtype_of(x);
  wf_output in[8] = {x, X(n, 1, st), X(n, 2, st)};
  in[3] = has_in(n, 3) ? X(n, 3, st) : empty(n, dt, st);
  in[4] = has_in(n, 4) ? cast(n, X(n, 4, st), WF_INT32, st)
                       : empty(n, WF_INT32, st);
  in[5] = has_in(n, 5) ? X(n, 5, st) : empty(n, dt, st);
  in[6] = strcmp(cell, "lstm") == 0 && has_in(n, 6) ? X(n, 6, st)
                                                    : empty(n, dt, st);
  in[7] = strcmp(cell, "lstm") == 0 && has_in(n, 7) ? X(n, 7, st)
                                                    : empty(n, dt, st);
  wf_attr_item a[7] = {
      item_str("cell", cell),
      item_str("direction", dir),
      {"activations",
       {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = na,
        .u.strings = names}},
      WFX_ITEM_INT("hidden_size", hs),
      WFX_ITEM_INT("layout", ox_attr_i(n, "layout", 0)),
      WFX_ITEM_INT("linear_before_reset",
                   ox_attr_i(n, "linear_before_reset", 0)),
      WFX_ITEM_FLOAT("clip", ox_attr_f(n, "clip", 0))};
  wf_output y = ox_add(n, "OnnxRNN", in, 8, a, 7, st);
  for (int k = 0; k < n->nout && k < 3; k++)
    if (ox_set_out(n, k, ox_out(y, k), st))
      return wfx_code(st);
  return wfx_code(st);
}
static int m_rnn(ox_node *n, wf_status *st) { return rnn(n, "rnn", st); }

/* StringNormalizer: ops-string's op of the same name and attributes. */
static int m_string_normalizer(ox_node *n, wf_status *st) {
  char action[16], locale[64];
  const Onnx__AttributeProto *sw = ox_attr(n, "stopwords");
  size_t nsw = sw ? sw->n_strings : 0;
  char **words = calloc(nsw ? nsw : 1, sizeof *words);
  if (!words)
    return ox_fail(n, st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < nsw; i++) {
    const ProtobufCBinaryData *w = &sw->strings[i];
    if (w->len && memchr(w->data, '\0', w->len)) {
      ox_fail(n, st, WF_UNIMPLEMENTED, "stopword %zu holds a NUL byte", i);
      goto done;
    }
    if (!(words[i] = malloc(w->len + 1))) {
      ox_fail(n, st, WF_RESOURCE_EXHAUSTED, "out of memory");
      goto done;
    }
    if (w->len)
      memcpy(words[i], w->data, w->len);
    words[i][w->len] = '\0';
  }
  ox_attr_s(n, "case_change_action", "NONE", action, sizeof action);
  ox_attr_s(n, "locale", "", locale, sizeof locale);
  wf_attr_item a[4] = {
      item_str("case_change_action", action),
      WFX_ITEM_INT("is_case_sensitive", ox_attr_i(n, "is_case_sensitive", 0)),
      {"stopwords",
       {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = (int64_t)nsw,
        .u.strings = (const char *const *)words}},
      item_str("locale", locale)};
  wf_output x = X(n, 0, st);
  out1(n, ox_add(n, "StringNormalizer", &x, 1, a, 4, st), st);
done:
  for (size_t i = 0; i < nsw; i++)
    free(words[i]);
  free(words);
  return wfx_code(st);
}
static int m_gru(ox_node *n, wf_status *st) { return rnn(n, "gru", st); }
static int m_lstm(ox_node *n, wf_status *st) { return rnn(n, "lstm", st); }

static int m_max_unpool(ox_node *n, wf_status *st) {
  wf_output x = X(n, 0, st), idx = cast(n, X(n, 1, st), WF_INT64, st), shp;
  {  /* the default: (in - 1) stride - pads + kernel per spatial dim */
    wf_shape xs;
    ox_shape_of(x, &xs);
    const int64_t *kv, *sv, *pv;
    int nk = ox_attr_ints(n, "kernel_shape", &kv);
    int ns = ox_attr_ints(n, "strides", &sv);
    int np = ox_attr_ints(n, "pads", &pv);
    if (!OK(st))
      return wfx_code(st);
    if (!wfx_shape_is_known(&xs) || nk != xs.rank - 2 ||
        (ns >= 0 && ns != nk) || (np >= 0 && np != 2 * nk))
      return ox_fail(n, st, WF_UNIMPLEMENTED,
                     "without output_shape the input's shape must be known");
    int64_t d[WF_MAX_RANK] = {xs.dims[0], xs.dims[1]};
    for (int i = 0; i < nk; i++)
      d[2 + i] = (xs.dims[2 + i] - 1) * (ns >= 0 ? sv[i] : 1) -
                 (np >= 0 ? pv[i] + pv[i + nk] : 0) + kv[i];
    shp = ox_const_i64(n, d, xs.rank, st);
  }
  wf_output out = has_in(n, 2) ? cast(n, X(n, 2, st), WF_INT64, st) : shp;
  return out1(n, ox_add(n, "OnnxMaxUnpool", (wf_output[]){x, idx, out, shp},
                        4, NULL, 0, st),
              st);
}

static int m_qlinear_conv(ox_node *n, wf_status *st) {
  /* dequantise x and w, convolve in float with the bias (int32, in the
   * product's scale), quantise */
  wf_output x = X(n, 0, st), xs = X(n, 1, st), xz = X(n, 2, st);
  wf_output w = X(n, 3, st), ws = X(n, 4, st), wz = X(n, 5, st);
  wf_output ys = X(n, 6, st), yz = X(n, 7, st);
  if (!OK(st))
    return wfx_code(st);
  wf_output fx = ox_add2(n, "Mul", cast(n, minus_zp(n, x, xz, st),
                                        WF_FLOAT32, st), xs, st);
  wf_output fw = ox_add2(
      n, "Mul",
      ox_add2(n, "Sub", cast(n, w, WF_FLOAT32, st),
              along_axis(n, cast(n, wz, WF_FLOAT32, st), 4, 0, st), st),
      along_axis(n, ws, 4, 0, st), st);
  wf_shape xsh, wsh;
  ox_shape_of(fx, &xsh);
  ox_shape_of(fw, &wsh);
  if (!OK(st))
    return wfx_code(st);
  if (!wfx_shape_is_known(&wsh) || wsh.rank < 3)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "the filter's shape must be known while importing");
  int nsp = wsh.rank - 2;
  int64_t kernel[WF_MAX_RANK];
  for (int i = 0; i < nsp; i++)
    kernel[i] = wsh.dims[2 + i];
  win wn;
  if (window(n, &xsh, kernel, nsp, 0, &wn, st))
    return wfx_code(st);
  int64_t buf[4 * WF_MAX_RANK];
  wf_attr_item a[4];
  int na = win_items(&wn, buf, a);
  a[na++] = WFX_ITEM_INT("group", ox_attr_i(n, "group", 1));
  wf_output b = empty(n, WF_FLOAT32, st);
  if (has_in(n, 8)) /* bias in units of x_scale * w_scale */
    b = ox_add2(n, "Mul", cast(n, X(n, 8, st), WF_FLOAT32, st),
                ox_add2(n, "Mul", xs, ws, st), st);
  wf_output y = ox_add(n, "OnnxConv", (wf_output[]){fx, fw, b}, 3, a, na, st);
  return out1(n, quantize(n, y, ys, yz, ox_dtype_of(yz), st), st);
}

static int m_nms(ox_node *n, wf_status *st) {
  wf_output b = X(n, 0, st);
  int32_t dt = ox_dtype_of(b);
  wf_output in[5] = {
      b, X(n, 1, st),
      has_in(n, 2) ? reshape(n, cast(n, X(n, 2, st), WF_INT64, st),
                             (int64_t[]){-1}, 1, st)
                   : empty(n, WF_INT64, st),
      has_in(n, 3) ? reshape(n, cast(n, X(n, 3, st), dt, st), (int64_t[]){-1},
                             1, st)
                   : empty(n, dt, st),
      has_in(n, 4) ? reshape(n, cast(n, X(n, 4, st), dt, st), (int64_t[]){-1},
                             1, st)
                   : empty(n, dt, st)};
  wf_attr_item a =
      WFX_ITEM_INT("center_point_box", ox_attr_i(n, "center_point_box", 0));
  return out1(n, ox_add(n, "OnnxNMS", in, 5, &a, 1, st), st);
}

static int m_grid_sample(ox_node *n, wf_status *st) {
  char mode[16], pad[16];
  ox_attr_s(n, "mode", "bilinear", mode, sizeof mode);
  ox_attr_s(n, "padding_mode", "zeros", pad, sizeof pad);
  wf_attr_item a[3] = {item_str("mode", mode), item_str("padding_mode", pad),
                       WFX_ITEM_INT("align_corners",
                                    ox_attr_i(n, "align_corners", 0))};
  wf_output in[2] = {X(n, 0, st), X(n, 1, st)};
  return out1(n, ox_add(n, "OnnxGridSample", in, 2, a, 3, st), st);
}

static int m_unique(ox_node *n, wf_status *st) {
  wf_attr_item a[3] = {WFX_ITEM_INT("axis", ox_attr_i(n, "axis", 0)),
                       WFX_ITEM_INT("has_axis", ox_attr(n, "axis") != NULL),
                       WFX_ITEM_INT("sorted", ox_attr_i(n, "sorted", 1))};
  wf_output x = X(n, 0, st);
  wf_output y = ox_add(n, "OnnxUnique", &x, 1, a, 3, st);
  for (int k = 0; k < n->nout && k < 4; k++)
    if (ox_set_out(n, k, ox_out(y, k), st))
      return wfx_code(st);
  return wfx_code(st);
}

static int m_tfidf(ox_node *n, wf_status *st) {
  char mode[8];
  ox_attr_s(n, "mode", "TF", mode, sizeof mode);
  const int64_t *cv, *iv, *pv;
  const float *wv;
  int nc = ox_attr_ints(n, "ngram_counts", &cv);
  int ni = ox_attr_ints(n, "ngram_indexes", &iv);
  int np = ox_attr_ints(n, "pool_int64s", &pv);
  int nw = ox_attr_floats(n, "weights", &wv);
  if (nc < 0 || ni < 0 || np < 0)
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "ngram_counts, ngram_indexes and pool_int64s are needed "
                   "(string pools are not supported)");
  double w[256];
  if (nw > 256)
    return ox_fail(n, st, WF_UNIMPLEMENTED, "more than 256 weights");
  for (int i = 0; i < nw; i++)
    w[i] = wv[i];
  wf_attr_item a[8] = {
      item_str("mode", mode),
      {"weights",
       {.type = WF_ATTR_LIST | WF_ATTR_FLOAT, .count = nw > 0 ? nw : 0,
        .u.floats = w}},
      item_ints("ngram_counts", cv, nc),
      item_ints("ngram_indexes", iv, ni),
      item_ints("pool_int64s", pv, np),
      WFX_ITEM_INT("min_gram_length", ox_attr_i(n, "min_gram_length", 1)),
      WFX_ITEM_INT("max_gram_length", ox_attr_i(n, "max_gram_length", 1)),
      WFX_ITEM_INT("max_skip_count", ox_attr_i(n, "max_skip_count", 0))};
  wf_output x = X(n, 0, st);
  return out1(n, ox_add(n, "OnnxTfIdf", &x, 1, a, 8, st), st);
}

static int m_dft(ox_node *n, wf_status *st) {
  wf_attr_item a[3] = {WFX_ITEM_INT("axis", ox_attr_i(n, "axis", 1)),
                       WFX_ITEM_INT("inverse", ox_attr_i(n, "inverse", 0)),
                       WFX_ITEM_INT("onesided", ox_attr_i(n, "onesided", 0))};
  wf_output in[2] = {X(n, 0, st),
                     has_in(n, 1) ? reshape(n, cast(n, X(n, 1, st), WF_INT64,
                                                     st),
                                            NULL, 0, st)
                                  : empty(n, WF_INT64, st)};
  return out1(n, ox_add(n, "OnnxDFT", in, 2, a, 3, st), st);
}

/* ---- the table --------------------------------------------------------- */

typedef struct mapping {
  const char *op;
  int since; /* first opset whose semantics the builder follows */
  ox_build_fn *fn;
} mapping;

static const mapping table[] = {
    {"Abs", 1, m_abs},
    {"Acos", 7, m_acos},
    {"Acosh", 9, m_acosh},
    {"Add", 1, m_add},
    {"And", 1, m_and},
    {"ArgMax", 1, m_argmax},
    {"ArgMin", 1, m_argmin},
    {"Asin", 7, m_asin},
    {"Asinh", 9, m_asinh},
    {"Atan", 7, m_atan},
    {"Atanh", 9, m_atanh},
    {"AveragePool", 1, m_avg_pool},
    {"BatchNormalization", 1, m_batch_norm},
    {"BitShift", 11, m_bit_shift},
    {"BlackmanWindow", 17, m_blackman},
    {"Cast", 1, m_cast},
    {"CastLike", 15, m_cast_like},
    {"Ceil", 1, m_ceil},
    {"Celu", 12, m_celu},
    {"Compress", 9, m_compress},
    {"Clip", 1, m_clip},
    {"Concat", 1, m_concat},
    {"ConcatFromSequence", 11, m_concat_from_sequence},
    {"Constant", 1, m_constant},
    {"ConstantOfShape", 9, m_constant_of_shape},
    {"Conv", 1, m_conv},
    {"ConvTranspose", 1, m_conv_transpose},
    {"ConvInteger", 10, m_conv_integer},
    {"Cos", 7, m_cos},
    {"Cosh", 9, m_cosh},
    {"CumSum", 11, m_cumsum},
    {"DepthToSpace", 1, m_depth_to_space},
    {"DequantizeLinear", 10, m_dequantize_linear},
    {"Det", 11, m_det},
    {"DFT", 17, m_dft},
    {"Div", 1, m_div},
    {"Dropout", 1, m_dropout},
    {"DynamicQuantizeLinear", 11, m_dynamic_quantize_linear},
    {"Einsum", 12, m_einsum},
    {"Elu", 1, m_elu},
    {"Equal", 1, m_equal},
    {"Erf", 9, m_erf},
    {"Exp", 1, m_exp},
    {"Expand", 8, m_expand},
    {"EyeLike", 9, m_eye_like},
    {"Flatten", 1, m_flatten},
    {"Floor", 1, m_floor},
    {"Gather", 1, m_gather},
    {"GatherElements", 11, m_gather_elements},
    {"GatherND", 11, m_gather_nd},
    {"Gemm", 1, m_gemm},
    {"GlobalAveragePool", 1, m_global_avg_pool},
    {"GlobalMaxPool", 1, m_global_max_pool},
    {"GRU", 1, m_gru},
    {"Greater", 1, m_greater},
    {"GridSample", 16, m_grid_sample},
    {"HammingWindow", 17, m_hamming},
    {"HannWindow", 17, m_hann},
    {"GreaterOrEqual", 12, m_greater_equal},
    {"HardSigmoid", 1, m_hard_sigmoid},
    {"Hardmax", 1, m_hardmax},
    {"HardSwish", 14, m_hard_swish},
    {"Identity", 1, m_identity},
    {"InstanceNormalization", 1, m_instance_norm},
    {"IsInf", 10, m_isinf},
    {"IsNaN", 9, m_isnan},
    {"LayerNormalization", 17, m_layer_norm},
    {"LeakyRelu", 1, m_leaky_relu},
    {"Less", 1, m_less},
    {"LessOrEqual", 12, m_less_equal},
    {"Log", 1, m_log},
    {"LogSoftmax", 1, m_log_softmax},
    {"LpPool", 2, m_lp_pool},
    {"LRN", 1, m_lrn},
    {"LSTM", 1, m_lstm},
    {"MatMul", 1, m_matmul},
    {"MatMulInteger", 10, m_matmul_integer},
    {"Max", 1, m_max},
    {"MaxPool", 1, m_max_pool},
    {"MaxUnpool", 9, m_max_unpool},
    {"Mean", 1, m_mean},
    {"MeanVarianceNormalization", 9, m_mvn},
    {"Min", 1, m_min},
    {"Mish", 18, m_mish},
    {"Mod", 10, m_mod},
    {"Mul", 1, m_mul},
    {"Neg", 1, m_neg},
    {"NonMaxSuppression", 10, m_nms},
    {"NegativeLogLikelihoodLoss", 12, m_nll_loss},
    {"NonZero", 9, m_nonzero},
    {"Not", 1, m_not},
    {"OneHot", 9, m_one_hot},
    {"Or", 1, m_or},
    {"Pad", 1, m_pad},
    {"Pow", 1, m_pow},
    {"RNN", 1, m_rnn},
    {"PRelu", 1, m_prelu},
    {"QLinearConv", 10, m_qlinear_conv},
    {"QLinearMatMul", 10, m_qlinear_matmul},
    {"QuantizeLinear", 10, m_quantize_linear},
    {"Range", 11, m_range},
    {"Reciprocal", 1, m_reciprocal},
    {"ReduceL1", 1, m_reduce_l1},
    {"ReduceL2", 1, m_reduce_l2},
    {"ReduceLogSum", 1, m_reduce_log_sum},
    {"ReduceLogSumExp", 1, m_reduce_log_sum_exp},
    {"ReduceMax", 1, m_reduce_max},
    {"ReduceMean", 1, m_reduce_mean},
    {"ReduceMin", 1, m_reduce_min},
    {"ReduceProd", 1, m_reduce_prod},
    {"ReduceSum", 1, m_reduce_sum},
    {"ReduceSumSquare", 1, m_reduce_sum_square},
    {"Relu", 1, m_relu},
    {"Reshape", 1, m_reshape},
    {"Resize", 10, m_resize},
    {"ReverseSequence", 10, m_reverse_sequence},
    {"Round", 11, m_round},
    {"Scatter", 9, m_scatter_elements},
    {"ScatterElements", 11, m_scatter_elements},
    {"ScatterND", 11, m_scatter_nd},
    {"Selu", 1, m_selu},
    {"SequenceAt", 11, m_sequence_at},
    {"SequenceConstruct", 11, m_sequence_construct},
    {"SequenceEmpty", 11, m_sequence_empty},
    {"SequenceErase", 11, m_sequence_erase},
    {"SequenceInsert", 11, m_sequence_insert},
    {"SequenceLength", 11, m_sequence_length},
    {"Shape", 1, m_shape},
    {"Shrink", 9, m_shrink},
    {"Sigmoid", 1, m_sigmoid},
    {"Sign", 9, m_sign},
    {"Sin", 7, m_sin},
    {"Sinh", 9, m_sinh},
    {"Size", 1, m_size},
    {"Slice", 1, m_slice},
    {"Softmax", 1, m_softmax},
    {"SoftmaxCrossEntropyLoss", 12, m_sce_loss},
    {"Softplus", 1, m_softplus},
    {"Softsign", 1, m_softsign},
    {"SpaceToDepth", 1, m_space_to_depth},
    {"Split", 1, m_split},
    {"SplitToSequence", 11, m_split_to_sequence},
    {"Sqrt", 1, m_sqrt},
    {"Squeeze", 1, m_squeeze},
    {"StringNormalizer", 10, m_string_normalizer},
    {"Sub", 1, m_sub},
    {"Sum", 1, m_sum},
    {"Tan", 7, m_tan},
    {"Tanh", 1, m_tanh},
    {"TfIdfVectorizer", 9, m_tfidf},
    {"ThresholdedRelu", 10, m_thresholded_relu},
    {"Tile", 6, m_tile},
    {"TopK", 1, m_topk},
    {"Transpose", 1, m_transpose},
    {"Trilu", 14, m_trilu},
    {"Unique", 11, m_unique},
    {"Unsqueeze", 1, m_unsqueeze},
    {"Upsample", 7, m_upsample},
    {"Where", 9, m_where},
    {"Xor", 1, m_xor},
};

ox_build_fn *ox_mapping(const char *op_type, int opset) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].op, op_type) == 0)
      return opset >= table[i].since ? table[i].fn : NULL;
  return NULL;
}
