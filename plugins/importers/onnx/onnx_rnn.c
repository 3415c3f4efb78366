/* plugins/importers/onnx/onnx_rnn.c — OnnxRNN, the importer's op for ONNX
 * RNN, GRU and LSTM: forward, reverse or bidirectional, sequence lengths,
 * initial states, biases, LSTM peepholes, GRU's linear_before_reset,
 * clip, batch-major layout, activations Sigmoid, Tanh, Relu (the others
 * are refused). Gates in ONNX's order (LSTM i o f c, GRU z r h). Reference
 * CPU kernel in double, inference only; also OnnxMaxUnpool. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "onnx_internal.h"

typedef double act_fn(double);
static double sigm(double x) { return 1 / (1 + exp(-x)); }
static double relu(double x) { return x > 0 ? x : 0; }

static act_fn *act_of(const char *s) {
  if (strcmp(s, "Sigmoid") == 0)
    return sigm;
  if (strcmp(s, "Tanh") == 0)
    return tanh;
  if (strcmp(s, "Relu") == 0)
    return relu;
  return NULL;
}

static double get(const wf_tensor *t, int64_t k) {
  return wfx_dtype(t) == WF_FLOAT64 ? ((const double *)wfx_data(t))[k]
                                    : ((const float *)wfx_data(t))[k];
}

static void put(wf_tensor *t, int64_t k, double v) {
  if (wfx_dtype(t) == WF_FLOAT64)
    ((double *)wfx_data(t))[k] = v;
  else
    ((float *)wfx_data(t))[k] = (float)v;
}

static int rnn_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *in[8];
  wf_shape s[8];
  wf_attr_value cell, dir, acts;
  int64_t hs, layout, lbr;
  double clip;
  (void)state;
  for (int i = 0; i < 8; i++)
    if (wfx_kernel_input(ctx, i, &in[i], &s[i], st))
      return wfx_code(st);
  if (wfx_kernel_attr(ctx, "cell", WF_ATTR_STRING, &cell, st) ||
      wfx_kernel_attr(ctx, "direction", WF_ATTR_STRING, &dir, st) ||
      wfx_kernel_attr(ctx, "activations", WF_ATTR_LIST | WF_ATTR_STRING,
                      &acts, st) ||
      wfx_kernel_attr_int(ctx, "hidden_size", &hs, st) ||
      wfx_kernel_attr_int(ctx, "layout", &layout, st) ||
      wfx_kernel_attr_int(ctx, "linear_before_reset", &lbr, st) ||
      wfx_kernel_attr_float(ctx, "clip", &clip, st))
    return wfx_code(st);
  int kind = strcmp(cell.u.s, "lstm") == 0 ? 2
             : strcmp(cell.u.s, "gru") == 0 ? 1
                                            : 0;
  int G = kind == 2 ? 4 : kind == 1 ? 3 : 1;
  int nact = kind == 2 ? 3 : kind == 1 ? 2 : 1;
  int nd = strcmp(dir.u.s, "bidirectional") == 0 ? 2 : 1;
  int rev = strcmp(dir.u.s, "reverse") == 0;
  if (s[0].rank != 3 || s[1].rank != 3 || s[1].dims[0] != nd ||
      s[1].dims[1] != G * hs || s[2].rank != 3 ||
      s[2].dims[1] != G * hs || s[2].dims[2] != hs)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "X, W and R do not have the shapes hidden_size %lld and "
                    "%d direction(s) need",
                    (long long)hs, nd);
  if (acts.count && acts.count != (int64_t)nact * nd)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "%lld activations for %d",
                    (long long)acts.count, nact * nd);
  act_fn *f[2][3];
  static const char *const dflt[3][3] = {
      {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  for (int d = 0; d < nd; d++)
    for (int k = 0; k < nact; k++) {
      const char *nm = acts.count ? acts.u.strings[d * nact + k] : dflt[kind][k];
      if (!(f[d][k] = act_of(nm)))
        return wfx_fail(st, WF_UNIMPLEMENTED, "activation '%s'", nm);
    }
  int64_t T = layout ? s[0].dims[1] : s[0].dims[0];
  int64_t B = layout ? s[0].dims[0] : s[0].dims[1], I = s[0].dims[2];
  if (s[1].dims[2] != I)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "W's input size differs from X's");
  wf_shape ys = layout ? (wf_shape){.rank = 4, .dims = {B, T, nd, hs}}
                       : (wf_shape){.rank = 4, .dims = {T, nd, B, hs}};
  wf_shape hsh = layout ? (wf_shape){.rank = 3, .dims = {B, nd, hs}}
                        : (wf_shape){.rank = 3, .dims = {nd, B, hs}};
  wf_tensor *Y, *Yh, *Yc;
  if (wfx_kernel_output(ctx, 0, &ys, &Y, st) ||
      wfx_kernel_output(ctx, 1, &hsh, &Yh, st) ||
      wfx_kernel_output(ctx, 2, &hsh, &Yc, st))
    return wfx_code(st);
  memset(wfx_data(Y), 0, wfx_host->tensor_nbytes(Y));
  const wf_tensor *X = in[0], *W = in[1], *R = in[2], *Bt = in[3],
                  *L = in[4], *H0 = in[5], *C0 = in[6], *P = in[7];
  int hasb = wfx_count(Bt) > 0, hasl = wfx_count(L) > 0,
      hash0 = wfx_count(H0) > 0, hasc0 = wfx_count(C0) > 0,
      hasp = wfx_count(P) > 0;
  double *h = wfx_host->alloc((size_t)(hs * 6 + G * hs + 1) * sizeof(double),
                              0);
  if (!h)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  double *c = h + hs, *g = c + hs, *hn = g + G * hs, *rh = hn + hs;
  for (int d = 0; d < nd; d++) {
    int back = nd == 2 ? d == 1 : rev;
    for (int64_t b = 0; b < B; b++) {
      int64_t len = T;
      if (hasl) {
        len = wfx_dtype(L) == WF_INT64 ? ((const int64_t *)wfx_data(L))[b]
                                       : ((const int32_t *)wfx_data(L))[b];
        if (len < 0 || len > T) {
          wfx_host->free(h);
          return wfx_fail(st, WF_INVALID_ARGUMENT, "sequence length %lld",
                          (long long)len);
        }
      }
      int64_t hidx0 = layout ? (b * nd + d) * hs : (d * B + b) * hs;
      for (int64_t k = 0; k < hs; k++) {
        h[k] = hash0 ? get(H0, hidx0 + k) : 0;
        c[k] = hasc0 ? get(C0, hidx0 + k) : 0;
      }
      for (int64_t step = 0; step < len; step++) {
        int64_t t = back ? len - 1 - step : step;
        int64_t xo = layout ? (b * T + t) * I : (t * B + b) * I;
        /* gates: W x + Wb, and R h + Rb kept apart for GRU's reset */
        for (int64_t j = 0; j < G * hs; j++) {
          double acc = hasb ? get(Bt, d * 2 * G * hs + j) : 0;
          for (int64_t k = 0; k < I; k++)
            acc += get(W, (d * G * hs + j) * I + k) * get(X, xo + k);
          g[j] = acc;
        }
        if (kind == 1) { /* GRU: z r h */
          for (int64_t j = 0; j < 2 * hs; j++) {
            double acc = hasb ? get(Bt, d * 2 * G * hs + G * hs + j) : 0;
            for (int64_t k = 0; k < hs; k++)
              acc += get(R, (d * G * hs + j) * hs + k) * h[k];
            g[j] += acc;
          }
          for (int64_t j = 0; j < 2 * hs; j++) {
            if (clip > 0)
              g[j] = g[j] > clip ? clip : g[j] < -clip ? -clip : g[j];
            g[j] = f[d][0](g[j]);
          }
          for (int64_t k = 0; k < hs; k++)
            rh[k] = g[hs + k] * h[k];
          for (int64_t j = 0; j < hs; j++) {
            double rb = hasb ? get(Bt, d * 2 * G * hs + G * hs + 2 * hs + j)
                             : 0,
                   acc = 0;
            for (int64_t k = 0; k < hs; k++)
              acc += get(R, (d * G * hs + 2 * hs + j) * hs + k) *
                     (lbr ? h[k] : rh[k]);
            double v = g[2 * hs + j] + (lbr ? g[hs + j] * (acc + rb)
                                            : acc + rb);
            if (clip > 0)
              v = v > clip ? clip : v < -clip ? -clip : v;
            v = f[d][1](v);
            hn[j] = (1 - g[j]) * v + g[j] * h[j];
          }
          memcpy(h, hn, (size_t)hs * sizeof *h);
        } else {
          for (int64_t j = 0; j < G * hs; j++) {
            double acc = hasb ? get(Bt, d * 2 * G * hs + G * hs + j) : 0;
            for (int64_t k = 0; k < hs; k++)
              acc += get(R, (d * G * hs + j) * hs + k) * h[k];
            g[j] += acc;
          }
          if (kind == 0)
            for (int64_t j = 0; j < hs; j++) {
              double v = g[j];
              if (clip > 0)
                v = v > clip ? clip : v < -clip ? -clip : v;
              h[j] = f[d][0](v);
            }
          else /* LSTM: i o f c, peepholes i o f */
            for (int64_t j = 0; j < hs; j++) {
              double gi = g[j], go = g[hs + j], gf = g[2 * hs + j],
                     gc = g[3 * hs + j];
              if (hasp) {
                gi += get(P, d * 3 * hs + j) * c[j];
                gf += get(P, d * 3 * hs + 2 * hs + j) * c[j];
              }
              if (clip > 0) {
                gi = gi > clip ? clip : gi < -clip ? -clip : gi;
                gf = gf > clip ? clip : gf < -clip ? -clip : gf;
                gc = gc > clip ? clip : gc < -clip ? -clip : gc;
              }
              double cn = f[d][0](gf) * c[j] + f[d][0](gi) * f[d][1](gc);
              if (hasp)
                go += get(P, d * 3 * hs + hs + j) * cn;
              if (clip > 0)
                go = go > clip ? clip : go < -clip ? -clip : go;
              c[j] = cn;
              h[j] = f[d][0](go) * f[d][2](cn);
            }
        }
        int64_t yo = layout ? ((b * T + t) * nd + d) * hs
                            : ((t * nd + d) * B + b) * hs;
        for (int64_t k = 0; k < hs; k++)
          put(Y, yo + k, h[k]);
      }
      for (int64_t k = 0; k < hs; k++) {
        put(Yh, hidx0 + k, h[k]);
        put(Yc, hidx0 + k, c[k]);
      }
    }
  }
  wfx_host->free(h);
  return 0;
}

