/* tests/ops/test_random.c — the ops_random plugin and its generator:
 * Philox-4x32-10 against the published known-answer vectors (Random123's
 * kat_vectors); op outputs against the documented stream layout
 * (philox.h); the same values for the same (seed, seed2, step) with 1 and
 * 4 inter-op threads and across sessions; different values for different
 * nodes, seeds and steps; mean and variance of every distribution and
 * initializer within 5 standard errors of the exact values; truncation;
 * fan-in/fan-out of dense and conv shapes; the constant initializers; and
 * refusals of bad attributes. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "philox.h"
#include "train_harness.h"

static wf_runtime *rt;

static int setup(void **state) {
  rt = th_runtime_new(4);
  return rt ? 0 : -1;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  rt = NULL;
  return 0;
}

/* ---- the generator ----------------------------------------------------- */

static void test_philox_matches_known_answers(void **state) {
  static const struct {
    uint32_t ctr[4], key[2], out[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };

  for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
    uint32_t out[4];
    rnd_philox4x32_10(kat[i].ctr, kat[i].key, out);
    for (int k = 0; k < 4; k++)
      if (out[k] != kat[i].out[k])
        fail_msg("vector %zu word %d: got %08x, expected %08x", i, k,
                 (unsigned)out[k], (unsigned)kat[i].out[k]);
  }
}

/* ---- building random nodes --------------------------------------------- */

typedef struct rnd_attrs {
  int64_t seed, seed2;
  const char *f1, *f2; /* float attributes, or NULL */
  double v1, v2;
} rnd_attrs;

static wf_node *random_node(wf_graph *g, const char *op, const char *name,
                            wf_dtype dt, const int64_t *dims, int rank,
                            rnd_attrs a) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);

  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  if (a.seed || a.seed2) {
    wf_node_desc_set_attr_int(d, "seed", a.seed);
    wf_node_desc_set_attr_int(d, "seed2", a.seed2);
  }
  if (a.f1)
    wf_node_desc_set_attr_float(d, a.f1, a.v1);
  if (a.f2)
    wf_node_desc_set_attr_float(d, a.f2, a.v2);
  return th_finish(d, op);
}

/* n's value at `step` of a new session (runs steps 0 .. step; returns the
 * last value, a new reference). */
static wf_tensor *fetch_at_step(wf_graph *g, wf_node *n, int step) {
  wf_session *s = wf_session_new(g, NULL);
  wf_tensor *v = NULL;

  assert_non_null(s);
  for (int i = 0; i <= step; i++) {
    wf_tensor_release(v);
    v = th_fetch(s, n);
  }
  wf_session_free(s);
  return v;
}

/* ---- values follow the documented layout -------------------------------- */

static void test_uniform_follows_documented_stream(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node *f32 =
      random_node(g, "RandomUniform", "u32", WF_FLOAT32, TH_DIMS(11), 1,
                  (rnd_attrs){.seed = 5,
                              .seed2 = 7,
                              .f1 = "minval",
                              .f2 = "maxval",
                              .v1 = -1,
                              .v2 = 3});
  wf_node *f64 = random_node(g, "RandomUniform", "u64", WF_FLOAT64, TH_DIMS(5),
                             1, (rnd_attrs){.seed = 0});
  rnd_stream s32, s64;
  wf_tensor *v;

  /* Step 1 for float32, keyed by the seeds. */
  rnd_stream_init(&s32, rnd_key_from_seeds(5, 7), 1);
  v = fetch_at_step(g, f32, 1);
  for (int64_t i = 0; i < 11; i++) {
    uint32_t w[4];
    rnd_stream_block(&s32, (uint64_t)(i / 4), 0, w);
    assert_true(th_get(v, i) == (float)(-1 + 4 * rnd_u24(w[i % 4])));
  }
  wf_tensor_release(v);

  /* Step 0 for float64, keyed by the node name. */
  rnd_stream_init(&s64, rnd_key_from_name("u64"), 0);
  v = fetch_at_step(g, f64, 0);
  for (int64_t i = 0; i < 5; i++) {
    uint32_t w[4];
    int k = (int)(i % 2);
    rnd_stream_block(&s64, (uint64_t)(i / 2), 0, w);
    assert_true(th_get(v, i) == rnd_u53(w[2 * k], w[2 * k + 1]));
  }
  wf_tensor_release(v);
  wf_graph_free(g);
}

