/* plugins/devices/cuda/cuda_reduce.c — the reductions of ops-math on the
 * GPU: Sum, Mean, Max, Min and Prod over their `axes` attribute (empty:
 * all) with keep_dims, their backward ops SumGrad, MeanGrad and
 * MaxMinGrad, and SumToLike (the gradient of a broadcast), for float32
 * and float64. ProdGrad and ArgMax stay on the CPU.
 *
 * Floats accumulate in double (without the CPU's compensation: float32
 * results are the CPU's but for rare ties in rounding, float64 within a
 * few units in the last place of the sum of magnitudes). */
#include <config.h>

#include "cuda_work.h"

#include <string.h>

void cuw_reduce_geom(const wf_shape *xs, uint32_t mask,
                         cuda_reduce_geom *g) {
  int64_t strides[WF_MAX_RANK];

  memset(g, 0, sizeof *g);
  wfx_shape_strides(xs, strides);
  g->outputs = 1;
  g->group = 1;
  for (int i = 0; i < xs->rank; i++) {
    int64_t d = xs->dims[i];
    if (mask & (UINT32_C(1) << i)) {
      g->group *= d;
      if (d != 1) {
        g->red_dims[g->nred] = d;
        g->red_strides[g->nred++] = strides[i];
      }
    } else {
      g->outputs *= d;
      if (d != 1) {
        g->keep_dims[g->nkeep] = d;
        g->keep_strides[g->nkeep++] = strides[i];
      }
    }
  }
}

/* The mask of attribute `axes` over rank (empty: every axis). */
static int axes_mask(const wf_kernel_ctx *ctx, int rank, uint32_t *mask,
                     int *keep_dims, wf_status *st) {
  const int64_t *axes;
  int64_t n;

  if (wfx_kernel_attr_ints(ctx, "axes", &axes, &n, st) ||
      wfx_kernel_attr_bool(ctx, "keep_dims", keep_dims, st))
    return wfx_code(st);
  if (n == 0) {
    *mask = rank >= 32 ? UINT32_MAX : (UINT32_C(1) << rank) - 1;
    return 0;
  }
  return wfx_axes_mask(axes, n, rank, mask, NULL, st);
}

static void reduced_shape(const wf_shape *s, uint32_t mask, int keep_dims,
                          wf_shape *out) {
  wfx_shape_set_scalar(out);
  for (int i = 0; i < s->rank; i++) {
    if (mask & (UINT32_C(1) << i)) {
      if (keep_dims)
        out->dims[out->rank++] = 1;
    } else {
      out->dims[out->rank++] = s->dims[i];
    }
  }
}

static int reduce_compute(wf_kernel_ctx *ctx, int op, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs, ys;
  cuda_reduce_geom g;
  wf_tensor *y;
  uint32_t mask;
  int keep_dims, type, rc;
  cuw w = {0};

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      axes_mask(ctx, xs.rank, &mask, &keep_dims, st))
    return wfx_code(st);
  reduced_shape(&xs, mask, keep_dims, &ys);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &ys, st)))
    return wfx_code(st);
  cuw_reduce_geom(&xs, mask, &g);
  if (g.outputs == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(
        &w, "the reduction kernel",
        cuda_reduce(op, type, &g, wfx_data(x), wfx_data(y), w.dev->stream), st);
  cuw_end(&w);
  return rc;
}

