/* plugins/importers/onnx/onnx_resize.c — OnnxResize, the importer's op for
 * ONNX Resize (and Upsample): N-d nearest, linear and cubic interpolation
 * with ONNX's coordinate transformation modes (half_pixel,
 * pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize),
 * nearest rounding modes, cubic_coeff_a, exclude_outside and
 * extrapolation_value. Separable: each output element is the weighted sum
 * of up to 4 source positions per dimension, edges clamped. Reference CPU
 * kernel, inference only; antialiasing (opset 18) is not supported. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "onnx_internal.h"

typedef struct tap {
  int64_t idx[4];
  double w[4];
  int n;      /* taps used */
  int extrap; /* outside the crop: the extrapolation value */
} tap;

static const char *const ctms[] = {"half_pixel",         "pytorch_half_pixel",
                                   "align_corners",      "asymmetric",
                                   "tf_crop_and_resize", "tf_half_pixel_for_nn"};
static const char *const nmodes[] = {"round_prefer_floor", "round_prefer_ceil",
                                     "floor", "ceil"};

static int pick(const char *s, const char *const *v, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, v[i]) == 0)
      return i;
  return -1;
}

typedef struct rs_attrs {
  int mode; /* 0 nearest, 1 linear, 2 cubic */
  int ctm, nmode, exclude;
  double a, extrap;
} rs_attrs;

static int read_attrs(const wf_kernel_ctx *ctx, rs_attrs *r, wf_status *st) {
  wf_attr_value m, c, nm;
  int64_t ex;
  if (wfx_kernel_attr(ctx, "mode", WF_ATTR_STRING, &m, st) ||
      wfx_kernel_attr(ctx, "coordinate_transformation_mode", WF_ATTR_STRING,
                      &c, st) ||
      wfx_kernel_attr(ctx, "nearest_mode", WF_ATTR_STRING, &nm, st) ||
      wfx_kernel_attr_float(ctx, "cubic_coeff_a", &r->a, st) ||
      wfx_kernel_attr_int(ctx, "exclude_outside", &ex, st) ||
      wfx_kernel_attr_float(ctx, "extrapolation_value", &r->extrap, st))
    return wfx_code(st);
  r->mode = strcmp(m.u.s, "nearest") == 0  ? 0
            : strcmp(m.u.s, "linear") == 0 ? 1
            : strcmp(m.u.s, "cubic") == 0  ? 2
                                           : -1;
  r->ctm = pick(c.u.s, ctms, 6);
  r->nmode = pick(nm.u.s, nmodes, 4);
  r->exclude = ex != 0;
  if (r->mode < 0 || r->ctm < 0 || r->nmode < 0)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "mode '%s', coordinate_transformation_mode '%s' or "
                    "nearest_mode '%s' is not supported",
                    m.u.s, c.u.s, nm.u.s);
  return 0;
}

/* Taps of output coordinate o of a dimension resized from in to out with
 * scale s (roi start and end for tf_crop_and_resize). */
static void taps(const rs_attrs *r, int64_t o, int64_t in, int64_t out,
                 double s, double r0, double r1, tap *t) {
  double x;
  /* the resized length as ONNX's formulas use it: in * scale, unrounded */
  double len = (double)in * s;
  (void)out;
  memset(t, 0, sizeof *t);
  switch (r->ctm) {
  case 0:
    x = (o + 0.5) / s - 0.5;
    break;
  case 1:
    x = len > 1 ? (o + 0.5) / s - 0.5 : 0;
    break;
  case 2:
    x = len == 1 ? 0 : (double)o * (in - 1) / (len - 1);
    break;
  case 3:
    x = o / s;
    break;
  case 5:
    x = (o + 0.5) / s;
    break;
  default:
    x = len > 1 ? r0 * (in - 1) + o * (r1 - r0) * (in - 1) / (len - 1)
                : 0.5 * (r0 + r1) * (in - 1);
    if (x < 0 || x > in - 1) {
      t->extrap = 1;
      return;
    }
  }
  double f = floor(x), q = x - f;
  int64_t b = (int64_t)f;
  if (r->mode == 0) {
    int up;
    switch (r->nmode) {
    case 0:
      up = q > 0.5;
      break;
    case 1:
      up = q >= 0.5;
      break;
    case 2:
      up = 0;
      break;
    default:
      up = q > 0;
    }
    t->n = 1;
    t->idx[0] = b + up;
    t->w[0] = 1;
  } else if (r->mode == 1) {
    t->n = 2;
    t->idx[0] = b;
    t->idx[1] = b + 1;
    t->w[0] = 1 - q;
    t->w[1] = q;
  } else {
    double a = r->a, u;
    t->n = 4;
    for (int k = 0; k < 4; k++)
      t->idx[k] = b - 1 + k;
    u = q + 1;
    t->w[0] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
    t->w[1] = ((a + 2) * q - (a + 3)) * q * q + 1;
    u = 1 - q;
    t->w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    u = 2 - q;
    t->w[3] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
  }
  if (r->exclude && r->mode == 2) {
    double sum = 0;
    for (int k = 0; k < t->n; k++) {
      if (t->idx[k] < 0 || t->idx[k] >= in)
        t->w[k] = 0;
      sum += t->w[k];
    }
    for (int k = 0; k < t->n && sum != 0; k++)
      t->w[k] /= sum;
  }
  for (int k = 0; k < t->n; k++) /* edges repeat */
    t->idx[k] = t->idx[k] < 0 ? 0 : t->idx[k] >= in ? in - 1 : t->idx[k];
}

