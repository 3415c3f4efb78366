/* tests/core/test_passes.c — the core's graph passes (core/compile/pass_*.c)
 * and ops-math's arithmetic pass (plugins/ops/math/arithmetic.c): each one's
 * rewrite checked on the working graph (nodes counted by op) and by running
 * the signature with the pass on and off (the same fetched values, bit for
 * bit), on graphs built to trigger it and graphs built to tempt it wrongly
 * (stateful and random ops, broadcasting, NaN and infinities, control
 * dependencies, nodes with several consumers); an mlp trains the same with
 * every pass on and off. Uses the built-in plugins of the build tree. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "graph/graph_internal.h"
#include "compile/optimize.h"
#include "compile/plugin_passes.h"

static wf_status *st;
/* Runtimes whose configs switch the passes under test: none of them, each
 * one alone, all of them, and constant folding with a 16-byte cap. */
static wf_runtime *rt_none, *rt_cse, *rt_fold, *rt_arith, *rt_all, *rt_cap;

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static wf_runtime *runtime_with(int cse, int fold, int arith, const char *cap) {
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  OK(wf_config_set(cfg, "passes", "cse", cse ? "true" : "false", st));
  OK(wf_config_set(cfg, "passes", "constant_folding", fold ? "true" : "false",
                   st));
  OK(wf_config_set(cfg, "passes", "arithmetic", arith ? "true" : "false", st));
  if (cap)
    OK(wf_config_set(cfg, "passes", "constant_folding_max_bytes", cap, st));
  wf_runtime *r = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!r)
    fail_msg("runtime: %s", wf_status_message(st));
  return r;
}

/* The arithmetic pass alone, with the test-memdev plugin's device in the
 * device order `order`. */
static wf_runtime *runtime_ordered(const char *order) {
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  OK(wf_config_set(cfg, "plugins", "paths",
                   TEST_BUILDDIR "/tests/devices/.libs", st));
  OK(wf_config_set(cfg, "devices", "order", order, st));
  OK(wf_config_set(cfg, "passes", "cse", "false", st));
  OK(wf_config_set(cfg, "passes", "constant_folding", "false", st));
  OK(wf_config_set(cfg, "passes", "arithmetic", "true", st));
  wf_runtime *r = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!r)
    fail_msg("runtime: %s", wf_status_message(st));
  return r;
}

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  rt_none = runtime_with(0, 0, 0, NULL);
  rt_cse = runtime_with(1, 0, 0, NULL);
  rt_fold = runtime_with(0, 1, 0, NULL);
  rt_arith = runtime_with(0, 0, 1, NULL);
  rt_all = runtime_with(1, 1, 1, NULL);
  rt_cap = runtime_with(0, 1, 0, "16");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  wf_runtime_free(rt_none);
  wf_runtime_free(rt_cse);
  wf_runtime_free(rt_fold);
  wf_runtime_free(rt_arith);
  wf_runtime_free(rt_all);
  wf_runtime_free(rt_cap);
  wf_status_free(st);
  return 0;
}

/* ---- building graphs ----------------------------------------------------- */

/* A graph with its signature; feed values owned. */
typedef struct net {
  wf_graph *g;
  wf_output feeds[4];
  wf_tensor *values[4];
  int nfeeds;
  wf_output fetches[8];
  int nfetches;
  wf_node *targets[4];
  int ntargets;
  wf_output var;     /* the variable of variable(), if any */
  wf_node *var_init; /* and the node that initialises it */
} net;

typedef void build_fn(net *n);

static wf_node *finish(wf_node_desc *d) {
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("adding a node: %s", wf_status_message(st));
  return n;
}

static wf_output konst(wf_graph *g, wf_dtype dt, const int64_t *dims, int rank,
                       const void *data) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  assert_non_null(t);
  memcpy(wf_tensor_data(t), data, wf_tensor_nbytes(t));
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_tensor_release(t);
  return (wf_output){finish(d), 0};
}

static wf_output scalar_f(wf_graph *g, float v) {
  return konst(g, WF_FLOAT32, NULL, 0, &v);
}

/* A float32 scalar Const that waits for `after`. */
static wf_output gated_scalar(wf_graph *g, float v, wf_node *after) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  assert_non_null(t);
  memcpy(wf_tensor_data(t), &v, sizeof v);
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_add_control_input(d, after);
  wf_tensor_release(t);
  return (wf_output){finish(d), 0};
}

static wf_output vector_i32(wf_graph *g, int n, const int32_t *v) {
  int64_t dims[1] = {n};
  return konst(g, WF_INT32, dims, 1, v);
}

/* Adds a placeholder and its feed: a tensor of dtype dt and the given
 * shape filled from data (placeholder shape: `declared`, or the same). */
static wf_output feed(net *n, const char *name, wf_dtype dt,
                      const int64_t *dims, int rank, const int64_t *declared,
                      const void *data) {
  wf_node_desc *d = wf_node_desc_new(n->g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", declared ? declared : dims, rank);
  wf_output p = {finish(d), 0};
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  assert_non_null(t);
  memcpy(wf_tensor_data(t), data, wf_tensor_nbytes(t));
  n->feeds[n->nfeeds] = p;
  n->values[n->nfeeds++] = t;
  return p;
}

static wf_output op1(wf_graph *g, const char *op, wf_output a) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, a);
  return (wf_output){finish(d), 0};
}

static wf_output op2(wf_graph *g, const char *op, wf_output a, wf_output b) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, a);
  wf_node_desc_add_input(d, b);
  return (wf_output){finish(d), 0};
}

