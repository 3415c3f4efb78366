/* tests/ops/array_nn_gradcheck.h — checks gradients built by
 * wf_graph_add_gradients against central finite differences, for
 * test_array_grad.c and test_nn_grad.c (static functions: each program
 * includes it once, after array_nn_harness.h).
 *
 * For ops y_k = f_k(x_0, ..., x_n) the checked scalar is
 *   L = sum_k sum(y_k * w_k)
 * with w_k random weights (Consts of y_k's run-time shape, passed as the
 * dys), so every element of every output counts with its own weight. For
 * each element j of each checked input, float64 throughout:
 *   numeric  = (L(x + h e_j) - L(x - h e_j)) / (2 h),  h = 1e-6
 *   analytic = element j of the gradient (sparse ones densified here)
 * and |analytic - numeric| <= GC_RTOL * max(|numeric|, GC_FLOOR) must hold:
 * relative 1e-6 with an absolute floor of 1e-7. Central differences in
 * float64 err by about h^2 |L'''| + 1e-16 |L| / h, far below that for the
 * smooth functions and O(1) inputs used here; tests of piecewise-smooth
 * ops (pools) choose inputs whose kinks are farther than h away. */
#ifndef TESTS_OPS_ARRAY_NN_GRADCHECK_H
#define TESTS_OPS_ARRAY_NN_GRADCHECK_H

#include "array_nn_harness.h"

#define GC_H 1e-6
#define GC_RTOL 1e-6
#define GC_FLOOR 0.1

#define GC_MAX_ARGS 8
#define GC_MAX_YS 4

/* How an argument enters the graph. */
enum {
  GC_CONST,        /* a Const: its value is known while building */
  GC_FEED,         /* a Placeholder of its shape, fed */
  GC_FEED_UNKNOWN  /* a Placeholder of unknown shape, fed */
};

/* What is asked of an argument's gradient. */
enum {
  GC_SKIP = 0,  /* nothing (not passed as an x) */
  GC_CHECK = 1, /* against finite differences; it must have a gradient */
  GC_NONE = 2   /* passed as an x; it must get no gradient */
};

typedef struct gc_arg {
  wf_tensor *value; /* owned by the caller */
  int kind;         /* GC_CONST, GC_FEED, GC_FEED_UNKNOWN */
  int wrt;          /* GC_SKIP, GC_CHECK, GC_NONE (GC_CHECK: float64) */
} gc_arg;

/* Builds what is differentiated from the arguments' outputs in[]; writes
 * the ys into ys[] and returns how many (1..GC_MAX_YS). */
typedef int gc_build_fn(wf_graph *g, const wf_output *in, void *arg,
                        wf_output *ys);

/* One op node on the arguments, its outputs (all, or those in `outputs`,
 * a bit mask) being the ys. */
typedef struct gc_op {
  const char *op;
  int num_attrs;
  fx_attr attrs[FX_MAX_ATTRS];
  int list_input; /* the arguments form the op's one list argument */
  uint32_t outputs;
} gc_op;

/* What a check leaves for further assertions (gc_result_free). */
typedef struct gc_result {
  wf_gradient grads[GC_MAX_ARGS];
  /* For sparse gradients: the fetched indices, values and dense_shape. */
  wf_tensor *sparse[GC_MAX_ARGS][3];
  /* Every gradient as a dense float64 tensor (sparse ones densified by
   * adding values' rows at their indices); NULL when there is none. */
  wf_tensor *dense[GC_MAX_ARGS];
  double max_err; /* largest |analytic - numeric| / max(|numeric|, floor) */
} gc_result;

static inline void gc_result_free(gc_result *r) {
  for (int i = 0; i < GC_MAX_ARGS; i++) {
    for (int k = 0; k < 3; k++)
      wf_tensor_release(r->sparse[i][k]);
    wf_tensor_release(r->dense[i]);
  }
  memset(r, 0, sizeof *r);
}

