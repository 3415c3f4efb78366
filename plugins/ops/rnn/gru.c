/* plugins/ops/rnn/gru.c — the GRU op (one layer, one direction, over a whole
 * sequence; the reset gate applied before the recurrent product, as
 * oneDNN's vanilla GRU and Keras's reset_after=False) and its backward op
 * GRUGrad: definitions, shape inference and reference CPU kernels in
 * double precision. The backward kernel recomputes the forward pass and
 * runs back-propagation through time. The gradient function is in
 * grad.c. */
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

static int gru_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape in[5], y, s;
  rnn_dims d;

  if (read_inputs(ctx, 5, in, st) || rnn_check(in, 3, 0, &d, st))
    return wfx_code(st);
  rnn_shape_y(&d, &y);
  rnn_shape_state(&d, &s);
  wfx_host->shape_set_output(ctx, 0, &y);
  wfx_host->shape_set_output(ctx, 1, &s);
  return 0;
}

static int gru_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape in[7], s;
  rnn_dims d;

  if (read_inputs(ctx, 7, in, st) || rnn_check(in, 3, 0, &d, st) ||
      rnn_check_grads(in + 5, 0, &d, st))
    return wfx_code(st);
  rnn_shape_x(&d, &s);
  wfx_host->shape_set_output(ctx, 0, &s);
  rnn_shape_state(&d, &s);
  wfx_host->shape_set_output(ctx, 1, &s);
  rnn_shape_w(&d, &s);
  wfx_host->shape_set_output(ctx, 2, &s);
  rnn_shape_r(&d, &s);
  wfx_host->shape_set_output(ctx, 3, &s);
  rnn_shape_b(&d, &s);
  wfx_host->shape_set_output(ctx, 4, &s);
  return 0;
}

/* ---- kernels ----------------------------------------------------------------- */

/* Host allocations of n doubles each (zeroed), all or none. */
static int alloc_zeroed(double **p, const int64_t *n, int k, wf_status *st) {

  for (int i = 0; i < k; i++)
    p[i] = NULL;
  for (int i = 0; i < k; i++) {
    size_t bytes = (size_t)(n[i] > 0 ? n[i] : 1) * sizeof(double);
    if (!(p[i] = wfx_host->alloc(bytes, 0))) {
      for (int j = 0; j < i; j++)
        wfx_host->free(p[j]);
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "out of memory for %zu bytes of GRU state", bytes);
    }
    memset(p[i], 0, bytes);
  }
  return 0;
}

static void free_all(double **v, int n) {
  for (int i = 0; i < n; i++)
    wfx_host->free(v[i]);
}

/* Double copies of the first n inputs. */
static int to_doubles(const wf_tensor **t, int n, double **v, wf_status *st) {
  for (int i = 0; i < n; i++)
    v[i] = NULL;
  for (int i = 0; i < n; i++)
    if (!(v[i] = rnn_to_double(t[i], st)))
      return wfx_code(st);
  return 0;
}

static int gru_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *in[5];
  wf_shape s[5], ys, ss;
  wf_tensor *y, *ht;
  double *v[5], *pass[2] = {NULL, NULL};
  rnn_dims d;
  int64_t nh;
  int rc = 0;

  if (rnn_inputs(ctx, 5, in, s, st) || rnn_check(s, 3, 0, &d, st))
    return wfx_code(st);
  rnn_shape_y(&d, &ys);
  rnn_shape_state(&d, &ss);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &ys, st)) ||
      !(ht = wfx_host->kernel_output_new(ctx, 1, &ss, st)))
    return wfx_code(st);
  nh = d.n * d.h;
  if (nh == 0)
    return 0;
  if (to_doubles(in, 5, v, st) ||
      alloc_zeroed(pass, (int64_t[]){(d.t + 1) * nh, d.t * d.n * 3 * d.h}, 2,
                   st)) {
    rc = wfx_code(st);
    goto done;
  }
  rnn_gru_forward(&d, v[0], v[1], v[2], v[3], v[4], pass[0], pass[1]);
  rnn_from_double(y, pass[0] + nh);
  rnn_from_double(ht, pass[0] + d.t * nh);
done:
  free_all(v, 5);
  free_all(pass, 2);
  return rc;
}

