/* plugins/importers/onnx/onnx_kernels_index.c — more of the importer's own
 * ops (see onnx_kernels.c), each with a reference CPU kernel, inference
 * only: OnnxGatherElements, OnnxTrilu, OnnxRange, OnnxMod, OnnxCumSum, and
 * OnnxReduceSum, OnnxAxesReshape (Squeeze/Unsqueeze) and OnnxSlice whose
 * axes, starts, ... are tensors known only at run time (ONNX made them
 * inputs; weft's ops take them as attributes or need them while
 * building). */
#include <config.h>

#include <math.h>
#include <string.h>

#include "onnx_internal.h"

#define INDEX_TYPES (WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64))

/* Ints of a run-time input (int32 or int64) into v (at most max). */
static int ints_in(const wf_kernel_ctx *ctx, int i, int64_t *v, int max,
                   int *n, wf_status *st) {
  const wf_tensor *t;
  if (wfx_kernel_input(ctx, i, &t, NULL, st))
    return wfx_code(st);
  int64_t c = wfx_count(t);
  if (c > max)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input %d has %lld values (at most %d)", i, (long long)c,
                    max);
  for (int64_t k = 0; k < c; k++)
    v[k] = wfx_dtype(t) == WF_INT64 ? ((const int64_t *)wfx_data(t))[k]
                                    : ((const int32_t *)wfx_data(t))[k];
  *n = (int)c;
  return 0;
}

static int shape_unknown(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  (void)st;
  wfx_shape_set_unknown(&s);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int64_t idx_at(const wf_tensor *t, int64_t k) {
  return wfx_dtype(t) == WF_INT64 ? ((const int64_t *)wfx_data(t))[k]
                                  : ((const int32_t *)wfx_data(t))[k];
}

static double scalar_of(const wf_tensor *t) {
  const void *d = wfx_host->tensor_data(t);
  if (wfx_host->tensor_count(t) < 1)
    return NAN;
  switch (wfx_host->tensor_dtype(t)) {
  case WF_FLOAT32:
    return *(const float *)d;
  case WF_FLOAT64:
    return *(const double *)d;
  case WF_INT32:
    return *(const int32_t *)d;
  case WF_INT64:
    return (double)*(const int64_t *)d;
  case WF_INT8:
    return *(const int8_t *)d;
  case WF_UINT8:
    return *(const uint8_t *)d;
  default:
    return NAN;
  }
}

/* ---- OnnxGatherElements ------------------------------------------------- */

static int gather_el_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  if (wfx_shape_input(ctx, 1, NULL, &s, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int gather_el_compute(wf_kernel_ctx *ctx, void *state,
                             wf_status *st) {
  const wf_tensor *x, *idx;
  wf_shape xs, is;
  wf_tensor *y;
  int64_t axis;
  int ax;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &idx, &is, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      wfx_axis_normalize(axis, xs.rank, &ax, NULL, st))
    return wfx_code(st);
  if (is.rank != xs.rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "indices have rank %d; data has rank %d", is.rank,
                    xs.rank);
  if (wfx_kernel_output(ctx, 0, &is, &y, st))
    return wfx_code(st);
  int64_t xst[WF_MAX_RANK], pos[WF_MAX_RANK] = {0}, n = wfx_shape_count(&is);
  size_t es = wfx_dtype_size(wfx_dtype(x));
  wfx_shape_strides(&xs, xst);
  const char *src = wfx_data(x);
  char *dst = wfx_data(y);
  for (int64_t k = 0; k < n; k++) {
    int64_t j = idx_at(idx, k), off = 0;
    if (j < 0)
      j += xs.dims[ax];
    if (j < 0 || j >= xs.dims[ax])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "index %lld at position %lld is out of range for "
                      "dimension %d of size %lld",
                      (long long)idx_at(idx, k), (long long)k, ax,
                      (long long)xs.dims[ax]);
    for (int i = 0; i < xs.rank; i++) {
      int64_t c = i == ax ? j : pos[i];
      if (c >= xs.dims[i])
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "indices exceed data along dimension %d", i);
      off += c * xst[i];
    }
    memcpy(dst + k * es, src + off * es, es);
    for (int i = is.rank - 1; i >= 0; i--) {
      if (++pos[i] < is.dims[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

const wf_op_def ox_gather_el_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxGatherElements",
    .inputs = WFX_ARGS(WF_ARG_T("data", "T", "(D0, ..., DR-1)"),
                       WF_ARG_T("indices", "Tind",
                                "(I0, ..., IR-1): indices along axis, "
                                "negative from the end")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "indices' shape")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_DTYPE("Tind", INDEX_TYPES, "index type"),
                       WFX_ATTR_INT("axis", 0, "the indexed axis")),
    .shape_fn = gather_el_shape,
    .doc = "y[i0, .., ik, ..] = data[i0, .., indices[i0, .., ik, ..], ..] "
           "with ik on axis (ONNX GatherElements)."};

/* ---- OnnxTrilu ----------------------------------------------------------- */

static int trilu_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  int64_t upper, kk[1] = {0};
  int nk = 0;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_int(ctx, "upper", &upper, st) ||
      ints_in(ctx, 1, kk, 1, &nk, st))
    return wfx_code(st);
  if (s.rank < 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "input 0 needs rank >= 2");
  if (wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  int64_t r = s.dims[s.rank - 2], c = s.dims[s.rank - 1], n = wfx_count(x);
  size_t es = wfx_dtype_size(wfx_dtype(x));
  const char *src = wfx_data(x);
  char *dst = wfx_data(y);
  for (int64_t k = 0; k < n; k++) {
    int64_t j = k % c, i = (k / c) % r;
    int keep = upper ? j - i >= kk[0] : j - i <= kk[0];
    if (keep)
      memcpy(dst + k * es, src + k * es, es);
    else
      memset(dst + k * es, 0, es);
  }
  return 0;
}

const wf_op_def ox_trilu_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxTrilu",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(..., R, C)"),
                       WF_ARG_FIXED("k", WF_INT64,
                                    "(1,) or () the diagonal's offset")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x's shape")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_INT("upper", 1,
                                    "1: keep j - i >= k; 0: keep j - i <= k")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "The upper or lower triangle of each matrix, the rest zero "
           "(ONNX Trilu)."};

