/* tests/ops/test_math_grad.c — the gradients of the ops_math plugin:
 * every differentiable op against central finite differences through the
 * shared checker (gradcheck.h; float64, tolerances stated there; the
 * float32 cases cast in and out and use step 1e-3, rtol 2e-3, atol 1e-4),
 * including broadcasting, reductions with and without keep_dims and
 * negative axes, every MatMul transpose, BatchMatMul with broadcast batch
 * dims, unknown static dims, and the second-order gradients of the linear
 * backward ops. Points where the op has a kink are avoided by how inputs
 * are drawn. Reference values check what finite differences cannot: ties
 * of Max/Min, Prod at zeros, Pow at a zero base. Also: which ops are
 * registered as not differentiable, where SumToLike is and is not added,
 * and self-tests of the checker (a wrong and a sparse gradient from the
 * gradcheck_ops test plugin). The fused backward ops' kernels are checked
 * against reference values in test_math.c. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "gradcheck.h"

#define MATH_DIR TEST_BUILDDIR "/plugins/ops/math/.libs"
#define ARRAY_DIR TEST_BUILDDIR "/plugins/ops/array/.libs"
#define CPU_DIR TEST_BUILDDIR "/plugins/devices/cpu/.libs"
#define GC_OPS TEST_BUILDDIR "/tests/ops/.libs/gradcheck_ops.so"

static wf_runtime *rt;

/* Loads ops_math, ops_array, the cpu device and the checker's test plugin,
 * strictly. */
static int runtime_setup(void **state) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();

  if (!st || !cfg || wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths",
                    MATH_DIR ", " ARRAY_DIR ", " CPU_DIR ", " GC_OPS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st))
    goto fail;
  rt = wf_runtime_new(cfg, st);
  if (!rt)
    goto fail;
  wf_config_free(cfg);
  wf_status_free(st);
  return 0;

fail:
  fprintf(stderr, "cannot load the plugins: %s\n",
          st ? wf_status_message(st) : "out of memory");
  wf_config_free(cfg);
  wf_status_free(st);
  return -1;
}

static int runtime_teardown(void **state) {
  wf_runtime_free(rt);
  rt = NULL;
  return 0;
}

/* ---- builders ---------------------------------------------------------- */

/* One op on the placeholders. attrs end at the first entry without a name.
 * f32: the op runs in float32 (inputs cast from float64, y cast back). */
typedef struct op_spec {
  const char *op;
  int n;
  int f32;
  gc_attr attrs[4];
} op_spec;

static int cast_to(wf_graph *g, wf_output x, wf_dtype dt, wf_output *y,
                   wf_status *st) {
  gc_attr a[] = {{"DstT", GC_DTYPE(dt)}, {NULL}};

  return gc_op(g, "Cast", &x, 1, a, y, st);
}

static int build_op(wf_graph *g, const wf_output *x, wf_output *y,
                    const void *arg, wf_status *st) {
  const op_spec *o = arg;
  wf_output in[GC_MAX_INPUTS], z;

  for (int i = 0; i < o->n; i++) {
    in[i] = x[i];
    if (o->f32 && cast_to(g, x[i], WF_FLOAT32, &in[i], st))
      return wf_status_code(st);
  }
  if (gc_op(g, o->op, in, o->n, o->attrs, &z, st))
    return wf_status_code(st);
  if (o->f32)
    return cast_to(g, z, WF_FLOAT64, y, st);
  *y = z;
  return 0;
}

/* AddN of all n inputs (one list argument). */
static int build_add_n(wf_graph *g, const wf_output *x, wf_output *y,
                       const void *arg, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "AddN", NULL);
  wf_node *n;

  wf_node_desc_add_input_list(d, x, *(const int *)arg);
  if (!(n = wf_node_desc_finish(d, st)))
    return wf_status_code(st);
  *y = (wf_output){n, 0};
  return 0;
}

/* Select(c, x0, x1) with c a bool Const. */
typedef struct select_spec {
  int rank;
  int64_t dims[2];
  uint8_t values[8];
} select_spec;

static int build_select(wf_graph *g, const wf_output *x, wf_output *y,
                        const void *arg, wf_status *st) {
  const select_spec *s = arg;
  wf_output in[3] = {{NULL, 0}, x[0], x[1]};

  if (gc_const(g, WF_BOOL, s->dims, s->rank, s->values, &in[0], st))
    return wf_status_code(st);
  return gc_op(g, "Select", in, 3, NULL, y, st);
}

/* x cast through dtype and back to float64. */
static int build_cast_chain(wf_graph *g, const wf_output *x, wf_output *y,
                            const void *arg, wf_status *st) {
  wf_output mid;

  if (cast_to(g, x[0], *(const wf_dtype *)arg, &mid, st))
    return wf_status_code(st);
  return cast_to(g, mid, WF_FLOAT64, y, st);
}

/* Select(cmp(x0, x1), x0, x1): the comparison lies on the path. */
static int build_compare_select(wf_graph *g, const wf_output *x, wf_output *y,
                                const void *arg, wf_status *st) {
  wf_output in[3] = {{NULL, 0}, x[0], x[1]};

  if (gc_op(g, (const char *)arg, x, 2, NULL, &in[0], st))
    return wf_status_code(st);
  return gc_op(g, "Select", in, 3, NULL, y, st);
}

