/* plugins/ops/nn/conv.c — Conv2D and its two backward ops,
 * Conv2DBackpropInput and Conv2DBackpropFilter: op definitions, shape
 * inference and the reference CPU kernels (direct loops, accumulating in
 * double; NHWC and NCHW; strides, dilations, SAME/VALID/EXPLICIT padding).
 * No grouped or depthwise convolution: the filter's C_in must equal the
 * input's C. The fast oneDNN kernels belong to the CPU device plugin; the
 * gradient function is in grad.c. */
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
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (xs->rank >= 0 && xs->rank != 4)
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "input must have rank 4 (%s), got shape %s",
        w->nchw ? "N, C, H, W" : "N, H, W, C", wfx_shape_str(xs, a, sizeof a));
  if (fs->rank >= 0 && fs->rank != 4)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "filter must have rank 4 (KH, KW, C_in, C_out), got "
                    "shape %s",
                    wfx_shape_str(fs, a, sizeof a));
  nn_nhwc_index(w->nchw, ix);
  for (int i = 0; i < 4; i++) {
    x[i] = xs->rank == 4 ? xs->dims[ix[i]] : WF_UNKNOWN_DIM;
    f[i] = fs->rank == 4 ? fs->dims[i] : WF_UNKNOWN_DIM;
  }
  if (f[0] == 0 || f[1] == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "filter %s has an empty window (KH and KW must be >= 1)",
                    wfx_shape_str(fs, a, sizeof a));
  if (x[3] >= 0 && f[2] >= 0 && x[3] != f[2])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input %s has %" PRId64 " channels but filter %s "
                    "expects C_in = %" PRId64,
                    wfx_shape_str(xs, a, sizeof a), x[3],
                    wfx_shape_str(fs, b, sizeof b), f[2]);
  if (nn_window_dim(w, 0, x[1], f[0], &oh, &pt, st) ||
      nn_window_dim(w, 1, x[2], f[1], &ow, &pl, st))
    return wfx_code(st);
  wfx_shape_set_scalar(out);
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
    wfx_shape_strides(xs, xst);
    wfx_shape_strides(out, yst);
    for (int i = 0; i < 4; i++) {
      g->xs[i] = xst[ix[i]];
      g->ys[i] = yst[ix[i]];
    }
  }
  return 0;
}

int nn_conv2d_out_shape(const wf_shape *xs, const wf_shape *fs,
                        const nn_window *w, wf_shape *out, wf_status *st) {
  return conv_dims(xs, fs, w, out, NULL, st);
}

