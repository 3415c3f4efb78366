/* plugins/ops/nn/bias.c — BiasAdd: adds a per-channel bias (NHWC: the last
 * dimension; NCHW: dimension 1), and BiasAddGrad, the bias's gradient.
 * Integer types wrap around on overflow. No broadcasting beyond the channel
 * dimension (math's Add does that). Gradient functions are in grad.c. */
#include <config.h>

#include "nn.h"

#include <inttypes.h>

/* Checks value (rank >= 2) and bias ((C,)) and returns the channel axis. */
static int bias_check(const wf_shape *vs, const wf_shape *bs, int nchw,
                      int *axis, wf_status *st) {
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  int64_t c;

  *axis = -1;
  if (vs->rank >= 0 && vs->rank < 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "value must have rank 2 or more, got shape %s",
                    wfx_shape_str(vs, a, sizeof a));
  if (bs->rank >= 0 && bs->rank != 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "bias must be a vector (C,), got shape %s",
                    wfx_shape_str(bs, a, sizeof a));
  if (vs->rank < 0)
    return 0;
  *axis = nn_channel_axis(nchw, vs->rank);
  c = vs->dims[*axis];
  if (bs->rank == 1 && c >= 0 && bs->dims[0] >= 0 && bs->dims[0] != c)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "bias %s does not match the %" PRId64 " channels "
                    "(dimension %d) of value %s",
                    wfx_shape_str(bs, a, sizeof a), c, *axis,
                    wfx_shape_str(vs, b, sizeof b));
  return 0;
}

static int bias_add_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  wf_shape vs, bs;
  int nchw, axis;

  if (nn_data_format(&a, &nchw, st) || wfx_shape_input(ctx, 0, NULL, &vs, st) ||
      wfx_shape_input(ctx, 1, NULL, &bs, st) ||
      bias_check(&vs, &bs, nchw, &axis, st))
    return wfx_code(st);
  if (axis >= 0 && vs.dims[axis] < 0 && bs.rank == 1)
    vs.dims[axis] = bs.dims[0];
  wfx_host->shape_set_output(ctx, 0, &vs);
  return 0;
}

/* y[o, c, i] = x[o, c, i] + b[c] over a (outer, C, inner) view. */
#define DEF_BIAS_FLOAT(T, sfx, dt, u)                                          \
  static void bias_add_##sfx(void *yv, const void *xv, const void *bv,         \
                             int64_t outer, int64_t c, int64_t inner) {        \
    T *y = yv;                                                                 \
    const T *x = xv, *b = bv;                                                  \
    for (int64_t o = 0; o < outer; o++)                                        \
      for (int64_t k = 0; k < c; k++)                                          \
        for (int64_t i = 0; i < inner; i++) {                                  \
          int64_t j = (o * c + k) * inner + i;                                 \
          y[j] = x[j] + b[k];                                                  \
        }                                                                      \
  }
/* Integers add in uint64_t so that overflow wraps instead of being
 * undefined; the conversion back keeps the low bits. */
#define DEF_BIAS_INT(T, sfx, dt, u)                                            \
  static void bias_add_##sfx(void *yv, const void *xv, const void *bv,         \
                             int64_t outer, int64_t c, int64_t inner) {        \
    T *y = yv;                                                                 \
    const T *x = xv, *b = bv;                                                  \
    for (int64_t o = 0; o < outer; o++)                                        \
      for (int64_t k = 0; k < c; k++)                                          \
        for (int64_t i = 0; i < inner; i++) {                                  \
          int64_t j = (o * c + k) * inner + i;                                 \
          y[j] = (T)((uint64_t)x[j] + (uint64_t)b[k]);                         \
        }                                                                      \
  }
WFX_TYPES_FLOAT(DEF_BIAS_FLOAT, _)
WFX_TYPES_INT(DEF_BIAS_INT, _)

typedef void bias_fn(void *y, const void *x, const void *b, int64_t outer,
                     int64_t c, int64_t inner);
static bias_fn *const bias_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, bias_add)};

static int bias_add_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x, *b;
  wf_tensor *y;
  wf_shape vs, bs;
  int nchw, axis;
  int64_t outer = 1, inner = 1;
  bias_fn *fn;

  if (nn_data_format(&a, &nchw, st) || wfx_kernel_input(ctx, 0, &x, &vs, st) ||
      wfx_kernel_input(ctx, 1, &b, &bs, st) ||
      bias_check(&vs, &bs, nchw, &axis, st))
    return wfx_code(st);
  if (!(fn = bias_table[wfx_dtype(x)]))
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &vs, st)))
    return wfx_code(st);
  for (int i = 0; i < axis; i++)
    outer *= vs.dims[i];
  for (int i = axis + 1; i < vs.rank; i++)
    inner *= vs.dims[i];
  fn(wfx_data(y), wfx_data(x), wfx_data(b), outer, vs.dims[axis], inner);
  return 0;
}

