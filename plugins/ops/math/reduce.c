/* plugins/ops/math/reduce.c — shape inference and reference CPU kernels of
 * the reductions (Sum, Mean, Max, Min, Prod over a set of axes), ArgMax and
 * SumToLike (the sum that undoes a broadcast). Semantics are documented in
 * plugin.c. Floats accumulate in double with Neumaier's compensation for
 * Sum, Mean and SumToLike; integers wrap. Their gradients' kernels are in
 * reduce_grad.c. */
#include <config.h>

#include "math_ops.h"

#include <math.h>
#include <string.h>

int math_reduce_mask(const int64_t *axes, int64_t n, int rank,
                     uint32_t *mask, wf_status *st) {
  if (n == 0) {
    *mask = rank >= 32 ? UINT32_MAX : (UINT32_C(1) << rank) - 1;
    return 0;
  }
  return wfx_axes_mask(axes, n, rank, mask, NULL, st);
}

void math_reduced_shape(const wf_shape *s, uint32_t mask, int keep_dims,
                        wf_shape *out) {
  wfx_shape_set_scalar(out);
  for (int i = 0; i < s->rank; i++) {
    if (mask & (UINT32_C(1) << i)) {
      if (keep_dims)
        out->dims[out->rank++] = 1;
    } else {
      out->dims[out->rank++] = s->dims[i];
    }
  }
}

int math_shape_reduce(wf_shape_ctx *ctx, wf_status *st) {
  const int64_t *axes;
  int64_t n;
  int keep_dims;
  uint32_t mask;
  wf_shape s, out;

  if (wfx_shape_input(ctx, 0, NULL, &s, st) ||
      wfx_shape_attr_ints(ctx, "axes", &axes, &n, st) ||
      wfx_shape_attr_bool(ctx, "keep_dims", &keep_dims, st))
    return wfx_code(st);
  if (s.rank < 0) {
    /* Only "everything, no kept dims" has a shape without the rank. */
    if (n == 0 && !keep_dims)
      wfx_shape_set_scalar(&out);
    else
      wfx_shape_set_unknown(&out);
    wfx_host->shape_set_output(ctx, 0, &out);
    return 0;
  }
  if (math_reduce_mask(axes, n, s.rank, &mask, st))
    return wfx_code(st);
  math_reduced_shape(&s, mask, keep_dims, &out);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD };

/* Reduces x (walked by b: the input as output, the keep-dims result as its
 * one operand) into out[nout]; per = input elements per output element.
 * scratch holds 2 * nout doubles or uint64s. */
typedef void reduce_fn(int kind, const void *x, wfx_bcast *b, void *out,
                       int64_t nout, int64_t per, void *scratch);

