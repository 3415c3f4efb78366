/* plugins/importers/onnx/onnx_kernels_more.c — more of the importer's own
 * ops for ONNX semantics weft's op plugins lack (reference CPU kernels,
 * inference only): OnnxCast (to and from float16 and bfloat16),
 * OnnxScatterElements, OnnxScatterND, OnnxGatherND, OnnxEyeLike, OnnxTopK,
 * OnnxPadRT (Pad with run-time pads), OnnxLRN, OnnxNonZero, OnnxCompress,
 * OnnxReverseSequence, OnnxEinsum, OnnxWindow and OnnxDet. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

#define INDEX_TYPES (WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64))
#define ANY_TYPES                                                              \
  (WFX_DTYPES_ALL | WF_DTYPE_BIT(WF_FLOAT16) | WF_DTYPE_BIT(WF_BFLOAT16))

static int shape_unknown(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  (void)st;
  wfx_shape_set_unknown(&s);
  for (int i = 0; i < wfx_host->shape_num_outputs(ctx); i++)
    wfx_host->shape_set_output(ctx, i, &s);
  return 0;
}

static int64_t idx_at(const wf_tensor *t, int64_t k) {
  return wfx_dtype(t) == WF_INT64 ? ((const int64_t *)wfx_data(t))[k]
                                  : ((const int32_t *)wfx_data(t))[k];
}

/* Element k of any numeric tensor as a double, and back. */
static double get(const wf_tensor *t, int64_t k);
static void put(wf_tensor *t, int64_t k, double v);

static float half_to_float(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m + 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  if (isnan(f))
    return sign | 0x7e00;
  float a = fabsf(f);
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < ldexpf(1, -25))
    return sign;
  int e;
  frexpf(a, &e); /* a = m 2^e, m in [0.5, 1) */
  int exp = e - 1 + 15;
  if (exp <= 0) { /* subnormal: units of 2^-24, to nearest even */
    float q = nearbyintf(ldexpf(a, 24));
    return sign | (uint16_t)q;
  }
  float q = nearbyintf(ldexpf(a, 11 - e)); /* 11 significant bits */
  if (q >= 2048) {
    q /= 2;
    exp++;
  }
  if (exp >= 31)
    return sign | 0x7c00;
  return sign | (uint16_t)(exp << 10) | ((uint16_t)q & 1023);
}

static float bf16_to_float(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* The upper half of the float32 (truncation), as the reference of the
 * ONNX release whose conformance data Debian ships (1.12) converts. */
static uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (isnan(f))
    return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)(x >> 16);
}

static double get(const wf_tensor *t, int64_t k) {
  const void *d = wfx_data(t);
  switch (wfx_dtype(t)) {
  case WF_FLOAT32:
    return ((const float *)d)[k];
  case WF_FLOAT64:
    return ((const double *)d)[k];
  case WF_FLOAT16:
    return half_to_float(((const uint16_t *)d)[k]);
  case WF_BFLOAT16:
    return bf16_to_float(((const uint16_t *)d)[k]);
  case WF_INT8:
    return ((const int8_t *)d)[k];
  case WF_UINT8:
  case WF_BOOL:
    return ((const uint8_t *)d)[k];
  case WF_INT32:
    return ((const int32_t *)d)[k];
  case WF_INT64:
    return (double)((const int64_t *)d)[k];
  default:
    return NAN;
  }
}

static void put(wf_tensor *t, int64_t k, double v) {
  void *d = wfx_data(t);
  switch (wfx_dtype(t)) {
  case WF_FLOAT32:
    ((float *)d)[k] = (float)v;
    break;
  case WF_FLOAT64:
    ((double *)d)[k] = v;
    break;
  case WF_FLOAT16:
    ((uint16_t *)d)[k] = float_to_half((float)v);
    break;
  case WF_BFLOAT16:
    ((uint16_t *)d)[k] = float_to_bf16((float)v);
    break;
  case WF_INT8:
    ((int8_t *)d)[k] = (int8_t)v;
    break;
  case WF_UINT8:
    ((uint8_t *)d)[k] = (uint8_t)v;
    break;
  case WF_BOOL:
    ((uint8_t *)d)[k] = v != 0;
    break;
  case WF_INT32:
    ((int32_t *)d)[k] = (int32_t)v;
    break;
  case WF_INT64:
    ((int64_t *)d)[k] = (int64_t)v;
    break;
  }
}

/* ---- OnnxCast ------------------------------------------------------------ */

static int cast_shape(wf_shape_ctx *ctx, wf_status *st) {
  return wfx_shape_like_input0(ctx, st);
}

static int cast_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  int64_t n = wfx_count(x);
  int32_t to = wfx_dtype(y);
  for (int64_t k = 0; k < n; k++) {
    double v = get(x, k);
    if (to == WF_FLOAT16 || to == WF_BFLOAT16) /* through float, as ONNX */
      v = (float)v;
    put(y, k, v);
  }
  return 0;
}

const wf_op_def ox_cast_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxCast",
    .inputs = WFX_ARGS(WF_ARG_T("x", "SrcT", "(...)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "DstT", "x's shape")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("SrcT", ANY_TYPES, "x's type"),
                       WFX_ATTR_DTYPE("DstT", ANY_TYPES, "y's type")),
    .shape_fn = cast_shape,
    .doc = "Element type conversion with float16 (rounded to nearest even "
           "from float32) and bfloat16 (float32 truncated), for what weft's "
           "Cast lacks."};
