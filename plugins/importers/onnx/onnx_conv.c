/* plugins/importers/onnx/onnx_conv.c — the importer's N-d window ops for
 * what weft's 2-d Conv2D, MaxPool and AvgPool do not cover: OnnxConv (any
 * number of spatial dims, groups, dilations, asymmetric pads),
 * OnnxConvTranspose (ONNX ConvTranspose: groups, dilations, pads,
 * output_padding) and OnnxPool (max with its Indices output, average with
 * or without the padding counted, dilations, ceil_mode). Layout NC...
 * (channels first) as ONNX. Reference CPU kernels in double, inference
 * only. Pads are given explicitly: the importer resolves auto_pad. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "onnx_internal.h"

#define MAXSP (WF_MAX_RANK - 2)

typedef struct geo {
  int nsp;
  int64_t in[MAXSP], out[MAXSP], k[MAXSP], s[MAXSP], d[MAXSP], pb[MAXSP],
      pe[MAXSP];
} geo;

/* Reads strides, dilations and pads (nsp each, pads 2 nsp) of a kernel. */
static int read_geo(const wf_kernel_ctx *ctx, int nsp, geo *g, wf_status *st) {
  const int64_t *v[3];
  int64_t n[3];
  if (wfx_kernel_attr_ints(ctx, "strides", &v[0], &n[0], st) ||
      wfx_kernel_attr_ints(ctx, "dilations", &v[1], &n[1], st) ||
      wfx_kernel_attr_ints(ctx, "pads", &v[2], &n[2], st))
    return wfx_code(st);
  if (n[0] != nsp || n[1] != nsp || n[2] != 2 * nsp)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "strides, dilations and pads need %d, %d and %d entries "
                    "for %d spatial dimensions",
                    nsp, nsp, 2 * nsp, nsp);
  g->nsp = nsp;
  for (int i = 0; i < nsp; i++) {
    g->s[i] = v[0][i];
    g->d[i] = v[1][i];
    g->pb[i] = v[2][i];
    g->pe[i] = v[2][i + nsp];
    if (g->s[i] < 1 || g->d[i] < 1 || g->pb[i] < 0 || g->pe[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "strides and dilations must be positive, pads not "
                      "negative");
  }
  return 0;
}

static int64_t count_of(const int64_t *d, int n) {
  int64_t c = 1;
  for (int i = 0; i < n; i++)
    c *= d[i];
  return c;
}

/* Advances an odometer over dims; 0 when it wrapped around. */
static int next_pos(int64_t *pos, const int64_t *dims, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (++pos[i] < dims[i])
      return 1;
    pos[i] = 0;
  }
  return 0;
}

/* ---- OnnxConv ------------------------------------------------------------- */

static int conv_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *w, *b;
  wf_shape xs, ws, bs, ys;
  wf_tensor *y;
  int64_t group;
  geo g;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &w, &ws, st) ||
      wfx_kernel_input(ctx, 2, &b, &bs, st) ||
      wfx_kernel_attr_int(ctx, "group", &group, st))
    return wfx_code(st);
  if (xs.rank < 3 || ws.rank != xs.rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input (N, C, ...) and filter (M, C/group, ...) need the "
                    "same rank >= 3");
  int nsp = xs.rank - 2;
  if (read_geo(ctx, nsp, &g, st))
    return wfx_code(st);
  int64_t n = xs.dims[0], c = xs.dims[1], m = ws.dims[0];
  if (group < 1 || c % group || m % group || ws.dims[1] != c / group ||
      (bs.rank == 1 && bs.dims[0] != m && bs.dims[0] != 0))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "channels: input %lld, filter (%lld, %lld), group %lld "
                    "disagree",
                    (long long)c, (long long)m, (long long)ws.dims[1],
                    (long long)group);
  ys.rank = xs.rank;
  ys.dims[0] = n;
  ys.dims[1] = m;
  for (int i = 0; i < nsp; i++) {
    g.in[i] = xs.dims[2 + i];
    g.k[i] = ws.dims[2 + i];
    int64_t span = g.in[i] + g.pb[i] + g.pe[i] - (g.k[i] - 1) * g.d[i] - 1;
    g.out[i] = span < 0 ? 0 : span / g.s[i] + 1;
    ys.dims[2 + i] = g.out[i];
  }
  if (wfx_kernel_output(ctx, 0, &ys, &y, st))
    return wfx_code(st);
  int64_t cg = c / group, mg = m / group, nin = count_of(g.in, nsp),
          nk = count_of(g.k, nsp), nout = count_of(g.out, nsp);
  int hasb = bs.rank == 1 && bs.dims[0] == m;
  WFX_DISPATCH_FLOAT(wfx_dtype(x), st, {
    const T *xp = wfx_data(x), *wp = wfx_data(w), *bp = wfx_data(b);
    T *yp = wfx_data(y);
    for (int64_t in = 0; in < n; in++)
      for (int64_t oc = 0; oc < m; oc++) {
        int64_t gi = oc / mg;
        int64_t op[MAXSP] = {0};
        for (int64_t o = 0; o < nout; o++, next_pos(op, g.out, nsp)) {
          double acc = hasb ? (double)bp[oc] : 0;
          int64_t kp[MAXSP] = {0};
          for (int64_t kk = 0; kk < nk; kk++, next_pos(kp, g.k, nsp)) {
            int64_t off = 0, inside = 1;
            for (int i = 0; i < nsp && inside; i++) {
              int64_t p = op[i] * g.s[i] + kp[i] * g.d[i] - g.pb[i];
              inside = p >= 0 && p < g.in[i];
              off = off * g.in[i] + p;
            }
            if (!inside)
              continue;
            for (int64_t ic = 0; ic < cg; ic++)
              acc += (double)xp[(in * c + gi * cg + ic) * nin + off] *
                     (double)wp[(oc * cg + ic) * nk + kk];
          }
          yp[(in * m + oc) * nout + o] = (T)acc;
        }
      }
  });
  return 0;
}