/* op2 with one control input. */
static wf_output op2_after(wf_graph *g, const char *op, wf_output a,
                           wf_output b, wf_node *after) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, a);
  wf_node_desc_add_input(d, b);
  wf_node_desc_add_control_input(d, after);
  return (wf_output){finish(d), 0};
}

static void fetch(net *n, wf_output o) { n->fetches[n->nfetches++] = o; }

static net net_build(wf_runtime *r, build_fn *build) {
  net n;
  memset(&n, 0, sizeof n);
  n.g = wf_graph_new(r);
  assert_non_null(n.g);
  build(&n);
  return n;
}

static void net_free(net *n) {
  for (int i = 0; i < n->nfeeds; i++)
    wf_tensor_release(n->values[i]);
  wf_graph_free(n->g);
}

static wf__signature net_sig(const net *n) {
  return (wf__signature){n->feeds,    n->nfeeds,  n->fetches,
                         n->nfetches, n->targets, n->ntargets};
}

/* The working graph of n's signature on n's runtime. */
static wf__work net_work(const net *n) {
  wf__signature sig = net_sig(n);
  wf__work w;
  OK(wf__work_build(wf_graph_runtime(n->g), n->g, &sig, &w, st));
  return w;
}

static int count_op(const wf__work *w, const char *op) {
  int c = 0;
  for (int i = 0; i < wf_graph_num_nodes(w->g); i++)
    c += strcmp(wf_node_op(wf_graph_node(w->g, i)), op) == 0;
  return c;
}

/* The k-th node of op in the working graph, or NULL. */
static wf_node *nth_op(const wf__work *w, const char *op, int k) {
  for (int i = 0; i < wf_graph_num_nodes(w->g); i++) {
    wf_node *nd = wf_graph_node(w->g, i);
    if (strcmp(wf_node_op(nd), op) == 0 && k-- == 0)
      return nd;
  }
  return NULL;
}

/* Counts nodes of op in the working graph of build's signature on r. */
static int ops_in_work(wf_runtime *r, build_fn *build, const char *op) {
  net n = net_build(r, build);
  wf__work w = net_work(&n);
  int c = count_op(&w, op);
  wf__work_deinit(&w);
  net_free(&n);
  return c;
}

/* Runs n's signature once in session s; out receives the fetches. */
static void net_run(net *n, wf_session *s, wf_tensor **out) {
  OK(wf_session_run(s, NULL, n->feeds, n->values, n->nfeeds, n->fetches, out,
                    n->nfetches, n->targets, n->ntargets, NULL, st));
}

static void assert_same_tensor(const wf_tensor *a, const wf_tensor *b, int i) {
  wf_shape sa, sb;
  wf_tensor_shape(a, &sa);
  wf_tensor_shape(b, &sb);
  if (wf_tensor_dtype(a) != wf_tensor_dtype(b) || !wf_shape_equal(&sa, &sb))
    fail_msg("fetch %d: dtype or shape differs with the pass on", i);
  if (memcmp(wf_tensor_data(a), wf_tensor_data(b), wf_tensor_nbytes(a)) != 0)
    fail_msg("fetch %d: values differ with the pass on", i);
}

/* Every fetch of build's signature, run once on a fresh session, is the
 * same bit for bit on r as with every pass off. */
static void assert_same_values(wf_runtime *r, build_fn *build) {
  net off = net_build(rt_none, build), on = net_build(r, build);
  wf_session *s_off = wf_session_new(off.g, st),
             *s_on = wf_session_new(on.g, st);
  assert_non_null(s_off);
  assert_non_null(s_on);
  wf_tensor *a[8] = {0}, *b[8] = {0};
  net_run(&off, s_off, a);
  net_run(&on, s_on, b);
  for (int i = 0; i < off.nfetches; i++) {
    assert_same_tensor(a[i], b[i], i);
    wf_tensor_release(a[i]);
    wf_tensor_release(b[i]);
  }
  wf_session_free(s_off);
  wf_session_free(s_on);
  net_free(&off);
  net_free(&on);
}

static float fetched_float(wf_tensor *t, int64_t i) {
  return ((const float *)wf_tensor_data(t))[i];
}

/* A scalar float32 variable "v" of n, initialised to 0 by n->var_init:
 * its handle (also n->var). */
static wf_output variable(net *n) {
  wf_graph *g = n->g;
  wf_node_desc *d = wf_node_desc_new(g, "VarHandle", "v");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", NULL, 0);
  wf_output h = {finish(d), 0};
  d = wf_node_desc_new(g, "AssignVariable", "v_init");
  wf_node_desc_add_input(d, h);
  wf_node_desc_add_input(d, scalar_f(g, 0));
  n->var_init = finish(d);
  n->var = h;
  return h;
}

static wf_node *assign_add(wf_graph *g, wf_output h, float by) {
  wf_node_desc *d = wf_node_desc_new(g, "AssignAddVariable", NULL);
  wf_node_desc_add_input(d, h);
  wf_node_desc_add_input(d, scalar_f(g, by));
  return finish(d);
}

static wf_output read_var(wf_graph *g, wf_output h) {
  wf_node_desc *d = wf_node_desc_new(g, "ReadVariable", NULL);
  wf_node_desc_add_input(d, h);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  return (wf_output){finish(d), 0};
}

/* The variable's value, read in its own step. */
static float value_of(wf_session *s, wf_graph *g, wf_output h) {
  wf_output r = read_var(g, h);
  wf_tensor *v = NULL;
  OK(wf_session_run(s, NULL, NULL, NULL, 0, &r, &v, 1, NULL, 0, NULL, st));
  float f = fetched_float(v, 0);
  wf_tensor_release(v);
  return f;
}

static void run_target(wf_session *s, wf_node *t) {
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &t, 1, NULL, st));
}

