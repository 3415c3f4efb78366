/* plugins/ops/math/unary.c — reference CPU kernels of the elementwise ops on
 * one input (Neg, Abs, Exp, Log, Sqrt, Rsqrt, Square, Tanh, Sigmoid, Relu,
 * LeakyRelu, Elu, Gelu, Softplus) and Cast, plus the same-shape inference
 * they share. Semantics are documented in plugin.c. float32 is computed with
 * the float functions of libm (no widening to double). */
#include <config.h>

#include "math_ops.h"

#include <math.h>
#include <string.h>

int math_shape_same(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

/* Attributes some unary ops read once per call. */
typedef struct unary_params {
  double alpha;    /* LeakyRelu */
  int approximate; /* Gelu */
} unary_params;

typedef void unary_row_fn(void *o, const void *x, int64_t n,
                          const unary_params *p);

#define UNARY_ROW(name, T, sfx, EXPR)                                          \
  static void name##_##sfx(void *o_, const void *x_, int64_t n,                \
                           const unary_params *p) {                            \
    T *o = o_;                                                                 \
    const T *x = x_;                                                           \
    (void)p;                                                                   \
    for (int64_t j = 0; j < n; j++) {                                          \
      T a = x[j];                                                              \
      o[j] = (T)(EXPR);                                                        \
    }                                                                          \
  }

/* libm function for a float suffix: F_(sfx, exp) is expf or exp. */
#define F_(sfx, f) F_##sfx(f)
#define F_f32(fn) fn##f
#define F_f64(fn) fn
#define U_(sfx) MATH_UT(sfx)

static int is_negative(int64_t v) { return v < 0; }

/* Integers wrap: Neg and Abs of the most negative value give it back. */
#define INEG_ROW(T, sfx, dt, u) UNARY_ROW(neg, T, sfx, (U_(sfx))0 - (U_(sfx))a)
#define FNEG_ROW(T, sfx, dt, u) UNARY_ROW(neg, T, sfx, -a)
#define IABS_ROW(T, sfx, dt, u)                                                \
  UNARY_ROW(abs, T, sfx,                                                       \
            is_negative((int64_t)a) ? (T)((U_(sfx))0 - (U_(sfx))a) : a)
#define FABS_ROW(T, sfx, dt, u) UNARY_ROW(abs, T, sfx, F_(sfx, fabs)(a))
#define SQUARE_ROW(T, sfx, dt, u)                                              \
  UNARY_ROW(square, T, sfx, (U_(sfx))a * (U_(sfx))a)
#define IRELU_ROW(T, sfx, dt, u)                                               \
  UNARY_ROW(relu, T, sfx, is_negative((int64_t)a) ? (T)0 : a)
/* NaN passes through Relu (as NumPy's maximum(x, 0)). */
#define FRELU_ROW(T, sfx, dt, u) UNARY_ROW(relu, T, sfx, a < 0 ? (T)0 : a)

#define EXP_ROW(T, sfx, dt, u) UNARY_ROW(exp, T, sfx, F_(sfx, exp)(a))
#define LOG_ROW(T, sfx, dt, u) UNARY_ROW(log, T, sfx, F_(sfx, log)(a))
#define SQRT_ROW(T, sfx, dt, u) UNARY_ROW(sqrt, T, sfx, F_(sfx, sqrt)(a))
#define RSQRT_ROW(T, sfx, dt, u)                                               \
  UNARY_ROW(rsqrt, T, sfx, (T)1 / F_(sfx, sqrt)(a))
#define TANH_ROW(T, sfx, dt, u) UNARY_ROW(tanh, T, sfx, F_(sfx, tanh)(a))
#define LEAKY_ROW(T, sfx, dt, u)                                               \
  UNARY_ROW(leaky_relu, T, sfx, a < 0 ? (T)p->alpha * a : a)
#define ELU_ROW(T, sfx, dt, u)                                                 \
  UNARY_ROW(elu, T, sfx, a < 0 ? F_(sfx, expm1)(a) : a)

#define SIGMOID_ROW(T, sfx, dt, u)                                             \
  UNARY_ROW(sigmoid, T, sfx, math_sigmoid_##sfx(a))

/* log(1 + e^a) = max(a, 0) + log1p(e^-|a|): no overflow, exact tails. */
#define SOFTPLUS_ROW(T, sfx, dt, u)                                            \
  UNARY_ROW(softplus, T, sfx,                                                  \
            (a > 0 ? a : (T)0) +                                               \
                F_(sfx, log1p)(F_(sfx, exp)(-F_(sfx, fabs)(a))))

/* Exact: x/2 * erfc(-x/sqrt 2) (erfc keeps precision where 1 + erf would
 * cancel). Tanh form: x/2 * (1 + tanh(u)) = x * sigmoid(2u) with
 * u = sqrt(2/pi) (x + 0.044715 x^3). Infinities map to their limits (the
 * products would give inf * 0). */
#define GELU_FN(T, sfx, dt, u)                                                 \
  static T gelu1_##sfx(T a, int approximate) {                                 \
    if (isinf(a))                                                              \
      return a < 0 ? (T)0 : a;                                                 \
    if (approximate) {                                                         \
      T v = (T)0.7978845608028654 * (a + (T)0.044715 * a * a * a);             \
      return a * math_sigmoid_##sfx((T)2 * v);                                 \
    }                                                                          \
    return (T)0.5 * a * F_(sfx, erfc)(-a * (T)0.7071067811865476);            \
  }
