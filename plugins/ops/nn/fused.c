/* plugins/ops/nn/fused.c — _FusedConv2D: Conv2D, then BiasAdd, then at most
 * one activation in one op, _FusedConv2DMaxPool: the same followed by a
 * MaxPool, and _FusedConv2DAndMaxPool: the same giving both the
 * convolution's output and its pooling (where a gradient reads the
 * former), which the graph's fusion pass makes from such chains after
 * autodiff (so they have no gradient). Op definitions, shape inference and
 * the reference CPU kernels (Conv2D's direct loop with the shared epilogue
 * of plugins/numerics/epilogue.c, then MaxPool's reference); the fast
 * kernels belong to the CPU device plugin. */
#include <config.h>

#include "nn.h"
#include "epilogue.h"

#include <inttypes.h>
#include <string.h>

/* Checks bias (C_out,) against the filter (KH, KW, C_in, C_out). */
static int bias_check(const wf_shape *fs, const wf_shape *bs, wf_status *st) {
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (bs->rank >= 0 && bs->rank != 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "bias must have rank 1 (C_out,), got shape %s",
                    wfx_shape_str(bs, a, sizeof a));
  if (bs->rank == 1 && fs->rank == 4 && bs->dims[0] >= 0 &&
      fs->dims[3] >= 0 && bs->dims[0] != fs->dims[3])
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "bias %s does not match the filter %s's C_out",
        wfx_shape_str(bs, a, sizeof a), wfx_shape_str(fs, b, sizeof b));
  return 0;
}

static int fused_conv2d_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape fs, bs;
  opc_fused f;

  if (opc_fused_shape_attrs(ctx, &f, st) ||
      wfx_shape_input(ctx, 1, NULL, &fs, st) ||
      wfx_shape_input(ctx, 2, NULL, &bs, st) || bias_check(&fs, &bs, st))
    return wfx_code(st);
  return nn_conv2d_op.shape_fn(ctx, st);
}

/* The convolution's output shape cs, then the pooling's of it ps. */
static int conv_pool_shapes(wf_shape_ctx *ctx, wf_shape *cs, wf_shape *ps,
                            wf_status *st) {
  nn_attrs a = {.shape = ctx};
  nn_window cw, pw;
  wf_shape xs, fs, bs;
  opc_fused f;

  if (opc_fused_shape_attrs(ctx, &f, st) ||
      nn_window_parse(&a, NULL, 1, 1, &cw, st) ||
      nn_pool_window_parse(&a, &pw, st) ||
      wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      wfx_shape_input(ctx, 1, NULL, &fs, st) ||
      wfx_shape_input(ctx, 2, NULL, &bs, st) || bias_check(&fs, &bs, st) ||
      nn_conv2d_out_shape(&xs, &fs, &cw, cs, st) ||
      nn_pool_out_shape(cs, &pw, ps, st))
    return wfx_code(st);
  return 0;
}

static int fused_conv2d_max_pool_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape cs, ps;

  if (conv_pool_shapes(ctx, &cs, &ps, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &ps);
  return 0;
}

static int fused_conv2d_and_max_pool_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape cs, ps;

  if (conv_pool_shapes(ctx, &cs, &ps, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &cs);
  wfx_host->shape_set_output(ctx, 1, &ps);
  return 0;
}

/* y = conv(x, f) as Conv2D's reference computes it (double accumulators),
 * over geometry read from the attributes. */
#define DEF_FCONV(T, sfx, dt, u)                                               \
  static void fconv_##sfx(T *y, const T *x, const T *f, const int64_t *xd,     \
                          const int64_t *xs, const int64_t *fd,                \
                          const int64_t *od, const int64_t *ys,                \
                          const int64_t *pad, const nn_window *w,              \
                          double *acc) {                                       \
    for (int64_t n = 0; n < xd[0]; n++)                                        \
      for (int64_t oh = 0; oh < od[0]; oh++)                                   \
        for (int64_t ow = 0; ow < od[1]; ow++) {                               \
          T *yp = y + n * ys[0] + oh * ys[1] + ow * ys[2];                     \
          memset(acc, 0, (size_t)fd[3] * sizeof *acc);                         \
          for (int64_t kh = 0; kh < fd[0]; kh++) {                             \
            int64_t ih = oh * w->stride[0] - pad[0] + kh * w->dilation[0];     \
            if (ih < 0 || ih >= xd[1])                                         \
              continue;                                                        \
            for (int64_t kw = 0; kw < fd[1]; kw++) {                           \
              int64_t iw = ow * w->stride[1] - pad[1] + kw * w->dilation[1];   \
              if (iw < 0 || iw >= xd[2])                                       \
                continue;                                                      \
              const T *xp = x + n * xs[0] + ih * xs[1] + iw * xs[2];           \
              const T *fp = f + (kh * fd[1] + kw) * fd[2] * fd[3];             \
              for (int64_t ci = 0; ci < fd[2]; ci++) {                         \
                double xv = xp[ci * xs[3]];                                    \
                const T *fr = fp + ci * fd[3];                                 \
                for (int64_t co = 0; co < fd[3]; co++)                         \
                  acc[co] += xv * fr[co];                                      \
              }                                                                \
            }                                                                  \
          }                                                                    \
          for (int64_t co = 0; co < fd[3]; co++)                               \
            yp[co * ys[3]] = (T)acc[co];                                       \
        }                                                                      \
  }