static int floats_in(const wf_kernel_ctx *ctx, int i, double *v, int max,
                     int *n, wf_status *st) {
  const wf_tensor *t;
  if (wfx_kernel_input(ctx, i, &t, NULL, st))
    return wfx_code(st);
  int64_t c = wfx_count(t);
  if (c > max)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "input %d has %lld values", i,
                    (long long)c);
  for (int64_t k = 0; k < c; k++)
    switch (wfx_dtype(t)) {
    case WF_FLOAT32:
      v[k] = ((const float *)wfx_data(t))[k];
      break;
    case WF_FLOAT64:
      v[k] = ((const double *)wfx_data(t))[k];
      break;
    case WF_INT64:
      v[k] = (double)((const int64_t *)wfx_data(t))[k];
      break;
    default:
      v[k] = ((const int32_t *)wfx_data(t))[k];
    }
  *n = (int)c;
  return 0;
}

static int resize_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s, o;
  rs_attrs r = {0};
  double roi[2 * WF_MAX_RANK], sc[WF_MAX_RANK], sz[WF_MAX_RANK],
      scale[WF_MAX_RANK];
  int nroi, nsc, nsz;
  tap *tp = NULL;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) || read_attrs(ctx, &r, st) ||
      floats_in(ctx, 1, roi, 2 * WF_MAX_RANK, &nroi, st) ||
      floats_in(ctx, 2, sc, WF_MAX_RANK, &nsc, st) ||
      floats_in(ctx, 3, sz, WF_MAX_RANK, &nsz, st))
    return wfx_code(st);
  o = s;
  for (int i = 0; i < s.rank; i++) {
    if (nsz == s.rank) {
      if (sz[i] < 0 || sz[i] > (double)((int64_t)1 << 30))
        return wfx_fail(st, WF_INVALID_ARGUMENT, "sizes[%d] is %g", i, sz[i]);
      o.dims[i] = (int64_t)sz[i];
      scale[i] = s.dims[i] ? (double)o.dims[i] / s.dims[i] : 1;
    } else if (nsc == s.rank) {
      if (!(sc[i] > 0) || sc[i] * s.dims[i] > (double)((int64_t)1 << 30))
        return wfx_fail(st, WF_INVALID_ARGUMENT, "scales[%d] is %g", i,
                        sc[i]);
      o.dims[i] = (int64_t)floor(s.dims[i] * sc[i] + 1e-9);
      scale[i] = sc[i];
    } else
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "scales (%d values) or sizes (%d) must give one value "
                      "per dimension of the input (rank %d)",
                      nsc, nsz, s.rank);
  }
  if (r.ctm == 4 && nroi != 2 * s.rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "tf_crop_and_resize needs a roi of %d values", 2 * s.rank);
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t total = 0, off[WF_MAX_RANK + 1];
  for (int i = 0; i < s.rank; i++) {
    off[i] = total;
    total += o.dims[i];
  }
  tp = wfx_host->alloc((size_t)(total ? total : 1) * sizeof *tp, 0);
  if (!tp)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < s.rank; i++)
    for (int64_t k = 0; k < o.dims[i]; k++)
      taps(&r, k, s.dims[i], o.dims[i], scale[i],
           r.ctm == 4 ? roi[i] : 0, r.ctm == 4 ? roi[i + s.rank] : 0,
           &tp[off[i] + k]);
  int64_t n = wfx_shape_count(&o), xst[WF_MAX_RANK], pos[WF_MAX_RANK] = {0};
  wfx_shape_strides(&s, xst);
  int rc = 0;
  switch (wfx_dtype(x)) {
#define RS_CASE(T, sfx, dt, u)                                                 \
  case dt: {                                                                   \
    const T *a = wfx_data(x);                                                  \
    T *out = wfx_data(y);                                                      \
    for (int64_t e = 0; e < n; e++) {                                          \
      const tap *t[WF_MAX_RANK];                                               \
      int ex = 0, k[WF_MAX_RANK] = {0};                                        \
      for (int i = 0; i < s.rank; i++) {                                       \
        t[i] = &tp[off[i] + pos[i]];                                           \
        ex |= t[i]->extrap;                                                    \
      }                                                                        \
      double acc = 0;                                                          \
      if (ex)                                                                  \
        acc = r.extrap;                                                        \
      else                                                                     \
        for (;;) { /* every combination of taps */                             \
          double w = 1;                                                        \
          int64_t src = 0;                                                     \
          for (int i = 0; i < s.rank; i++) {                                   \
            w *= t[i]->w[k[i]];                                                \
            src += t[i]->idx[k[i]] * xst[i];                                   \
          }                                                                    \
          if (w != 0)                                                          \
            acc += w * (double)a[src];                                         \
          int i = s.rank - 1;                                                  \
          for (; i >= 0; i--) {                                                \
            if (++k[i] < t[i]->n)                                              \
              break;                                                           \
            k[i] = 0;                                                          \
          }                                                                    \
          if (i < 0)                                                           \
            break;                                                             \
        }                                                                      \
      out[e] = (T)(wfx_dtype_is_float(dt) ? acc : nearbyint(acc));             \
      for (int i = s.rank - 1; i >= 0; i--) {                                  \
        if (++pos[i] < o.dims[i])                                              \
          break;                                                               \
        pos[i] = 0;                                                            \
      }                                                                        \
    }                                                                          \
  } break;
    WFX_TYPES_NUMBER(RS_CASE, _)
#undef RS_CASE
  default:
    rc = wfx_fail(st, WF_UNIMPLEMENTED, "no kernel for dtype %s",
                  wfx_dtype_name(wfx_dtype(x)));
  }
  wfx_host->free(tp);
  return rc;
}