WFX_TYPES_FLOAT(GELU_FN, _)
#define GELU_ROW(T, sfx, dt, u)                                                \
  UNARY_ROW(gelu, T, sfx, gelu1_##sfx(a, p->approximate))

WFX_TYPES_SIGNED_INT(INEG_ROW, _)
WFX_TYPES_FLOAT(FNEG_ROW, _)
WFX_TYPES_INT(IABS_ROW, _)
WFX_TYPES_FLOAT(FABS_ROW, _)
WFX_TYPES_NUMBER(SQUARE_ROW, _)
WFX_TYPES_INT(IRELU_ROW, _)
WFX_TYPES_FLOAT(FRELU_ROW, _)
WFX_TYPES_FLOAT(EXP_ROW, _)
WFX_TYPES_FLOAT(LOG_ROW, _)
WFX_TYPES_FLOAT(SQRT_ROW, _)
WFX_TYPES_FLOAT(RSQRT_ROW, _)
WFX_TYPES_FLOAT(TANH_ROW, _)
WFX_TYPES_FLOAT(SIGMOID_ROW, _)
WFX_TYPES_FLOAT(LEAKY_ROW, _)
WFX_TYPES_FLOAT(ELU_ROW, _)
WFX_TYPES_FLOAT(GELU_ROW, _)
WFX_TYPES_FLOAT(SOFTPLUS_ROW, _)

#define TABLE(types, name)                                                     \
  static unary_row_fn *const name##_table[WF_DTYPE_COUNT] = {                  \
      types(WFX_TABLE_ENTRY, name)}
/* Neg: signed types only (see plugin.c). */
static unary_row_fn *const neg_table[WF_DTYPE_COUNT] = {WFX_TYPES_FLOAT(
    WFX_TABLE_ENTRY, neg) WFX_TYPES_SIGNED_INT(WFX_TABLE_ENTRY, neg)};
TABLE(WFX_TYPES_NUMBER, abs);
TABLE(WFX_TYPES_NUMBER, square);
TABLE(WFX_TYPES_NUMBER, relu);
TABLE(WFX_TYPES_FLOAT, exp);
TABLE(WFX_TYPES_FLOAT, log);
TABLE(WFX_TYPES_FLOAT, sqrt);
TABLE(WFX_TYPES_FLOAT, rsqrt);
TABLE(WFX_TYPES_FLOAT, tanh);
TABLE(WFX_TYPES_FLOAT, sigmoid);
TABLE(WFX_TYPES_FLOAT, leaky_relu);
TABLE(WFX_TYPES_FLOAT, elu);
TABLE(WFX_TYPES_FLOAT, gelu);
TABLE(WFX_TYPES_FLOAT, softplus);

static int unary_run(wf_kernel_ctx *ctx, unary_row_fn *const *table,
                     const unary_params *p, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *out;
  wf_shape s;
  int32_t dt;
  int64_t n;

  if (wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  dt = wfx_dtype(x);
  if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !table[dt])
    return math_unsupported_dtype(dt, st);
  out = wfx_host->kernel_output_new(ctx, 0, &s, st);
  if (!out)
    return wfx_code(st);
  n = wfx_count(x);
  if (n > 0)
    table[dt](wfx_data(out), wfx_data(x), n, p);
  return 0;
}

#define UNARY_COMPUTE(name)                                                    \
  int math_##name(wf_kernel_ctx *ctx, void *state, wf_status *st) {            \
    return unary_run(ctx, name##_table, NULL, st);                             \
  }
UNARY_COMPUTE(neg)
UNARY_COMPUTE(abs)
UNARY_COMPUTE(square)
UNARY_COMPUTE(relu)
UNARY_COMPUTE(exp)
UNARY_COMPUTE(log)
UNARY_COMPUTE(sqrt)
UNARY_COMPUTE(rsqrt)
UNARY_COMPUTE(tanh)
UNARY_COMPUTE(sigmoid)
UNARY_COMPUTE(elu)
UNARY_COMPUTE(softplus)