/* ---- OnnxRange ----------------------------------------------------------- */

static int range_count(double start, double limit, double delta, int64_t *n,
                       wf_status *st) {
  if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "delta must be non-zero and every bound finite");
  double c = ceil((limit - start) / delta);
  if (c > (double)((int64_t)1 << 40))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "a range of %g elements", c);
  *n = c > 0 ? (int64_t)c : 0;
  return 0;
}

static int range_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_tensor *v[3];
  wf_shape s = {.rank = 1, .dims = {-1}};
  for (int i = 0; i < 3; i++)
    v[i] = wfx_host->shape_input_value(ctx, i);
  if (v[0] && v[1] && v[2] &&
      range_count(scalar_of(v[0]), scalar_of(v[1]), scalar_of(v[2]),
                  &s.dims[0], st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int range_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *v[3];
  wf_tensor *y;
  int64_t n;
  (void)state;
  for (int i = 0; i < 3; i++)
    if (wfx_kernel_input(ctx, i, &v[i], NULL, st))
      return wfx_code(st);
  if (range_count(scalar_of(v[0]), scalar_of(v[1]), scalar_of(v[2]), &n, st))
    return wfx_code(st);
  wf_shape s = {.rank = 1, .dims = {n}};
  if (wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  /* start + i * delta in the element type */
  WFX_DISPATCH_NUMBER(wfx_dtype(y), st, {
    T *o = wfx_data(y);
    T start = *(const T *)wfx_data(v[0]), delta = *(const T *)wfx_data(v[2]);
    for (int64_t i = 0; i < n; i++)
      o[i] = (T)(start + (T)i * delta);
  });
  return 0;
}

const wf_op_def ox_range_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxRange",
    .inputs = WFX_ARGS(WF_ARG_T("start", "T", "()"),
                       WF_ARG_T("limit", "T", "()"),
                       WF_ARG_T("delta", "T", "() non-zero")),
    .outputs = WFX_ARGS(WF_ARG_T(
        "y", "T", "(max(ceil((limit - start) / delta), 0),)")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type")),
    .shape_fn = range_shape,
    .doc = "start, start + delta, ... below limit (ONNX Range)."};

/* ---- OnnxMod ------------------------------------------------------------- */

static int mod_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *a, *b;
  wf_tensor *z;
  wfx_bcast w;
  int64_t fm;
  (void)state;
  if (wfx_kernel_attr_int(ctx, "fmod", &fm, st) ||
      wfx_binary_io(ctx, &a, &b, &z, &w, st))
    return wfx_code(st);
  int isf = wfx_dtype_is_float(wfx_dtype(a));
  WFX_DISPATCH_NUMBER(wfx_dtype(a), st, {
    const T *x = wfx_data(a), *y = wfx_data(b);
    T *o = wfx_data(z);
    WFX_BCAST_EACH(&w, k, i) {
      T p = x[WFX_BCAST_AT(&w, 0, i)], q = y[WFX_BCAST_AT(&w, 1, i)];
      if (isf || fm) {
        double r = fmod((double)p, (double)q);
        if (!fm && r != 0 && ((r < 0) != ((double)q < 0)))
          r += (double)q;
        o[k] = (T)r;
      } else if (q == 0) {
        o[k] = 0;
      } else {
        int64_t pi = (int64_t)p, qi = (int64_t)q, ri = pi % qi;
        if (ri != 0 && ((ri < 0) != (qi < 0)))
          ri += qi;
        o[k] = (T)ri;
      }
    }
  });
  return 0;
}

const wf_op_def ox_mod_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxMod",
    .inputs = WFX_ARGS(WF_ARG_T("a", "T", "(...)"),
                       WF_ARG_T("b", "T", "(...) broadcastable with a")),
    .outputs = WFX_ARGS(WF_ARG_T("z", "T", "a and b broadcast")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
                       WFX_ATTR_INT("fmod", 0,
                                    "1: C's fmod (the sign of a); 0: the "
                                    "sign of b (integers)")),
    .shape_fn = wfx_shape_broadcast,
    .doc = "The remainder of a / b elementwise (ONNX Mod)."};

