/* plugins/ops/nn/pool.c — MaxPool and AvgPool over the (H, W) dimensions of
 * 4-D tensors (NHWC or NCHW; SAME, VALID or EXPLICIT padding) and their backward ops
 * MaxPoolGrad and AvgPoolGrad: op definitions, shape inference and
 * reference CPU kernels. Padding never contributes a value: MaxPool takes
 * the maximum of the window's elements inside the input, AvgPool divides by
 * their count (as TensorFlow). No pooling across the batch or channel
 * dimensions. The gradient functions are in grad.c. */
#include <config.h>

#include "nn.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

typedef struct pool_geom {
  int64_t n, h, w, c, oh, ow, pad_top, pad_left;
  const nn_window *win;
  int64_t xs[4], ys[4]; /* element strides of N, H, W, C in x and y */
} pool_geom;

static int pool_dims(const wf_shape *xs, const nn_window *w, wf_shape *out,
                     pool_geom *g, wf_status *st) {
  int ix[4];
  int64_t x[4], oh, ow, pt, pl;
  char a[WFX_SHAPE_STR_MAX];

  if (xs->rank >= 0 && xs->rank != 4)
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "input must have rank 4 (%s), got shape %s",
        w->nchw ? "N, C, H, W" : "N, H, W, C", wfx_shape_str(xs, a, sizeof a));
  if (w->padding == NN_PAD_EXPLICIT)
    for (int d = 0; d < 2; d++)
      for (int e = 0; e < 2; e++)
        if (w->explicit_pad[2 * d + e] >= w->ksize[d])
          return wfx_fail(st, WF_INVALID_ARGUMENT,
                          "explicit padding %s %s %" PRId64
                          " is not less than the window's %" PRId64
                          ": a window would hold only padding",
                          e ? "after" : "before", d ? "W" : "H",
                          w->explicit_pad[2 * d + e], w->ksize[d]);
  nn_nhwc_index(w->nchw, ix);
  for (int i = 0; i < 4; i++)
    x[i] = xs->rank == 4 ? xs->dims[ix[i]] : WF_UNKNOWN_DIM;
  if (nn_window_dim(w, 0, x[1], w->ksize[0], &oh, &pt, st) ||
      nn_window_dim(w, 1, x[2], w->ksize[1], &ow, &pl, st))
    return wfx_code(st);
  wfx_shape_set_scalar(out);
  out->rank = 4;
  out->dims[ix[0]] = x[0];
  out->dims[ix[1]] = oh;
  out->dims[ix[2]] = ow;
  out->dims[ix[3]] = x[3];
  if (g) {
    int64_t xst[4], yst[4];

    memset(g, 0, sizeof *g);
    g->n = x[0], g->h = x[1], g->w = x[2], g->c = x[3];
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

static int pool_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  nn_window w;
  wf_shape xs, out;

  if (nn_window_parse(&a, "ksize", 0, 1, &w, st) ||
      wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      pool_dims(&xs, &w, &out, NULL, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* The window of output (oh, ow) clipped to the input: rows [*h0, *h1),
 * columns [*w0, *w1). */
static void pool_window(const pool_geom *g, int64_t oh, int64_t ow, int64_t *h0,
                        int64_t *h1, int64_t *w0, int64_t *w1) {
  const nn_window *w = g->win;
  int64_t hs = oh * w->stride[0] - g->pad_top;
  int64_t ws = ow * w->stride[1] - g->pad_left;

  *h0 = hs < 0 ? 0 : hs;
  *h1 = hs + w->ksize[0] < g->h ? hs + w->ksize[0] : g->h;
  *w0 = ws < 0 ? 0 : ws;
  *w1 = ws + w->ksize[1] < g->w ? ws + w->ksize[1] : g->w;
}

static int is_nan(double v) { return v != v; }

/* u: 1 for float types, whose NaNs propagate (once m is NaN no comparison
 * replaces it). A window always holds at least one input element (SAME
 * pads less than a window, VALID not at all). */
#define DEF_MAX_POOL(T, sfx, dt, u)                                            \
  static void max_pool_##sfx(void *yv, const void *xv, const pool_geom *g) {   \
    T *y = yv;                                                                 \
    const T *x = xv;                                                           \
    for (int64_t n = 0; n < g->n; n++)                                         \
      for (int64_t oh = 0; oh < g->oh; oh++)                                   \
        for (int64_t ow = 0; ow < g->ow; ow++) {                               \
          int64_t h0, h1, w0, w1;                                              \
          pool_window(g, oh, ow, &h0, &h1, &w0, &w1);                          \
          for (int64_t c = 0; c < g->c; c++) {                                 \
            const T *xp = x + n * g->xs[0] + c * g->xs[3];                     \
            T m = 0;                                                           \
            int first = 1;                                                     \
            for (int64_t ih = h0; ih < h1; ih++)                               \
              for (int64_t iw = w0; iw < w1; iw++) {                           \
                T v = xp[ih * g->xs[1] + iw * g->xs[2]];                       \
                if (first || v > m || (u && is_nan((double)v)))                \
                  m = v;                                                       \
                first = 0;                                                     \
              }                                                                \
            y[n * g->ys[0] + oh * g->ys[1] + ow * g->ys[2] + c * g->ys[3]] =   \
                m;                                                             \
          }                                                                    \
        }                                                                      \
  }
WFX_TYPES_FLOAT(DEF_MAX_POOL, 1)
WFX_TYPES_INT(DEF_MAX_POOL, 0)

#define DEF_AVG_POOL(T, sfx, dt, u)                                            \
  static void avg_pool_##sfx(void *yv, const void *xv, const pool_geom *g) {   \
    T *y = yv;                                                                 \
    const T *x = xv;                                                           \
    for (int64_t n = 0; n < g->n; n++)                                         \
      for (int64_t oh = 0; oh < g->oh; oh++)                                   \
        for (int64_t ow = 0; ow < g->ow; ow++) {                               \
          int64_t h0, h1, w0, w1, count;                                       \
          pool_window(g, oh, ow, &h0, &h1, &w0, &w1);                          \
          count = (h1 - h0) * (w1 - w0);                                       \
          for (int64_t c = 0; c < g->c; c++) {                                 \
            const T *xp = x + n * g->xs[0] + c * g->xs[3];                     \
            double s = 0;                                                      \
            for (int64_t ih = h0; ih < h1; ih++)                               \
              for (int64_t iw = w0; iw < w1; iw++)                             \
                s += xp[ih * g->xs[1] + iw * g->xs[2]];                        \
            y[n * g->ys[0] + oh * g->ys[1] + ow * g->ys[2] + c * g->ys[3]] =   \
                (T)(count > 0 ? s / (double)count : 0);                        \
          }                                                                    \
        }                                                                      \
  }
WFX_TYPES_FLOAT(DEF_AVG_POOL, _)

typedef void pool_fn(void *y, const void *x, const pool_geom *g);

static pool_fn *const max_pool_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, max_pool)};
static pool_fn *const avg_pool_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, avg_pool)};