const wf_kernel_def ox_cast_kernel =
    WFX_CPU_REFERENCE("OnnxCast", "SrcT", ANY_TYPES, cast_compute);

/* ---- OnnxScatterElements ------------------------------------------------- */

static int reduction_of(const wf_kernel_ctx *ctx, int *red, wf_status *st) {
  wf_attr_value r;
  if (wfx_kernel_attr(ctx, "reduction", WF_ATTR_STRING, &r, st))
    return wfx_code(st);
  *red = strcmp(r.u.s, "none") == 0  ? 0
         : strcmp(r.u.s, "add") == 0 ? 1
         : strcmp(r.u.s, "mul") == 0 ? 2
         : strcmp(r.u.s, "max") == 0 ? 3
         : strcmp(r.u.s, "min") == 0 ? 4
                                     : -1;
  if (*red < 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "reduction '%s'", r.u.s);
  return 0;
}

static double combine(int red, double a, double b) {
  switch (red) {
  case 1:
    return a + b;
  case 2:
    return a * b;
  case 3:
    return a > b ? a : b;
  case 4:
    return a < b ? a : b;
  default:
    return b;
  }
}

static int scatter_el_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  const wf_tensor *x, *idx, *u;
  wf_shape xs, is, us;
  wf_tensor *y;
  int64_t axis;
  int ax, red;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &idx, &is, st) ||
      wfx_kernel_input(ctx, 2, &u, &us, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      reduction_of(ctx, &red, st) ||
      wfx_axis_normalize(axis, xs.rank, &ax, NULL, st))
    return wfx_code(st);
  if (!wfx_shape_equal(&is, &us) || is.rank != xs.rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "indices and updates need one shape of data's rank");
  if (wfx_kernel_output(ctx, 0, &xs, &y, st))
    return wfx_code(st);
  memcpy(wfx_data(y), wfx_data(x), wfx_host->tensor_nbytes(x));
  int64_t xst[WF_MAX_RANK], pos[WF_MAX_RANK] = {0}, n = wfx_shape_count(&is);
  wfx_shape_strides(&xs, xst);
  for (int64_t k = 0; k < n; k++) {
    int64_t j = idx_at(idx, k), off = 0;
    if (j < 0)
      j += xs.dims[ax];
    if (j < 0 || j >= xs.dims[ax])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "index %lld at position %lld is out of range",
                      (long long)idx_at(idx, k), (long long)k);
    for (int i = 0; i < xs.rank; i++) {
      int64_t c = i == ax ? j : pos[i];
      if (c >= xs.dims[i])
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "indices exceed data along dimension %d", i);
      off += c * xst[i];
    }
    put(y, off, combine(red, get(y, off), get(u, k)));
    for (int i = is.rank - 1; i >= 0; i--) {
      if (++pos[i] < is.dims[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

const wf_op_def ox_scatter_el_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxScatterElements",
    .inputs = WFX_ARGS(WF_ARG_T("data", "T", "(...)"),
                       WF_ARG_T("indices", "Tind", "data's rank"),
                       WF_ARG_T("updates", "T", "indices' shape")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "data's shape")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
        WFX_ATTR_DTYPE("Tind", INDEX_TYPES, "index type"),
        WFX_ATTR_INT("axis", 0, "the indexed axis"),
        WFX_ATTR_REQUIRED("reduction", WF_ATTR_STRING,
                          "none, add, mul, max or min")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "data with updates written (or combined) at the positions "
           "indices give along axis (ONNX ScatterElements)."};
const wf_kernel_def ox_scatter_el_kernel = WFX_CPU_REFERENCE(
    "OnnxScatterElements", "T", WFX_DTYPES_ALL, scatter_el_compute);

/* ---- OnnxGatherND and OnnxScatterND -------------------------------------- */

/* The flat offsets of the index tuples of idx (.., K) into data. */
static int nd_offsets(const wf_shape *ds, const wf_tensor *idx,
                      const wf_shape *is, int64_t batch_dims, int64_t *inner,
                      int64_t **offs, int64_t *count, wf_status *st) {
  int64_t K = is->dims[is->rank - 1];
  if (is->rank < 1 || K > ds->rank - batch_dims || batch_dims < 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "index tuples of %lld entries for data of rank %d",
                    (long long)K, ds->rank);
  int64_t st_[WF_MAX_RANK];
  wfx_shape_strides(ds, st_);
  *inner = 1;
  for (int i = (int)(batch_dims + K); i < ds->rank; i++)
    *inner *= ds->dims[i];
  int64_t bsize = 1;
  for (int i = 0; i < batch_dims; i++)
    bsize *= ds->dims[i];
  *count = K ? wfx_count(idx) / K : wfx_count(idx);
  *offs = wfx_host->alloc((size_t)(*count ? *count : 1) * sizeof(int64_t), 0);
  if (!*offs)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  int64_t per_batch = bsize ? *count / bsize : 0;
  for (int64_t t = 0; t < *count; t++) {
    int64_t b = per_batch ? t / per_batch : 0, off = 0, rem = b;
    for (int i = (int)batch_dims - 1; i >= 0; i--) {
      off += (rem % ds->dims[i]) * st_[i];
      rem /= ds->dims[i];
    }
    for (int64_t k = 0; k < K; k++) {
      int64_t d = ds->dims[batch_dims + k], j = idx_at(idx, t * K + k);
      if (j < 0)
        j += d;
      if (j < 0 || j >= d) {
        wfx_host->free(*offs);
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "index %lld is out of range for dimension %lld",
                        (long long)j, (long long)(batch_dims + k));
      }
      off += j * st_[batch_dims + k];
    }
    (*offs)[t] = off;
  }
  return 0;
}

static int gather_nd_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *idx;
  wf_shape xs, is, o;
  wf_tensor *y;
  int64_t bd, inner, count, *offs;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &idx, &is, st) ||
      wfx_kernel_attr_int(ctx, "batch_dims", &bd, st) ||
      nd_offsets(&xs, idx, &is, bd, &inner, &offs, &count, st))
    return wfx_code(st);
  o.rank = 0;
  for (int i = 0; i < is.rank - 1; i++)
    o.dims[o.rank++] = is.dims[i];
  for (int i = (int)(bd + is.dims[is.rank - 1]); i < xs.rank; i++)
    o.dims[o.rank++] = xs.dims[i];
  if (o.rank > WF_MAX_RANK || wfx_kernel_output(ctx, 0, &o, &y, st)) {
    wfx_host->free(offs);
    return o.rank > WF_MAX_RANK ? wfx_fail(st, WF_INVALID_ARGUMENT, "rank")
                                : wfx_code(st);
  }
  size_t es = wfx_dtype_size(wfx_dtype(x));
  for (int64_t t = 0; t < count; t++)
    memcpy((char *)wfx_data(y) + (size_t)(t * inner) * es,
           (const char *)wfx_data(x) + (size_t)offs[t] * es,
           (size_t)inner * es);
  wfx_host->free(offs);
  return 0;
}