/* x * float64(ArgMax(x, axis 0)): the index lies on the path. */
static int build_argmax_scale(wf_graph *g, const wf_output *x, wf_output *y,
                              const void *arg, wf_status *st) {
  gc_attr a[] = {{"axis", GC_INT(0)}, {NULL}};
  wf_output in[2] = {x[0], {NULL, 0}}, idx;

  if (gc_op(g, "ArgMax", x, 1, a, &idx, st) ||
      cast_to(g, idx, WF_FLOAT64, &in[1], st))
    return wf_status_code(st);
  return gc_op(g, "Mul", in, 2, NULL, y, st);
}

/* y = d/dx0 Sum((x0 + x1)^3): the gradient of a gradient, through
 * broadcasting Add (SumToLike's gradient), Mul and Sum (SumGrad's). */
static int build_double_backward(wf_graph *g, const wf_output *x,
                                 wf_output *y, const void *arg,
                                 wf_status *st) {
  wf_output t, in[2], sq, cube, s;
  wf_gradient dx;

  if (gc_op(g, "Add", x, 2, NULL, &t, st))
    return wf_status_code(st);
  in[0] = t, in[1] = t;
  if (gc_op(g, "Mul", in, 2, NULL, &sq, st))
    return wf_status_code(st);
  in[0] = sq;
  if (gc_op(g, "Mul", in, 2, NULL, &cube, st) ||
      gc_op(g, "Sum", &cube, 1, NULL, &s, st) ||
      wf_graph_add_gradients(g, &s, 1, NULL, x, 1, &dx, st))
    return wf_status_code(st);
  *y = dx.dense;
  return 0;
}

/* y = d/dx Sum(op(x)) for a one-input op: its second derivative, through
 * the op's gradient function and then its backward op's. */
static int build_unary_grad(wf_graph *g, const wf_output *x, wf_output *y,
                            const void *arg, wf_status *st) {
  wf_output z, s;
  wf_gradient dx;

  if (gc_op(g, (const char *)arg, x, 1, NULL, &z, st) ||
      gc_op(g, "Sum", &z, 1, NULL, &s, st) ||
      wf_graph_add_gradients(g, &s, 1, NULL, x, 1, &dx, st))
    return wf_status_code(st);
  *y = dx.dense;
  return 0;
}

/* ---- input fills ------------------------------------------------------- */

/* k + offset + u with k an integer in [-2, 1] and |u| < 0.1: inputs filled
 * with offsets 0.25 and 0.75 are never closer than 0.3 (no ties for
 * Maximum, Minimum and the comparisons). */
static void fill_offset(double *x, int64_t n, gc_rng *r, const void *arg) {
  double off = *(const double *)arg;

  for (int64_t k = 0; k < n; k++)
    x[k] = floor(gc_uniform(r, -2, 2)) + off + gc_uniform(r, -0.1, 0.1);
}
static const double quarter = 0.25, three_quarters = 0.75;

/* |x| in [0.5, 1.5) with random signs, and exact zeros at flat indices 0,
 * 1 and 4: for a (2, 3, 4) input reduced over axis 1, group (0, :, 0)
 * holds two zeros and group (0, :, 1) one. */
static void fill_with_zeros(double *x, int64_t n, gc_rng *r,
                            const void *arg) {
  for (int64_t k = 0; k < n; k++)
    x[k] = gc_uniform(r, 0.5, 1.5) * (gc_uniform(r, 0, 1) < 0.5 ? -1 : 1);
  for (int64_t k = 0; k < n && k < 5; k++)
    if (k == 0 || k == 1 || k == 4)
      x[k] = 0;
}

/* ---- the finite-difference cases --------------------------------------- */

#define NDIMS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* An input of that shape drawn from [lo, hi); X0: a scalar. */
#define X(lo_, hi_, ...)                                                       \
  {.lo = (lo_), .hi = (hi_), .rank = NDIMS(__VA_ARGS__), .dims = {__VA_ARGS__}}
#define X0(lo_, hi_) {.lo = (lo_), .hi = (hi_), .rank = 0}
/* The same, kept at |x| >= m. */
#define XA(m, lo_, hi_, ...)                                                   \
  {.lo = (lo_), .hi = (hi_), .min_abs = (m), .rank = NDIMS(__VA_ARGS__),       \
   .dims = {__VA_ARGS__}}
#define XA0(m, lo_, hi_) {.lo = (lo_), .hi = (hi_), .min_abs = (m), .rank = 0}
/* Values at least `gap` apart (Max, Min, ArgMax). */
#define XG(gap, ...)                                                           \
  {.lo = -3, .hi = 3, .min_gap = (gap), .rank = NDIMS(__VA_ARGS__),            \
   .dims = {__VA_ARGS__}}
/* Filled by fn(arg). */
#define XF(fn, arg, ...)                                                       \
  {.fill = (fn), .fill_arg = (arg), .rank = NDIMS(__VA_ARGS__),                \
   .dims = {__VA_ARGS__}}
#define XF0(fn, arg) {.fill = (fn), .fill_arg = (arg), .rank = 0}

#define OP(nm, k, ...)                                                         \
  .build = build_op, .num_inputs = (k),                                        \
  .build_arg = &(const op_spec) {                                              \
    .op = (nm), .n = (k), .attrs = {__VA_ARGS__}                               \
  }
