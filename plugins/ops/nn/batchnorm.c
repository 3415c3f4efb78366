/* plugins/ops/nn/batchnorm.c — BatchNorm, one op in the manner of
 * TensorFlow's FusedBatchNorm: normalises per channel with the batch's
 * statistics (is_training) or with given ones (inference); and its backward
 * op BatchNormGrad. Statistics are accumulated in double, two passes. No
 * running-average update (callers combine batch_mean/batch_variance with
 * their variables) and no reserve space outputs. The gradient function is
 * in grad.c. */
#include <config.h>

#include "nn.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Checks x (rank >= 2) and the four (C,) vectors; in training, mean and
 * variance may also be empty (0,) since they are not read. *c gets the
 * channel count when known. */
static int bn_check(const wf_shape *xs, const wf_shape *vs, int nchw,
                    int training, int64_t *c, wf_status *st) {
  static const char *const names[] = {"scale", "offset", "mean", "variance"};
  char a[WFX_SHAPE_STR_MAX];

  if (xs->rank >= 0 && xs->rank < 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "x must have rank 2 or more, got shape %s",
                    wfx_shape_str(xs, a, sizeof a));
  *c = xs->rank >= 0 ? xs->dims[nn_channel_axis(nchw, xs->rank)]
                     : WF_UNKNOWN_DIM;
  for (int i = 0; i < 4; i++) {
    int64_t d = vs[i].rank == 1 ? vs[i].dims[0] : WF_UNKNOWN_DIM;

    if (vs[i].rank >= 0 && vs[i].rank != 1)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s must be a vector (C,), got shape %s", names[i],
                      wfx_shape_str(&vs[i], a, sizeof a));
    if (d < 0 || (training && i >= 2 && d == 0))
      continue;
    if (*c >= 0 && d != *c)
      return wfx_fail(
          st, WF_INVALID_ARGUMENT,
          "%s has %" PRId64 " entries but x has %" PRId64 " channels%s",
          names[i], d, *c,
          training && i >= 2 ? " (in training it may be empty)" : "");
    *c = d;
  }
  return 0;
}

static int bn_attrs(const nn_attrs *a, int *nchw, int *training,
                    double *epsilon, wf_status *st) {
  if (nn_data_format(a, nchw, st) ||
      nn_attr_bool(a, "is_training", training, st) ||
      nn_attr_float(a, "epsilon", epsilon, st))
    return wfx_code(st);
  if (!(*epsilon >= 0))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "epsilon is %g (must be >= 0)",
                    *epsilon);
  return 0;
}

static int batch_norm_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  wf_shape xs, vs[4], cs;
  int nchw, training;
  double eps;
  int64_t c;

  if (bn_attrs(&a, &nchw, &training, &eps, st) ||
      wfx_shape_input(ctx, 0, NULL, &xs, st))
    return wfx_code(st);
  for (int i = 0; i < 4; i++)
    if (wfx_shape_input(ctx, i + 1, NULL, &vs[i], st))
      return wfx_code(st);
  if (bn_check(&xs, vs, nchw, training, &c, st))
    return wfx_code(st);
  if (xs.rank >= 0)
    xs.dims[nn_channel_axis(nchw, xs.rank)] = c;
  wfx_shape_make(&cs, 1, &c);
  wfx_host->shape_set_output(ctx, 0, &xs);
  wfx_host->shape_set_output(ctx, 1, &cs);
  wfx_host->shape_set_output(ctx, 2, &cs);
  return 0;
}

/* x viewed as (outer, C, inner). Training: mean and var are outputs (NaN
 * for an empty batch); inference: they are the inputs. */