static int scatter_nd_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  const wf_tensor *x, *idx, *u;
  wf_shape xs, is;
  wf_tensor *y;
  int64_t inner, count, *offs;
  int red;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &idx, &is, st) ||
      wfx_kernel_input(ctx, 2, &u, NULL, st) || reduction_of(ctx, &red, st) ||
      nd_offsets(&xs, idx, &is, 0, &inner, &offs, &count, st))
    return wfx_code(st);
  if (wfx_count(u) != count * inner ||
      wfx_kernel_output(ctx, 0, &xs, &y, st)) {
    wfx_host->free(offs);
    return wfx_code(st) ? wfx_code(st)
                        : wfx_fail(st, WF_INVALID_ARGUMENT,
                                   "updates hold %lld values; the indices "
                                   "need %lld",
                                   (long long)wfx_count(u),
                                   (long long)(count * inner));
  }
  memcpy(wfx_data(y), wfx_data(x), wfx_host->tensor_nbytes(x));
  for (int64_t t = 0; t < count; t++)
    for (int64_t k = 0; k < inner; k++)
      put(y, offs[t] + k,
          combine(red, get(y, offs[t] + k), get(u, t * inner + k)));
  wfx_host->free(offs);
  return 0;
}

const wf_op_def ox_gather_nd_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxGatherND",
    .inputs = WFX_ARGS(WF_ARG_T("data", "T", "(...)"),
                       WF_ARG_T("indices", "Tind", "(..., K) index tuples")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "indices' dims but the last, "
                                           "then data's after the tuple")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_DTYPE("Tind", INDEX_TYPES, "index type"),
                       WFX_ATTR_INT("batch_dims", 0, "leading batch dims")),
    .shape_fn = shape_unknown,
    .doc = "Slices of data at index tuples (ONNX GatherND)."};
const wf_kernel_def ox_gather_nd_kernel =
    WFX_CPU_REFERENCE("OnnxGatherND", "T", WFX_DTYPES_ALL, gather_nd_compute);

const wf_op_def ox_scatter_nd_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxScatterND",
    .inputs = WFX_ARGS(WF_ARG_T("data", "T", "(...)"),
                       WF_ARG_T("indices", "Tind", "(..., K) index tuples"),
                       WF_ARG_T("updates", "T", "the slices written")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "data's shape")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_DTYPE("Tind", INDEX_TYPES, "index type"),
                       WFX_ATTR_REQUIRED("reduction", WF_ATTR_STRING,
                                         "none, add, mul, max or min")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "data with slices written at index tuples (ONNX ScatterND)."};
const wf_kernel_def ox_scatter_nd_kernel = WFX_CPU_REFERENCE(
    "OnnxScatterND", "T", WFX_DTYPES_ALL, scatter_nd_compute);

/* ---- OnnxEyeLike ---------------------------------------------------------- */

static int eye_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape s;
  wf_tensor *y;
  int64_t k;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_int(ctx, "k", &k, st))
    return wfx_code(st);
  if (s.rank != 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "input 0 must be a matrix");
  if (wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  for (int64_t i = 0; i < s.dims[0]; i++)
    for (int64_t j = 0; j < s.dims[1]; j++)
      put(y, i * s.dims[1] + j, j - i == k);
  return 0;
}