#define OP32(nm, k, ...)                                                       \
  .build = build_op, .num_inputs = (k),                                        \
  .build_arg = &(const op_spec) {                                              \
    .op = (nm), .n = (k), .f32 = 1, .attrs = {__VA_ARGS__}                     \
  }
#define F32_TOL .step = 1e-3, .rtol = 2e-3, .atol = 1e-4
#define UNKNOWN .unknown_dims = 1

#define AXES(...) ((const int64_t[]){__VA_ARGS__})
#define RED(op, ...)                                                           \
  OP(op, 1, {"axes", GC_INTS(AXES(__VA_ARGS__), NDIMS(__VA_ARGS__))})
#define RED_KEEP(op, ...)                                                      \
  OP(op, 1, {"axes", GC_INTS(AXES(__VA_ARGS__), NDIMS(__VA_ARGS__))},          \
     {"keep_dims", GC_BOOL(1)})
#define RED_ALL(op) OP(op, 1, {NULL})
#define RED_ALL_KEEP(op) OP(op, 1, {"keep_dims", GC_BOOL(1)})

#define MM(ta, tb) {"transpose_a", GC_BOOL(ta)}, {"transpose_b", GC_BOOL(tb)}
#define BMM(ax, ay) {"adj_x", GC_BOOL(ax)}, {"adj_y", GC_BOOL(ay)}

/* The second derivative of a one-input op. */
#define SECOND(op, xin)                                                        \
  {.name = "second derivative of " op, .build = build_unary_grad,              \
   .build_arg = op, .num_inputs = 1, .in = {xin}}

static const int three = 3;
static const wf_dtype to_f32 = WF_FLOAT32, to_f64 = WF_FLOAT64,
                      to_i32 = WF_INT32, to_bool = WF_BOOL;
static const select_spec select_same = {2, {2, 3}, {1, 0, 0, 1, 1, 0}};
static const select_spec select_col = {2, {3, 1}, {1, 0, 1}};

/* Binary arithmetic over the broadcasting shapes, x from [lo, hi) and y
 * kept at |y| >= ymin (Div). */
#define BINARY_CASES(op, ymin)                                                 \
  {.name = op " (2,3)+(2,3)", OP(op, 2),                                       \
   .in = {X(-2, 2, 2, 3), XA(ymin, -2, 2, 2, 3)}},                             \
      {.name = op " (3,1)+(1,4)", OP(op, 2),                                   \
       .in = {X(-2, 2, 3, 1), XA(ymin, -2, 2, 1, 4)}},                         \
      {.name = op " ()+(2,3)", OP(op, 2),                                      \
       .in = {X0(-2, 2), XA(ymin, -2, 2, 2, 3)}},                              \
      {.name = op " (2,3)+()", OP(op, 2),                                      \
       .in = {X(-2, 2, 2, 3), XA0(ymin, -2, 2)}},                              \
      {.name = op " (4)+(2,3,4)", OP(op, 2),                                   \
       .in = {X(-2, 2, 4), XA(ymin, -2, 2, 2, 3, 4)}},                         \
      {.name = op " (3,1)+(1,4) unknown dims", OP(op, 2), UNKNOWN,             \
       .in = {X(-2, 2, 3, 1), XA(ymin, -2, 2, 1, 4)}},                         \
      {.name = op " float32 (3,1)+(1,4)", OP32(op, 2), F32_TOL,                \
       .in = {X(-2, 2, 3, 1), XA(ymin, -2, 2, 1, 4)}}

/* Maximum and Minimum: x and y never within 0.3 of each other. */
#define ROUTE_CASES(op)                                                        \
  {.name = op " (2,3)+(2,3)", OP(op, 2),                                       \
   .in = {XF(fill_offset, &quarter, 2, 3),                                     \
          XF(fill_offset, &three_quarters, 2, 3)}},                            \
      {.name = op " (3,1)+(1,4)", OP(op, 2),                                   \
       .in = {XF(fill_offset, &quarter, 3, 1),                                 \
              XF(fill_offset, &three_quarters, 1, 4)}},                        \
      {.name = op " ()+(2,3)", OP(op, 2),                                      \
       .in = {XF0(fill_offset, &three_quarters),                               \
              XF(fill_offset, &quarter, 2, 3)}},                               \
      {.name = op " (3,1)+(1,4) unknown dims", OP(op, 2), UNKNOWN,             \
       .in = {XF(fill_offset, &quarter, 3, 1),                                 \
              XF(fill_offset, &three_quarters, 1, 4)}},                        \
      {.name = op " float32 (2,3)+(2,3)", OP32(op, 2), F32_TOL,                \
       .in = {XF(fill_offset, &quarter, 2, 3),                                 \
              XF(fill_offset, &three_quarters, 2, 3)}}

/* A one-input op on (2, 3) in float64 and in float32; tag names the
 * attributes. */
#define UNARY_CASES_TAG(op, tag, xin, ...)                                     \
  {.name = op tag " (2,3)", OP(op, 1, __VA_ARGS__), .in = {xin}},              \
      {.name = op tag " float32 (2,3)", OP32(op, 1, __VA_ARGS__), F32_TOL,     \
       .in = {xin}}
#define UNARY_CASES(op, xin, ...)                                              \
  {.name = op " (2,3)", OP(op, 1, __VA_ARGS__), .in = {xin}},                  \
      {.name = op " float32 (2,3)", OP32(op, 1, __VA_ARGS__), F32_TOL,         \
       .in = {xin}}

