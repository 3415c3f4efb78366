/* plugins/ops/nn/conv.c — Conv2D: op definition, shape inference and the
 * reference CPU kernel (direct loops, accumulating in double; NHWC and
 * NCHW; strides, dilations, SAME/VALID/EXPLICIT padding). No grouped or
 * depthwise convolution: the filter's C_in must equal the input's C. The
 * fast oneDNN kernel belongs to the CPU device plugin. */
#include <config.h>

#include "nn.h"

#include <inttypes.h>
#include <string.h>

/* Everything the kernel loops need, in elements. */
typedef struct conv_geom {
  int64_t n, h, w, c, kh, kw, co, oh, ow;
  int64_t pad_top, pad_left;
  const nn_window *win;
  int64_t xs[4], ys[4]; /* element strides of N, H, W, C in x and y */
} conv_geom;

/* The output shape of x (xs) convolved with filter (fs) under window w;
 * unknown dims where inputs are unknown. Fills g when everything is
 * known. */
static int conv_dims(const wf_shape *xs, const wf_shape *fs, const nn_window *w,
                     wf_shape *out, conv_geom *g, wf_status *st) {
  int ix[4];
  int64_t x[4], f[4], oh, ow, pt, pl;
  char a[OPC_SHAPE_STR_MAX], b[OPC_SHAPE_STR_MAX];

  if (xs->rank >= 0 && xs->rank != 4)
    return opc_fail(
        st, WF_INVALID_ARGUMENT, "input must have rank 4 (%s), got shape %s",
        w->nchw ? "N, C, H, W" : "N, H, W, C", opc_shape_str(xs, a, sizeof a));
  if (fs->rank >= 0 && fs->rank != 4)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "filter must have rank 4 (KH, KW, C_in, C_out), got "
                    "shape %s",
                    opc_shape_str(fs, a, sizeof a));
  nn_nhwc_index(w->nchw, ix);
  for (int i = 0; i < 4; i++) {
    x[i] = xs->rank == 4 ? xs->dims[ix[i]] : WF_UNKNOWN_DIM;
    f[i] = fs->rank == 4 ? fs->dims[i] : WF_UNKNOWN_DIM;
  }
  if (f[0] == 0 || f[1] == 0)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "filter %s has an empty window (KH and KW must be >= 1)",
                    opc_shape_str(fs, a, sizeof a));
  if (x[3] >= 0 && f[2] >= 0 && x[3] != f[2])
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "input %s has %" PRId64 " channels but filter %s "
                    "expects C_in = %" PRId64,
                    opc_shape_str(xs, a, sizeof a), x[3],
                    opc_shape_str(fs, b, sizeof b), f[2]);
  if (nn_window_dim(w, 0, x[1], f[0], &oh, &pt, st) ||
      nn_window_dim(w, 1, x[2], f[1], &ow, &pl, st))
    return opc_host()->status_code(st);
  opc_shape_set_scalar(out);
  out->rank = 4;
  out->dims[ix[0]] = x[0];
  out->dims[ix[1]] = oh;
  out->dims[ix[2]] = ow;
  out->dims[ix[3]] = f[3];
  if (g) {
    int64_t xst[4], yst[4];

    memset(g, 0, sizeof *g);
    g->n = x[0], g->h = x[1], g->w = x[2], g->c = x[3];
    g->kh = f[0], g->kw = f[1], g->co = f[3];
    g->oh = oh, g->ow = ow, g->pad_top = pt, g->pad_left = pl;
    g->win = w;
    opc_shape_strides(xs, xst);
    opc_shape_strides(out, yst);
    for (int i = 0; i < 4; i++) {
      g->xs[i] = xst[ix[i]];
      g->ys[i] = yst[ix[i]];
    }
  }
  return 0;
}

static int conv2d_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_host *h = opc_host();
  nn_attrs a = {.shape = ctx};
  nn_window w;
  wf_shape xs, fs, out;

  if (nn_window_parse(&a, NULL, 1, 1, &w, st) ||
      opc_shape_input(ctx, 0, NULL, &xs, st) ||
      opc_shape_input(ctx, 1, NULL, &fs, st) ||
      conv_dims(&xs, &fs, &w, &out, NULL, st))
    return h->status_code(st);
  h->shape_set_output(ctx, 0, &out);
  return 0;
}

/* For each output pixel, acc[C_out] gathers the window's products; the
 * innermost loop runs along the filter's contiguous C_out. */
