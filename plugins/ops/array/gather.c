/* plugins/ops/array/gather.c — ops driven by integer indices: Gather (along
 * one axis, no batch_dims) and OneHot, and the ones that scatter-add back:
 * GatherGrad (Gather's dense gradient) and UnsortedSegmentSumToShape (what
 * turns a sparse gradient dense). An index out of range is an error naming
 * the index's position and its value, in every op (unlike TensorFlow's
 * OneHot, which writes off_value for such indices). Gradient functions are
 * in grad.c. */
#include <config.h>

#include "array.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Element i of an integer tensor's data, widened. */
static int64_t int_at(const void *data, int32_t dt, int64_t i) {
  switch (dt) {
  case WF_INT8:
    return ((const int8_t *)data)[i];
  case WF_UINT8:
    return ((const uint8_t *)data)[i];
  case WF_INT32:
    return ((const int32_t *)data)[i];
  default:
    return ((const int64_t *)data)[i];
  }
}

/* Writes "[i0, i1, ...]", the position of flat element `flat` in shape s,
 * into buf. */
static char *position_str(int64_t flat, const wf_shape *s, char *buf,
                          size_t len) {
  int64_t idx[WF_MAX_RANK];
  size_t used;

  for (int d = s->rank - 1; d >= 0; d--) {
    idx[d] = s->dims[d] > 0 ? flat % s->dims[d] : 0;
    flat = s->dims[d] > 0 ? flat / s->dims[d] : 0;
  }
  used = (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < s->rank && used < len; d++)
    used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64,
                             d ? ", " : "", idx[d]);
  if (used < len)
    snprintf(buf + used, len - used, "]");
  return buf;
}

/* Product of dims[from..to-1] (all known). */
static int64_t dims_product(const int64_t *dims, int from, int to) {
  int64_t p = 1;

  for (int i = from; i < to; i++)
    p *= dims[i];
  return p;
}

/* ---- Gather -------------------------------------------------------------- */

/* The output shape params[:axis] + indices + params[axis+1:] (ranks known),
 * with *axis normalised. */
static int gather_dims(const wf_shape *ps, const wf_shape *is,
                       int64_t axis_attr, int *axis, wf_shape *out,
                       wf_status *st) {
  if (ps->rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "cannot gather from a scalar 'params'");
  if (wfx_axis_normalize(axis_attr, ps->rank, axis, NULL, st))
    return wfx_code(st);
  if (ps->rank - 1 + is->rank > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the output would have rank %d, more than %d",
                    (int)(ps->rank - 1 + is->rank), WF_MAX_RANK);
  wfx_shape_set_scalar(out);
  for (int i = 0; i < *axis; i++)
    out->dims[out->rank++] = ps->dims[i];
  for (int i = 0; i < is->rank; i++)
    out->dims[out->rank++] = is->dims[i];
  for (int i = *axis + 1; i < ps->rank; i++)
    out->dims[out->rank++] = ps->dims[i];
  return 0;
}

static int gather_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t axis_attr;
  wf_shape ps, is, out;
  int axis;

  if (wfx_shape_input(ctx, 0, NULL, &ps, st) ||
      wfx_shape_input(ctx, 1, NULL, &is, st) ||
      wfx_shape_attr_int(ctx, "axis", &axis_attr, st))
    return wfx_code(st);
  if (ps.rank < 0 || is.rank < 0)
    wfx_shape_set_unknown(&out);
  else if (gather_dims(&ps, &is, axis_attr, &axis, &out, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int gather_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *params, *indices;
  wf_tensor *y;
  int64_t axis_attr, outer, inner, n, nidx;
  int32_t idt;
  size_t es, row;
  const void *idx;
  const char *src;
  char *dst;
  wf_shape ps, is, out;
  int axis;
  char pos[WFX_SHAPE_STR_MAX], buf[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &params, &ps, st) ||
      wfx_kernel_input(ctx, 1, &indices, &is, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      gather_dims(&ps, &is, axis_attr, &axis, &out, st))
    return wfx_code(st);
  idt = wfx_dtype(indices);
  idx = wfx_data(indices);
  nidx = wfx_count(indices);
  n = ps.dims[axis];
  for (int64_t j = 0; j < nidx; j++) {
    int64_t v = int_at(idx, idt, j);

    if (v < 0 || v >= n)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "indices%s = %" PRId64 " is out of range [0, %" PRId64
                      ") for axis %d of params %s",
                      position_str(j, &is, pos, sizeof pos), v, n, axis,
                      wfx_shape_str(&ps, buf, sizeof buf));
  }
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  es = wfx_dtype_size(wfx_dtype(params));
  outer = dims_product(ps.dims, 0, axis);
  inner = dims_product(ps.dims, axis + 1, ps.rank);
  row = (size_t)inner * es;
  src = wfx_data(params);
  dst = wfx_data(y);
  if (row == 0)
    return 0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < nidx; j++)
      memcpy(dst + (size_t)(o * nidx + j) * row,
             src + (size_t)(o * n + int_at(idx, idt, j)) * row, row);
  return 0;
}