/* Sum and Mean (any x) or Max and Min (distinct x) on (2, 3, 4). */
#define REDUCE_CASES(op, xin)                                                  \
  {.name = op " all axes", RED_ALL(op), .in = {xin}},                          \
      {.name = op " axis 1", RED(op, 1), .in = {xin}},                         \
      {.name = op " axes (0, 2)", RED(op, 0, 2), .in = {xin}},                 \
      {.name = op " axis -1 keep_dims", RED_KEEP(op, -1), .in = {xin}},        \
      {.name = op " all axes keep_dims", RED_ALL_KEEP(op), .in = {xin}},       \
      {.name = op " axes (-3, -1)", RED(op, -3, -1), .in = {xin}},             \
      {.name = op " axes (2, 0) keep_dims", RED_KEEP(op, 2, 0),                \
       .in = {xin}},                                                           \
      {.name = op " axis 1 unknown dims", RED(op, 1), UNKNOWN, .in = {xin}},   \
      {.name = op " float32 axis 1",                                           \
       OP32(op, 1, {"axes", GC_INTS(AXES(1), 1)}), F32_TOL, .in = {xin}}

static const gc_spec cases[] = {
    BINARY_CASES("Add", 0),
    BINARY_CASES("Sub", 0),
    BINARY_CASES("Mul", 0),
    BINARY_CASES("Div", 0.5),
    ROUTE_CASES("Maximum"),
    ROUTE_CASES("Minimum"),
    {.name = "Pow (2,3)^(2,3)", OP("Pow", 2),
     .in = {X(0.5, 2, 2, 3), X(-2, 2, 2, 3)}},
    {.name = "Pow (3,1)^(1,4)", OP("Pow", 2),
     .in = {X(0.5, 2, 3, 1), X(-2, 2, 1, 4)}},
    {.name = "Pow (4)^()", OP("Pow", 2), .in = {X(0.5, 2, 4), X0(-2, 2)}},
    {.name = "Pow (3,1)^(1,4) unknown dims", OP("Pow", 2), UNKNOWN,
     .in = {X(0.5, 2, 3, 1), X(-2, 2, 1, 4)}},
    {.name = "Pow float32 (2,3)^(2,3)", OP32("Pow", 2), F32_TOL,
     .in = {X(0.5, 2, 2, 3), X(-2, 2, 2, 3)}},
    {.name = "Select (2,3) condition", .build = build_select,
     .build_arg = &select_same, .num_inputs = 2,
     .in = {X(-2, 2, 2, 3), X(-2, 2, 2, 3)}},
    {.name = "Select (3,1) condition, x (1,4), y ()", .build = build_select,
     .build_arg = &select_col, .num_inputs = 2,
     .in = {X(-2, 2, 1, 4), X0(-2, 2)}},
    {.name = "AddN of 3 (2,3)", .build = build_add_n, .build_arg = &three,
     .num_inputs = 3, .in = {X(-2, 2, 2, 3), X(-2, 2, 2, 3), X(-2, 2, 2, 3)}},

    UNARY_CASES("Neg", X(-2, 2, 2, 3), {NULL}),
    UNARY_CASES("Abs", XA(0.1, -2, 2, 2, 3), {NULL}),
    UNARY_CASES("Exp", X(-2, 2, 2, 3), {NULL}),
    UNARY_CASES("Log", X(0.2, 3, 2, 3), {NULL}),
    UNARY_CASES("Sqrt", X(0.2, 3, 2, 3), {NULL}),
    UNARY_CASES("Rsqrt", X(0.2, 3, 2, 3), {NULL}),
    UNARY_CASES("Square", X(-2, 2, 2, 3), {NULL}),
    UNARY_CASES("Tanh", X(-3, 3, 2, 3), {NULL}),
    UNARY_CASES("Sigmoid", X(-6, 6, 2, 3), {NULL}),
    UNARY_CASES("Relu", XA(0.1, -2, 2, 2, 3), {NULL}),
    UNARY_CASES("LeakyRelu", XA(0.1, -2, 2, 2, 3), {NULL}),
    UNARY_CASES_TAG("LeakyRelu", " alpha 0.35", XA(0.1, -2, 2, 2, 3),
                {"alpha", GC_FLOAT(0.35)}),
    UNARY_CASES("Elu", XA(0.1, -3, 3, 2, 3), {NULL}),
    UNARY_CASES("Gelu", X(-4, 4, 2, 3), {NULL}),
    UNARY_CASES_TAG("Gelu", " approximate", X(-4, 4, 2, 3),
                {"approximate", GC_BOOL(1)}),
    UNARY_CASES("Softplus", X(-6, 6, 2, 3), {NULL}),
    {.name = "Softplus tails", OP("Softplus", 1),
     .in = {XA(20, -40, 40, 2, 3)}},
    {.name = "Sigmoid tails", OP("Sigmoid", 1), .in = {XA(20, -40, 40, 2, 3)}},

    {.name = "Cast float64 -> float32 -> float64", .build = build_cast_chain,
     .build_arg = &to_f32, .num_inputs = 1, F32_TOL, .in = {X(-2, 2, 2, 3)}},
    {.name = "Cast float64 -> float64", .build = build_cast_chain,
     .build_arg = &to_f64, .num_inputs = 1, .in = {X(-2, 2, 2, 3)}},
    {.name = "Cast through int32 passes no gradient",
     .build = build_cast_chain, .build_arg = &to_i32, .num_inputs = 1,
     .no_gradient = 1, .in = {XF(fill_offset, &three_quarters, 2, 3)}},
    {.name = "Cast through bool passes no gradient",
     .build = build_cast_chain, .build_arg = &to_bool, .num_inputs = 1,
     .no_gradient = 1, .in = {XA(0.1, -2, 2, 2, 3)}},

    REDUCE_CASES("Sum", X(-2, 2, 2, 3, 4)),
    REDUCE_CASES("Mean", X(-2, 2, 2, 3, 4)),
    REDUCE_CASES("Max", XG(0.2, 2, 3, 4)),
    REDUCE_CASES("Min", XG(0.2, 2, 3, 4)),
    REDUCE_CASES("Prod", X(0.5, 1.5, 2, 3, 4)),
    {.name = "Prod axis 1 with zeros", RED("Prod", 1),
     .in = {XF(fill_with_zeros, NULL, 2, 3, 4)}},
    {.name = "Prod axes (-1, 1) keep_dims with zeros",
     RED_KEEP("Prod", -1, 1), .in = {XF(fill_with_zeros, NULL, 2, 3, 4)}},
    {.name = "Prod all axes with zeros", RED_ALL("Prod"),
     .in = {XF(fill_with_zeros, NULL, 2, 3, 4)}},

    {.name = "MatMul (2,3)x(3,4)", OP("MatMul", 2, MM(0, 0)),
     .in = {X(-2, 2, 2, 3), X(-2, 2, 3, 4)}},
    {.name = "MatMul transpose_a", OP("MatMul", 2, MM(1, 0)),
     .in = {X(-2, 2, 3, 2), X(-2, 2, 3, 4)}},
    {.name = "MatMul transpose_b", OP("MatMul", 2, MM(0, 1)),
     .in = {X(-2, 2, 2, 3), X(-2, 2, 4, 3)}},
    {.name = "MatMul transpose_a transpose_b", OP("MatMul", 2, MM(1, 1)),
     .in = {X(-2, 2, 3, 2), X(-2, 2, 4, 3)}},
    {.name = "MatMul unknown dims", OP("MatMul", 2, MM(0, 1)), UNKNOWN,
     .in = {X(-2, 2, 2, 3), X(-2, 2, 4, 3)}},
    {.name = "MatMul float32", OP32("MatMul", 2, MM(1, 0)), F32_TOL,
     .in = {X(-2, 2, 3, 2), X(-2, 2, 3, 4)}},
    {.name = "BatchMatMul (2,2,3)x(2,3,4)", OP("BatchMatMul", 2, BMM(0, 0)),
     .in = {X(-2, 2, 2, 2, 3), X(-2, 2, 2, 3, 4)}},
    {.name = "BatchMatMul batch (2,1) with (3)",
     OP("BatchMatMul", 2, BMM(0, 0)),
     .in = {X(-2, 2, 2, 1, 2, 3), X(-2, 2, 3, 3, 2)}},
    {.name = "BatchMatMul batch (4) with a matrix",
     OP("BatchMatMul", 2, BMM(0, 0)),
     .in = {X(-2, 2, 4, 2, 3), X(-2, 2, 3, 2)}},
    {.name = "BatchMatMul a matrix with batch (4)",
     OP("BatchMatMul", 2, BMM(0, 0)),
     .in = {X(-2, 2, 2, 3), X(-2, 2, 4, 3, 2)}},
    {.name = "BatchMatMul adj_x", OP("BatchMatMul", 2, BMM(1, 0)),
     .in = {X(-2, 2, 2, 3, 2), X(-2, 2, 1, 3, 4)}},
    {.name = "BatchMatMul adj_y", OP("BatchMatMul", 2, BMM(0, 1)),
     .in = {X(-2, 2, 1, 2, 3), X(-2, 2, 2, 4, 3)}},
    {.name = "BatchMatMul adj_x adj_y", OP("BatchMatMul", 2, BMM(1, 1)),
     .in = {X(-2, 2, 3, 3, 2), X(-2, 2, 3, 4, 3)}},
    {.name = "BatchMatMul batch (2,1) with (3) unknown dims",
     OP("BatchMatMul", 2, BMM(0, 1)), UNKNOWN,
     .in = {X(-2, 2, 2, 1, 2, 3), X(-2, 2, 3, 4, 3)}},
    {.name = "BatchMatMul float32", OP32("BatchMatMul", 2, BMM(1, 1)),
     F32_TOL, .in = {X(-2, 2, 3, 3, 2), X(-2, 2, 1, 4, 3)}},

    /* comparisons and ArgMax on the path: registered as not
     * differentiable, so the gradient flows around them */
    {.name = "Select(Less(x, y), x, y)", .build = build_compare_select,
     .build_arg = "Less", .num_inputs = 2,
     .in = {XF(fill_offset, &quarter, 3, 1),
            XF(fill_offset, &three_quarters, 1, 4)}},
    {.name = "Select(Greater(x, y), x, y)", .build = build_compare_select,
     .build_arg = "Greater", .num_inputs = 2,
     .in = {XF(fill_offset, &quarter, 2, 3),
            XF(fill_offset, &three_quarters, 2, 3)}},
    {.name = "Select(Equal(x, y), x, y)", .build = build_compare_select,
     .build_arg = "Equal", .num_inputs = 2,
     .in = {XF(fill_offset, &quarter, 2, 3),
            XF(fill_offset, &three_quarters, 2, 3)}},
    {.name = "x * ArgMax(x)", .build = build_argmax_scale, .num_inputs = 1,
     .in = {XG(0.2, 3, 4)}},

    /* the backward ops as forward ops: second-order gradients */
    {.name = "SumToLike (2,3,4) to (3,1)", OP("SumToLike", 2),
     .no_gradient = 2, .in = {X(-2, 2, 2, 3, 4), X(-2, 2, 3, 1)}},
    {.name = "SumGrad axis 1", .no_gradient = 2,
     OP("SumGrad", 2, {"axes", GC_INTS(AXES(1), 1)}),
     .in = {X(-2, 2, 2, 4), X(-2, 2, 2, 3, 4)}},
    {.name = "MeanGrad axes (0, -1) keep_dims", .no_gradient = 2,
     OP("MeanGrad", 2, {"axes", GC_INTS(AXES(0, -1), 2)},
        {"keep_dims", GC_BOOL(1)}),
     .in = {X(-2, 2, 1, 3, 1), X(-2, 2, 2, 3, 4)}},
    {.name = "ReluGrad", OP("ReluGrad", 2), .no_gradient = 2,
     .in = {X(-2, 2, 2, 3), XA(0.1, -2, 2, 2, 3)}},
    {.name = "LeakyReluGrad alpha 0.3",
     OP("LeakyReluGrad", 2, {"alpha", GC_FLOAT(0.3)}), .no_gradient = 2,
     .in = {X(-2, 2, 2, 3), XA(0.1, -2, 2, 2, 3)}},
    {.name = "AbsGrad", OP("AbsGrad", 2), .no_gradient = 2,
     .in = {X(-2, 2, 2, 3), XA(0.1, -2, 2, 2, 3)}},
    {.name = "SigmoidGrad", OP("SigmoidGrad", 2),
     .in = {X(-2, 2, 2, 3), X(0.05, 0.95, 2, 3)}},
    {.name = "TanhGrad", OP("TanhGrad", 2),
     .in = {X(-2, 2, 2, 3), X(-0.95, 0.95, 2, 3)}},
    {.name = "SqrtGrad", OP("SqrtGrad", 2),
     .in = {X(-2, 2, 2, 3), X(0.3, 2, 2, 3)}},
    {.name = "EluGrad", OP("EluGrad", 2),
     .in = {X(-2, 2, 2, 3), XA(0.1, -0.95, 2, 2, 3)}},
    {.name = "SoftplusGrad", OP("SoftplusGrad", 2),
     .in = {X(-2, 2, 2, 3), X(-4, 4, 2, 3)}},
    {.name = "SoftplusGrad float32", OP32("SoftplusGrad", 2), F32_TOL,
     .in = {X(-2, 2, 2, 3), X(-4, 4, 2, 3)}},
    SECOND("Tanh", X(-2, 2, 2, 3)),
    SECOND("Sigmoid", X(-4, 4, 2, 3)),
    SECOND("Softplus", X(-4, 4, 2, 3)),
    SECOND("Elu", XA(0.1, -2, 2, 2, 3)),
    SECOND("Sqrt", X(0.3, 3, 2, 3)),
    SECOND("Relu", XA(0.1, -2, 2, 2, 3)),
    SECOND("Abs", XA(0.1, -2, 2, 2, 3)),
    SECOND("Square", X(-2, 2, 2, 3)),
    SECOND("Exp", X(-2, 2, 2, 3)),
    SECOND("Log", X(0.3, 3, 2, 3)),
    {.name = "gradient of a gradient through broadcast Add",
     .build = build_double_backward, .num_inputs = 2,
     .in = {X(-1, 1, 3, 1), X(-1, 1, 1, 4)}},
};

