/* plugins/ops/nn/batchnorm.c — BatchNorm, one op in the manner of
 * TensorFlow's FusedBatchNorm: normalises per channel with the batch's
 * statistics (is_training) or with given ones (inference). Statistics are
 * accumulated in double, two passes. No running-average update (callers
 * combine batch_mean/batch_variance with their variables) and no reserve
 * space outputs. */
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
  char a[OPC_SHAPE_STR_MAX];

  if (xs->rank >= 0 && xs->rank < 2)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "x must have rank 2 or more, got shape %s",
                    opc_shape_str(xs, a, sizeof a));
  *c = xs->rank >= 0 ? xs->dims[nn_channel_axis(nchw, xs->rank)]
                     : WF_UNKNOWN_DIM;
  for (int i = 0; i < 4; i++) {
    int64_t d = vs[i].rank == 1 ? vs[i].dims[0] : WF_UNKNOWN_DIM;

    if (vs[i].rank >= 0 && vs[i].rank != 1)
      return opc_fail(st, WF_INVALID_ARGUMENT,
                      "%s must be a vector (C,), got shape %s", names[i],
                      opc_shape_str(&vs[i], a, sizeof a));
    if (d < 0 || (training && i >= 2 && d == 0))
      continue;
    if (*c >= 0 && d != *c)
      return opc_fail(
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
    return opc_host()->status_code(st);
  if (!(*epsilon >= 0))
    return opc_fail(st, WF_INVALID_ARGUMENT, "epsilon is %g (must be >= 0)",
                    *epsilon);
  return 0;
}

static int batch_norm_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_host *h = opc_host();
  nn_attrs a = {.shape = ctx};
  wf_shape xs, vs[4], cs;
  int nchw, training;
  double eps;
  int64_t c;

  if (bn_attrs(&a, &nchw, &training, &eps, st) ||
      opc_shape_input(ctx, 0, NULL, &xs, st))
    return h->status_code(st);
  for (int i = 0; i < 4; i++)
    if (opc_shape_input(ctx, i + 1, NULL, &vs[i], st))
      return h->status_code(st);
  if (bn_check(&xs, vs, nchw, training, &c, st))
    return h->status_code(st);
  if (xs.rank >= 0)
    xs.dims[nn_channel_axis(nchw, xs.rank)] = c;
  opc_shape_make(&cs, 1, &c);
  h->shape_set_output(ctx, 0, &xs);
  h->shape_set_output(ctx, 1, &cs);
  h->shape_set_output(ctx, 2, &cs);
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
OPC_TYPES_FLOAT(DEF_BN, _)

typedef void bn_fn(void *y, void *bm, void *bv, const void *x,
                   const void *scale, const void *offset, const void *mean,
                   const void *var, int64_t outer, int64_t c, int64_t inner,
                   int training, double eps);
static bn_fn *const bn_table[WF_DTYPE_COUNT] = {
    OPC_TYPES_FLOAT(OPC_TABLE_ENTRY, bn)};

static int batch_norm_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_host *h = opc_host();
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x, *v[4];
  wf_tensor *y, *bm, *bv;
  wf_shape xs, vs[4], cs;
  int nchw, training, axis;
  double eps;
  int64_t c, outer = 1, inner = 1;
  bn_fn *fn;

  if (bn_attrs(&a, &nchw, &training, &eps, st) ||
      opc_kernel_input(ctx, 0, &x, &xs, st))
    return h->status_code(st);
  for (int i = 0; i < 4; i++)
    if (opc_kernel_input(ctx, i + 1, &v[i], &vs[i], st))
      return h->status_code(st);
  if (bn_check(&xs, vs, nchw, training, &c, st))
    return h->status_code(st);
  if (!(fn = bn_table[h->tensor_dtype(x)]))
    return opc_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    opc_dtype_name(h->tensor_dtype(x)));
  axis = nn_channel_axis(nchw, xs.rank);
  c = xs.dims[axis];
  for (int i = 0; i < axis; i++)
    outer *= xs.dims[i];
  for (int i = axis + 1; i < xs.rank; i++)
    inner *= xs.dims[i];
  opc_shape_make(&cs, 1, &c);
  if (!(y = h->kernel_output_new(ctx, 0, &xs, st)) ||
      !(bm = h->kernel_output_new(ctx, 1, &cs, st)) ||
      !(bv = h->kernel_output_new(ctx, 2, &cs, st)))
    return h->status_code(st);
  fn(h->tensor_data(y), h->tensor_data(bm), h->tensor_data(bv),
     h->tensor_data(x), h->tensor_data(v[0]), h->tensor_data(v[1]),
     h->tensor_data(v[2]), h->tensor_data(v[3]), outer, c, inner, training,
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
    NN_ATTR_TYPE("T", OPC_DTYPES_FLOAT, "float32 or float64"),
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
    NN_KERNEL("BatchNorm", OPC_DTYPES_FLOAT, batch_norm_compute);
