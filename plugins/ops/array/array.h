/* plugins/ops/array/array.h — what the files of the array op plugin share:
 * the op definitions and kernels that plugin.c lists, attribute-definition
 * initialisers, and the byte-moving helpers every array kernel builds on.
 * Nothing here knows about dtypes beyond element sizes. */
#ifndef WF_OPS_ARRAY_H
#define WF_OPS_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin.h>

#include "opcommon.h"

/* ---- attribute definitions ----------------------------------------------- */

/* Every dtype a tensor can hold, strings too: for the ops that only hold
 * or pass a tensor on (Const, Placeholder, Identity). The others compute
 * on elements and keep to WF_DTYPES_ALL. */
#define ARY_TYPES_HELD (WF_DTYPES_ALL | WF_DTYPE_BIT(WF_STRING))

/* A dtype attribute restricted to `allowed`, without a default. */
#define ARY_ATTR_TYPE(nm, allowed, dc)                                         \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_DTYPE,          \
                                 .allowed_dtypes = (allowed), .doc = (dc)      \
  }
/* A dtype attribute restricted to `allowed`, defaulting to def. */
#define ARY_ATTR_TYPE_DEFAULT(nm, allowed, def, dc)                            \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_DTYPE,          \
                                 .allowed_dtypes = (allowed),                  \
                                 .has_default = 1,                             \
                                 .default_value = {.type = WF_ATTR_DTYPE,      \
                                                   .count = 1,                 \
                                                   .u.dtype = (def)},          \
                                 .doc = (dc)                                   \
  }
/* An int attribute defaulting to def. */
#define ARY_ATTR_INT(nm, def, dc)                                              \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_INT, .has_default = 1,                   \
        .default_value = {.type = WF_ATTR_INT, .count = 1, .u.i = (def)},      \
        .doc = (dc)                                                            \
  }
/* A required int attribute of at least min. */
#define ARY_ATTR_INT_MIN(nm, min, dc)                                          \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_INT,            \
                                 .has_minimum = 1, .minimum = (min),           \
                                 .doc = (dc)                                   \
  }
#define ARY_ATTR_FLOAT(nm, def, dc)                                            \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_FLOAT, .has_default = 1,                 \
        .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u.f = (def)},    \
        .doc = (dc)                                                            \
  }
/* A list(int) attribute defaulting to the empty list. */
#define ARY_ATTR_INTS_EMPTY(nm, dc)                                            \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,    \
        .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},     \
        .doc = (dc)                                                            \
  }
/* Index-typed attributes ("Tshape", "Index", ...): int32 or int64. */
#define ARY_DTYPES_INDEX (WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64))
#define ARY_ATTR_INDEX(nm, dc)                                                 \
  ARY_ATTR_TYPE_DEFAULT(nm, ARY_DTYPES_INDEX, WF_INT32, dc)

/* ---- index-valued tensors ------------------------------------------------ */

/* Most entries an index vector may hold (shape vectors, perms, begins). */
#define ARY_MAX_INDEX 32

/* Reads the int32/int64 tensor t (the op's input called `input`, for
 * messages) into out[0..*n-1]. rank_req: 1 for a vector (its length at most
 * max), 0 for a scalar. INVALID_ARGUMENT naming input for another dtype,
 * rank or length.
 *
 * Messages of this plugin do not name the node: the core puts "node 'x'
 * (op 'Y')" in front of every error of a shape function or kernel. */
int ary_read_index(const wf_tensor *t, int rank_req, int64_t max, int64_t *out,
                   int64_t *n, const char *input, wf_status *st);

/* Input i's value as an index vector during shape inference, when it is
 * known (a Const): returns 1 with out/n filled, 0 when unknown, or -1 with
 * st set when the known value is malformed (see ary_read_index). */
int ary_shape_index_value(const wf_shape_ctx *ctx, int32_t i, int rank_req,
                          int64_t max, int64_t *out, int64_t *n,
                          const char *input, wf_status *st);

/* The length of a 1-D input during shape inference when its shape says so,
 * else -1. A known rank other than 1 is INVALID_ARGUMENT naming input; the
 * return value is then -2 and st is set. */
int64_t ary_shape_vector_length(const wf_shape_ctx *ctx, int32_t i,
                                const char *input, wf_status *st);

