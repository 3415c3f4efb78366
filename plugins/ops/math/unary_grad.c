/* plugins/ops/math/unary_grad.c — reference CPU kernels of the fused
 * backward ops of the elementwise activations (ReluGrad, LeakyReluGrad,
 * EluGrad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, SoftplusGrad,
 * GeluGrad, AbsGrad). Each takes (dy, v) of one shape, v being the forward
 * op's input x or output y as plugin.c documents, and gives dx. No
 * broadcasting: the gradient functions pass tensors of the forward shape. */
#include <config.h>

#include "math_ops.h"

#include <math.h>

/* Attributes read once per call. */
typedef struct grad_params {
  double alpha;    /* LeakyReluGrad */
  int approximate; /* GeluGrad */
} grad_params;

/* o[j] = f(dy[j], v[j]) for j < n. */
typedef void grad_row_fn(void *o, const void *dy, const void *v, int64_t n,
                         const grad_params *p);

#define GRAD_ROW(name, T, sfx, EXPR)                                           \
  static void name##_##sfx(void *o_, const void *dy_, const void *v_,          \
                           int64_t n, const grad_params *p) {                  \
    T *o = o_;                                                                 \
    const T *dy = dy_, *v = v_;                                                \
    (void)p;                                                                   \
    for (int64_t j = 0; j < n; j++) {                                          \
      T g = dy[j], a = v[j];                                                   \
      o[j] = (T)(EXPR);                                                        \
    }                                                                          \
  }

#define F_(sfx, f) F_##sfx(f)
#define F_f32(fn) fn##f
#define F_f64(fn) fn

/* v = x. The derivative at a kink (x = 0) is taken from the right for
 * LeakyRelu and as 0 for Relu and Abs, as TensorFlow does. */
#define RELU_G(T, sfx, dt, u) GRAD_ROW(relu_grad, T, sfx, a > 0 ? g : (T)0)
#define LEAKY_G(T, sfx, dt, u)                                                 \
  GRAD_ROW(leaky_relu_grad, T, sfx, a > 0 ? g : (T)p->alpha * g)
/* sign(x) * dy; NaN x gives NaN. */
#define ABS_G(T, sfx, dt, u)                                                   \
  GRAD_ROW(abs_grad, T, sfx, a > 0 ? g : a < 0 ? -g : isnan(a) ? a : (T)0)
/* v = y: Elu'(x) = 1 for x > 0, e^x = y + 1 below. */
#define ELU_G(T, sfx, dt, u)                                                   \
  GRAD_ROW(elu_grad, T, sfx, a > 0 ? g : g * (a + (T)1))
/* v = y: y (1 - y). */
#define SIGMOID_G(T, sfx, dt, u)                                               \
  GRAD_ROW(sigmoid_grad, T, sfx, g * a * ((T)1 - a))
/* v = y: 1 - y^2. */
#define TANH_G(T, sfx, dt, u) GRAD_ROW(tanh_grad, T, sfx, g * ((T)1 - a * a))
/* v = y: 1 / (2 y) (+inf at y = 0, as the derivative). */
#define SQRT_G(T, sfx, dt, u) GRAD_ROW(sqrt_grad, T, sfx, (T)0.5 * g / a)
/* v = y: -y^3 / 2. */
#define RSQRT_G(T, sfx, dt, u)                                                 \
  GRAD_ROW(rsqrt_grad, T, sfx, (T)-0.5 * g * a * a * a)
/* v = x: sigmoid(x), exact in both tails. */
#define SOFTPLUS_G(T, sfx, dt, u)                                              \
  GRAD_ROW(softplus_grad, T, sfx, g * math_sigmoid_##sfx(a))

/* Gelu'(x). Exact form: Phi(x) + x phi(x), phi the standard normal density.
 * Tanh form: y = x s with s = sigmoid(2u), u = c (x + k x^3), so
 * y' = s + 2 x s (1 - s) c (1 + 3 k x^2). At +-inf the limits 1 and 0
 * (the products would give inf * 0). */
#define GELU_D(T, sfx, dt, u)                                                  \
  static T gelu_d_##sfx(T a, int approximate) {                                \
    const T c = (T)0.7978845608028654, k = (T)0.044715;                        \
    if (isinf(a))                                                              \
      return a > 0 ? (T)1 : (T)0;                                              \
    if (approximate) {                                                         \
      T s = math_sigmoid_##sfx((T)2 * c * (a + k * a * a * a));                \
      return s + (T)2 * a * s * ((T)1 - s) * c * ((T)1 + (T)3 * k * a * a);    \
    }                                                                          \
    return (T)0.5 * F_(sfx, erfc)(-a * (T)0.7071067811865476) +                \
           a * (T)0.3989422804014327 * F_(sfx, exp)((T)-0.5 * a * a);          \
  }
