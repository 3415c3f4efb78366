/* plugins/importers/onnx/onnx_kernels.c — the ops the ONNX importer
 * registers for ONNX semantics that weft's op plugins do not have, each
 * with a reference CPU kernel (inference only: no gradients):
 *   OnnxMath  elementwise functions of C's math library by name (erf,
 *             floor, ceil, round half to even, sign, trigonometric and
 *             hyperbolic functions);
 *   OnnxPad   Pad's "reflect" and "edge" modes;
 * and those of onnx_kernels_index.c, onnx_kernels_more.c, onnx_resize.c,
 * onnx_kernels_extra.c, onnx_conv.c, onnx_rnn.c and onnx_fuse.c.
 * They are not general weft ops: only the importer builds them. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- OnnxMath ---------------------------------------------------------- */

typedef double math_fn(double);

static double sign_fn(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }
static double round_fn(double x) { return nearbyint(x); } /* half to even */

static const struct {
  const char *name;
  math_fn *fn;
} math_fns[] = {{"erf", erf},     {"floor", floor}, {"ceil", ceil},
                {"round", round_fn}, {"sign", sign_fn}, {"sin", sin},
                {"cos", cos},     {"tan", tan},     {"asin", asin},
                {"acos", acos},   {"atan", atan},   {"sinh", sinh},
                {"cosh", cosh},   {"asinh", asinh}, {"acosh", acosh},
                {"atanh", atanh}};

static math_fn *math_lookup(const char *name) {
  for (size_t i = 0; i < sizeof math_fns / sizeof math_fns[0]; i++)
    if (strcmp(math_fns[i].name, name) == 0)
      return math_fns[i].fn;
  return NULL;
}

static int math_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  if (wfx_shape_attr(ctx, "fn", WF_ATTR_STRING, &v, st))
    return wfx_code(st);
  if (!math_lookup(v.u.s))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "unknown function '%s'", v.u.s);
  return wfx_shape_like_input0(ctx, st);
}

static int math_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_attr_value v;
  (void)state;
  if (wfx_kernel_attr(ctx, "fn", WF_ATTR_STRING, &v, st) ||
      wfx_map_io(ctx, 1, &x, &y, st))
    return wfx_code(st);
  math_fn *fn = math_lookup(v.u.s);
  if (!fn)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "unknown function '%s'", v.u.s);
  WFX_DISPATCH_FLOAT(wfx_dtype(x), st,
                     WFX_MAP1(T, y, x, a, (T)fn((double)a)));
  return 0;
}

static const wf_op_def math_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxMath",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...) any shape")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(...) x's shape")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
        WFX_ATTR_REQUIRED("fn", WF_ATTR_STRING,
                          "erf, floor, ceil, round (half to even), sign, "
                          "sin, cos, tan, asin, acos, atan, sinh, cosh, "
                          "asinh, acosh, atanh")),
    .shape_fn = math_shape,
    .doc = "y = fn(x) elementwise, computed in double (ONNX's unary math "
           "ops; built by the ONNX importer)."};

static const wf_kernel_def math_kernel =
    WFX_CPU_REFERENCE("OnnxMath", "T", WFX_DTYPES_FLOAT, math_compute);

/* ---- OnnxPad ----------------------------------------------------------- */