/* ---- OnnxCumSum ---------------------------------------------------------- */

static int cumsum_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  int64_t ex, rev, av[1];
  int na, ax;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_int(ctx, "exclusive", &ex, st) ||
      wfx_kernel_attr_int(ctx, "reverse", &rev, st) ||
      ints_in(ctx, 1, av, 1, &na, st))
    return wfx_code(st);
  if (na != 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "axis must be one value");
  if (wfx_axis_normalize(av[0], s.rank, &ax, NULL, st) ||
      wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  int64_t d = s.dims[ax], inner = 1, outer = 1;
  for (int i = ax + 1; i < s.rank; i++)
    inner *= s.dims[i];
  for (int i = 0; i < ax; i++)
    outer *= s.dims[i];
  WFX_DISPATCH_NUMBER(wfx_dtype(x), st, {
    const T *a = wfx_data(x);
    T *o = wfx_data(y);
    for (int64_t p = 0; p < outer; p++)
      for (int64_t q = 0; q < inner; q++) {
        double acc = 0;
        for (int64_t t = 0; t < d; t++) {
          int64_t j = rev ? d - 1 - t : t;
          int64_t off = (p * d + j) * inner + q;
          if (ex) {
            o[off] = (T)acc;
            acc += (double)a[off];
          } else {
            acc += (double)a[off];
            o[off] = (T)acc;
          }
        }
      }
  });
  return 0;
}