static const wf_arg_def bias_add_inputs[] = {
    WF_ARG_T("value", "T", "(N, ..., C) for NHWC or (N, C, ...) for NCHW"),
    WF_ARG_T("bias", "T", "(C,)"), WF_ARG_END};
static const wf_arg_def bias_add_outputs[] = {
    WF_ARG_T("output", "T", "the shape of value"), WF_ARG_END};
static const wf_attr_def bias_add_attrs[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_NUMBER, "a float or integer type"),
    NN_ATTR_DATA_FORMAT, WF_ATTR_END};

const wf_op_def nn_bias_add_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "BiasAdd",
    .inputs = bias_add_inputs,
    .outputs = bias_add_outputs,
    .attrs = bias_add_attrs,
    .shape_fn = bias_add_shape,
    .doc = "Adds bias (C,) along the channel dimension of value: the last "
           "for NHWC, e.g. (N, D) or (N, H, W, C); dimension 1 for NCHW, "
           "e.g. (N, C, H, W). Integers wrap around."};

const wf_kernel_def nn_bias_add_kernel =
    WFX_CPU_REFERENCE("BiasAdd", "T", WFX_DTYPES_NUMBER, bias_add_compute);

/* ---- BiasAddGrad --------------------------------------------------------- */

static int bias_add_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  wf_shape dy, out, none;
  int nchw, axis;
  int64_t c;

  wfx_shape_set_unknown(&none);
  if (nn_data_format(&a, &nchw, st) || wfx_shape_input(ctx, 0, NULL, &dy, st) ||
      bias_check(&dy, &none, nchw, &axis, st))
    return wfx_code(st);
  c = axis >= 0 ? dy.dims[axis] : WF_UNKNOWN_DIM;
  wfx_shape_make(&out, 1, &c);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* db[k] = sum of dy over the (outer, C, inner) view's outer and inner
 * positions, in double. */
#define DEF_BIAS_GRAD(T, sfx, dt, u)                                           \
  static void bias_add_grad_##sfx(void *dbv, const void *dyv, int64_t outer,   \
                                  int64_t c, int64_t inner) {                  \
    T *db = dbv;                                                               \
    const T *dy = dyv;                                                         \
    for (int64_t k = 0; k < c; k++) {                                          \
      double s = 0;                                                            \
      for (int64_t o = 0; o < outer; o++)                                      \
        for (int64_t i = 0; i < inner; i++)                                    \
          s += dy[(o * c + k) * inner + i];                                    \
      db[k] = (T)s;                                                            \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_BIAS_GRAD, _)

static int bias_add_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *dy;
  wf_tensor *db;
  wf_shape dys, none, out;
  int nchw, axis;
  int64_t outer = 1, inner = 1;

  wfx_shape_set_unknown(&none);
  if (nn_data_format(&a, &nchw, st) ||
      wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      bias_check(&dys, &none, nchw, &axis, st))
    return wfx_code(st);
  wfx_shape_make(&out, 1, &dys.dims[axis]);
  if (!(db = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  for (int i = 0; i < axis; i++)
    outer *= dys.dims[i];
  for (int i = axis + 1; i < dys.rank; i++)
    inner *= dys.dims[i];
  if (wfx_dtype(dy) == WF_FLOAT32)
    bias_add_grad_f32(wfx_data(db), wfx_data(dy), outer, dys.dims[axis], inner);
  else
    bias_add_grad_f64(wfx_data(db), wfx_data(dy), outer, dys.dims[axis], inner);
  return 0;
}

static const wf_arg_def bias_add_grad_inputs[] = {
    WF_ARG_T("out_backprop", "T",
             "the gradient of BiasAdd's output: (N, ..., C) or (N, C, ...)"),
    WF_ARG_END};
static const wf_arg_def bias_add_grad_outputs[] = {
    WF_ARG_T("output", "T", "(C,) the gradient of the bias"), WF_ARG_END};
static const wf_attr_def bias_add_grad_attrs[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_DATA_FORMAT, WF_ATTR_END};

const wf_op_def nn_bias_add_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "BiasAddGrad",
    .inputs = bias_add_grad_inputs,
    .outputs = bias_add_grad_outputs,
    .attrs = bias_add_grad_attrs,
    .shape_fn = bias_add_grad_shape,
    .doc = "The gradient of BiasAdd's bias: out_backprop summed over every "
           "dimension but the channel one (the last for NHWC, 1 for NCHW), "
           "accumulated in double: (N, H, W, C) -> (C,)."};

const wf_kernel_def nn_bias_add_grad_kernel = WFX_CPU_REFERENCE(
    "BiasAddGrad", "T", WFX_DTYPES_FLOAT, bias_add_grad_compute);