static int pad_attrs(const int64_t *pads, int64_t np, const char *mode,
                     int rank, wf_status *st) {
  if (np != 2 * rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "pads has %lld entries for rank %d (2 per dimension)",
                    (long long)np, rank);
  for (int64_t i = 0; i < np; i++)
    if (pads[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT, "pads[%lld] is negative",
                      (long long)i);
  if (strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "mode '%s' (reflect or edge)", mode);
  return 0;
}

static int pad_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  wf_attr_value m;
  const int64_t *pads;
  int64_t np;
  if (wfx_shape_input(ctx, 0, NULL, &s, st) ||
      wfx_shape_attr_ints(ctx, "pads", &pads, &np, st) ||
      wfx_shape_attr(ctx, "mode", WF_ATTR_STRING, &m, st))
    return wfx_code(st);
  if (s.rank >= 0) {
    if (pad_attrs(pads, np, m.u.s, s.rank, st))
      return wfx_code(st);
    for (int i = 0; i < s.rank; i++)
      if (s.dims[i] >= 0)
        s.dims[i] += pads[2 * i] + pads[2 * i + 1];
  }
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

/* The input index an output index i of a dimension of size d maps to. */
static int64_t pad_src(int64_t i, int64_t before, int64_t d, int reflect) {
  int64_t j = i - before;
  if (!reflect)
    return j < 0 ? 0 : j >= d ? d - 1 : j;
  if (d == 1)
    return 0;
  int64_t period = 2 * (d - 1);
  j %= period;
  if (j < 0)
    j += period;
  return j < d ? j : period - j;
}

static int pad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s, o;
  wf_attr_value m;
  const int64_t *pads;
  int64_t np;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_ints(ctx, "pads", &pads, &np, st) ||
      wfx_kernel_attr(ctx, "mode", WF_ATTR_STRING, &m, st) ||
      pad_attrs(pads, np, m.u.s, s.rank, st))
    return wfx_code(st);
  int reflect = strcmp(m.u.s, "reflect") == 0;
  o = s;
  for (int i = 0; i < s.rank; i++) {
    if (s.dims[i] == 0 && pads[2 * i] + pads[2 * i + 1] > 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dimension %d is empty: nothing to %s", i, m.u.s);
    if (reflect && (pads[2 * i] >= s.dims[i] || pads[2 * i + 1] >= s.dims[i]))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "reflect pads of dimension %d must be below its size "
                      "%lld",
                      i, (long long)s.dims[i]);
    o.dims[i] += pads[2 * i] + pads[2 * i + 1];
  }
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t n = wfx_shape_count(&o), ist[WF_MAX_RANK];
  size_t es = wfx_dtype_size(wfx_dtype(x));
  wfx_shape_strides(&s, ist);
  const char *src = wfx_data(x);
  char *dst = wfx_data(y);
  int64_t pos[WF_MAX_RANK] = {0};
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int i = 0; i < s.rank; i++)
      off += pad_src(pos[i], pads[2 * i], s.dims[i], reflect) * ist[i];
    memcpy(dst + k * es, src + off * es, es);
    for (int i = s.rank - 1; i >= 0; i--) {
      if (++pos[i] < o.dims[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

static const wf_op_def pad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxPad",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(D0, ..., DR-1)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T",
                                 "(D0 + pads[0] + pads[1], ..., DR-1 + ...)")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
        WFX_ATTR_REQUIRED("pads", WF_ATTR_LIST | WF_ATTR_INT,
                          "(before, after) per dimension, 2R entries"),
        WFX_ATTR_REQUIRED("mode", WF_ATTR_STRING,
                          "reflect (mirror without the edge) or edge "
                          "(repeat the edge)")),
    .shape_fn = pad_shape,
    .doc = "ONNX Pad's reflect and edge modes (built by the ONNX importer)."};

static const wf_kernel_def pad_kernel =
    WFX_CPU_REFERENCE("OnnxPad", "T", WFX_DTYPES_ALL, pad_compute);

const wf_op_def *const ox_plugin_ops[] = {
    &math_op,        &pad_op,          &ox_gather_el_op,    &ox_trilu_op,
    &ox_range_op,    &ox_mod_op,       &ox_cumsum_op,       &ox_reduce_sum_op,
    &ox_axes_reshape_op, &ox_slice_op, &ox_nll_op, &ox_resize_op,
    &ox_conv_op, &ox_conv_transpose_op, &ox_pool_op, &ox_pick_op,
    &ox_layer_norm_op, &ox_cast_op, &ox_scatter_el_op,
    &ox_gather_nd_op, &ox_scatter_nd_op, &ox_eye_op, &ox_topk_op,
    &ox_padrt_op, &ox_lrn_op, &ox_nonzero_op, &ox_compress_op, &ox_revseq_op,
    &ox_einsum_op, &ox_window_op, &ox_det_op, &ox_rnn_op, &ox_unpool_op,
    &ox_nms_op, &ox_grid_op, &ox_unique_op, &ox_tfidf_op, &ox_dft_op,
    &ox_dropout_op, NULL};
const wf_kernel_def *const ox_plugin_kernels[] = {
    &math_kernel,        &pad_kernel,      &ox_gather_el_kernel,
    &ox_trilu_kernel,    &ox_range_kernel, &ox_mod_kernel,
    &ox_cumsum_kernel,   &ox_reduce_sum_kernel, &ox_axes_reshape_kernel,
    &ox_slice_kernel,    &ox_nll_kernel, &ox_resize_kernel,
    &ox_conv_kernel, &ox_conv_transpose_kernel, &ox_pool_kernel,
    &ox_pick_kernel, &ox_layer_norm_kernel,
    &ox_cast_kernel, &ox_scatter_el_kernel, &ox_gather_nd_kernel,
    &ox_scatter_nd_kernel, &ox_eye_kernel, &ox_topk_kernel, &ox_padrt_kernel,
    &ox_lrn_kernel, &ox_nonzero_kernel, &ox_compress_kernel,
    &ox_revseq_kernel, &ox_einsum_kernel, &ox_window_kernel, &ox_det_kernel,
    &ox_rnn_kernel, &ox_unpool_kernel, &ox_nms_kernel, &ox_grid_kernel,
    &ox_unique_kernel, &ox_tfidf_kernel, &ox_dft_kernel, &ox_dropout_kernel, NULL};