/* ---- OnnxConvTranspose ---------------------------------------------------- */

static int convt_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *w, *b;
  wf_shape xs, ws, bs, ys;
  wf_tensor *y;
  int64_t group, nop;
  const int64_t *opad;
  geo g;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &w, &ws, st) ||
      wfx_kernel_input(ctx, 2, &b, &bs, st) ||
      wfx_kernel_attr_int(ctx, "group", &group, st) ||
      wfx_kernel_attr_ints(ctx, "output_padding", &opad, &nop, st))
    return wfx_code(st);
  if (xs.rank < 3 || ws.rank != xs.rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input (N, C, ...) and filter (C, M/group, ...) need the "
                    "same rank >= 3");
  int nsp = xs.rank - 2;
  if (read_geo(ctx, nsp, &g, st))
    return wfx_code(st);
  if (nop != nsp)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "output_padding needs %d entries", nsp);
  int64_t n = xs.dims[0], c = xs.dims[1], mg = ws.dims[1];
  if (group < 1 || c % group || ws.dims[0] != c)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "channels: input %lld, filter (%lld, %lld), group %lld "
                    "disagree",
                    (long long)c, (long long)ws.dims[0], (long long)mg,
                    (long long)group);
  int64_t m = mg * group, cg = c / group;
  ys.rank = xs.rank;
  ys.dims[0] = n;
  ys.dims[1] = m;
  for (int i = 0; i < nsp; i++) {
    g.in[i] = xs.dims[2 + i];
    g.k[i] = ws.dims[2 + i];
    g.out[i] = g.s[i] * (g.in[i] - 1) + opad[i] + (g.k[i] - 1) * g.d[i] + 1 -
               g.pb[i] - g.pe[i];
    if (g.out[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "pads leave spatial dimension %d negative", i);
    ys.dims[2 + i] = g.out[i];
  }
  if (bs.rank == 1 && bs.dims[0] != m && bs.dims[0] != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "bias has %lld values for %lld "
                    "output channels", (long long)bs.dims[0], (long long)m);
  if (wfx_kernel_output(ctx, 0, &ys, &y, st))
    return wfx_code(st);
  int64_t nin = count_of(g.in, nsp), nk = count_of(g.k, nsp),
          nout = count_of(g.out, nsp);
  int hasb = bs.rank == 1 && bs.dims[0] == m;
  WFX_DISPATCH_FLOAT(wfx_dtype(x), st, {
    const T *xp = wfx_data(x), *wp = wfx_data(w), *bp = wfx_data(b);
    T *yp = wfx_data(y);
    double *acc = wfx_host->alloc((size_t)(nout ? nout : 1) * sizeof(double),
                                  0);
    if (!acc)
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    for (int64_t in = 0; in < n; in++)
      for (int64_t oc = 0; oc < m; oc++) {
        int64_t gi = oc / mg, om = oc % mg;
        for (int64_t o = 0; o < nout; o++)
          acc[o] = hasb ? (double)bp[oc] : 0;
        for (int64_t ic = 0; ic < cg; ic++) {
          int64_t ch = gi * cg + ic;
          int64_t ip[MAXSP] = {0};
          for (int64_t i = 0; i < nin; i++, next_pos(ip, g.in, nsp)) {
            double xv = (double)xp[(in * c + ch) * nin + i];
            int64_t kp[MAXSP] = {0};
            for (int64_t kk = 0; kk < nk; kk++, next_pos(kp, g.k, nsp)) {
              int64_t off = 0, inside = 1;
              for (int d = 0; d < nsp && inside; d++) {
                int64_t p = ip[d] * g.s[d] + kp[d] * g.d[d] - g.pb[d];
                inside = p >= 0 && p < g.out[d];
                off = off * g.out[d] + p;
              }
              if (inside)
                acc[off] += xv * (double)wp[(ch * mg + om) * nk + kk];
            }
          }
        }
        for (int64_t o = 0; o < nout; o++)
          yp[(in * m + oc) * nout + o] = (T)acc[o];
      }
    wfx_host->free(acc);
  });
  return 0;
}

