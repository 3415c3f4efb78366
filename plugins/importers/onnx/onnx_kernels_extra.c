/* plugins/importers/onnx/onnx_kernels_extra.c — the importer's own ops for
 * ONNX's detection, sampling, set and signal ops (reference CPU kernels
 * in double, inference only): OnnxNMS (NonMaxSuppression), OnnxGridSample,
 * OnnxUnique, OnnxTfIdf (TfIdfVectorizer over integer n-grams) and
 * OnnxDFT. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

static int shape_unknown(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  (void)st;
  wfx_shape_set_unknown(&s);
  for (int i = 0; i < wfx_host->shape_num_outputs(ctx); i++)
    wfx_host->shape_set_output(ctx, i, &s);
  return 0;
}

static double get(const wf_tensor *t, int64_t k) {
  const void *d = wfx_data(t);
  switch (wfx_dtype(t)) {
  case WF_FLOAT32:
    return ((const float *)d)[k];
  case WF_FLOAT64:
    return ((const double *)d)[k];
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

static int64_t geti(const wf_tensor *t, int64_t k) {
  return wfx_dtype(t) == WF_INT64 ? ((const int64_t *)wfx_data(t))[k]
                                  : (int64_t)get(t, k);
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
  case WF_INT8:
    ((int8_t *)d)[k] = (int8_t)v;
    break;
  case WF_UINT8:
  case WF_BOOL:
    ((uint8_t *)d)[k] = (uint8_t)v;
    break;
  case WF_INT32:
    ((int32_t *)d)[k] = (int32_t)v;
    break;
  case WF_INT64:
    ((int64_t *)d)[k] = (int64_t)v;
    break;
  }
}

/* ---- OnnxNMS -------------------------------------------------------------- */

typedef struct cand {
  double score;
  int64_t i;
} cand;

static int by_score(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static void corners(const wf_tensor *bx, int64_t o, int center, double *c) {
  double a = get(bx, o), b = get(bx, o + 1), p = get(bx, o + 2),
         q = get(bx, o + 3);
  if (center) { /* x, y, w, h -> y1 x1 y2 x2 */
    c[0] = b - q / 2, c[1] = a - p / 2, c[2] = b + q / 2, c[3] = a + p / 2;
  } else {
    c[0] = fmin(a, p), c[2] = fmax(a, p);
    c[1] = fmin(b, q), c[3] = fmax(b, q);
  }
}

static double iou(const double *a, const double *b) {
  double h = fmin(a[2], b[2]) - fmax(a[0], b[0]);
  double w = fmin(a[3], b[3]) - fmax(a[1], b[1]);
  if (h <= 0 || w <= 0)
    return 0;
  double in = h * w;
  double u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) -
             in;
  return u > 0 ? in / u : 0;
}

