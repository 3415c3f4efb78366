/* plugins/ops/array/gather.c — ops driven by integer indices: Gather (along
 * one axis, no batch_dims) and OneHot. An index out of range is an error
 * naming the index's position and its value, in both ops (unlike
 * TensorFlow's OneHot, which writes off_value for such indices). */
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
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "cannot gather from a scalar 'params'");
  if (opc_axis_normalize(axis_attr, ps->rank, axis, NULL, st))
    return opc_host()->status_code(st);
  if (ps->rank - 1 + is->rank > WF_MAX_RANK)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "the output would have rank %d, more than %d",
                    (int)(ps->rank - 1 + is->rank), WF_MAX_RANK);
  opc_shape_set_scalar(out);
  for (int i = 0; i < *axis; i++)
    out->dims[out->rank++] = ps->dims[i];
  for (int i = 0; i < is->rank; i++)
    out->dims[out->rank++] = is->dims[i];
  for (int i = *axis + 1; i < ps->rank; i++)
    out->dims[out->rank++] = ps->dims[i];
  return 0;
}

static int gather_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_host *h = opc_host();
  int64_t axis_attr;
  wf_shape ps, is, out;
  int axis;

  if (opc_shape_input(ctx, 0, NULL, &ps, st) ||
      opc_shape_input(ctx, 1, NULL, &is, st) ||
      opc_shape_attr_int(ctx, "axis", &axis_attr, st))
    return h->status_code(st);
  if (ps.rank < 0 || is.rank < 0)
    opc_shape_set_unknown(&out);
  else if (gather_dims(&ps, &is, axis_attr, &axis, &out, st))
    return h->status_code(st);
  h->shape_set_output(ctx, 0, &out);
  return 0;
}

static int gather_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_host *h = opc_host();
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
  char pos[OPC_SHAPE_STR_MAX], buf[OPC_SHAPE_STR_MAX];

  if (opc_kernel_input(ctx, 0, &params, &ps, st) ||
      opc_kernel_input(ctx, 1, &indices, &is, st) ||
      opc_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      gather_dims(&ps, &is, axis_attr, &axis, &out, st))
    return h->status_code(st);
  idt = h->tensor_dtype(indices);
  idx = h->tensor_data(indices);
  nidx = h->tensor_count(indices);
  n = ps.dims[axis];
  for (int64_t j = 0; j < nidx; j++) {
    int64_t v = int_at(idx, idt, j);

    if (v < 0 || v >= n)
      return opc_fail(st, WF_INVALID_ARGUMENT,
                      "indices%s = %" PRId64 " is out of range [0, %" PRId64
                      ") for axis %d of params %s",
                      position_str(j, &is, pos, sizeof pos), v, n, axis,
                      opc_shape_str(&ps, buf, sizeof buf));
  }
  if (!(y = h->kernel_output_new(ctx, 0, &out, st)))
    return h->status_code(st);
  es = opc_dtype_size(h->tensor_dtype(params));
  outer = dims_product(ps.dims, 0, axis);
  inner = dims_product(ps.dims, axis + 1, ps.rank);
  row = (size_t)inner * es;
  src = h->tensor_data(params);
  dst = h->tensor_data(y);
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
           "Paxis) is an error naming its position."};

const wf_kernel_def ary_gather_kernel =
    ARY_KERNEL("Gather", "T", WF_DTYPES_ALL, 0, gather_compute);

/* ---- OneHot -------------------------------------------------------------- */

/* The output shape: indices with a dimension of size depth (-1: unknown)
 * inserted at axis (-1: last), with *axis normalised. */
static int one_hot_dims(const wf_shape *is, int64_t depth, int64_t axis_attr,
                        int *axis, wf_shape *out, wf_status *st) {
  if (is->rank >= WF_MAX_RANK)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "'indices' already has rank %d, the most allowed",
                    (int)is->rank);
  if (axis_attr < -1 || axis_attr > is->rank)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "axis %" PRId64 " must be -1 (last) or in [0, %d]",
                    axis_attr, (int)is->rank);
  *axis = axis_attr == -1 ? is->rank : (int)axis_attr;
  opc_shape_set_scalar(out);
  out->rank = is->rank + 1;
  for (int i = 0, j = 0; i < out->rank; i++)
    out->dims[i] = i == *axis ? depth : is->dims[j++];
  return 0;
}

