/* test_swish.c — tests the example-swish plugin (swish.so) through an
 * installed weft, the way its author would: the plugin is found on
 * $WEFT_PLUGIN_PATH together with weft's own plugins, and
 *  - the Swish and SwishGrad kernels agree with a reference computed here
 *    in long double, infinities and NaN included. Tolerances, with
 *    z = beta * x (whose rounding the sigmoid amplifies by |z|):
 *      float32: |got - want| <= 1e-6  * (1 + |z|) * scale + FLT_MIN
 *      float64: |got - want| <= 1e-14 * (1 + |z|) * scale + DBL_MIN
 *    where scale is |want| for Swish and |dy| (s + |z| s (1 - s)) for
 *    SwishGrad (the size of the terms that cancel where the derivative
 *    crosses zero, s = sigmoid(z));
 *  - shape inference keeps x's shape and refuses a non-finite beta;
 *  - the gradient that autodiff builds from the plugin's gradient function
 *    matches central finite differences (float64, h = 1e-6,
 *    |analytic - numeric| <= 1e-6 * max(1, |numeric|));
 *  - a model of a dense layer, Swish and a dense layer, trained with Adam
 *    on a fixed regression task, ends below a tenth of its first loss.
 * Every failed check is printed; the exit status is 0 when all pass. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#define PLUGIN_NAME "example-swish"

static wf_runtime *rt;
static wf_status *st;
static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      failures++;                                                              \
      fprintf(stderr, "FAIL (%s:%d): ", __FILE__, __LINE__);                   \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

/* OK(call): a call returning a status code that must succeed; GOT(cond):
 * objects that calls must have made. On failure each counts it, prints
 * st's message and evaluates to 0. */
#define OK(call) ok_((call) == 0, #call, __LINE__)
#define GOT(cond) ok_((cond) != 0, #cond, __LINE__)
static int ok_(int good, const char *what, int line) {
  if (!good) {
    failures++;
    fprintf(stderr, "FAIL (line %d): %s: %s\n", line, what,
            wf_status_message(st));
  }
  return good;
}

/* A fixed sequence of pseudo-random numbers in [lo, hi) (an LCG), so that
 * every run tests the same values. */
static double uniform(unsigned long long *state, double lo, double hi) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return lo + (hi - lo) * (double)(*state >> 11) / 9007199254740992.0;
}

/* ---- building graphs ----------------------------------------------------- */

static wf_output placeholder(wf_graph *g, const char *name, wf_dtype dtype,
                             const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dtype);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

/* Swish(x) with that beta; node NULL with st set when refused. */
static wf_output swish(wf_graph *g, const char *name, wf_output x,
                       double beta) {
  wf_node_desc *d = wf_node_desc_new(g, "Swish", name);
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_float(d, "beta", beta);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

static wf_output swish_grad(wf_graph *g, const char *name, wf_output dy,
                            wf_output x, double beta) {
  wf_node_desc *d = wf_node_desc_new(g, "SwishGrad", name);
  wf_node_desc_add_input(d, dy);
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_float(d, "beta", beta);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

/* A new tensor of dtype (float32 or float64) holding v[0..n-1]. */
static wf_tensor *vector_of(wf_dtype dtype, const double *v, int64_t n,
                            const int64_t *dims, int rank) {
  wf_tensor *t = wf_tensor_new(dtype, dims, rank, st);
  if (!t)
    return NULL;
  for (int64_t i = 0; i < n; i++) {
    if (dtype == WF_FLOAT32)
      ((float *)wf_tensor_data(t))[i] = (float)v[i];
    else
      ((double *)wf_tensor_data(t))[i] = v[i];
  }
  return t;
}

static double element(const wf_tensor *t, int64_t i) {
  if (wf_tensor_dtype(t) == WF_FLOAT32)
    return ((const float *)wf_tensor_data(t))[i];
  return ((const double *)wf_tensor_data(t))[i];
}

/* ---- the plugin is there ------------------------------------------------- */

/* Finds the plugin among those the runtime looked at; prints why it is not
 * loaded (the same reasons `weft plugins` shows) and returns 0 if so. */
static int plugin_loaded(void) {
  int n = wf_runtime_plugin_count(rt);
  for (int i = 0; i < n; i++) {
    wf_plugin_info p = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &p);
    if (strcmp(p.name, PLUGIN_NAME) != 0)
      continue;
    if (p.state != WF_PLUGIN_LOADED) {
      fprintf(stderr, "FAIL: %s from %s was not loaded: %s\n", PLUGIN_NAME,
              p.path, p.reason ? p.reason : "(no reason)");
      return 0;
    }
    printf("%s %s loaded from %s (ABI %d.%d): %d ops, %d kernels, %d "
           "gradients\n",
           p.name, p.version, p.path, p.abi_major, p.abi_minor, p.num_ops,
           p.num_kernels, p.num_gradients);
    return p.num_ops == 2 && p.num_kernels == 2 && p.num_gradients == 1;
  }
  fprintf(stderr,
          "FAIL: no plugin %s found: is the directory of swish.so on "
          "WEFT_PLUGIN_PATH (now \"%s\")? Plugins the runtime looked at:\n",
          PLUGIN_NAME,
          getenv("WEFT_PLUGIN_PATH") ? getenv("WEFT_PLUGIN_PATH") : "");
  for (int i = 0; i < n; i++) {
    wf_plugin_info p = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &p);
    fprintf(stderr, "  %s (%s)%s%s\n", p.name, p.path, p.reason ? ": " : "",
            p.reason ? p.reason : "");
  }
  return 0;
}