/* ---- OnnxPool ------------------------------------------------------------- */

static int pool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs, ys;
  wf_tensor *y, *ind = NULL;
  wf_attr_value kind;
  const int64_t *kv;
  int64_t nkv, ceil_mode, include, p, order;
  geo g;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_attr(ctx, "kind", WF_ATTR_STRING, &kind, st) ||
      wfx_kernel_attr_ints(ctx, "kernel_shape", &kv, &nkv, st) ||
      wfx_kernel_attr_int(ctx, "ceil_mode", &ceil_mode, st) ||
      wfx_kernel_attr_int(ctx, "count_include_pad", &include, st) ||
      wfx_kernel_attr_int(ctx, "p", &p, st) ||
      wfx_kernel_attr_int(ctx, "storage_order", &order, st))
    return wfx_code(st);
  int nsp = xs.rank - 2;
  if (nsp < 1 || nkv != nsp)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "a %lld-d kernel for an input of rank %d", (long long)nkv,
                    xs.rank);
  if (read_geo(ctx, nsp, &g, st))
    return wfx_code(st);
  int max = strcmp(kind.u.s, "max") == 0, lp = strcmp(kind.u.s, "lp") == 0;
  ys = xs;
  for (int i = 0; i < nsp; i++) {
    g.in[i] = xs.dims[2 + i];
    g.k[i] = kv[i];
    if (g.k[i] < 1)
      return wfx_fail(st, WF_INVALID_ARGUMENT, "kernel_shape must be "
                      "positive");
    int64_t span = g.in[i] + g.pb[i] + g.pe[i] - (g.k[i] - 1) * g.d[i] - 1;
    if (span < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "the window is larger than spatial dimension %d", i);
    g.out[i] = (ceil_mode ? (span + g.s[i] - 1) / g.s[i] : span / g.s[i]) + 1;
    /* a window must start inside the input or its leading pad */
    if (ceil_mode && (g.out[i] - 1) * g.s[i] >= g.in[i] + g.pb[i])
      g.out[i]--;
    ys.dims[2 + i] = g.out[i];
  }
  if (wfx_kernel_output(ctx, 0, &ys, &y, st))
    return wfx_code(st);
  if (wfx_host->kernel_num_outputs(ctx) > 1 &&
      wfx_kernel_output(ctx, 1, &ys, &ind, st))
    return wfx_code(st);
  int64_t nc = xs.dims[0] * xs.dims[1], nin = count_of(g.in, nsp),
          nk = count_of(g.k, nsp), nout = count_of(g.out, nsp);
  WFX_DISPATCH_NUMBER(wfx_dtype(x), st, {
    const T *xp = wfx_data(x);
    T *yp = wfx_data(y);
    int64_t *ip = ind ? wfx_data(ind) : NULL;
    for (int64_t q = 0; q < nc; q++) {
      int64_t op[MAXSP] = {0};
      for (int64_t o = 0; o < nout; o++, next_pos(op, g.out, nsp)) {
        double acc = max ? -INFINITY : 0;
        int64_t cnt = 0, best = -1;
        int64_t kp[MAXSP] = {0};
        int first = 1;
        for (int64_t kk = 0; kk < nk; kk++, next_pos(kp, g.k, nsp)) {
          int64_t off = 0, inside = 1, inpad = 1;
          for (int i = 0; i < nsp; i++) {
            int64_t pos = op[i] * g.s[i] + kp[i] * g.d[i] - g.pb[i];
            inside &= pos >= 0 && pos < g.in[i];
            inpad &= pos >= -g.pb[i] && pos < g.in[i] + g.pe[i];
            off = off * g.in[i] + pos;
          }
          if (!inside) {
            cnt += include && inpad;
            continue;
          }
          double v = (double)xp[q * nin + off];
          cnt++;
          if (max) {
            if (first || v > acc) {
              acc = v;
              best = q * nin + off;
              if (order) { /* the spatial index in column-major order */
                int64_t col = 0;
                for (int i = nsp - 1; i >= 0; i--)
                  col = col * g.in[i] +
                        (op[i] * g.s[i] + kp[i] * g.d[i] - g.pb[i]);
                best = q * nin + col;
              }
            }
            first = 0;
          } else if (lp)
            acc += pow(fabs(v), (double)p);
          else
            acc += v;
        }
        double r = max  ? acc
                   : lp ? pow(acc, 1.0 / (double)p)
                        : (cnt ? acc / (double)cnt : NAN);
        yp[q * nout + o] = (T)r;
        if (ip)
          ip[q * nout + o] = best;
      }
    }
  });
  return 0;
}