WFX_TYPES_FLOAT(DEF_FCONV, _)

/* One call of the reference: inputs, geometry and the convolution's
 * output shape. */
typedef struct fconv_call {
  const wf_tensor *x, *f, *b;
  nn_window w;
  opc_fused fu;
  wf_shape ys;
  int ix[4];
  int64_t xd[4], od[2], pad[2], xstr[4], ystr[4];
} fconv_call;

static int fconv_prepare(wf_kernel_ctx *ctx, fconv_call *c, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  wf_shape xs, fs, bs;
  int64_t xst[4], yst[4];

  if (opc_fused_kernel_attrs(ctx, &c->fu, st) ||
      nn_window_parse(&a, NULL, 1, 1, &c->w, st) ||
      wfx_kernel_input(ctx, 0, &c->x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &c->f, &fs, st) ||
      wfx_kernel_input(ctx, 2, &c->b, &bs, st))
    return wfx_code(st);
  if (xs.rank != 4 || fs.rank != 4 || bs.rank != 1 ||
      fs.dims[3] != bs.dims[0] || wfx_dtype(c->f) != wfx_dtype(c->x) ||
      wfx_dtype(c->b) != wfx_dtype(c->x))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "expected input (rank 4), filter (KH, KW, C_in, C_out) "
                    "and bias (C_out,) of one dtype");
  nn_nhwc_index(c->w.nchw, c->ix);
  for (int i = 0; i < 4; i++)
    c->xd[i] = xs.dims[c->ix[i]];
  if (fs.dims[0] < 1 || fs.dims[1] < 1 || fs.dims[2] != c->xd[3])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input has %" PRId64 " channels but the filter expects "
                    "C_in = %" PRId64 " (and a window of at least 1 x 1)",
                    c->xd[3], fs.dims[2]);
  if (nn_window_dim(&c->w, 0, c->xd[1], fs.dims[0], &c->od[0], &c->pad[0],
                    st) ||
      nn_window_dim(&c->w, 1, c->xd[2], fs.dims[1], &c->od[1], &c->pad[1],
                    st))
    return wfx_code(st);
  wfx_shape_set_scalar(&c->ys);
  c->ys.rank = 4;
  c->ys.dims[c->ix[0]] = c->xd[0];
  c->ys.dims[c->ix[1]] = c->od[0];
  c->ys.dims[c->ix[2]] = c->od[1];
  c->ys.dims[c->ix[3]] = fs.dims[3];
  wfx_shape_strides(&xs, xst);
  wfx_shape_strides(&c->ys, yst);
  for (int i = 0; i < 4; i++) {
    c->xstr[i] = xst[c->ix[i]];
    c->ystr[i] = yst[c->ix[i]];
  }
  return 0;
}