/* ---- kernels against the reference --------------------------------------- */

static long double ref_sigmoid(long double z) {
  if (z >= 0)
    return 1.0L / (1.0L + expl(-z));
  long double e = expl(z);
  return e / (1.0L + e);
}

/* Swish and its derivative at x, in long double; *scale gets the size of
 * the terms SwishGrad sums (see the top of this file). At x = +-inf: the
 * limits, which the kernels must give exactly. */
static long double ref_swish(long double x, long double beta) {
  if (isinf(x))
    return beta == 0 ? x / 2 : beta * x > 0 ? x : 0.0L;
  return x * ref_sigmoid(beta * x);
}

static long double ref_swish_grad(long double dy, long double x,
                                  long double beta, long double *scale) {
  long double s, z = beta * x;
  *scale = 0;
  if (isinf(x))
    return dy * (beta == 0 ? 0.5L : z > 0 ? 1.0L : 0.0L);
  s = ref_sigmoid(z);
  *scale = fabsl(dy) * (s + fabsl(z) * s * (1.0L - s));
  return dy * (s + z * s * (1.0L - s));
}

/* 1 when got matches want within the dtype's tolerance; exactly where x
 * or the result is infinite, NaN where want is NaN. */
static int close_enough(wf_dtype dtype, double got, long double want,
                        long double x, long double z, long double scale) {
  long double rtol = dtype == WF_FLOAT32 ? 1e-6L : 1e-14L;
  long double atol = dtype == WF_FLOAT32 ? FLT_MIN : DBL_MIN;
  if (isnan(want) || isnan(got))
    return isnan(want) && isnan(got);
  if (isinf(x) || isinf(want) || isinf(got))
    return (long double)got == want;
  return fabsl((long double)got - want) <=
         rtol * (1.0L + fabsl(z)) * scale + atol;
}

static const double points[] = {
    0.0,   1e-3, -1e-3, 0.5,  -0.5,  1.0,      -1.0,      -1.2785, 3.0,
    -3.0,  10.0, -10.0, 30.0, -30.0, 100.0,    -100.0,    1000.0,  -1000.0,
    12.25, -7.5, 2e-20, -4.0, 5.5,   INFINITY, -INFINITY, NAN};
#define NUM_POINTS ((int)(sizeof points / sizeof points[0]))

/* Runs Swish and SwishGrad once on every point for one dtype and beta and
 * compares each element. */