static const wf_arg_def gather_inputs[] = {
    WF_ARG_T("params", "T", "(P0, ..., Paxis, ..., PR-1)"),
    WF_ARG_T("indices", "Tindices", "(I0, ..., IK-1), each in [0, Paxis)"),
    WF_ARG_END};
static const wf_arg_def gather_outputs[] = {
    WF_ARG_T("output", "T",
             "(P0, ..., Paxis-1, I0, ..., IK-1, Paxis+1, ..., PR-1)"),
    WF_ARG_END};
static const wf_attr_def gather_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type of params"),
    ARY_ATTR_INDEX("Tindices", "int32 or int64: the type of 'indices'"),
    ARY_ATTR_INT("axis", 0, "dimension of params to index, -R <= axis < R"),
    WF_ATTR_END};

const wf_op_def ary_gather_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Gather",
    .inputs = gather_inputs,
    .outputs = gather_outputs,
    .attrs = gather_attrs,
    .shape_fn = gather_shape,
    .doc = "Picks slices of params along 'axis' by index: an embedding table "
           "(V, D) with indices (N, T) -> (N, T, D). An index outside [0, "
           "Paxis) is an error naming its position. The gradient of params "
           "is sparse along axis 0 (rows indices, flattened, holding dy's "
           "slices), dense (GatherGrad) along other axes; indices get "
           "none."};

const wf_kernel_def ary_gather_kernel =
    WFX_CPU_REFERENCE("Gather", "T", WF_DTYPES_ALL, gather_compute);

/* ---- OneHot -------------------------------------------------------------- */

/* The output shape: indices with a dimension of size depth (-1: unknown)
 * inserted at axis (-1: last), with *axis normalised. */
static int one_hot_dims(const wf_shape *is, int64_t depth, int64_t axis_attr,
                        int *axis, wf_shape *out, wf_status *st) {
  if (is->rank >= WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'indices' already has rank %d, the most allowed",
                    (int)is->rank);
  if (axis_attr < -1 || axis_attr > is->rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "axis %" PRId64 " must be -1 (last) or in [0, %d]",
                    axis_attr, (int)is->rank);
  *axis = axis_attr == -1 ? is->rank : (int)axis_attr;
  wfx_shape_set_scalar(out);
  out->rank = is->rank + 1;
  for (int i = 0, j = 0; i < out->rank; i++)
    out->dims[i] = i == *axis ? depth : is->dims[j++];
  return 0;
}

/* Checks the on/off inputs (1 and 2 after indices and depth) are scalars. */
static int check_scalar(const wf_shape *s, const char *input, wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (s->rank > 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'%s' must be a scalar, got shape %s", input,
                    wfx_shape_str(s, buf, sizeof buf));
  return 0;
}