const wf_op_def ox_eye_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxEyeLike",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(R, C): only its shape is used")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "dtype", "(R, C)")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "x's type"),
                       WFX_ATTR_DTYPE("dtype", WFX_DTYPES_ALL, "y's type"),
                       WFX_ATTR_INT("k", 0, "the diagonal: j - i = k")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "Ones on a diagonal, zeros elsewhere (ONNX EyeLike)."};
const wf_kernel_def ox_eye_kernel =
    WFX_CPU_REFERENCE("OnnxEyeLike", "T", WFX_DTYPES_ALL, eye_compute);

/* ---- OnnxTopK ------------------------------------------------------------- */

typedef struct kv {
  double v;
  int64_t i;
} kv;

static int kv_largest(const void *a, const void *b) {
  const kv *x = a, *y = b;
  if (x->v != y->v)
    return x->v > y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static int kv_smallest(const void *a, const void *b) {
  const kv *x = a, *y = b;
  if (x->v != y->v)
    return x->v < y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static int topk_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *kt;
  wf_shape s, o;
  wf_tensor *y, *yi;
  int64_t axis, largest;
  int ax;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &kt, NULL, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      wfx_kernel_attr_int(ctx, "largest", &largest, st) ||
      wfx_axis_normalize(axis, s.rank, &ax, NULL, st))
    return wfx_code(st);
  int64_t k = wfx_count(kt) == 1 ? idx_at(kt, 0) : -1, d = s.dims[ax];
  if (k < 0 || k > d)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "K = %lld for a dimension of %lld", (long long)k,
                    (long long)d);
  o = s;
  o.dims[ax] = k;
  if (wfx_kernel_output(ctx, 0, &o, &y, st) ||
      wfx_kernel_output(ctx, 1, &o, &yi, st))
    return wfx_code(st);
  int64_t inner = 1, outer = 1;
  for (int i = ax + 1; i < s.rank; i++)
    inner *= s.dims[i];
  for (int i = 0; i < ax; i++)
    outer *= s.dims[i];
  kv *buf = wfx_host->alloc((size_t)(d ? d : 1) * sizeof *buf, 0);
  if (!buf)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t p = 0; p < outer; p++)
    for (int64_t q = 0; q < inner; q++) {
      for (int64_t j = 0; j < d; j++) {
        buf[j].v = get(x, (p * d + j) * inner + q);
        buf[j].i = j;
      }
      qsort(buf, (size_t)d, sizeof *buf, largest ? kv_largest : kv_smallest);
      for (int64_t j = 0; j < k; j++) {
        put(y, (p * k + j) * inner + q, buf[j].v);
        ((int64_t *)wfx_data(yi))[(p * k + j) * inner + q] = buf[j].i;
      }
    }
  wfx_host->free(buf);
  return 0;
}

const wf_op_def ox_topk_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxTopK",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_FIXED("k", WF_INT64, "(1,) how many")),
    .outputs = WFX_ARGS(WF_ARG_T("values", "T", "x's shape, K along axis"),
                        WF_ARG_FIXED("indices", WF_INT64, "their positions")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
                       WFX_ATTR_INT("axis", -1, "the searched axis"),
                       WFX_ATTR_INT("largest", 1, "1: largest, 0: smallest")),
    .shape_fn = shape_unknown,
    .doc = "The K largest (or smallest) along an axis, sorted, equal values "
           "by position (ONNX TopK)."};
const wf_kernel_def ox_topk_kernel =
    WFX_CPU_REFERENCE("OnnxTopK", "T", WFX_DTYPES_NUMBER, topk_compute);

/* ---- OnnxPadRT ------------------------------------------------------------ */

static int padrt_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *pt, *vt;
  wf_shape s, o;
  wf_tensor *y;
  wf_attr_value m;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &pt, NULL, st) ||
      wfx_kernel_input(ctx, 2, &vt, NULL, st) ||
      wfx_kernel_attr(ctx, "mode", WF_ATTR_STRING, &m, st))
    return wfx_code(st);
  int mode = strcmp(m.u.s, "constant") == 0  ? 0
             : strcmp(m.u.s, "reflect") == 0 ? 1
             : strcmp(m.u.s, "edge") == 0    ? 2
                                             : -1;
  if (mode < 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "mode '%s'", m.u.s);
  if (wfx_count(pt) != 2 * s.rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "%lld pads for rank %d",
                    (long long)wfx_count(pt), s.rank);
  int64_t pb[WF_MAX_RANK], pe[WF_MAX_RANK];
  o = s;
  for (int i = 0; i < s.rank; i++) {
    pb[i] = idx_at(pt, i);
    pe[i] = idx_at(pt, i + s.rank);
    if (mode && (pb[i] < 0 || pe[i] < 0))
      return wfx_fail(st, WF_INVALID_ARGUMENT, "negative pads with mode %s",
                      m.u.s);
    if (mode && s.dims[i] == 0 && pb[i] + pe[i] > 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT, "padding an empty dimension");
    if (mode == 1 && (pb[i] >= s.dims[i] || pe[i] >= s.dims[i]))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "reflect pads must be below the dimension's size");
    o.dims[i] += pb[i] + pe[i];
    if (o.dims[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "pads leave dimension %d negative", i);
  }
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  double value = wfx_count(vt) ? get(vt, 0) : 0;
  int64_t n = wfx_shape_count(&o), xst[WF_MAX_RANK], pos[WF_MAX_RANK] = {0};
  wfx_shape_strides(&s, xst);
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0, inside = 1;
    for (int i = 0; i < s.rank; i++) {
      int64_t j = pos[i] - pb[i], d = s.dims[i];
      if (j < 0 || j >= d) {
        if (mode == 0)
          inside = 0;
        else if (mode == 2)
          j = j < 0 ? 0 : d - 1;
        else {
          int64_t per = 2 * (d - 1);
          j = per ? ((j % per) + per) % per : 0;
          j = j < d ? j : per - j;
        }
      }
      off += j * xst[i];
    }
    put(y, k, inside ? get(x, off) : value);
    for (int i = o.rank - 1; i >= 0; i--) {
      if (++pos[i] < o.dims[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

const wf_op_def ox_padrt_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxPadRT",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_FIXED("pads", WF_INT64,
                                    "(2R,) the starts, then the ends; "
                                    "negative crops (constant mode)"),
                       WF_ARG_T("value", "T", "() or (0,): the constant")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x padded")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
                       WFX_ATTR_REQUIRED("mode", WF_ATTR_STRING,
                                         "constant, reflect or edge")),
    .shape_fn = shape_unknown,
    .doc = "ONNX Pad with its pads known at run time only."};