static int rnn_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  (void)st;
  wfx_shape_set_unknown(&s);
  for (int i = 0; i < wfx_host->shape_num_outputs(ctx); i++)
    wfx_host->shape_set_output(ctx, i, &s);
  return 0;
}

const wf_op_def ox_rnn_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxRNN",
    .inputs = WFX_ARGS(
        WF_ARG_T("X", "T", "(T, B, I), or (B, T, I) with layout 1"),
        WF_ARG_T("W", "T", "(dirs, G H, I)"), WF_ARG_T("R", "T", "(dirs, G H, H)"),
        WF_ARG_T("B", "T", "(dirs, 2 G H) or (0,)"),
        WF_ARG_FIXED("sequence_lens", WF_INT32, "(B,) or (0,)"),
        WF_ARG_T("initial_h", "T", "(dirs, B, H) or (0,)"),
        WF_ARG_T("initial_c", "T", "(dirs, B, H) or (0,)"),
        WF_ARG_T("P", "T", "(dirs, 3 H) or (0,)")),
    .outputs = WFX_ARGS(WF_ARG_T("Y", "T", "(T, dirs, B, H)"),
                        WF_ARG_T("Y_h", "T", "(dirs, B, H)"),
                        WF_ARG_T("Y_c", "T", "(dirs, B, H)")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
        WFX_ATTR_REQUIRED("cell", WF_ATTR_STRING, "rnn, gru or lstm"),
        WFX_ATTR_REQUIRED("direction", WF_ATTR_STRING,
                          "forward, reverse or bidirectional"),
        WFX_ATTR_REQUIRED("activations", WF_ATTR_LIST | WF_ATTR_STRING,
                          "per direction, or none for the defaults"),
        WFX_ATTR_REQUIRED("hidden_size", WF_ATTR_INT, "H"),
        WFX_ATTR_INT("layout", 0, "1: batch first"),
        WFX_ATTR_INT("linear_before_reset", 0, "GRU's variant"),
        WFX_ATTR_FLOAT("clip", 0.0, "> 0: gates clipped to [-clip, clip]")),
    .shape_fn = rnn_shape,
    .doc = "ONNX RNN, GRU and LSTM over a whole sequence, in double."};
