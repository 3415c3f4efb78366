/* plugins/ops/math/math_ops.h — what the math plugin's source files share:
 * the shape functions and reference CPU kernels that plugin.c lists in its
 * tables. Op semantics are documented with the op definitions in plugin.c.
 * Nothing here is visible outside the plugin. */
#ifndef WF_OPS_MATH_OPS_H
#define WF_OPS_MATH_OPS_H

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
wf_kernel_compute_fn math_matmul, math_batch_matmul;

/* Reports that a kernel has no implementation for dtype (UNIMPLEMENTED,
 * naming the dtype); returns the code. */
int math_unsupported_dtype(int32_t dtype, wf_status *st);

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