/* A deterministic generator: xorshift64*, uniform in [-1, 1). */
static uint64_t gc_rng_state = 0x9E3779B97F4A7C15ull;
static inline void gc_seed(uint64_t seed) {
  gc_rng_state = seed * 0x2545F4914F6CDD1Dull + 0x9E3779B97F4A7C15ull;
}
static inline double gc_uniform(void) {
  gc_rng_state ^= gc_rng_state >> 12;
  gc_rng_state ^= gc_rng_state << 25;
  gc_rng_state ^= gc_rng_state >> 27;
  return (double)((gc_rng_state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1p-52 -
         1.0;
}

/* A float64 tensor of the given dims with uniform values in [lo, hi). */
static inline wf_tensor *gc_random(int rank, const int64_t *dims, double lo,
                            double hi) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(WF_FLOAT64, dims, rank, st);
  double *d;

  if (!t)
    fail_msg("making a random tensor: %s", wf_status_message(st));
  d = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    d[i] = lo + (hi - lo) * (gc_uniform() + 1.0) / 2.0;
  wf_status_free(st);
  return t;
}

/* A tensor of dtype dt and the given dims holding vals (count elements,
 * converted from int64 or double as the dtype needs). */
static inline wf_tensor *gc_tensor_i64(int32_t dt, int rank, const int64_t *dims,
                                const int64_t *vals) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new((wf_dtype)dt, dims, rank, st);

  if (!t)
    fail_msg("making a tensor: %s", wf_status_message(st));
  for (int64_t i = 0; i < wf_tensor_count(t); i++) {
    if (dt == WF_INT32)
      ((int32_t *)wf_tensor_data(t))[i] = (int32_t)vals[i];
    else if (dt == WF_INT64)
      ((int64_t *)wf_tensor_data(t))[i] = vals[i];
    else
      ((double *)wf_tensor_data(t))[i] = (double)vals[i];
  }
  wf_status_free(st);
  return t;
}
static inline wf_tensor *gc_tensor_f64(int rank, const int64_t *dims,
                                const double *vals) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(WF_FLOAT64, dims, rank, st);

  if (!t)
    fail_msg("making a tensor: %s", wf_status_message(st));
  if (wf_tensor_count(t) > 0)
    memcpy(wf_tensor_data(t), vals, wf_tensor_nbytes(t));
  wf_status_free(st);
  return t;
}

static inline wf_tensor *gc_copy(const wf_tensor *t) {
  wf_status *st = wf_status_new();
  wf_shape s;
  wf_tensor *c;

  wf_tensor_shape(t, &s);
  c = wf_tensor_new(wf_tensor_dtype(t), s.dims, s.rank, st);
  if (!c)
    fail_msg("copying a tensor: %s", wf_status_message(st));
  if (wf_tensor_nbytes(t) > 0)
    memcpy(wf_tensor_data(c), wf_tensor_data(t), wf_tensor_nbytes(t));
  wf_status_free(st);
  return c;
}

/* Adds a node, failing the test with the message when it is refused. */
static inline wf_node *gc_node(wf_node_desc *d, const char *what) {
  wf_status *st = wf_status_new();
  wf_node *n = wf_node_desc_finish(d, st);

  if (!n)
    fail_msg("adding %s: %s", what, wf_status_message(st));
  wf_status_free(st);
  return n;
}

static inline wf_output gc_const(wf_graph *g, const wf_tensor *t) {
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);

  wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(t));
  /* The graph takes its own reference; t itself is not written. */
  wf_node_desc_set_attr_tensor(d, "value", (wf_tensor *)t);
  return (wf_output){gc_node(d, "a Const"), 0};
}

static inline wf_output gc_placeholder(wf_graph *g, const wf_tensor *t, int known) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", NULL);
  wf_shape s;

  wf_tensor_shape(t, &s);
  wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(t));
  if (known)
    wf_node_desc_set_attr_shape(d, "shape", s.dims, s.rank);
  return (wf_output){gc_node(d, "a Placeholder"), 0};
}

/* The builder of gc_op specs: the spec and how many arguments it takes. */
typedef struct gc_op_call {
  const gc_op *spec;
  int nargs;
} gc_op_call;