const wf_op_def ox_cumsum_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxCumSum",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_T("axis", "Tind", "() or (1,) the summed axis")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x's shape")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
                       WFX_ATTR_DTYPE("Tind", INDEX_TYPES, "axis type"),
                       WFX_ATTR_INT("exclusive", 0,
                                    "1: each sum leaves its own element out"),
                       WFX_ATTR_INT("reverse", 0, "1: sum from the end")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "Running sums along an axis, in double (ONNX CumSum)."};

/* ---- run-time axes -------------------------------------------------------- */

static int reduce_sum_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s, o;
  int64_t keep, noop, axes[WF_MAX_RANK];
  int na, mask = 0;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_int(ctx, "keepdims", &keep, st) ||
      wfx_kernel_attr_int(ctx, "noop_with_empty_axes", &noop, st) ||
      ints_in(ctx, 1, axes, WF_MAX_RANK, &na, st))
    return wfx_code(st);
  for (int i = 0; i < na; i++) {
    int a;
    if (wfx_axis_normalize(axes[i], s.rank, &a, "axes", st))
      return wfx_code(st);
    mask |= 1 << a;
  }
  if (na == 0)
    mask = noop ? 0 : (1 << s.rank) - 1;
  o.rank = 0;
  wf_shape kept = s; /* the keep-dims shape, for the walk */
  for (int i = 0; i < s.rank; i++) {
    if (mask & (1 << i)) {
      kept.dims[i] = 1;
      if (keep)
        o.dims[o.rank++] = 1;
    } else
      o.dims[o.rank++] = s.dims[i];
  }
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t n = wfx_shape_count(&s), m = wfx_count(y), kst[WF_MAX_RANK];
  int64_t pos[WF_MAX_RANK] = {0};
  wfx_shape_strides(&kept, kst);
  double *acc = wfx_host->alloc((size_t)(m ? m : 1) * sizeof(double), 0);
  if (!acc)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t k = 0; k < m; k++)
    acc[k] = 0;
  int rc = 0;
  switch (wfx_dtype(x)) {
#define RS_CASE(T, sfx, dt, u)                                                 \
  case dt: {                                                                   \
    const T *a = wfx_data(x);                                                  \
    for (int64_t k = 0; k < n; k++) {                                          \
      int64_t off = 0;                                                         \
      for (int i = 0; i < s.rank; i++)                                         \
        off += (mask & (1 << i) ? 0 : pos[i]) * kst[i];                        \
      acc[off] += (double)a[k];                                                \
      for (int i = s.rank - 1; i >= 0; i--) {                                  \
        if (++pos[i] < s.dims[i])                                              \
          break;                                                               \
        pos[i] = 0;                                                            \
      }                                                                        \
    }                                                                          \
    T *out = wfx_data(y);                                                      \
    for (int64_t k = 0; k < m; k++)                                            \
      out[k] = (T)acc[k];                                                      \
  } break;
    WFX_TYPES_NUMBER(RS_CASE, _)
#undef RS_CASE
  default:
    rc = wfx_fail(st, WF_UNIMPLEMENTED, "no kernel for dtype %s",
                  wfx_dtype_name(wfx_dtype(x)));
  }
  wfx_host->free(acc);
  return rc;
}

const wf_op_def ox_reduce_sum_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxReduceSum",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_FIXED("axes", WF_INT64,
                                    "(K,) axes to sum; empty: all (or none "
                                    "with noop_with_empty_axes)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T",
                                 "x's shape without the axes (size 1 with "
                                 "keepdims)")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
                       WFX_ATTR_INT("keepdims", 1, "1: keep summed axes"),
                       WFX_ATTR_INT("noop_with_empty_axes", 0,
                                    "1: empty axes sum nothing")),
    .shape_fn = shape_unknown,
    .doc = "Sum over axes given at run time, in double (ONNX ReduceSum "
           "since opset 13)."};