#define DEF_CONV(T, sfx, dt, u)                                                \
  static void conv_##sfx(T *y, const T *x, const T *f, const conv_geom *g,     \
                         double *acc) {                                        \
    const nn_window *w = g->win;                                               \
    for (int64_t n = 0; n < g->n; n++)                                         \
      for (int64_t oh = 0; oh < g->oh; oh++)                                   \
        for (int64_t ow = 0; ow < g->ow; ow++) {                               \
          T *yp = y + n * g->ys[0] + oh * g->ys[1] + ow * g->ys[2];            \
          memset(acc, 0, (size_t)g->co * sizeof *acc);                         \
          for (int64_t kh = 0; kh < g->kh; kh++) {                             \
            int64_t ih = oh * w->stride[0] - g->pad_top + kh * w->dilation[0]; \
            if (ih < 0 || ih >= g->h)                                          \
              continue;                                                        \
            for (int64_t kw = 0; kw < g->kw; kw++) {                           \
              int64_t iw =                                                     \
                  ow * w->stride[1] - g->pad_left + kw * w->dilation[1];       \
              const T *xp, *fp;                                                \
              if (iw < 0 || iw >= g->w)                                        \
                continue;                                                      \
              xp = x + n * g->xs[0] + ih * g->xs[1] + iw * g->xs[2];           \
              fp = f + (kh * g->kw + kw) * g->c * g->co;                       \
              for (int64_t ci = 0; ci < g->c; ci++) {                          \
                double xv = xp[ci * g->xs[3]];                                 \
                const T *fr = fp + ci * g->co;                                 \
                for (int64_t co = 0; co < g->co; co++)                         \
                  acc[co] += xv * fr[co];                                      \
              }                                                                \
            }                                                                  \
          }                                                                    \
          for (int64_t co = 0; co < g->co; co++)                               \
            yp[co * g->ys[3]] = (T)acc[co];                                    \
        }                                                                      \
  }
OPC_TYPES_FLOAT(DEF_CONV, _)

static int conv2d_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_host *h = opc_host();
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x, *f;
  wf_tensor *y;
  nn_window w;
  conv_geom g;
  wf_shape xs, fs, out;
  double *acc;

  if (nn_window_parse(&a, NULL, 1, 1, &w, st) ||
      opc_kernel_input(ctx, 0, &x, &xs, st) ||
      opc_kernel_input(ctx, 1, &f, &fs, st) ||
      conv_dims(&xs, &fs, &w, &out, &g, st))
    return h->status_code(st);
  if (!(y = h->kernel_output_new(ctx, 0, &out, st)))
    return h->status_code(st);
  if (h->tensor_count(y) == 0)
    return 0;
  if (!(acc = h->alloc((size_t)g.co * sizeof *acc, 0)))
    return opc_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " accumulators", g.co);
  if (h->tensor_dtype(x) == WF_FLOAT32)
    conv_f32(h->tensor_data(y), h->tensor_data(x), h->tensor_data(f), &g, acc);
  else
    conv_f64(h->tensor_data(y), h->tensor_data(x), h->tensor_data(f), &g, acc);
  h->free(acc);
  return 0;
}

static const int64_t ones4[4] = {1, 1, 1, 1};

static const wf_arg_def conv2d_inputs[] = {
    WF_ARG_T("input", "T", "(N, H, W, C) or (N, C, H, W) by data_format"),
    WF_ARG_T("filter", "T", "(KH, KW, C, C_out)"), WF_ARG_END};
static const wf_arg_def conv2d_outputs[] = {
    WF_ARG_T("output", "T",
             "(N, OH, OW, C_out) or (N, C_out, OH, OW) by data_format"),
    WF_ARG_END};
static const wf_attr_def conv2d_attrs[] = {
    NN_ATTR_TYPE("T", OPC_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_INTS_REQUIRED("strides", 4,
                          "4 entries in data_format order; 1 for N and C"),
    NN_ATTR_STRING_REQUIRED("padding", "\"SAME\", \"VALID\" or \"EXPLICIT\""),
    {WF_STRUCT_INIT(wf_attr_def), .name = "explicit_paddings",
     .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},
     .doc = "EXPLICIT only: 8 entries, (before, after) per dimension in "
            "data_format order; 0 for N and C"},
    NN_ATTR_INTS("dilations", ones4, 4,
                 "4 entries in data_format order; 1 for N and C"),
    NN_ATTR_DATA_FORMAT,
    WF_ATTR_END};

const wf_op_def nn_conv2d_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Conv2D",
    .inputs = conv2d_inputs,
    .outputs = conv2d_outputs,
    .attrs = conv2d_attrs,
    .shape_fn = conv2d_shape,
    .doc = "2-D convolution (cross-correlation, as TensorFlow): output[n, oh, "
           "ow, co] = sum over kh, kw, c of input[n, oh*SH + kh*DH - PT, ow*SW "
           "+ kw*DW - PL, c] * filter[kh, kw, c, co], zero outside the input. "
           "SAME: OH = ceil(H / SH), padding split with the smaller half "
           "before; VALID: OH = (H - (KH-1)*DH - 1) / SH + 1; EXPLICIT: the "
           "given paddings."};

const wf_kernel_def nn_conv2d_kernel =
    NN_KERNEL("Conv2D", OPC_DTYPES_FLOAT, conv2d_compute);