const wf_kernel_def ox_padrt_kernel =
    WFX_CPU_REFERENCE("OnnxPadRT", "T", WFX_DTYPES_NUMBER, padrt_compute);

/* ---- OnnxLRN -------------------------------------------------------------- */

static int lrn_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape s;
  wf_tensor *y;
  double alpha, beta, bias;
  int64_t size;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_float(ctx, "alpha", &alpha, st) ||
      wfx_kernel_attr_float(ctx, "beta", &beta, st) ||
      wfx_kernel_attr_float(ctx, "bias", &bias, st) ||
      wfx_kernel_attr_int(ctx, "size", &size, st))
    return wfx_code(st);
  if (s.rank < 2 || size < 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "rank >= 2 and size >= 1");
  if (wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  int64_t c = s.dims[1], inner = 1;
  for (int i = 2; i < s.rank; i++)
    inner *= s.dims[i];
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t n = 0; n < s.dims[0]; n++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t q = 0; q < inner; q++) {
        double sq = 0;
        for (int64_t j = ch - lo; j <= ch + hi; j++)
          if (j >= 0 && j < c) {
            double v = get(x, (n * c + j) * inner + q);
            sq += v * v;
          }
        int64_t k = (n * c + ch) * inner + q;
        put(y, k, get(x, k) / pow(bias + alpha / (double)size * sq, beta));
      }
  return 0;
}

const wf_op_def ox_lrn_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxLRN",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(N, C, ...)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x's shape")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
                       WFX_ATTR_FLOAT("alpha", 1e-4, "scale"),
                       WFX_ATTR_FLOAT("beta", 0.75, "exponent"),
                       WFX_ATTR_FLOAT("bias", 1.0, "offset"),
                       WFX_ATTR_INT("size", 1, "channels summed")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "Local response normalisation across channels (ONNX LRN)."};
const wf_kernel_def ox_lrn_kernel =
    WFX_CPU_REFERENCE("OnnxLRN", "T", WFX_DTYPES_FLOAT, lrn_compute);

/* ---- OnnxNonZero and OnnxCompress ---------------------------------------- */

static int nonzero_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape s;
  wf_tensor *y;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  int64_t n = wfx_count(x), nz = 0;
  for (int64_t k = 0; k < n; k++)
    nz += get(x, k) != 0;
  int r = s.rank ? s.rank : 1;
  wf_shape o = {.rank = 2, .dims = {r, nz}};
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t *out = wfx_data(y), pos[WF_MAX_RANK] = {0}, at = 0;
  for (int64_t k = 0; k < n; k++) {
    if (get(x, k) != 0) {
      for (int i = 0; i < r; i++)
        out[i * nz + at] = s.rank ? pos[i] : 0;
      at++;
    }
    for (int i = s.rank - 1; i >= 0; i--) {
      if (++pos[i] < s.dims[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

const wf_op_def ox_nonzero_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxNonZero",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)")),
    .outputs = WFX_ARGS(WF_ARG_FIXED("y", WF_INT64,
                                     "(R, count): the positions of the "
                                     "non-zero elements")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type")),
    .shape_fn = shape_unknown,
    .doc = "The indices of the non-zero elements (ONNX NonZero)."};
const wf_kernel_def ox_nonzero_kernel =
    WFX_CPU_REFERENCE("OnnxNonZero", "T", WFX_DTYPES_ALL, nonzero_compute);

static int compress_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *c;
  wf_shape s, o;
  wf_tensor *y;
  int64_t axis, has_axis;
  int ax = 0;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &c, NULL, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      wfx_kernel_attr_int(ctx, "has_axis", &has_axis, st))
    return wfx_code(st);
  int64_t n = wfx_count(x), nc = wfx_count(c), kept = 0;
  if (has_axis && wfx_axis_normalize(axis, s.rank, &ax, NULL, st))
    return wfx_code(st);
  int64_t d = has_axis ? s.dims[ax] : n;
  for (int64_t k = 0; k < nc && k < d; k++)
    kept += ((const uint8_t *)wfx_data(c))[k] != 0;
  if (!has_axis)
    o = (wf_shape){.rank = 1, .dims = {kept}};
  else {
    o = s;
    o.dims[ax] = kept;
  }
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t inner = 1, outer = 1;
  if (has_axis) {
    for (int i = ax + 1; i < s.rank; i++)
      inner *= s.dims[i];
    for (int i = 0; i < ax; i++)
      outer *= s.dims[i];
  }
  size_t es = wfx_dtype_size(wfx_dtype(x));
  const char *src = wfx_data(x);
  char *dst = wfx_data(y);
  for (int64_t p = 0; p < outer; p++)
    for (int64_t j = 0; j < d && j < nc; j++)
      if (((const uint8_t *)wfx_data(c))[j]) {
        memcpy(dst, src + (size_t)((p * d + j) * inner) * es,
               (size_t)inner * es);
        dst += (size_t)inner * es;
      }
  return 0;
}