static int one_hot_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t axis_attr, depth = WF_UNKNOWN_DIM, n;
  wf_shape is, on, off, out;
  int axis, known;

  if (wfx_shape_input(ctx, 0, NULL, &is, st) ||
      wfx_shape_input(ctx, 2, NULL, &on, st) ||
      wfx_shape_input(ctx, 3, NULL, &off, st) ||
      wfx_shape_attr_int(ctx, "axis", &axis_attr, st) ||
      check_scalar(&on, "on_value", st) || check_scalar(&off, "off_value", st))
    return wfx_code(st);
  known = ary_shape_index_value(ctx, 1, 0, 1, &depth, &n, "depth", st);
  if (known < 0)
    return wfx_code(st);
  if (known && depth < 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "depth is %" PRId64 " (must be >= 0)", depth);
  if (is.rank < 0)
    wfx_shape_set_unknown(&out);
  else if (one_hot_dims(&is, depth, axis_attr, &axis, &out, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int one_hot_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *indices, *dt, *on, *off;
  wf_tensor *y;
  int64_t axis_attr, depth, n, outer, inner, count;
  int32_t idt;
  size_t es;
  const void *idx, *onb;
  char *dst;
  wf_shape is, ons, offs, out;
  int axis;
  char pos[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &indices, &is, st) ||
      wfx_kernel_input(ctx, 1, &dt, NULL, st) ||
      wfx_kernel_input(ctx, 2, &on, &ons, st) ||
      wfx_kernel_input(ctx, 3, &off, &offs, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      check_scalar(&ons, "on_value", st) ||
      check_scalar(&offs, "off_value", st) ||
      ary_read_index(dt, 0, 1, &depth, &n, "depth", st))
    return wfx_code(st);
  if (depth < 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "depth is %" PRId64 " (must be >= 0)", depth);
  if (one_hot_dims(&is, depth, axis_attr, &axis, &out, st))
    return wfx_code(st);
  idt = wfx_dtype(indices);
  idx = wfx_data(indices);
  count = wfx_count(indices);
  for (int64_t j = 0; j < count; j++) {
    int64_t v = int_at(idx, idt, j);

    if (v < 0 || v >= depth)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "indices%s = %" PRId64 " is out of range [0, %" PRId64
                      ") (depth)",
                      position_str(j, &is, pos, sizeof pos), v, depth);
  }
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  es = wfx_dtype_size(wfx_dtype(y));
  dst = wfx_data(y);
  ary_fill_bytes(dst, wfx_data(off), wfx_count(y), es);
  onb = wfx_data(on);
  outer = dims_product(is.dims, 0, axis);
  inner = dims_product(is.dims, axis, is.rank);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t r = 0; r < inner; r++) {
      int64_t v = int_at(idx, idt, o * inner + r);
      memcpy(dst + (size_t)((o * depth + v) * inner + r) * es, onb, es);
    }
  return 0;
}

static const wf_arg_def one_hot_inputs[] = {
    WF_ARG_T("indices", "TI", "(I0, ..., IK-1), each in [0, depth)"),
    WF_ARG_FIXED("depth", WF_INT32, "() size of the one-hot dimension"),
    WF_ARG_T("on_value", "T", "() value at each index"),
    WF_ARG_T("off_value", "T", "() value everywhere else"), WF_ARG_END};
static const wf_arg_def one_hot_outputs[] = {
    WF_ARG_T("output", "T",
             "indices' shape with depth inserted at axis, e.g. (N, depth)"),
    WF_ARG_END};
static const wf_attr_def one_hot_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type of the output"),
    ARY_ATTR_TYPE_DEFAULT("TI", WFX_DTYPES_INT, WF_INT64,
                          "integer type of 'indices'"),
    ARY_ATTR_INT("axis", -1,
                 "where the depth dimension goes: -1 (last) or 0..K"),
    WF_ATTR_END};

const wf_op_def ary_one_hot_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OneHot",
    .inputs = one_hot_inputs,
    .outputs = one_hot_outputs,
    .attrs = one_hot_attrs,
    .shape_fn = one_hot_shape,
    .doc = "One-hot encoding: labels (N,) with depth C -> (N, C), on_value at "
           "[i, labels[i]] and off_value elsewhere. An index outside [0, "
           "depth) is an error (TensorFlow writes a row of off_value "
           "instead). The shape is known while building when 'depth' is a "
           "Const."};