/* Checks the on/off inputs (1 and 2 after indices and depth) are scalars. */
static int check_scalar(const wf_shape *s, const char *input, wf_status *st) {
  char buf[OPC_SHAPE_STR_MAX];

  if (s->rank > 0)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "'%s' must be a scalar, got shape %s", input,
                    opc_shape_str(s, buf, sizeof buf));
  return 0;
}

static int one_hot_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_host *h = opc_host();
  int64_t axis_attr, depth = WF_UNKNOWN_DIM, n;
  wf_shape is, on, off, out;
  int axis, known;

  if (opc_shape_input(ctx, 0, NULL, &is, st) ||
      opc_shape_input(ctx, 2, NULL, &on, st) ||
      opc_shape_input(ctx, 3, NULL, &off, st) ||
      opc_shape_attr_int(ctx, "axis", &axis_attr, st) ||
      check_scalar(&on, "on_value", st) || check_scalar(&off, "off_value", st))
    return h->status_code(st);
  known = ary_shape_index_value(ctx, 1, 0, 1, &depth, &n, "depth", st);
  if (known < 0)
    return h->status_code(st);
  if (known && depth < 0)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "depth is %" PRId64 " (must be >= 0)", depth);
  if (is.rank < 0)
    opc_shape_set_unknown(&out);
  else if (one_hot_dims(&is, depth, axis_attr, &axis, &out, st))
    return h->status_code(st);
  h->shape_set_output(ctx, 0, &out);
  return 0;
}

static int one_hot_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_host *h = opc_host();
  const wf_tensor *indices, *dt, *on, *off;
  wf_tensor *y;
  int64_t axis_attr, depth, n, outer, inner, count;
  int32_t idt;
  size_t es;
  const void *idx, *onb;
  char *dst;
  wf_shape is, ons, offs, out;
  int axis;
  char pos[OPC_SHAPE_STR_MAX];

  if (opc_kernel_input(ctx, 0, &indices, &is, st) ||
      opc_kernel_input(ctx, 1, &dt, NULL, st) ||
      opc_kernel_input(ctx, 2, &on, &ons, st) ||
      opc_kernel_input(ctx, 3, &off, &offs, st) ||
      opc_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      check_scalar(&ons, "on_value", st) ||
      check_scalar(&offs, "off_value", st) ||
      ary_read_index(dt, 0, 1, &depth, &n, "depth", st))
    return h->status_code(st);
  if (depth < 0)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "depth is %" PRId64 " (must be >= 0)", depth);
  if (one_hot_dims(&is, depth, axis_attr, &axis, &out, st))
    return h->status_code(st);
  idt = h->tensor_dtype(indices);
  idx = h->tensor_data(indices);
  count = h->tensor_count(indices);
  for (int64_t j = 0; j < count; j++) {
    int64_t v = int_at(idx, idt, j);

    if (v < 0 || v >= depth)
      return opc_fail(st, WF_INVALID_ARGUMENT,
                      "indices%s = %" PRId64 " is out of range [0, %" PRId64
                      ") (depth)",
                      position_str(j, &is, pos, sizeof pos), v, depth);
  }
  if (!(y = h->kernel_output_new(ctx, 0, &out, st)))
    return h->status_code(st);
  es = opc_dtype_size(h->tensor_dtype(y));
  dst = h->tensor_data(y);
  ary_fill_bytes(dst, h->tensor_data(off), h->tensor_count(y), es);
  onb = h->tensor_data(on);
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
    ARY_ATTR_TYPE_DEFAULT("TI", OPC_DTYPES_INT, WF_INT64,
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
    ARY_KERNEL("OneHot", "T", WF_DTYPES_ALL, 0, one_hot_compute);
