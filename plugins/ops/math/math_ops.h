/* plugins/ops/math/math_ops.h — what the math plugin's source files share:
 * the shape functions, reference CPU kernels and gradient functions that
 * plugin.c lists in its tables, and a few scalar helpers. Op semantics are
 * documented with the op definitions in plugin.c. Nothing here is visible
 * outside the plugin. */
#ifndef WF_OPS_MATH_OPS_H
#define WF_OPS_MATH_OPS_H

#include <math.h>

#include <weft/plugin.h>

#include "opcommon.h"

/* Messages here never name the node or op: the core prefixes every status
 * a shape function or kernel returns with both. */

/* ---- shape functions --------------------------------------------------- */

/* Two inputs broadcast together into output 0. */
wf_shape_fn math_shape_broadcast;
/* Output 0 has input 0's shape. */
wf_shape_fn math_shape_same;
/* Every input has one shape (merged); output 0 has it. */
wf_shape_fn math_shape_all_same;
/* Select(condition, x, y): the three broadcast together. */
wf_shape_fn math_shape_select;
/* Reductions: attrs axes (empty = all) and keep_dims. */
wf_shape_fn math_shape_reduce;
/* ArgMax: attr axis, removed from the shape. */
wf_shape_fn math_shape_argmax;
wf_shape_fn math_shape_matmul;
wf_shape_fn math_shape_batch_matmul;
/* _FusedMatMul: MatMul's shape; bias (N,) checked. */
wf_shape_fn math_shape_fused_matmul;
/* SumToLike(x, like): like's shape, which must broadcast to x's. */
wf_shape_fn math_shape_sum_to_like;
/* SumGrad, MeanGrad, ProdGrad (dy, x) and MaxMinGrad (dy, x, y): x's
 * shape; dy (and y) must have the reduced shape of the axes attrs. */
wf_shape_fn math_shape_reduce_grad;

/* ---- reference CPU kernels --------------------------------------------- */

/* binary.c */
wf_kernel_compute_fn math_add, math_sub, math_mul, math_div, math_maximum,
    math_minimum, math_pow, math_equal, math_less, math_greater, math_select,
    math_add_n;
/* unary.c */
wf_kernel_compute_fn math_neg, math_abs, math_exp, math_log, math_sqrt,
    math_rsqrt, math_square, math_tanh, math_sigmoid, math_relu,
    math_leaky_relu, math_elu, math_gelu, math_softplus, math_cast;
/* reduce.c */
wf_kernel_compute_fn math_sum, math_mean, math_max, math_min, math_prod,
    math_argmax;
/* matmul.c */
wf_kernel_compute_fn math_matmul, math_batch_matmul, math_fused_matmul;
/* unary_grad.c: the fused backward ops of the activations */
wf_kernel_compute_fn math_relu_grad, math_leaky_relu_grad, math_elu_grad,
    math_sigmoid_grad, math_tanh_grad, math_sqrt_grad, math_rsqrt_grad,
    math_softplus_grad, math_gelu_grad, math_abs_grad;
/* reduce.c */
wf_kernel_compute_fn math_sum_to_like;
/* reduce_grad.c */
wf_kernel_compute_fn math_sum_grad, math_mean_grad, math_max_min_grad,
    math_prod_grad;

/* ---- gradient functions (grad.c) ---------------------------------------- */

wf_grad_fn math_grad_add, math_grad_sub, math_grad_mul, math_grad_div,
    math_grad_maximum, math_grad_minimum, math_grad_pow, math_grad_select,
    math_grad_add_n, math_grad_neg, math_grad_abs, math_grad_exp,
    math_grad_log, math_grad_sqrt, math_grad_rsqrt, math_grad_square,
    math_grad_tanh, math_grad_sigmoid, math_grad_relu, math_grad_leaky_relu,
    math_grad_elu, math_grad_gelu, math_grad_softplus, math_grad_cast,
    math_grad_sum, math_grad_mean, math_grad_max_min, math_grad_prod,
    math_grad_matmul, math_grad_batch_matmul, math_grad_sum_to_like,
    math_grad_sum_grad, math_grad_mean_grad, math_grad_relu_grad,
    math_grad_leaky_relu_grad, math_grad_abs_grad, math_grad_sigmoid_grad,
    math_grad_tanh_grad, math_grad_sqrt_grad, math_grad_elu_grad,
    math_grad_softplus_grad;

/* ---- helpers shared by the kernels --------------------------------------- */

/* Reports that a kernel has no implementation for dtype (UNIMPLEMENTED,
 * naming the dtype); returns the code. */
int math_unsupported_dtype(int32_t dtype, wf_status *st);

/* The axes a reduction names (attr "axes"; empty = all) as a bit mask over
 * a known rank; INVALID_ARGUMENT for an axis out of range or repeated. */
int math_reduce_mask(const int64_t *axes, int64_t n, int rank, uint32_t *mask,
                     wf_status *st);
/* out = s without the masked axes (keep_dims: with them as 1). */
void math_reduced_shape(const wf_shape *s, uint32_t mask, int keep_dims,
                        wf_shape *out);

/* 1 / (1 + e^-a) without overflow and with full relative precision in both
 * tails (e^x is only ever taken of x <= 0). */
static inline double math_sigmoid_f64(double a) {
  double e;

  if (a >= 0)
    return 1.0 / (1.0 + exp(-a));
  e = exp(a);
  return e / (1.0 + e);
}
static inline float math_sigmoid_f32(float a) {
  float e;

  if (a >= 0)
    return 1.0f / (1.0f + expf(-a));
  e = expf(a);
  return e / (1.0f + e);
}

/* Unsigned counterparts (wrapping arithmetic without undefined behaviour)
 * per dtype suffix of opcommon.h's type lists; floats map to themselves. */
#define MATH_UT(sfx) MATH_UT_##sfx
#define MATH_UT_f32 float
#define MATH_UT_f64 double
#define MATH_UT_i8 uint8_t
#define MATH_UT_u8 uint8_t
#define MATH_UT_i32 uint32_t
#define MATH_UT_i64 uint64_t
#define MATH_UT_b8 uint8_t

/* Integer limits per suffix (0 for the float suffixes, where unused). */
#define MATH_LO(sfx) MATH_LO_##sfx
#define MATH_HI(sfx) MATH_HI_##sfx
#define MATH_LO_f32 0
#define MATH_HI_f32 0
#define MATH_LO_f64 0
#define MATH_HI_f64 0
#define MATH_LO_i8 INT8_MIN
#define MATH_HI_i8 INT8_MAX
#define MATH_LO_u8 0
#define MATH_HI_u8 UINT8_MAX
#define MATH_LO_i32 INT32_MIN
#define MATH_HI_i32 INT32_MAX
#define MATH_LO_i64 INT64_MIN
#define MATH_HI_i64 INT64_MAX
#define MATH_LO_b8 0
#define MATH_HI_b8 1

#endif /* WF_OPS_MATH_OPS_H */
