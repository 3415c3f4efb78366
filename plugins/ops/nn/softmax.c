/* plugins/ops/nn/softmax.c — Softmax and LogSoftmax over the last axis, the
 * fused softmax cross-entropy losses (dense and sparse labels), and the
 * backward ops SoftmaxGrad and LogSoftmaxGrad. All subtract the row maximum
 * before exponentiating and accumulate in double. No other axis than the
 * last, no broadcasting of labels. Gradient functions are in grad.c. */
#include <config.h>

#include "nn.h"

#include "labels.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- Softmax, LogSoftmax
 * ------------------------------------------------------- */

static int softmax_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  if (s.rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "logits must have rank 1 or more, got shape %s",
                    wfx_shape_str(&s, buf, sizeof buf));
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

/* One row of c logits: *m = its maximum, *s = sum of exp(x - m). */
#define DEF_ROW_STATS(T, sfx, dt, u)                                           \
  static void row_stats_##sfx(const T *x, int64_t c, double *m, double *s) {   \
    double mx = -INFINITY, sum = 0;                                            \
    for (int64_t j = 0; j < c; j++)                                            \
      if (x[j] > mx)                                                           \
        mx = x[j];                                                             \
    for (int64_t j = 0; j < c; j++)                                            \
      sum += exp((double)x[j] - mx);                                           \
    *m = mx;                                                                   \
    *s = sum;                                                                  \
  }
WFX_TYPES_FLOAT(DEF_ROW_STATS, _)

/* want_log 0: softmax; 1: log-softmax; over rows of c. */
#define DEF_SOFTMAX(T, sfx, dt, u)                                             \
  static void softmax_##sfx(void *yv, const void *xv, int64_t rows, int64_t c, \
                            int want_log) {                                    \
    T *y = yv;                                                                 \
    const T *x = xv;                                                           \
    for (int64_t r = 0; r < rows; r++, x += c, y += c) {                       \
      double m, s, ls;                                                         \
      row_stats_##sfx(x, c, &m, &s);                                           \
      ls = log(s);                                                             \
      for (int64_t j = 0; j < c; j++)                                          \
        y[j] =                                                                 \
            (T)(want_log ? (double)x[j] - m - ls : exp((double)x[j] - m) / s); \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_SOFTMAX, _)

typedef void softmax_fn(void *y, const void *x, int64_t rows, int64_t c,
                        int want_log);
static softmax_fn *const softmax_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, softmax)};

static int softmax_run(wf_kernel_ctx *ctx, int want_log, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  int64_t c;
  softmax_fn *fn;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  if (!(fn = softmax_table[wfx_dtype(x)]))
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  if (s.rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "logits must have rank 1 or more, got shape %s",
                    wfx_shape_str(&s, buf, sizeof buf));
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &s, st)))
    return wfx_code(st);
  c = s.dims[s.rank - 1];
  if (c > 0)
    fn(wfx_data(y), wfx_data(x), wfx_count(x) / c, c, want_log);
  return 0;
}

static int softmax_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return softmax_run(ctx, 0, st);
}

static int log_softmax_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return softmax_run(ctx, 1, st);
}

static const wf_arg_def softmax_inputs[] = {
    WF_ARG_T("logits", "T", "(..., C), e.g. (N, C)"), WF_ARG_END};
static const wf_arg_def softmax_outputs[] = {
    WF_ARG_T("output", "T", "the shape of logits"), WF_ARG_END};
static const wf_attr_def float_attrs[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"), WF_ATTR_END};

const wf_op_def nn_softmax_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Softmax",
    .inputs = softmax_inputs,
    .outputs = softmax_outputs,
    .attrs = float_attrs,
    .shape_fn = softmax_shape,
    .doc = "exp(x - max) / sum(exp(x - max)) along the last axis: (N, C) -> "
           "(N, C), each row summing to 1."};

const wf_kernel_def nn_softmax_kernel =
    WFX_CPU_REFERENCE("Softmax", "T", WFX_DTYPES_FLOAT, softmax_compute);

const wf_op_def nn_log_softmax_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "LogSoftmax",
    .inputs = softmax_inputs,
    .outputs = softmax_outputs,
    .attrs = float_attrs,
    .shape_fn = softmax_shape,
    .doc = "x - max - log(sum(exp(x - max))) along the last axis: (N, C) -> "
           "(N, C); finite for very negative logits where log(Softmax) is "
           "not."};