static int nms_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *bx, *sc, *mo, *it, *stt;
  wf_shape bs, ss;
  int64_t center;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &bx, &bs, st) ||
      wfx_kernel_input(ctx, 1, &sc, &ss, st) ||
      wfx_kernel_input(ctx, 2, &mo, NULL, st) ||
      wfx_kernel_input(ctx, 3, &it, NULL, st) ||
      wfx_kernel_input(ctx, 4, &stt, NULL, st) ||
      wfx_kernel_attr_int(ctx, "center_point_box", &center, st))
    return wfx_code(st);
  if (bs.rank != 3 || bs.dims[2] != 4 || ss.rank != 3 ||
      ss.dims[0] != bs.dims[0] || ss.dims[2] != bs.dims[1])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "boxes (B, S, 4) and scores (B, C, S) disagree");
  int64_t maxo = wfx_count(mo) ? geti(mo, 0) : 0;
  double thr = wfx_count(it) ? get(it, 0) : 0;
  int has_st = wfx_count(stt) > 0;
  double sthr = has_st ? get(stt, 0) : 0;
  int64_t B = bs.dims[0], C = ss.dims[1], S = bs.dims[1];
  int64_t cap = B * C * (maxo < S ? (maxo > 0 ? maxo : 0) : S), n = 0;
  int64_t *sel = wfx_host->alloc((size_t)(cap * 3 + 1) * sizeof(int64_t), 0);
  cand *cs = wfx_host->alloc((size_t)(S + 1) * sizeof *cs, 0);
  double *box = wfx_host->alloc((size_t)(4 * S + 4) * sizeof(double), 0);
  int64_t *kept = wfx_host->alloc((size_t)(S + 1) * sizeof(int64_t), 0);
  if (!sel || !cs || !box || !kept) {
    wfx_host->free(sel), wfx_host->free(cs), wfx_host->free(box);
    wfx_host->free(kept);
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int64_t b = 0; b < B; b++) {
    for (int64_t i = 0; i < S; i++)
      corners(bx, (b * S + i) * 4, (int)center, box + 4 * i);
    for (int64_t c = 0; c < C && maxo > 0; c++) {
      int64_t nc = 0, nk = 0;
      for (int64_t i = 0; i < S; i++) {
        double v = get(sc, (b * C + c) * S + i);
        if (!has_st || v > sthr)
          cs[nc++] = (cand){v, i};
      }
      qsort(cs, (size_t)nc, sizeof *cs, by_score);
      for (int64_t k = 0; k < nc && nk < maxo; k++) {
        int keep = 1;
        for (int64_t j = 0; j < nk && keep; j++)
          keep = !(iou(box + 4 * cs[k].i, box + 4 * kept[j]) > thr);
        if (keep) {
          kept[nk++] = cs[k].i;
          sel[3 * n] = b, sel[3 * n + 1] = c, sel[3 * n + 2] = cs[k].i;
          n++;
        }
      }
    }
  }
  wf_shape o = {.rank = 2, .dims = {n, 3}};
  wf_tensor *y;
  int rc = wfx_kernel_output(ctx, 0, &o, &y, st);
  if (!rc && n)
    memcpy(wfx_data(y), sel, (size_t)n * 3 * sizeof(int64_t));
  wfx_host->free(sel), wfx_host->free(cs), wfx_host->free(box);
  wfx_host->free(kept);
  return rc;
}

const wf_op_def ox_nms_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxNMS",
    .inputs = WFX_ARGS(
        WF_ARG_T("boxes", "T", "(B, S, 4)"), WF_ARG_T("scores", "T", "(B, C, S)"),
        WF_ARG_FIXED("max_output_boxes_per_class", WF_INT64, "(1,) or (0,)"),
        WF_ARG_T("iou_threshold", "T", "(1,) or (0,)"),
        WF_ARG_T("score_threshold", "T", "(1,) or (0,)")),
    .outputs = WFX_ARGS(WF_ARG_FIXED("selected", WF_INT64,
                                     "(K, 3): batch, class, box")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
                       WFX_ATTR_INT("center_point_box", 0,
                                    "1: boxes are x, y, w, h")),
    .shape_fn = shape_unknown,
    .doc = "Greedy non-maximum suppression per batch and class (ONNX "
           "NonMaxSuppression)."};
const wf_kernel_def ox_nms_kernel =
    WFX_CPU_REFERENCE("OnnxNMS", "T", WFX_DTYPES_FLOAT, nms_compute);

/* ---- OnnxGridSample ------------------------------------------------------- */

typedef struct gs {
  int mode;    /* 0 bilinear, 1 nearest, 2 bicubic */
  int padding; /* 0 zeros, 1 border, 2 reflection */
  int align;
} gs;

static double reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0)
    return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t k = (int64_t)(dx / rng);
    double r = dx - (double)k * rng;
    return k % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t k = (int64_t)(dx / rng);
    double r = dx - (double)k * rng;
    return k % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

/* Pixel (y, x) of one channel plane, outside the image by the padding. */
static double pixel(const gs *g, const wf_tensor *t, int64_t base, int64_t H,
                    int64_t W, int64_t y, int64_t x) {
  if (g->padding == 0) {
    if (y < 0 || y >= H || x < 0 || x >= W)
      return 0;
  } else if (g->padding == 1) {
    y = y < 0 ? 0 : y >= H ? H - 1 : y;
    x = x < 0 ? 0 : x >= W ? W - 1 : x;
  } else {
    double lo = g->align ? 0 : -0.5;
    y = (int64_t)reflect((double)y, lo, g->align ? H - 1 : H - 0.5);
    x = (int64_t)reflect((double)x, lo, g->align ? W - 1 : W - 0.5);
    y = y < 0 ? 0 : y >= H ? H - 1 : y;
    x = x < 0 ? 0 : x >= W ? W - 1 : x;
  }
  return get(t, base + y * W + x);
}