static void check_kernels(wf_dtype dtype, double beta) {
  int64_t dims[1] = {NUM_POINTS};
  double dyv[NUM_POINTS];
  wf_graph *g = wf_graph_new(rt);
  wf_session *s = NULL;
  wf_tensor *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
  wf_output x, dy, fetch[2];

  for (int i = 0; i < NUM_POINTS; i++)
    dyv[i] = 0.25 + 0.5 * (i % 4);
  x = placeholder(g, "x", dtype, dims, 1);
  dy = placeholder(g, "dy", dtype, dims, 1);
  if (!GOT(x.node && dy.node))
    goto done;
  fetch[0] = swish(g, "y", x, beta);
  fetch[1] = swish_grad(g, "dx", dy, x, beta);
  if (!GOT(fetch[0].node && fetch[1].node))
    goto done;
  in[0] = vector_of(dtype, points, NUM_POINTS, dims, 1);
  in[1] = vector_of(dtype, dyv, NUM_POINTS, dims, 1);
  s = wf_session_new(g, st);
  if (!GOT(in[0] && in[1] && s))
    goto done;
  wf_output feeds[2] = {x, dy};
  if (!OK(wf_session_run(s, NULL, feeds, in, 2, fetch, out, 2, NULL, 0, NULL,
                         st)))
    goto done;
  for (int i = 0; i < NUM_POINTS; i++) {
    /* the kernel sees x, dy and beta rounded to dtype */
    long double xi = element(in[0], i), dyi = element(in[1], i);
    long double b = dtype == WF_FLOAT32 ? (float)beta : beta;
    long double scale, want = ref_swish(xi, b);
    double got = element(out[0], i);
    CHECK(close_enough(dtype, got, want, xi, b * xi, fabsl(want)),
          "%s Swish(%.9Lg, beta %g) = %.17g, want %.17Lg", wf_dtype_name(dtype),
          xi, beta, got, want);
    want = ref_swish_grad(dyi, xi, b, &scale);
    got = element(out[1], i);
    CHECK(close_enough(dtype, got, want, xi, b * xi, scale),
          "%s SwishGrad(dy %.9Lg, x %.9Lg, beta %g) = %.17g, want %.17Lg",
          wf_dtype_name(dtype), dyi, xi, beta, got, want);
  }

done:
  for (int i = 0; i < 2; i++) {
    wf_tensor_release(in[i]);
    wf_tensor_release(out[i]);
  }
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_reset(st);
}

/* ---- shape inference ----------------------------------------------------- */

static void check_shapes(void) {
  int64_t dims[2] = {-1, 3}, other[2] = {3, 2};
  wf_graph *g = wf_graph_new(rt);
  wf_output x, x32, y, bad;
  wf_shape shape;
  char buf[64];

  x = placeholder(g, "x", WF_FLOAT32, dims, 2);
  x32 = placeholder(g, "n", WF_INT32, dims, 2);
  if (!GOT(x.node && x32.node))
    goto done;
  y = swish(g, "y", x, 1.0);
  if (!GOT(y.node))
    goto done;
  wf_node_output_shape(y.node, 0, &shape);
  CHECK(shape.rank == 2 && shape.dims[0] == -1 && shape.dims[1] == 3,
        "Swish of a (?, 3) input has shape %s",
        wf_shape_str(&shape, buf, sizeof buf));

  bad = swish(g, "not_finite", x, NAN);
  CHECK(!bad.node && wf_status_code(st) == WF_INVALID_ARGUMENT &&
            strstr(wf_status_message(st), "not_finite") &&
            strstr(wf_status_message(st), "beta"),
        "Swish with beta NaN: code %s, message \"%s\"",
        wf_code_name(wf_status_code(st)), wf_status_message(st));
  CHECK(wf_graph_find_node(g, "not_finite") == NULL,
        "the refused node is in the graph");
  wf_status_reset(st);

  bad = swish(g, "on_ints", x32, 1.0);
  CHECK(!bad.node && wf_status_code(st) == WF_INVALID_ARGUMENT,
        "Swish of int32 was not refused (code %s)",
        wf_code_name(wf_status_code(st)));
  wf_status_reset(st);

  bad = swish_grad(g, "mismatch", placeholder(g, "dy", WF_FLOAT32, other, 2), x,
                   1.0);
  CHECK(!bad.node && strstr(wf_status_message(st), "mismatch") &&
            strstr(wf_status_message(st), "(3, 2) and (?, 3)"),
        "SwishGrad of (3, 2) and (?, 3): \"%s\"", wf_status_message(st));

done:
  wf_graph_free(g);
  wf_status_reset(st);
}