#define NUM_CASES ((int)(sizeof cases / sizeof cases[0]))

static void test_gradient_case(void **state) {
  const gc_spec *s = *state;
  int bad = gc_check(rt, s);

  if (bad != 0)
    fail_msg("%s: %d mismatching element(s)%s (details above)", s->name,
             bad, bad < 0 ? " or a setup failure" : "");
}

/* ---- reference values -------------------------------------------------- */

/* The gradients of y with respect to xs (Consts or Placeholders not
 * needing feeds) with dy arriving at y; out[i] receives a new reference to
 * the dense gradient of xs[i]. */
static void gradients_of(wf_graph *g, wf_output y, wf_output dy,
                         const wf_output *xs, int nx, wf_tensor **out) {
  wf_status *st = wf_status_new();
  wf_gradient dx[4];
  wf_output fetch[4];
  wf_session *s;

  assert_true(nx <= 4);
  if (wf_graph_add_gradients(g, &y, 1, &dy, xs, nx, dx, st))
    fail_msg("wf_graph_add_gradients: %s", wf_status_message(st));
  for (int i = 0; i < nx; i++) {
    assert_non_null(dx[i].dense.node);
    fetch[i] = dx[i].dense;
  }
  s = wf_session_new(g, st);
  assert_non_null(s);
  if (wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, nx, NULL, 0, NULL,
                     st))
    fail_msg("running the gradients: %s", wf_status_message(st));
  wf_session_free(s);
  wf_status_free(st);
}