/* Back-propagation through time over a recorded forward pass: g[0..4]
 * receive dx, dh0, dw, dr, db (zeroed by the caller). Scratch: da (N, 3H),
 * rh and dh_new (N, H) each. */
static void gru_backward(const rnn_dims *d, const double *x, const double *w,
                         const double *r, const double *hs,
                         const double *acts, const double *dy,
                         const double *dht, double **g, double *da,
                         double *rh, double *dhn) {
  int64_t H = d->h, nh = d->n * H, g3 = 3 * H;
  double *dh = g[1];

  memcpy(dh, dht, (size_t)nh * sizeof *dh);
  for (int64_t t = d->t - 1; t >= 0; t--) {
    const double *a = acts + t * d->n * g3, *hp = hs + t * nh;
    const double *xt = x + t * d->n * d->c;

    /* Through h_t = u h + (1 - u) o: the u and o gates, and h directly. */
    for (int64_t n = 0; n < d->n; n++)
      for (int64_t j = 0; j < H; j++) {
        const double *row = a + n * g3;
        double u = row[j], o = row[2 * H + j];
        double dh_all = dy[(t * d->n + n) * H + j] + dh[n * H + j];

        da[n * g3 + j] = dh_all * (hp[n * H + j] - o) * u * (1.0 - u);
        da[n * g3 + 2 * H + j] = dh_all * (1.0 - u) * (1.0 - o * o);
        dhn[n * H + j] = dh_all * u;
      }
    /* Through o's r * h: d(rh) = da_o r_o^T, into the r gate and h. */
    memset(rh, 0, (size_t)nh * sizeof *rh);
    rnn_gemm(rh, H, da + 2 * H, g3, r + 2 * H, g3, d->n, H, H, 0, 1);
    for (int64_t n = 0; n < d->n; n++)
      for (int64_t k = 0; k < H; k++) {
        double rr = a[n * g3 + H + k], drh = rh[n * H + k];
        da[n * g3 + H + k] = drh * hp[n * H + k] * rr * (1.0 - rr);
        dhn[n * H + k] += drh * rr;
        rh[n * H + k] = rr * hp[n * H + k]; /* now r * h itself */
      }
    rnn_gemm(g[2], g3, xt, d->c, da, g3, d->c, g3, d->n, 1, 0);
    rnn_gemm(g[3], g3, hp, H, da, g3, H, 2 * H, d->n, 1, 0);
    rnn_gemm(g[3] + 2 * H, g3, rh, H, da + 2 * H, g3, H, H, d->n, 1, 0);
    for (int64_t n = 0; n < d->n; n++)
      for (int64_t j = 0; j < g3; j++)
        g[4][j] += da[n * g3 + j];
    rnn_gemm(g[0] + t * d->n * d->c, d->c, da, g3, w, g3, d->n, d->c, g3, 0,
             1);
    rnn_gemm(dhn, H, da, g3, r, g3, d->n, H, 2 * H, 0, 1);
    memcpy(dh, dhn, (size_t)nh * sizeof *dh);
  }
}

static int gru_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *in[7];
  wf_shape s[7], os[5];
  wf_tensor *out[5];
  double *v[7], *g[5] = {NULL}, *work[5] = {NULL};
  rnn_dims d;
  int64_t sizes[5], nh;
  int rc = 0;

  if (rnn_inputs(ctx, 7, in, s, st) || rnn_check(s, 3, 0, &d, st) ||
      rnn_check_grads(s + 5, 0, &d, st))
    return wfx_code(st);
  rnn_shape_x(&d, &os[0]);
  rnn_shape_state(&d, &os[1]);
  rnn_shape_w(&d, &os[2]);
  rnn_shape_r(&d, &os[3]);
  rnn_shape_b(&d, &os[4]);
  for (int i = 0; i < 5; i++) {
    if (!(out[i] = wfx_host->kernel_output_new(ctx, i, &os[i], st)))
      return wfx_code(st);
    sizes[i] = wfx_shape_count(&os[i]);
  }
  nh = d.n * d.h;
  if (to_doubles(in, 7, v, st) || alloc_zeroed(g, sizes, 5, st) ||
      alloc_zeroed(work,
                   (int64_t[]){(d.t + 1) * nh, d.t * d.n * 3 * d.h,
                               d.n * 3 * d.h, nh, nh},
                   5, st)) {
    rc = wfx_code(st);
    goto done;
  }
  rnn_gru_forward(&d, v[0], v[1], v[2], v[3], v[4], work[0], work[1]);
  gru_backward(&d, v[0], v[2], v[3], work[0], work[1], v[5], v[6], g, work[2],
               work[3], work[4]);
  for (int i = 0; i < 5; i++)
    rnn_from_double(out[i], g[i]);