static int conv2d_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  nn_window w;
  wf_shape xs, fs, out;

  if (nn_window_parse(&a, NULL, 1, 1, &w, st) ||
      wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      wfx_shape_input(ctx, 1, NULL, &fs, st) ||
      conv_dims(&xs, &fs, &w, &out, NULL, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
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
WFX_TYPES_FLOAT(DEF_CONV, _)

static int conv2d_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x, *f;
  wf_tensor *y;
  nn_window w;
  conv_geom g;
  wf_shape xs, fs, out;
  double *acc;

  if (nn_window_parse(&a, NULL, 1, 1, &w, st) ||
      wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &f, &fs, st) ||
      conv_dims(&xs, &fs, &w, &out, &g, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  if (!(acc = wfx_host->alloc((size_t)g.co * sizeof *acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " accumulators", g.co);
  if (wfx_dtype(x) == WF_FLOAT32)
    conv_f32(wfx_data(y), wfx_data(x), wfx_data(f), &g, acc);
  else
    conv_f64(wfx_data(y), wfx_data(x), wfx_data(f), &g, acc);
  wfx_host->free(acc);
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
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
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
    WFX_CPU_REFERENCE("Conv2D", "T", WFX_DTYPES_FLOAT, conv2d_compute);

/* ---- the backward ops ---------------------------------------------------- */

/* Window sums of the adjoint convolutions, in double into acc (zeroed here):
 *   input:  acc[x of (n, ih, iw, ci)] += dy[n, oh, ow, co] * f[kh, kw, ci, co]
 *   filter: acc[kh, kw, ci, co]       += x[n, ih, iw, ci] * dy[n, oh, ow, co]
 * over every tap (kh, kw) whose input position lies inside the input. */
#define DEF_CONV_BACKPROP(T, sfx, dt, u)                                       \
  static void conv_bp_input_##sfx(T *dx, const T *f, const T *dy,              \
                                  const conv_geom *g, double *acc) {           \
    const nn_window *w = g->win;                                               \
    int64_t nx = g->n * g->h * g->w * g->c;                                    \
    memset(acc, 0, (size_t)nx * sizeof *acc);                                  \
    for (int64_t n = 0; n < g->n; n++)                                         \
      for (int64_t oh = 0; oh < g->oh; oh++)                                   \
        for (int64_t ow = 0; ow < g->ow; ow++) {                               \
          const T *dyp = dy + n * g->ys[0] + oh * g->ys[1] + ow * g->ys[2];    \
          for (int64_t kh = 0; kh < g->kh; kh++) {                             \
            int64_t ih = oh * w->stride[0] - g->pad_top + kh * w->dilation[0]; \
            if (ih < 0 || ih >= g->h)                                          \
              continue;                                                        \
            for (int64_t kw = 0; kw < g->kw; kw++) {                           \
              int64_t iw =                                                     \
                  ow * w->stride[1] - g->pad_left + kw * w->dilation[1];       \
              double *ap;                                                      \
              const T *fp;                                                     \
              if (iw < 0 || iw >= g->w)                                        \
                continue;                                                      \
              ap = acc + n * g->xs[0] + ih * g->xs[1] + iw * g->xs[2];         \
              fp = f + (kh * g->kw + kw) * g->c * g->co;                       \
              for (int64_t ci = 0; ci < g->c; ci++) {                          \
                const T *fr = fp + ci * g->co;                                 \
                double sum = 0;                                                \
                for (int64_t co = 0; co < g->co; co++)                         \
                  sum += (double)dyp[co * g->ys[3]] * fr[co];                  \
                ap[ci * g->xs[3]] += sum;                                      \
              }                                                                \
            }                                                                  \
          }                                                                    \
        }                                                                      \
    for (int64_t i = 0; i < nx; i++)                                           \
      dx[i] = (T)acc[i];                                                       \
  }                                                                            \
  static void conv_bp_filter_##sfx(T *df, const T *x, const T *dy,             \
                                   const conv_geom *g, double *acc) {          \
    const nn_window *w = g->win;                                               \
    int64_t nf = g->kh * g->kw * g->c * g->co;                                 \
    memset(acc, 0, (size_t)nf * sizeof *acc);                                  \
    for (int64_t n = 0; n < g->n; n++)                                         \
      for (int64_t oh = 0; oh < g->oh; oh++)                                   \
        for (int64_t ow = 0; ow < g->ow; ow++) {                               \
          const T *dyp = dy + n * g->ys[0] + oh * g->ys[1] + ow * g->ys[2];    \
          for (int64_t kh = 0; kh < g->kh; kh++) {                             \
            int64_t ih = oh * w->stride[0] - g->pad_top + kh * w->dilation[0]; \
            if (ih < 0 || ih >= g->h)                                          \
              continue;                                                        \
            for (int64_t kw = 0; kw < g->kw; kw++) {                           \
              int64_t iw =                                                     \
                  ow * w->stride[1] - g->pad_left + kw * w->dilation[1];       \
              const T *xp;                                                     \
              double *ap;                                                      \
              if (iw < 0 || iw >= g->w)                                        \
                continue;                                                      \
              xp = x + n * g->xs[0] + ih * g->xs[1] + iw * g->xs[2];           \
              ap = acc + (kh * g->kw + kw) * g->c * g->co;                     \
              for (int64_t ci = 0; ci < g->c; ci++) {                          \
                double xv = xp[ci * g->xs[3]];                                 \
                double *ar = ap + ci * g->co;                                  \
                for (int64_t co = 0; co < g->co; co++)                         \
                  ar[co] += xv * dyp[co * g->ys[3]];                           \
              }                                                                \
            }                                                                  \
          }                                                                    \
        }                                                                      \
    for (int64_t i = 0; i < nf; i++)                                           \
      df[i] = (T)acc[i];                                                       \
  }
WFX_TYPES_FLOAT(DEF_CONV_BACKPROP, _)

/* 1 when a and b have the same rank and dims. */
static int same_dims(const wf_shape *a, const wf_shape *b) {
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return 0;
  return 1;
}

/* Checks that dy has the shape the convolution of xs by fs gives (want;
 * either may have unknown dims). */
static int check_dy(const wf_shape *want, const wf_shape *dy, wf_status *st) {
  wf_shape merged;

  if (dy->rank < 0 || want->rank < 0)
    return 0;
  return wfx_shape_merge(want, dy, &merged,
                         "out_backprop against the convolution's output", st);
}

static int conv_bp_input_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  nn_window w;
  wf_shape xs, fs, dy, out;
  int ix[4];

  if (nn_window_parse(&a, NULL, 1, 1, &w, st) ||
      wfx_shape_input(ctx, 1, NULL, &fs, st) ||
      wfx_shape_input(ctx, 2, NULL, &dy, st) ||
      nn_shape_input_value(ctx, 0, "input_sizes", 4, &xs, st))
    return wfx_code(st);
  nn_nhwc_index(w.nchw, ix);
  /* What input_sizes leaves open, the batch of dy and the filter's C_in
   * say. */
  if (xs.rank == 4 && xs.dims[ix[0]] < 0 && dy.rank == 4)
    xs.dims[ix[0]] = dy.dims[ix[0]];
  if (xs.rank == 4 && xs.dims[ix[3]] < 0 && fs.rank == 4)
    xs.dims[ix[3]] = fs.dims[2];
  if (conv_dims(&xs, &fs, &w, &out, NULL, st) || check_dy(&out, &dy, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &xs);
  return 0;
}

static int conv_bp_filter_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  nn_window w;
  wf_shape xs, fs, dy, out;
  int ix[4];

  if (nn_window_parse(&a, NULL, 1, 1, &w, st) ||
      wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      wfx_shape_input(ctx, 2, NULL, &dy, st) ||
      nn_shape_input_value(ctx, 1, "filter_sizes", 4, &fs, st))
    return wfx_code(st);
  nn_nhwc_index(w.nchw, ix);
  if (fs.rank == 4 && fs.dims[2] < 0 && xs.rank == 4)
    fs.dims[2] = xs.dims[ix[3]];
  if (fs.rank == 4 && fs.dims[3] < 0 && dy.rank == 4)
    fs.dims[3] = dy.dims[ix[3]];
  if (conv_dims(&xs, &fs, &w, &out, NULL, st) || check_dy(&out, &dy, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &fs);
  return 0;
}

/* Reads the attributes and the three inputs of a backward op, whose input
 * `sizes_at` (0 or 1) is a shape vector named sizes_name: *xs and *fs get
 * the input and filter shapes (one of them from the vector), *g the
 * geometry; dy must have the convolution's output shape. */
static int conv_bp_begin(wf_kernel_ctx *ctx, int sizes_at,
                         const char *sizes_name, nn_window *w,
                         const wf_tensor **in, wf_shape *xs, wf_shape *fs,
                         conv_geom *g, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  wf_shape dys, out;
  char s1[WFX_SHAPE_STR_MAX], s2[WFX_SHAPE_STR_MAX];

  if (nn_window_parse(&a, NULL, 1, 1, w, st) ||
      wfx_kernel_input(ctx, 0, &in[0], xs, st) ||
      wfx_kernel_input(ctx, 1, &in[1], fs, st) ||
      wfx_kernel_input(ctx, 2, &in[2], &dys, st) ||
      nn_read_shape(in[sizes_at], sizes_name, sizes_at == 0 ? xs : fs, st))
    return wfx_code(st);
  if (conv_dims(xs, fs, w, &out, g, st))
    return wfx_code(st);
  if (!same_dims(&out, &dys))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "out_backprop has shape %s but the convolution's "
                    "output has %s",
                    wfx_shape_str(&dys, s1, sizeof s1),
                    wfx_shape_str(&out, s2, sizeof s2));
  return 0;
}

static int conv_bp_input_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  const wf_tensor *in[3];
  wf_tensor *dx;
  nn_window w;
  conv_geom g;
  wf_shape xs, fs;
  double *acc;
  int64_t n;

  if (conv_bp_begin(ctx, 0, "input_sizes", &w, in, &xs, &fs, &g, st))
    return wfx_code(st);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if ((n = wfx_count(dx)) == 0)
    return 0;
  if (!(acc = wfx_host->alloc((size_t)n * sizeof *acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " accumulators", n);
  if (wfx_dtype(dx) == WF_FLOAT32)
    conv_bp_input_f32(wfx_data(dx), wfx_data(in[1]), wfx_data(in[2]), &g, acc);
  else
    conv_bp_input_f64(wfx_data(dx), wfx_data(in[1]), wfx_data(in[2]), &g, acc);
  wfx_host->free(acc);
  return 0;
}

static int conv_bp_filter_compute(wf_kernel_ctx *ctx, void *state,
                                  wf_status *st) {
  const wf_tensor *in[3];
  wf_tensor *df;
  nn_window w;
  conv_geom g;
  wf_shape xs, fs;
  double *acc;
  int64_t n;

  if (conv_bp_begin(ctx, 1, "filter_sizes", &w, in, &xs, &fs, &g, st))
    return wfx_code(st);
  if (!(df = wfx_host->kernel_output_new(ctx, 0, &fs, st)))
    return wfx_code(st);
  if ((n = wfx_count(df)) == 0)
    return 0;
  if (!(acc = wfx_host->alloc((size_t)n * sizeof *acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " accumulators", n);
  if (wfx_dtype(df) == WF_FLOAT32)
    conv_bp_filter_f32(wfx_data(df), wfx_data(in[0]), wfx_data(in[2]), &g, acc);
  else
    conv_bp_filter_f64(wfx_data(df), wfx_data(in[0]), wfx_data(in[2]), &g, acc);
  wfx_host->free(acc);
  return 0;
}

static const wf_arg_def conv_bp_input_inputs[] = {
    WF_ARG_T("input_sizes", "Tsizes",
             "(4,) the shape of Conv2D's input, in data_format order"),
    WF_ARG_T("filter", "T", "(KH, KW, C, C_out)"),
    WF_ARG_T("out_backprop", "T",
             "the gradient of Conv2D's output: (N, OH, OW, C_out) or (N, "
             "C_out, OH, OW)"),
    WF_ARG_END};
static const wf_arg_def conv_bp_input_outputs[] = {
    WF_ARG_T("output", "T", "(input_sizes): the gradient of the input"),
    WF_ARG_END};
static const wf_arg_def conv_bp_filter_inputs[] = {
    WF_ARG_T("input", "T", "(N, H, W, C) or (N, C, H, W) by data_format"),
    WF_ARG_T("filter_sizes", "Tsizes", "(4,) the filter's shape"),
    WF_ARG_T("out_backprop", "T",
             "the gradient of Conv2D's output: (N, OH, OW, C_out) or (N, "
             "C_out, OH, OW)"),
    WF_ARG_END};
static const wf_arg_def conv_bp_filter_outputs[] = {
    WF_ARG_T("output", "T", "(KH, KW, C, C_out): the gradient of the filter"),
    WF_ARG_END};
#define CONV_BP_ATTRS                                                          \
  {                                                                            \
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),                 \
        NN_ATTR_TYPE_DEFAULT("Tsizes",                                         \
                             WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),  \
                             WF_INT32,                                         \
                             "int32 or int64: the type of the "                \
                             "sizes"),                                         \
        NN_ATTR_INTS_REQUIRED("strides", 4, "Conv2D's strides"),               \
        NN_ATTR_STRING_REQUIRED("padding", "Conv2D's padding"),                \
        {WF_STRUCT_INIT(wf_attr_def),                                          \
         .name = "explicit_paddings",                                          \
         .type = WF_ATTR_LIST | WF_ATTR_INT,                                   \
         .has_default = 1,                                                     \
         .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},    \
         .doc = "Conv2D's explicit_paddings"},                                 \
        NN_ATTR_INTS("dilations", ones4, 4, "Conv2D's dilations"),             \
        NN_ATTR_DATA_FORMAT, WF_ATTR_END                                       \
  }
static const wf_attr_def conv_bp_input_attrs[] = CONV_BP_ATTRS;
static const wf_attr_def conv_bp_filter_attrs[] = CONV_BP_ATTRS;

const wf_op_def nn_conv2d_backprop_input_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Conv2DBackpropInput",
    .inputs = conv_bp_input_inputs,
    .outputs = conv_bp_input_outputs,
    .attrs = conv_bp_input_attrs,
    .shape_fn = conv_bp_input_shape,
    .doc = "The gradient of Conv2D with respect to its input: input[n, ih, "
           "iw, c] = sum of out_backprop[n, oh, ow, co] * filter[kh, kw, c, "
           "co] over the taps (oh, ow, kh, kw) that read (ih, iw) (Conv2D's "
           "adjoint). Attributes are Conv2D's; out_backprop must have "
           "Conv2D's output shape for an input of input_sizes."};

const wf_kernel_def nn_conv2d_backprop_input_kernel = WFX_CPU_REFERENCE(
    "Conv2DBackpropInput", "T", WFX_DTYPES_FLOAT, conv_bp_input_compute);

const wf_op_def nn_conv2d_backprop_filter_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Conv2DBackpropFilter",
    .inputs = conv_bp_filter_inputs,
    .outputs = conv_bp_filter_outputs,
    .attrs = conv_bp_filter_attrs,
    .shape_fn = conv_bp_filter_shape,
    .doc = "The gradient of Conv2D with respect to its filter: filter[kh, "
           "kw, c, co] = sum over n, oh, ow of input[n, oh*SH + kh*DH - PT, "
           "ow*SW + kw*DW - PL, c] * out_backprop[n, oh, ow, co], taps "
           "outside the input contributing nothing. Attributes are "
           "Conv2D's."};

const wf_kernel_def nn_conv2d_backprop_filter_kernel = WFX_CPU_REFERENCE(
    "Conv2DBackpropFilter", "T", WFX_DTYPES_FLOAT, conv_bp_filter_compute);
