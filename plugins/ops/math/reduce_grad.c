/* plugins/ops/math/reduce_grad.c — shape inference and reference CPU
 * kernels of the reductions' backward ops: SumGrad and MeanGrad (the
 * incoming gradient spread back over x's shape), MaxMinGrad (routed to the
 * elements equal to the result, split equally among ties) and ProdGrad
 * (products of the other elements, exact with zeros). They take the
 * forward node's axes and keep_dims; semantics are documented in
 * plugin.c. Float types only; work is done in double. */
#include <config.h>

#include "math_ops.h"

#include <math.h>
#include <string.h>

int math_shape_reduce_grad(wf_shape_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->shape_num_inputs(ctx);
  const int64_t *axes;
  int64_t naxes;
  int keep_dims;
  uint32_t mask;
  wf_shape x, dy, y, red;

  if (wfx_shape_input(ctx, 0, NULL, &dy, st) ||
      wfx_shape_input(ctx, 1, NULL, &x, st) ||
      wfx_shape_attr_ints(ctx, "axes", &axes, &naxes, st) ||
      wfx_shape_attr_bool(ctx, "keep_dims", &keep_dims, st))
    return wfx_code(st);
  if (x.rank >= 0) {
    if (math_reduce_mask(axes, naxes, x.rank, &mask, st))
      return wfx_code(st);
    math_reduced_shape(&x, mask, keep_dims, &red);
    if (wfx_shape_merge(&red, &dy, &red, "dy against the reduced shape of x",
                        st))
      return wfx_code(st);
    if (n > 2 && (wfx_shape_input(ctx, 2, NULL, &y, st) ||
                  wfx_shape_merge(&red, &y, &red,
                                  "y against the reduced shape of x", st)))
      return wfx_code(st);
  }
  wfx_host->shape_set_output(ctx, 0, &x);
  return 0;
}

/* What every kernel here reads: dy, x (and y for MaxMinGrad) as double
 * loads, the walk of x with the keep-dims result shape as operand, and the
 * output dx of x's shape. */
typedef struct red_grad {
  int32_t dtype;
  wf_shape xs, kept;
  int64_t nin, nout;
  const void *dy, *x, *y;
  void *dx;
} red_grad;

static double load(int32_t dt, const void *p, int64_t i) {
  return dt == WF_FLOAT32 ? (double)((const float *)p)[i]
                          : ((const double *)p)[i];
}

static void store(int32_t dt, void *p, int64_t i, double v) {
  if (dt == WF_FLOAT32)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

/* Reads the inputs (ninputs: 2, or 3 with y) and attributes, checks dy
 * (and y) against x's reduced shape, and allocates dx. */
static int red_grad_begin(wf_kernel_ctx *ctx, int ninputs, red_grad *r,
                          wf_status *st) {
  const wf_tensor *dy, *x, *y = NULL;
  const int64_t *axes;
  int64_t naxes;
  int keep_dims;
  uint32_t mask;
  wf_shape dys, ys, red;
  wf_tensor *out;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX], c[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      wfx_kernel_input(ctx, 1, &x, &r->xs, st) ||
      (ninputs > 2 && wfx_kernel_input(ctx, 2, &y, &ys, st)) ||
      wfx_kernel_attr_ints(ctx, "axes", &axes, &naxes, st) ||
      wfx_kernel_attr_bool(ctx, "keep_dims", &keep_dims, st) ||
      math_reduce_mask(axes, naxes, r->xs.rank, &mask, st))
    return wfx_code(st);
  r->dtype = wfx_dtype(x);
  if (r->dtype != WF_FLOAT32 && r->dtype != WF_FLOAT64)
    return math_unsupported_dtype(r->dtype, st);
  if (wfx_dtype(dy) != r->dtype || (y && wfx_dtype(y) != r->dtype))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "dy%s must have x's type %s",
                    y ? " and y" : "", wfx_dtype_name(r->dtype));
  math_reduced_shape(&r->xs, mask, keep_dims, &red);
  math_reduced_shape(&r->xs, mask, 1, &r->kept);
  if (!wfx_shape_equal(&dys, &red) || (y && !wfx_shape_equal(&ys, &red))) {
    int bad_dy = !wfx_shape_equal(&dys, &red);
    return wfx_fail(
        st, WF_INVALID_ARGUMENT,
        "%s has shape %s, but x %s reduced has shape %s", bad_dy ? "dy" : "y",
        wfx_shape_str(bad_dy ? &dys : &ys, a, sizeof a),
        wfx_shape_str(&r->xs, b, sizeof b), wfx_shape_str(&red, c, sizeof c));
  }
  out = wfx_host->kernel_output_new(ctx, 0, &r->xs, st);
  if (!out)
    return wfx_code(st);
  r->nin = wfx_shape_count(&r->xs);
  r->nout = wfx_shape_count(&r->kept);
  r->dy = wfx_data(dy);
  r->x = wfx_data(x);
  r->y = y ? wfx_data(y) : NULL;
  r->dx = wfx_data(out);
  return 0;
}

