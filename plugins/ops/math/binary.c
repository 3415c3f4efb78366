/* plugins/ops/math/binary.c — shape inference and reference CPU kernels of
 * the elementwise ops on several inputs: arithmetic with NumPy broadcasting
 * (Add, Sub, Mul, Div, Maximum, Minimum, Pow), comparisons (Equal, Less,
 * Greater), Select and AddN. Semantics are documented in plugin.c; no
 * vectorisation or threading here (faster backends register higher
 * priorities). */
#include <config.h>

#include "math_ops.h"

#include <math.h>
#include <stdio.h>

int math_unsupported_dtype(int32_t dtype, wf_status *st) {
  return wfx_fail(st, WF_UNIMPLEMENTED,
                  "the reference cpu kernel has no %s implementation",
                  wfx_dtype_name(dtype));
}

/* ---- shape functions --------------------------------------------------- */

int math_shape_broadcast(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape a, b, out;

  if (wfx_shape_input(ctx, 0, NULL, &a, st) ||
      wfx_shape_input(ctx, 1, NULL, &b, st) ||
      wfx_broadcast_shapes(&a, &b, &out, NULL, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

int math_shape_select(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape c, x, y, xy, out;

  if (wfx_shape_input(ctx, 0, NULL, &c, st) ||
      wfx_shape_input(ctx, 1, NULL, &x, st) ||
      wfx_shape_input(ctx, 2, NULL, &y, st) ||
      wfx_broadcast_shapes(&x, &y, &xy, "x and y", st) ||
      wfx_broadcast_shapes(&c, &xy, &out, "condition with x and y", st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

int math_shape_all_same(wf_shape_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->shape_num_inputs(ctx);
  wf_shape acc, s;
  char what[48];

  wfx_shape_set_unknown(&acc);
  for (int32_t i = 0; i < n; i++) {
    snprintf(what, sizeof what, "inputs 0 to %d", (int)i);
    if (wfx_shape_input(ctx, i, NULL, &s, st) ||
        wfx_shape_merge(&acc, &s, &acc, what, st))
      return wfx_code(st);
  }
  wfx_host->shape_set_output(ctx, 0, &acc);
  return 0;
}

/* ---- elementwise rows -------------------------------------------------- */

/* One row of a broadcast walk: o[j] = f(x[j * sx], y[j * sy]), j < n.
 * Returns 0, or -1 when an element has no defined result (row_err). */
typedef int binary_row_fn(void *o, const void *x, int64_t sx, const void *y,
                          int64_t sy, int64_t n);

#define BINARY_ROW(name, T, sfx, OT, EXPR)                                     \
  static int name##_##sfx(void *o_, const void *x_, int64_t sx,                \
                          const void *y_, int64_t sy, int64_t n) {             \
    OT *o = o_;                                                                \
    const T *x = x_, *y = y_;                                                  \
    for (int64_t j = 0; j < n; j++) {                                          \
      T a = x[j * sx], b = y[j * sy];                                          \
      o[j] = (OT)(EXPR);                                                       \
    }                                                                          \
    return 0;                                                                  \
  }

/* Integer arithmetic goes through the unsigned type so that overflow wraps
 * (two's complement) instead of being undefined; floats are unchanged. */
#define U_(sfx) MATH_UT(sfx)
#define ADD_ROW(T, sfx, dt, u)                                                 \
  BINARY_ROW(add, T, sfx, T, (U_(sfx))a + (U_(sfx))b)
#define SUB_ROW(T, sfx, dt, u)                                                 \
  BINARY_ROW(sub, T, sfx, T, (U_(sfx))a - (U_(sfx))b)
#define MUL_ROW(T, sfx, dt, u)                                                 \
  BINARY_ROW(mul, T, sfx, T, (U_(sfx))a * (U_(sfx))b)
/* Floats: NaN in either operand gives NaN, as NumPy's maximum/minimum. */
#define FMAX_ROW(T, sfx, dt, u)                                                \
  BINARY_ROW(maximum, T, sfx, T, (a > b || isnan(a)) ? a : b)
#define FMIN_ROW(T, sfx, dt, u)                                                \
  BINARY_ROW(minimum, T, sfx, T, (a < b || isnan(a)) ? a : b)
#define IMAX_ROW(T, sfx, dt, u) BINARY_ROW(maximum, T, sfx, T, a > b ? a : b)
#define IMIN_ROW(T, sfx, dt, u) BINARY_ROW(minimum, T, sfx, T, a < b ? a : b)
#define FDIV_ROW(T, sfx, dt, u) BINARY_ROW(div, T, sfx, T, a / b)
/* Truncating division; x / 0 = 0; MIN / -1 wraps to MIN. */
#define IDIV_ROW(T, sfx, dt, u)                                                \
  BINARY_ROW(div, T, sfx, T,                                                   \
             b == 0 ? (T)0                                                     \
             : ((T)-1 < (T)0 && b == (T)-1) ? (T)((U_(sfx))0 - (U_(sfx))a)     \
                                            : (T)(a / b))
#define EQ_ROW(T, sfx, dt, u) BINARY_ROW(equal, T, sfx, wfx_bool, a == b)
#define LT_ROW(T, sfx, dt, u) BINARY_ROW(less, T, sfx, wfx_bool, a < b)
#define GT_ROW(T, sfx, dt, u) BINARY_ROW(greater, T, sfx, wfx_bool, a > b)

WFX_TYPES_NUMBER(ADD_ROW, _)
WFX_TYPES_NUMBER(SUB_ROW, _)
WFX_TYPES_NUMBER(MUL_ROW, _)
WFX_TYPES_FLOAT(FMAX_ROW, _)
WFX_TYPES_FLOAT(FMIN_ROW, _)
WFX_TYPES_INT(IMAX_ROW, _)
WFX_TYPES_INT(IMIN_ROW, _)
WFX_TYPES_FLOAT(FDIV_ROW, _)
WFX_TYPES_INT(IDIV_ROW, _)
WFX_TYPES_NUMBER(EQ_ROW, _)
WFX_TYPES_NUMBER(LT_ROW, _)
WFX_TYPES_NUMBER(GT_ROW, _)
/* bool: any non-zero byte is true. */
BINARY_ROW(equal, wfx_bool, b8, wfx_bool, (a != 0) == (b != 0))

BINARY_ROW(pow, float, f32, float, powf(a, b))
BINARY_ROW(pow, double, f64, double, pow(a, b))

static int is_negative(int64_t v) { return v < 0; }

/* Exponentiation by squaring with wrapping products; a negative exponent
 * has no integer result and fails the row. */
#define IPOW_ROW(T, sfx, dt, u)                                                \
  static int pow_##sfx(void *o_, const void *x_, int64_t sx, const void *y_,   \
                       int64_t sy, int64_t n) {                                \
    T *o = o_;                                                                 \
    const T *x = x_, *y = y_;                                                  \
    for (int64_t j = 0; j < n; j++) {                                          \
      U_(sfx) r = 1, base = (U_(sfx))x[j * sx];                                \
      uint64_t e;                                                              \
      if (is_negative((int64_t)y[j * sy]))                                     \
        return -1;                                                             \
      for (e = (uint64_t)y[j * sy]; e; e >>= 1) {                              \
        if (e & 1)                                                             \
          r = (U_(sfx))(r * base);                                             \
        base = (U_(sfx))(base * base);                                         \
      }                                                                        \
      o[j] = (T)r;                                                             \
    }                                                                          \
    return 0;                                                                  \
  }
WFX_TYPES_INT(IPOW_ROW, _)

#define TABLE(types, name)                                                     \
  static binary_row_fn *const name##_table[WF_DTYPE_COUNT] = {                 \
      types(WFX_TABLE_ENTRY, name)}
TABLE(WFX_TYPES_NUMBER, add);
TABLE(WFX_TYPES_NUMBER, sub);
TABLE(WFX_TYPES_NUMBER, mul);
TABLE(WFX_TYPES_NUMBER, div);
TABLE(WFX_TYPES_NUMBER, maximum);
TABLE(WFX_TYPES_NUMBER, minimum);
TABLE(WFX_TYPES_NUMBER, pow);
TABLE(WFX_TYPES_ALL, equal);
TABLE(WFX_TYPES_NUMBER, less);
TABLE(WFX_TYPES_NUMBER, greater);

/* Reads inputs 0..n-1 (all of input 0's dtype) with their shapes. */
static int read_inputs(wf_kernel_ctx *ctx, int n, const wf_tensor **t,
                       wf_shape *s, wf_status *st) {
  for (int i = 0; i < n; i++)
    if (wfx_kernel_input(ctx, i, &t[i], &s[i], st))
      return wfx_code(st);
  return 0;
}

static int binary_run(wf_kernel_ctx *ctx, binary_row_fn *const *table,
                      const char *row_err, wf_status *st) {
  const wf_tensor *in[2];
  wf_shape s[2], so;
  wf_tensor *out;
  wfx_bcast b;
  int32_t dt;
  size_t isz, osz;
  const char *x, *y;
  char *o;

  if (read_inputs(ctx, 2, in, s, st))
    return wfx_code(st);
  dt = wfx_dtype(in[0]);
  if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !table[dt])
    return math_unsupported_dtype(dt, st);
  if (wfx_dtype(in[1]) != dt)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "inputs are %s and %s; both must be of type T",
                    wfx_dtype_name(dt), wfx_dtype_name(wfx_dtype(in[1])));
  /* Equal shapes, or a scalar with anything: one row and no broadcasting
   * walk (most calls, and what a chain of small ops pays at every node). */
  int flat = wfx_shape_equal(&s[0], &s[1]) || s[0].rank == 0 ||
             s[1].rank == 0;
  if (flat)
    so = s[0].rank == 0 ? s[1] : s[0];
  else if (wfx_broadcast_shapes(&s[0], &s[1], &so, NULL, st))
    return wfx_code(st);
  out = wfx_host->kernel_output_new(ctx, 0, &so, st);
  if (!out)
    return wfx_code(st);
  isz = wfx_dtype_size(dt);
  osz = wfx_dtype_size(wfx_dtype(out));
  x = wfx_data(in[0]);
  y = wfx_data(in[1]);
  o = wfx_data(out);
  if (flat) {
    if (table[dt](o, x, s[0].rank == 0 ? 0 : 1, y, s[1].rank == 0 ? 0 : 1,
                  wfx_shape_count(&so)))
      return wfx_fail(st, WF_INVALID_ARGUMENT, "%s", row_err);
    return 0;
  }
  wfx_bcast_init(&b, &so, 2, s);
  for (int64_t r = 0; r < b.rows; r++, wfx_bcast_next(&b))
    if (table[dt](o + (size_t)(r * b.inner) * osz,
                  x + (size_t)b.off[0] * isz, b.step[0],
                  y + (size_t)b.off[1] * isz, b.step[1], b.inner))
      return wfx_fail(st, WF_INVALID_ARGUMENT, "%s", row_err);
  return 0;
}

#define BINARY_COMPUTE(name, err)                                              \
  int math_##name(wf_kernel_ctx *ctx, void *state, wf_status *st) {            \
    return binary_run(ctx, name##_table, err, st);                             \
  }
BINARY_COMPUTE(add, NULL)
BINARY_COMPUTE(sub, NULL)
BINARY_COMPUTE(mul, NULL)
BINARY_COMPUTE(div, NULL)
BINARY_COMPUTE(maximum, NULL)
BINARY_COMPUTE(minimum, NULL)
BINARY_COMPUTE(pow, "an integer base cannot be raised to a negative exponent "
                   "(y has a negative element)")
BINARY_COMPUTE(equal, NULL)
BINARY_COMPUTE(less, NULL)
BINARY_COMPUTE(greater, NULL)

/* ---- Select ------------------------------------------------------------ */

typedef void select_row_fn(void *o, const wfx_bool *c, int64_t sc,
                           const void *x, int64_t sx, const void *y, int64_t sy,
                           int64_t n);

#define SELECT_ROW(T, sfx, dt, u)                                              \
  static void select_##sfx(void *o_, const wfx_bool *c, int64_t sc,            \
                           const void *x_, int64_t sx, const void *y_,         \
                           int64_t sy, int64_t n) {                            \
    T *o = o_;                                                                 \
    const T *x = x_, *y = y_;                                                  \
    for (int64_t j = 0; j < n; j++)                                            \
      o[j] = c[j * sc] ? x[j * sx] : y[j * sy];                                \
  }