/* ---- the gradient against finite differences ----------------------------- */

#define GR 4
#define GC 5

/* sum(dy * Swish(x)) for x fed xv: the function whose gradient is dx. */
static int weighted_sum(wf_callable *fwd, const double *xv, const double *dyv,
                        double *out) {
  int64_t dims[2] = {GR, GC};
  wf_tensor *x = vector_of(WF_FLOAT64, xv, GR * GC, dims, 2), *y = NULL;
  int code = x ? wf_callable_run(fwd, NULL, &x, &y, NULL, st)
               : (int)wf_status_code(st);
  if (!code) {
    *out = 0;
    for (int i = 0; i < GR * GC; i++)
      *out += dyv[i] * element(y, i);
  }
  wf_tensor_release(x);
  wf_tensor_release(y);
  return code;
}

static void check_gradient(void) {
  const double beta = 1.3, h = 1e-6;
  int64_t dims[2] = {GR, GC};
  double xv[GR * GC], dyv[GR * GC];
  unsigned long long seed = 7;
  wf_graph *g = wf_graph_new(rt);
  wf_session *s = NULL;
  wf_callable *fwd = NULL, *bwd = NULL;
  wf_tensor *in[2] = {NULL, NULL}, *dx = NULL;
  wf_output x, dy, y;
  wf_gradient grad;

  for (int i = 0; i < GR * GC; i++) {
    xv[i] = uniform(&seed, -4, 4);
    dyv[i] = uniform(&seed, -1, 1);
  }
  x = placeholder(g, "x", WF_FLOAT64, dims, 2);
  dy = placeholder(g, "dy", WF_FLOAT64, dims, 2);
  if (!GOT(x.node && dy.node))
    goto done;
  y = swish(g, "y", x, beta);
  if (!GOT(y.node) ||
      !OK(wf_graph_add_gradients(g, &y, 1, &dy, &x, 1, &grad, st)))
    goto done;
  CHECK(grad.dense.node != NULL, "no dense gradient for x");
  if (!grad.dense.node)
    goto done;
  s = wf_session_new(g, st);
  if (!GOT(s))
    goto done;
  wf_output feeds[2] = {x, dy};
  fwd = wf_session_prepare(s, &x, 1, &y, 1, NULL, 0, st);
  bwd = wf_session_prepare(s, feeds, 2, &grad.dense, 1, NULL, 0, st);
  in[0] = vector_of(WF_FLOAT64, xv, GR * GC, dims, 2);
  in[1] = vector_of(WF_FLOAT64, dyv, GR * GC, dims, 2);
  if (!GOT(fwd && bwd && in[0] && in[1]) ||
      !OK(wf_callable_run(bwd, NULL, in, &dx, NULL, st)))
    goto done;
  for (int i = 0; i < GR * GC; i++) {
    double saved = xv[i], plus, minus, numeric;
    xv[i] = saved + h;
    if (!OK(weighted_sum(fwd, xv, dyv, &plus)))
      break;
    xv[i] = saved - h;
    if (!OK(weighted_sum(fwd, xv, dyv, &minus)))
      break;
    xv[i] = saved;
    numeric = (plus - minus) / (2 * h);
    CHECK(fabs(element(dx, i) - numeric) <= 1e-6 * fmax(1.0, fabs(numeric)),
          "d/dx[%d] at x = %.6f: autodiff %.12g, finite differences %.12g", i,
          saved, element(dx, i), numeric);
  }

done:
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_tensor_release(dx);
  wf_callable_free(fwd);
  wf_callable_free(bwd);
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_reset(st);
}

/* ---- training a model with a Swish layer --------------------------------- */

#define TN 64 /* examples, one batch */
#define TD 4  /* features */
#define STEPS 300