static int pool_compute(wf_kernel_ctx *ctx, pool_fn *const *table,
                        wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x;
  wf_tensor *y;
  nn_window w;
  pool_geom g;
  wf_shape xs, out;
  pool_fn *fn;

  if (nn_window_parse(&a, "ksize", 0, 1, &w, st) ||
      wfx_kernel_input(ctx, 0, &x, &xs, st) || pool_dims(&xs, &w, &out, &g, st))
    return wfx_code(st);
  fn = table[wfx_dtype(x)];
  if (!fn)
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  fn(wfx_data(y), wfx_data(x), &g);
  return 0;
}

static int max_pool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return pool_compute(ctx, max_pool_table, st);
}

int nn_pool_out_shape(const wf_shape *xs, const nn_window *w, wf_shape *out,
                      wf_status *st) {
  return pool_dims(xs, w, out, NULL, st);
}

int nn_max_pool_values(int32_t dtype, void *y, const void *x,
                       const wf_shape *xs, const nn_window *w, wf_status *st) {
  pool_geom g;
  wf_shape out;

  if (dtype < 0 || dtype >= WF_DTYPE_COUNT || !max_pool_table[dtype])
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference max pooling for %s",
                    wfx_dtype_name(dtype));
  if (pool_dims(xs, w, &out, &g, st))
    return wfx_code(st);
  max_pool_table[dtype](y, x, &g);
  return 0;
}

static int avg_pool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return pool_compute(ctx, avg_pool_table, st);
}

static const wf_arg_def pool_inputs[] = {
    WF_ARG_T("input", "T", "(N, H, W, C) or (N, C, H, W) by data_format"),
    WF_ARG_END};