static int axes_reshape_compute(wf_kernel_ctx *ctx, void *state,
                                wf_status *st) {
  const wf_tensor *x;
  wf_shape s, o;
  wf_attr_value m;
  int64_t axes[WF_MAX_RANK];
  int na, mask = 0;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr(ctx, "mode", WF_ATTR_STRING, &m, st) ||
      ints_in(ctx, 1, axes, WF_MAX_RANK, &na, st))
    return wfx_code(st);
  int unsq = strcmp(m.u.s, "unsqueeze") == 0;
  int ro = unsq ? s.rank + na : s.rank;
  if (ro > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "rank %d is above %d", ro,
                    WF_MAX_RANK);
  for (int i = 0; i < na; i++) {
    int a;
    if (wfx_axis_normalize(axes[i], ro, &a, "axes", st))
      return wfx_code(st);
    if (mask & (1 << a))
      return wfx_fail(st, WF_INVALID_ARGUMENT, "axis %d is repeated", a);
    mask |= 1 << a;
  }
  o.rank = 0;
  if (unsq) {
    for (int i = 0, j = 0; i < ro; i++)
      o.dims[o.rank++] = mask & (1 << i) ? 1 : s.dims[j++];
  } else {
    for (int i = 0; i < s.rank; i++) {
      int drop = na ? (mask >> i) & 1 : s.dims[i] == 1;
      if (drop && s.dims[i] != 1)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "dimension %d has size %lld, not 1", i,
                        (long long)s.dims[i]);
      if (!drop)
        o.dims[o.rank++] = s.dims[i];
    }
  }
  /* a view of x's buffer (the host keeps x alive as long as the view) */
  wf_tensor *v = wfx_host->tensor_reshape((wf_tensor *)x, &o, st);
  if (!v)
    return wfx_code(st);
  int rc = wfx_host->kernel_output_set(ctx, 0, v, st);
  wfx_host->tensor_release(v);
  return rc;
}

const wf_op_def ox_axes_reshape_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxAxesReshape",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_FIXED("axes", WF_INT64, "(K,) the axes")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T",
                                 "x with the axes removed or inserted")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_REQUIRED("mode", WF_ATTR_STRING,
                                         "squeeze or unsqueeze")),
    .shape_fn = shape_unknown,
    .doc = "ONNX Squeeze or Unsqueeze with axes known at run time only."};