const wf_kernel_def nn_log_softmax_kernel =
    WFX_CPU_REFERENCE("LogSoftmax", "T", WFX_DTYPES_FLOAT, log_softmax_compute);

/* ---- cross-entropy
 * ---------------------------------------------------------------- */

/* Checks features (N, C) and labels: (N, C) when sparse is 0, (N,) when 1.
 * *n and *c get what is known (-1 otherwise). */
static int xent_check(const wf_shape *fs, const wf_shape *ls, int sparse,
                      int64_t *n, int64_t *c, wf_status *st) {
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  int64_t ln, lc;

  if (fs->rank >= 0 && fs->rank != 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "features must have shape (N, C), got %s",
                    wfx_shape_str(fs, a, sizeof a));
  if (ls->rank >= 0 && ls->rank != (sparse ? 1 : 2))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "labels must have shape %s, got %s",
                    sparse ? "(N,)" : "(N, C)", wfx_shape_str(ls, a, sizeof a));
  *n = fs->rank == 2 ? fs->dims[0] : WF_UNKNOWN_DIM;
  *c = fs->rank == 2 ? fs->dims[1] : WF_UNKNOWN_DIM;
  ln = ls->rank >= 1 ? ls->dims[0] : WF_UNKNOWN_DIM;
  lc = !sparse && ls->rank == 2 ? ls->dims[1] : WF_UNKNOWN_DIM;
  if ((*n >= 0 && ln >= 0 && *n != ln) || (*c >= 0 && lc >= 0 && *c != lc))
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "labels %s do not match features %s",
        wfx_shape_str(ls, a, sizeof a), wfx_shape_str(fs, b, sizeof b));
  if (*n < 0)
    *n = ln;
  if (*c < 0)
    *c = lc;
  return 0;
}

static int xent_shape_common(wf_shape_ctx *ctx, int sparse, wf_status *st) {
  wf_shape fs, ls, loss, back;
  int64_t n, c;

  if (wfx_shape_input(ctx, 0, NULL, &fs, st) ||
      wfx_shape_input(ctx, 1, NULL, &ls, st) ||
      xent_check(&fs, &ls, sparse, &n, &c, st))
    return wfx_code(st);
  wfx_shape_make(&loss, 1, &n);
  wfx_shape_make(&back, 2, (int64_t[]){n, c});
  wfx_host->shape_set_output(ctx, 0, &loss);
  wfx_host->shape_set_output(ctx, 1, &back);
  return 0;
}

static int xent_shape(wf_shape_ctx *ctx, wf_status *st) {
  return xent_shape_common(ctx, 0, st);
}

static int sparse_xent_shape(wf_shape_ctx *ctx, wf_status *st) {
  return xent_shape_common(ctx, 1, st);
}

/* Dense labels: loss[i] = -sum_j labels[i, j] * log_softmax[i, j],
 * backprop = softmax - labels. Sparse (lab = class per row, checked to be
 * in range): the same with one-hot labels. */
#define DEF_XENT(T, sfx, dt, u)                                                \
  static void xent_##sfx(void *lossv, void *backv, const void *xv,             \
                         const void *labv, const int64_t *cls, int64_t n,      \
                         int64_t c) {                                          \
    T *loss = lossv, *back = backv;                                            \
    const T *x = xv, *lab = labv;                                              \
    for (int64_t i = 0; i < n; i++, x += c, back += c) {                       \
      double m, s, ls, l = 0;                                                  \
      row_stats_##sfx(x, c, &m, &s);                                           \
      ls = log(s);                                                             \
      for (int64_t j = 0; j < c; j++) {                                        \
        double y = cls ? (double)(j == cls[i]) : (double)lab[i * c + j];       \
        if (y != 0)                                                            \
          l -= y * ((double)x[j] - m - ls);                                    \
        back[j] = (T)(exp((double)x[j] - m) / s - y);                          \
      }                                                                        \
      loss[i] = (T)l;                                                          \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_XENT, _)

typedef void xent_fn(void *loss, void *back, const void *x, const void *lab,
                     const int64_t *cls, int64_t n, int64_t c);
static xent_fn *const xent_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, xent)};