static wf_output random_uniform(wf_graph *g) {
  int64_t dims[1] = {4};
  wf_node_desc *d = wf_node_desc_new(g, "RandomUniform", NULL);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", dims, 1);
  return (wf_output){finish(d), 0};
}

static const float x23[6] = {1.5f, -2, 0.25f, 3, -0.0f, 7};
static const int64_t d23[2] = {2, 3};

/* ---- common-subexpression elimination ------------------------------------ */

/* Equal Consts merge; then Add(x, c) and Add(c', x) (commutative) merge,
 * and Neg of each; Sub(x, c) and Sub(c, x) do not. */
static void build_cse_equal(net *n) {
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, x23);
  wf_output a = op2(n->g, "Add", x, scalar_f(n->g, 2));
  wf_output b = op2(n->g, "Add", scalar_f(n->g, 2), x);
  wf_output s1 = op2(n->g, "Sub", x, scalar_f(n->g, 2));
  wf_output s2 = op2(n->g, "Sub", scalar_f(n->g, 2), x);
  fetch(n, op2(n->g, "Mul", op1(n->g, "Neg", a), op1(n->g, "Neg", b)));
  fetch(n, op2(n->g, "Mul", s1, s2));
  fetch(n, b);
}

static void
test_cse_merges_equal_nodes_and_swapped_commutative_inputs(void **state) {
  (void)state;
  assert_int_equal(ops_in_work(rt_none, build_cse_equal, "Const"), 4);
  assert_int_equal(ops_in_work(rt_cse, build_cse_equal, "Const"), 1);
  assert_int_equal(ops_in_work(rt_cse, build_cse_equal, "Add"), 1);
  assert_int_equal(ops_in_work(rt_cse, build_cse_equal, "Neg"), 1);
  assert_int_equal(ops_in_work(rt_cse, build_cse_equal, "Sub"), 2);
  /* The fetch of the merged-away Add moved to the survivor. */
  net n = net_build(rt_cse, build_cse_equal);
  wf__work w = net_work(&n);
  assert_ptr_equal(w.fetches[2].node, nth_op(&w, "Add", 0));
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_cse, build_cse_equal);
}

/* A duplicate with a control consumer: the survivor takes it over. */
static void build_cse_control(net *n) {
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, x23);
  wf_output a = op1(n->g, "Neg", x), b = op1(n->g, "Neg", x);
  wf_node_desc *d = wf_node_desc_new(n->g, "NoOp", "after_b");
  wf_node_desc_add_control_input(d, b.node);
  n->targets[n->ntargets++] = finish(d);
  fetch(n, op2(n->g, "Sub", a, op1(n->g, "Exp", b)));
}

static void test_cse_survivor_takes_over_control_consumers(void **state) {
  (void)state;
  net n = net_build(rt_cse, build_cse_control);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "Neg"), 1);
  wf_node *noop = nth_op(&w, "NoOp", 0);
  assert_non_null(noop);
  assert_int_equal(wf_node_num_control_inputs(noop), 1);
  assert_ptr_equal(wf_node_control_input(noop, 0), nth_op(&w, "Neg", 0));
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_cse, build_cse_control);
}

/* Pairs that look alike but differ: attributes, control inputs, requested
 * device; and stateful and random ops, which never merge. */
static void build_cse_different(net *n) {
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, x23);
  int64_t ax0 = 0, ax1 = 1;
  wf_node_desc *d = wf_node_desc_new(n->g, "Sum", NULL);
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_int_list(d, "axes", &ax0, 1);
  wf_output s0 = {finish(d), 0};
  d = wf_node_desc_new(n->g, "Sum", NULL);
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_int_list(d, "axes", &ax1, 1);
  wf_output s1 = {finish(d), 0};
  fetch(n, s0);
  fetch(n, s1);
  wf_output e1 = op1(n->g, "Exp", x);
  d = wf_node_desc_new(n->g, "Exp", NULL);
  wf_node_desc_add_input(d, x);
  wf_node_desc_add_control_input(d, s0.node);
  wf_output e2 = {finish(d), 0};
  d = wf_node_desc_new(n->g, "Exp", NULL);
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_device(d, "cpu:0");
  wf_output e3 = {finish(d), 0};
  /* As many control inputs as e2, but another one. */
  d = wf_node_desc_new(n->g, "Exp", NULL);
  wf_node_desc_add_input(d, x);
  wf_node_desc_add_control_input(d, s1.node);
  wf_output e4 = {finish(d), 0};
  fetch(n,
        op2(n->g, "Add", op2(n->g, "Add", e1, e2), op2(n->g, "Add", e3, e4)));
}

static void test_cse_keeps_nodes_that_differ(void **state) {
  (void)state;
  assert_int_equal(ops_in_work(rt_cse, build_cse_different, "Sum"), 2);
  assert_int_equal(ops_in_work(rt_cse, build_cse_different, "Exp"), 4);
  assert_same_values(rt_cse, build_cse_different);
}

/* Two identical AssignAddVariable targets, two identical reads, two
 * identical random nodes. */
static void build_cse_stateful(net *n) {
  wf_output h = variable(n);
  n->targets[n->ntargets++] = assign_add(n->g, h, 1);
  n->targets[n->ntargets++] = assign_add(n->g, h, 1);
  fetch(n, random_uniform(n->g));
  fetch(n, random_uniform(n->g));
}

static void build_cse_reads(net *n) {
  wf_output h = variable(n);
  fetch(n, read_var(n->g, h));
  fetch(n, read_var(n->g, h));
}