const wf_kernel_def ary_one_hot_kernel =
    WFX_CPU_REFERENCE("OneHot", "T", WF_DTYPES_ALL, one_hot_compute);

/* ---- scatter-adding ------------------------------------------------------ */

/* Adds rows of src into dst: for o < outer and j < nidx, the row of `inner`
 * elements at src (o * nidx + j) goes to dst row (o * n + index j). Indices
 * are checked by the caller. Accumulates in double (acc: outer * n * inner,
 * zeroed by the caller), then stores into dst. */
#define DEF_SCATTER_ADD(T, sfx, dt, u)                                         \
  static void scatter_add_##sfx(void *dstv, const void *srcv, double *acc,     \
                                const void *idx, int32_t idt, int64_t nidx,    \
                                int64_t outer, int64_t n, int64_t inner) {     \
    T *dst = dstv;                                                             \
    const T *src = srcv;                                                       \
    for (int64_t o = 0; o < outer; o++)                                        \
      for (int64_t j = 0; j < nidx; j++) {                                     \
        double *a = acc + (o * n + int_at(idx, idt, j)) * inner;               \
        const T *r = src + (o * nidx + j) * inner;                             \
        for (int64_t k = 0; k < inner; k++)                                    \
          a[k] += r[k];                                                        \
      }                                                                        \
    for (int64_t k = 0; k < outer * n * inner; k++)                            \
      dst[k] = (T)acc[k];                                                      \
  }
WFX_TYPES_FLOAT(DEF_SCATTER_ADD, _)

/* Checks every index of `indices` (shape is) is in [0, n); the message
 * names `what` (the dimension indexed). */
static int check_indices(const wf_tensor *indices, const wf_shape *is,
                         int64_t n, const char *what, wf_status *st) {
  int32_t idt = wfx_dtype(indices);
  const void *idx = wfx_data(indices);
  int64_t count = wfx_count(indices);
  char pos[WFX_SHAPE_STR_MAX];

  for (int64_t j = 0; j < count; j++) {
    int64_t v = int_at(idx, idt, j);

    if (v < 0 || v >= n)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "indices%s = %" PRId64 " is out of range [0, %" PRId64
                      ") for %s",
                      position_str(j, is, pos, sizeof pos), v, n, what);
  }
  return 0;
}

/* Allocates output 0 of shape out and scatter-adds dy into it (see
 * DEF_SCATTER_ADD; indices checked). */
static int scatter_output(wf_kernel_ctx *ctx, const wf_shape *out,
                          const wf_tensor *dy, const wf_tensor *indices,
                          int64_t outer, int64_t n, int64_t inner,
                          wf_status *st) {
  wf_tensor *y;
  double *acc;
  int64_t count;

  if (!(y = wfx_host->kernel_output_new(ctx, 0, out, st)))
    return wfx_code(st);
  count = wfx_count(y);
  if (count == 0)
    return 0;
  if (!(acc = wfx_host->alloc((size_t)count * sizeof *acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " accumulators", count);
  memset(acc, 0, (size_t)count * sizeof *acc);
  if (wfx_dtype(dy) == WF_FLOAT32)
    scatter_add_f32(wfx_data(y), wfx_data(dy), acc, wfx_data(indices),
                    wfx_dtype(indices), wfx_count(indices), outer, n, inner);
  else
    scatter_add_f64(wfx_data(y), wfx_data(dy), acc, wfx_data(indices),
                    wfx_dtype(indices), wfx_count(indices), outer, n, inner);
  wfx_host->free(acc);
  return 0;
}

/* 1 when a and b have the same rank and dims (all known). */
static int same_dims(const wf_shape *a, const wf_shape *b) {
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return 0;
  return 1;
}

/* ---- GatherGrad ---------------------------------------------------------- */

static int gather_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t axis_attr;
  wf_shape ps, is, dy, want;
  int axis;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, 1, NULL, &is, st) ||
      wfx_shape_input(ctx, 2, NULL, &dy, st) ||
      wfx_shape_attr_int(ctx, "axis", &axis_attr, st) ||
      ary_shape_from_input(ctx, 0, "params_shape", -1, &ps, st))
    return wfx_code(st);
  if (ps.rank >= 0 && is.rank >= 0) {
    if (gather_dims(&ps, &is, axis_attr, &axis, &want, st))
      return wfx_code(st);
    if (dy.rank >= 0 && dy.rank != want.rank)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dy %s does not have the rank of Gather's output %s",
                      wfx_shape_str(&dy, a, sizeof a),
                      wfx_shape_str(&want, b, sizeof b));
  }
  wfx_host->shape_set_output(ctx, 0, &ps);
  return 0;
}