static void cubic(double t, double *c) {
  const double A = -0.75;
  double u = t + 1;
  c[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  u = 1 - t;
  c[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
  u = 2 - t;
  c[3] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
}

static double coord(const gs *g, double v, int64_t L) {
  double x = g->align ? (v + 1) / 2 * (double)(L - 1)
                      : ((v + 1) * (double)L - 1) / 2;
  if (g->padding == 1)
    x = x < 0 ? 0 : x > L - 1 ? (double)(L - 1) : x;
  else if (g->padding == 2)
    x = reflect(x, g->align ? 0 : -0.5, g->align ? L - 1 : L - 0.5);
  return x;
}

static int grid_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *grid;
  wf_shape xs, gsh;
  wf_attr_value m, p;
  int64_t align;
  wf_tensor *y;
  gs g;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &grid, &gsh, st) ||
      wfx_kernel_attr(ctx, "mode", WF_ATTR_STRING, &m, st) ||
      wfx_kernel_attr(ctx, "padding_mode", WF_ATTR_STRING, &p, st) ||
      wfx_kernel_attr_int(ctx, "align_corners", &align, st))
    return wfx_code(st);
  g.mode = strcmp(m.u.s, "bilinear") == 0  ? 0
           : strcmp(m.u.s, "nearest") == 0 ? 1
           : strcmp(m.u.s, "bicubic") == 0 ? 2
                                           : -1;
  g.padding = strcmp(p.u.s, "zeros") == 0    ? 0
              : strcmp(p.u.s, "border") == 0 ? 1
              : strcmp(p.u.s, "reflection") == 0 ? 2
                                                 : -1;
  g.align = align != 0;
  if (g.mode < 0 || g.padding < 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "mode '%s' or padding '%s'",
                    m.u.s, p.u.s);
  if (xs.rank != 4 || gsh.rank != 4 || gsh.dims[3] != 2 ||
      gsh.dims[0] != xs.dims[0])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "X (N, C, H, W) and grid (N, Ho, Wo, 2) disagree");
  int64_t N = xs.dims[0], C = xs.dims[1], H = xs.dims[2], W = xs.dims[3],
          Ho = gsh.dims[1], Wo = gsh.dims[2];
  wf_shape o = {.rank = 4, .dims = {N, C, Ho, Wo}};
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  for (int64_t n = 0; n < N; n++)
    for (int64_t i = 0; i < Ho; i++)
      for (int64_t j = 0; j < Wo; j++) {
        int64_t go = ((n * Ho + i) * Wo + j) * 2;
        double gx = coord(&g, get(grid, go), W),
               gy = coord(&g, get(grid, go + 1), H);
        for (int64_t c = 0; c < C; c++) {
          int64_t base = (n * C + c) * H * W;
          double v = 0;
          if (g.mode == 1) {
            v = pixel(&g, x, base, H, W, (int64_t)nearbyint(gy),
                      (int64_t)nearbyint(gx));
          } else if (g.mode == 0) {
            double fx = floor(gx), fy = floor(gy), ax = gx - fx,
                   ay = gy - fy;
            int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
            v = (1 - ay) * ((1 - ax) * pixel(&g, x, base, H, W, y0, x0) +
                            ax * pixel(&g, x, base, H, W, y0, x0 + 1)) +
                ay * ((1 - ax) * pixel(&g, x, base, H, W, y0 + 1, x0) +
                      ax * pixel(&g, x, base, H, W, y0 + 1, x0 + 1));
          } else {
            double fx = floor(gx), fy = floor(gy), cx[4], cy[4];
            cubic(gx - fx, cx);
            cubic(gy - fy, cy);
            for (int a = 0; a < 4; a++)
              for (int b = 0; b < 4; b++)
                v += cy[a] * cx[b] *
                     pixel(&g, x, base, H, W, (int64_t)fy - 1 + a,
                           (int64_t)fx - 1 + b);
          }
          put(y, ((n * C + c) * Ho + i) * Wo + j, v);
        }
      }
  return 0;
}