WFX_TYPES_ALL(SELECT_ROW, _)
static select_row_fn *const select_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_ALL(WFX_TABLE_ENTRY, select)};

int math_select(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *in[3];
  wf_shape s[3], xy, so;
  wf_tensor *out;
  wfx_bcast b;
  int32_t dt;
  size_t sz;
  const char *x, *y;
  const wfx_bool *c;
  char *o;

  if (read_inputs(ctx, 3, in, s, st))
    return wfx_code(st);
  dt = wfx_dtype(in[1]);
  if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !select_table[dt])
    return math_unsupported_dtype(dt, st);
  if (wfx_dtype(in[0]) != WF_BOOL || wfx_dtype(in[2]) != dt)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "inputs are %s, %s and %s; expected bool, T and T",
                    wfx_dtype_name(wfx_dtype(in[0])), wfx_dtype_name(dt),
                    wfx_dtype_name(wfx_dtype(in[2])));
  if (wfx_broadcast_shapes(&s[1], &s[2], &xy, "x and y", st) ||
      wfx_broadcast_shapes(&s[0], &xy, &so, "condition with x and y", st))
    return wfx_code(st);
  out = wfx_host->kernel_output_new(ctx, 0, &so, st);
  if (!out)
    return wfx_code(st);
  sz = wfx_dtype_size(dt);
  c = wfx_data(in[0]);
  x = wfx_data(in[1]);
  y = wfx_data(in[2]);
  o = wfx_data(out);
  wfx_bcast_init(&b, &so, 3, s);
  for (int64_t r = 0; r < b.rows; r++, wfx_bcast_next(&b))
    select_table[dt](o + (size_t)(r * b.inner) * sz, c + b.off[0], b.step[0],
                     x + (size_t)b.off[1] * sz, b.step[1],
                     y + (size_t)b.off[2] * sz, b.step[2], b.inner);
  return 0;
}

