/* plugins/ops/rnn/rnn.c — what LSTM and GRU share: the dimension checks of
 * their inputs and output gradients, the shapes they give, conversions to
 * and from double, a plain row-major matrix product, and the reference
 * forward passes of both cells in double precision.
 *
 * Nothing here is fast: the reference kernels are the correctness oracle,
 * the CPU plugin's oneDNN kernels are what runs. */
#include <config.h>

#include "rnn.h"

#include <inttypes.h>
#include <string.h>

/* ---- dimension checks ------------------------------------------------------ */

static const char *const dim_names[] = {"T", "N", "C", "H"};

/* Merges a known candidate for dimension *v (index k of dim_names), read
 * from input `what` of shape s. */
static int merge(int64_t *v, int k, int64_t cand, const char *what,
                 const wf_shape *s, wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (cand < 0)
    return 0;
  if (*v < 0) {
    *v = cand;
    return 0;
  }
  if (*v == cand)
    return 0;
  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "%s has shape %s, giving %s = %" PRId64
                  ", but the inputs before it give %s = %" PRId64,
                  what, wfx_shape_str(s, buf, sizeof buf), dim_names[k], cand,
                  dim_names[k], *v);
}

static int want_rank(const wf_shape *s, int rank, const char *what,
                     const char *layout, wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (s->rank < 0 || s->rank == rank)
    return 0;
  return wfx_fail(st, WF_INVALID_ARGUMENT, "%s must have rank %d %s, got %s",
                  what, rank, layout, wfx_shape_str(s, buf, sizeof buf));
}

/* The H of a gate-blocked dimension of `cols` entries. */
static int gate_cols(int64_t cols, int gates, const char *what,
                     const wf_shape *s, int64_t *h, wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  *h = -1;
  if (cols < 0)
    return 0;
  if (cols % gates != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%s has shape %s: %" PRId64 " is not %d * H (one block "
                    "of H per gate)",
                    what, wfx_shape_str(s, buf, sizeof buf), cols, gates);
  *h = cols / gates;
  return 0;
}

int rnn_check(const wf_shape *in, int gates, int has_c, rnn_dims *d,
              wf_status *st) {
  const wf_shape *x = &in[0], *w = &in[has_c ? 3 : 2];
  const wf_shape *r = &in[has_c ? 4 : 3], *b = &in[has_c ? 5 : 4];
  int64_t h;

  d->t = d->n = d->c = d->h = -1;
  d->gates = gates;
  if (want_rank(x, 3, "x", "(T, N, C)", st))
    return wfx_code(st);
  if (x->rank == 3) {
    d->t = x->dims[0];
    d->n = x->dims[1];
    d->c = x->dims[2];
  }
  for (int i = 1; i <= (has_c ? 2 : 1); i++) {
    const char *what = i == 1 ? "h0" : "c0";
    if (want_rank(&in[i], 2, what, "(N, H)", st))
      return wfx_code(st);
    if (in[i].rank == 2 &&
        (merge(&d->n, 1, in[i].dims[0], what, &in[i], st) ||
         merge(&d->h, 3, in[i].dims[1], what, &in[i], st)))
      return wfx_code(st);
  }
  if (want_rank(w, 2, "w", gates == 4 ? "(C, 4H)" : "(C, 3H)", st) ||
      want_rank(r, 2, "r", gates == 4 ? "(H, 4H)" : "(H, 3H)", st) ||
      want_rank(b, 1, "b", gates == 4 ? "(4H,)" : "(3H,)", st))
    return wfx_code(st);
  if (w->rank == 2 &&
      (merge(&d->c, 2, w->dims[0], "w", w, st) ||
       gate_cols(w->dims[1], gates, "w", w, &h, st) ||
       merge(&d->h, 3, h, "w", w, st)))
    return wfx_code(st);
  if (r->rank == 2 &&
      (merge(&d->h, 3, r->dims[0], "r", r, st) ||
       gate_cols(r->dims[1], gates, "r", r, &h, st) ||
       merge(&d->h, 3, h, "r", r, st)))
    return wfx_code(st);
  if (b->rank == 1 && (gate_cols(b->dims[0], gates, "b", b, &h, st) ||
                       merge(&d->h, 3, h, "b", b, st)))
    return wfx_code(st);
  return 0;
}

int rnn_check_grads(const wf_shape *in, int has_c, const rnn_dims *d,
                    wf_status *st) {
  wf_shape want[3], merged;
  static const char *const names[] = {"dy against y", "dh_T against h_T",
                                      "dc_T against c_T"};

  rnn_shape_y(d, &want[0]);
  rnn_shape_state(d, &want[1]);
  rnn_shape_state(d, &want[2]);
  for (int i = 0; i < (has_c ? 3 : 2); i++)
    if (in[i].rank >= 0 &&
        wfx_shape_merge(&want[i], &in[i], &merged, names[i], st))
      return wfx_code(st);
  return 0;
}

void rnn_shape_y(const rnn_dims *d, wf_shape *s) {
  wfx_shape_make(s, 3, (int64_t[]){d->t, d->n, d->h});
}

void rnn_shape_state(const rnn_dims *d, wf_shape *s) {
  wfx_shape_make(s, 2, (int64_t[]){d->n, d->h});
}

void rnn_shape_x(const rnn_dims *d, wf_shape *s) {
  wfx_shape_make(s, 3, (int64_t[]){d->t, d->n, d->c});
}

void rnn_shape_w(const rnn_dims *d, wf_shape *s) {
  wfx_shape_make(s, 2, (int64_t[]){d->c, d->h < 0 ? -1 : d->gates * d->h});
}

void rnn_shape_r(const rnn_dims *d, wf_shape *s) {
  wfx_shape_make(s, 2, (int64_t[]){d->h, d->h < 0 ? -1 : d->gates * d->h});
}

void rnn_shape_b(const rnn_dims *d, wf_shape *s) {
  wfx_shape_make(s, 1, (int64_t[]){d->h < 0 ? -1 : d->gates * d->h});
}

/* ---- kernel helpers ------------------------------------------------------------ */

int rnn_inputs(wf_kernel_ctx *ctx, int n, const wf_tensor **t, wf_shape *s,
               wf_status *st) {
  for (int i = 0; i < n; i++)
    if (wfx_kernel_input(ctx, i, &t[i], &s[i], st))
      return wfx_code(st);
  return 0;
}

double *rnn_to_double(const wf_tensor *t, wf_status *st) {
  int64_t n = wfx_count(t);
  double *v = wfx_host->alloc((size_t)(n > 0 ? n : 1) * sizeof *v, 0);

  if (!v) {
    wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory for %" PRId64 " doubles",
             n);
    return NULL;
  }
  if (wfx_dtype(t) == WF_FLOAT32) {
    const float *p = wfx_data(t);
    for (int64_t i = 0; i < n; i++)
      v[i] = p[i];
  } else if (n > 0) {
    memcpy(v, wfx_data(t), (size_t)n * sizeof *v);
  }
  return v;
}