#define FREDUCE(T, sfx, dt, u)                                                 \
  static void reduce_##sfx(int kind, const void *x_, wfx_bcast *b, void *out_, \
                           int64_t nout, int64_t per, void *scratch) {         \
    const T *x = x_;                                                           \
    T *out = out_;                                                             \
    double *acc = scratch, *comp = acc + nout;                                 \
    if (kind == RED_MAX || kind == RED_MIN) {                                  \
      for (int64_t i = 0; i < nout; i++)                                       \
        out[i] = kind == RED_MAX ? (T)-INFINITY : (T)INFINITY;                 \
      for (int64_t r = 0; r < b->rows; r++, wfx_bcast_next(b)) {               \
        const T *xr = x + r * b->inner;                                        \
        T *o = out + b->off[0];                                                \
        for (int64_t j = 0; j < b->inner; j++) {                               \
          T v = xr[j], *a = &o[j * b->step[0]];                                \
          /* NaN wins and then stays */                                        \
          if (kind == RED_MAX ? (v > *a || isnan(v)) : (v < *a || isnan(v)))   \
            if (!isnan(*a))                                                    \
              *a = v;                                                          \
        }                                                                      \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    for (int64_t i = 0; i < nout; i++) {                                       \
      acc[i] = kind == RED_PROD ? 1.0 : 0.0;                                   \
      comp[i] = 0.0;                                                           \
    }                                                                          \
    for (int64_t r = 0; r < b->rows; r++, wfx_bcast_next(b)) {                 \
      const T *xr = x + r * b->inner;                                          \
      double *ar = acc + b->off[0], *cr = comp + b->off[0];                    \
      int64_t s = b->step[0];                                                  \
      if (kind == RED_PROD) {                                                  \
        for (int64_t j = 0; j < b->inner; j++)                                 \
          ar[j * s] *= (double)xr[j];                                          \
        continue;                                                              \
      }                                                                        \
      for (int64_t j = 0; j < b->inner; j++) {                                 \
        double v = (double)xr[j], a = ar[j * s], t = a + v;                    \
        cr[j * s] += fabs(a) >= fabs(v) ? (a - t) + v : (v - t) + a;           \
        ar[j * s] = t;                                                         \
      }                                                                        \
    }                                                                          \
    for (int64_t i = 0; i < nout; i++) {                                       \
      /* an infinite sum leaves NaN in the compensation: ignore it */          \
      double v = isfinite(acc[i]) ? acc[i] + comp[i] : acc[i];                 \
      if (kind == RED_MEAN)                                                    \
        v = per > 0 ? v / (double)per : NAN;                                   \
      out[i] = (T)v;                                                           \
    }                                                                          \
  }

#define IREDUCE(T, sfx, dt, u)                                                 \
  static void reduce_##sfx(int kind, const void *x_, wfx_bcast *b, void *out_, \
                           int64_t nout, int64_t per, void *scratch) {         \
    const T *x = x_;                                                           \
    T *out = out_;                                                             \
    uint64_t *acc = scratch;                                                   \
    if (kind == RED_MAX || kind == RED_MIN) {                                  \
      for (int64_t i = 0; i < nout; i++)                                       \
        out[i] = kind == RED_MAX ? (T)MATH_LO(sfx) : (T)MATH_HI(sfx);          \
      for (int64_t r = 0; r < b->rows; r++, wfx_bcast_next(b)) {               \
        const T *xr = x + r * b->inner;                                        \
        T *o = out + b->off[0];                                                \
        for (int64_t j = 0; j < b->inner; j++) {                               \
          T v = xr[j], *a = &o[j * b->step[0]];                                \
          if (kind == RED_MAX ? v > *a : v < *a)                               \
            *a = v;                                                            \
        }                                                                      \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    for (int64_t i = 0; i < nout; i++)                                         \
      acc[i] = kind == RED_PROD ? 1 : 0;                                       \
    for (int64_t r = 0; r < b->rows; r++, wfx_bcast_next(b)) {                 \
      const T *xr = x + r * b->inner;                                          \
      uint64_t *ar = acc + b->off[0];                                          \
      int64_t s = b->step[0];                                                  \
      for (int64_t j = 0; j < b->inner; j++) {                                 \
        /* via int64 so that negative values sign-extend */                    \
        uint64_t v = (uint64_t)(int64_t)xr[j];                                 \
        if (kind == RED_PROD)                                                  \
          ar[j * s] *= v;                                                      \
        else                                                                   \
          ar[j * s] += v;                                                      \
      }                                                                        \
    }                                                                          \
    for (int64_t i = 0; i < nout; i++) {                                       \
      if (kind == RED_MEAN) {                                                  \
        int64_t sum = (int64_t)acc[i];                                         \
        out[i] = per > 0 ? (T)(sum / per) : (T)0;                              \
      } else {                                                                 \
        out[i] = (T)acc[i];                                                    \
      }                                                                        \
    }                                                                          \
  }

WFX_TYPES_FLOAT(FREDUCE, _)
WFX_TYPES_INT(IREDUCE, _)
static reduce_fn *const reduce_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, reduce)};

static int reduce_run(wf_kernel_ctx *ctx, int kind, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *out;
  wf_shape s, kept, os;
  const int64_t *axes;
  int64_t n, nout, nin;
  int keep_dims;
  uint32_t mask;
  int32_t dt;
  wfx_bcast b;
  void *scratch = NULL;

  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_ints(ctx, "axes", &axes, &n, st) ||
      wfx_kernel_attr_bool(ctx, "keep_dims", &keep_dims, st) ||
      math_reduce_mask(axes, n, s.rank, &mask, st))
    return wfx_code(st);
  dt = wfx_dtype(x);
  if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !reduce_table[dt])
    return math_unsupported_dtype(dt, st);
  math_reduced_shape(&s, mask, 1, &kept);
  math_reduced_shape(&s, mask, keep_dims, &os);
  out = wfx_host->kernel_output_new(ctx, 0, &os, st);
  if (!out)
    return wfx_code(st);
  nout = wfx_shape_count(&kept);
  nin = wfx_shape_count(&s);
  if (nout == 0)
    return 0;
  scratch = wfx_host->alloc((size_t)nout * 2 * sizeof(double), 0);
  if (!scratch)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld accumulators", (long long)nout);
  wfx_bcast_init(&b, &s, 1, &kept);
  reduce_table[dt](kind, wfx_data(x), &b, wfx_data(out), nout, nin / nout,
                   scratch);
  wfx_host->free(scratch);
  return 0;
}