const wf_op_def ox_grid_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxGridSample",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(N, C, H, W)"),
                       WF_ARG_T("grid", "T", "(N, Ho, Wo, 2): x, y in [-1, 1]")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(N, C, Ho, Wo)")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
        WFX_ATTR_REQUIRED("mode", WF_ATTR_STRING, "bilinear, nearest, bicubic"),
        WFX_ATTR_REQUIRED("padding_mode", WF_ATTR_STRING,
                          "zeros, border, reflection"),
        WFX_ATTR_INT("align_corners", 0, "1: -1 and 1 are pixel centres")),
    .shape_fn = shape_unknown,
    .doc = "Samples x at the grid's positions (ONNX GridSample)."};
const wf_kernel_def ox_grid_kernel =
    WFX_CPU_REFERENCE("OnnxGridSample", "T", WFX_DTYPES_FLOAT, grid_compute);

/* ---- OnnxUnique ------------------------------------------------------------ */

typedef struct uq {
  const wf_tensor *x;
  int64_t inner, d, outer; /* slices: d of them, each outer x inner */
} uq;

static int slice_cmp(const uq *u, int64_t a, int64_t b) {
  for (int64_t p = 0; p < u->outer; p++)
    for (int64_t q = 0; q < u->inner; q++) {
      double va = get(u->x, (p * u->d + a) * u->inner + q),
             vb = get(u->x, (p * u->d + b) * u->inner + q);
      if (va != vb)
        return va < vb ? -1 : 1;
    }
  return 0;
}

static int unique_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape s;
  int64_t axis, has_axis, sorted;
  int ax = 0;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      wfx_kernel_attr_int(ctx, "has_axis", &has_axis, st) ||
      wfx_kernel_attr_int(ctx, "sorted", &sorted, st))
    return wfx_code(st);
  uq u = {.x = x, .inner = 1, .outer = 1};
  if (has_axis) {
    if (wfx_axis_normalize(axis, s.rank, &ax, NULL, st))
      return wfx_code(st);
    u.d = s.dims[ax];
    for (int i = ax + 1; i < s.rank; i++)
      u.inner *= s.dims[i];
    for (int i = 0; i < ax; i++)
      u.outer *= s.dims[i];
  } else
    u.d = wfx_count(x);
  int64_t d = u.d;
  int64_t *first = wfx_host->alloc((size_t)(3 * d + 1) * sizeof(int64_t), 0);
  if (!first)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  int64_t *inv = first + d, *cnt = inv + d, nu = 0;
  for (int64_t i = 0; i < d; i++) { /* first occurrences, in order */
    int64_t k = 0;
    while (k < nu && slice_cmp(&u, first[k], i) != 0)
      k++;
    if (k == nu) {
      first[nu] = i;
      cnt[nu++] = 0;
    }
    cnt[k]++;
    inv[i] = k;
  }
  if (sorted) { /* order the uniques by value; remap inverse */
    int64_t *ord = wfx_host->alloc((size_t)(2 * nu + 1) * sizeof(int64_t), 0);
    if (!ord) {
      wfx_host->free(first);
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    }
    int64_t *rank = ord + nu;
    for (int64_t k = 0; k < nu; k++)
      ord[k] = k;
    for (int64_t a = 1; a < nu; a++) /* insertion sort: stable, small */
      for (int64_t b = a;
           b > 0 && slice_cmp(&u, first[ord[b - 1]], first[ord[b]]) > 0; b--) {
        int64_t t = ord[b];
        ord[b] = ord[b - 1];
        ord[b - 1] = t;
      }
    int64_t *f2 = wfx_host->alloc((size_t)(2 * nu + 1) * sizeof(int64_t), 0);
    if (!f2) {
      wfx_host->free(ord);
      wfx_host->free(first);
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    }
    for (int64_t k = 0; k < nu; k++) {
      rank[ord[k]] = k;
      f2[k] = first[ord[k]];
      f2[nu + k] = cnt[ord[k]];
    }
    for (int64_t k = 0; k < nu; k++) {
      first[k] = f2[k];
      cnt[k] = f2[nu + k];
    }
    for (int64_t i = 0; i < d; i++)
      inv[i] = rank[inv[i]];
    wfx_host->free(f2);
    wfx_host->free(ord);
  }
  wf_shape ys = has_axis ? s : (wf_shape){.rank = 1, .dims = {nu}};
  if (has_axis)
    ys.dims[ax] = nu;
  wf_shape v1 = {.rank = 1, .dims = {nu}}, vd = {.rank = 1, .dims = {d}};
  wf_tensor *y, *yi, *yinv, *yc;
  int rc = 0;
  if (wfx_kernel_output(ctx, 0, &ys, &y, st) ||
      wfx_kernel_output(ctx, 1, &v1, &yi, st) ||
      wfx_kernel_output(ctx, 2, &vd, &yinv, st) ||
      wfx_kernel_output(ctx, 3, &v1, &yc, st))
    rc = wfx_code(st);
  else {
    size_t es = wfx_dtype_size(wfx_dtype(x));
    for (int64_t p = 0; p < u.outer; p++)
      for (int64_t k = 0; k < nu; k++)
        memcpy((char *)wfx_data(y) + (size_t)((p * nu + k) * u.inner) * es,
               (const char *)wfx_data(x) +
                   (size_t)((p * d + first[k]) * u.inner) * es,
               (size_t)u.inner * es);
    memcpy(wfx_data(yi), first, (size_t)nu * sizeof(int64_t));
    memcpy(wfx_data(yinv), inv, (size_t)d * sizeof(int64_t));
    memcpy(wfx_data(yc), cnt, (size_t)nu * sizeof(int64_t));
  }
  wfx_host->free(first);
  return rc;
}