const wf_kernel_def ox_rnn_kernel =
    WFX_CPU_REFERENCE("OnnxRNN", "T", WFX_DTYPES_FLOAT, rnn_compute);

/* ---- OnnxMaxUnpool -------------------------------------------------------- */

static int unpool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *idx, *shp, *dshp;
  wf_shape xs, o, ds;
  wf_tensor *y;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &idx, NULL, st) ||
      wfx_kernel_input(ctx, 2, &shp, NULL, st) ||
      wfx_kernel_input(ctx, 3, &dshp, NULL, st))
    return wfx_code(st);
  if (wfx_count(dshp) != wfx_count(shp))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the output and default shapes differ in rank");
  ds.rank = xs.rank;
  for (int i = 0; i < xs.rank && i < wfx_count(dshp); i++)
    ds.dims[i] = ((const int64_t *)wfx_data(dshp))[i];
  int64_t n = wfx_count(shp);
  if (n != xs.rank || wfx_count(idx) != wfx_count(x))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the output shape needs %d entries and the indices one "
                    "per input",
                    xs.rank);
  o.rank = xs.rank;
  for (int i = 0; i < xs.rank; i++) {
    o.dims[i] = ((const int64_t *)wfx_data(shp))[i];
    if (o.dims[i] < 0 || o.dims[i] > ((int64_t)1 << 31))
      return wfx_fail(st, WF_INVALID_ARGUMENT, "output dimension %lld",
                      (long long)o.dims[i]);
  }
  if (wfx_kernel_output(ctx, 0, &o, &y, st))
    return wfx_code(st);
  memset(wfx_data(y), 0, wfx_host->tensor_nbytes(y));
  /* indices number positions of the default-sized output (MaxPool's
   * input); a larger output_shape keeps each at its coordinates */
  int64_t total = wfx_shape_count(&ds), ost[WF_MAX_RANK];
  wfx_shape_strides(&o, ost);
  size_t es = wfx_dtype_size(wfx_dtype(x));
  for (int64_t k = 0; k < wfx_count(x); k++) {
    int64_t j = ((const int64_t *)wfx_data(idx))[k], off = 0, rem = j;
    if (j < 0 || j >= total)
      return wfx_fail(st, WF_INVALID_ARGUMENT, "index %lld out of range",
                      (long long)j);
    for (int i = ds.rank - 1; i >= 0; i--) {
      int64_t c = rem % ds.dims[i];
      rem /= ds.dims[i];
      if (c >= o.dims[i])
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "output_shape is smaller than the default");
      off += c * ost[i];
    }
    memcpy((char *)wfx_data(y) + (size_t)off * es,
           (const char *)wfx_data(x) + (size_t)k * es, es);
  }
  return 0;
}

const wf_op_def ox_unpool_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxMaxUnpool",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(N, C, ...)"),
                       WF_ARG_FIXED("indices", WF_INT64, "x's shape: flat "
                                                         "output positions"),
                       WF_ARG_FIXED("shape", WF_INT64, "(R,) the output's"),
                       WF_ARG_FIXED("default_shape", WF_INT64,
                                    "(R,) the shape the indices number")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "zeros but at the indices")),
    .attrs = WFX_ATTRS(WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL, "element type")),
    .shape_fn = rnn_shape,
    .doc = "The inverse of MaxPool with indices (ONNX MaxUnpool)."};
const wf_kernel_def ox_unpool_kernel =
    WFX_CPU_REFERENCE("OnnxMaxUnpool", "T", WFX_DTYPES_ALL, unpool_compute);
