/* plugins/devices/cuda/cuda_array.c — Gather and the ops that add rows
 * back densely (GatherGrad, UnsortedSegmentSumToShape) on the GPU.
 *
 * Indices (and the shape vectors) are host inputs: every index is checked
 * on the host before anything is queued, with the CPU kernels' messages,
 * and the host sorts the rows so that the device sums each output row in
 * the CPU's order without atomics. OneHot and the other array ops stay on
 * the CPU. */
#include <config.h>

#include "cuda_work.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t product(const int64_t *dims, int from, int to) {
  int64_t p = 1;

  for (int i = from; i < to; i++)
    p *= dims[i];
  return p;
}

/* Gather's output shape, params[:axis] + indices + params[axis+1:], for
 * shapes and an axis (normalised) the op's shape function accepted. */
static void gather_out_shape(const wf_shape *ps, const wf_shape *is, int axis,
                             wf_shape *out) {
  wfx_shape_set_scalar(out);
  for (int i = 0; i < axis; i++)
    out->dims[out->rank++] = ps->dims[i];
  for (int i = 0; i < is->rank; i++)
    out->dims[out->rank++] = is->dims[i];
  for (int i = axis + 1; i < ps->rank; i++)
    out->dims[out->rank++] = ps->dims[i];
}

/* The host indices (int32/int64, any shape) as int64 in a new host block,
 * each checked to lie in [0, n); `what` says of what. */