static int xent_run(wf_kernel_ctx *ctx, int sparse, wf_status *st) {
  const wf_tensor *x, *lab;
  wf_tensor *loss, *back;
  wf_shape fs, ls, s;
  int64_t n, c, *cls = NULL;
  xent_fn *fn;

  if (wfx_kernel_input(ctx, 0, &x, &fs, st) ||
      wfx_kernel_input(ctx, 1, &lab, &ls, st) ||
      xent_check(&fs, &ls, sparse, &n, &c, st))
    return wfx_code(st);
  if (!(fn = xent_table[wfx_dtype(x)]))
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  if (sparse && nx_sparse_labels(lab, n, c, &cls, st))
    return wfx_code(st);
  wfx_shape_make(&s, 1, &n);
  if (!(loss = wfx_host->kernel_output_new(ctx, 0, &s, st)) ||
      !(back = wfx_host->kernel_output_new(ctx, 1, &fs, st)))
    goto fail;
  if (n > 0)
    fn(wfx_data(loss), wfx_data(back), wfx_data(x), wfx_data(lab), cls, n, c);
  wfx_host->free(cls);
  return 0;

fail:
  wfx_host->free(cls);
  return wfx_code(st);
}

static int xent_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return xent_run(ctx, 0, st);
}

static int sparse_xent_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return xent_run(ctx, 1, st);
}

static const wf_arg_def xent_inputs[] = {
    WF_ARG_T("features", "T", "(N, C) logits"),
    WF_ARG_T("labels", "T", "(N, C) probabilities, each row summing to 1"),
    WF_ARG_END};
static const wf_arg_def sparse_xent_inputs[] = {
    WF_ARG_T("features", "T", "(N, C) logits"),
    WF_ARG_T("labels", "Tlabels", "(N,) class indices in [0, C)"), WF_ARG_END};
static const wf_arg_def xent_outputs[] = {
    WF_ARG_T("loss", "T", "(N,) cross-entropy per example"),
    WF_ARG_T("backprop", "T",
             "(N, C) gradient of loss wrt features: softmax - labels"),
    WF_ARG_END};
static const wf_attr_def sparse_xent_attrs[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_TYPE_DEFAULT("Tlabels",
                         WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),
                         WF_INT64, "int32 or int64: the type of labels"),
    WF_ATTR_END};

const wf_op_def nn_softmax_xent_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "SoftmaxCrossEntropyWithLogits",
    .inputs = xent_inputs,
    .outputs = xent_outputs,
    .attrs = float_attrs,
    .shape_fn = xent_shape,
    .doc = "Softmax cross-entropy of logits features (N, C) against label "
           "distributions (N, C): loss (N,) = -sum(labels * "
           "log_softmax(features)) per row, and backprop (N, C) = "
           "softmax(features) - labels."};

const wf_kernel_def nn_softmax_xent_kernel = WFX_CPU_REFERENCE(
    "SoftmaxCrossEntropyWithLogits", "T", WFX_DTYPES_FLOAT, xent_compute);

const wf_op_def nn_sparse_softmax_xent_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "SparseSoftmaxCrossEntropyWithLogits",
    .inputs = sparse_xent_inputs,
    .outputs = xent_outputs,
    .attrs = sparse_xent_attrs,
    .shape_fn = sparse_xent_shape,
    .doc = "Softmax cross-entropy of logits features (N, C) against class "
           "indices labels (N,): loss (N,) = -log_softmax(features)[i, "
           "labels[i]], backprop (N, C) = softmax(features) - "
           "one_hot(labels). A label outside [0, C) is an error naming its "
           "index."};

const wf_kernel_def nn_sparse_softmax_xent_kernel =
    WFX_CPU_REFERENCE("SparseSoftmaxCrossEntropyWithLogits", "T",
                      WFX_DTYPES_FLOAT, sparse_xent_compute);

/* ---- SoftmaxGrad, LogSoftmaxGrad ----------------------------------------- */