/* ---- AddN -------------------------------------------------------------- */

/* Accumulators: floats in double (one rounding at the end), integers in
 * the unsigned type (wrapping). */
#define ACC_f32 double
#define ACC_f64 double
#define ACC_i8 uint8_t
#define ACC_u8 uint8_t
#define ACC_i32 uint32_t
#define ACC_i64 uint64_t
#define ACC_(sfx) ACC_##sfx

typedef void add_n_fn(void *o, const void *const *in, int n, int64_t count);

#define ADD_N(T, sfx, dt, u)                                                   \
  static void add_n_##sfx(void *o_, const void *const *in, int n,              \
                          int64_t count) {                                     \
    T *o = o_;                                                                 \
    for (int64_t i = 0; i < count; i++) {                                      \
      ACC_(sfx) acc = 0;                                                       \
      for (int k = 0; k < n; k++)                                              \
        acc = (ACC_(sfx))(acc + ((const T *)in[k])[i]);                        \
      o[i] = (T)acc;                                                           \
    }                                                                          \
  }
WFX_TYPES_NUMBER(ADD_N, _)
static add_n_fn *const add_n_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, add_n)};

int math_add_n(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int n = wfx_host->kernel_num_inputs(ctx);
  const void **data = NULL;
  wf_shape s0, s;
  wf_tensor *out;
  int32_t dt = WF_DTYPE_INVALID;
  char what[48];
  int rc = 0;

  if (n < 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "needs at least one input");
  data = wfx_host->alloc((size_t)n * sizeof *data, 0);
  if (!data)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %d input pointers", n);
  for (int k = 0; k < n; k++) {
    const wf_tensor *t;

    if (wfx_kernel_input(ctx, k, &t, &s, st))
      goto fail;
    if (k == 0) {
      dt = wfx_dtype(t);
      s0 = s;
    }
    if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !add_n_table[dt]) {
      math_unsupported_dtype(dt, st);
      goto fail;
    }
    if (wfx_dtype(t) != dt) {
      wfx_fail(st, WF_INVALID_ARGUMENT, "input %d is %s but input 0 is %s", k,
               wfx_dtype_name(wfx_dtype(t)), wfx_dtype_name(dt));
      goto fail;
    }
    /* known shapes merge only when equal */
    snprintf(what, sizeof what, "inputs 0 and %d", k);
    if (wfx_shape_merge(&s0, &s, &s0, what, st))
      goto fail;
    data[k] = wfx_data(t);
  }
  out = wfx_host->kernel_output_new(ctx, 0, &s0, st);
  if (!out)
    goto fail;
  add_n_table[dt](wfx_data(out), data, n, wfx_shape_count(&s0));
  wfx_host->free(data);
  return 0;

fail:
  rc = wfx_code(st);
  wfx_host->free(data);
  return rc;
}