static const wf_arg_def pool_outputs[] = {
    WF_ARG_T("output", "T", "(N, OH, OW, C) or (N, C, OH, OW)"), WF_ARG_END};
/* EXPLICIT padding's amounts; each less than the window along its
 * dimension, so that every window holds an input element. */
#define POOL_ATTR_EXPLICIT_PADDINGS                                            \
  {WF_STRUCT_INIT(wf_attr_def), .name = "explicit_paddings",                   \
   .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,                       \
   .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},          \
   .doc = "EXPLICIT only: 8 entries, (before, after) per dimension in "        \
          "data_format order; 0 for N and C, less than the window in H and "  \
          "W"}
#define POOL_ATTRS(types, tdoc)                                                \
  {                                                                            \
    NN_ATTR_TYPE("T", types, tdoc),                                            \
        NN_ATTR_INTS_REQUIRED("ksize", 4,                                      \
                              "window, 4 entries in data_format order; 1 "     \
                              "for N and C"),                                  \
        NN_ATTR_INTS_REQUIRED("strides", 4,                                    \
                              "4 entries in data_format order; 1 for N and "   \
                              "C"),                                            \
        NN_ATTR_STRING_REQUIRED("padding",                                    \
                                "\"SAME\", \"VALID\" or \"EXPLICIT\""),        \
        POOL_ATTR_EXPLICIT_PADDINGS, NN_ATTR_DATA_FORMAT, WF_ATTR_END          \
  }
static const wf_attr_def max_pool_attrs[] =
    POOL_ATTRS(WFX_DTYPES_NUMBER, "a float or integer type");
static const wf_attr_def avg_pool_attrs[] =
    POOL_ATTRS(WFX_DTYPES_FLOAT, "float32 or float64");

const wf_op_def nn_max_pool_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "MaxPool",
    .inputs = pool_inputs,
    .outputs = pool_outputs,
    .attrs = max_pool_attrs,
    .shape_fn = pool_shape,
    .doc = "Maximum over KH x KW windows moved by (SH, SW): (N, H, W, C) -> "
           "(N, OH, OW, C); SAME: OH = ceil(H / SH), VALID: OH = (H - KH) / "
           "SH + 1, EXPLICIT: OH = (H + PT + PB - KH) / SH + 1 with the given "
           "paddings. Padded positions are ignored; NaN propagates."};

const wf_kernel_def nn_max_pool_kernel =
    WFX_CPU_REFERENCE("MaxPool", "T", WFX_DTYPES_NUMBER, max_pool_compute);

const wf_op_def nn_avg_pool_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "AvgPool",
    .inputs = pool_inputs,
    .outputs = pool_outputs,
    .attrs = avg_pool_attrs,
    .shape_fn = pool_shape,
    .doc = "Mean over KH x KW windows moved by (SH, SW): (N, H, W, C) -> (N, "
           "OH, OW, C), sizes as MaxPool. With SAME or EXPLICIT padding the mean "
           "is over the window's elements inside the input only (as "
           "TensorFlow's SAME and ONNX's count_include_pad = 0)."};

const wf_kernel_def nn_avg_pool_kernel =
    WFX_CPU_REFERENCE("AvgPool", "T", WFX_DTYPES_FLOAT, avg_pool_compute);

/* ---- the backward ops ---------------------------------------------------- */

/* MaxPoolGrad: each window's gradient goes to the element MaxPool picked,
 * found by the forward scan (row-major over the clipped window; a later
 * element replaces the pick only when strictly greater, or NaN): the first
 * of tied maxima, the last NaN. Windows overlap, so dx accumulates (in
 * double, acc: x's count, zeroed by the caller). */