static inline int gc_build_op(wf_graph *g, const wf_output *in, void *arg,
                       wf_output *ys) {
  const gc_op_call *call = arg;
  const gc_op *spec = call->spec;
  wf_node_desc *d = wf_node_desc_new(g, spec->op, "op");
  wf_node *n;
  int ny = 0;

  if (spec->list_input)
    wf_node_desc_add_input_list(d, in, call->nargs);
  else
    for (int i = 0; i < call->nargs; i++)
      wf_node_desc_add_input(d, in[i]);
  for (int i = 0; i < spec->num_attrs; i++)
    fx_set_attr(d, &spec->attrs[i]);
  n = gc_node(d, spec->op);
  for (int i = 0; i < wf_node_num_outputs(n) && ny < GC_MAX_YS; i++)
    if (spec->outputs ? (spec->outputs >> i & 1) : i == 0)
      ys[ny++] = (wf_output){n, i};
  return ny;
}

/* L = sum_k sum(ys_k * w_k) from fetched ys. */
static inline double gc_loss(wf_tensor *const *ys, wf_tensor *const *w, int ny) {
  double l = 0;

  for (int k = 0; k < ny; k++) {
    const double *y = wf_tensor_data(ys[k]), *wk = wf_tensor_data(w[k]);
    for (int64_t i = 0; i < wf_tensor_count(ys[k]); i++)
      l += y[i] * wk[i];
  }
  return l;
}

static inline int64_t gc_int_at(const wf_tensor *t, int64_t i) {
  return wf_tensor_dtype(t) == WF_INT32
             ? ((const int32_t *)wf_tensor_data(t))[i]
             : ((const int64_t *)wf_tensor_data(t))[i];
}

/* Adds the rows of a sparse gradient (indices (K,), values (K, ...),
 * dense_shape (R,)) into a new dense float64 tensor, checking its pieces. */
static inline wf_tensor *gc_densify(const char *name, int arg, wf_tensor *const *sp,
                             const wf_tensor *x) {
  wf_status *st = wf_status_new();
  wf_shape xs, vs, is;
  int64_t row = 1, k;
  wf_tensor *d;

  wf_tensor_shape(x, &xs);
  wf_tensor_shape(sp[0], &is);
  wf_tensor_shape(sp[1], &vs);
  if (wf_tensor_dtype(sp[2]) != WF_INT64 || wf_tensor_rank(sp[2]) != 1 ||
      wf_tensor_dim(sp[2], 0) != xs.rank)
    fail_msg("%s: input %d: dense_shape is not an int64 vector of x's rank",
             name, arg);
  for (int i = 0; i < xs.rank; i++)
    if (((const int64_t *)wf_tensor_data(sp[2]))[i] != xs.dims[i])
      fail_msg("%s: input %d: dense_shape[%d] is %lld, x has %lld", name, arg,
               i, (long long)((const int64_t *)wf_tensor_data(sp[2]))[i],
               (long long)xs.dims[i]);
  if (is.rank != 1 || vs.rank != xs.rank || vs.dims[0] != is.dims[0])
    fail_msg("%s: input %d: indices (K,) and values (K, ...) do not match",
             name, arg);
  for (int i = 1; i < xs.rank; i++) {
    if (vs.dims[i] != xs.dims[i])
      fail_msg("%s: input %d: values' dimension %d is not x's", name, arg, i);
    row *= xs.dims[i];
  }
  d = wf_tensor_new(WF_FLOAT64, xs.dims, xs.rank, st);
  assert_non_null(d);
  memset(wf_tensor_data(d), 0, wf_tensor_nbytes(d));
  k = is.dims[0];
  for (int64_t j = 0; j < k; j++) {
    int64_t r = gc_int_at(sp[0], j);
    if (r < 0 || r >= xs.dims[0])
      fail_msg("%s: input %d: sparse index %lld out of range", name, arg,
               (long long)r);
    for (int64_t e = 0; e < row; e++)
      ((double *)wf_tensor_data(d))[r * row + e] +=
          ((const double *)wf_tensor_data(sp[1]))[j * row + e];
  }
  wf_status_free(st);
  return d;
}