void rnn_from_double(wf_tensor *t, const double *v) {
  int64_t n = wfx_count(t);

  if (wfx_dtype(t) == WF_FLOAT32) {
    float *p = wfx_data(t);
    for (int64_t i = 0; i < n; i++)
      p[i] = (float)v[i];
  } else if (n > 0) {
    memcpy(wfx_data(t), v, (size_t)n * sizeof *v);
  }
}

void rnn_gemm(double *out, int64_t ldo, const double *a, int64_t lda,
              const double *b, int64_t ldb, int64_t m, int64_t n, int64_t k,
              int trans_a, int trans_b) {
  for (int64_t i = 0; i < m; i++) {
    double *o = out + i * ldo;
    for (int64_t p = 0; p < k; p++) {
      double av = trans_a ? a[p * lda + i] : a[i * lda + p];
      if (trans_b)
        for (int64_t j = 0; j < n; j++)
          o[j] += av * b[j * ldb + p];
      else
        for (int64_t j = 0; j < n; j++)
          o[j] += av * b[p * ldb + j];
    }
  }
}

/* ---- the cells ------------------------------------------------------------ */

/* gates (N, G*H) = b + x_t w, every row. */
static void input_part(const rnn_dims *d, double *gates, const double *xt,
                       const double *w, const double *b) {
  int64_t gh = d->gates * d->h;

  for (int64_t n = 0; n < d->n; n++)
    memcpy(gates + n * gh, b, (size_t)gh * sizeof *b);
  rnn_gemm(gates, gh, xt, d->c, w, gh, d->n, gh, d->c, 0, 0);
}

void rnn_lstm_forward(const rnn_dims *d, const double *x, const double *h0,
                      const double *c0, const double *w, const double *r,
                      const double *b, double *hs, double *cs, double *acts) {
  int64_t nh = d->n * d->h, H = d->h, g4 = 4 * H;

  memcpy(hs, h0, (size_t)nh * sizeof *hs);
  memcpy(cs, c0, (size_t)nh * sizeof *cs);
  for (int64_t t = 0; t < d->t; t++) {
    double *a = acts + t * d->n * g4;
    const double *hp = hs + t * nh, *cp = cs + t * nh;
    double *hn = hs + (t + 1) * nh, *cn = cs + (t + 1) * nh;

    input_part(d, a, x + t * d->n * d->c, w, b);
    rnn_gemm(a, g4, hp, H, r, g4, d->n, g4, H, 0, 0);
    for (int64_t n = 0; n < d->n; n++)
      for (int64_t j = 0; j < H; j++) {
        double *row = a + n * g4;
        double i = rnn_sigmoid(row[j]), f = rnn_sigmoid(row[H + j]);
        double g = tanh(row[2 * H + j]), o = rnn_sigmoid(row[3 * H + j]);
        double c = f * cp[n * H + j] + i * g;

        row[j] = i, row[H + j] = f, row[2 * H + j] = g, row[3 * H + j] = o;
        cn[n * H + j] = c;
        hn[n * H + j] = o * tanh(c);
      }
  }
}

void rnn_gru_forward(const rnn_dims *d, const double *x, const double *h0,
                     const double *w, const double *r, const double *b,
                     double *hs, double *acts) {
  int64_t nh = d->n * d->h, H = d->h, g3 = 3 * H;

  memcpy(hs, h0, (size_t)nh * sizeof *hs);
  for (int64_t t = 0; t < d->t; t++) {
    double *a = acts + t * d->n * g3;
    const double *hp = hs + t * nh;
    double *hn = hs + (t + 1) * nh;

    input_part(d, a, x + t * d->n * d->c, w, b);
    /* u and r see h; o sees r * h. */
    rnn_gemm(a, g3, hp, H, r, g3, d->n, 2 * H, H, 0, 0);
    for (int64_t n = 0; n < d->n; n++) {
      double *row = a + n * g3;
      for (int64_t j = 0; j < 2 * H; j++)
        row[j] = rnn_sigmoid(row[j]);
      for (int64_t k = 0; k < H; k++) {
        double rh = row[H + k] * hp[n * H + k];
        const double *ro = r + k * g3 + 2 * H;
        for (int64_t j = 0; j < H; j++)
          row[2 * H + j] += rh * ro[j];
      }
      for (int64_t j = 0; j < H; j++) {
        double u = row[j], o = tanh(row[2 * H + j]);
        row[2 * H + j] = o;
        hn[n * H + j] = u * hp[n * H + j] + (1.0 - u) * o;
      }
    }
  }
}