static void test_normal_follows_documented_stream(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = random_node(g, "RandomNormal", "n", WF_FLOAT64, TH_DIMS(7), 1,
                           (rnd_attrs){.seed = 3,
                                       .seed2 = 0,
                                       .f1 = "mean",
                                       .f2 = "stddev",
                                       .v1 = 2,
                                       .v2 = 0.5});
  rnd_stream s;
  wf_tensor *v = fetch_at_step(g, n, 2);

  rnd_stream_init(&s, rnd_key_from_seeds(3, 0), 2);
  for (int64_t i = 0; i < 7; i++) {
    uint32_t w[4];
    double z0, z1;
    rnd_stream_block(&s, (uint64_t)(i / 2), 0, w);
    rnd_normal_pair(w, &z0, &z1);
    assert_true(th_get(v, i) == 2 + 0.5 * (i % 2 ? z1 : z0));
  }
  wf_tensor_release(v);
  wf_graph_free(g);
}

/* ---- determinism ------------------------------------------------------- */

#define DET_NODES 6

/* The same six random nodes, whatever the runtime. */
static void build_det_graph(wf_graph *g, wf_node **out) {
  out[0] = random_node(g, "RandomUniform", "a", WF_FLOAT32, TH_DIMS(64, 9), 2,
                       (rnd_attrs){.seed = 0});
  out[1] = random_node(g, "RandomNormal", "b", WF_FLOAT64, TH_DIMS(301), 1,
                       (rnd_attrs){.seed = 11, .seed2 = 12});
  out[2] = random_node(g, "TruncatedNormal", "c", WF_FLOAT32, TH_DIMS(5, 77), 2,
                       (rnd_attrs){.seed = 0});
  out[3] = random_node(g, "GlorotUniform", "d", WF_FLOAT64, TH_DIMS(3, 3, 4, 8),
                       4, (rnd_attrs){.seed = 1, .seed2 = 2});
  out[4] = random_node(g, "HeNormal", "e", WF_FLOAT32, TH_DIMS(40, 30), 2,
                       (rnd_attrs){.seed = 0});
  out[5] = random_node(g, "LeCunNormal", "f", WF_FLOAT64, TH_DIMS(17), 1,
                       (rnd_attrs){.seed = 0, .seed2 = 9});
}

/* Runs the six nodes for 3 steps in a new session on g; vals[step][node]. */
static void run_det(wf_graph *g, wf_node **nodes,
                    wf_tensor *vals[3][DET_NODES]) {
  wf_session *s = wf_session_new(g, NULL);
  wf_status *st = wf_status_new();
  wf_output outs[DET_NODES];

  assert_non_null(s);
  for (int i = 0; i < DET_NODES; i++)
    outs[i] = th_out(nodes[i]);
  for (int step = 0; step < 3; step++)
    if (wf_session_run(s, NULL, NULL, NULL, 0, outs, vals[step], DET_NODES,
                       NULL, 0, NULL, st))
      fail_msg("run: %s", wf_status_message(st));
  wf_status_free(st);
  wf_session_free(s);
}

static int same_tensor(const wf_tensor *a, const wf_tensor *b) {
  return wf_tensor_nbytes(a) == wf_tensor_nbytes(b) &&
         memcmp(wf_tensor_data(a), wf_tensor_data(b), wf_tensor_nbytes(a)) == 0;
}

static void test_values_do_not_depend_on_threads_or_session(void **state) {
  wf_runtime *rt1 = th_runtime_new(1);
  wf_graph *g1 = wf_graph_new(rt1), *g4 = wf_graph_new(rt);
  wf_node *n1[DET_NODES], *n4[DET_NODES];
  wf_tensor *one[3][DET_NODES], *four[3][DET_NODES], *again[3][DET_NODES];

  assert_non_null(rt1);
  build_det_graph(g1, n1);
  build_det_graph(g4, n4);
  run_det(g1, n1, one);
  run_det(g4, n4, four);
  run_det(g4, n4, again);
  for (int step = 0; step < 3; step++)
    for (int i = 0; i < DET_NODES; i++) {
      if (!same_tensor(one[step][i], four[step][i]))
        fail_msg("node %d, step %d: 1 and 4 threads differ", i, step);
      if (!same_tensor(four[step][i], again[step][i]))
        fail_msg("node %d, step %d: two sessions differ", i, step);
      if (step > 0 && same_tensor(four[step][i], four[step - 1][i]))
        fail_msg("node %d: steps %d and %d give the same values", i, step - 1,
                 step);
    }
  for (int step = 0; step < 3; step++)
    for (int i = 0; i < DET_NODES; i++) {
      wf_tensor_release(one[step][i]);
      wf_tensor_release(four[step][i]);
      wf_tensor_release(again[step][i]);
    }
  wf_graph_free(g1);
  wf_graph_free(g4);
  wf_runtime_free(rt1);
}

