/* plugins/ops/nn/layernorm.c — LayerNorm, normalisation over the last axis
 * with a learned scale and offset per feature (the transformer's layer
 * normalisation), and its backward op LayerNormGrad. One pass per row for
 * the statistics (sum and sum of squares in double), one for the output;
 * the backward op recomputes the row statistics from x instead of taking
 * them as inputs (a row is a few dozen to a few thousand values, so that
 * costs less than keeping them alive). No other axis than the last and no
 * normalisation without scale and offset (feed ones and zeros). The
 * gradient function is in grad.c. */
#include <config.h>

#include "nn.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static int ln_epsilon(const nn_attrs *a, double *eps, wf_status *st) {
  if (nn_attr_float(a, "epsilon", eps, st))
    return wfx_code(st);
  if (!(*eps >= 0))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "epsilon is %g (must be >= 0)",
                    *eps);
  return 0;
}

/* Checks x (rank >= 1) and the n vectors vs (scale, offset: (C,), C x's
 * last dimension); *c gets C when known. */
static int ln_check(const wf_shape *xs, const wf_shape *vs, int n,
                    const char *const *names, int64_t *c, wf_status *st) {
  char a[WFX_SHAPE_STR_MAX];

  if (xs->rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "x must have rank 1 or more, got shape %s",
                    wfx_shape_str(xs, a, sizeof a));
  *c = xs->rank > 0 ? xs->dims[xs->rank - 1] : WF_UNKNOWN_DIM;
  for (int i = 0; i < n; i++) {
    int64_t d = vs[i].rank == 1 ? vs[i].dims[0] : WF_UNKNOWN_DIM;

    if (vs[i].rank >= 0 && vs[i].rank != 1)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s must be a vector (C,), got shape %s", names[i],
                      wfx_shape_str(&vs[i], a, sizeof a));
    if (d < 0)
      continue;
    if (*c >= 0 && d != *c)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s has %" PRId64 " entries but the last axis of x has "
                      "%" PRId64,
                      names[i], d, *c);
    *c = d;
  }
  return 0;
}

static const char *const ln_vectors[] = {"scale", "offset"};

static int layer_norm_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  wf_shape xs, vs[2];
  double eps;
  int64_t c;

  if (ln_epsilon(&a, &eps, st) || wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      wfx_shape_input(ctx, 1, NULL, &vs[0], st) ||
      wfx_shape_input(ctx, 2, NULL, &vs[1], st) ||
      ln_check(&xs, vs, 2, ln_vectors, &c, st))
    return wfx_code(st);
  if (xs.rank > 0)
    xs.dims[xs.rank - 1] = c;
  wfx_host->shape_set_output(ctx, 0, &xs);
  return 0;
}

/* Row statistics of c values: *mean and *rstd = 1 / sqrt(var + eps), the
 * variance biased (divided by c). */
#define DEF_LN_STATS(T, sfx, dt, u)                                            \
  static void ln_stats_##sfx(const T *x, int64_t c, double eps, double *mean,  \
                             double *rstd) {                                   \
    double s = 0, q = 0, m, v;                                                 \
    for (int64_t j = 0; j < c; j++)                                            \
      s += x[j];                                                               \
    m = s / (double)c;                                                         \
    for (int64_t j = 0; j < c; j++) {                                          \
      double d = x[j] - m;                                                     \
      q += d * d;                                                              \
    }                                                                          \
    v = q / (double)c;                                                         \
    *mean = m;                                                                 \
    *rstd = 1.0 / sqrt(v + eps);                                               \
  }
WFX_TYPES_FLOAT(DEF_LN_STATS, _)

/* y[r, j] = (x[r, j] - mean_r) rstd_r scale[j] + offset[j] over rows of c. */
#define DEF_LN(T, sfx, dt, u)                                                  \
  static void ln_##sfx(void *yv, const void *xv, const void *scv,              \
                       const void *ofv, int64_t rows, int64_t c, double eps) { \
    T *y = yv;                                                                 \
    const T *x = xv, *scale = scv, *offset = ofv;                              \
    for (int64_t r = 0; r < rows; r++, x += c, y += c) {                       \
      double m, rs;                                                            \
      ln_stats_##sfx(x, c, eps, &m, &rs);                                      \
      T tm = (T)m, trs = (T)rs;                                                \
      for (int64_t j = 0; j < c; j++)                                          \
        y[j] = (x[j] - tm) * trs * scale[j] + offset[j];                       \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_LN, _)

typedef void ln_fn(void *y, const void *x, const void *scale,
                   const void *offset, int64_t rows, int64_t c, double eps);
static ln_fn *const ln_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, ln)};

