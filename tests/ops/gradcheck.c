/* tests/ops/gradcheck.c — the finite-difference gradient check declared in
 * gradcheck.h: graph and loss construction, wf_graph_add_gradients, the
 * session runs at random points, and the comparison. It uses only the
 * public API and reports through stderr and its return value (no cmocka),
 * so that tests can also assert that a wrong gradient is caught. */
#include <config.h>

#include "gradcheck.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GC_REPORT_MAX 8

/* ---- random numbers ---------------------------------------------------- */

static uint64_t next_u64(gc_rng *r) {
  uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

double gc_uniform(gc_rng *r, double lo, double hi) {
  /* 53 random bits: [0, 1) exactly representable */
  double u = (double)(next_u64(r) >> 11) * 0x1.0p-53;

  return lo + (hi - lo) * u;
}

static uint64_t name_seed(const char *name) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);

  for (const char *p = name; *p; p++)
    h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
  return h;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;

  return (x > y) - (x < y);
}

/* The default fill described in gradcheck.h. Returns 0, or -1 when the
 * input's constraints cannot be met (printed). */
static int fill_default(const gc_spec *s, int i, double *x, int64_t n,
                        gc_rng *r) {
  const gc_input *in = &s->in[i];
  double lo = in->lo, hi = in->hi;

  if (lo == 0 && hi == 0)
    lo = -2, hi = 2;
  if (in->min_gap > 0) {
    double room = (hi - lo) - (double)(n - 1) * in->min_gap;

    if (in->min_abs > 0 || room <= 0) {
      fprintf(stderr,
              "gradcheck %s: input %d: %" PRId64 " values %g apart do not "
              "fit [%g, %g) (and min_gap ignores min_abs)\n",
              s->name, i, n, in->min_gap, lo, hi);
      return -1;
    }
    for (int64_t k = 0; k < n; k++)
      x[k] = gc_uniform(r, 0, room);
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    for (int64_t k = 0; k < n; k++)
      x[k] += lo + (double)k * in->min_gap;
    for (int64_t k = n - 1; k > 0; k--) { /* shuffle: no sorted inputs */
      int64_t j = (int64_t)(next_u64(r) % (uint64_t)(k + 1));
      double t = x[k];
      x[k] = x[j];
      x[j] = t;
    }
    return 0;
  }
  if (in->min_abs >= fmax(fabs(lo), fabs(hi))) {
    fprintf(stderr, "gradcheck %s: input %d: no value of [%g, %g) has "
                    "|x| >= %g\n",
            s->name, i, lo, hi, in->min_abs);
    return -1;
  }
  for (int64_t k = 0; k < n; k++)
    do
      x[k] = gc_uniform(r, lo, hi);
    while (fabs(x[k]) < in->min_abs);
  return 0;
}

/* ---- building ---------------------------------------------------------- */

int gc_op(wf_graph *g, const char *op, const wf_output *in, int n,
          const gc_attr *attrs, wf_output *y, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node *node;

  for (int i = 0; i < n; i++)
    wf_node_desc_add_input(d, in[i]);
  for (int i = 0; attrs && attrs[i].name; i++)
    wf_node_desc_set_attr(d, attrs[i].name, &attrs[i].value);
  node = wf_node_desc_finish(d, st);
  if (!node)
    return wf_status_code(st);
  *y = (wf_output){node, 0};
  return 0;
}

int gc_const(wf_graph *g, wf_dtype dtype, const int64_t *dims, int rank,
             const void *data, wf_output *y, wf_status *st) {
  wf_tensor *t = wf_tensor_new(dtype, dims, rank, st);
  wf_node_desc *d;
  wf_node *node;

  if (!t)
    return wf_status_code(st);
  memcpy(wf_tensor_data(t), data, wf_tensor_nbytes(t));
  d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", dtype);
  wf_tensor_release(t);
  node = wf_node_desc_finish(d, st);
  if (!node)
    return wf_status_code(st);
  *y = (wf_output){node, 0};
  return 0;
}

