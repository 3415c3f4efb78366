/* plugins/ops/rnn/lstm.c — the LSTM op (one layer, one direction, over a
 * whole sequence) and its backward op LSTMGrad: definitions, shape
 * inference and reference CPU kernels in double precision (float32 and
 * float64 tensors). The backward kernel recomputes the forward pass and
 * runs back-propagation through time. No peepholes, projections,
 * bidirectional or stacked layers. The gradient function is in grad.c. */
#include <config.h>

#include "rnn.h"

#include <inttypes.h>
#include <string.h>

/* ---- shapes ----------------------------------------------------------------- */

static int read_inputs(wf_shape_ctx *ctx, int n, wf_shape *s, wf_status *st) {
  for (int i = 0; i < n; i++)
    if (wfx_shape_input(ctx, i, NULL, &s[i], st))
      return wfx_code(st);
  return 0;
}

static int lstm_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape in[6], y, s;
  rnn_dims d;

  if (read_inputs(ctx, 6, in, st) || rnn_check(in, 4, 1, &d, st))
    return wfx_code(st);
  rnn_shape_y(&d, &y);
  rnn_shape_state(&d, &s);
  wfx_host->shape_set_output(ctx, 0, &y);
  wfx_host->shape_set_output(ctx, 1, &s);
  wfx_host->shape_set_output(ctx, 2, &s);
  return 0;
}

static int lstm_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape in[9], s;
  rnn_dims d;

  if (read_inputs(ctx, 9, in, st) || rnn_check(in, 4, 1, &d, st) ||
      rnn_check_grads(in + 6, 1, &d, st))
    return wfx_code(st);
  rnn_shape_x(&d, &s);
  wfx_host->shape_set_output(ctx, 0, &s);
  rnn_shape_state(&d, &s);
  wfx_host->shape_set_output(ctx, 1, &s);
  wfx_host->shape_set_output(ctx, 2, &s);
  rnn_shape_w(&d, &s);
  wfx_host->shape_set_output(ctx, 3, &s);
  rnn_shape_r(&d, &s);
  wfx_host->shape_set_output(ctx, 4, &s);
  rnn_shape_b(&d, &s);
  wfx_host->shape_set_output(ctx, 5, &s);
  return 0;
}

/* ---- kernels ----------------------------------------------------------------- */

/* Double copies of the first n inputs (freed with free_all). */
static int to_doubles(const wf_tensor **t, int n, double **v, wf_status *st) {
  for (int i = 0; i < n; i++)
    v[i] = NULL;
  for (int i = 0; i < n; i++)
    if (!(v[i] = rnn_to_double(t[i], st)))
      return wfx_code(st);
  return 0;
}

static void free_all(double **v, int n) {
  for (int i = 0; i < n; i++)
    wfx_host->free(v[i]);
}

/* hs, cs ((T + 1) N H) and acts (T N 4H) for the forward pass. */
static int alloc_pass(const rnn_dims *d, double **hs, double **cs,
                      double **acts, wf_status *st) {
  size_t states = (size_t)((d->t + 1) * d->n * d->h);
  size_t gates = (size_t)(d->t * d->n * 4 * d->h);

  *hs = wfx_host->alloc((states ? states : 1) * sizeof **hs, 0);
  *cs = wfx_host->alloc((states ? states : 1) * sizeof **cs, 0);
  *acts = wfx_host->alloc((gates ? gates : 1) * sizeof **acts, 0);
  if (*hs && *cs && *acts)
    return 0;
  wfx_host->free(*hs);
  wfx_host->free(*cs);
  wfx_host->free(*acts);
  *hs = *cs = *acts = NULL;
  return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                  "out of memory for the states of %" PRId64 " steps", d->t);
}

static int lstm_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *in[6];
  wf_shape s[6], ys, ss;
  wf_tensor *y, *ht, *ct;
  double *v[6], *hs = NULL, *cs = NULL, *acts = NULL;
  rnn_dims d;
  int64_t nh;
  int rc = 0;

  if (rnn_inputs(ctx, 6, in, s, st) || rnn_check(s, 4, 1, &d, st))
    return wfx_code(st);
  rnn_shape_y(&d, &ys);
  rnn_shape_state(&d, &ss);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &ys, st)) ||
      !(ht = wfx_host->kernel_output_new(ctx, 1, &ss, st)) ||
      !(ct = wfx_host->kernel_output_new(ctx, 2, &ss, st)))
    return wfx_code(st);
  nh = d.n * d.h;
  if (nh == 0)
    return 0;
  if (to_doubles(in, 6, v, st) || alloc_pass(&d, &hs, &cs, &acts, st)) {
    rc = wfx_code(st);
    goto done;
  }
  rnn_lstm_forward(&d, v[0], v[1], v[2], v[3], v[4], v[5], hs, cs, acts);
  rnn_from_double(y, hs + nh);
  rnn_from_double(ht, hs + d.t * nh);
  rnn_from_double(ct, cs + d.t * nh);