const wf_op_def ox_compress_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxCompress",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_FIXED("condition", WF_BOOL, "(L,) which slices")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "the kept slices")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_INT("axis", 0, "the axis"),
                       WFX_ATTR_INT("has_axis", 0, "0: x flattened")),
    .shape_fn = shape_unknown,
    .doc = "The slices of x along axis where condition is true (ONNX "
           "Compress)."};
const wf_kernel_def ox_compress_kernel =
    WFX_CPU_REFERENCE("OnnxCompress", "T", WFX_DTYPES_ALL, compress_compute);

/* ---- OnnxReverseSequence -------------------------------------------------- */

static int revseq_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *lens;
  wf_shape s;
  wf_tensor *y;
  int64_t ta, ba;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &lens, NULL, st) ||
      wfx_kernel_attr_int(ctx, "time_axis", &ta, st) ||
      wfx_kernel_attr_int(ctx, "batch_axis", &ba, st))
    return wfx_code(st);
  if (s.rank < 2 || (ta != 0 && ta != 1) || ba != 1 - ta ||
      wfx_count(lens) != s.dims[ba])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "time and batch axes must be 0 and 1 and lengths one per "
                    "batch entry");
  if (wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  int64_t inner = 1, xst[WF_MAX_RANK];
  for (int i = 2; i < s.rank; i++)
    inner *= s.dims[i];
  wfx_shape_strides(&s, xst);
  size_t es = wfx_dtype_size(wfx_dtype(x));
  for (int64_t b = 0; b < s.dims[ba]; b++) {
    int64_t L = idx_at(lens, b);
    if (L < 0 || L > s.dims[ta])
      return wfx_fail(st, WF_INVALID_ARGUMENT, "length %lld", (long long)L);
    for (int64_t t = 0; t < s.dims[ta]; t++) {
      int64_t from = t < L ? L - 1 - t : t;
      int64_t dst = t * xst[ta] + b * xst[ba],
              src = from * xst[ta] + b * xst[ba];
      memcpy((char *)wfx_data(y) + (size_t)dst * es,
             (const char *)wfx_data(x) + (size_t)src * es, (size_t)inner * es);
    }
  }
  return 0;
}

const wf_op_def ox_revseq_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxReverseSequence",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(T, B, ...) or (B, T, ...)"),
                       WF_ARG_FIXED("lengths", WF_INT64, "(B,)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x's shape")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_INT("time_axis", 0, "0 or 1"),
                       WFX_ATTR_INT("batch_axis", 1, "1 or 0")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "Each batch entry's first lengths[b] steps reversed (ONNX "
           "ReverseSequence)."};
const wf_kernel_def ox_revseq_kernel = WFX_CPU_REFERENCE(
    "OnnxReverseSequence", "T", WFX_DTYPES_ALL, revseq_compute);

/* ---- OnnxEinsum ----------------------------------------------------------- */

#define EIN_MAX 2
#define EIN_LABELS 52

typedef struct ein {
  int nin;
  int rank[EIN_MAX];
  int lab[EIN_MAX][WF_MAX_RANK]; /* label ids per operand dim */
  int out[WF_MAX_RANK], nout;
  int nlab;                      /* labels in use: 0 .. nlab-1 */
  int64_t size[EIN_LABELS + WF_MAX_RANK];
} ein;

static int label_id(char c) {
  return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + c - 'A'
                                                               : -1;
}

/* Parses eq for operands of the given ranks; ellipsis dims get the ids
 * EIN_LABELS + k, aligned right. */