/* ---- one check --------------------------------------------------------- */

typedef struct check {
  const gc_spec *s;
  wf_status *st;
  wf_graph *g;
  wf_session *sess;
  wf_callable *c_y, *c_loss, *c_grad;
  wf_output x[GC_MAX_INPUTS], y, w, loss;
  wf_gradient dx[GC_MAX_INPUTS];
  int64_t count[GC_MAX_INPUTS];
  wf_tensor *feed[GC_MAX_INPUTS + 1]; /* x_0 .. x_{n-1}, w */
  int ngrad;                          /* tensors c_grad fetches */
  double *analytic[GC_MAX_INPUTS];
} check;

static int fail_status(const check *c, const char *doing) {
  fprintf(stderr, "gradcheck %s: %s: %s\n", c->s->name, doing,
          wf_status_message(c->st));
  return -1;
}

static int64_t shape_count(const gc_input *in) {
  int64_t n = 1;

  for (int k = 0; k < in->rank; k++)
    n *= in->dims[k];
  return n;
}

/* "(i, j, k)" of flat index e in x_i's shape. */
static char *coords(const gc_input *in, int64_t e, char *buf, size_t len) {
  int64_t idx[WF_MAX_RANK];
  size_t used = 0;

  for (int k = in->rank - 1; k >= 0; k--) {
    idx[k] = in->dims[k] ? e % in->dims[k] : 0;
    e = in->dims[k] ? e / in->dims[k] : 0;
  }
  used += (size_t)snprintf(buf, len, "(");
  for (int k = 0; k < in->rank && used < len; k++)
    used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64,
                             k ? ", " : "", idx[k]);
  if (used < len)
    snprintf(buf + used, len - used, ")");
  return buf;
}

/* Placeholders, y, the loss and the gradients. */
static int build(check *c) {
  const gc_spec *s = c->s;
  wf_node_desc *d;
  wf_node *n;
  char name[32], a[128], b[128];

  for (int i = 0; i < s->num_inputs; i++) {
    int64_t dims[WF_MAX_RANK];

    for (int k = 0; k < s->in[i].rank; k++)
      dims[k] = s->unknown_dims ? -1 : s->in[i].dims[k];
    snprintf(name, sizeof name, "x%d", i);
    d = wf_node_desc_new(c->g, "Placeholder", name);
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
    wf_node_desc_set_attr_shape(d, "shape", dims, s->in[i].rank);
    if (!(n = wf_node_desc_finish(d, c->st)))
      return fail_status(c, "adding a placeholder");
    c->x[i] = (wf_output){n, 0};
  }
  if (s->build(c->g, c->x, &c->y, s->build_arg, c->st))
    return fail_status(c, "building y");
  if (wf_node_output_dtype(c->y.node, c->y.index) != WF_FLOAT64) {
    fprintf(stderr, "gradcheck %s: y is %s; build must return float64\n",
            s->name,
            wf_dtype_name(wf_node_output_dtype(c->y.node, c->y.index)));
    return -1;
  }
  d = wf_node_desc_new(c->g, "Placeholder", "gradcheck_w");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", NULL, -1);
  if (!(n = wf_node_desc_finish(d, c->st)))
    return fail_status(c, "adding w");
  c->w = (wf_output){n, 0};
  {
    wf_output yw[2] = {c->y, c->w}, prod;

    if (gc_op(c->g, "Mul", yw, 2, NULL, &prod, c->st) ||
        gc_op(c->g, "Sum", &prod, 1, NULL, &c->loss, c->st))
      return fail_status(c, "building the loss Sum(y * w)");
  }
  if (wf_graph_add_gradients(c->g, &c->loss, 1, NULL, c->x, s->num_inputs,
                             c->dx, c->st))
    return fail_status(c, "wf_graph_add_gradients");
  for (int i = 0; i < s->num_inputs; i++) {
    wf_shape gs, xs;

    if (!c->dx[i].dense.node)
      continue;
    wf_node_output_shape(c->dx[i].dense.node, c->dx[i].dense.index, &gs);
    wf_node_output_shape(c->x[i].node, 0, &xs);
    if (!wf_shape_compatible(&gs, &xs)) {
      fprintf(stderr,
              "gradcheck %s: input %d: the gradient's static shape %s does "
              "not match x's %s\n",
              s->name, i, wf_shape_str(&gs, a, sizeof a),
              wf_shape_str(&xs, b, sizeof b));
      return -1;
    }
  }
  return 0;
}