done:
  free_all(v, 6);
  wfx_host->free(hs);
  wfx_host->free(cs);
  wfx_host->free(acts);
  return rc;
}

/* Back-propagation through time over a recorded forward pass (see rnn.h
 * for the layout): g[0..5] receive dx, dh0, dc0, dw, dr, db (zeroed by the
 * caller); dy, dht, dct are the output gradients. */
static void lstm_backward(const rnn_dims *d, const double *x, const double *w,
                          const double *r, const double *hs, const double *cs,
                          const double *acts, const double *dy,
                          const double *dht, const double *dct, double **g,
                          double *da) {
  int64_t H = d->h, nh = d->n * H, g4 = 4 * H;
  double *dh = g[1], *dc = g[2];

  memcpy(dh, dht, (size_t)nh * sizeof *dh);
  memcpy(dc, dct, (size_t)nh * sizeof *dc);
  for (int64_t t = d->t - 1; t >= 0; t--) {
    const double *a = acts + t * d->n * g4;
    const double *cp = cs + t * nh, *cn = cs + (t + 1) * nh;
    const double *hp = hs + t * nh, *xt = x + t * d->n * d->c;

    for (int64_t n = 0; n < d->n; n++)
      for (int64_t j = 0; j < H; j++) {
        const double *row = a + n * g4;
        double i = row[j], f = row[H + j], gg = row[2 * H + j];
        double o = row[3 * H + j], tc = tanh(cn[n * H + j]);
        double dh_all = dy[(t * d->n + n) * H + j] + dh[n * H + j];
        double dcell = dc[n * H + j] + dh_all * o * (1.0 - tc * tc);
        double *dr = da + n * g4;

        dr[j] = dcell * gg * i * (1.0 - i);
        dr[H + j] = dcell * cp[n * H + j] * f * (1.0 - f);
        dr[2 * H + j] = dcell * i * (1.0 - gg * gg);
        dr[3 * H + j] = dh_all * tc * o * (1.0 - o);
        dc[n * H + j] = dcell * f;
      }
    rnn_gemm(g[3], g4, xt, d->c, da, g4, d->c, g4, d->n, 1, 0);
    rnn_gemm(g[4], g4, hp, H, da, g4, H, g4, d->n, 1, 0);
    for (int64_t n = 0; n < d->n; n++)
      for (int64_t j = 0; j < g4; j++)
        g[5][j] += da[n * g4 + j];
    rnn_gemm(g[0] + t * d->n * d->c, d->c, da, g4, w, g4, d->n, d->c, g4, 0,
             1);
    memset(dh, 0, (size_t)nh * sizeof *dh);
    rnn_gemm(dh, H, da, g4, r, g4, d->n, H, g4, 0, 1);
  }
}

static int lstm_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *in[9];
  wf_shape s[9], os[6];
  wf_tensor *out[6];
  double *v[9], *g[6] = {NULL}, *hs = NULL, *cs = NULL, *acts = NULL;
  double *da = NULL;
  rnn_dims d;
  int rc = 0;

  if (rnn_inputs(ctx, 9, in, s, st) || rnn_check(s, 4, 1, &d, st) ||
      rnn_check_grads(s + 6, 1, &d, st))
    return wfx_code(st);
  rnn_shape_x(&d, &os[0]);
  rnn_shape_state(&d, &os[1]);
  rnn_shape_state(&d, &os[2]);
  rnn_shape_w(&d, &os[3]);
  rnn_shape_r(&d, &os[4]);
  rnn_shape_b(&d, &os[5]);
  for (int i = 0; i < 6; i++)
    if (!(out[i] = wfx_host->kernel_output_new(ctx, i, &os[i], st)))
      return wfx_code(st);
  if (to_doubles(in, 9, v, st) || alloc_pass(&d, &hs, &cs, &acts, st))
    goto fail;
  for (int i = 0; i < 6; i++) {
    int64_t n = wfx_shape_count(&os[i]);
    if (!(g[i] =
              wfx_host->alloc((size_t)(n > 0 ? n : 1) * sizeof(double), 0))) {
      wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory for gradients");
      goto fail;
    }
    memset(g[i], 0, (size_t)(n > 0 ? n : 1) * sizeof(double));
  }
  if (!(da = wfx_host->alloc((size_t)(d.n * 4 * d.h + 1) * sizeof *da, 0))) {
    wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory for gate gradients");
    goto fail;
  }
  rnn_lstm_forward(&d, v[0], v[1], v[2], v[3], v[4], v[5], hs, cs, acts);
  lstm_backward(&d, v[0], v[3], v[4], hs, cs, acts, v[6], v[7], v[8], g, da);
  for (int i = 0; i < 6; i++)
    rnn_from_double(out[i], g[i]);
  goto done;