static int unknown_spatial(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  for (int i = 1; i < s.rank; i++)
    s.dims[i] = -1;
  for (int i = 0; i < wfx_host->shape_num_outputs(ctx); i++)
    wfx_host->shape_set_output(ctx, i, &s);
  return 0;
}

#define GEO_ATTRS                                                              \
  WFX_ATTR_REQUIRED("strides", WF_ATTR_LIST | WF_ATTR_INT,                     \
                    "per spatial dimension"),                                  \
      WFX_ATTR_REQUIRED("dilations", WF_ATTR_LIST | WF_ATTR_INT,               \
                        "per spatial dimension"),                              \
      WFX_ATTR_REQUIRED("pads", WF_ATTR_LIST | WF_ATTR_INT,                    \
                        "the starts of every spatial dimension, then the "     \
                        "ends")

const wf_op_def ox_conv_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxConv",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(N, C, D1, ...)"),
                       WF_ARG_T("w", "T", "(M, C / group, K1, ...)"),
                       WF_ARG_T("b", "T", "(M,) or (0,) for none")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(N, M, O1, ...)")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
                       WFX_ATTR_INT("group", 1, "channel groups"), GEO_ATTRS),
    .shape_fn = unknown_spatial,
    .doc = "N-d convolution (cross-correlation) as ONNX Conv, in double."};

const wf_op_def ox_conv_transpose_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxConvTranspose",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(N, C, D1, ...)"),
                       WF_ARG_T("w", "T", "(C, M / group, K1, ...)"),
                       WF_ARG_T("b", "T", "(M,) or (0,) for none")),
    .outputs = WFX_ARGS(WF_ARG_T(
        "y", "T", "(N, M, S (D - 1) + output_padding + (K - 1) dilation + 1 "
                  "- pads, ...)")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
        WFX_ATTR_INT("group", 1, "channel groups"), GEO_ATTRS,
        WFX_ATTR_REQUIRED("output_padding", WF_ATTR_LIST | WF_ATTR_INT,
                          "added at the end of each spatial dimension")),
    .shape_fn = unknown_spatial,
    .doc = "N-d transposed convolution as ONNX ConvTranspose, in double."};

const wf_op_def ox_pool_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxPool",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(N, C, D1, ...)")),
    .outputs = WFX_ARGS(
        WF_ARG_T("y", "T", "(N, C, O1, ...)"),
        WF_ARG_FIXED("indices", WF_INT64,
                     "max: the flat index of each maximum in x")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
        WFX_ATTR_REQUIRED("kind", WF_ATTR_STRING, "max, avg or lp"),
        WFX_ATTR_REQUIRED("kernel_shape", WF_ATTR_LIST | WF_ATTR_INT,
                          "the window"),
        WFX_ATTR_INT("ceil_mode", 0, "1: output sizes rounded up"),
        WFX_ATTR_INT("count_include_pad", 0,
                     "avg: 1 counts padded positions"),
        WFX_ATTR_INT("p", 2, "lp: the norm's order"),
        WFX_ATTR_INT("storage_order", 0,
                     "max: 1 numbers the spatial positions of indices "
                     "column-major"),
        GEO_ATTRS),
    .shape_fn = unknown_spatial,
    .doc = "N-d pooling as ONNX MaxPool, AveragePool and LpPool."};

const wf_kernel_def ox_conv_kernel =
    WFX_CPU_REFERENCE("OnnxConv", "T", WFX_DTYPES_FLOAT, conv_compute);
const wf_kernel_def ox_conv_transpose_kernel = WFX_CPU_REFERENCE(
    "OnnxConvTranspose", "T", WFX_DTYPES_FLOAT, convt_compute);
const wf_kernel_def ox_pool_kernel =
    WFX_CPU_REFERENCE("OnnxPool", "T", WFX_DTYPES_NUMBER, pool_compute);