static int ein_parse(const char *eq, int nin, const int *ranks, ein *e,
                     wf_status *st) {
  memset(e, 0, sizeof *e);
  e->nin = nin;
  const char *p = eq, *arrow = strstr(eq, "->");
  int seen[EIN_LABELS + WF_MAX_RANK] = {0}, ell = 0;
  for (int k = 0; k < nin; k++) {
    int labs[WF_MAX_RANK + 8], nl = 0, ellpos = -1;
    while (*p == ' ')
      p++;
    while (*p && *p != ',' && (!arrow || p < arrow)) {
      if (*p == '.') {
        if (strncmp(p, "...", 3) != 0)
          return wfx_fail(st, WF_INVALID_ARGUMENT, "a lone '.' in '%s'", eq);
        ellpos = nl;
        p += 3;
        continue;
      }
      if (*p != ' ') {
        int id = label_id(*p);
        if (id < 0 || nl == WF_MAX_RANK)
          return wfx_fail(st, WF_INVALID_ARGUMENT, "bad equation '%s'", eq);
        labs[nl++] = id;
      }
      p++;
    }
    int ne = ellpos >= 0 ? ranks[k] - nl : 0;
    if (ne < 0 || (ellpos < 0 && nl != ranks[k]))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "operand %d has rank %d; '%s' says otherwise", k,
                      ranks[k], eq);
    ell = ne > ell ? ne : ell;
    int r = 0;
    for (int i = 0; i < nl + (ellpos >= 0); i++) {
      if (i == ellpos || (ellpos == nl && i == nl)) {
        for (int j = 0; j < ne; j++)
          e->lab[k][r++] = EIN_LABELS + (WF_MAX_RANK - ne + j);
        if (i == nl)
          break;
      }
      if (i < nl)
        e->lab[k][r++] = labs[i];
    }
    e->rank[k] = ranks[k];
    if (*p == ',')
      p++;
  }
  for (int k = 0; k < nin; k++)
    for (int i = 0; i < e->rank[k]; i++)
      seen[e->lab[k][i]]++;
  if (arrow) {
    p = arrow + 2;
    while (*p) {
      if (*p == '.' && strncmp(p, "...", 3) == 0) {
        for (int j = 0; j < ell; j++)
          e->out[e->nout++] = EIN_LABELS + (WF_MAX_RANK - ell + j);
        p += 3;
        continue;
      }
      if (*p != ' ') {
        int id = label_id(*p);
        if (id < 0 || !seen[id] || e->nout == WF_MAX_RANK)
          return wfx_fail(st, WF_INVALID_ARGUMENT, "bad output in '%s'", eq);
        e->out[e->nout++] = id;
      }
      p++;
    }
  } else { /* implicit: the ellipsis, then labels seen once, sorted */
    for (int j = 0; j < ell; j++)
      e->out[e->nout++] = EIN_LABELS + (WF_MAX_RANK - ell + j);
    for (int id = 0; id < EIN_LABELS; id++)
      if (seen[id] == 1 && e->nout < WF_MAX_RANK)
        e->out[e->nout++] = id;
  }
  return 0;
}

static int einsum_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x[EIN_MAX];
  wf_shape s[EIN_MAX], o;
  wf_attr_value eqv;
  wf_tensor *y;
  ein e;
  int ranks[EIN_MAX];
  (void)state;
  int nin = wfx_host->kernel_num_inputs(ctx);
  if (nin < 1 || nin > EIN_MAX)
    return wfx_fail(st, WF_UNIMPLEMENTED, "einsum of %d operands (1 or 2)",
                    nin);
  for (int k = 0; k < nin; k++) {
    if (wfx_kernel_input(ctx, k, &x[k], &s[k], st))
      return wfx_code(st);
    ranks[k] = s[k].rank;
  }
  if (wfx_kernel_attr(ctx, "equation", WF_ATTR_STRING, &eqv, st) ||
      ein_parse(eqv.u.s, nin, ranks, &e, st))
    return wfx_code(st);
  int64_t size[EIN_LABELS + WF_MAX_RANK];
  for (int i = 0; i < EIN_LABELS + WF_MAX_RANK; i++)
    size[i] = -1;
  for (int k = 0; k < nin; k++)
    for (int i = 0; i < s[k].rank; i++) {
      int id = e.lab[k][i];
      int64_t d = s[k].dims[i];
      if (size[id] < 0 || size[id] == 1)
        size[id] = d;
      else if (d != size[id] && d != 1)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "a label has sizes %lld and %lld",
                        (long long)size[id], (long long)d);
    }
  /* the loop runs over the output labels, then the summed ones */
  int all[EIN_LABELS + WF_MAX_RANK], na = 0, inout[EIN_LABELS + WF_MAX_RANK];
  memset(inout, 0, sizeof inout);
  o.rank = e.nout;
  for (int i = 0; i < e.nout; i++) {
    all[na++] = e.out[i];
    inout[e.out[i]] = 1;
    o.dims[i] = size[e.out[i]];
  }
  for (int id = 0; id < EIN_LABELS + WF_MAX_RANK; id++)
    if (size[id] >= 0 && !inout[id])
      all[na++] = id;
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t stride[EIN_MAX][EIN_LABELS + WF_MAX_RANK];
  memset(stride, 0, sizeof stride);
  for (int k = 0; k < nin; k++) {
    int64_t str[WF_MAX_RANK];
    wfx_shape_strides(&s[k], str);
    for (int i = 0; i < s[k].rank; i++)
      if (s[k].dims[i] != 1)
        stride[k][e.lab[k][i]] += str[i]; /* repeated labels: diagonal */
  }
  int64_t nout = wfx_shape_count(&o), nsum = 1;
  for (int i = e.nout; i < na; i++)
    nsum *= size[all[i]];
  int64_t pos[EIN_LABELS + WF_MAX_RANK] = {0};
  for (int64_t oi = 0; oi < nout; oi++) {
    double acc = 0;
    for (int i = e.nout; i < na; i++)
      pos[i] = 0;
    for (int64_t si = 0; si < nsum; si++) {
      double prod = 1;
      for (int k = 0; k < nin; k++) {
        int64_t off = 0;
        for (int i = 0; i < na; i++)
          off += pos[i] * stride[k][all[i]];
        prod *= get(x[k], off);
      }
      acc += prod;
      for (int i = na - 1; i >= e.nout; i--) {
        if (++pos[i] < size[all[i]])
          break;
        pos[i] = 0;
      }
    }
    put(y, oi, acc);
    for (int i = e.nout - 1; i >= 0; i--) {
      if (++pos[i] < size[all[i]])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

const wf_op_def ox_einsum_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxEinsum",
    .inputs = WFX_ARGS(WF_ARG_LIST("inputs", "T", "N", "1 or 2 operands")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "as the equation says")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
        WFX_ATTR_INT("N", 1, "number of operands"),
        WFX_ATTR_REQUIRED("equation", WF_ATTR_STRING,
                          "NumPy's einsum notation, with '...'")),
    .shape_fn = shape_unknown,
    .doc = "Einstein summation, in double (ONNX Einsum)."};