static void test_nodes_and_seeds_key_the_stream(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const char *op = "RandomUniform";
  wf_node *by_name_a = random_node(g, op, "x", WF_FLOAT32, TH_DIMS(50), 1,
                                   (rnd_attrs){.seed = 0});
  wf_node *by_name_b = random_node(g, op, "y", WF_FLOAT32, TH_DIMS(50), 1,
                                   (rnd_attrs){.seed = 0});
  wf_node *seeded_a = random_node(g, op, "s1", WF_FLOAT32, TH_DIMS(50), 1,
                                  (rnd_attrs){.seed = 4, .seed2 = 5});
  wf_node *seeded_b = random_node(g, op, "s2", WF_FLOAT32, TH_DIMS(50), 1,
                                  (rnd_attrs){.seed = 4, .seed2 = 5});
  wf_node *other_seed2 = random_node(g, op, "s3", WF_FLOAT32, TH_DIMS(50), 1,
                                     (rnd_attrs){.seed = 4, .seed2 = 6});
  wf_node *other_seed = random_node(g, op, "s4", WF_FLOAT32, TH_DIMS(50), 1,
                                    (rnd_attrs){.seed = 3, .seed2 = 5});
  wf_node *nodes[6] = {by_name_a, by_name_b,   seeded_a,
                       seeded_b,  other_seed2, other_seed};
  wf_tensor *v[6];
  wf_session *s = wf_session_new(g, NULL);
  wf_status *st = wf_status_new();
  wf_output outs[6];

  for (int i = 0; i < 6; i++)
    outs[i] = th_out(nodes[i]);
  if (wf_session_run(s, NULL, NULL, NULL, 0, outs, v, 6, NULL, 0, NULL, st))
    fail_msg("run: %s", wf_status_message(st));
  assert_false(same_tensor(v[0], v[1])); /* different node names */
  assert_true(same_tensor(v[2], v[3]));  /* the same explicit seeds */
  assert_false(same_tensor(v[2], v[4])); /* another seed2 */
  assert_false(same_tensor(v[2], v[5])); /* another seed */
  assert_false(same_tensor(v[0], v[2]));
  for (int i = 0; i < 6; i++)
    wf_tensor_release(v[i]);
  wf_status_free(st);
  wf_session_free(s);
  wf_graph_free(g);
}

/* ---- statistics -------------------------------------------------------- */

typedef struct moments {
  double mean, var, min, max;
} moments;

static moments moments_of(const wf_tensor *t) {
  int64_t n = wf_tensor_count(t);
  double sum = 0, sq = 0;
  moments m = {0, 0, INFINITY, -INFINITY};

  for (int64_t i = 0; i < n; i++) {
    double x = th_get(t, i);
    sum += x;
    m.min = fmin(m.min, x);
    m.max = fmax(m.max, x);
  }
  m.mean = sum / (double)n;
  for (int64_t i = 0; i < n; i++) {
    double d = th_get(t, i) - m.mean;
    sq += d * d;
  }
  m.var = sq / (double)(n - 1);
  return m;
}

/* The variance of a standard normal truncated to [-2, 2]. */
static double truncated_variance(void) {
  double phi2 = exp(-2.0) / sqrt(2 * M_PI);
  return 1 - 4 * phi2 / erf(2 / sqrt(2.0));
}

/* Mean and variance within 5 standard errors of the exact ones (the
 * variance's error taken as the normal's var * sqrt(2 / n), an upper bound
 * for the bounded distributions here), and every value inside [lo, hi]. */
static void expect_distribution(const char *what, const wf_tensor *t,
                                double mean, double var, double lo, double hi) {
  int64_t n = wf_tensor_count(t);
  moments m = moments_of(t);
  double mean_tol = 5 * sqrt(var / (double)n);
  double var_tol = 5 * var * sqrt(2.0 / (double)n);

  if (fabs(m.mean - mean) > mean_tol)
    fail_msg("%s: mean %g, expected %g +- %g", what, m.mean, mean, mean_tol);
  if (fabs(m.var - var) > var_tol)
    fail_msg("%s: variance %g, expected %g +- %g", what, m.var, var, var_tol);
  if (m.min < lo || m.max > hi)
    fail_msg("%s: values in [%g, %g], outside [%g, %g]", what, m.min, m.max, lo,
             hi);
}