static void test_cse_never_merges_stateful_or_random_nodes(void **state) {
  (void)state;
  assert_int_equal(ops_in_work(rt_cse, build_cse_stateful, "AssignAddVariable"),
                   2);
  assert_int_equal(ops_in_work(rt_cse, build_cse_stateful, "RandomUniform"), 2);
  assert_int_equal(ops_in_work(rt_cse, build_cse_reads, "ReadVariable"), 2);
  /* But the two equal Consts they add do merge. */
  assert_int_equal(ops_in_work(rt_cse, build_cse_stateful, "Const"), 1);

  net n = net_build(rt_cse, build_cse_stateful);
  wf_session *s = wf_session_new(n.g, st);
  run_target(s, n.var_init);
  wf_tensor *out[2] = {0};
  net_run(&n, s, out);
  /* Both increments happened; the two random streams are different. */
  assert_float_equal(value_of(s, n.g, n.var), 2.0, 0);
  assert_memory_not_equal(wf_tensor_data(out[0]), wf_tensor_data(out[1]),
                          4 * sizeof(float));
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);
  wf_session_free(s);
  net_free(&n);
}

/* ---- constant folding ---------------------------------------------------- */

/* x + Transpose(MatMul(c1, c2)): the constant part folds into one Const;
 * MatMul's value is also fetched directly. */
static void build_fold_chain(net *n) {
  static const float c1[6] = {1, 2, 3, 4, 5, 6},
                     c2[9] = {1, 0, 2, -1, 3, 0, 0.5f, 1, 1};
  static const int64_t d33[2] = {3, 3}, d32[2] = {3, 2};
  static const int32_t perm[2] = {1, 0};
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, x23);
  wf_output a = konst(n->g, WF_FLOAT32, d32, 2, c1);
  wf_output b = konst(n->g, WF_FLOAT32, d33, 2, c2);
  /* b^T (3, 3) x a (3, 2), transposed back to x's (2, 3). */
  wf_node_desc *d = wf_node_desc_new(n->g, "MatMul", NULL);
  wf_node_desc_add_input(d, b);
  wf_node_desc_add_input(d, a);
  wf_node_desc_set_attr_bool(d, "transpose_a", 1);
  wf_output m = {finish(d), 0};
  wf_output t = op2(n->g, "Transpose", m, vector_i32(n->g, 2, perm));
  fetch(n, op2(n->g, "Add", x, t));
  fetch(n, m);
  /* An op without inputs that is neither stateful nor random folds too. */
  d = wf_node_desc_new(n->g, "Ones", NULL);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", d23, 2);
  fetch(n, op2(n->g, "Mul", x, (wf_output){finish(d), 0}));
}

static void test_constant_folding_collapses_constant_subgraphs(void **state) {
  (void)state;
  net n = net_build(rt_fold, build_fold_chain);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "MatMul"), 0);
  assert_int_equal(count_op(&w, "Transpose"), 0);
  assert_int_equal(count_op(&w, "Ones"), 0);
  assert_int_equal(count_op(&w, "Add"), 1);
  assert_int_equal(count_op(&w, "Mul"), 1);
  /* Transpose's fold, MatMul's (fetched) and Ones'. */
  assert_int_equal(count_op(&w, "Const"), 3);
  assert_string_equal(wf_node_op(w.fetches[1].node), "Const");
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_fold, build_fold_chain);
}

/* A (2, 4) float product (32 bytes) and a (2, 2) one (16 bytes). */
static void build_fold_sizes(net *n) {
  static const float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  static const int64_t d24[2] = {2, 4}, d22[2] = {2, 2};
  fetch(n, op2(n->g, "Mul", konst(n->g, WF_FLOAT32, d24, 2, v),
               scalar_f(n->g, 3)));
  fetch(n, op2(n->g, "Mul", konst(n->g, WF_FLOAT32, d22, 2, v),
               scalar_f(n->g, 5)));
}

static void test_constant_folding_respects_the_size_cap(void **state) {
  (void)state;
  assert_int_equal(ops_in_work(rt_fold, build_fold_sizes, "Mul"), 0);
  /* With a 16-byte cap only the second product folds. */
  net n = net_build(rt_cap, build_fold_sizes);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "Mul"), 1);
  assert_string_equal(wf_node_op(w.fetches[0].node), "Mul");
  assert_string_equal(wf_node_op(w.fetches[1].node), "Const");
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_cap, build_fold_sizes);
}

/* y = Mul(c, 3) where c waits for one increment of the variable; z =
 * Add(4, 5) that itself waits for another. Fetching y and z must still
 * run both increments. */
static void build_fold_gated(net *n) {
  wf_output h = variable(n);
  wf_node *inc1 = assign_add(n->g, h, 1);
  wf_node *inc10 = assign_add(n->g, h, 10);
  fetch(n, op2(n->g, "Mul", gated_scalar(n->g, 2, inc1), scalar_f(n->g, 3)));
  fetch(n, op2_after(n->g, "Add", scalar_f(n->g, 4), scalar_f(n->g, 5), inc10));
}

static void test_constant_folding_keeps_control_dependencies(void **state) {
  (void)state;
  net n = net_build(rt_fold, build_fold_gated);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "Mul"), 0);
  assert_int_equal(count_op(&w, "Add"), 0);
  /* Each folded Const waits for the increment that gated its original:
   * through an input Const (y) or directly (z). */
  for (int f = 0; f < 2; f++) {
    wf_node *c = w.fetches[f].node;
    assert_string_equal(wf_node_op(c), "Const");
    assert_int_equal(wf_node_num_control_inputs(c), 1);
    assert_string_equal(wf_node_op(wf_node_control_input(c, 0)),
                        "AssignAddVariable");
  }
  wf__work_deinit(&w);

  wf_session *s = wf_session_new(n.g, st);
  run_target(s, n.var_init);
  wf_tensor *out[2] = {0};
  net_run(&n, s, out);
  assert_float_equal(fetched_float(out[0], 0), 6, 0);
  assert_float_equal(fetched_float(out[1], 0), 9, 0);
  assert_float_equal(value_of(s, n.g, n.var), 11, 0);
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);
  wf_session_free(s);
  net_free(&n);
}