#define DEF_BN(T, sfx, dt, u)                                                  \
  static void bn_##sfx(void *yv, void *bmv, void *bvv, const void *xv,         \
                       const void *scv, const void *ofv, const void *mv,       \
                       const void *vv, int64_t outer, int64_t c,               \
                       int64_t inner, int training, double eps) {              \
    T *y = yv, *bm = bmv, *bv = bvv;                                           \
    const T *x = xv, *scale = scv, *offset = ofv, *mean = mv, *var = vv;       \
    int64_t cnt = outer * inner;                                               \
    for (int64_t k = 0; k < c; k++) {                                          \
      double m, v, mul;                                                        \
      if (training) {                                                          \
        double s = 0, q = 0;                                                   \
        for (int64_t o = 0; o < outer; o++)                                    \
          for (int64_t i = 0; i < inner; i++)                                  \
            s += x[(o * c + k) * inner + i];                                   \
        m = cnt > 0 ? s / (double)cnt : NAN;                                   \
        for (int64_t o = 0; o < outer; o++)                                    \
          for (int64_t i = 0; i < inner; i++) {                                \
            double d = x[(o * c + k) * inner + i] - m;                         \
            q += d * d;                                                        \
          }                                                                    \
        v = cnt > 0 ? q / (double)cnt : NAN;                                   \
      } else {                                                                 \
        m = mean[k];                                                           \
        v = var[k];                                                            \
      }                                                                        \
      bm[k] = (T)m;                                                            \
      bv[k] = (T)v;                                                            \
      mul = scale[k] / sqrt(v + eps);                                          \
      for (int64_t o = 0; o < outer; o++)                                      \
        for (int64_t i = 0; i < inner; i++) {                                  \
          int64_t j = (o * c + k) * inner + i;                                 \
          y[j] = (T)((x[j] - m) * mul + offset[k]);                            \
        }                                                                      \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_BN, _)

typedef void bn_fn(void *y, void *bm, void *bv, const void *x,
                   const void *scale, const void *offset, const void *mean,
                   const void *var, int64_t outer, int64_t c, int64_t inner,
                   int training, double eps);
static bn_fn *const bn_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, bn)};

static int batch_norm_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x, *v[4];
  wf_tensor *y, *bm, *bv;
  wf_shape xs, vs[4], cs;
  int nchw, training, axis;
  double eps;
  int64_t c, outer = 1, inner = 1;
  bn_fn *fn;

  if (bn_attrs(&a, &nchw, &training, &eps, st) ||
      wfx_kernel_input(ctx, 0, &x, &xs, st))
    return wfx_code(st);
  for (int i = 0; i < 4; i++)
    if (wfx_kernel_input(ctx, i + 1, &v[i], &vs[i], st))
      return wfx_code(st);
  if (bn_check(&xs, vs, nchw, training, &c, st))
    return wfx_code(st);
  if (!(fn = bn_table[wfx_dtype(x)]))
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  axis = nn_channel_axis(nchw, xs.rank);
  c = xs.dims[axis];
  for (int i = 0; i < axis; i++)
    outer *= xs.dims[i];
  for (int i = axis + 1; i < xs.rank; i++)
    inner *= xs.dims[i];
  wfx_shape_make(&cs, 1, &c);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)) ||
      !(bm = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(bv = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
    return wfx_code(st);
  fn(wfx_data(y), wfx_data(bm), wfx_data(bv), wfx_data(x), wfx_data(v[0]),
     wfx_data(v[1]), wfx_data(v[2]), wfx_data(v[3]), outer, c, inner, training,
     eps);
  return 0;
}

static const wf_arg_def bn_inputs[] = {
    WF_ARG_T("x", "T", "(N, H, W, C) or (N, C, H, W); any rank >= 2"),
    WF_ARG_T("scale", "T", "(C,) gamma"),
    WF_ARG_T("offset", "T", "(C,) beta"),
    WF_ARG_T("mean", "T",
             "(C,) for inference; ignored (may be (0,)) in "
             "training"),
    WF_ARG_T("variance", "T",
             "(C,) for inference; ignored (may be (0,)) in "
             "training"),
    WF_ARG_END};
static const wf_arg_def bn_outputs[] = {
    WF_ARG_T("y", "T", "the shape of x"),
    WF_ARG_T("batch_mean", "T", "(C,) the mean used"),
    WF_ARG_T("batch_variance", "T",
             "(C,) the variance used: biased (divided by the count) in "
             "training"),
    WF_ARG_END};
static const wf_attr_def bn_attrs_def[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_FLOAT("epsilon", 0.001, "added to the variance, >= 0"),
    NN_ATTR_BOOL("is_training", 1,
                 "true: use the batch's statistics; false: 'mean' and "
                 "'variance'"),
    NN_ATTR_DATA_FORMAT, WF_ATTR_END};

const wf_op_def nn_batch_norm_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "BatchNorm",
    .inputs = bn_inputs,
    .outputs = bn_outputs,
    .attrs = bn_attrs_def,
    .shape_fn = batch_norm_shape,
    .doc = "y = (x - mean) / sqrt(variance + epsilon) * scale + offset per "
           "channel of x (N, H, W, C) (or NCHW). In training mean and "
           "variance are the batch's over all dimensions but C (the variance "
           "biased, unlike TensorFlow's Bessel-corrected batch_variance "
           "output) and are returned; in inference the given ones are used "
           "and returned."};

const wf_kernel_def nn_batch_norm_kernel =
    WFX_CPU_REFERENCE("BatchNorm", "T", WFX_DTYPES_FLOAT, batch_norm_compute);