static wf_output const_f64(wf_graph *g, const int64_t *dims, int rank,
                           const double *v) {
  wf_status *st = wf_status_new();
  wf_output o;

  if (gc_const(g, WF_FLOAT64, dims, rank, v, &o, st))
    fail_msg("Const: %s", wf_status_message(st));
  wf_status_free(st);
  return o;
}

static void expect_values(const wf_tensor *t, const double *want, int64_t n,
                          const char *what) {
  const double *got = wf_tensor_data(t);

  assert_int_equal(wf_tensor_dtype(t), WF_FLOAT64);
  assert_int_equal(wf_tensor_count(t), n);
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= 1e-15 * fmax(1, fabs(want[i]))))
      fail_msg("%s: element %lld is %.17g, expected %.17g", what,
               (long long)i, got[i], want[i]);
}

/* Max and Min over axis 1: the gradient is split equally among ties. */
static void test_max_min_gradient_splits_ties_equally(void **state) {
  static const double xmax[] = {1, 3, 3, 2, 2, 2}, xmin[] = {1, 1, 3, 5,
                                                            2, 2};
  static const double dy[] = {4, 9};
  static const double want_max[] = {0, 2, 2, 3, 3, 3};
  static const double want_min[] = {2, 2, 0, 0, 4.5, 4.5};
  const char *ops[] = {"Max", "Min"};
  const double *xs[] = {xmax, xmin}, *wants[] = {want_max, want_min};

  for (int k = 0; k < 2; k++) {
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    wf_output x = const_f64(g, (int64_t[]){2, 3}, 2, xs[k]);
    wf_output d = const_f64(g, (int64_t[]){2}, 1, dy), y;
    gc_attr a[] = {{"axes", GC_INTS(AXES(1), 1)}, {NULL}};
    wf_tensor *out = NULL;

    if (gc_op(g, ops[k], &x, 1, a, &y, st))
      fail_msg("%s: %s", ops[k], wf_status_message(st));
    gradients_of(g, y, d, &x, 1, &out);
    expect_values(out, wants[k], 6, ops[k]);
    wf_tensor_release(out);
    wf_graph_free(g);
    wf_status_free(st);
  }
}