static int layer_norm_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x, *v[2];
  wf_tensor *y;
  wf_shape xs, vs[2];
  double eps;
  int64_t c;
  ln_fn *fn;

  if (ln_epsilon(&a, &eps, st) || wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &v[0], &vs[0], st) ||
      wfx_kernel_input(ctx, 2, &v[1], &vs[1], st) ||
      ln_check(&xs, vs, 2, ln_vectors, &c, st))
    return wfx_code(st);
  if (!(fn = ln_table[wfx_dtype(x)]))
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (c > 0)
    fn(wfx_data(y), wfx_data(x), wfx_data(v[0]), wfx_data(v[1]),
       wfx_count(x) / c, c, eps);
  return 0;
}

static const wf_arg_def ln_inputs[] = {
    WF_ARG_T("x", "T", "(..., C), e.g. (N, T, C)"),
    WF_ARG_T("scale", "T", "(C,) gamma"), WF_ARG_T("offset", "T", "(C,) beta"),
    WF_ARG_END};
static const wf_arg_def ln_outputs[] = {WF_ARG_T("y", "T", "the shape of x"),
                                        WF_ARG_END};
static const wf_attr_def ln_attrs[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_FLOAT("epsilon", 1e-5, "added to the variance, >= 0"),
    WF_ATTR_END};

const wf_op_def nn_layer_norm_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "LayerNorm",
    .inputs = ln_inputs,
    .outputs = ln_outputs,
    .attrs = ln_attrs,
    .shape_fn = layer_norm_shape,
    .doc = "y = (x - mean) / sqrt(variance + epsilon) * scale + offset, mean "
           "and variance (biased) over the last axis of each row of x (..., "
           "C); scale and offset (C,) per feature."};

const wf_kernel_def nn_layer_norm_kernel =
    WFX_CPU_REFERENCE("LayerNorm", "T", WFX_DTYPES_FLOAT, layer_norm_compute);

/* ---- LayerNormGrad ------------------------------------------------------- */

static int layer_norm_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  wf_shape dy, x, xs, vs[1];
  double eps;
  int64_t c;

  if (ln_epsilon(&a, &eps, st) || wfx_shape_input(ctx, 0, NULL, &dy, st) ||
      wfx_shape_input(ctx, 1, NULL, &x, st) ||
      wfx_shape_input(ctx, 2, NULL, &vs[0], st) ||
      wfx_shape_merge(&dy, &x, &xs, "y_backprop against x", st) ||
      ln_check(&xs, vs, 1, ln_vectors, &c, st))
    return wfx_code(st);
  if (xs.rank > 0)
    xs.dims[xs.rank - 1] = c;
  wfx_shape_make(&vs[0], 1, &c);
  wfx_host->shape_set_output(ctx, 0, &xs);
  wfx_host->shape_set_output(ctx, 1, &vs[0]);
  wfx_host->shape_set_output(ctx, 2, &vs[0]);
  return 0;
}

/* Per row, with xhat = (x - mean) rstd and g = dy scale:
 *   dx = rstd (g - mean_j(g) - xhat mean_j(g xhat)),
 * and over all rows dscale += dy xhat, doffset += dy (accumulated in
 * double in acc, 2c entries). */
