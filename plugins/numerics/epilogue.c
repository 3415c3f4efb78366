/* plugins/numerics/epilogue.c — parsing of the fused ops' `fused_ops`
 * attribute and their epilogue (bias, then activation), in the dtype of
 * the tensor as the unfused ops compute it. Float types only: the fused
 * ops exist for float32 and float64. No matrix product or convolution. */
#include <config.h>

#include "epilogue.h"

#include <math.h>
#include <string.h>

static const char *const act_names[] = {
    [OPC_ACT_RELU] = "Relu", [OPC_ACT_SIGMOID] = "Sigmoid",
    [OPC_ACT_TANH] = "Tanh", [OPC_ACT_ELU] = "Elu",
    [OPC_ACT_GELU] = "Gelu", [OPC_ACT_LEAKY_RELU] = "LeakyRelu"};

static int parse(const wf_attr_value *ops, double alpha, opc_fused *f,
                 wf_status *st) {
  f->act = OPC_ACT_NONE;
  f->alpha = alpha;
  if (ops->count < 1 || strcmp(ops->u.strings[0], "BiasAdd") != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "fused_ops must start with \"BiasAdd\", got %s%s%s",
                    ops->count ? "\"" : "an empty list",
                    ops->count ? ops->u.strings[0] : "",
                    ops->count ? "\"" : "");
  if (ops->count > 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "fused_ops has %lld steps; at most BiasAdd and one "
                    "activation fuse",
                    (long long)ops->count);
  if (ops->count == 1)
    return 0;
  for (int a = OPC_ACT_RELU; a <= OPC_ACT_LEAKY_RELU; a++)
    if (strcmp(ops->u.strings[1], act_names[a]) == 0) {
      f->act = a;
      return 0;
    }
  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "fused_ops step 2 is \"%s\"; the activations that fuse are "
                  "Relu, Sigmoid, Tanh, Elu, Gelu and LeakyRelu",
                  ops->u.strings[1]);
}

static int check_list(const wf_attr_value *v, wf_status *st) {
  if (v->type != (WF_ATTR_LIST | WF_ATTR_STRING))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute fused_ops must be a list of strings");
  return 0;
}

int opc_fused_shape_attrs(const wf_shape_ctx *ctx, opc_fused *f,
                          wf_status *st) {
  wf_attr_value v;
  double alpha;

  if (wfx_host->shape_attr(ctx, "fused_ops", &v) != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "attribute fused_ops is missing");
  if (check_list(&v, st) || wfx_shape_attr_float(ctx, "alpha", &alpha, st))
    return wfx_code(st);
  return parse(&v, alpha, f, st);
}

int opc_fused_kernel_attrs(const wf_kernel_ctx *ctx, opc_fused *f,
                           wf_status *st) {
  wf_attr_value v;
  double alpha;

  if (wfx_host->kernel_attr(ctx, "fused_ops", &v) != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "attribute fused_ops is missing");
  if (check_list(&v, st) || wfx_kernel_attr_float(ctx, "alpha", &alpha, st))
    return wfx_code(st);
  return parse(&v, alpha, f, st);
}

/* The activations as the math plugin's reference kernels compute them
 * (float32 with the float functions). */
#define F_(sfx, fn) F_##sfx(fn)
#define F_f32(fn) fn##f
#define F_f64(fn) fn
#define ACT_FN(T, sfx, dt, u)                                                  \
  static T sigmoid_##sfx(T a) {                                                \
    T e;                                                                       \
    if (a >= 0)                                                                \
      return (T)1 / ((T)1 + F_(sfx, exp)(-a));                              \
    e = F_(sfx, exp)(a);                                                     \
    return e / ((T)1 + e);                                                     \
  }                                                                            \
  static T act_##sfx(T a, int act, T alpha) {                                  \
    switch (act) {                                                             \
    case OPC_ACT_RELU:                                                         \
      return a < 0 ? (T)0 : a;                                                 \
    case OPC_ACT_SIGMOID:                                                      \
      return sigmoid_##sfx(a);                                                 \
    case OPC_ACT_TANH:                                                         \
      return F_(sfx, tanh)(a);                                               \
    case OPC_ACT_ELU:                                                          \
      return a < 0 ? F_(sfx, expm1)(a) : a;                                  \
    case OPC_ACT_GELU:                                                         \
      if (isinf(a))                                                            \
        return a < 0 ? (T)0 : a;                                               \
      return (T)0.5 * a * F_(sfx, erfc)(-a * (T)0.7071067811865476);            \
    case OPC_ACT_LEAKY_RELU:                                                   \
      return a < 0 ? alpha * a : a;                                            \
    default:                                                                   \
      return a;                                                                \
    }                                                                          \
  }                                                                            \
  static void apply_##sfx(T *y, const T *b, int64_t outer, int64_t c,          \
                          int64_t inner, const opc_fused *f) {                 \
    T alpha = (T)f->alpha;                                                     \
    for (int64_t o = 0; o < outer; o++)                                        \
      for (int64_t k = 0; k < c; k++) {                                        \
        T *row = y + (o * c + k) * inner;                                      \
        for (int64_t i = 0; i < inner; i++)                                    \
          row[i] = act_##sfx((T)(row[i] + b[k]), f->act, alpha);               \
      }                                                                        \
  }
WFX_TYPES_FLOAT(ACT_FN, _)

void opc_fused_apply(int32_t dtype, void *y, const void *bias, int64_t outer,
                     int64_t c, int64_t inner, const opc_fused *f) {
  if (dtype == WF_FLOAT64)
    apply_f64(y, bias, outer, c, inner, f);
  else
    apply_f32(y, bias, outer, c, inner, f);
}