/* The session and its three signatures: y; the loss; the gradients. */
static int prepare(check *c) {
  const gc_spec *s = c->s;
  wf_output feeds[GC_MAX_INPUTS + 1], fetch[3 * GC_MAX_INPUTS];
  int nf = s->num_inputs;

  if (!(c->sess = wf_session_new(c->g, c->st)))
    return fail_status(c, "wf_session_new");
  for (int i = 0; i < nf; i++)
    feeds[i] = c->x[i];
  feeds[nf] = c->w;
  c->ngrad = 0;
  for (int i = 0; i < nf; i++) {
    if (c->dx[i].dense.node) {
      fetch[c->ngrad++] = c->dx[i].dense;
    } else if (c->dx[i].indices.node) {
      fetch[c->ngrad++] = c->dx[i].indices;
      fetch[c->ngrad++] = c->dx[i].values;
      fetch[c->ngrad++] = c->dx[i].dense_shape;
    }
  }
  if (!(c->c_y = wf_session_prepare(c->sess, feeds, nf, &c->y, 1, NULL, 0,
                                    c->st)) ||
      !(c->c_loss = wf_session_prepare(c->sess, feeds, nf + 1, &c->loss, 1,
                                       NULL, 0, c->st)))
    return fail_status(c, "preparing the forward signatures");
  if (c->ngrad > 0 &&
      !(c->c_grad = wf_session_prepare(c->sess, feeds, nf + 1, fetch,
                                       c->ngrad, NULL, 0, c->st)))
    return fail_status(c, "preparing the gradient signature");
  return 0;
}

static int run_loss(check *c, double *loss) {
  wf_tensor *out = NULL;

  if (wf_callable_run(c->c_loss, NULL, c->feed, &out, NULL, c->st))
    return fail_status(c, "running the loss");
  *loss = *(const double *)wf_tensor_data(out);
  wf_tensor_release(out);
  return 0;
}

/* Scatters a sparse gradient of input i into c->analytic[i]. */
static int densify(check *c, int i, wf_tensor *const *t) {
  const gc_input *in = &c->s->in[i];
  const wf_tensor *idx = t[0], *val = t[1], *shp = t[2];
  int64_t k = wf_tensor_count(idx), row;

  if (in->rank < 1 || wf_tensor_dtype(shp) != WF_INT64 ||
      wf_tensor_count(shp) != in->rank || wf_tensor_dtype(val) != WF_FLOAT64 ||
      (wf_tensor_dtype(idx) != WF_INT32 && wf_tensor_dtype(idx) != WF_INT64)) {
    fprintf(stderr,
            "gradcheck %s: input %d: malformed sparse gradient (indices %s, "
            "values %s, dense_shape %s of %" PRId64 " entries)\n",
            c->s->name, i, wf_dtype_name(wf_tensor_dtype(idx)),
            wf_dtype_name(wf_tensor_dtype(val)),
            wf_dtype_name(wf_tensor_dtype(shp)), wf_tensor_count(shp));
    return -1;
  }
  for (int d = 0; d < in->rank; d++)
    if (((const int64_t *)wf_tensor_data(shp))[d] != in->dims[d]) {
      fprintf(stderr,
              "gradcheck %s: input %d: sparse dense_shape[%d] is %" PRId64
              ", x has %" PRId64 "\n",
              c->s->name, i, d, ((const int64_t *)wf_tensor_data(shp))[d],
              in->dims[d]);
      return -1;
    }
  row = in->dims[0] ? c->count[i] / in->dims[0] : 0;
  if (wf_tensor_count(val) != k * row) {
    fprintf(stderr,
            "gradcheck %s: input %d: %" PRId64 " sparse values for %" PRId64
            " rows of %" PRId64 "\n",
            c->s->name, i, wf_tensor_count(val), k, row);
    return -1;
  }
  for (int64_t r = 0; r < k; r++) {
    int64_t at = wf_tensor_dtype(idx) == WF_INT32
                     ? ((const int32_t *)wf_tensor_data(idx))[r]
                     : ((const int64_t *)wf_tensor_data(idx))[r];
    const double *v = (const double *)wf_tensor_data(val) + r * row;

    if (at < 0 || at >= in->dims[0]) {
      fprintf(stderr,
              "gradcheck %s: input %d: sparse index %" PRId64 " is out of "
              "range [0, %" PRId64 ")\n",
              c->s->name, i, at, in->dims[0]);
      return -1;
    }
    for (int64_t e = 0; e < row; e++)
      c->analytic[i][at * row + e] += v[e];
  }
  return 0;
}