static int resize_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  for (int i = 0; i < s.rank; i++)
    s.dims[i] = -1;
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

const wf_op_def ox_resize_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxResize",
    .inputs = WFX_ARGS(
        WF_ARG_T("x", "T", "(D0, ..., DR-1)"),
        WF_ARG_T("roi", "Troi", "(2R,) starts then ends, or (0,)"),
        WF_ARG_FIXED("scales", WF_FLOAT32, "(R,) or (0,)"),
        WF_ARG_FIXED("sizes", WF_INT64, "(R,) or (0,): overrides scales")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(sizes) or floor(D * scales)")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
        WFX_ATTR_DTYPE("Troi", WFX_DTYPES_FLOAT, "roi type"),
        WFX_ATTR_REQUIRED("mode", WF_ATTR_STRING, "nearest, linear or cubic"),
        WFX_ATTR_REQUIRED("coordinate_transformation_mode", WF_ATTR_STRING,
                          "half_pixel, pytorch_half_pixel, align_corners, "
                          "asymmetric, tf_crop_and_resize or "
                          "tf_half_pixel_for_nn"),
        WFX_ATTR_REQUIRED("nearest_mode", WF_ATTR_STRING,
                          "round_prefer_floor, round_prefer_ceil, floor or "
                          "ceil"),
        WFX_ATTR_FLOAT("cubic_coeff_a", -0.75, "cubic's a"),
        WFX_ATTR_INT("exclude_outside", 0,
                     "1: cubic taps outside the input weigh 0"),
        WFX_ATTR_FLOAT("extrapolation_value", 0.0,
                       "tf_crop_and_resize outside the input")),
    .shape_fn = resize_shape,
    .doc = "ONNX Resize: interpolates each dimension (built by the ONNX "
           "importer)."};

const wf_kernel_def ox_resize_kernel =
    WFX_CPU_REFERENCE("OnnxResize", "T", WFX_DTYPES_NUMBER, resize_compute);