int math_leaky_relu(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  unary_params p = {0};

  if (wfx_kernel_attr_float(ctx, "alpha", &p.alpha, st))
    return wfx_code(st);
  return unary_run(ctx, leaky_relu_table, &p, st);
}

int math_gelu(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  unary_params p = {0};

  if (wfx_kernel_attr_bool(ctx, "approximate", &p.approximate, st))
    return wfx_code(st);
  return unary_run(ctx, gelu_table, &p, st);
}

/* ---- Cast -------------------------------------------------------------- */

/* Float to integer: truncation toward zero, saturating at the type's
 * limits; NaN gives 0. (C leaves out-of-range conversions undefined.) */
static int64_t saturate(double v, int64_t lo, int64_t hi) {
  if (isnan(v))
    return 0;
  if (v <= (double)lo)
    return lo;
  if (v >= (double)hi) /* (double)INT64_MAX rounds up to 2^63: still right */
    return hi;
  return (int64_t)v;
}

/* Per suffix: C type and kind (1 float, 2 integer, 3 bool). */
#define CT_(s) CT_##s
#define CT_f32 float
#define CT_f64 double
#define CT_i8 int8_t
#define CT_u8 uint8_t
#define CT_i32 int32_t
#define CT_i64 int64_t
#define CT_b8 wfx_bool
#define KIND_(s) KIND_##s
#define KIND_f32 1
#define KIND_f64 1
#define KIND_i8 2
#define KIND_u8 2
#define KIND_i32 2
#define KIND_i64 2
#define KIND_b8 3

typedef void cast_fn(void *o, const void *x, int64_t n);

/* cast_<src>_<dst>. Branches on the kinds are constant and folded. Bool
 * results are x != 0 (NaN is true); bool sources read as 0 or 1; integer
 * narrowing wraps (two's complement); everything else converts as C does
 * (round to nearest for floats). */
#define CAST_DEF(DT, dsfx, ddt, ssfx)                                          \
  static void cast_##ssfx##_##dsfx(void *o_, const void *x_, int64_t n) {      \
    DT *o = o_;                                                                \
    const CT_(ssfx) *x = x_;                                                   \
    for (int64_t j = 0; j < n; j++) {                                          \
      if (KIND_(dsfx) == 3 || KIND_(ssfx) == 3)                                \
        o[j] = (DT)(x[j] != 0);                                                \
      else if (KIND_(ssfx) == 1 && KIND_(dsfx) == 2)                           \
        o[j] = (DT)saturate((double)x[j], MATH_LO(dsfx), MATH_HI(dsfx));       \
      else                                                                     \
        o[j] = (DT)x[j];                                                       \
    }                                                                          \
  }
WFX_TYPES_ALL(CAST_DEF, f32)
WFX_TYPES_ALL(CAST_DEF, f64)
WFX_TYPES_ALL(CAST_DEF, i8)
WFX_TYPES_ALL(CAST_DEF, u8)
WFX_TYPES_ALL(CAST_DEF, i32)
WFX_TYPES_ALL(CAST_DEF, i64)
WFX_TYPES_ALL(CAST_DEF, b8)

#define CAST_ENTRY(DT, dsfx, ddt, ssfx) [ddt] = cast_##ssfx##_##dsfx,
static cast_fn *const cast_table[WF_DTYPE_COUNT][WF_DTYPE_COUNT] = {
    [WF_FLOAT32] = {WFX_TYPES_ALL(CAST_ENTRY, f32)},
    [WF_FLOAT64] = {WFX_TYPES_ALL(CAST_ENTRY, f64)},
    [WF_INT8] = {WFX_TYPES_ALL(CAST_ENTRY, i8)},
    [WF_UINT8] = {WFX_TYPES_ALL(CAST_ENTRY, u8)},
    [WF_INT32] = {WFX_TYPES_ALL(CAST_ENTRY, i32)},
    [WF_INT64] = {WFX_TYPES_ALL(CAST_ENTRY, i64)},
    [WF_BOOL] = {WFX_TYPES_ALL(CAST_ENTRY, b8)},
};

int math_cast(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *out;
  wf_shape s;
  int32_t src, dst;
  int64_t n;

  if (wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  src = wfx_dtype(x);
  dst = wfx_host->kernel_output_dtype(ctx, 0);
  if (src <= WF_DTYPE_INVALID || src >= WF_DTYPE_COUNT ||
      dst <= WF_DTYPE_INVALID || dst >= WF_DTYPE_COUNT ||
      !cast_table[src][dst])
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "the reference cpu kernel cannot cast %s to %s",
                    wfx_dtype_name(src), wfx_dtype_name(dst));
  out = wfx_host->kernel_output_new(ctx, 0, &s, st);
  if (!out)
    return wfx_code(st);
  n = wfx_count(x);
  if (n > 0)
    cast_table[src][dst](wfx_data(out), wfx_data(x), n);
  return 0;
}