const wf_op_def ox_unique_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxUnique",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "the unique values or slices"),
                        WF_ARG_FIXED("indices", WF_INT64, "first occurrences"),
                        WF_ARG_FIXED("inverse_indices", WF_INT64,
                                     "each element's unique"),
                        WF_ARG_FIXED("counts", WF_INT64, "occurrences")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
                       WFX_ATTR_INT("axis", 0, "slices along it"),
                       WFX_ATTR_INT("has_axis", 0, "0: x flattened"),
                       WFX_ATTR_INT("sorted", 1, "1: ascending")),
    .shape_fn = shape_unknown,
    .doc = "Unique elements or slices (ONNX Unique)."};
const wf_kernel_def ox_unique_kernel =
    WFX_CPU_REFERENCE("OnnxUnique", "T", WFX_DTYPES_NUMBER, unique_compute);

/* ---- OnnxTfIdf ------------------------------------------------------------- */

static int tfidf_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape s;
  wf_attr_value mode, wts;
  const int64_t *counts, *idxs, *pool;
  int64_t nc, ni, np, minn, maxn, skip;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr(ctx, "mode", WF_ATTR_STRING, &mode, st) ||
      wfx_kernel_attr(ctx, "weights", WF_ATTR_LIST | WF_ATTR_FLOAT, &wts,
                      st) ||
      wfx_kernel_attr_ints(ctx, "ngram_counts", &counts, &nc, st) ||
      wfx_kernel_attr_ints(ctx, "ngram_indexes", &idxs, &ni, st) ||
      wfx_kernel_attr_ints(ctx, "pool_int64s", &pool, &np, st) ||
      wfx_kernel_attr_int(ctx, "min_gram_length", &minn, st) ||
      wfx_kernel_attr_int(ctx, "max_gram_length", &maxn, st) ||
      wfx_kernel_attr_int(ctx, "max_skip_count", &skip, st))
    return wfx_code(st);
  if (s.rank < 1 || s.rank > 2 || minn < 1 || maxn < minn || nc < maxn ||
      skip < 0 || (wts.count && wts.count != ni))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "bad TfIdfVectorizer attributes");
  int64_t width = 0;
  for (int64_t i = 0; i < ni; i++)
    width = idxs[i] + 1 > width ? idxs[i] + 1 : width;
  int64_t rows = s.rank == 2 ? s.dims[0] : 1, C = s.dims[s.rank - 1];
  wf_shape o = s.rank == 2 ? (wf_shape){.rank = 2, .dims = {rows, width}}
                           : (wf_shape){.rank = 1, .dims = {width}};
  wf_tensor *y;
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int tf = strcmp(mode.u.s, "TF") == 0, idf = strcmp(mode.u.s, "IDF") == 0;
  double *cnt = wfx_host->alloc((size_t)(ni + 1) * sizeof(double), 0);
  if (!cnt)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t k = 0; k < ni; k++)
      cnt[k] = 0;
    for (int64_t n = minn; n <= maxn; n++) {
      /* the n-grams of the pool: from counts[n-1] to the next start */
      int64_t from = counts[n - 1], to = n < nc ? counts[n] : np;
      int64_t first_k = 0; /* their ordinal: n-grams before them */
      for (int64_t m = 1; m < n; m++)
        first_k += ((m < nc ? counts[m] : np) - counts[m - 1]) / m;
      for (int64_t sk = 0; sk <= (n == 1 ? 0 : skip); sk++)
        for (int64_t start = 0; start + (n - 1) * (sk + 1) < C; start++)
          for (int64_t g = 0; from + (g + 1) * n <= to; g++) {
            int match = 1;
            for (int64_t e = 0; e < n && match; e++)
              match = geti(x, r * C + start + e * (sk + 1)) ==
                      pool[from + g * n + e];
            if (match && first_k + g < ni)
              cnt[first_k + g] += 1;
          }
    }
    for (int64_t k = 0; k < width; k++)
      put(y, r * width + k, 0);
    for (int64_t k = 0; k < ni; k++) {
      double w = wts.count ? wts.u.floats[k] : 1, v;
      v = tf ? cnt[k] : idf ? (cnt[k] > 0 ? w : 0) : cnt[k] * w;
      put(y, r * width + idxs[k], v);
    }
  }
  wfx_host->free(cnt);
  return 0;
}