static void test_distributions_have_their_moments(void **state) {
  const wf_dtype dts[2] = {WF_FLOAT32, WF_FLOAT64};
  double tv = truncated_variance();

  for (int k = 0; k < 2; k++) {
    wf_graph *g = wf_graph_new(rt);
    const int64_t *n = TH_DIMS(400, 500);
    wf_node *u = random_node(g, "RandomUniform", "u", dts[k], n, 2,
                             (rnd_attrs){.seed = 0,
                                         .seed2 = 0,
                                         .f1 = "minval",
                                         .f2 = "maxval",
                                         .v1 = -2,
                                         .v2 = 3});
    wf_node *nn = random_node(g, "RandomNormal", "n", dts[k], n, 2,
                              (rnd_attrs){.seed = 0,
                                          .seed2 = 0,
                                          .f1 = "mean",
                                          .f2 = "stddev",
                                          .v1 = 1,
                                          .v2 = 2});
    wf_node *t = random_node(g, "TruncatedNormal", "t", dts[k], n, 2,
                             (rnd_attrs){.seed = 0,
                                         .seed2 = 0,
                                         .f1 = "mean",
                                         .f2 = "stddev",
                                         .v1 = -1,
                                         .v2 = 3});
    wf_tensor *v;
    char what[64];

    snprintf(what, sizeof what, "RandomUniform %s", wf_dtype_name(dts[k]));
    v = fetch_at_step(g, u, 0);
    expect_distribution(what, v, 0.5, 25.0 / 12, -2, 3);
    assert_true(moments_of(v).max < 3); /* maxval excluded */
    wf_tensor_release(v);
    snprintf(what, sizeof what, "RandomNormal %s", wf_dtype_name(dts[k]));
    v = fetch_at_step(g, nn, 0);
    expect_distribution(what, v, 1, 4, -INFINITY, INFINITY);
    wf_tensor_release(v);
    snprintf(what, sizeof what, "TruncatedNormal %s", wf_dtype_name(dts[k]));
    v = fetch_at_step(g, t, 0);
    /* Truncated at 2 stddev: [-7, 5], float32 rounding aside. */
    expect_distribution(what, v, -1, 9 * tv, -7 - 1e-5, 5 + 1e-5);
    wf_tensor_release(v);
    wf_graph_free(g);
  }
}

/* An initializer on a shape: its variance and the bound of its values. */
typedef struct init_case {
  const char *op;
  int64_t dims[4];
  int rank;
  double var;   /* 1 / fan_in, 2 / (fan_in + fan_out), ... */
  double bound; /* every |x| <= bound */
  int uniform;  /* the largest |x| comes within 0.5% of bound */
} init_case;

static void test_initializers_have_their_variance(void **state) {
  const double c = 0.87962566103423978; /* truncated normal's stddev */
  /* Fans: (300, 200) -> 300, 200; (3, 3, 16, 32) -> 144, 288;
   * (5, 5, 8, 4) -> 200, 100; (784, 100) -> 784, 100; (1000,) -> 1000. */
  const init_case cases[] = {
      {"GlorotUniform", {300, 200}, 2, 2.0 / 500, sqrt(6.0 / 500), 1},
      {"GlorotUniform", {3, 3, 16, 32}, 4, 2.0 / 432, sqrt(6.0 / 432), 1},
      {"GlorotNormal",
       {3, 3, 16, 32},
       4,
       2.0 / 432,
       2 * sqrt(2.0 / 432) / c,
       0},
      {"HeUniform", {5, 5, 8, 4}, 4, 2.0 / 200, sqrt(6.0 / 200), 1},
      {"HeUniform", {1000}, 1, 2.0 / 1000, sqrt(6.0 / 1000), 1},
      {"HeNormal", {3, 3, 16, 32}, 4, 2.0 / 144, 2 * sqrt(2.0 / 144) / c, 0},
      {"HeNormal", {300, 200}, 2, 2.0 / 300, 2 * sqrt(2.0 / 300) / c, 0},
      {"LeCunNormal", {784, 100}, 2, 1.0 / 784, 2 * sqrt(1.0 / 784) / c, 0},
  };

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const init_case *k = &cases[i];
    wf_graph *g = wf_graph_new(rt);
    wf_node *n = random_node(g, k->op, NULL, WF_FLOAT64, k->dims, k->rank,
                             (rnd_attrs){.seed = 0});
    wf_tensor *v = fetch_at_step(g, n, 0);
    moments m = moments_of(v);
    double largest = fmax(-m.min, m.max);
    char what[96], shape[64];
    wf_shape s;

    wf_shape_init(&s, k->dims, k->rank);
    snprintf(what, sizeof what, "%s %s", k->op,
             wf_shape_str(&s, shape, sizeof shape));
    expect_distribution(what, v, 0, k->var, -k->bound, k->bound);
    if (k->uniform && largest < 0.995 * k->bound)
      fail_msg("%s: largest |x| %g, expected close to the limit %g", what,
               largest, k->bound);
    wf_tensor_release(v);
    wf_graph_free(g);
  }
}