const wf_kernel_def ox_einsum_kernel =
    WFX_CPU_REFERENCE("OnnxEinsum", "T", WFX_DTYPES_NUMBER, einsum_compute);

/* ---- OnnxWindow ----------------------------------------------------------- */

static int window_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *nt;
  wf_tensor *y;
  wf_attr_value kind;
  int64_t periodic;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &nt, NULL, st) ||
      wfx_kernel_attr(ctx, "kind", WF_ATTR_STRING, &kind, st) ||
      wfx_kernel_attr_int(ctx, "periodic", &periodic, st))
    return wfx_code(st);
  int64_t n = wfx_count(nt) == 1 ? idx_at(nt, 0) : -1;
  if (n < 0 || n > ((int64_t)1 << 30))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "a window of %lld",
                    (long long)n);
  wf_shape o = {.rank = 1, .dims = {n}};
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  double N = periodic ? (double)n : (double)(n - 1);
  for (int64_t k = 0; k < n; k++) {
    double t = N > 0 ? 2 * M_PI * k / N : 0, v;
    if (strcmp(kind.u.s, "hann") == 0)
      v = 0.5 - 0.5 * cos(t);
    else if (strcmp(kind.u.s, "hamming") == 0)
      v = 25.0 / 46 - 21.0 / 46 * cos(t);
    else
      v = 0.42 - 0.5 * cos(t) + 0.08 * cos(2 * t);
    put(y, k, v);
  }
  return 0;
}

const wf_op_def ox_window_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxWindow",
    .inputs = WFX_ARGS(WF_ARG_T("size", "Tind", "() the window's length")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "dtype", "(size,)")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("Tind", INDEX_TYPES, "size's type"),
        WFX_ATTR_DTYPE("dtype", WFX_DTYPES_NUMBER, "y's type"),
        WFX_ATTR_REQUIRED("kind", WF_ATTR_STRING, "hann, hamming or blackman"),
        WFX_ATTR_INT("periodic", 1, "1: periodic, 0: symmetric")),
    .shape_fn = shape_unknown,
    .doc = "The Hann, Hamming or Blackman window (ONNX HannWindow, "
           "HammingWindow, BlackmanWindow)."};
const wf_kernel_def ox_window_kernel =
    WFX_CPU_REFERENCE("OnnxWindow", "Tind", INDEX_TYPES, window_compute);

/* ---- OnnxDet -------------------------------------------------------------- */

static int det_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape s, o;
  wf_tensor *y;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  if (s.rank < 2 || s.dims[s.rank - 1] != s.dims[s.rank - 2])
    return wfx_fail(st, WF_INVALID_ARGUMENT, "square matrices (..., M, M)");
  o = s;
  o.rank -= 2;
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t m = s.dims[s.rank - 1], nb = wfx_count(y);
  double *a = wfx_host->alloc((size_t)(m > 0 ? m * m : 1) * sizeof(double), 0);
  if (!a)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t b = 0; b < nb; b++) {
    for (int64_t k = 0; k < m * m; k++)
      a[k] = get(x, b * m * m + k);
    double det = 1;
    for (int64_t c = 0; c < m && det != 0; c++) { /* partial pivoting */
      int64_t p = c;
      for (int64_t r = c + 1; r < m; r++)
        if (fabs(a[r * m + c]) > fabs(a[p * m + c]))
          p = r;
      if (a[p * m + c] == 0) {
        det = 0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < m; k++) {
          double t = a[c * m + k];
          a[c * m + k] = a[p * m + k];
          a[p * m + k] = t;
        }
        det = -det;
      }
      det *= a[c * m + c];
      for (int64_t r = c + 1; r < m; r++) {
        double f = a[r * m + c] / a[c * m + c];
        for (int64_t k = c; k < m; k++)
          a[r * m + k] -= f * a[c * m + k];
      }
    }
    put(y, b, det);
  }
  wfx_host->free(a);
  return 0;
}

const wf_op_def ox_det_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxDet",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(..., M, M)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(...)")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type")),
    .shape_fn = shape_unknown,
    .doc = "Determinants by LU decomposition in double (ONNX Det)."};
const wf_kernel_def ox_det_kernel =
    WFX_CPU_REFERENCE("OnnxDet", "T", WFX_DTYPES_FLOAT, det_compute);