/* Prod over axis 1 with one, two and no zeros in a row: exact products of
 * the other elements, never 0/0. */
static void test_prod_gradient_is_exact_at_zeros(void **state) {
  static const double xv[] = {2, 0, 3, 0, 0, 5, 1, 2, 4};
  static const double dy[] = {1, 1, 0.5};
  static const double want[] = {0, 6, 0, 0, 0, 0, 4, 2, 1};
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output x = const_f64(g, (int64_t[]){3, 3}, 2, xv);
  wf_output d = const_f64(g, (int64_t[]){3}, 1, dy), y;
  gc_attr a[] = {{"axes", GC_INTS(AXES(1), 1)}, {NULL}};
  wf_tensor *out = NULL;

  if (gc_op(g, "Prod", &x, 1, a, &y, st))
    fail_msg("Prod: %s", wf_status_message(st));
  gradients_of(g, y, d, &x, 1, &out);
  expect_values(out, want, 9, "Prod");
  wf_tensor_release(out);
  wf_graph_free(g);
  wf_status_free(st);
}

/* Pow at x = 0: dx = y 0^(y-1) (0 for y > 1), and dy is 0, not NaN
 * (0 * ln 0). */
static void test_pow_gradient_at_zero_base_is_finite(void **state) {
  static const double xv[] = {0, 0, 2}, yv[] = {2, 3, 0.5}, dy[] = {1, 1, 1};
  double want_x[] = {0, 0, 0.5 / sqrt(2.0)};
  double want_y[] = {0, 0, sqrt(2.0) * log(2.0)};
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output in[2], d, z;
  wf_tensor *out[2] = {NULL, NULL};

  in[0] = const_f64(g, (int64_t[]){3}, 1, xv);
  in[1] = const_f64(g, (int64_t[]){3}, 1, yv);
  d = const_f64(g, (int64_t[]){3}, 1, dy);
  if (gc_op(g, "Pow", in, 2, NULL, &z, st))
    fail_msg("Pow: %s", wf_status_message(st));
  gradients_of(g, z, d, in, 2, out);
  expect_values(out[0], want_x, 3, "Pow dx");
  expect_values(out[1], want_y, 3, "Pow dy");
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);
  wf_graph_free(g);
  wf_status_free(st);
}

/* ---- registration and structure ---------------------------------------- */

static void test_non_differentiable_ops_are_registered_as_such(void **state) {
  const char *none[] = {"ArgMax", "Equal", "Less", "Greater"};
  const char *some[] = {
      "Add",       "Sub",           "Mul",          "Div",      "Maximum",
      "Minimum",   "Pow",           "Select",       "AddN",     "Neg",
      "Abs",       "Exp",           "Log",          "Sqrt",     "Rsqrt",
      "Square",    "Tanh",          "Sigmoid",      "Relu",     "LeakyRelu",
      "Elu",       "Gelu",          "Softplus",     "Cast",     "Sum",
      "Mean",      "Max",           "Min",          "Prod",     "MatMul",
      "BatchMatMul", "SumToLike",   "SumGrad",      "MeanGrad", "ReluGrad",
      "LeakyReluGrad", "AbsGrad",   "SigmoidGrad",  "TanhGrad", "SqrtGrad",
      "EluGrad",   "SoftplusGrad"};

  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    if (wf_runtime_op_gradient(rt, none[i]) != 0)
      fail_msg("%s: wf_runtime_op_gradient is %d, expected 0", none[i],
               wf_runtime_op_gradient(rt, none[i]));
  for (size_t i = 0; i < sizeof some / sizeof some[0]; i++)
    if (wf_runtime_op_gradient(rt, some[i]) != 1)
      fail_msg("%s: wf_runtime_op_gradient is %d, expected 1", some[i],
               wf_runtime_op_gradient(rt, some[i]));
}