WFX_TYPES_FLOAT(GELU_D, _)
#define GELU_G(T, sfx, dt, u)                                                  \
  GRAD_ROW(gelu_grad, T, sfx, g * gelu_d_##sfx(a, p->approximate))

WFX_TYPES_FLOAT(RELU_G, _)
WFX_TYPES_FLOAT(LEAKY_G, _)
WFX_TYPES_FLOAT(ABS_G, _)
WFX_TYPES_FLOAT(ELU_G, _)
WFX_TYPES_FLOAT(SIGMOID_G, _)
WFX_TYPES_FLOAT(TANH_G, _)
WFX_TYPES_FLOAT(SQRT_G, _)
WFX_TYPES_FLOAT(RSQRT_G, _)
WFX_TYPES_FLOAT(SOFTPLUS_G, _)
WFX_TYPES_FLOAT(GELU_G, _)

#define TABLE(name)                                                            \
  static grad_row_fn *const name##_table[WF_DTYPE_COUNT] = {                   \
      WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, name)}
TABLE(relu_grad);
TABLE(leaky_relu_grad);
TABLE(abs_grad);
TABLE(elu_grad);
TABLE(sigmoid_grad);
TABLE(tanh_grad);
TABLE(sqrt_grad);
TABLE(rsqrt_grad);
TABLE(softplus_grad);
TABLE(gelu_grad);

static int grad_run(wf_kernel_ctx *ctx, grad_row_fn *const *table,
                    const grad_params *p, wf_status *st) {
  const wf_tensor *dy, *v;
  wf_tensor *out;
  wf_shape sd, sv;
  int32_t dt;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &dy, &sd, st) ||
      wfx_kernel_input(ctx, 1, &v, &sv, st))
    return wfx_code(st);
  dt = wfx_dtype(dy);
  if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !table[dt])
    return math_unsupported_dtype(dt, st);
  if (wfx_dtype(v) != dt)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "inputs are %s and %s; both must be of type T",
                    wfx_dtype_name(dt), wfx_dtype_name(wfx_dtype(v)));
  if (!wfx_shape_equal(&sd, &sv))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the gradient %s and the forward tensor %s must have "
                    "one shape",
                    wfx_shape_str(&sd, a, sizeof a),
                    wfx_shape_str(&sv, b, sizeof b));
  out = wfx_host->kernel_output_new(ctx, 0, &sd, st);
  if (!out)
    return wfx_code(st);
  if (wfx_count(dy) > 0)
    table[dt](wfx_data(out), wfx_data(dy), wfx_data(v), wfx_count(dy), p);
  return 0;
}

#define GRAD_COMPUTE(name)                                                     \
  int math_##name(wf_kernel_ctx *ctx, void *state, wf_status *st) {            \
    return grad_run(ctx, name##_table, NULL, st);                              \
  }
GRAD_COMPUTE(relu_grad)
GRAD_COMPUTE(abs_grad)
GRAD_COMPUTE(elu_grad)
GRAD_COMPUTE(sigmoid_grad)
GRAD_COMPUTE(tanh_grad)
GRAD_COMPUTE(sqrt_grad)
GRAD_COMPUTE(rsqrt_grad)
GRAD_COMPUTE(softplus_grad)

int math_leaky_relu_grad(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  grad_params p = {0};

  if (wfx_kernel_attr_float(ctx, "alpha", &p.alpha, st))
    return wfx_code(st);
  return grad_run(ctx, leaky_relu_grad_table, &p, st);
}

int math_gelu_grad(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  grad_params p = {0};

  if (wfx_kernel_attr_bool(ctx, "approximate", &p.approximate, st))
    return wfx_code(st);
  return grad_run(ctx, gelu_grad_table, &p, st);
}