/* ---- constant initializers --------------------------------------------- */

static void test_zeros_ones_and_constant_fill(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d;
  wf_node *z, *o, *c;
  wf_tensor *v;

  d = wf_node_desc_new(g, "Zeros", NULL);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(2, 3), 2);
  z = th_finish(d, "Zeros");
  d = wf_node_desc_new(g, "Ones", NULL);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT64);
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(4), 1);
  o = th_finish(d, "Ones");
  d = wf_node_desc_new(g, "Constant", NULL);
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(3), 1);
  wf_node_desc_set_attr_float(d, "value", 0.25);
  c = th_finish(d, "Constant"); /* dtype defaults to float32 */
  v = fetch_at_step(g, z, 0);
  assert_int_equal(wf_tensor_count(v), 6);
  for (int i = 0; i < 6; i++)
    assert_true(th_get(v, i) == 0);
  wf_tensor_release(v);
  v = fetch_at_step(g, o, 0);
  assert_int_equal(wf_tensor_dtype(v), WF_INT64);
  for (int i = 0; i < 4; i++)
    assert_true(th_get(v, i) == 1);
  wf_tensor_release(v);
  v = fetch_at_step(g, c, 0);
  assert_int_equal(wf_tensor_dtype(v), WF_FLOAT32);
  for (int i = 0; i < 3; i++)
    assert_true(th_get(v, i) == 0.25);
  wf_tensor_release(v);
  wf_graph_free(g);
}

/* ---- refusals ---------------------------------------------------------- */

static void expect_refused(wf_node_desc *d, const char *part1,
                           const char *part2) {
  wf_status *st = wf_status_new();

  assert_null(wf_node_desc_finish(d, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  th_expect_message(st, part1, part2, NULL);
  wf_status_free(st);
}

static void test_bad_attributes_are_refused(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d;

  d = wf_node_desc_new(g, "RandomNormal", "unknown_dims");
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(3, -1), 2);
  expect_refused(d, "unknown_dims", "fully known");

  d = wf_node_desc_new(g, "TruncatedNormal", "negative_stddev");
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(3), 1);
  wf_node_desc_set_attr_float(d, "stddev", -1);
  expect_refused(d, "negative_stddev", "stddev");

  d = wf_node_desc_new(g, "RandomUniform", "reversed");
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(3), 1);
  wf_node_desc_set_attr_float(d, "minval", 2);
  wf_node_desc_set_attr_float(d, "maxval", 1);
  expect_refused(d, "reversed", "minval");

  d = wf_node_desc_new(g, "Constant", "fraction");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT32);
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(3), 1);
  wf_node_desc_set_attr_float(d, "value", 2.5);
  expect_refused(d, "fraction", "2.5");

  d = wf_node_desc_new(g, "GlorotUniform", "integer");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT32);
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(3), 1);
  expect_refused(d, "integer", "int32");
  wf_graph_free(g);
}

static void test_random_ops_are_not_differentiable(void **state) {
  static const char *const ops[] = {
      "RandomUniform", "RandomNormal", "TruncatedNormal", "GlorotUniform",
      "GlorotNormal",  "HeUniform",    "HeNormal",        "LeCunNormal",
      "Zeros",         "Ones",         "Constant"};

  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const wf_op_def *def = wf_runtime_op_find(rt, ops[i]);
    assert_non_null(def);
    assert_int_equal(wf_runtime_op_gradient(rt, ops[i]), 0);
    assert_int_equal((def->flags & WF_OP_RANDOM) != 0, i < 8);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_philox_matches_known_answers),
      cmocka_unit_test(test_uniform_follows_documented_stream),
      cmocka_unit_test(test_normal_follows_documented_stream),
      cmocka_unit_test(test_values_do_not_depend_on_threads_or_session),
      cmocka_unit_test(test_nodes_and_seeds_key_the_stream),
      cmocka_unit_test(test_distributions_have_their_moments),
      cmocka_unit_test(test_initializers_have_their_variance),
      cmocka_unit_test(test_zeros_ones_and_constant_fill),
      cmocka_unit_test(test_bad_attributes_are_refused),
      cmocka_unit_test(test_random_ops_are_not_differentiable),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