static int softmax_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape y, dy, out;

  if (wfx_shape_input(ctx, 0, NULL, &y, st) ||
      wfx_shape_input(ctx, 1, NULL, &dy, st) ||
      wfx_shape_merge(&y, &dy, &out, "dy against the forward output", st))
    return wfx_code(st);
  if (out.rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the forward output must have rank 1 or more, got ()");
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* Per row of c: softmax (want_log 0), with y = softmax(x):
 *   dx = y * (dy - sum(dy * y));
 * log-softmax (1), with y = log_softmax(x):
 *   dx = dy - exp(y) * sum(dy). */
#define DEF_SOFTMAX_GRAD(T, sfx, dt, u)                                        \
  static void softmax_grad_##sfx(void *dxv, const void *yv, const void *dyv,   \
                                 int64_t rows, int64_t c, int want_log) {      \
    T *dx = dxv;                                                               \
    const T *y = yv, *dy = dyv;                                                \
    for (int64_t r = 0; r < rows; r++, y += c, dy += c, dx += c) {             \
      double s = 0;                                                            \
      for (int64_t j = 0; j < c; j++)                                          \
        s += want_log ? (double)dy[j] : (double)dy[j] * y[j];                  \
      for (int64_t j = 0; j < c; j++)                                          \
        dx[j] = (T)(want_log ? dy[j] - exp((double)y[j]) * s                   \
                             : y[j] * ((double)dy[j] - s));                    \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_SOFTMAX_GRAD, _)

static int softmax_grad_run(wf_kernel_ctx *ctx, int want_log, wf_status *st) {
  const wf_tensor *y, *dy;
  wf_tensor *dx;
  wf_shape ys, dys;
  int64_t c;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &y, &ys, st) ||
      wfx_kernel_input(ctx, 1, &dy, &dys, st))
    return wfx_code(st);
  if (ys.rank == 0 || ys.rank != dys.rank ||
      memcmp(ys.dims, dys.dims, (size_t)ys.rank * sizeof ys.dims[0]) != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the forward output %s and dy %s must have one shape of "
                    "rank 1 or more",
                    wfx_shape_str(&ys, a, sizeof a),
                    wfx_shape_str(&dys, b, sizeof b));
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &ys, st)))
    return wfx_code(st);
  c = ys.dims[ys.rank - 1];
  if (c == 0 || wfx_count(y) == 0)
    return 0;
  if (wfx_dtype(y) == WF_FLOAT32)
    softmax_grad_f32(wfx_data(dx), wfx_data(y), wfx_data(dy), wfx_count(y) / c,
                     c, want_log);
  else
    softmax_grad_f64(wfx_data(dx), wfx_data(y), wfx_data(dy), wfx_count(y) / c,
                     c, want_log);
  return 0;
}

static int softmax_grad_compute(wf_kernel_ctx *ctx, void *state,
                                wf_status *st) {
  return softmax_grad_run(ctx, 0, st);
}

static int log_softmax_grad_compute(wf_kernel_ctx *ctx, void *state,
                                    wf_status *st) {
  return softmax_grad_run(ctx, 1, st);
}

static const wf_arg_def softmax_grad_inputs[] = {
    WF_ARG_T("softmax", "T", "(..., C) Softmax's output"),
    WF_ARG_T("grad", "T", "(..., C) the gradient of that output"), WF_ARG_END};
static const wf_arg_def log_softmax_grad_inputs[] = {
    WF_ARG_T("log_softmax", "T", "(..., C) LogSoftmax's output"),
    WF_ARG_T("grad", "T", "(..., C) the gradient of that output"), WF_ARG_END};
static const wf_arg_def softmax_grad_outputs[] = {
    WF_ARG_T("output", "T", "(..., C) the gradient of the logits"), WF_ARG_END};

const wf_op_def nn_softmax_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "SoftmaxGrad",
    .inputs = softmax_grad_inputs,
    .outputs = softmax_grad_outputs,
    .attrs = float_attrs,
    .shape_fn = softmax_grad_shape,
    .doc = "The gradient of Softmax from its output y: dx = y * (grad - "
           "sum(grad * y)) along the last axis, the sum in double."};

const wf_kernel_def nn_softmax_grad_kernel = WFX_CPU_REFERENCE(
    "SoftmaxGrad", "T", WFX_DTYPES_FLOAT, softmax_grad_compute);

const wf_op_def nn_log_softmax_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "LogSoftmaxGrad",
    .inputs = log_softmax_grad_inputs,
    .outputs = softmax_grad_outputs,
    .attrs = float_attrs,
    .shape_fn = softmax_grad_shape,
    .doc = "The gradient of LogSoftmax from its output y: dx = grad - exp(y) "
           "* sum(grad) along the last axis, the sum in double."};

const wf_kernel_def nn_log_softmax_grad_kernel = WFX_CPU_REFERENCE(
    "LogSoftmaxGrad", "T", WFX_DTYPES_FLOAT, log_softmax_grad_compute);