/* Random and variable-reading computations of constants stay live. */
static void build_fold_live(net *n) {
  wf_output h = variable(n);
  fetch(n, op2(n->g, "Mul", random_uniform(n->g), scalar_f(n->g, 2)));
  fetch(n, op2(n->g, "Mul", read_var(n->g, h), scalar_f(n->g, 2)));
}

static void
test_constant_folding_skips_random_and_stateful_nodes(void **state) {
  (void)state;
  assert_int_equal(ops_in_work(rt_fold, build_fold_live, "Mul"), 2);
  assert_int_equal(ops_in_work(rt_fold, build_fold_live, "RandomUniform"), 1);
  net n = net_build(rt_fold, build_fold_live);
  wf_session *s = wf_session_new(n.g, st);
  wf_node *inc = assign_add(n.g, n.var, 1.5f);
  run_target(s, n.var_init);
  wf_tensor *first[2] = {0}, *second[2] = {0};
  net_run(&n, s, first);
  run_target(s, inc);
  net_run(&n, s, second);
  /* A new random draw each step; the variable's new value is seen. */
  assert_memory_not_equal(wf_tensor_data(first[0]), wf_tensor_data(second[0]),
                          4 * sizeof(float));
  assert_float_equal(fetched_float(first[1], 0), 0, 0);
  assert_float_equal(fetched_float(second[1], 0), 3, 0);
  for (int i = 0; i < 2; i++) {
    wf_tensor_release(first[i]);
    wf_tensor_release(second[i]);
  }
  wf_session_free(s);
  net_free(&n);
}

/* A kernel that fails on Consts (Pow refuses a negative integer exponent
 * when it runs) is left for the step to report. */
static void build_fold_failing(net *n) {
  static const int32_t base = 2, exponent = -1;
  wf_output p = op2(n->g, "Pow", konst(n->g, WF_INT32, NULL, 0, &base),
                    konst(n->g, WF_INT32, NULL, 0, &exponent));
  fetch(n, op1(n->g, "Neg", p));
}

static void test_constant_folding_leaves_failures_to_the_step(void **state) {
  (void)state;
  assert_int_equal(ops_in_work(rt_fold, build_fold_failing, "Pow"), 1);
  net n = net_build(rt_fold, build_fold_failing);
  wf_session *s = wf_session_new(n.g, st);
  wf_tensor *out = NULL;
  assert_int_equal(wf_session_run(s, NULL, NULL, NULL, 0, n.fetches, &out, 1,
                                  NULL, 0, NULL, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "Pow"));
  assert_null(out);
  wf_session_free(s);
  net_free(&n);
}

/* ---- arithmetic simplification ------------------------------------------- */

/* Relu(StopGradient(Identity(((x * 1) + (-0)) - 0))) and 1 * x for a float
 * x holding -0, NaN and infinities; int x - x. */
static void build_arith_exact(net *n) {
  static const float xv[6] = {-0.0f, NAN, INFINITY, -INFINITY, 2.5f, -1};
  static const float ones3[3] = {1, 1, 1}, negz[3] = {-0.0f, -0.0f, -0.0f};
  static const int64_t d3[1] = {3}, d13[2] = {1, 3};
  static const int32_t iv[4] = {5, -7, 2147483647, 0};
  static const int64_t d4[1] = {4};
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, xv);
  wf_output y = op2(n->g, "Mul", x, konst(n->g, WF_FLOAT32, d3, 1, ones3));
  y = op2(n->g, "Add", konst(n->g, WF_FLOAT32, d13, 2, negz), y);
  y = op2(n->g, "Sub", y, scalar_f(n->g, 0));
  y = op1(n->g, "StopGradient", op1(n->g, "Identity", y));
  fetch(n, op1(n->g, "Relu", y));
  fetch(n, op1(n->g, "Neg", op2(n->g, "Mul", scalar_f(n->g, 1), x)));
  wf_output i = feed(n, "i", WF_INT32, d4, 1, NULL, iv);
  fetch(n, op2(n->g, "Add", op2(n->g, "Sub", i, i), i));
}

static void test_arithmetic_bypasses_identity_operations(void **state) {
  (void)state;
  net n = net_build(rt_arith, build_arith_exact);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "Mul"), 0);
  assert_int_equal(count_op(&w, "Sub"), 0);
  assert_int_equal(count_op(&w, "Identity"), 0);
  assert_int_equal(count_op(&w, "StopGradient"), 0);
  assert_int_equal(count_op(&w, "ZerosLike"), 1);
  /* Only the integer Add stays; Relu and Neg read the fed x directly. */
  assert_int_equal(count_op(&w, "Add"), 1);
  wf_node *relu = w.fetches[0].node;
  assert_string_equal(wf_node_op(wf_node_input(relu, 0).node), "_Feed");
  assert_string_equal(wf_node_op(wf_node_input(w.fetches[1].node, 0).node),
                      "_Feed");
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_arith, build_arith_exact);
}

/* int32 i - i. */
static void build_int_self_subtract(net *n) {
  static const int32_t iv[4] = {5, -7, 2147483647, 0};
  static const int64_t d4[1] = {4};
  wf_output i = feed(n, "i", WF_INT32, d4, 1, NULL, iv);
  fetch(n, op2(n->g, "Sub", i, i));
}