static int gather_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *pt, *indices, *dy;
  int64_t axis_attr;
  wf_shape ps, is, dys, want;
  int axis;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &pt, NULL, st) ||
      wfx_kernel_input(ctx, 1, &indices, &is, st) ||
      wfx_kernel_input(ctx, 2, &dy, &dys, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      ary_read_shape(pt, "params_shape", &ps, st) ||
      gather_dims(&ps, &is, axis_attr, &axis, &want, st))
    return wfx_code(st);
  if (!same_dims(&dys, &want))
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "dy has shape %s; Gather's output has %s",
        wfx_shape_str(&dys, a, sizeof a), wfx_shape_str(&want, b, sizeof b));
  snprintf(a, sizeof a, "axis %d of params %s", axis,
           wfx_shape_str(&ps, b, sizeof b));
  if (check_indices(indices, &is, ps.dims[axis], a, st))
    return wfx_code(st);
  return scatter_output(ctx, &ps, dy, indices, dims_product(ps.dims, 0, axis),
                        ps.dims[axis], dims_product(ps.dims, axis + 1, ps.rank),
                        st);
}

static const wf_arg_def gather_grad_inputs[] = {
    WF_ARG_T("params_shape", "Tshape", "(R,) the shape of Gather's params"),
    WF_ARG_T("indices", "Tindices", "(I0, ..., IK-1) Gather's indices"),
    WF_ARG_T("dy", "T",
             "(P0, ..., Paxis-1, I0, ..., IK-1, Paxis+1, ..., PR-1)"),
    WF_ARG_END};
static const wf_arg_def gather_grad_outputs[] = {
    WF_ARG_T("dparams", "T", "(P0, ..., PR-1)"), WF_ARG_END};
static const wf_attr_def gather_grad_attrs[] = {
    ARY_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    ARY_ATTR_INDEX("Tshape", "int32 or int64: the type of 'params_shape'"),
    ARY_ATTR_INDEX("Tindices", "int32 or int64: the type of 'indices'"),
    ARY_ATTR_INT("axis", 0, "Gather's axis"), WF_ATTR_END};

const wf_op_def ary_gather_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "GatherGrad",
    .inputs = gather_grad_inputs,
    .outputs = gather_grad_outputs,
    .attrs = gather_grad_attrs,
    .shape_fn = gather_grad_shape,
    .doc = "The dense gradient of Gather along 'axis': zeros of "
           "params_shape, with each slice of dy added at the index that "
           "picked it (repeated indices add up; accumulated in double). "
           "Gather's gradient function uses it for axes other than 0; along "
           "axis 0 the gradient stays sparse."};

const wf_kernel_def ary_gather_grad_kernel =
    WFX_CPU_REFERENCE("GatherGrad", "T", WFX_DTYPES_FLOAT, gather_grad_compute);

/* ---- UnsortedSegmentSumToShape ------------------------------------------- */

/* Checks values (rank >= 1), indices ((K,)) and the output shape (rank
 * known or not) against each other; unknown dims pass. */