#define DEF_MAX_POOL_GRAD(T, sfx, dt, u)                                       \
  static void max_pool_grad_##sfx(void *dxv, const void *xv, const void *gv,   \
                                  const pool_geom *g, double *acc) {           \
    T *dx = dxv;                                                               \
    const T *x = xv, *gr = gv;                                                 \
    int64_t nx = g->n * g->h * g->w * g->c;                                    \
    for (int64_t n = 0; n < g->n; n++)                                         \
      for (int64_t oh = 0; oh < g->oh; oh++)                                   \
        for (int64_t ow = 0; ow < g->ow; ow++) {                               \
          int64_t h0, h1, w0, w1;                                              \
          pool_window(g, oh, ow, &h0, &h1, &w0, &w1);                          \
          for (int64_t c = 0; c < g->c; c++) {                                 \
            int64_t base = n * g->xs[0] + c * g->xs[3], best = -1;             \
            T m = 0;                                                           \
            for (int64_t ih = h0; ih < h1; ih++)                               \
              for (int64_t iw = w0; iw < w1; iw++) {                           \
                int64_t at = base + ih * g->xs[1] + iw * g->xs[2];             \
                T v = x[at];                                                   \
                if (best < 0 || v > m || is_nan((double)v)) {                  \
                  m = v;                                                       \
                  best = at;                                                   \
                }                                                              \
              }                                                                \
            if (best >= 0)                                                     \
              acc[best] += gr[n * g->ys[0] + oh * g->ys[1] + ow * g->ys[2] +   \
                              c * g->ys[3]];                                   \
          }                                                                    \
        }                                                                      \
    for (int64_t i = 0; i < nx; i++)                                           \
      dx[i] = (T)acc[i];                                                       \
  }
WFX_TYPES_FLOAT(DEF_MAX_POOL_GRAD, _)

/* AvgPoolGrad: each window's gradient is shared equally by the window's
 * elements inside the input (the count AvgPool divided by). */
#define DEF_AVG_POOL_GRAD(T, sfx, dt, u)                                       \
  static void avg_pool_grad_##sfx(void *dxv, const void *gv,                   \
                                  const pool_geom *g, double *acc) {           \
    T *dx = dxv;                                                               \
    const T *gr = gv;                                                          \
    int64_t nx = g->n * g->h * g->w * g->c;                                    \
    for (int64_t n = 0; n < g->n; n++)                                         \
      for (int64_t oh = 0; oh < g->oh; oh++)                                   \
        for (int64_t ow = 0; ow < g->ow; ow++) {                               \
          int64_t h0, h1, w0, w1, count;                                       \
          pool_window(g, oh, ow, &h0, &h1, &w0, &w1);                          \
          count = (h1 - h0) * (w1 - w0);                                       \
          if (count <= 0)                                                      \
            continue;                                                          \
          for (int64_t c = 0; c < g->c; c++) {                                 \
            double share = gr[n * g->ys[0] + oh * g->ys[1] + ow * g->ys[2] +   \
                              c * g->ys[3]] /                                  \
                           (double)count;                                      \
            double *ap = acc + n * g->xs[0] + c * g->xs[3];                    \
            for (int64_t ih = h0; ih < h1; ih++)                               \
              for (int64_t iw = w0; iw < w1; iw++)                             \
                ap[ih * g->xs[1] + iw * g->xs[2]] += share;                    \
          }                                                                    \
        }                                                                      \
    for (int64_t i = 0; i < nx; i++)                                           \
      dx[i] = (T)acc[i];                                                       \
  }
WFX_TYPES_FLOAT(DEF_AVG_POOL_GRAD, _)

/* Shape of a backward op: x (rank 4 or unknown) is the output; grad must
 * have the pool's output shape. */
static int pool_grad_check(const wf_shape *xs, const nn_window *w,
                           const wf_shape *gs, wf_status *st) {
  wf_shape out, merged;

  if (pool_dims(xs, w, &out, NULL, st))
    return wfx_code(st);
  if (gs->rank < 0)
    return 0;
  return wfx_shape_merge(&out, gs, &merged, "grad against the pool's output",
                         st);
}

static int max_pool_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  nn_window w;
  wf_shape xs, gs;

  if (nn_window_parse(&a, "ksize", 0, 1, &w, st) ||
      wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      wfx_shape_input(ctx, 1, NULL, &gs, st) ||
      pool_grad_check(&xs, &w, &gs, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &xs);
  return 0;
}

static int avg_pool_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  nn_window w;
  wf_shape xs, gs;
  int ix[4];

  if (nn_window_parse(&a, "ksize", 0, 1, &w, st) ||
      wfx_shape_input(ctx, 1, NULL, &gs, st) ||
      nn_shape_input_value(ctx, 0, "orig_input_shape", 4, &xs, st))
    return wfx_code(st);
  /* The batch and channels are grad's when the vector is not known. */
  nn_nhwc_index(w.nchw, ix);
  if (xs.rank == 4 && gs.rank == 4) {
    if (xs.dims[ix[0]] < 0)
      xs.dims[ix[0]] = gs.dims[ix[0]];
    if (xs.dims[ix[3]] < 0)
      xs.dims[ix[3]] = gs.dims[ix[3]];
  }
  if (pool_grad_check(&xs, &w, &gs, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &xs);
  return 0;
}