/* With test-memdev first in the device order, i - i would run there (it
 * has an int32 Sub kernel, no ZerosLike): the pass leaves it, rather than
 * move the work to the CPU, the one device with a ZerosLike kernel. With
 * the CPU first, the same graph is rewritten. Both give zeros. */
static void test_arithmetic_keeps_work_on_its_device(void **state) {
  (void)state;
  wf_runtime *memdev_first = runtime_ordered("memdev, cpu");
  wf_runtime *cpu_first = runtime_ordered("cpu, memdev");
  net n = net_build(memdev_first, build_int_self_subtract);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "ZerosLike"), 0);
  assert_int_equal(count_op(&w, "Sub"), 1);
  wf__work_deinit(&w);
  net_free(&n);
  n = net_build(cpu_first, build_int_self_subtract);
  w = net_work(&n);
  assert_int_equal(count_op(&w, "ZerosLike"), 1);
  assert_int_equal(count_op(&w, "Sub"), 0);
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(memdev_first, build_int_self_subtract);
  assert_same_values(cpu_first, build_int_self_subtract);
  wf_runtime_free(memdev_first);
  wf_runtime_free(cpu_first);
}

/* Neg(o): a consumer, so that a pass could rewire o's readers (a fetch of
 * o itself cannot move to a fed tensor). */
static wf_output negated(wf_graph *g, wf_output o) { return op1(g, "Neg", o); }

/* Forms that look simplifiable but are not (or not provably so). */
static void build_arith_unsafe(net *n) {
  static const float xv[6] = {-0.0f, NAN, INFINITY, -INFINITY, 2.5f, -1};
  static const float ones6[6] = {1, 1, 1, 1, 1, 1};
  static const float almost[3] = {1, 1, 1.0000001f};
  static const int64_t d3[1] = {3}, d13[2] = {1, 3}, d31[2] = {3, 1},
                       unknown3[2] = {-1, 3};
  wf_graph *g = n->g;
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, xv);
  /* Broadcasting: (3, 1) * ones (1, 3) is (3, 3). */
  wf_output col = feed(n, "col", WF_FLOAT32, d31, 2, NULL, xv);
  wf_output ones13 = konst(g, WF_FLOAT32, d13, 2, ones6);
  fetch(n, negated(g, op2(g, "Mul", col, ones13)));
  /* A dim of x unknown: ones (2, 3) could broadcast x's first dim. */
  wf_output u = feed(n, "u", WF_FLOAT32, d23, 2, unknown3, xv);
  wf_output ones23 = konst(g, WF_FLOAT32, d23, 2, ones6);
  fetch(n, negated(g, op2(g, "Mul", u, ones23)));
  /* Float x - x is NaN for infinities and NaN. */
  fetch(n, negated(g, op2(g, "Sub", x, x)));
  /* -0 + (+0) is +0. */
  fetch(n, negated(g, op2(g, "Add", x, scalar_f(g, 0))));
  /* 0 - x is not x. */
  fetch(n, negated(g, op2(g, "Sub", scalar_f(g, 0), x)));
  /* Not all ones. */
  fetch(n, negated(g, op2(g, "Mul", x, konst(g, WF_FLOAT32, d3, 1, almost))));
}

static void test_arithmetic_leaves_unsafe_forms(void **state) {
  (void)state;
  net n = net_build(rt_arith, build_arith_unsafe);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "Mul"), 3);
  assert_int_equal(count_op(&w, "Sub"), 2);
  assert_int_equal(count_op(&w, "Add"), 1);
  assert_int_equal(count_op(&w, "ZerosLike"), 0);
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_arith, build_arith_unsafe);
}

/* Two x * 1 whose bypass would drop a control dependency: one Mul waits
 * for an increment, the other's ones Const for another. */
static void build_arith_gated(net *n) {
  wf_output h = variable(n);
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, x23);
  wf_node *inc1 = assign_add(n->g, h, 1);
  wf_node *inc10 = assign_add(n->g, h, 10);
  fetch(n,
        op1(n->g, "Neg", op2_after(n->g, "Mul", x, scalar_f(n->g, 1), inc1)));
  fetch(n, op1(n->g, "Neg", op2(n->g, "Mul", x, gated_scalar(n->g, 1, inc10))));
}

static void test_arithmetic_keeps_control_dependencies(void **state) {
  (void)state;
  net n = net_build(rt_arith, build_arith_gated);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "Mul"), 2);
  wf__work_deinit(&w);
  wf_session *s = wf_session_new(n.g, st);
  run_target(s, n.var_init);
  wf_tensor *out[2] = {0};
  net_run(&n, s, out);
  assert_float_equal(value_of(s, n.g, n.var), 11, 0);
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);
  wf_session_free(s);
  net_free(&n);
}

/* Transpose pairs and reshape chains on x (2, 3, 4); the inner Transpose
 * of the collapsing pair has a second consumer. */