static int slice_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s, o;
  int64_t sv[WF_MAX_RANK], ev[WF_MAX_RANK], av[WF_MAX_RANK], pv[WF_MAX_RANK];
  int ns, ne, na, np;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      ints_in(ctx, 1, sv, WF_MAX_RANK, &ns, st) ||
      ints_in(ctx, 2, ev, WF_MAX_RANK, &ne, st) ||
      ints_in(ctx, 3, av, WF_MAX_RANK, &na, st) ||
      ints_in(ctx, 4, pv, WF_MAX_RANK, &np, st))
    return wfx_code(st);
  if (ns != ne || ns != na || ns != np)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "starts, ends, axes and steps differ in length");
  int64_t b[WF_MAX_RANK], step[WF_MAX_RANK];
  o = s;
  for (int i = 0; i < s.rank; i++) {
    b[i] = 0;
    step[i] = 1;
  }
  for (int k = 0; k < ns; k++) {
    int a;
    if (wfx_axis_normalize(av[k], s.rank, &a, "axes", st))
      return wfx_code(st);
    int64_t d = s.dims[a], p = pv[k], lo = sv[k], hi = ev[k];
    if (p == 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT, "a step of 0");
    /* clamp first: bounds may be near INT64's limits */
    const int64_t big = (int64_t)1 << 62;
    lo = lo < -big ? -big : lo > big ? big : lo;
    hi = hi < -big ? -big : hi > big ? big : hi;
    if (lo < 0)
      lo += d;
    if (hi < 0)
      hi += d;
    if (p > 0) {
      lo = lo < 0 ? 0 : lo > d ? d : lo;
      hi = hi < 0 ? 0 : hi > d ? d : hi;
      o.dims[a] = hi > lo ? (hi - lo + p - 1) / p : 0;
    } else {
      lo = lo < 0 ? -1 : lo > d - 1 ? d - 1 : lo;
      hi = hi < -1 ? -1 : hi > d - 1 ? d - 1 : hi;
      o.dims[a] = lo > hi ? (lo - hi - p - 1) / -p : 0;
    }
    b[a] = lo;
    step[a] = p;
  }
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t xst[WF_MAX_RANK], pos[WF_MAX_RANK] = {0}, n = wfx_shape_count(&o);
  size_t es = wfx_dtype_size(wfx_dtype(x));
  wfx_shape_strides(&s, xst);
  const char *src = wfx_data(x);
  char *dst = wfx_data(y);
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int i = 0; i < s.rank; i++)
      off += (b[i] + pos[i] * step[i]) * xst[i];
    memcpy(dst + k * es, src + off * es, es);
    for (int i = o.rank - 1; i >= 0; i--) {
      if (++pos[i] < o.dims[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

const wf_op_def ox_slice_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxSlice",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_FIXED("starts", WF_INT64, "(K,)"),
                       WF_ARG_FIXED("ends", WF_INT64, "(K,)"),
                       WF_ARG_FIXED("axes", WF_INT64, "(K,)"),
                       WF_ARG_FIXED("steps", WF_INT64, "(K,) non-zero")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "the slice")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type")),
    .shape_fn = shape_unknown,
    .doc = "ONNX Slice with starts, ends, axes and steps known at run time "
           "(bounds clamped as ONNX does)."};

const wf_kernel_def ox_gather_el_kernel = WFX_CPU_REFERENCE(
    "OnnxGatherElements", "T", WFX_DTYPES_ALL, gather_el_compute);
const wf_kernel_def ox_trilu_kernel =
    WFX_CPU_REFERENCE("OnnxTrilu", "T", WFX_DTYPES_ALL, trilu_compute);
const wf_kernel_def ox_range_kernel =
    WFX_CPU_REFERENCE("OnnxRange", "T", WFX_DTYPES_NUMBER, range_compute);
const wf_kernel_def ox_mod_kernel =
    WFX_CPU_REFERENCE("OnnxMod", "T", WFX_DTYPES_NUMBER, mod_compute);
const wf_kernel_def ox_cumsum_kernel =
    WFX_CPU_REFERENCE("OnnxCumSum", "T", WFX_DTYPES_NUMBER, cumsum_compute);
const wf_kernel_def ox_reduce_sum_kernel = WFX_CPU_REFERENCE(
    "OnnxReduceSum", "T", WFX_DTYPES_NUMBER, reduce_sum_compute);
const wf_kernel_def ox_axes_reshape_kernel = WFX_CPU_REFERENCE(
    "OnnxAxesReshape", "T", WFX_DTYPES_ALL, axes_reshape_compute);
const wf_kernel_def ox_slice_kernel =
    WFX_CPU_REFERENCE("OnnxSlice", "T", WFX_DTYPES_ALL, slice_compute);

/* ---- OnnxNLLLoss ---------------------------------------------------------- */

static int nll_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *tg, *w;
  wf_shape xs, ts, ws, o;
  wf_attr_value red;
  int64_t ignore, has_ignore;
  wf_tensor *y;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &tg, &ts, st) ||
      wfx_kernel_input(ctx, 2, &w, &ws, st) ||
      wfx_kernel_attr(ctx, "reduction", WF_ATTR_STRING, &red, st) ||
      wfx_kernel_attr_int(ctx, "ignore_index", &ignore, st) ||
      wfx_kernel_attr_int(ctx, "has_ignore_index", &has_ignore, st))
    return wfx_code(st);
  if (xs.rank < 2 || ts.rank != xs.rank - 1 || ts.dims[0] != xs.dims[0] ||
      ws.rank != 1 || ws.dims[0] != xs.dims[1])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input (N, C, ...), target (N, ...) and weight (C,) "
                    "disagree");
  for (int i = 1; i < ts.rank; i++)
    if (ts.dims[i] != xs.dims[i + 1])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "target's dimension %d differs from the input's", i);
  int none = strcmp(red.u.s, "none") == 0, sum = strcmp(red.u.s, "sum") == 0;
  if (!none && !sum && strcmp(red.u.s, "mean") != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "reduction '%s'", red.u.s);
  o = none ? ts : (wf_shape){.rank = 0};
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t n = xs.dims[0], c = xs.dims[1], inner = 1;
  for (int i = 2; i < xs.rank; i++)
    inner *= xs.dims[i];
  WFX_DISPATCH_FLOAT(wfx_dtype(x), st, {
    const T *a = wfx_data(x), *wt = wfx_data(w);
    T *out = wfx_data(y);
    double total = 0, wsum = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < inner; j++) {
        int64_t k = i * inner + j, t = idx_at(tg, k);
        double l = 0;
        if (!(has_ignore && t == ignore)) {
          if (t < 0 || t >= c)
            return wfx_fail(st, WF_INVALID_ARGUMENT,
                            "target %lld at position %lld is not a class "
                            "in [0, %lld)",
                            (long long)t, (long long)k, (long long)c);
          l = -(double)a[(i * c + t) * inner + j] * (double)wt[t];
          wsum += (double)wt[t];
        }
        if (none)
          out[k] = (T)l;
        total += l;
      }
    if (!none)
      out[0] = (T)(sum ? total : total / wsum);
  });
  return 0;
}