#define REDUCE_COMPUTE(fn, kind)                                               \
  int fn(wf_kernel_ctx *ctx, void *state, wf_status *st) {                     \
    return reduce_run(ctx, kind, st);                                          \
  }
REDUCE_COMPUTE(math_sum, RED_SUM)
REDUCE_COMPUTE(math_mean, RED_MEAN)
REDUCE_COMPUTE(math_max, RED_MAX)
REDUCE_COMPUTE(math_min, RED_MIN)
REDUCE_COMPUTE(math_prod, RED_PROD)

/* ---- SumToLike --------------------------------------------------------- */

/* Checks that `like` broadcasts to x without changing x's shape: rank at
 * most x's, each of its dims (aligned at the end) 1 or x's. Unknown dims
 * pass. */
static int check_sum_to(const wf_shape *x, const wf_shape *like,
                        wf_status *st) {
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  int ok = 1;

  if (x->rank < 0 || like->rank < 0)
    return 0;
  if (like->rank > x->rank)
    ok = 0;
  for (int i = 0; ok && i < like->rank; i++) {
    int64_t dl = like->dims[like->rank - 1 - i];
    int64_t dx = x->dims[x->rank - 1 - i];
    ok = dl == 1 || dl == dx || dl < 0 || dx < 0;
  }
  if (!ok)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "like's shape %s does not broadcast to x's shape %s, so "
                    "x cannot be summed back to it",
                    wfx_shape_str(like, a, sizeof a),
                    wfx_shape_str(x, b, sizeof b));
  return 0;
}

int math_shape_sum_to_like(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape x, like;

  if (wfx_shape_input(ctx, 0, NULL, &x, st) ||
      wfx_shape_input(ctx, 1, NULL, &like, st) || check_sum_to(&x, &like, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &like);
  return 0;
}

int math_sum_to_like(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *like;
  wf_tensor *out;
  wf_shape xs, ls;
  int64_t nout, nin;
  int32_t dt;
  wfx_bcast b;
  void *scratch;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &like, &ls, st) || check_sum_to(&xs, &ls, st))
    return wfx_code(st);
  dt = wfx_dtype(x);
  if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !reduce_table[dt])
    return math_unsupported_dtype(dt, st);
  /* Nothing was broadcast (a gradient whose batch size was unknown when
   * it was built): each output is its one input, so x is forwarded. */
  if (wfx_shape_equal(&xs, &ls))
    return wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)x, st);
  out = wfx_host->kernel_output_new(ctx, 0, &ls, st);
  if (!out)
    return wfx_code(st);
  nout = wfx_shape_count(&ls);
  nin = wfx_shape_count(&xs);
  if (nout == 0)
    return 0;
  scratch = wfx_host->alloc((size_t)nout * 2 * sizeof(double), 0);
  if (!scratch)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld accumulators", (long long)nout);
  /* the walk of x with `like` as its operand gives each element's sum */
  wfx_bcast_init(&b, &xs, 1, &ls);
  reduce_table[dt](RED_SUM, wfx_data(x), &b, wfx_data(out), nout, nin / nout,
                   scratch);
  wfx_host->free(scratch);
  return 0;
}

/* ---- ArgMax ------------------------------------------------------------ */

/* Checks axis against s (known rank) and refuses an empty axis. */
static int argmax_axis(const wf_shape *s, int64_t axis, int *out,
                       wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_axis_normalize(axis, s->rank, out, NULL, st))
    return wfx_code(st);
  if (s->dims[*out] == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "axis %lld of input shape %s is empty: there is no "
                    "maximum to index",
                    (long long)axis, wfx_shape_str(s, buf, sizeof buf));
  return 0;
}