/* ---- BatchNormGrad ------------------------------------------------------- */

static const char *const bng_vectors[] = {"scale", "mean", "variance",
                                          "mean_backprop", "variance_backprop"};

/* Checks y_backprop and x (one shape, rank >= 2) and the five (C,) vectors
 * (inputs 2..6); *c gets the channel count when known. */
static int bng_check(const wf_shape *dy, const wf_shape *x, const wf_shape *vs,
                     int nchw, int64_t *c, wf_shape *xs, wf_status *st) {
  char a[WFX_SHAPE_STR_MAX];

  if (wfx_shape_merge(dy, x, xs, "y_backprop against x", st))
    return wfx_code(st);
  if (xs->rank >= 0 && xs->rank < 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "x must have rank 2 or more, got shape %s",
                    wfx_shape_str(xs, a, sizeof a));
  *c = xs->rank >= 0 ? xs->dims[nn_channel_axis(nchw, xs->rank)]
                     : WF_UNKNOWN_DIM;
  for (int i = 0; i < 5; i++) {
    int64_t d = vs[i].rank == 1 ? vs[i].dims[0] : WF_UNKNOWN_DIM;

    if (vs[i].rank >= 0 && vs[i].rank != 1)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s must be a vector (C,), got shape %s", bng_vectors[i],
                      wfx_shape_str(&vs[i], a, sizeof a));
    if (d < 0)
      continue;
    if (*c >= 0 && d != *c)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s has %" PRId64 " entries but x has %" PRId64
                      " channels",
                      bng_vectors[i], d, *c);
    *c = d;
  }
  return 0;
}

static int batch_norm_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  wf_shape dy, x, xs, vs[5], cs;
  int nchw, training;
  double eps;
  int64_t c;

  if (bn_attrs(&a, &nchw, &training, &eps, st) ||
      wfx_shape_input(ctx, 0, NULL, &dy, st) ||
      wfx_shape_input(ctx, 1, NULL, &x, st))
    return wfx_code(st);
  for (int i = 0; i < 5; i++)
    if (wfx_shape_input(ctx, i + 2, NULL, &vs[i], st))
      return wfx_code(st);
  if (bng_check(&dy, &x, vs, nchw, &c, &xs, st))
    return wfx_code(st);
  if (xs.rank >= 0)
    xs.dims[nn_channel_axis(nchw, xs.rank)] = c;
  wfx_shape_make(&cs, 1, &c);
  wfx_host->shape_set_output(ctx, 0, &xs);
  wfx_host->shape_set_output(ctx, 1, &cs);
  wfx_host->shape_set_output(ctx, 2, &cs);
  return 0;
}

/* x viewed as (outer, C, inner), M = outer * inner per channel, r =
 * 1 / sqrt(variance + eps), xhat = (x - mean) r. Both modes:
 *   scale_backprop = sum(dy xhat), offset_backprop = sum(dy);
 * inference: x_backprop = dy scale r; training (mean, variance the batch's,
 * which depend on x):
 *   x_backprop = scale r (dy - sum(dy) / M - xhat sum(dy xhat) / M)
 *                + mean_backprop / M + variance_backprop 2 (x - mean) / M.
 * Sums in double. */