#define REDUCE(name, op)                                                       \
  static int name(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {           \
    return reduce_compute(ctx, (op), st);                                      \
  }
REDUCE(sum_compute, WF_CUDA_SUM)
REDUCE(mean_compute, WF_CUDA_MEAN)
REDUCE(max_compute, WF_CUDA_MAX)
REDUCE(min_compute, WF_CUDA_MIN)
REDUCE(prod_compute, WF_CUDA_PROD)

/* SumGrad (mean 0), MeanGrad (mean 1) and MaxMinGrad (ninputs 3). */
static int reduce_grad_compute(wf_kernel_ctx *ctx, int ninputs, int mean,
                               wf_status *st) {
  const wf_tensor *dy, *x, *y = NULL;
  wf_shape dys, xs, ys, red;
  cuda_reduce_geom g;
  wf_tensor *dx;
  uint32_t mask;
  int keep_dims, type, rc;
  int32_t dt;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX], c[WFX_SHAPE_STR_MAX];
  cuw w = {0};
  cudaError_t err;

  if (wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      wfx_kernel_input(ctx, 1, &x, &xs, st) ||
      (ninputs > 2 && wfx_kernel_input(ctx, 2, &y, &ys, st)) ||
      axes_mask(ctx, xs.rank, &mask, &keep_dims, st))
    return wfx_code(st);
  dt = wfx_dtype(x);
  if (cuw_float_type(dt, &type, st))
    return wfx_code(st);
  if (wfx_dtype(dy) != dt || (y && wfx_dtype(y) != dt))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "dy%s must have x's type %s",
                    y ? " and y" : "", wfx_dtype_name(dt));
  reduced_shape(&xs, mask, keep_dims, &red);
  if (!wfx_shape_equal(&dys, &red) || (y && !wfx_shape_equal(&ys, &red))) {
    int bad_dy = !wfx_shape_equal(&dys, &red);
    return wfx_fail(
        st, WF_INVALID_ARGUMENT,
        "%s has shape %s, but x %s reduced has shape %s", bad_dy ? "dy" : "y",
        wfx_shape_str(bad_dy ? &dys : &ys, a, sizeof a),
        wfx_shape_str(&xs, b, sizeof b), wfx_shape_str(&red, c, sizeof c));
  }
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  cuw_reduce_geom(&xs, mask, &g);
  if (g.outputs == 0 || g.group == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto out;
  if (y)
    err = cuda_max_min_grad(type, &g, wfx_data(dy), wfx_data(x), wfx_data(y),
                            wfx_data(dx), w.dev->stream);
  else
    err = cuda_reduce_spread(type, &g, wfx_data(dy),
                             mean ? 1.0 / (double)g.group : 1.0, wfx_data(dx),
                             w.dev->stream);
  rc = cuw_check(&w, "the reduction gradient kernel", err, st);

out:
  cuw_end(&w);
  return rc;
}

static int sum_grad_compute(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {
  return reduce_grad_compute(ctx, 2, 0, st);
}

static int mean_grad_compute(wf_kernel_ctx *ctx, void *kstate,
                             wf_status *st) {
  return reduce_grad_compute(ctx, 2, 1, st);
}

static int max_min_grad_compute(wf_kernel_ctx *ctx, void *kstate,
                                wf_status *st) {
  return reduce_grad_compute(ctx, 3, 0, st);
}

/* SumToLike: x summed over the dims like's shape was broadcast along. Only
 * like's shape is read (its data may be anywhere). */
static int sum_to_like_compute(wf_kernel_ctx *ctx, void *kstate,
                               wf_status *st) {
  const wf_tensor *x, *like;
  wf_shape xs, ls;
  cuda_reduce_geom g;
  wf_tensor *y;
  uint32_t mask = 0;
  int type, rc, lead;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  cuw w = {0};

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &like, &ls, st) ||
      cuw_float_type(wfx_dtype(x), &type, st))
    return wfx_code(st);
  lead = xs.rank - ls.rank;
  if (lead < 0)
    goto bad;
  for (int i = 0; i < xs.rank; i++) {
    if (i < lead) {
      mask |= UINT32_C(1) << i;
      continue;
    }
    if (ls.dims[i - lead] == xs.dims[i])
      continue;
    if (ls.dims[i - lead] != 1)
      goto bad;
    mask |= UINT32_C(1) << i;
  }
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &ls, st)))
    return wfx_code(st);
  cuw_reduce_geom(&xs, mask, &g);
  if (g.outputs == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the reduction kernel",
                   cuda_reduce(WF_CUDA_SUM, type, &g, wfx_data(x), wfx_data(y),
                               w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;

bad:
  return wfx_fail(
      st, WF_INVALID_ARGUMENT, "like's shape %s does not broadcast to x's %s",
      wfx_shape_str(&ls, a, sizeof a), wfx_shape_str(&xs, b, sizeof b));
}

/* ---- the table ----------------------------------------------------------- */

#define FLT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))

static const wf_kernel_def k_sum = WFX_KERNEL_FOR(
    "cuda", "cuda", "Sum", "T", FLT, sum_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_mean = WFX_KERNEL_FOR(
    "cuda", "cuda", "Mean", "T", FLT, mean_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_max = WFX_KERNEL_FOR(
    "cuda", "cuda", "Max", "T", FLT, max_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_min = WFX_KERNEL_FOR(
    "cuda", "cuda", "Min", "T", FLT, min_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_prod = WFX_KERNEL_FOR(
    "cuda", "cuda", "Prod", "T", FLT, prod_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sum_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "SumGrad", "T", FLT, sum_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_mean_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "MeanGrad", "T", FLT, mean_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_max_min_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "MaxMinGrad", "T", FLT, max_min_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sum_to_like =
    WFX_KERNEL_FOR("cuda", "cuda", "SumToLike", "T", FLT, sum_to_like_compute,
                   .flags = WF_KERNEL_CHEAP);

const wf_kernel_def *const cuda_reduce_kernels[] = {
    &k_sum,      &k_mean,      &k_max,          &k_min,         &k_prod,
    &k_sum_grad, &k_mean_grad, &k_max_min_grad, &k_sum_to_like, NULL};