fail:
  rc = wfx_code(st);
done:
  free_all(v, 9);
  free_all(g, 6);
  wfx_host->free(hs);
  wfx_host->free(cs);
  wfx_host->free(acts);
  wfx_host->free(da);
  return rc;
}

/* ---- definitions ------------------------------------------------------------ */

#define T_ATTR                                                                 \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,           \
                                 .allowed_dtypes = WFX_DTYPES_FLOAT,           \
                                 .doc = "float32 or float64"                   \
  }
static const wf_attr_def lstm_attrs[] = {T_ATTR, WF_ATTR_END};

static const wf_arg_def lstm_inputs[] = {
    WF_ARG_T("x", "T", "(T, N, C) the input sequence, time first"),
    WF_ARG_T("h0", "T", "(N, H) the initial hidden state"),
    WF_ARG_T("c0", "T", "(N, H) the initial cell state"),
    WF_ARG_T("w", "T", "(C, 4H) input weights: gate blocks i, f, g, o"),
    WF_ARG_T("r", "T", "(H, 4H) recurrent weights: gate blocks i, f, g, o"),
    WF_ARG_T("b", "T", "(4H,) bias: gate blocks i, f, g, o"),
    WF_ARG_END};
static const wf_arg_def lstm_outputs[] = {
    WF_ARG_T("y", "T", "(T, N, H) the hidden state after every step"),
    WF_ARG_T("h_T", "T", "(N, H) the last hidden state"),
    WF_ARG_T("c_T", "T", "(N, H) the last cell state"), WF_ARG_END};

const wf_op_def rnn_lstm_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "LSTM",
    .inputs = lstm_inputs,
    .outputs = lstm_outputs,
    .attrs = lstm_attrs,
    .shape_fn = lstm_shape,
    .doc = "A long short-term memory layer over a whole sequence (one "
           "layer, one direction). For t = 1..T with a = x_t w + h_{t-1} r "
           "+ b split into gate blocks: i = sigmoid(a_i), f = sigmoid(a_f), "
           "g = tanh(a_g), o = sigmoid(a_o), c_t = f * c_{t-1} + i * g, h_t "
           "= o * tanh(c_t); y stacks h_1..h_T. The layout is oneDNN's "
           "vanilla LSTM (ldigo weights, ldgo bias)."};

const wf_kernel_def rnn_lstm_kernel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "LSTM",
    .device_type = "cpu",          .type_attr = "T",
    .dtypes = WFX_DTYPES_FLOAT,    .priority = 0,
    .label = "reference",          .compute = lstm_compute,
};

static const wf_arg_def lstm_grad_inputs[] = {
    WF_ARG_T("x", "T", "LSTM's x (T, N, C)"),
    WF_ARG_T("h0", "T", "LSTM's h0 (N, H)"),
    WF_ARG_T("c0", "T", "LSTM's c0 (N, H)"),
    WF_ARG_T("w", "T", "LSTM's w (C, 4H)"),
    WF_ARG_T("r", "T", "LSTM's r (H, 4H)"),
    WF_ARG_T("b", "T", "LSTM's b (4H,)"),
    WF_ARG_T("dy", "T", "(T, N, H) the gradient of y"),
    WF_ARG_T("dh_T", "T", "(N, H) the gradient of h_T"),
    WF_ARG_T("dc_T", "T", "(N, H) the gradient of c_T"),
    WF_ARG_END};
static const wf_arg_def lstm_grad_outputs[] = {
    WF_ARG_T("dx", "T", "(T, N, C)"), WF_ARG_T("dh0", "T", "(N, H)"),
    WF_ARG_T("dc0", "T", "(N, H)"),   WF_ARG_T("dw", "T", "(C, 4H)"),
    WF_ARG_T("dr", "T", "(H, 4H)"),   WF_ARG_T("db", "T", "(4H,)"),
    WF_ARG_END};

const wf_op_def rnn_lstm_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "LSTMGrad",
    .inputs = lstm_grad_inputs,
    .outputs = lstm_grad_outputs,
    .attrs = lstm_attrs,
    .shape_fn = lstm_grad_shape,
    .doc = "The gradient of LSTM: from LSTM's inputs and the gradients of "
           "its three outputs (zeros where none arrives), the gradients of "
           "its six inputs, by back-propagation through time over a "
           "recomputed forward pass."};

const wf_kernel_def rnn_lstm_grad_kernel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "LSTMGrad",
    .device_type = "cpu",          .type_attr = "T",
    .dtypes = WFX_DTYPES_FLOAT,    .priority = 0,
    .label = "reference",          .compute = lstm_grad_compute,
};