const wf_op_def ox_tfidf_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxTfIdf",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(C,) or (N, C) integers")),
    .outputs = WFX_ARGS(WF_ARG_FIXED("y", WF_FLOAT32,
                                     "(N, max(ngram_indexes) + 1)")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),
                       "element type"),
        WFX_ATTR_REQUIRED("mode", WF_ATTR_STRING, "TF, IDF or TFIDF"),
        WFX_ATTR_REQUIRED("weights", WF_ATTR_LIST | WF_ATTR_FLOAT,
                          "per n-gram, or none"),
        WFX_ATTR_REQUIRED("ngram_counts", WF_ATTR_LIST | WF_ATTR_INT,
                          "where each length's n-grams start in the pool"),
        WFX_ATTR_REQUIRED("ngram_indexes", WF_ATTR_LIST | WF_ATTR_INT,
                          "the output column of each n-gram"),
        WFX_ATTR_REQUIRED("pool_int64s", WF_ATTR_LIST | WF_ATTR_INT,
                          "the n-grams"),
        WFX_ATTR_INT("min_gram_length", 1, "shortest n"),
        WFX_ATTR_INT("max_gram_length", 1, "longest n"),
        WFX_ATTR_INT("max_skip_count", 0, "most elements skipped between")),
    .shape_fn = shape_unknown,
    .doc = "N-gram counts and weights (ONNX TfIdfVectorizer, integer "
           "pools)."};
const wf_kernel_def ox_tfidf_kernel = WFX_CPU_REFERENCE(
    "OnnxTfIdf", "T", WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),
    tfidf_compute);

/* ---- OnnxDFT ---------------------------------------------------------------- */