#define DEF_LN_GRAD(T, sfx, dt, u)                                             \
  static void ln_grad_##sfx(void *dxv, void *dsv, void *dov, const void *dyv,  \
                            const void *xv, const void *scv, int64_t rows,     \
                            int64_t c, double eps, double *acc) {              \
    T *dx = dxv, *ds = dsv, *doff = dov;                                       \
    const T *dy = dyv, *x = xv, *scale = scv;                                  \
    memset(acc, 0, (size_t)(2 * c) * sizeof *acc);                             \
    for (int64_t r = 0; r < rows; r++, x += c, dy += c, dx += c) {             \
      double m, rs, sg = 0, sgx = 0;                                           \
      ln_stats_##sfx(x, c, eps, &m, &rs);                                      \
      for (int64_t j = 0; j < c; j++) {                                        \
        double xh = (x[j] - m) * rs, g = (double)dy[j] * scale[j];             \
        sg += g;                                                               \
        sgx += g * xh;                                                         \
        acc[j] += dy[j] * xh;                                                  \
        acc[c + j] += dy[j];                                                   \
      }                                                                        \
      sg /= (double)c;                                                         \
      sgx /= (double)c;                                                        \
      for (int64_t j = 0; j < c; j++) {                                        \
        double xh = (x[j] - m) * rs, g = (double)dy[j] * scale[j];             \
        dx[j] = (T)(rs * (g - sg - xh * sgx));                                 \
      }                                                                        \
    }                                                                          \
    for (int64_t j = 0; j < c; j++) {                                          \
      ds[j] = (T)acc[j];                                                       \
      doff[j] = (T)acc[c + j];                                                 \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_LN_GRAD, _)

typedef void ln_grad_fn(void *dx, void *ds, void *doff, const void *dy,
                        const void *x, const void *scale, int64_t rows,
                        int64_t c, double eps, double *acc);
static ln_grad_fn *const ln_grad_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, ln_grad)};

static int layer_norm_grad_compute(wf_kernel_ctx *ctx, void *state,
                                   wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *dy, *x, *sc;
  wf_tensor *dx, *ds, *doff;
  wf_shape dys, xs0, xs, vs[1], cs;
  double eps, *acc;
  int64_t c;
  ln_grad_fn *fn;

  if (ln_epsilon(&a, &eps, st) || wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      wfx_kernel_input(ctx, 1, &x, &xs0, st) ||
      wfx_kernel_input(ctx, 2, &sc, &vs[0], st) ||
      wfx_shape_merge(&dys, &xs0, &xs, "y_backprop against x", st) ||
      ln_check(&xs, vs, 1, ln_vectors, &c, st))
    return wfx_code(st);
  if (!(fn = ln_grad_table[wfx_dtype(x)]))
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  wfx_shape_make(&cs, 1, &c);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)) ||
      !(ds = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(doff = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
    return wfx_code(st);
  if (c == 0)
    return 0;
  if (!(acc = wfx_host->alloc((size_t)(2 * c) * sizeof *acc, 64)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "LayerNormGrad: out of memory for %" PRId64 " sums",
                    2 * c);
  fn(wfx_data(dx), wfx_data(ds), wfx_data(doff), wfx_data(dy), wfx_data(x),
     wfx_data(sc), wfx_count(x) / c, c, eps, acc);
  wfx_host->free(acc);
  return 0;
}

static const wf_arg_def lng_inputs[] = {
    WF_ARG_T("y_backprop", "T", "the gradient of y, x's shape"),
    WF_ARG_T("x", "T", "LayerNorm's x (..., C)"),
    WF_ARG_T("scale", "T", "(C,) LayerNorm's scale"), WF_ARG_END};
static const wf_arg_def lng_outputs[] = {
    WF_ARG_T("x_backprop", "T", "x's shape"),
    WF_ARG_T("scale_backprop", "T", "(C,)"),
    WF_ARG_T("offset_backprop", "T", "(C,)"), WF_ARG_END};

const wf_op_def nn_layer_norm_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "LayerNormGrad",
    .inputs = lng_inputs,
    .outputs = lng_outputs,
    .attrs = ln_attrs,
    .shape_fn = layer_norm_grad_shape,
    .doc = "The gradient of LayerNorm (same epsilon) with respect to x, scale "
           "and offset; per row of C, rstd = 1 / sqrt(variance + epsilon), "
           "xhat = (x - mean) rstd, g = dy scale: x_backprop = rstd (g - "
           "mean(g) - xhat mean(g xhat)); over all rows scale_backprop = "
           "sum(dy xhat) and offset_backprop = sum(dy). The statistics are "
           "recomputed from x."};

const wf_kernel_def nn_layer_norm_grad_kernel = WFX_CPU_REFERENCE(
    "LayerNormGrad", "T", WFX_DTYPES_FLOAT, layer_norm_grad_compute);