static int read_indices(const wf_tensor *t, int64_t n, const char *what,
                        int64_t **out, wf_status *st) {
  int32_t dt = wfx_dtype(t);
  int64_t k = wfx_count(t);
  const void *p = wfx_data(t);
  wf_shape s;

  *out = NULL;
  if (dt != WF_INT32 && dt != WF_INT64)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "indices must be int32 or int64, not %s",
                    wfx_dtype_name(dt));
  if (k == 0)
    return 0;
  if (!(*out = wfx_host->alloc((size_t)k * sizeof **out, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of host memory for %" PRId64 " indices", k);
  wfx_host->tensor_shape(t, &s);
  for (int64_t j = 0; j < k; j++) {
    int64_t v = dt == WF_INT32 ? ((const int32_t *)p)[j]
                               : ((const int64_t *)p)[j];
    if (v < 0 || v >= n) {
      char pos[WFX_SHAPE_STR_MAX];
      int64_t rest = j;
      size_t used = 0;
      int64_t coord[WF_MAX_RANK];
      for (int d = s.rank - 1; d >= 0; d--) {
        coord[d] = s.dims[d] ? rest % s.dims[d] : 0;
        rest = s.dims[d] ? rest / s.dims[d] : 0;
      }
      pos[0] = 0;
      if (s.rank > 0) {
        used = (size_t)snprintf(pos, sizeof pos, "[");
        for (int d = 0; d < s.rank && used < sizeof pos; d++)
          used += (size_t)snprintf(pos + used, sizeof pos - used,
                                   "%s%" PRId64, d ? ", " : "", coord[d]);
        if (used < sizeof pos)
          snprintf(pos + used, sizeof pos - used, "]");
      }
      wfx_host->free(*out);
      *out = NULL;
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "indices%s = %" PRId64 " is out of range [0, %" PRId64
                      ") for %s",
                      pos, v, n, what);
    }
    (*out)[j] = v;
  }
  return 0;
}

static int gather_compute(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {
  const wf_tensor *params, *indices;
  wf_shape ps, is, out;
  int64_t axis_attr, *idx = NULL, k;
  int axis, rc;
  size_t es;
  wf_tensor *y;
  cuw w = {0};
  char what[2 * WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  void *didx;

  /* The op's shape function checks the geometry (params not a scalar, the
   * axis in range, the output's rank) and gives the output's shape,
   * params[:axis] + indices + params[axis+1:]; the indices' values are
   * checked here. */
  if (wfx_kernel_input(ctx, 0, &params, &ps, st) ||
      wfx_kernel_input(ctx, 1, &indices, &is, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &out, st))
    return wfx_code(st);
  axis = (int)(axis_attr < 0 ? axis_attr + ps.rank : axis_attr);
  es = wfx_dtype_size(wfx_dtype(params));
  if (es != 1 && es != 4 && es != 8)
    return wfx_fail(st, WF_UNIMPLEMENTED, "no CUDA Gather for %s",
                    wfx_dtype_name(wfx_dtype(params)));
  snprintf(what, sizeof what, "axis %d of params %s", axis,
           wfx_shape_str(&ps, b, sizeof b));
  if (read_indices(indices, ps.dims[axis], what, &idx, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st))) {
    rc = wfx_code(st);
    goto done;
  }
  k = wfx_count(indices);
  rc = 0;
  if (wfx_count(y) == 0)
    goto done;
  if ((rc = cuw_begin(&w, ctx, st)) ||
      (rc = cuw_upload(&w, idx, (size_t)k * sizeof *idx, &didx,
                           "the indices", st)))
    goto done;
  rc =
      cuw_check(&w, "the gather kernel",
                cuda_gather((int)es, product(ps.dims, 0, axis), ps.dims[axis],
                            k, product(ps.dims, axis + 1, ps.rank),
                            wfx_data(params), didx, wfx_data(y), w.dev->stream),
                st);

done:
  cuw_end(&w);
  wfx_host->free(idx);
  return rc;
}

/* The rows of out (rows of them) that each of k indices adds to, as lists
 * sorted by (row, position): start (rows + 1) then order (k), in one host
 * block of rows + 1 + k int64s. */
static int segment_lists(const int64_t *idx, int64_t k, int64_t rows,
                         int64_t **out, wf_status *st) {
  int64_t *mem, *start, *order;

  if (!(mem = wfx_host->alloc((size_t)(rows + 1 + k) * sizeof *mem, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of host memory for lists of %" PRId64 " rows", rows);
  start = mem;
  order = mem + rows + 1;
  memset(start, 0, (size_t)(rows + 1) * sizeof *start);
  for (int64_t j = 0; j < k; j++)
    start[idx[j] + 1]++;
  for (int64_t r = 0; r < rows; r++)
    start[r + 1] += start[r];
  /* A counting sort keeps each row's positions ascending. */
  {
    int64_t *fill =
        wfx_host->alloc((size_t)(rows > 0 ? rows : 1) * sizeof *fill, 0);
    if (!fill) {
      wfx_host->free(mem);
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "out of host memory for lists of %" PRId64 " rows", rows);
    }
    memcpy(fill, start, (size_t)rows * sizeof *fill);
    for (int64_t j = 0; j < k; j++)
      order[fill[idx[j]]++] = j;
    wfx_host->free(fill);
  }
  *out = mem;
  return 0;
}

/* Zeros of shape out (outer, rows, inner) with row idx[j] of in (outer, k,
 * inner) added for each j. */
static int scatter_output(wf_kernel_ctx *ctx, const wf_shape *out,
                          const wf_tensor *in, const int64_t *idx, int64_t k,
                          int64_t outer, int64_t rows, int64_t inner,
                          wf_status *st) {
  wf_tensor *y;
  int64_t *lists = NULL;
  void *dl;
  cuw w = {0};
  int type, rc;

  if (cuw_float_type(wfx_dtype(in), &type, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, out, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  if ((rc = segment_lists(idx, k, rows, &lists, st)) ||
      (rc = cuw_begin(&w, ctx, st)) ||
      (rc = cuw_upload(&w, lists,
                           (size_t)(rows + 1 + k) * sizeof *lists, &dl,
                           "the row lists", st)))
    goto done;
  rc = cuw_check(&w, "the segment sum kernel",
                 cuda_segment_sum(type, outer, rows, k, inner, dl,
                                  (int64_t *)dl + rows + 1, wfx_data(in),
                                  wfx_data(y), w.dev->stream),
                 st);

done:
  cuw_end(&w);
  wfx_host->free(lists);
  return rc;
}

static int gather_grad_compute(wf_kernel_ctx *ctx, void *kstate,
                               wf_status *st) {
  const wf_tensor *pt, *indices, *dy;
  int64_t axis_attr, *idx = NULL;
  wf_shape ps, is, dys, want;
  int axis, rc;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  char what[2 * WFX_SHAPE_STR_MAX];

  /* The op's shape function reads params_shape (a host input) and checks
   * the geometry; it sees dy's rank only, so dy's dims are checked here
   * (the scatter reads dy by Gather's output shape). */
  if (wfx_kernel_input(ctx, 0, &pt, NULL, st) ||
      wfx_kernel_input(ctx, 1, &indices, &is, st) ||
      wfx_kernel_input(ctx, 2, &dy, &dys, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &ps, st))
    return wfx_code(st);
  axis = (int)(axis_attr < 0 ? axis_attr + ps.rank : axis_attr);
  gather_out_shape(&ps, &is, axis, &want);
  if (!wfx_shape_equal(&dys, &want))
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "dy has shape %s; Gather's output has %s",
        wfx_shape_str(&dys, a, sizeof a), wfx_shape_str(&want, b, sizeof b));
  snprintf(what, sizeof what, "axis %d of params %s", axis,
           wfx_shape_str(&ps, b, sizeof b));
  if (read_indices(indices, ps.dims[axis], what, &idx, st))
    return wfx_code(st);
  rc = scatter_output(ctx, &ps, dy, idx, wfx_count(indices),
                      product(ps.dims, 0, axis), ps.dims[axis],
                      product(ps.dims, axis + 1, ps.rank), st);
  wfx_host->free(idx);
  return rc;
}

static int segment_sum_compute(wf_kernel_ctx *ctx, void *kstate,
                               wf_status *st) {
  const wf_tensor *values, *indices, *dense;
  int64_t *idx = NULL;
  wf_shape vs, is, out;
  int rc;

  /* The op's shape function reads dense_shape (a host input) and checks
   * values (K, D1, ...), indices (K,) and dense_shape (N, D1, ...) against
   * each other; the indices' values are checked here. */
  if (wfx_kernel_input(ctx, 0, &values, &vs, st) ||
      wfx_kernel_input(ctx, 1, &indices, &is, st) ||
      wfx_kernel_input(ctx, 2, &dense, NULL, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &out, st))
    return wfx_code(st);
  if (read_indices(indices, out.dims[0], "dense_shape[0]", &idx, st))
    return wfx_code(st);
  rc = scatter_output(ctx, &out, values, idx, is.dims[0], 1, out.dims[0],
                      product(out.dims, 1, out.rank), st);
  wfx_host->free(idx);
  return rc;
}

/* ---- the table ----------------------------------------------------------- */

#define FLT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))
#define ANY                                                                    \
  (FLT | WF_DTYPE_BIT(WF_INT8) | WF_DTYPE_BIT(WF_UINT8) |                      \
   WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64) | WF_DTYPE_BIT(WF_BOOL))
#define B WF_CUW_BIT

static const wf_kernel_def k_gather = WFX_KERNEL_FOR(
    "cuda", "cuda", "Gather", "T", ANY, gather_compute, .host_inputs = B(1));
static const wf_kernel_def k_gather_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "GatherGrad", "T", FLT, gather_grad_compute,
                   .host_inputs = B(0) | B(1));
static const wf_kernel_def k_segment_sum =
    WFX_KERNEL_FOR("cuda", "cuda", "UnsortedSegmentSumToShape", "T", FLT,
                   segment_sum_compute, .host_inputs = B(1) | B(2));

const wf_kernel_def *const cuda_array_kernels[] = {
    &k_gather, &k_gather_grad, &k_segment_sum, NULL};