static int dft_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *lt;
  wf_shape s;
  int64_t axis, inverse, onesided;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &lt, NULL, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      wfx_kernel_attr_int(ctx, "inverse", &inverse, st) ||
      wfx_kernel_attr_int(ctx, "onesided", &onesided, st))
    return wfx_code(st);
  if (s.rank < 3 || (s.dims[s.rank - 1] != 1 && s.dims[s.rank - 1] != 2))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input (batch, ..., 1 or 2) of rank >= 3");
  int ax;
  if (wfx_axis_normalize(axis, s.rank - 1, &ax, NULL, st))
    return wfx_code(st);
  if (ax == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "axis 0 is the batch");
  int64_t L = s.dims[ax], n = wfx_count(lt) ? geti(lt, 0) : L;
  if (n < 1 || n > ((int64_t)1 << 24))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "dft_length %lld", (long long)n);
  int64_t nout = onesided ? n / 2 + 1 : n, cplx = s.dims[s.rank - 1];
  wf_shape o = s;
  o.dims[ax] = nout;
  o.dims[s.rank - 1] = 2;
  wf_tensor *y;
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  int64_t inner = 1, outer = 1;
  for (int i = ax + 1; i < s.rank - 1; i++)
    inner *= s.dims[i];
  for (int i = 0; i < ax; i++)
    outer *= s.dims[i];
  double sign = inverse ? 1 : -1;
  for (int64_t p = 0; p < outer; p++)
    for (int64_t q = 0; q < inner; q++)
      for (int64_t k = 0; k < nout; k++) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < n && t < L; t++) { /* zero-padded past L */
          int64_t off = ((p * L + t) * inner + q) * cplx;
          double a = get(x, off), b = cplx == 2 ? get(x, off + 1) : 0;
          double ang = sign * 2 * M_PI * (double)((k * t) % n) / (double)n;
          re += a * cos(ang) - b * sin(ang);
          im += a * sin(ang) + b * cos(ang);
        }
        if (inverse)
          re /= (double)n, im /= (double)n;
        int64_t oo = ((p * nout + k) * inner + q) * 2;
        put(y, oo, re);
        put(y, oo + 1, im);
      }
  return 0;
}

const wf_op_def ox_dft_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxDFT",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(batch, ..., 1 or 2)"),
                       WF_ARG_FIXED("dft_length", WF_INT64, "() or (0,)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(batch, ..., 2)")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
                       WFX_ATTR_INT("axis", 1, "the transformed axis"),
                       WFX_ATTR_INT("inverse", 0, "1: the inverse"),
                       WFX_ATTR_INT("onesided", 0, "1: n / 2 + 1 outputs")),
    .shape_fn = shape_unknown,
    .doc = "The discrete Fourier transform along an axis, O(n^2) in double "
           "(ONNX DFT)."};
const wf_kernel_def ox_dft_kernel =
    WFX_CPU_REFERENCE("OnnxDFT", "T", WFX_DTYPES_FLOAT, dft_compute);

/* ---- OnnxDropout ------------------------------------------------------------ */

static int dropout_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *r, *t;
  wf_shape s;
  wf_tensor *m;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &r, NULL, st) ||
      wfx_kernel_input(ctx, 2, &t, NULL, st))
    return wfx_code(st);
  int training = wfx_count(t) && ((const uint8_t *)wfx_data(t))[0];
  double ratio = wfx_count(r) ? get(r, 0) : 0.5;
  if (training && ratio != 0)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "Dropout in training mode with ratio %g: the mask of "
                    "another framework's random stream cannot be matched "
                    "(inference, or a ratio of 0, only)",
                    ratio);
  if (wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)x, st) ||
      wfx_kernel_output(ctx, 1, &s, &m, st))
    return wfx_code(st);
  memset(wfx_data(m), 1, (size_t)wfx_count(m));
  return 0;
}

static int dropout_shape(wf_shape_ctx *ctx, wf_status *st) {
  return wfx_shape_like_input0(ctx, st);
}

const wf_op_def ox_dropout_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxDropout",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)"),
                       WF_ARG_T("ratio", "Tr", "() or (0,)"),
                       WF_ARG_FIXED("training_mode", WF_BOOL, "() or (0,)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x"),
                        WF_ARG_FIXED("mask", WF_BOOL, "x's shape, all true")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type"),
                       WFX_ATTR_DTYPE("Tr", WFX_DTYPES_FLOAT, "ratio's type")),
    .shape_fn = dropout_shape,
    .doc = "ONNX Dropout whose training_mode is known at run time only: the "
           "identity when not training or the ratio is 0, refused "
           "otherwise."};
const wf_kernel_def ox_dropout_kernel =
    WFX_CPU_REFERENCE("OnnxDropout", "T", WFX_DTYPES_ALL, dropout_compute);