int math_shape_argmax(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s, out;
  int64_t axis;
  int a;

  if (wfx_shape_input(ctx, 0, NULL, &s, st) ||
      wfx_shape_attr_int(ctx, "axis", &axis, st))
    return wfx_code(st);
  if (s.rank < 0) {
    wfx_shape_set_unknown(&out);
  } else {
    if (argmax_axis(&s, axis, &a, st))
      return wfx_code(st);
    math_reduced_shape(&s, UINT32_C(1) << a, 0, &out);
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* best[inner] and idx[inner] are scratch; the first of equal maxima wins,
 * and the first NaN beats any number. */
typedef void argmax_fn(const void *x, int64_t outer, int64_t n, int64_t inner,
                       void *best, int64_t *idx, int32_t out_dtype,
                       void *out);

/* Float and integer bodies differ only in the comparison. */
#define BETTER_FLOAT(v, b) ((v) > (b) || (isnan(v) && !isnan(b)))
#define BETTER_INT(v, b) ((v) > (b))
#define ARGMAX(T, sfx, BETTER)                                                 \
  static void argmax_##sfx(const void *x_, int64_t outer, int64_t n,           \
                           int64_t inner, void *best_, int64_t *idx,           \
                           int32_t out_dtype, void *out) {                     \
    const T *x = x_;                                                           \
    T *best = best_;                                                           \
    for (int64_t o = 0; o < outer; o++) {                                      \
      const T *base = x + o * n * inner;                                       \
      for (int64_t i = 0; i < inner; i++) {                                    \
        best[i] = base[i];                                                     \
        idx[i] = 0;                                                            \
      }                                                                        \
      for (int64_t k = 1; k < n; k++) {                                        \
        const T *row = base + k * inner;                                       \
        for (int64_t i = 0; i < inner; i++)                                    \
          if (BETTER(row[i], best[i])) {                                       \
            best[i] = row[i];                                                  \
            idx[i] = k;                                                        \
          }                                                                    \
      }                                                                        \
      for (int64_t i = 0; i < inner; i++) {                                    \
        if (out_dtype == WF_INT32)                                             \
          ((int32_t *)out)[o * inner + i] = (int32_t)idx[i];                   \
        else                                                                   \
          ((int64_t *)out)[o * inner + i] = idx[i];                            \
      }                                                                        \
    }                                                                          \
  }
#define FARGMAX(T, sfx, dt, u) ARGMAX(T, sfx, BETTER_FLOAT)
#define IARGMAX(T, sfx, dt, u) ARGMAX(T, sfx, BETTER_INT)
WFX_TYPES_FLOAT(FARGMAX, _)
WFX_TYPES_INT(IARGMAX, _)
static argmax_fn *const argmax_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, argmax)};

int math_argmax(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *out;
  wf_shape s, os;
  int64_t axis, outer = 1, inner = 1, n;
  int a;
  int32_t dt, odt;
  char *scratch;

  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      argmax_axis(&s, axis, &a, st))
    return wfx_code(st);
  dt = wfx_dtype(x);
  if (dt <= WF_DTYPE_INVALID || dt >= WF_DTYPE_COUNT || !argmax_table[dt])
    return math_unsupported_dtype(dt, st);
  odt = wfx_host->kernel_output_dtype(ctx, 0);
  if (odt != WF_INT32 && odt != WF_INT64)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "output_type is %s; it must be int32 or int64",
                    wfx_dtype_name(odt));
  math_reduced_shape(&s, UINT32_C(1) << a, 0, &os);
  out = wfx_host->kernel_output_new(ctx, 0, &os, st);
  if (!out)
    return wfx_code(st);
  for (int i = 0; i < a; i++)
    outer *= s.dims[i];
  for (int i = a + 1; i < s.rank; i++)
    inner *= s.dims[i];
  n = s.dims[a];
  if (outer == 0 || inner == 0)
    return 0;
  scratch = wfx_host->alloc(
      (size_t)inner * (wfx_dtype_size(dt) + sizeof(int64_t)), 0);
  if (!scratch)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld scratch elements",
                    (long long)inner);
  /* idx first: int64 alignment for any element size */
  argmax_table[dt](wfx_data(x), outer, n, inner,
                   scratch + (size_t)inner * sizeof(int64_t),
                   (int64_t *)(void *)scratch, odt, wfx_data(out));
  wfx_host->free(scratch);
  return 0;
}