#define DEF_BN_GRAD(T, sfx, dt, u)                                             \
  static void bn_grad_##sfx(void *dxv, void *dsv, void *dov, const void *dyv,  \
                            const void *xv, const void *scv, const void *mv,   \
                            const void *vv, const void *dmv, const void *dvv,  \
                            int64_t outer, int64_t c, int64_t inner,           \
                            int training, double eps) {                        \
    T *dx = dxv, *ds = dsv, *doff = dov;                                       \
    const T *dy = dyv, *x = xv, *scale = scv, *mean = mv, *var = vv;           \
    const T *dmean = dmv, *dvar = dvv;                                         \
    double cnt = (double)(outer * inner);                                      \
    for (int64_t k = 0; k < c; k++) {                                          \
      double m = mean[k], r = 1.0 / sqrt((double)var[k] + eps);                \
      double sdy = 0, sdyx = 0;                                                \
      for (int64_t o = 0; o < outer; o++)                                      \
        for (int64_t i = 0; i < inner; i++) {                                  \
          int64_t j = (o * c + k) * inner + i;                                 \
          sdy += dy[j];                                                        \
          sdyx += dy[j] * (x[j] - m) * r;                                      \
        }                                                                      \
      ds[k] = (T)sdyx;                                                         \
      doff[k] = (T)sdy;                                                        \
      for (int64_t o = 0; o < outer; o++)                                      \
        for (int64_t i = 0; i < inner; i++) {                                  \
          int64_t j = (o * c + k) * inner + i;                                 \
          double xhat = (x[j] - m) * r, g;                                     \
          if (training)                                                        \
            g = scale[k] * r * (dy[j] - sdy / cnt - xhat * sdyx / cnt) +       \
                dmean[k] / cnt + dvar[k] * 2.0 * (x[j] - m) / cnt;             \
          else                                                                 \
            g = dy[j] * scale[k] * r;                                          \
          dx[j] = (T)g;                                                        \
        }                                                                      \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_BN_GRAD, _)

static int batch_norm_grad_compute(wf_kernel_ctx *ctx, void *state,
                                   wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *dy, *x, *v[5];
  wf_tensor *dx, *ds, *doff;
  wf_shape dys, xs0, xs, vs[5], cs;
  int nchw, training, axis;
  double eps;
  int64_t c, outer = 1, inner = 1;

  if (bn_attrs(&a, &nchw, &training, &eps, st) ||
      wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      wfx_kernel_input(ctx, 1, &x, &xs0, st))
    return wfx_code(st);
  for (int i = 0; i < 5; i++)
    if (wfx_kernel_input(ctx, i + 2, &v[i], &vs[i], st))
      return wfx_code(st);
  if (bng_check(&dys, &xs0, vs, nchw, &c, &xs, st))
    return wfx_code(st);
  axis = nn_channel_axis(nchw, xs.rank);
  for (int i = 0; i < axis; i++)
    outer *= xs.dims[i];
  for (int i = axis + 1; i < xs.rank; i++)
    inner *= xs.dims[i];
  wfx_shape_make(&cs, 1, &c);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)) ||
      !(ds = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(doff = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
    return wfx_code(st);
  if (wfx_dtype(x) == WF_FLOAT32)
    bn_grad_f32(wfx_data(dx), wfx_data(ds), wfx_data(doff), wfx_data(dy),
                wfx_data(x), wfx_data(v[0]), wfx_data(v[1]), wfx_data(v[2]),
                wfx_data(v[3]), wfx_data(v[4]), outer, c, inner, training, eps);
  else
    bn_grad_f64(wfx_data(dx), wfx_data(ds), wfx_data(doff), wfx_data(dy),
                wfx_data(x), wfx_data(v[0]), wfx_data(v[1]), wfx_data(v[2]),
                wfx_data(v[3]), wfx_data(v[4]), outer, c, inner, training, eps);
  return 0;
}

static const wf_arg_def bng_inputs[] = {
    WF_ARG_T("y_backprop", "T", "the gradient of y, x's shape"),
    WF_ARG_T("x", "T", "BatchNorm's x: (N, H, W, C) or (N, C, H, W)"),
    WF_ARG_T("scale", "T", "(C,) BatchNorm's scale"),
    WF_ARG_T("mean", "T",
             "(C,) the mean BatchNorm used: its batch_mean output"),
    WF_ARG_T("variance", "T",
             "(C,) the variance BatchNorm used: its batch_variance output"),
    WF_ARG_T("mean_backprop", "T",
             "(C,) the gradient of batch_mean (zeros when none); read in "
             "training only"),
    WF_ARG_T("variance_backprop", "T",
             "(C,) the gradient of batch_variance (zeros when none); read in "
             "training only"),
    WF_ARG_END};
static const wf_arg_def bng_outputs[] = {
    WF_ARG_T("x_backprop", "T", "x's shape"),
    WF_ARG_T("scale_backprop", "T", "(C,)"),
    WF_ARG_T("offset_backprop", "T", "(C,)"), WF_ARG_END};

const wf_op_def nn_batch_norm_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "BatchNormGrad",
    .inputs = bng_inputs,
    .outputs = bng_outputs,
    .attrs = bn_attrs_def,
    .shape_fn = batch_norm_grad_shape,
    .doc = "The gradient of BatchNorm (same attributes) with respect to x, "
           "scale and offset, per channel with r = 1 / sqrt(variance + "
           "epsilon), xhat = (x - mean) r and M the elements per channel: "
           "scale_backprop = sum(dy xhat), offset_backprop = sum(dy); in "
           "training x_backprop = scale r (dy - mean(dy) - xhat mean(dy "
           "xhat)) + mean_backprop / M + variance_backprop 2 (x - mean) / M "
           "(the batch statistics depend on x); in inference x_backprop = "
           "dy scale r (mean and variance are constants and get no "
           "gradient)."};

const wf_kernel_def nn_batch_norm_grad_kernel = WFX_CPU_REFERENCE(
    "BatchNormGrad", "T", WFX_DTYPES_FLOAT, batch_norm_grad_compute);