/* Runs the gradient signature into c->analytic (zeros for no gradient). */
static int run_analytic(check *c) {
  wf_tensor *out[3 * GC_MAX_INPUTS] = {NULL};
  int k = 0, rc = 0;
  char a[128], b[128];

  for (int i = 0; i < c->s->num_inputs; i++)
    memset(c->analytic[i], 0, (size_t)c->count[i] * sizeof(double));
  if (c->ngrad == 0)
    return 0;
  if (wf_callable_run(c->c_grad, NULL, c->feed, out, NULL, c->st))
    return fail_status(c, "running the gradients");
  for (int i = 0; i < c->s->num_inputs && !rc; i++) {
    if (c->dx[i].dense.node) {
      wf_shape gs, xs;

      wf_tensor_shape(out[k], &gs);
      wf_tensor_shape(c->feed[i], &xs);
      if (wf_tensor_dtype(out[k]) != WF_FLOAT64 || !wf_shape_equal(&gs, &xs)) {
        fprintf(stderr,
                "gradcheck %s: input %d: the gradient is %s %s, x is "
                "float64 %s\n",
                c->s->name, i, wf_dtype_name(wf_tensor_dtype(out[k])),
                wf_shape_str(&gs, a, sizeof a), wf_shape_str(&xs, b, sizeof b));
        rc = -1;
        break;
      }
      memcpy(c->analytic[i], wf_tensor_data(out[k]),
             (size_t)c->count[i] * sizeof(double));
      k++;
    } else if (c->dx[i].indices.node) {
      rc = densify(c, i, out + k);
      k += 3;
    }
  }
  for (int j = 0; j < c->ngrad; j++)
    wf_tensor_release(out[j]);
  return rc;
}

/* One point: fills x and w, compares every element. Returns the number of
 * mismatches, or -1. */