/* Reads the window and grad, checks grad against the pool of xs, and
 * allocates dx (xs) and its accumulators. *acc stays NULL when dx is
 * empty. */
static int pool_grad_begin(wf_kernel_ctx *ctx, const wf_shape *xs,
                           const wf_tensor *grad, nn_window *w, pool_geom *g,
                           wf_tensor **dx, double **acc, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  wf_shape gs, out;
  int64_t n;
  char s1[WFX_SHAPE_STR_MAX], s2[WFX_SHAPE_STR_MAX];

  *acc = NULL;
  if (nn_window_parse(&a, "ksize", 0, 1, w, st) ||
      pool_dims(xs, w, &out, g, st))
    return wfx_code(st);
  wfx_host->tensor_shape(grad, &gs);
  if (gs.rank != out.rank || wfx_shape_count(&gs) != wfx_shape_count(&out) ||
      memcmp(gs.dims, out.dims, (size_t)out.rank * sizeof out.dims[0]) != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "grad has shape %s but the pool's output has %s",
                    wfx_shape_str(&gs, s1, sizeof s1),
                    wfx_shape_str(&out, s2, sizeof s2));
  if (!(*dx = wfx_host->kernel_output_new(ctx, 0, xs, st)))
    return wfx_code(st);
  if ((n = wfx_count(*dx)) == 0)
    return 0;
  if (!(*acc = wfx_host->alloc((size_t)n * sizeof **acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld accumulators", (long long)n);
  memset(*acc, 0, (size_t)n * sizeof **acc);
  return 0;
}

/* MaxPoolGrad; relu: then ReluGrad against orig_input (a ReLU's output):
 * dx where orig_input > 0, else 0, as the two reference kernels give one
 * after the other (_FusedMaxPoolGradReluGrad). */
static int max_pool_grad_run(wf_kernel_ctx *ctx, int relu, wf_status *st) {
  const wf_tensor *x, *grad;
  wf_tensor *dx;
  nn_window w;
  pool_geom g;
  wf_shape xs;
  double *acc;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &grad, NULL, st) ||
      pool_grad_begin(ctx, &xs, grad, &w, &g, &dx, &acc, st))
    return wfx_code(st);
  if (!acc)
    return 0;
  int64_t n = wfx_count(dx);
  if (wfx_dtype(x) == WF_FLOAT32) {
    max_pool_grad_f32(wfx_data(dx), wfx_data(x), wfx_data(grad), &g, acc);
    const float *xv = wfx_data(x);
    float *d = wfx_data(dx);
    for (int64_t i = 0; relu && i < n; i++)
      d[i] = xv[i] > 0 ? d[i] : 0.0f;
  } else {
    max_pool_grad_f64(wfx_data(dx), wfx_data(x), wfx_data(grad), &g, acc);
    const double *xv = wfx_data(x);
    double *d = wfx_data(dx);
    for (int64_t i = 0; relu && i < n; i++)
      d[i] = xv[i] > 0 ? d[i] : 0.0;
  }
  wfx_host->free(acc);
  return 0;
}

static int max_pool_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return max_pool_grad_run(ctx, 0, st);
}

static int max_pool_grad_relu_compute(wf_kernel_ctx *ctx, void *state,
                                      wf_status *st) {
  return max_pool_grad_run(ctx, 1, st);
}

static int avg_pool_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  const wf_tensor *sizes, *grad;
  wf_tensor *dx;
  nn_window w;
  pool_geom g;
  wf_shape xs;
  double *acc;

  if (wfx_kernel_input(ctx, 0, &sizes, NULL, st) ||
      wfx_kernel_input(ctx, 1, &grad, NULL, st) ||
      nn_read_shape(sizes, "orig_input_shape", &xs, st) ||
      pool_grad_begin(ctx, &xs, grad, &w, &g, &dx, &acc, st))
    return wfx_code(st);
  if (!acc)
    return 0;
  if (wfx_dtype(grad) == WF_FLOAT32)
    avg_pool_grad_f32(wfx_data(dx), wfx_data(grad), &g, acc);
  else
    avg_pool_grad_f64(wfx_data(dx), wfx_data(grad), &g, acc);
  wfx_host->free(acc);
  return 0;
}