done:
  free_all(v, 7);
  free_all(g, 5);
  free_all(work, 5);
  return rc;
}

/* ---- definitions ------------------------------------------------------------ */

static const wf_attr_def gru_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WFX_DTYPES_FLOAT, .doc = "float32 or float64"},
    WF_ATTR_END};

static const wf_arg_def gru_inputs[] = {
    WF_ARG_T("x", "T", "(T, N, C) the input sequence, time first"),
    WF_ARG_T("h0", "T", "(N, H) the initial hidden state"),
    WF_ARG_T("w", "T", "(C, 3H) input weights: gate blocks u, r, o"),
    WF_ARG_T("r", "T", "(H, 3H) recurrent weights: gate blocks u, r, o"),
    WF_ARG_T("b", "T", "(3H,) bias: gate blocks u, r, o"), WF_ARG_END};
static const wf_arg_def gru_outputs[] = {
    WF_ARG_T("y", "T", "(T, N, H) the hidden state after every step"),
    WF_ARG_T("h_T", "T", "(N, H) the last hidden state"), WF_ARG_END};

const wf_op_def rnn_gru_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "GRU",
    .inputs = gru_inputs,
    .outputs = gru_outputs,
    .attrs = gru_attrs,
    .shape_fn = gru_shape,
    .doc = "A gated recurrent unit layer over a whole sequence (one layer, "
           "one direction). For t = 1..T, gate blocks of w, r and b: u = "
           "sigmoid(x_t w_u + h_{t-1} r_u + b_u), r = sigmoid(x_t w_r + "
           "h_{t-1} r_r + b_r), o = tanh(x_t w_o + (r * h_{t-1}) r_o + b_o), "
           "h_t = u * h_{t-1} + (1 - u) * o; y stacks h_1..h_T. The reset "
           "gate acts before the recurrent product (oneDNN's vanilla GRU, "
           "Keras's reset_after=False), not after it as in cuDNN and "
           "PyTorch."};

const wf_kernel_def rnn_gru_kernel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "GRU",
    .device_type = "cpu",          .type_attr = "T",
    .dtypes = WFX_DTYPES_FLOAT,    .priority = 0,
    .label = "reference",          .compute = gru_compute,
};

static const wf_arg_def gru_grad_inputs[] = {
    WF_ARG_T("x", "T", "GRU's x (T, N, C)"),
    WF_ARG_T("h0", "T", "GRU's h0 (N, H)"),
    WF_ARG_T("w", "T", "GRU's w (C, 3H)"),
    WF_ARG_T("r", "T", "GRU's r (H, 3H)"),
    WF_ARG_T("b", "T", "GRU's b (3H,)"),
    WF_ARG_T("dy", "T", "(T, N, H) the gradient of y"),
    WF_ARG_T("dh_T", "T", "(N, H) the gradient of h_T"),
    WF_ARG_END};
static const wf_arg_def gru_grad_outputs[] = {
    WF_ARG_T("dx", "T", "(T, N, C)"), WF_ARG_T("dh0", "T", "(N, H)"),
    WF_ARG_T("dw", "T", "(C, 3H)"),   WF_ARG_T("dr", "T", "(H, 3H)"),
    WF_ARG_T("db", "T", "(3H,)"),     WF_ARG_END};

const wf_op_def rnn_gru_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "GRUGrad",
    .inputs = gru_grad_inputs,
    .outputs = gru_grad_outputs,
    .attrs = gru_attrs,
    .shape_fn = gru_grad_shape,
    .doc = "The gradient of GRU: from GRU's inputs and the gradients of its "
           "two outputs (zeros where none arrives), the gradients of its "
           "five inputs, by back-propagation through time over a recomputed "
           "forward pass."};

const wf_kernel_def rnn_gru_grad_kernel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "GRUGrad",
    .device_type = "cpu",          .type_attr = "T",
    .dtypes = WFX_DTYPES_FLOAT,    .priority = 0,
    .label = "reference",          .compute = gru_grad_compute,
};