/* Builds the graph, adds the gradients and checks every GC_CHECK argument
 * against finite differences (and GC_NONE ones for having none). res may
 * be NULL; otherwise it receives what the gradients were. */
static inline void gc_check(wf_runtime *rt, const char *name, const gc_arg *args,
                     int nargs, gc_build_fn *build, void *barg,
                     gc_result *res) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output in[GC_MAX_ARGS], ys[GC_MAX_YS], dys[GC_MAX_YS], xs[GC_MAX_ARGS],
      feeds[GC_MAX_ARGS], fetches[GC_MAX_ARGS * 3];
  wf_tensor *feed_vals[GC_MAX_ARGS], *y_vals[GC_MAX_YS], *w[GC_MAX_YS],
      *fetched[GC_MAX_ARGS * 3];
  int ny, nx = 0, nfeeds = 0, nfetch = 0, x_arg[GC_MAX_ARGS],
          feed_of[GC_MAX_ARGS];
  gc_result local;
  wf_session *s;
  wf_callable *fwd, *bwd;

  if (!res)
    res = &local;
  memset(res, 0, sizeof *res);
  assert_true(nargs <= GC_MAX_ARGS);
  for (int i = 0; i < nargs; i++) {
    feed_of[i] = -1;
    if (args[i].kind == GC_CONST) {
      in[i] = gc_const(g, args[i].value);
    } else {
      in[i] = gc_placeholder(g, args[i].value, args[i].kind == GC_FEED);
      feed_of[i] = nfeeds;
      feeds[nfeeds] = in[i];
      feed_vals[nfeeds++] = gc_copy(args[i].value);
    }
    if (args[i].wrt != GC_SKIP) {
      if (args[i].wrt == GC_CHECK &&
          wf_tensor_dtype(args[i].value) != WF_FLOAT64)
        fail_msg("%s: argument %d is checked but not float64", name, i);
      x_arg[nx] = i;
      xs[nx++] = in[i];
    }
  }
  ny = build(g, in, barg, ys);
  assert_true(ny >= 1 && ny <= GC_MAX_YS);

  /* The forward run gives the ys' shapes, hence the weights. */
  s = wf_session_new(g, st);
  if (!s)
    fail_msg("%s: session: %s", name, wf_status_message(st));
  fwd = wf_session_prepare(s, feeds, nfeeds, ys, ny, NULL, 0, st);
  if (!fwd || wf_callable_run(fwd, NULL, feed_vals, y_vals, NULL, st))
    fail_msg("%s: forward run: %s", name, wf_status_message(st));
  for (int k = 0; k < ny; k++) {
    wf_shape ysh;
    if (wf_tensor_dtype(y_vals[k]) != WF_FLOAT64)
      fail_msg("%s: y %d is not float64", name, k);
    wf_tensor_shape(y_vals[k], &ysh);
    w[k] = gc_random(ysh.rank, ysh.dims, -1, 1);
    dys[k] = gc_const(g, w[k]);
    wf_tensor_release(y_vals[k]);
  }
  if (wf_graph_add_gradients(g, ys, ny, dys, xs, nx, res->grads, st))
    fail_msg("%s: adding gradients: %s", name, wf_status_message(st));

  /* Fetch every gradient there is. */
  for (int j = 0; j < nx; j++) {
    const wf_gradient *gr = &res->grads[j];
    int a = x_arg[j];
    if (args[a].wrt == GC_NONE) {
      if (gr->dense.node || gr->indices.node)
        fail_msg("%s: input %d should get no gradient", name, a);
      continue;
    }
    if (!gr->dense.node && !gr->indices.node)
      fail_msg("%s: input %d got no gradient", name, a);
    if (gr->dense.node) {
      fetches[nfetch++] = gr->dense;
    } else {
      fetches[nfetch++] = gr->indices;
      fetches[nfetch++] = gr->values;
      fetches[nfetch++] = gr->dense_shape;
    }
  }
  bwd = nfetch ? wf_session_prepare(s, feeds, nfeeds, fetches, nfetch, NULL,
                                    0, st)
               : NULL;
  if (nfetch && (!bwd || wf_callable_run(bwd, NULL, feed_vals, fetched, NULL,
                                         st)))
    fail_msg("%s: gradient run: %s", name, wf_status_message(st));
  for (int j = 0, at = 0; j < nx; j++) {
    const wf_gradient *gr = &res->grads[j];
    int a = x_arg[j];
    if (args[a].wrt != GC_CHECK)
      continue;
    if (gr->dense.node) {
      wf_shape gs, xsh;
      wf_tensor_shape(fetched[at], &gs);
      wf_tensor_shape(args[a].value, &xsh);
      if (wf_tensor_dtype(fetched[at]) != WF_FLOAT64 ||
          !wf_shape_equal(&gs, &xsh))
        fail_msg("%s: the gradient of input %d does not have its dtype and "
                 "shape",
                 name, a);
      res->dense[a] = fetched[at++];
    } else {
      for (int k = 0; k < 3; k++)
        res->sparse[a][k] = fetched[at++];
      res->dense[a] = gc_densify(name, a, res->sparse[a], args[a].value);
    }
  }

  /* Central differences, element by element. */
  for (int j = 0; j < nx; j++) {
    int a = x_arg[j], f = feed_of[a];
    double *xv;
    const double *an;
    if (args[a].wrt != GC_CHECK)
      continue;
    if (f < 0)
      fail_msg("%s: argument %d is checked, so it must be fed", name, a);
    xv = wf_tensor_data(feed_vals[f]);
    an = wf_tensor_data(res->dense[a]);
    for (int64_t e = 0; e < wf_tensor_count(feed_vals[f]); e++) {
      double x0 = xv[e], lp, lm, num, err;
      xv[e] = x0 + GC_H;
      if (wf_callable_run(fwd, NULL, feed_vals, y_vals, NULL, st))
        fail_msg("%s: run: %s", name, wf_status_message(st));
      lp = gc_loss(y_vals, w, ny);
      for (int k = 0; k < ny; k++)
        wf_tensor_release(y_vals[k]);
      xv[e] = x0 - GC_H;
      if (wf_callable_run(fwd, NULL, feed_vals, y_vals, NULL, st))
        fail_msg("%s: run: %s", name, wf_status_message(st));
      lm = gc_loss(y_vals, w, ny);
      for (int k = 0; k < ny; k++)
        wf_tensor_release(y_vals[k]);
      xv[e] = x0;
      num = (lp - lm) / (2 * GC_H);
      err = fabs(an[e] - num) / fmax(fabs(num), GC_FLOOR);
      if (err > res->max_err)
        res->max_err = err;
      if (err > GC_RTOL)
        fail_msg("%s: d/d input %d, element %lld: analytic %.12g, numeric "
                 "%.12g (relative error %.3g > %g)",
                 name, a, (long long)e, an[e], num, err, GC_RTOL);
    }
  }

  {
    int64_t checked = 0;
    for (int j = 0; j < nx; j++)
      if (args[x_arg[j]].wrt == GC_CHECK)
        checked += wf_tensor_count(args[x_arg[j]].value);
    printf("  gradcheck %-44s %5lld elements, max relative error %.1e\n",
           name, (long long)checked, res->max_err);
  }
  wf_callable_free(fwd);
  wf_callable_free(bwd);
  wf_session_free(s);
  for (int k = 0; k < ny; k++)
    wf_tensor_release(w[k]);
  for (int i = 0; i < nfeeds; i++)
    wf_tensor_release(feed_vals[i]);
  wf_graph_free(g);
  wf_status_free(st);
  if (res == &local)
    gc_result_free(res);
}

/* gc_check of one op node (spec) on the arguments. */
static inline void gc_check_op(wf_runtime *rt, const char *name, const gc_op *spec,
                        const gc_arg *args, int nargs, gc_result *res) {
  gc_op_call call = {spec, nargs};

  gc_check(rt, name, args, nargs, gc_build_op, &call, res);
}

#endif /* TESTS_OPS_ARRAY_NN_GRADCHECK_H */