/* dx = dy spread over x's shape, times scale. */
static void spread(const red_grad *r, double scale) {
  wfx_bcast b;

  if (r->nin == 0)
    return;
  wfx_bcast_init(&b, &r->xs, 1, &r->kept);
  for (int64_t row = 0; row < b.rows; row++, wfx_bcast_next(&b))
    for (int64_t j = 0; j < b.inner; j++)
      store(r->dtype, r->dx, row * b.inner + j,
            load(r->dtype, r->dy, b.off[0] + j * b.step[0]) * scale);
}

int math_sum_grad(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  red_grad r;

  if (red_grad_begin(ctx, 2, &r, st))
    return wfx_code(st);
  spread(&r, 1.0);
  return 0;
}

int math_mean_grad(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  red_grad r;

  if (red_grad_begin(ctx, 2, &r, st))
    return wfx_code(st);
  /* nin > 0 implies nout > 0 and at least one element per group */
  if (r.nin > 0)
    spread(&r, 1.0 / (double)(r.nin / r.nout));
  return 0;
}

/* idx[i] = the group (output element) of x's element i, in x's order. */
static void group_index(const red_grad *r, int64_t *idx) {
  wfx_bcast b;

  wfx_bcast_init(&b, &r->xs, 1, &r->kept);
  for (int64_t row = 0; row < b.rows; row++, wfx_bcast_next(&b))
    for (int64_t j = 0; j < b.inner; j++)
      idx[row * b.inner + j] = b.off[0] + j * b.step[0];
}

/* Scratch: nin group indices, then `doubles` doubles. */
static int scratch_new(const red_grad *r, int64_t doubles, int64_t **idx,
                       double **d, wf_status *st) {
  size_t bytes = (size_t)r->nin * sizeof **idx + (size_t)doubles * sizeof **d;

  *idx = wfx_host->alloc(bytes, 0);
  if (!*idx)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %zu bytes of scratch", bytes);
  *d = (double *)(void *)(*idx + r->nin);
  return 0;
}

int math_max_min_grad(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  red_grad r;
  int64_t *idx;
  double *count;

  if (red_grad_begin(ctx, 3, &r, st))
    return wfx_code(st);
  if (r.nin == 0)
    return 0;
  if (scratch_new(&r, r.nout, &idx, &count, st))
    return wfx_code(st);
  group_index(&r, idx);
  memset(count, 0, (size_t)r.nout * sizeof *count);
  for (int64_t i = 0; i < r.nin; i++)
    if (load(r.dtype, r.x, i) == load(r.dtype, r.y, idx[i]))
      count[idx[i]] += 1;
  /* A NaN result equals no element: its group gets no gradient. */
  for (int64_t i = 0; i < r.nin; i++) {
    int64_t k = idx[i];
    int hit = load(r.dtype, r.x, i) == load(r.dtype, r.y, k);
    store(r.dtype, r.dx, i, hit ? load(r.dtype, r.dy, k) / count[k] : 0.0);
  }
  wfx_host->free(idx);
  return 0;
}

/* dx_i = dy * (product of the group's elements before i) * (product of
 * those after i): no division, so zeros in x are exact. */
int math_prod_grad(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  red_grad r;
  int64_t *idx;
  double *acc, *part;

  if (red_grad_begin(ctx, 2, &r, st))
    return wfx_code(st);
  if (r.nin == 0)
    return 0;
  if (scratch_new(&r, r.nout + r.nin, &idx, &acc, st))
    return wfx_code(st);
  part = acc + r.nout;
  group_index(&r, idx);
  for (int64_t k = 0; k < r.nout; k++)
    acc[k] = 1.0;
  for (int64_t i = 0; i < r.nin; i++) {
    part[i] = acc[idx[i]];
    acc[idx[i]] *= load(r.dtype, r.x, i);
  }
  for (int64_t k = 0; k < r.nout; k++)
    acc[k] = 1.0;
  for (int64_t i = r.nin - 1; i >= 0; i--) {
    int64_t k = idx[i];
    store(r.dtype, r.dx, i, part[i] * acc[k] * load(r.dtype, r.dy, k));
    acc[k] *= load(r.dtype, r.x, i);
  }
  wfx_host->free(idx);
  return 0;
}