/* Reads the shape vector t (the op's input called `input`: int32/int64,
 * (R,) with R <= WF_MAX_RANK, entries >= 0) into *s. INVALID_ARGUMENT
 * naming input otherwise. */
int ary_read_shape(const wf_tensor *t, const char *input, wf_shape *s,
                   wf_status *st);

/* During shape inference of an op whose input i holds its output's shape:
 * that shape when the input is known (a Const), else the input's length as
 * the rank with unknown dims, else rank_hint (-1: unknown rank). */
int ary_shape_from_input(wf_shape_ctx *ctx, int32_t i, const char *input,
                         int rank_hint, wf_shape *out, wf_status *st);

/* ---- byte movers --------------------------------------------------------- */

/* Most dimensions ary_strided_copy walks (Tile doubles the rank). */
#define ARY_COPY_MAX_RANK (2 * WF_MAX_RANK)

/* Copies the elements of a rank-`rank` index space dims[] (es bytes each)
 * from src to dst: element (i0, ..., ir) is read at src element offset
 * sum(i_k * sstr[k]) and written at dst element offset sum(i_k * dstr[k]).
 * Strides may be zero (repeat) or negative; the caller guarantees that
 * every offset reached lies inside its buffer. Nothing is touched when any
 * dim is 0. rank 0 copies one element. */
void ary_strided_copy(void *dst, const int64_t *dstr, const void *src,
                      const int64_t *sstr, const int64_t *dims, int rank,
                      size_t es);

/* Fills count elements of es bytes at dst with the element at value. */
void ary_fill_bytes(void *dst, const void *value, int64_t count, size_t es);

/* Makes output 0 a view of input 0 with the shape `out` (the element count
 * must match), sharing its buffer through the host's tensor_reshape: the
 * kernel of every op that only changes a shape (Reshape, Squeeze,
 * ExpandDims). Nothing is copied. */
int ary_output_reshaped(wf_kernel_ctx *ctx, const wf_shape *out, wf_status *st);

/* ---- what plugin.c lists ------------------------------------------------- */

extern const wf_op_def ary_const_op, ary_placeholder_op, ary_identity_op,
    ary_stop_gradient_op, ary_check_numerics_op, ary_noop_op, ary_fill_op, ary_zeros_like_op,
    ary_ones_like_op, ary_shape_op, ary_size_op;
extern const wf_kernel_def ary_const_kernel, ary_identity_kernel,
    ary_stop_gradient_kernel, ary_check_numerics_kernel, ary_noop_kernel, ary_fill_kernel,
    ary_zeros_like_kernel, ary_ones_like_kernel, ary_shape_kernel,
    ary_size_kernel;

extern const wf_op_def ary_reshape_op, ary_squeeze_op, ary_expand_dims_op,
    ary_transpose_op;
extern const wf_kernel_def ary_reshape_kernel, ary_squeeze_kernel,
    ary_expand_dims_kernel, ary_transpose_kernel;

extern const wf_op_def ary_concat_op, ary_split_op, ary_tile_op, ary_pad_op;
extern const wf_kernel_def ary_concat_kernel, ary_split_kernel, ary_tile_kernel,
    ary_pad_kernel;

extern const wf_op_def ary_slice_op, ary_strided_slice_op;
extern const wf_kernel_def ary_slice_kernel, ary_strided_slice_kernel;

extern const wf_op_def ary_gather_op, ary_one_hot_op;
extern const wf_kernel_def ary_gather_kernel, ary_one_hot_kernel;

/* The backward ops of the gradients (grad.c builds them). */
extern const wf_op_def ary_invert_permutation_op, ary_concat_offset_op,
    ary_tile_grad_op, ary_pad_grad_op, ary_slice_grad_op,
    ary_strided_slice_grad_op, ary_gather_grad_op, ary_unsorted_segment_sum_op;
extern const wf_kernel_def ary_invert_permutation_kernel,
    ary_concat_offset_kernel, ary_tile_grad_kernel, ary_pad_grad_kernel,
    ary_slice_grad_kernel, ary_strided_slice_grad_kernel,
    ary_gather_grad_kernel, ary_unsorted_segment_sum_kernel;

/* grad.c: every gradient definition of the plugin, NULL-terminated. */
extern const wf_gradient_def *const ary_gradients[];

#endif /* WF_OPS_ARRAY_H */