const wf_op_def ox_nll_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxNLLLoss",
    .inputs = WFX_ARGS(WF_ARG_T("input", "T", "(N, C, d1, ...) log-probabilities"),
                       WF_ARG_T("target", "Tind", "(N, d1, ...) classes"),
                       WF_ARG_T("weight", "T", "(C,) class weights")),
    .outputs = WFX_ARGS(WF_ARG_T("loss", "T",
                                 "(N, d1, ...) with reduction none, else ()")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
        WFX_ATTR_DTYPE("Tind", INDEX_TYPES, "target type"),
        WFX_ATTR_REQUIRED("reduction", WF_ATTR_STRING, "none, sum or mean"),
        WFX_ATTR_INT("ignore_index", 0, "a target class that adds nothing"),
        WFX_ATTR_INT("has_ignore_index", 0, "1: ignore_index applies")),
    .shape_fn = shape_unknown,
    .doc = "Negative log-likelihood loss -input[n, target, ...] * "
           "weight[target]; mean divides by the weights of the targets "
           "counted (ONNX NegativeLogLikelihoodLoss)."};

const wf_kernel_def ox_nll_kernel =
    WFX_CPU_REFERENCE("OnnxNLLLoss", "T", WFX_DTYPES_FLOAT, nll_compute);

/* ---- OnnxPick ------------------------------------------------------------- */

static int pick_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int64_t k[1];
  int nk;
  const wf_tensor *v;
  (void)state;
  if (ints_in(ctx, 0, k, 1, &nk, st))
    return wfx_code(st);
  int32_t n = wfx_host->kernel_num_inputs(ctx) - 1;
  if (nk != 1 || k[0] < 0 || k[0] >= n)
    return wfx_fail(st, WF_OUT_OF_RANGE,
                    "position %lld is outside the sequence of %d tensors",
                    nk == 1 ? (long long)k[0] : -1LL, (int)n);
  if (wfx_kernel_input(ctx, (int32_t)k[0] + 1, &v, NULL, st))
    return wfx_code(st);
  return wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)v, st);
}

const wf_op_def ox_pick_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxPick",
    .inputs = WFX_ARGS(WF_ARG_FIXED("index", WF_INT64, "() which value"),
                       WF_ARG_LIST("values", "T", "N",
                                   "N tensors, each of any shape")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "values[index], unchanged")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_INT("N", 1, "number of values")),
    .shape_fn = shape_unknown,
    .doc = "One of N tensors chosen at run time (the ONNX importer's "
           "sequences: SequenceAt, SequenceInsert, SequenceErase)."};

const wf_kernel_def ox_pick_kernel = WFX_CPU_REFERENCE(
    "OnnxPick", "T", WFX_DTYPES_ALL, pick_compute,
    .flags = WF_KERNEL_CHEAP);