static int count_op(const wf_graph *g, const char *op) {
  int n = 0;

  for (int i = 0; i < wf_graph_num_nodes(g); i++)
    n += strcmp(wf_node_op(wf_graph_node(g, i)), op) == 0;
  return n;
}

static wf_output placeholder(wf_graph *g, const int64_t *dims, int rank) {
  wf_status *st = wf_status_new();
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", NULL);
  wf_node *n;

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  if (!(n = wf_node_desc_finish(d, st)))
    fail_msg("Placeholder: %s", wf_status_message(st));
  wf_status_free(st);
  return (wf_output){n, 0};
}

/* Add's gradient sums back only what was broadcast: nothing for equal
 * known shapes, one SumToLike per input otherwise (also for equal but
 * unknown shapes, which may differ at run time). */
static void test_sum_to_like_only_where_shapes_may_differ(void **state) {
  static const struct {
    int64_t a[2], b[2];
    int sums;
  } t[] = {{{2, 3}, {2, 3}, 0}, {{3, 1}, {1, 4}, 2}, {{-1, 3}, {-1, 3}, 2}};

  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    wf_output in[2] = {placeholder(g, t[k].a, 2), placeholder(g, t[k].b, 2)};
    wf_output z;
    wf_gradient dx[2];

    if (gc_op(g, "Add", in, 2, NULL, &z, st) ||
        wf_graph_add_gradients(g, &z, 1, NULL, in, 2, dx, st))
      fail_msg("case %zu: %s", k, wf_status_message(st));
    if (count_op(g, "SumToLike") != t[k].sums)
      fail_msg("case %zu: %d SumToLike nodes, expected %d", k,
               count_op(g, "SumToLike"), t[k].sums);
    wf_graph_free(g);
    wf_status_free(st);
  }
}

/* ---- the checker itself ------------------------------------------------ */

static int build_cube(wf_graph *g, const wf_output *x, wf_output *y,
                      const void *arg, wf_status *st) {
  return gc_op(g, "GcCube", x, 1, NULL, y, st);
}

/* GcCube's gradient lacks its factor 3: every element must be reported. */
static void test_gradcheck_reports_a_wrong_gradient(void **state) {
  gc_spec s = {.name = "GcCube (deliberately wrong)", .num_inputs = 1,
               .build = build_cube, .in = {XA(0.5, -2, 2, 2, 3)}};

  assert_int_equal(gc_check(rt, &s), 2 * 6);
}

/* A gradient where the spec says none: reported once per point. */
static void test_gradcheck_reports_an_unexpected_gradient(void **state) {
  gc_spec s = {.name = "Neg (gradient not expected)", OP("Neg", 1),
               .no_gradient = 1, .in = {X(-2, 2, 3)}};

  assert_int_equal(gc_check(rt, &s), 2);
}

static int build_take_rows(wf_graph *g, const wf_output *x, wf_output *y,
                           const void *arg, wf_status *st) {
  static const int64_t rows[] = {2, 0, 2, 3};
  gc_attr a[] = {{"rows", GC_INTS(rows, 4)}, {NULL}};

  return gc_op(g, "GcTakeRows", x, 1, a, y, st);
}

/* A sparse gradient with a repeated row (2) and a missing one (1) is
 * scattered into the right dense gradient. */
static void test_gradcheck_densifies_sparse_gradients(void **state) {
  gc_spec s = {.name = "GcTakeRows rows (2, 0, 2, 3)", .num_inputs = 1,
               .build = build_take_rows, .in = {X(-2, 2, 4, 3)}};

  assert_int_equal(gc_check(rt, &s), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_max_min_gradient_splits_ties_equally),
      cmocka_unit_test(test_prod_gradient_is_exact_at_zeros),
      cmocka_unit_test(test_pow_gradient_at_zero_base_is_finite),
      cmocka_unit_test(test_non_differentiable_ops_are_registered_as_such),
      cmocka_unit_test(test_sum_to_like_only_where_shapes_may_differ),
      cmocka_unit_test(test_gradcheck_reports_a_wrong_gradient),
      cmocka_unit_test(test_gradcheck_reports_an_unexpected_gradient),
      cmocka_unit_test(test_gradcheck_densifies_sparse_gradients),
  };
  struct CMUnitTest *fd = calloc(NUM_CASES, sizeof *fd);
  int failed;

  if (!fd)
    return 1;
  for (int i = 0; i < NUM_CASES; i++) {
    fd[i].name = cases[i].name;
    fd[i].test_func = test_gradient_case;
    fd[i].initial_state = (void *)&cases[i];
  }
  failed = cmocka_run_group_tests_name("math_gradients", tests, runtime_setup,
                                       runtime_teardown);
  failed += _cmocka_run_group_tests("math_gradients_fd", fd, NUM_CASES,
                                    runtime_setup, runtime_teardown);
  free(fd);
  return failed ? 1 : 0;
}