static void build_arith_shapes(net *n) {
  float xv[24];
  for (int i = 0; i < 24; i++)
    xv[i] = (float)i - 11.5f;
  static const int64_t d234[3] = {2, 3, 4};
  static const int32_t p120[3] = {1, 2, 0}, p201[3] = {2, 0, 1},
                       p012[3] = {0, 1, 2}, s64[2] = {6, 4}, s46[2] = {4, 6},
                       s24[1] = {24};
  wf_output x = feed(n, "x", WF_FLOAT32, d234, 3, NULL, xv);
  wf_output t1 = op2(n->g, "Transpose", x, vector_i32(n->g, 3, p120));
  wf_output t2 = op2(n->g, "Transpose", t1, vector_i32(n->g, 3, p201));
  fetch(n, op1(n->g, "Relu", t2)); /* -> Relu(x) */
  fetch(n, op1(n->g, "Neg", t1));  /* keeps t1 */
  /* (1, 2, 0) twice is not the identity. */
  wf_output t3 = op2(n->g, "Transpose", t1, vector_i32(n->g, 3, p120));
  fetch(n, op1(n->g, "Exp", t3));
  /* The identity permutation alone. */
  fetch(n,
        op1(n->g, "Abs", op2(n->g, "Transpose", x, vector_i32(n->g, 3, p012))));
  /* Reshape(Reshape(x, (6, 4)), (4, 6)) -> Reshape(x, (4, 6)). */
  wf_output r1 = op2(n->g, "Reshape", x, vector_i32(n->g, 2, s64));
  fetch(n,
        op1(n->g, "Neg", op2(n->g, "Reshape", r1, vector_i32(n->g, 2, s46))));
  /* Reshape(Reshape(x, (24,)), (2, 3, 4)) -> x. */
  int32_t back[3] = {2, 3, 4};
  wf_output r2 = op2(n->g, "Reshape", x, vector_i32(n->g, 1, s24));
  fetch(n, op1(n->g, "Square",
               op2(n->g, "Reshape", r2, vector_i32(n->g, 3, back))));
}

static void test_arithmetic_collapses_transposes_and_reshapes(void **state) {
  (void)state;
  net n = net_build(rt_arith, build_arith_shapes);
  wf__work w = net_work(&n);
  /* t1 (still read by Neg) and t3's. */
  assert_int_equal(count_op(&w, "Transpose"), 2);
  /* Only Reshape(x, (4, 6)) is left. */
  assert_int_equal(count_op(&w, "Reshape"), 1);
  wf_node *r = nth_op(&w, "Reshape", 0);
  assert_string_equal(wf_node_op(wf_node_input(r, 0).node), "_Feed");
  const int fed_readers[3] = {0, 3, 5}; /* Relu, Abs, Square */
  for (int k = 0; k < 3; k++)
    assert_string_equal(
        wf_node_op(wf_node_input(w.fetches[fed_readers[k]].node, 0).node),
        "_Feed");
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_arith, build_arith_shapes);
}

/* An Identity of a fed tensor that is itself fetched keeps its fetch (a
 * signature may not fetch what it feeds). */
static void build_arith_fetched_identity(net *n) {
  wf_output x = feed(n, "x", WF_FLOAT32, d23, 2, NULL, x23);
  wf_output i = op1(n->g, "Identity", x);
  fetch(n, i);
  fetch(n, op1(n->g, "Neg", i));
}

static void test_arithmetic_never_fetches_a_fed_tensor(void **state) {
  (void)state;
  net n = net_build(rt_arith, build_arith_fetched_identity);
  wf__work w = net_work(&n);
  assert_string_equal(wf_node_op(w.fetches[0].node), "Identity");
  assert_string_equal(wf_node_op(wf_node_input(w.fetches[1].node, 0).node),
                      "_Feed");
  wf__work_deinit(&w);
  net_free(&n);
  assert_same_values(rt_arith, build_arith_fetched_identity);
}

/* ---- all passes together ------------------------------------------------- */

static void test_all_passes_give_the_same_values(void **state) {
  (void)state;
  build_fn *builds[] = {
      build_cse_equal,    build_cse_control,  build_cse_different,
      build_fold_chain,   build_fold_sizes,   build_arith_exact,
      build_arith_unsafe, build_arith_shapes, build_arith_fetched_identity};
  for (size_t i = 0; i < sizeof builds / sizeof builds[0]; i++)
    assert_same_values(rt_all, builds[i]);
}

/* Five Adam training steps on a fixed batch of 16 of one of the reference
 * models — the mlp (784 -> 256 ReLU -> 128 ReLU -> 10) or the cnn (conv 3x3
 * 16, pool, conv 3x3 32, pool, dense 10) — with softmax cross-entropy: the
 * losses, and the working graph's size for the training step. */
static void model_losses(wf_runtime *r, int cnn, double *losses,
                         int *work_nodes) {
  enum { B = 16, D = 784 };
  wf_graph *g = wf_graph_new(r);
  int64_t xd[4] = {B, D, 0, 0}, cd[4] = {B, 28, 28, 1}, yd[1] = {B};
  static float xv[B * D];
  int32_t yv[B];
  for (int i = 0; i < B * D; i++)
    xv[i] = (float)(0.5 + 0.5 * sin(i * 0.013));
  for (int i = 0; i < B; i++)
    yv[i] = (i * 7) % 10;
  net n;
  memset(&n, 0, sizeof n);
  n.g = g;
  wf_output x = feed(&n, "x", WF_FLOAT32, cnn ? cd : xd, cnn ? 4 : 2, NULL, xv);
  wf_output y = feed(&n, "y", WF_INT32, yd, 1, NULL, yv);
  wf_model *m = wf_model_new(g, 5, st);
  wf_model_begin(m, 1);
  wf_output h;
  if (cnn) {
    h = wf_layer_conv2d(m, x, 16, 3, 3, 1, "SAME", WF_ACT_RELU, st);
    h = wf_layer_max_pool(m, h, 2, 2, "VALID", st);
    h = wf_layer_conv2d(m, h, 32, 3, 3, 1, "SAME", WF_ACT_RELU, st);
    h = wf_layer_max_pool(m, h, 2, 2, "VALID", st);
    h = wf_layer_flatten(m, h, st);
  } else {
    h = wf_layer_dense(m, x, 256, WF_ACT_RELU, st);
    h = wf_layer_dense(m, h, 128, WF_ACT_RELU, st);
  }
  wf_output logits = wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
  wf_output loss = wf_loss_sparse_softmax_cross_entropy(m, logits, y, st);
  if (!loss.node)
    fail_msg("%s: %s", cnn ? "cnn" : "mlp", wf_status_message(st));
  wf_optimizer o = wf_optimizer_defaults(WF_OPT_ADAM);
  wf_node *step = wf_model_minimize(m, loss, &o, st);
  if (!step)
    fail_msg("minimize: %s", wf_status_message(st));
  fetch(&n, loss);
  n.targets[n.ntargets++] = step;
  wf__work w = net_work(&n);
  *work_nodes = wf_graph_num_nodes(w.g);
  wf__work_deinit(&w);

  wf_session *s = wf_session_new(g, st);
  wf_node *init = wf_model_init_op(m, st);
  assert_non_null(init);
  run_target(s, init);
  for (int k = 0; k < 5; k++) {
    wf_tensor *lv = NULL;
    net_run(&n, s, &lv);
    losses[k] = fetched_float(lv, 0);
    wf_tensor_release(lv);
  }
  wf_session_free(s);
  wf_model_free(m);
  for (int i = 0; i < n.nfeeds; i++)
    wf_tensor_release(n.values[i]);
  wf_graph_free(g);
}