/* Dense (4 -> 16), Swish, dense (16 -> 1), mean squared error against
 * t = sin(x0) + x1 x2 / 2 - 0.3 x3, Adam with learning rate 0.02, full
 * batch. */
static void check_training(void) {
  int64_t xd[2] = {TN, TD}, td[2] = {TN, 1};
  double xv[TN * TD], tv[TN];
  unsigned long long seed = 11;
  wf_graph *g = wf_graph_new(rt);
  wf_model *m = NULL;
  wf_session *s = NULL;
  wf_node *step, *init;
  wf_tensor *in[2] = {NULL, NULL};
  wf_output x, t, h, loss;
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  double first = 0, last = 0;

  for (int i = 0; i < TN; i++) {
    for (int j = 0; j < TD; j++)
      xv[i * TD + j] = uniform(&seed, -2, 2);
    tv[i] = sin(xv[i * TD]) + 0.5 * xv[i * TD + 1] * xv[i * TD + 2] -
            0.3 * xv[i * TD + 3];
  }
  x = placeholder(g, "x", WF_FLOAT32, xd, 2);
  t = placeholder(g, "t", WF_FLOAT32, td, 2);
  m = wf_model_new(g, 42, st);
  if (!GOT(x.node && t.node && m))
    goto done;
  wf_model_begin(m, 1);
  h = wf_layer_dense(m, x, 16, WF_ACT_NONE, st);
  if (h.node)
    h = swish(g, "swish", h, 1.0);
  if (h.node)
    h = wf_layer_dense(m, h, 1, WF_ACT_NONE, st);
  loss = h.node ? wf_loss_mean_squared_error(m, h, t, st) : h;
  opt.learning_rate = 0.02;
  step = loss.node ? wf_model_minimize(m, loss, &opt, st) : NULL;
  init = step ? wf_model_init_op(m, st) : NULL;
  if (!GOT(init))
    goto done;
  s = wf_session_new(g, st);
  in[0] = vector_of(WF_FLOAT32, xv, TN * TD, xd, 2);
  in[1] = vector_of(WF_FLOAT32, tv, TN, td, 2);
  if (!GOT(s && in[0] && in[1]) ||
      !OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                         st)))
    goto done;
  wf_output feeds[2] = {x, t};
  for (int i = 0; i < STEPS; i++) {
    wf_tensor *lv = NULL;
    if (!OK(wf_session_run(s, NULL, feeds, in, 2, &loss, &lv, 1, &step, 1, NULL,
                           st)))
      goto done;
    last = element(lv, 0);
    wf_tensor_release(lv);
    if (i == 0)
      first = last;
    if (i % 50 == 0 || i == STEPS - 1)
      printf("training step %3d: loss %.5f\n", i, last);
  }
  CHECK(isfinite(last) && last < 0.1 * first,
        "the loss went from %g to %g in %d steps (want below a tenth)", first,
        last, STEPS);

done:
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
  wf_status_reset(st);
}

int main(void) {
  static const double betas[] = {1.0, 0.5, 2.5, -1.0, 0.0};

  st = wf_status_new();
  if (!st)
    return 1;
  /* The defaults: $WEFT_PLUGIN_PATH, then the installed plugin directory. */
  rt = wf_runtime_new(NULL, st);
  if (!rt) {
    fprintf(stderr, "FAIL: cannot create a runtime: %s\n",
            wf_status_message(st));
    wf_status_free(st);
    return 1;
  }
  if (plugin_loaded()) {
    CHECK(wf_runtime_op_gradient(rt, "Swish") == 1,
          "Swish has no gradient registered");
    for (size_t b = 0; b < sizeof betas / sizeof betas[0]; b++) {
      check_kernels(WF_FLOAT32, betas[b]);
      check_kernels(WF_FLOAT64, betas[b]);
    }
    check_shapes();
    check_gradient();
    check_training();
  } else {
    failures++;
  }
  wf_runtime_free(rt);
  wf_status_free(st);
  if (failures)
    fprintf(stderr, "%d check%s failed\n", failures, failures == 1 ? "" : "s");
  else
    printf("all Swish checks passed\n");
  return failures ? 1 : 0;
}