static const wf_arg_def max_pool_grad_inputs[] = {
    WF_ARG_T("orig_input", "T", "MaxPool's input (N, H, W, C) or (N, C, H, W)"),
    WF_ARG_T("grad", "T", "the gradient of MaxPool's output"), WF_ARG_END};
static const wf_arg_def avg_pool_grad_inputs[] = {
    WF_ARG_T("orig_input_shape", "Tsizes",
             "(4,) the shape of AvgPool's input, in data_format order"),
    WF_ARG_T("grad", "T", "the gradient of AvgPool's output"), WF_ARG_END};
static const wf_arg_def pool_grad_outputs[] = {
    WF_ARG_T("output", "T", "the gradient of the pool's input, its shape"),
    WF_ARG_END};
static const wf_attr_def max_pool_grad_attrs[] =
    POOL_ATTRS(WFX_DTYPES_FLOAT, "float32 or float64");
static const wf_attr_def avg_pool_grad_attrs[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_TYPE_DEFAULT("Tsizes",
                         WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),
                         WF_INT32, "int32 or int64: the type of the shape"),
    NN_ATTR_INTS_REQUIRED("ksize", 4, "AvgPool's ksize"),
    NN_ATTR_INTS_REQUIRED("strides", 4, "AvgPool's strides"),
    NN_ATTR_STRING_REQUIRED("padding", "AvgPool's padding"),
    POOL_ATTR_EXPLICIT_PADDINGS,
    NN_ATTR_DATA_FORMAT,
    WF_ATTR_END};

const wf_op_def nn_max_pool_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "MaxPoolGrad",
    .inputs = max_pool_grad_inputs,
    .outputs = pool_grad_outputs,
    .attrs = max_pool_grad_attrs,
    .shape_fn = max_pool_grad_shape,
    .doc = "The gradient of MaxPool: each window's grad goes to the element "
           "MaxPool picked from orig_input (attributes are MaxPool's), and "
           "overlapping windows add up. Ties go to the first maximum in "
           "row-major order of the window; with NaNs, to the last NaN. Unlike "
           "TensorFlow's MaxPoolGrad it does "
           "not take MaxPool's output: the pick is recomputed."};

const wf_kernel_def nn_max_pool_grad_kernel = WFX_CPU_REFERENCE(
    "MaxPoolGrad", "T", WFX_DTYPES_FLOAT, max_pool_grad_compute);

const wf_op_def nn_fused_max_pool_grad_relu_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "_FusedMaxPoolGradReluGrad",
    .inputs = max_pool_grad_inputs,
    .outputs = pool_grad_outputs,
    .attrs = max_pool_grad_attrs,
    .shape_fn = max_pool_grad_shape,
    .doc = "ReluGrad(MaxPoolGrad(orig_input, grad), orig_input), where "
           "orig_input is a ReLU's output: the gradient MaxPoolGrad gives, "
           "where orig_input > 0, else 0. Made by the fusion pass from the "
           "two backward nodes of a ReLU followed by a MaxPool (attributes "
           "are MaxPoolGrad's); one pass over memory instead of two."};

const wf_kernel_def nn_fused_max_pool_grad_relu_kernel = WFX_CPU_REFERENCE(
    "_FusedMaxPoolGradReluGrad", "T", WFX_DTYPES_FLOAT,
    max_pool_grad_relu_compute);

const wf_op_def nn_avg_pool_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "AvgPoolGrad",
    .inputs = avg_pool_grad_inputs,
    .outputs = pool_grad_outputs,
    .attrs = avg_pool_grad_attrs,
    .shape_fn = avg_pool_grad_shape,
    .doc = "The gradient of AvgPool: each window's grad is divided equally "
           "among the window's elements inside the input (the count AvgPool "
           "divided by), overlapping windows adding up. Attributes are "
           "AvgPool's."};

const wf_kernel_def nn_avg_pool_grad_kernel = WFX_CPU_REFERENCE(
    "AvgPoolGrad", "T", WFX_DTYPES_FLOAT, avg_pool_grad_compute);