static void test_mlp_trains_the_same_with_all_passes_on_and_off(void **state) {
  (void)state;
  double off[5], on[5];
  int nodes_off, nodes_on;
  model_losses(rt_none, 0, off, &nodes_off);
  model_losses(rt_all, 0, on, &nodes_on);
  for (int k = 0; k < 5; k++)
    assert_float_equal(on[k], off[k], 1e-5 * fabs(off[k]) + 1e-6);
  assert_true(off[4] < off[0]);
  /* The passes found something to do in a real training step. */
  assert_true(nodes_on < nodes_off);
}

static void test_cnn_trains_the_same_with_all_passes_on_and_off(void **state) {
  (void)state;
  double off[5], on[5];
  int nodes_off, nodes_on;
  model_losses(rt_none, 1, off, &nodes_off);
  model_losses(rt_all, 1, on, &nodes_on);
  for (int k = 0; k < 5; k++)
    assert_float_equal(on[k], off[k], 1e-5 * fabs(off[k]) + 1e-6);
  assert_true(off[4] < off[0]);
  assert_true(nodes_on < nodes_off);
}

/* pass_num_consumers counts the slots reading one output, each consumer
 * once however many slots it reads the node with, the same way whether the
 * node has a few consumers (compared in turn) or many (sorted first). */
static void test_pass_num_consumers_counts_slots_of_one_output(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt_none);
  assert_non_null(g);
  float four[4] = {1, 2, 3, 4};
  int64_t d4[1] = {4};
  wf_node_desc *d = wf_node_desc_new(g, "Split", NULL);
  wf_node_desc_add_input(d, konst(g, WF_FLOAT32, d4, 1, four));
  wf_node_desc_set_attr_int(d, "num_split", 2);
  wf_node *split = finish(d);
  wf_output s0 = {split, 0}, s1 = {split, 1}, one = scalar_f(g, 1);
  for (int i = 0; i < 40; i++)
    op2(g, "Add", s0, s0);
  for (int i = 0; i < 5; i++)
    op2(g, "Add", s0, s1);
  for (int i = 0; i < 3; i++)
    op2(g, "Mul", s1, one);
  wf_output y = op2(g, "Mul", one, one);
  for (int i = 0; i < 4; i++)
    op2(g, "Add", y, y);
  assert_true(split->num_data_consumers > 32); /* the sorted way */
  assert_int_equal(wf__pass_num_consumers(NULL, s0), 40 * 2 + 5);
  assert_int_equal(wf__pass_num_consumers(NULL, s1), 5 + 3);
  assert_true(one.node->num_data_consumers <= 32); /* the way in turn */
  assert_int_equal(wf__pass_num_consumers(NULL, one), 3 + 2);
  assert_int_equal(wf__pass_num_consumers(NULL, y), 4 * 2);
  assert_int_equal(wf__pass_num_consumers(NULL, (wf_output){NULL, 0}), 0);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pass_num_consumers_counts_slots_of_one_output),
      cmocka_unit_test(
          test_cse_merges_equal_nodes_and_swapped_commutative_inputs),
      cmocka_unit_test(test_cse_survivor_takes_over_control_consumers),
      cmocka_unit_test(test_cse_keeps_nodes_that_differ),
      cmocka_unit_test(test_cse_never_merges_stateful_or_random_nodes),
      cmocka_unit_test(test_constant_folding_collapses_constant_subgraphs),
      cmocka_unit_test(test_constant_folding_respects_the_size_cap),
      cmocka_unit_test(test_constant_folding_keeps_control_dependencies),
      cmocka_unit_test(test_constant_folding_skips_random_and_stateful_nodes),
      cmocka_unit_test(test_constant_folding_leaves_failures_to_the_step),
      cmocka_unit_test(test_arithmetic_bypasses_identity_operations),
      cmocka_unit_test(test_arithmetic_leaves_unsafe_forms),
      cmocka_unit_test(test_arithmetic_keeps_work_on_its_device),
      cmocka_unit_test(test_arithmetic_keeps_control_dependencies),
      cmocka_unit_test(test_arithmetic_collapses_transposes_and_reshapes),
      cmocka_unit_test(test_arithmetic_never_fetches_a_fed_tensor),
      cmocka_unit_test(test_all_passes_give_the_same_values),
      cmocka_unit_test(test_mlp_trains_the_same_with_all_passes_on_and_off),
      cmocka_unit_test(test_cnn_trains_the_same_with_all_passes_on_and_off),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