static int check_point(check *c, gc_rng *r, int point) {
  const gc_spec *s = c->s;
  double step = s->step > 0 ? s->step : 1e-6;
  double rtol = s->rtol > 0 ? s->rtol : 1e-6;
  double atol = s->atol > 0 ? s->atol : 1e-7;
  wf_tensor *y = NULL;
  wf_shape ys;
  int bad = 0;
  char where[160];

  for (int i = 0; i < s->num_inputs; i++) {
    double *x = wf_tensor_data(c->feed[i]);

    if (s->in[i].fill)
      s->in[i].fill(x, c->count[i], r, s->in[i].fill_arg);
    else if (fill_default(s, i, x, c->count[i], r))
      return -1;
  }
  if (wf_callable_run(c->c_y, NULL, c->feed, &y, NULL, c->st))
    return fail_status(c, "running y");
  wf_tensor_shape(y, &ys);
  wf_tensor_release(y);
  wf_tensor_release(c->feed[s->num_inputs]);
  c->feed[s->num_inputs] =
      wf_tensor_new(WF_FLOAT64, ys.dims, ys.rank, c->st);
  if (!c->feed[s->num_inputs])
    return fail_status(c, "making w");
  for (int64_t k = 0; k < wf_shape_count(&ys); k++)
    ((double *)wf_tensor_data(c->feed[s->num_inputs]))[k] =
        gc_uniform(r, -1, 1);
  if (run_analytic(c))
    return -1;

  for (int i = 0; i < s->num_inputs; i++) {
    double *x = wf_tensor_data(c->feed[i]);
    int reported = 0;

    if ((s->no_gradient >> i) & 1) {
      if (c->dx[i].dense.node || c->dx[i].indices.node) {
        fprintf(stderr,
                "gradcheck %s: input %d has a gradient but must have none\n",
                s->name, i);
        bad++;
      }
      continue;
    }
    for (int64_t e = 0; e < c->count[i]; e++) {
      double x0 = x[e], h = step * fmax(1.0, fabs(x0));
      double lp, lm, num, ana = c->analytic[i][e], xp, xm;

      xp = x[e] = x0 + h;
      if (run_loss(c, &lp))
        return -1;
      xm = x[e] = x0 - h;
      if (run_loss(c, &lm))
        return -1;
      x[e] = x0;
      num = (lp - lm) / (xp - xm); /* the step actually taken */
      if (!(fabs(ana - num) <= rtol * fmax(fabs(ana), fabs(num)) + atol)) {
        bad++;
        if (reported++ < GC_REPORT_MAX)
          fprintf(stderr,
                  "gradcheck %s: point %d, input %d, element %" PRId64
                  " %s at x = %.17g: analytic %.17g, numeric %.17g "
                  "(tolerance %g relative + %g)\n",
                  s->name, point, i, e,
                  coords(&s->in[i], e, where, sizeof where), x0, ana, num,
                  rtol, atol);
      }
    }
  }
  return bad;
}

int gc_check(wf_runtime *rt, const gc_spec *s) {
  check c = {.s = s};
  gc_rng r = {s->seed ? s->seed : name_seed(s->name)};
  int points = s->points > 0 ? s->points : 2, bad = 0;

  if (s->num_inputs < 1 || s->num_inputs > GC_MAX_INPUTS || !s->build) {
    fprintf(stderr, "gradcheck %s: needs 1 to %d inputs and a build "
                    "function\n",
            s->name, GC_MAX_INPUTS);
    return -1;
  }
  c.st = wf_status_new();
  c.g = wf_graph_new(rt);
  if (!c.st || !c.g) {
    fprintf(stderr, "gradcheck %s: out of memory\n", s->name);
    bad = -1;
    goto out;
  }
  for (int i = 0; i < s->num_inputs; i++) {
    c.count[i] = shape_count(&s->in[i]);
    c.feed[i] = wf_tensor_new(WF_FLOAT64, s->in[i].dims, s->in[i].rank,
                              c.st);
    c.analytic[i] = calloc((size_t)c.count[i] + 1, sizeof(double));
    if (!c.feed[i] || !c.analytic[i]) {
      bad = fail_status(&c, "making the inputs");
      goto out;
    }
  }
  if (build(&c) || prepare(&c)) {
    bad = -1;
    goto out;
  }
  for (int p = 0; p < points; p++) {
    int b = check_point(&c, &r, p);

    if (b < 0) {
      bad = -1;
      goto out;
    }
    bad += b;
  }

out:
  wf_callable_free(c.c_grad);
  wf_callable_free(c.c_loss);
  wf_callable_free(c.c_y);
  if (c.sess)
    wf_session_free(c.sess);
  for (int i = 0; i <= s->num_inputs && i <= GC_MAX_INPUTS; i++)
    wf_tensor_release(c.feed[i]);
  for (int i = 0; i < GC_MAX_INPUTS; i++)
    free(c.analytic[i]);
  wf_graph_free(c.g);
  wf_status_free(c.st);
  return bad;
}