static int segment_check(const wf_shape *vs, const wf_shape *is,
                         const wf_shape *out, wf_status *st) {
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (vs->rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "values must have rank 1 or more (K, ...), got a scalar");
  if (is->rank >= 0 && is->rank != 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "indices must be a vector (K,), got shape %s",
                    wfx_shape_str(is, a, sizeof a));
  if (vs->rank > 0 && is->rank == 1 && vs->dims[0] >= 0 && is->dims[0] >= 0 &&
      vs->dims[0] != is->dims[0])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "values %s and indices %s differ in their first "
                    "dimension (K)",
                    wfx_shape_str(vs, a, sizeof a),
                    wfx_shape_str(is, b, sizeof b));
  if (vs->rank < 0 || out->rank < 0)
    return 0;
  if (out->rank != vs->rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "dense_shape %s does not have the rank of values %s",
                    wfx_shape_str(out, a, sizeof a),
                    wfx_shape_str(vs, b, sizeof b));
  for (int i = 1; i < vs->rank; i++)
    if (out->dims[i] >= 0 && vs->dims[i] >= 0 && out->dims[i] != vs->dims[i])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dense_shape %s and values %s differ in dimension %d "
                      "(only the first may)",
                      wfx_shape_str(out, a, sizeof a),
                      wfx_shape_str(vs, b, sizeof b), i);
  return 0;
}

static int segment_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape vs, is, out;

  if (wfx_shape_input(ctx, 0, NULL, &vs, st) ||
      wfx_shape_input(ctx, 1, NULL, &is, st) ||
      ary_shape_from_input(ctx, 2, "dense_shape", vs.rank, &out, st) ||
      segment_check(&vs, &is, &out, st))
    return wfx_code(st);
  /* Without the value of dense_shape the inner dims are values'. */
  if (out.rank >= 0 && vs.rank == out.rank)
    for (int i = 1; i < out.rank; i++)
      if (out.dims[i] < 0)
        out.dims[i] = vs.dims[i];
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int segment_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *values, *indices, *dt;
  wf_shape vs, is, out;
  char a[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &values, &vs, st) ||
      wfx_kernel_input(ctx, 1, &indices, &is, st) ||
      wfx_kernel_input(ctx, 2, &dt, NULL, st) ||
      ary_read_shape(dt, "dense_shape", &out, st) ||
      segment_check(&vs, &is, &out, st))
    return wfx_code(st);
  if (out.rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "dense_shape must have rank 1 or more, got ()");
  snprintf(a, sizeof a, "the first dimension of dense_shape (%" PRId64 ")",
           out.dims[0]);
  if (check_indices(indices, &is, out.dims[0], a, st))
    return wfx_code(st);
  return scatter_output(ctx, &out, values, indices, 1, out.dims[0],
                        dims_product(out.dims, 1, out.rank), st);
}

static const wf_arg_def segment_inputs[] = {
    WF_ARG_T("values", "T", "(K, D1, ..., DR-1) rows"),
    WF_ARG_T("indices", "Tindices", "(K,) row of the output of each value row"),
    WF_ARG_FIXED("dense_shape", WF_INT64, "(R,) the output's shape"),
    WF_ARG_END};
static const wf_arg_def segment_outputs[] = {
    WF_ARG_T("output", "T", "(dense_shape[0], D1, ..., DR-1)"), WF_ARG_END};
static const wf_attr_def segment_attrs[] = {
    ARY_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    ARY_ATTR_INDEX("Tindices", "int32 or int64: the type of 'indices'"),
    WF_ATTR_END};

const wf_op_def ary_unsorted_segment_sum_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "UnsortedSegmentSumToShape",
    .inputs = segment_inputs,
    .outputs = segment_outputs,
    .attrs = segment_attrs,
    .flags = WF_OP_SCATTER_ADD,
    .shape_fn = segment_shape,
    .doc = "A sparse tensor made dense: zeros of dense_shape with row k of "
           "values added at row indices[k] (repeated indices add up, in any "
           "order; accumulated in double). An index outside [0, "
           "dense_shape[0]) is an error naming it. The core's autodiff uses "
           "it to densify sparse gradients (values, indices, dense_shape). "
           "The shape is known while building when dense_shape is a Const; "
           "otherwise its inner dimensions are values'."};

const wf_kernel_def ary_unsorted_segment_sum_kernel = WFX_CPU_REFERENCE(
    "UnsortedSegmentSumToShape", "T", WFX_DTYPES_FLOAT, segment_compute);