/* y (c->ys) = act(conv(x, f) + bias). */
static int fconv_run(const fconv_call *c, void *y, wf_status *st) {
  wf_shape fs;
  int64_t outer = 1, inner = 1, axis;
  double *acc;

  wfx_host->tensor_shape(c->f, &fs);
  if (!(acc = wfx_host->alloc((size_t)fs.dims[3] * sizeof *acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " accumulators", fs.dims[3]);
  if (wfx_dtype(c->x) == WF_FLOAT32)
    fconv_f32(y, wfx_data(c->x), wfx_data(c->f), c->xd, c->xstr, fs.dims,
              c->od, c->ystr, c->pad, &c->w, acc);
  else
    fconv_f64(y, wfx_data(c->x), wfx_data(c->f), c->xd, c->xstr, fs.dims,
              c->od, c->ystr, c->pad, &c->w, acc);
  wfx_host->free(acc);
  axis = nn_channel_axis(c->w.nchw, 4);
  for (int i = 0; i < axis; i++)
    outer *= c->ys.dims[i];
  for (int i = (int)axis + 1; i < 4; i++)
    inner *= c->ys.dims[i];
  opc_fused_apply(wfx_dtype(c->x), y, wfx_data(c->b), outer,
                  c->ys.dims[axis], inner, &c->fu);
  return 0;
}

static int fused_conv2d_compute(wf_kernel_ctx *ctx, void *state,
                                wf_status *st) {
  fconv_call c;
  wf_tensor *y;

  if (fconv_prepare(ctx, &c, st) ||
      !(y = wfx_host->kernel_output_new(ctx, 0, &c.ys, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  return fconv_run(&c, wfx_data(y), st);
}

/* _FusedConv2DMaxPool: the convolution's output into a buffer, then
 * MaxPool's reference over it. */
static int fused_conv2d_max_pool_compute(wf_kernel_ctx *ctx, void *state,
                                         wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  nn_window pw;
  fconv_call c;
  wf_shape os;
  wf_tensor *y;
  int64_t count = 1;
  void *buf;
  int rc;

  if (fconv_prepare(ctx, &c, st) || nn_pool_window_parse(&a, &pw, st) ||
      nn_pool_out_shape(&c.ys, &pw, &os, st) ||
      !(y = wfx_host->kernel_output_new(ctx, 0, &os, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  for (int i = 0; i < 4; i++)
    count *= c.ys.dims[i];
  if (!(buf = wfx_host->alloc((size_t)count * wfx_dtype_size(wfx_dtype(c.x)),
                              64)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for the convolution's %" PRId64
                    " elements before pooling",
                    count);
  rc = fconv_run(&c, buf, st);
  if (rc == 0)
    rc = nn_max_pool_values(wfx_dtype(c.x), wfx_data(y), buf, &c.ys, &pw, st);
  wfx_host->free(buf);
  return rc;
}

/* _FusedConv2DAndMaxPool: the convolution's output, then MaxPool's
 * reference over it. */
static int fused_conv2d_and_max_pool_compute(wf_kernel_ctx *ctx,
                                             void *state, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  nn_window pw;
  fconv_call c;
  wf_shape os;
  wf_tensor *y, *pooled;
  int rc;

  (void)state;
  if (fconv_prepare(ctx, &c, st) || nn_pool_window_parse(&a, &pw, st) ||
      nn_pool_out_shape(&c.ys, &pw, &os, st) ||
      !(y = wfx_host->kernel_output_new(ctx, 0, &c.ys, st)) ||
      !(pooled = wfx_host->kernel_output_new(ctx, 1, &os, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  rc = fconv_run(&c, wfx_data(y), st);
  if (rc == 0 && wfx_count(pooled) > 0)
    rc = nn_max_pool_values(wfx_dtype(c.x), wfx_data(pooled), wfx_data(y),
                            &c.ys, &pw, st);
  return rc;
}

static const int64_t ones4[4] = {1, 1, 1, 1};
static const char *const bias_only[] = {"BiasAdd"};

static const wf_arg_def fused_conv2d_inputs[] = {
    WF_ARG_T("input", "T", "(N, H, W, C) or (N, C, H, W) by data_format"),
    WF_ARG_T("filter", "T", "(KH, KW, C, C_out)"),
    WF_ARG_T("bias", "T", "(C_out,)"), WF_ARG_END};
static const wf_arg_def fused_conv2d_outputs[] = {
    WF_ARG_T("output", "T",
             "(N, OH, OW, C_out) or (N, C_out, OH, OW) by data_format"),
    WF_ARG_END};
#define FUSED_CONV2D_ATTRS                                                     \
  NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),                   \
      NN_ATTR_INTS_REQUIRED("strides", 4,                                      \
                            "4 entries in data_format order; 1 for N and C"),  \
      NN_ATTR_STRING_REQUIRED("padding",                                       \
                              "\"SAME\", \"VALID\" or \"EXPLICIT\""),          \
      {WF_STRUCT_INIT(wf_attr_def), .name = "explicit_paddings",               \
       .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,                   \
       .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},      \
       .doc = "EXPLICIT only: 8 entries, (before, after) per dimension in "    \
              "data_format order; 0 for N and C"},                             \
      NN_ATTR_INTS("dilations", ones4, 4,                                      \
                   "4 entries in data_format order; 1 for N and C"),           \
      NN_ATTR_DATA_FORMAT,                                                     \
      {WF_STRUCT_INIT(wf_attr_def), .name = "fused_ops",                       \
       .type = WF_ATTR_LIST | WF_ATTR_STRING, .has_default = 1,                \
       .default_value = {.type = WF_ATTR_LIST | WF_ATTR_STRING,                \
                         .count = 1,                                           \
                         .u.strings = bias_only},                              \
       .doc = OPC_FUSED_OPS_DOC},                                              \
      NN_ATTR_FLOAT("alpha", 0.2, "LeakyRelu's slope for x < 0")

static const wf_attr_def fused_conv2d_max_pool_attrs[] = {
    FUSED_CONV2D_ATTRS,
    NN_ATTR_INTS_REQUIRED("pool_ksize", 4,
                          "the pooling's window, 4 entries in data_format "
                          "order; 1 for N and C"),
    NN_ATTR_INTS_REQUIRED("pool_strides", 4,
                          "the pooling's strides, 4 entries in data_format "
                          "order; 1 for N and C"),
    NN_ATTR_STRING_REQUIRED("pool_padding",
                            "the pooling's: \"SAME\" or \"VALID\""),
    WF_ATTR_END};

static const wf_attr_def fused_conv2d_attrs[] = {FUSED_CONV2D_ATTRS,
                                                     WF_ATTR_END};

const wf_op_def nn_fused_conv2d_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "_FusedConv2D",
    .inputs = fused_conv2d_inputs,
    .outputs = fused_conv2d_outputs,
    .attrs = fused_conv2d_attrs,
    .shape_fn = fused_conv2d_shape,
    .doc = "act(BiasAdd(Conv2D(input, filter), bias)) in one op, with "
           "Conv2D's attributes and data_format; act is fused_ops' second "
           "step, if any. Made by the graph's fusion pass on executed "
           "graphs; not differentiable."};

const wf_kernel_def nn_fused_conv2d_kernel = WFX_CPU_REFERENCE(
    "_FusedConv2D", "T", WFX_DTYPES_FLOAT, fused_conv2d_compute);

static const wf_arg_def fused_conv2d_max_pool_outputs[] = {
    WF_ARG_T("output", "T",
             "(N, PH, PW, C_out) or (N, C_out, PH, PW) by data_format"),
    WF_ARG_END};

const wf_op_def nn_fused_conv2d_max_pool_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "_FusedConv2DMaxPool",
    .inputs = fused_conv2d_inputs,
    .outputs = fused_conv2d_max_pool_outputs,
    .attrs = fused_conv2d_max_pool_attrs,
    .shape_fn = fused_conv2d_max_pool_shape,
    .doc = "MaxPool(act(BiasAdd(Conv2D(input, filter), bias))) in one op: "
           "_FusedConv2D's attributes, then the pooling's as pool_ksize, "
           "pool_strides and pool_padding. Made by the graph's fusion pass "
           "on executed graphs, where nothing else reads the convolution's "
           "output; not differentiable."};

const wf_kernel_def nn_fused_conv2d_max_pool_kernel =
    WFX_CPU_REFERENCE("_FusedConv2DMaxPool", "T", WFX_DTYPES_FLOAT,
                      fused_conv2d_max_pool_compute);

static const wf_arg_def fused_conv2d_and_max_pool_outputs[] = {
    WF_ARG_T("output", "T",
             "(N, OH, OW, C_out) or (N, C_out, OH, OW) by data_format: "
             "_FusedConv2D's"),
    WF_ARG_T("pooled", "T",
             "(N, PH, PW, C_out) or (N, C_out, PH, PW): output's MaxPool"),
    WF_ARG_END};

const wf_op_def nn_fused_conv2d_and_max_pool_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "_FusedConv2DAndMaxPool",
    .inputs = fused_conv2d_inputs,
    .outputs = fused_conv2d_and_max_pool_outputs,
    .attrs = fused_conv2d_max_pool_attrs,
    .shape_fn = fused_conv2d_and_max_pool_shape,
    .doc = "act(BiasAdd(Conv2D(input, filter), bias)) and its MaxPool in one "
           "op, as two outputs: _FusedConv2DMaxPool's attributes. Made by "
           "the graph's fusion pass on executed graphs where something "
           "besides the pooling reads the convolution's output (in "
           "training, the activation's gradient); not differentiable."};

const wf_kernel_def nn_fused_conv2d_and_max_pool_kernel =
    WFX_CPU_REFERENCE("_FusedConv2DAndMaxPool", "T", WFX_DTYPES_FLOAT,
                      fused_conv2d_and_max_pool_compute);
