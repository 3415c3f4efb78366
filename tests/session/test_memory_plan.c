/* tests/session/test_memory_plan.c — memory planning (core/compile/memplan.c) seen
 * from sessions: a training loop of the mlp gives the same bits with
 * [passes] memory_plan on and off; tensors that escape a step (a fetch, a
 * planned output forwarded to a fetch, a variable assigned from a planned
 * output) keep their values while later steps run; concurrent steps on one
 * executor never share an arena; once warm, a step allocates nothing for
 * its planned outputs; the run metadata's peak bytes of a chain of known
 * sizes are what the plan says; in-place outputs follow their rules: a
 * chain of WF_KERNEL_IN_PLACE kernels runs in one buffer, and nothing
 * another can still read (a second reader, a fetch, a variable's value, a
 * constant) is written over. Constants are bound to their readers' slots
 * once per step state, and stay bound through failed steps.
 * Graphs fed with an unknown batch dimension learn plans from the shapes
 * their steps allocate: the same bits, a steady state that allocates
 * nothing for planned outputs, another batch size served by another plan
 * or allocated normally, and never more plans than the cache holds. Uses
 * the built-in plugins of the build tree. Counts, never times. */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "base/alloc.h"
#include "exec/executor.h"
#include "graph/graph_internal.h"
#include "exec/kernel.h"
#include "compile/memplan.h"
#include "compile/prune.h"
#include "graph/tensor_internal.h"

static wf_status *st;

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  wf_status_free(st);
  return 0;
}

/* Executor threads of the runtimes made next (0: the runtime's own split;
 * more than one gives sessions a pool, and plans that share buffers only
 * along dependencies). */
static int inter_op;

/* A runtime with the build tree's plugins, memory planning on or off. */
static wf_runtime *runtime(int plan) {
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  OK(wf_config_set(cfg, "plugins", "deny", "device-cuda", st));
  OK(wf_config_set(cfg, "passes", "memory_plan", plan ? "true" : "false",
                   st));
  if (inter_op > 0) {
    char buf[16];
    snprintf(buf, sizeof buf, "%d", inter_op);
    OK(wf_config_set(cfg, "threads", "inter_op", buf, st));
  }
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  return rt;
}

static wf_node *finish(wf_node_desc *d) {
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("adding a node: %s", wf_status_message(st));
  return n;
}

static wf_output placeholder(wf_graph *g, const char *name, wf_dtype dt,
                             const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return (wf_output){finish(d), 0};
}

static wf_output scalar(wf_graph *g, float v) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  assert_non_null(t);
  *(float *)wf_tensor_data(t) = v;
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_tensor_release(t);
  return (wf_output){finish(d), 0};
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

/* op(c, a) with the constant c first: the tests of where plans put
 * buffers use it so that no kernel writes its output over its input
 * (WF_KERNEL_IN_PLACE takes over input 0 only, and a constant is never
 * written); chains written in place are tested in their own section. */
static wf_output new_buffer(wf_graph *g, const char *op, float c,
                            wf_output a) {
  return op2(g, op, scalar(g, c), a);
}

/* y = relu(x * 2 + 1) * 3 - 1 (chain_ref), each step a new buffer. */
static wf_output chain5(wf_graph *g, wf_output x) {
  wf_output t = new_buffer(g, "Mul", 2.0f, x);
  t = new_buffer(g, "Add", 1.0f, t);
  t = new_buffer(g, "Maximum", 0.0f, t);
  t = new_buffer(g, "Mul", 3.0f, t);
  return new_buffer(g, "Add", -1.0f, t);
}

/* A float32 tensor of dims with value(i) = sin(0.37 i + phase). */
static wf_tensor *filled(const int64_t *dims, int rank, double phase) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, rank, st);
  assert_non_null(t);
  float *v = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    v[i] = (float)sin(0.37 * (double)i + phase);
  return t;
}

static wf__memplan_stats stats(void) {
  wf__memplan_stats s;
  wf__memplan_stats_get(&s);
  return s;
}

/* ---- the mlp, planned and not ------------------------------------------- */

enum { BATCH = 64, STEPS = 12 };

/* The batch dimension the mlp's placeholders declare (-1: unknown). */
static int64_t mlp_batch_dim = BATCH;

typedef struct mlp {
  wf_runtime *rt;
  wf_graph *g;
  wf_model *m;
  wf_session *s;
  wf_callable *step;
  wf_output x, y, logits, loss;
} mlp;

/* The mlp of DESIGN.md (784-256-128-10, ReLU, Adam) on fixed-size batches. */
static void mlp_build(mlp *n, int plan) {
  int64_t xd[2] = {mlp_batch_dim, 784}, yd[1] = {mlp_batch_dim};
  n->rt = runtime(plan);
  n->g = wf_graph_new(n->rt);
  n->x = placeholder(n->g, "x", WF_FLOAT32, xd, 2);
  n->y = placeholder(n->g, "y", WF_INT32, yd, 1);
  n->m = wf_model_new(n->g, 7, st);
  assert_non_null(n->m);
  wf_model_begin(n->m, 1);
  wf_output h = wf_layer_dense(n->m, n->x, 256, WF_ACT_RELU, st);
  h = wf_layer_dense(n->m, h, 128, WF_ACT_RELU, st);
  n->logits = wf_layer_dense(n->m, h, 10, WF_ACT_NONE, st);
  OK(n->logits.node == NULL);
  n->loss = wf_loss_sparse_softmax_cross_entropy(n->m, n->logits, n->y, st);
  OK(n->loss.node == NULL);
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  wf_node *train = wf_model_minimize(n->m, n->loss, &opt, st);
  OK(train == NULL);
  wf_node *init = wf_model_init_op(n->m, st);
  OK(init == NULL);
  n->s = wf_session_new(n->g, st);
  OK(n->s == NULL);
  OK(wf_session_run(n->s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                    st));
  wf_output feeds[2] = {n->x, n->y};
  wf_output fetches[2] = {n->logits, n->loss};
  n->step = wf_session_prepare(n->s, feeds, 2, fetches, 2, &train, 1, st);
  OK(n->step == NULL);
}

static void mlp_free(mlp *n) {
  wf_callable_free(n->step);
  wf_session_free(n->s);
  wf_model_free(n->m);
  wf_graph_free(n->g);
  wf_runtime_free(n->rt);
}

static void mlp_compare(void) {
  mlp on, off;
  mlp_build(&on, 1);
  mlp_build(&off, 0);
  int64_t xd[2] = {BATCH, 784}, yd[1] = {BATCH};
  wf_tensor *y = wf_tensor_new(WF_INT32, yd, 1, st);
  for (int i = 0; i < BATCH; i++)
    ((int32_t *)wf_tensor_data(y))[i] = (i * 7) % 10;
  wf__memplan_stats before = stats();
  for (int k = 0; k < STEPS; k++) {
    wf_tensor *x = filled(xd, 2, 0.1 * k);
    wf_tensor *feed[2] = {x, y};
    wf_tensor *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
    OK(wf_callable_run(on.step, NULL, feed, a, NULL, st));
    OK(wf_callable_run(off.step, NULL, feed, b, NULL, st));
    for (int f = 0; f < 2; f++) {
      assert_int_equal(wf_tensor_nbytes(a[f]), wf_tensor_nbytes(b[f]));
      if (memcmp(wf_tensor_data(a[f]), wf_tensor_data(b[f]),
                 wf_tensor_nbytes(a[f])) != 0)
        fail_msg("step %d: fetch %d differs with planning on and off", k, f);
      wf_tensor_release(a[f]);
      wf_tensor_release(b[f]);
    }
    wf_tensor_release(x);
  }
  wf__memplan_stats after = stats();
  /* The planned run did hand out views (the unplanned one none). */
  assert_true(after.views > before.views);
  wf_tensor_release(y);
  mlp_free(&on);
  mlp_free(&off);
}

static void test_mlp_training_is_bit_identical_planned_or_not(void **state) {
  (void)state;
  inter_op = 0;
  mlp_compare();
}

/* The same with executor threads: nodes run in parallel, and the plan may
 * only share a buffer between outputs ordered by dependencies. */
static void test_mlp_with_executor_threads_is_bit_identical(void **state) {
  (void)state;
  inter_op = 3;
  mlp_compare();
  inter_op = 0;
}

/* ---- an unknown batch dimension ------------------------------------------- */

/* One training step of on and off at batch size `batch` (inputs from k):
 * both fetches must be the same bits. */
static void mlp_step_both(mlp *on, mlp *off, int64_t batch, int k) {
  int64_t xd[2] = {batch, 784}, yd[1] = {batch};
  wf_tensor *x = filled(xd, 2, 0.1 * k);
  wf_tensor *y = wf_tensor_new(WF_INT32, yd, 1, st);
  assert_non_null(y);
  for (int64_t i = 0; i < batch; i++)
    ((int32_t *)wf_tensor_data(y))[i] = (int32_t)((i * 7 + k) % 10);
  wf_tensor *feed[2] = {x, y};
  wf_tensor *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
  OK(wf_callable_run(on->step, NULL, feed, a, NULL, st));
  OK(wf_callable_run(off->step, NULL, feed, b, NULL, st));
  for (int f = 0; f < 2; f++) {
    assert_int_equal(wf_tensor_nbytes(a[f]), wf_tensor_nbytes(b[f]));
    if (memcmp(wf_tensor_data(a[f]), wf_tensor_data(b[f]),
               wf_tensor_nbytes(a[f])) != 0)
      fail_msg("step %d (batch %d): fetch %d differs with planning on and "
               "off",
               k, (int)batch, f);
    wf_tensor_release(a[f]);
    wf_tensor_release(b[f]);
  }
  wf_tensor_release(x);
  wf_tensor_release(y);
}

/* Outputs of one mlp training step a plan must cover at least (views, or
 * written in place): the step has 18 that can be (each hidden layer's
 * product, bias and Relu fused into one node). */
#define MLP_PLANNED 16

static wf__memplan_stats stats_since(const wf__memplan_stats *s0) {
  wf__memplan_stats s1 = stats();
  s1.arenas -= s0->arenas;
  s1.views -= s0->views;
  s1.fallbacks -= s0->fallbacks;
  s1.in_place -= s0->in_place;
  s1.plans -= s0->plans;
  return s1;
}

/* The mlp fed (-1, 784) batches: a plan is learned from the first step
 * and training stays bit-identical to the unplanned run; afterwards every
 * step hands out the same views and falls back never. */
static void test_unknown_batch_mlp_is_bit_identical_planned_or_not(
    void **state) {
  (void)state;
  mlp on, off;
  mlp_batch_dim = -1;
  mlp_build(&on, 1);
  mlp_build(&off, 0);
  mlp_batch_dim = BATCH;
  wf__memplan_stats s0 = stats();
  int k = 0;
  for (; k < 3; k++)
    mlp_step_both(&on, &off, BATCH, k);
  wf__memplan_stats warm = stats_since(&s0);
  /* One plan, built after the first step (the unplanned runtime builds
   * none). */
  assert_int_equal(warm.plans, 1);
  wf__memplan_stats s1 = stats();
  mlp_step_both(&on, &off, BATCH, k++);
  wf__memplan_stats one = stats_since(&s1);
  /* Most of the step's outputs are planned now: views, or written over
   * their input in place. */
  assert_true(one.views + one.in_place >= MLP_PLANNED);
  assert_int_equal(one.fallbacks, 0);
  wf__memplan_stats s2 = stats();
  for (; k < STEPS; k++)
    mlp_step_both(&on, &off, BATCH, k);
  wf__memplan_stats rest = stats_since(&s2);
  assert_int_equal(rest.views, one.views * (STEPS - 4));
  assert_int_equal(rest.fallbacks, 0);
  assert_int_equal(rest.arenas, 0);
  assert_int_equal(rest.plans, 0);
  mlp_free(&on);
  mlp_free(&off);
}

static void test_unknown_batch_mlp_with_executor_threads_is_bit_identical(
    void **state) {
  (void)state;
  inter_op = 3;
  test_unknown_batch_mlp_is_bit_identical_planned_or_not(state);
  inter_op = 0;
}

/* Allocations of `steps` training steps of n at batch size `batch`. */
static long mlp_allocs(mlp *n, int64_t batch, int steps,
                       wf__memplan_stats *delta) {
  int64_t xd[2] = {batch, 784}, yd[1] = {batch};
  wf_tensor *x = filled(xd, 2, 0.7);
  wf_tensor *y = wf_tensor_new(WF_INT32, yd, 1, st);
  for (int64_t i = 0; i < batch; i++)
    ((int32_t *)wf_tensor_data(y))[i] = (int32_t)(i % 10);
  wf_tensor *feed[2] = {x, y}, *out[2];
  for (int k = 0; k < 4; k++) { /* warm: the plan is learned here */
    OK(wf_callable_run(n->step, NULL, feed, out, NULL, st));
    wf_tensor_release(out[0]);
    wf_tensor_release(out[1]);
  }
  wf__memplan_stats s0 = stats();
  long n0 = wf__alloc_count();
  for (int k = 0; k < steps; k++) {
    OK(wf_callable_run(n->step, NULL, feed, out, NULL, st));
    wf_tensor_release(out[0]);
    wf_tensor_release(out[1]);
  }
  long allocs = wf__alloc_count() - n0;
  *delta = stats_since(&s0);
  wf_tensor_release(x);
  wf_tensor_release(y);
  return allocs;
}

/* Once warm, a step with an unknown batch dimension allocates nothing for
 * its planned outputs: every planned output is a view, and the planned
 * run saves exactly one allocation per view and per output written in
 * place. */
static void test_unknown_batch_steady_state_allocates_nothing_for_planned(
    void **state) {
  (void)state;
  enum { N = 10 };
  mlp on, off;
  mlp_batch_dim = -1;
  mlp_build(&on, 1);
  mlp_build(&off, 0);
  mlp_batch_dim = BATCH;
  wf__memplan_stats don, doff;
  long allocs_on = mlp_allocs(&on, BATCH, N, &don);
  long allocs_off = mlp_allocs(&off, BATCH, N, &doff);
  assert_int_equal(don.arenas, 0);
  assert_int_equal(don.plans, 0);
  assert_int_equal(don.fallbacks, 0);
  assert_true(don.views + don.in_place >= MLP_PLANNED * N);
  assert_int_equal(don.views % N, 0);
  assert_int_equal(doff.views, 0);
  /* Executor threads allocate a little of their own now and then (the
   * pool's queues): exact on one thread only. */
  if (inter_op == 0)
    assert_int_equal(allocs_off - allocs_on, don.views + don.in_place);
  else
    assert_true(allocs_off - allocs_on >= (don.views + don.in_place) * 9 / 10);
  mlp_free(&on);
  mlp_free(&off);
}

/* Another batch size: its first steps run on the plan there is (outputs
 * of other shapes allocated normally), then a plan of its own; going back
 * finds the first plan again. Bit-identical all along. */
static void test_other_batch_size_uses_another_plan_or_falls_back(
    void **state) {
  (void)state;
  mlp on, off;
  mlp_batch_dim = -1;
  mlp_build(&on, 1);
  mlp_build(&off, 0);
  mlp_batch_dim = BATCH;
  wf__memplan_stats s0 = stats();
  int k = 0;
  for (int i = 0; i < 3; i++)
    mlp_step_both(&on, &off, BATCH, k++);
  assert_int_equal(stats_since(&s0).plans, 1);
  /* Batch 24, first step: no plan for it; outputs of batch-sized shapes
   * are allocated normally, and a plan is built after it. */
  wf__memplan_stats s1 = stats();
  mlp_step_both(&on, &off, 24, k++);
  assert_true(stats_since(&s1).fallbacks > 0);
  assert_int_equal(stats_since(&s1).plans, 1);
  mlp_step_both(&on, &off, 24, k++);
  assert_int_equal(stats_since(&s1).plans, 1);
  wf__memplan_stats s2 = stats();
  mlp_step_both(&on, &off, 24, k++);
  wf__memplan_stats d24 = stats_since(&s2);
  assert_int_equal(d24.fallbacks, 0);
  assert_true(d24.views + d24.in_place >= MLP_PLANNED);
  /* Back to the first batch size: its plan is still kept. */
  wf__memplan_stats s3 = stats();
  for (int i = 0; i < 3; i++)
    mlp_step_both(&on, &off, BATCH, k++);
  wf__memplan_stats d64 = stats_since(&s3);
  assert_int_equal(d64.plans, 0);
  assert_int_equal(d64.fallbacks, 0);
  /* A batch of one, seen once: a plan too while the cache has room; the
   * first batch size keeps its own. Still the same bits. */
  wf__memplan_stats s4 = stats();
  mlp_step_both(&on, &off, 1, k++);
  assert_int_equal(stats_since(&s4).plans, 1);
  wf__memplan_stats s5 = stats();
  mlp_step_both(&on, &off, BATCH, k++);
  assert_int_equal(stats_since(&s5).fallbacks, 0);
  mlp_free(&on);
  mlp_free(&off);
}

/* y = relu(x * 2 + 1) * 3 - 1 over a (-1, CLEN) placeholder, run on the
 * executor directly (the cache is checked on its partition). */
static float chain_ref(float x);

enum { CLEN2 = 512 };

static void check_chain_rows(wf__exec *ex, int64_t rows, int k) {
  int64_t d[2] = {rows, CLEN2};
  wf_tensor *in = filled(d, 2, 0.5 * k), *out = NULL;
  OK(wf__exec_run(ex, NULL, NULL, NULL, NULL, &in, &out, NULL, st));
  assert_int_equal(wf_tensor_count(out), rows * CLEN2);
  const float *xv = wf_tensor_data(in), *yv = wf_tensor_data(out);
  for (int64_t i = 0; i < rows * CLEN2; i++)
    if (yv[i] != chain_ref(xv[i]))
      fail_msg("rows %d step %d element %d: %g, want %g", (int)rows, k,
               (int)i, (double)yv[i], (double)chain_ref(xv[i]));
  wf_tensor_release(out);
  wf_tensor_release(in);
}

/* More batch sizes than the cache holds, each a few steps at a time and
 * round after round: never more than 4 plans, a plan per batch size at
 * most each time it comes back, and every value right. Each size visited
 * once after the cache filled gets no plan. */
static void test_more_batch_sizes_than_plans_stays_bounded(void **state) {
  (void)state;
  int64_t d[2] = {-1, CLEN2};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 2);
  wf_output t = chain5(g, x);
  wf__signature sig = {&x, 1, &t, 1, NULL, 0};
  wf__exec *ex = wf__exec_new(rt, g, &sig, st);
  if (!ex)
    fail_msg("executor: %s", wf_status_message(st));
  const wf__memplan *mem = ex->parts[0].mem;
  assert_non_null(mem);
  /* Nothing planned statically: every output's rows are unknown. */
  assert_int_equal(wf__memplan_num_planned(mem), 0);
  assert_int_equal(wf__memplan_num_cached(mem), 0);
  wf__memplan_stats s0 = stats();
  int k = 0;
  for (int round = 0; round < 3; round++)
    for (int64_t rows = 1; rows <= 7; rows++) {
      for (int i = 0; i < 3; i++)
        check_chain_rows(ex, rows, k++);
      assert_true(wf__memplan_num_cached(mem) <= 4);
    }
  assert_int_equal(wf__memplan_num_cached(mem), 4);
  wf__memplan_stats d0 = stats_since(&s0);
  /* Each batch size comes back after the cache forgot it: one plan per
   * visit, never one per step. */
  assert_int_equal(d0.plans, 3 * 7);
  assert_true(d0.views > 0);
  /* Once full, a size seen once builds nothing. */
  wf__memplan_stats s2 = stats();
  check_chain_rows(ex, 11, k++);
  check_chain_rows(ex, 12, k++);
  assert_int_equal(stats_since(&s2).plans, 0);
  assert_int_equal(wf__memplan_num_cached(mem), 4);
  /* Steady at one size: no plan built, no allocation for planned outputs. */
  for (int i = 0; i < 3; i++)
    check_chain_rows(ex, 5, k++);
  wf__memplan_stats s1 = stats();
  for (int i = 0; i < 5; i++)
    check_chain_rows(ex, 5, k++);
  wf__memplan_stats d1 = stats_since(&s1);
  assert_int_equal(d1.plans, 0);
  assert_int_equal(d1.fallbacks, 0);
  /* Five outputs, the fetched one not planned: four views a step. */
  assert_int_equal(d1.views, 5 * 4);
  wf__exec_release(ex);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* ---- escapes ---------------------------------------------------------------- */

enum { LEN = 1000 };

/* The length the escape tests' placeholders declare (-1: unknown, so what
 * is planned is learned from the steps). */
static int64_t escape_dim = LEN;

/* A step whose planned output a = 2x is forwarded to a fetch by a kernel
 * the planner does not expect to forward (ClipByGlobalNorm with nothing
 * to clip), and a later output c = (a + 1) * norm that the plan puts in
 * a's buffer. */
static void test_escaping_planned_output_is_never_overwritten(void **state) {
  (void)state;
  int64_t d[1] = {LEN}, pd[1] = {escape_dim};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, pd, 1);
  wf_output a = op2(g, "Mul", x, scalar(g, 2.0f));
  wf_node_desc *cd = wf_node_desc_new(g, "ClipByGlobalNorm", "clip");
  wf_node_desc_add_input_list(cd, &a, 1);
  wf_node_desc_add_input(cd, scalar(g, 1e30f));
  wf_node *clip = finish(cd);
  wf_output forwarded = {clip, 0}, norm = {clip, 1};
  wf_output b = op2(g, "Add", a, scalar(g, 1.0f));
  wf_output c = op2(g, "Mul", b, norm);
  wf_output e = op2(g, "Add", c, scalar(g, 0.5f));
  wf_session *s = wf_session_new(g, st);
  OK(s == NULL);
  wf_output fetches[2] = {forwarded, e};
  wf_callable *run = wf_session_prepare(s, &x, 1, fetches, 2, NULL, 0, st);
  OK(run == NULL);

  wf_tensor *kept[4];
  float want[4][LEN];
  wf__memplan_stats held0 = stats();
  for (int k = 0; k < 4; k++) {
    wf_tensor *in = filled(d, 1, k);
    wf_tensor *out[2];
    OK(wf_callable_run(run, NULL, &in, out, NULL, st));
    const float *xv = wf_tensor_data(in);
    double ss = 0;
    for (int i = 0; i < LEN; i++) {
      want[k][i] = xv[i] * 2.0f;
      ss += (double)want[k][i] * want[k][i];
    }
    /* Within the step: c was computed from a while a's view was held. */
    const float *ev = wf_tensor_data(out[1]);
    float nrm = (float)sqrt(ss);
    for (int i = 0; i < LEN; i++)
      assert_true(fabsf(ev[i] - ((want[k][i] + 1.0f) * nrm + 0.5f)) <=
                  1e-4f * fabsf(ev[i]) + 1e-4f);
    kept[k] = out[0];
    wf_tensor_release(out[1]);
    wf_tensor_release(in);
  }
  /* The held buffers were not handed out again: those outputs were
   * allocated instead. */
  assert_true(stats().fallbacks > held0.fallbacks);
  /* Every kept fetch still holds its own step's values. */
  for (int k = 0; k < 4; k++) {
    assert_memory_equal(wf_tensor_data(kept[k]), want[k], sizeof want[k]);
    wf_tensor_release(kept[k]);
  }
  /* Once they are let go, the planned buffers serve again. */
  wf__memplan_stats before = stats();
  wf_tensor *in = filled(d, 1, 9);
  wf_tensor *out[2];
  OK(wf_callable_run(run, NULL, &in, out, NULL, st));
  wf__memplan_stats after = stats();
  assert_true(after.views > before.views);
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);
  wf_tensor_release(in);
  wf_callable_free(run);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* A fetched output of a chain keeps its values while later steps reuse
 * every planned buffer. */
static void test_fetched_tensor_survives_later_steps(void **state) {
  (void)state;
  int64_t d[1] = {LEN}, pd[1] = {escape_dim};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, pd, 1);
  wf_output a = op2(g, "Mul", x, scalar(g, 3.0f));
  wf_output b = op2(g, "Add", a, scalar(g, 1.0f));
  wf_output c = op1(g, "Relu", b);
  wf_session *s = wf_session_new(g, st);
  wf_callable *run = wf_session_prepare(s, &x, 1, &c, 1, NULL, 0, st);
  OK(run == NULL);
  wf_tensor *first = NULL, *in = filled(d, 1, 0.5);
  OK(wf_callable_run(run, NULL, &in, &first, NULL, st));
  float want[LEN];
  memcpy(want, wf_tensor_data(first), sizeof want);
  wf_tensor_release(in);
  for (int k = 0; k < 5; k++) {
    wf_tensor *o = NULL;
    in = filled(d, 1, 10.0 + k);
    OK(wf_callable_run(run, NULL, &in, &o, NULL, st));
    wf_tensor_release(o);
    wf_tensor_release(in);
  }
  assert_memory_equal(wf_tensor_data(first), want, sizeof want);
  wf_tensor_release(first);
  wf_callable_free(run);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

static wf_node *var_handle(wf_graph *g, const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "VarHandle", "v");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return finish(d);
}

/* AssignVariable keeps the value it is given: when that is a planned
 * output, the variable must not see the buffer reused by later steps. */
static void test_variable_assigned_from_planned_output_keeps_its_value(
    void **state) {
  (void)state;
  int64_t d[1] = {LEN};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  wf_node *h = var_handle(g, d, 1);
  wf_output m = op2(g, "Mul", x, scalar(g, 3.0f));
  wf_output other = op2(g, "Add", m, scalar(g, 1.0f));
  wf_node_desc *ad = wf_node_desc_new(g, "AssignVariable", "assign");
  wf_node_desc_add_input(ad, (wf_output){h, 0});
  wf_node_desc_add_input(ad, m);
  wf_node *assign = finish(ad);
  wf_node_desc *rd = wf_node_desc_new(g, "ReadVariable", "read");
  wf_node_desc_add_input(rd, (wf_output){h, 0});
  wf_node_desc_set_attr_dtype(rd, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(rd, "shape", d, 1);
  wf_output read = {finish(rd), 0};
  /* A second chain of the same sizes that only computes. */
  wf_output p = op2(g, "Mul", x, scalar(g, 5.0f));
  wf_output q = op2(g, "Add", p, scalar(g, 2.0f));
  wf_output r = op1(g, "Relu", q);
  wf_session *s = wf_session_new(g, st);
  wf_callable *set =
      wf_session_prepare(s, &x, 1, &other, 1, &assign, 1, st);
  OK(set == NULL);
  wf_callable *compute = wf_session_prepare(s, &x, 1, &r, 1, NULL, 0, st);
  OK(compute == NULL);
  wf_callable *get = wf_session_prepare(s, NULL, 0, &read, 1, NULL, 0, st);
  OK(get == NULL);

  wf__memplan_stats before = stats();
  wf_tensor *in = filled(d, 1, 0.25), *o = NULL;
  OK(wf_callable_run(set, NULL, &in, &o, NULL, st));
  wf__memplan_stats after = stats();
  assert_true(after.views > before.views); /* m was a planned view */
  float want[LEN];
  const float *xv = wf_tensor_data(in);
  for (int i = 0; i < LEN; i++)
    want[i] = xv[i] * 3.0f;
  wf_tensor_release(o);
  wf_tensor_release(in);
  /* Later steps of both signatures write their planned buffers. */
  for (int k = 0; k < 4; k++) {
    in = filled(d, 1, 3.0 + k);
    OK(wf_callable_run(compute, NULL, &in, &o, NULL, st));
    wf_tensor_release(o);
    wf_tensor_release(in);
  }
  OK(wf_callable_run(get, NULL, NULL, &o, NULL, st));
  assert_memory_equal(wf_tensor_data(o), want, sizeof want);
  wf_tensor_release(o);
  /* And the assigning signature itself again, with other values. */
  in = filled(d, 1, 7.0);
  OK(wf_callable_run(set, NULL, &in, &o, NULL, st));
  xv = wf_tensor_data(in);
  for (int i = 0; i < LEN; i++)
    want[i] = xv[i] * 3.0f;
  wf_tensor_release(o);
  wf_tensor_release(in);
  in = filled(d, 1, 8.0);
  OK(wf_callable_run(compute, NULL, &in, &o, NULL, st));
  wf_tensor_release(o);
  wf_tensor_release(in);
  OK(wf_callable_run(get, NULL, NULL, &o, NULL, st));
  assert_memory_equal(wf_tensor_data(o), want, sizeof want);
  wf_tensor_release(o);
  wf_callable_free(set);
  wf_callable_free(compute);
  wf_callable_free(get);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* The same escapes where the plan is learned from the steps. */
static void test_escapes_with_unknown_length(void **state) {
  escape_dim = -1;
  test_escaping_planned_output_is_never_overwritten(state);
  test_fetched_tensor_survives_later_steps(state);
  escape_dim = LEN;
}

/* ---- concurrent steps ----------------------------------------------------------- */

enum { THREADS = 4, ROUNDS = 40, CLEN = 4096 };

typedef struct worker {
  wf_callable *run;
  int id;
  int bad;
  char why[160];
} worker;

/* y = relu(x * 2 + 1) * 3 - 1, elementwise, each operation rounded. */
static float chain_ref(float x) {
  volatile float t = x * 2.0f;
  t = t + 1.0f;
  t = t > 0 ? t : 0.0f;
  t = t * 3.0f;
  return t - 1.0f;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  wf_status *wst = wf_status_new();
  int64_t d[1] = {CLEN};
  for (int k = 0; k < ROUNDS && !w->bad; k++) {
    wf_tensor *in = wf_tensor_new(WF_FLOAT32, d, 1, wst), *out = NULL;
    float *xv = wf_tensor_data(in);
    for (int i = 0; i < CLEN; i++)
      xv[i] = (float)(w->id * 1000 + k) + (float)i * 0.001f;
    if (wf_callable_run(w->run, NULL, &in, &out, NULL, wst)) {
      w->bad = 1;
      snprintf(w->why, sizeof w->why, "run: %s", wf_status_message(wst));
    } else {
      const float *yv = wf_tensor_data(out);
      for (int i = 0; i < CLEN && !w->bad; i++)
        if (yv[i] != chain_ref(xv[i])) {
          w->bad = 1;
          snprintf(w->why, sizeof w->why,
                   "thread %d round %d element %d: %g, want %g", w->id, k, i,
                   (double)yv[i], (double)chain_ref(xv[i]));
        }
    }
    wf_tensor_release(out);
    wf_tensor_release(in);
  }
  wf_status_free(wst);
  return NULL;
}

/* Threads running a (-1, CLEN) chain at two batch sizes at once: step
 * states learn and switch plans while others run, and every value is
 * right. */
static void *batch_worker_main(void *arg) {
  worker *w = arg;
  wf_status *wst = wf_status_new();
  int64_t rows = w->id % 2 ? 3 : 1;
  int64_t d[2] = {rows, CLEN};
  for (int k = 0; k < ROUNDS && !w->bad; k++) {
    wf_tensor *in = wf_tensor_new(WF_FLOAT32, d, 2, wst), *out = NULL;
    float *xv = wf_tensor_data(in);
    for (int64_t i = 0; i < rows * CLEN; i++)
      xv[i] = (float)(w->id * 1000 + k) + (float)(i % CLEN) * 0.001f;
    if (wf_callable_run(w->run, NULL, &in, &out, NULL, wst)) {
      w->bad = 1;
      snprintf(w->why, sizeof w->why, "run: %s", wf_status_message(wst));
    } else if (wf_tensor_count(out) != rows * CLEN) {
      w->bad = 1;
      snprintf(w->why, sizeof w->why, "thread %d round %d: %d elements",
               w->id, k, (int)wf_tensor_count(out));
    } else {
      const float *yv = wf_tensor_data(out);
      for (int64_t i = 0; i < rows * CLEN && !w->bad; i++)
        if (yv[i] != chain_ref(xv[i])) {
          w->bad = 1;
          snprintf(w->why, sizeof w->why,
                   "thread %d round %d element %d: %g, want %g", w->id, k,
                   (int)i, (double)yv[i], (double)chain_ref(xv[i]));
        }
    }
    wf_tensor_release(out);
    wf_tensor_release(in);
  }
  wf_status_free(wst);
  return NULL;
}

static void test_concurrent_steps_of_two_batch_sizes(void **state) {
  (void)state;
  int64_t d[2] = {-1, CLEN};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 2);
  wf_output t = chain5(g, x);
  wf_session *s = wf_session_new(g, st);
  wf_callable *run = wf_session_prepare(s, &x, 1, &t, 1, NULL, 0, st);
  OK(run == NULL);
  wf__memplan_stats before = stats();
  pthread_t th[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){run, i, 0, ""};
    assert_int_equal(
        pthread_create(&th[i], NULL, batch_worker_main, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; i++)
    if (w[i].bad)
      fail_msg("%s", w[i].why);
  wf__memplan_stats after = stats();
  assert_true(after.plans > before.plans);
  assert_true(after.views > before.views);
  wf_callable_free(run);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

static void test_concurrent_steps_do_not_share_an_arena(void **state) {
  (void)state;
  int64_t d[1] = {CLEN};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  wf_output t = chain5(g, x);
  wf_session *s = wf_session_new(g, st);
  wf_callable *run = wf_session_prepare(s, &x, 1, &t, 1, NULL, 0, st);
  OK(run == NULL);
  wf__memplan_stats before = stats();
  pthread_t th[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){run, i, 0, ""};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; i++)
    if (w[i].bad)
      fail_msg("%s", w[i].why);
  wf__memplan_stats after = stats();
  assert_true(after.views > before.views);
  wf_callable_free(run);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* Two steps that overlap on one executor hold two step states, each with
 * an arena of its own (checked on the executor itself). */
static void test_overlapping_step_states_have_their_own_arenas(void **state) {
  (void)state;
  int64_t d[1] = {CLEN};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  wf_output t = new_buffer(g, "Mul", 2.0f, x);
  t = new_buffer(g, "Add", 1.0f, t);
  t = new_buffer(g, "Maximum", 0.0f, t);
  wf_session *s = wf_session_new(g, st);
  wf_callable *run = wf_session_prepare(s, &x, 1, &t, 1, NULL, 0, st);
  OK(run == NULL);
  wf__memplan_stats before = stats();
  pthread_t th[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){run, i, 0, ""};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  wf__memplan_stats after = stats();
  /* Several step states existed (steps overlapped), each allocating its
   * arena once: never more arenas than steps, never one per view. */
  long arenas = after.arenas - before.arenas;
  assert_true(arenas >= 1);
  assert_true(arenas <= THREADS * ROUNDS);
  wf_callable_free(run);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* ---- the steady state -------------------------------------------------------- */

/* x (LEN) -> a = 2x -> b = a + 1 -> c = 3b -> d2 = c - 1 -> e = relu(d2),
 * e fetched: a, b, c, d2 planned in two buffers, e allocated. */
typedef struct chain {
  wf_runtime *rt;
  wf_graph *g;
  wf_session *s;
  wf_callable *run;
} chain;

static void chain_build(chain *c, int plan) {
  int64_t d[1] = {LEN};
  c->rt = runtime(plan);
  c->g = wf_graph_new(c->rt);
  wf_output x = placeholder(c->g, "x", WF_FLOAT32, d, 1);
  wf_output t = new_buffer(c->g, "Mul", 2.0f, x);
  t = new_buffer(c->g, "Add", 1.0f, t);
  t = new_buffer(c->g, "Mul", 3.0f, t);
  t = new_buffer(c->g, "Add", -1.0f, t);
  t = new_buffer(c->g, "Maximum", 0.0f, t);
  c->s = wf_session_new(c->g, st);
  c->run = wf_session_prepare(c->s, &x, 1, &t, 1, NULL, 0, st);
  OK(c->run == NULL);
}

static void chain_free(chain *c) {
  wf_callable_free(c->run);
  wf_session_free(c->s);
  wf_graph_free(c->g);
  wf_runtime_free(c->rt);
}

/* Allocations (the host allocator's count) of `steps` warm steps. */
static long chain_allocs(chain *c, wf_tensor *in, int steps,
                         wf__memplan_stats *delta) {
  wf_tensor *out = NULL;
  for (int k = 0; k < 3; k++) { /* warm: step state, arena, kernel caches */
    OK(wf_callable_run(c->run, NULL, &in, &out, NULL, st));
    wf_tensor_release(out);
  }
  wf__memplan_stats s0 = stats();
  long n0 = wf__alloc_count();
  for (int k = 0; k < steps; k++) {
    OK(wf_callable_run(c->run, NULL, &in, &out, NULL, st));
    wf_tensor_release(out);
  }
  long n = wf__alloc_count() - n0;
  wf__memplan_stats s1 = stats();
  delta->arenas = s1.arenas - s0.arenas;
  delta->views = s1.views - s0.views;
  delta->fallbacks = s1.fallbacks - s0.fallbacks;
  delta->in_place = s1.in_place - s0.in_place;
  return n;
}

static void test_steady_state_allocates_nothing_for_planned_outputs(
    void **state) {
  (void)state;
  enum { N = 20, PLANNED = 4 };
  int64_t d[1] = {LEN};
  wf_tensor *in = filled(d, 1, 0.3);
  chain on, off;
  chain_build(&on, 1);
  chain_build(&off, 0);
  wf__memplan_stats don, doff;
  long allocs_on = chain_allocs(&on, in, N, &don);
  long allocs_off = chain_allocs(&off, in, N, &doff);
  /* Planned: every planned output a view, no arena made, no fallback. */
  assert_int_equal(don.arenas, 0);
  assert_int_equal(don.views, N * PLANNED);
  assert_int_equal(don.fallbacks, 0);
  assert_int_equal(doff.views, 0);
  /* The difference is exactly the planned outputs' allocations. */
  assert_int_equal(allocs_off - allocs_on, (long)N * PLANNED);
  /* What is left per step is the fetched output. */
  assert_int_equal(allocs_on, (long)N);
  wf_tensor_release(in);
  chain_free(&on);
  chain_free(&off);
}

/* ---- peak bytes -------------------------------------------------------------- */

static void test_peak_bytes_of_a_chain_of_known_sizes(void **state) {
  (void)state;
  int64_t d[1] = {LEN};
  const int64_t bytes = LEN * 4, aligned = (LEN * 4 + 63) / 64 * 64;
  wf_tensor *in = filled(d, 1, 0.3);
  for (int plan = 0; plan <= 1; plan++) {
    chain c;
    chain_build(&c, plan);
    /* Metadata holds its executor: freed before the runtime. */
    wf_run_metadata *md = wf_run_metadata_new();
    wf_tensor *out = NULL;
    for (int k = 0; k < 2; k++) {
      OK(wf_callable_run(c.run, NULL, &in, &out, md, st));
      wf_tensor_release(out);

      if (plan) {
        /* Two buffers take a..d2 (a step's input and output never
         * share); e, fetched, is allocated beside them. */
        assert_int_equal(wf_run_metadata_peak_bytes(md, "cpu:0"),
                         2 * aligned + bytes);
      } else {
        /* One operation's input and output alive at once, at most. */
        assert_int_equal(wf_run_metadata_peak_bytes(md, "cpu:0"),
                         2 * bytes);
      }
      assert_int_equal(wf_run_metadata_peak_bytes(md, NULL),
                       wf_run_metadata_peak_bytes(md, "cpu:0"));
      assert_int_equal(wf_run_metadata_peak_bytes(md, "cuda:7"), 0);
    }
    wf_run_metadata_free(md);
    chain_free(&c);
  }
  wf_tensor_release(in);
}

/* ---- in place ----------------------------------------------------------------- */

/* The executor of the signature feeding x and fetching out. */
static wf__exec *exec_for(wf_runtime *rt, wf_graph *g, wf_output x,
                          wf_output out) {
  wf__signature sig = {&x, 1, &out, 1, NULL, 0};
  wf__exec *ex = wf__exec_new(rt, g, &sig, st);
  if (!ex)
    fail_msg("executor: %s", wf_status_message(st));
  assert_int_equal(ex->num_parts, 1);
  return ex;
}

/* The plan's node for the graph's node n (matched by name: the executor
 * runs a working copy of the graph). */
static const wf__xnode *find_xnode(const wf__part *pt, const wf_node *n) {
  for (int i = 0; i < pt->num_nodes; i++)
    if (strcmp(pt->nodes[i].node->name, wf_node_name(n)) == 0)
      return &pt->nodes[i];
  fail_msg("node '%s' is not in the plan", wf_node_name(n));
  return NULL;
}

/* The rules of wf__kernel_output_forward, on a context as the executor
 * makes it: an input is taken over only when its slot holds the only
 * reference, it is not fed, its buffer is the core's, and dtype and shape
 * match; otherwise a new output is made. */
static void test_in_place_rules(void **state) {
  (void)state;
  int64_t d[1] = {16}, d2[1] = {8};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  wf_output y = op1(g, "Relu", x);
  wf_output z = op1(g, "Relu", y);
  wf__exec *ex = exec_for(rt, g, x, z);
  const wf__part *pt = &ex->parts[0];
  /* The second Relu: its input slot is not fed; the first's is. */
  const wf__xnode *second = find_xnode(pt, z.node);
  const wf__xnode *first = find_xnode(pt, y.node);
  assert_non_null(second);
  assert_non_null(first);
  wf__arena *arena = wf__arena_new(pt->mem);
  assert_non_null(arena);

  wf_tensor *slot[1], *outs[1] = {NULL};
  struct wf_kernel_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.node = second->node;
  ctx.kernel = second->kernel;
  ctx.inputs = (const wf_tensor *const *)slot;
  ctx.outputs = outs;
  ctx.num_inputs = 1;
  ctx.num_outputs = 1;
  ctx.arena = arena;
  ctx.out_base = second->output_base;
  ctx.in_base = second->input_base;
  int32_t cand = 0;
  wf_shape sh;
  wf_shape_init(&sh, d, 1);

  /* Only reference, core buffer, same shape: taken over. */
  slot[0] = wf_tensor_new(WF_FLOAT32, d, 1, st);
  wf_tensor *o = wf__kernel_output_forward(&ctx, 0, &cand, 1, &sh, st);
  assert_ptr_equal(o, slot[0]);
  wf_tensor_release(outs[0]);
  outs[0] = NULL;
  /* Another reader holds it: a new output. */
  wf_tensor *other = wf_tensor_retain(slot[0]);
  o = wf__kernel_output_forward(&ctx, 0, &cand, 1, &sh, st);
  assert_non_null(o);
  assert_ptr_not_equal(o, slot[0]);
  wf_tensor_release(outs[0]);
  outs[0] = NULL;
  wf_tensor_release(other);
  wf_tensor_release(slot[0]);
  /* A wrapped buffer (the caller's, or a view of a parent): never. */
  float mem[16];
  slot[0] = wf_tensor_wrap(WF_FLOAT32, d, 1, mem, sizeof mem, NULL, NULL, st);
  o = wf__kernel_output_forward(&ctx, 0, &cand, 1, &sh, st);
  assert_ptr_not_equal(o, slot[0]);
  wf_tensor_release(outs[0]);
  outs[0] = NULL;
  wf_tensor_release(slot[0]);
  /* Another shape: never. */
  slot[0] = wf_tensor_new(WF_FLOAT32, d2, 1, st);
  o = wf__kernel_output_forward(&ctx, 0, &cand, 1, &sh, st);
  assert_ptr_not_equal(o, slot[0]);
  wf_tensor_release(outs[0]);
  outs[0] = NULL;
  wf_tensor_release(slot[0]);
  /* A fed slot: never, even as the only reference. */
  ctx.node = first->node;
  ctx.kernel = first->kernel;
  ctx.out_base = first->output_base;
  ctx.in_base = first->input_base;
  slot[0] = wf_tensor_new(WF_FLOAT32, d, 1, st);
  o = wf__kernel_output_forward(&ctx, 0, &cand, 1, &sh, st);
  assert_ptr_not_equal(o, slot[0]);
  wf_tensor_release(outs[0]);
  outs[0] = NULL;
  wf_tensor_release(slot[0]);

  wf__arena_release(arena);
  wf__exec_release(ex);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* With planning off nothing is taken over: the baseline stays plain. */
static void test_in_place_is_off_without_planning(void **state) {
  (void)state;
  int64_t d[1] = {16};
  wf_runtime *rt = runtime(0);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  wf_output y = op1(g, "Relu", x);
  wf_output z = op1(g, "Relu", y);
  wf__exec *ex = exec_for(rt, g, x, z);
  const wf__part *pt = &ex->parts[0];
  assert_null(pt->mem);
  const wf__xnode *second = find_xnode(pt, z.node);
  wf__arena *arena = wf__arena_new(NULL);
  wf_tensor *slot[1], *outs[1] = {NULL};
  struct wf_kernel_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.node = second->node;
  ctx.kernel = second->kernel;
  ctx.inputs = (const wf_tensor *const *)slot;
  ctx.outputs = outs;
  ctx.num_inputs = ctx.num_outputs = 1;
  ctx.arena = arena;
  ctx.out_base = second->output_base;
  ctx.in_base = second->input_base;
  int32_t cand = 0;
  wf_shape sh;
  wf_shape_init(&sh, d, 1);
  slot[0] = wf_tensor_new(WF_FLOAT32, d, 1, st);
  wf_tensor *o = wf__kernel_output_forward(&ctx, 0, &cand, 1, &sh, st);
  assert_ptr_not_equal(o, slot[0]);
  wf_tensor_release(outs[0]);
  wf_tensor_release(slot[0]);
  wf__arena_release(arena);
  wf__exec_release(ex);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* y = relu(2x + 1) * 3 as the kernels compute it. */
static float in_place_ref(float x) {
  volatile float t = x * 2.0f;
  t = t + 1.0f;
  t = t > 0 ? t : 0.0f;
  return t * 3.0f;
}

/* x -> a = 2x -> b = a + 1 -> c = relu(b) -> y = 3c, y fetched: a is made
 * (x is fed, never written), and b, c and y are written over it in place
 * (WF_KERNEL_IN_PLACE: Add, Relu and Mul on the CPU), so a step makes one
 * buffer, the one it hands back; the fed tensor keeps its values. */
static void test_in_place_chain_uses_one_buffer(void **state) {
  (void)state;
  enum { N = 6 };
  int64_t d[1] = {LEN};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  wf_output t = op2(g, "Mul", x, scalar(g, 2.0f));
  t = op2(g, "Add", t, scalar(g, 1.0f));
  t = op1(g, "Relu", t);
  t = op2(g, "Mul", t, scalar(g, 3.0f));
  wf_session *s = wf_session_new(g, st);
  wf_callable *run = wf_session_prepare(s, &x, 1, &t, 1, NULL, 0, st);
  OK(run == NULL);
  wf_tensor *in[N], *out = NULL;
  float x0[LEN];
  for (int k = 0; k < N; k++)
    in[k] = filled(d, 1, 0.1 * k);
  memcpy(x0, wf_tensor_data(in[0]), sizeof x0);
  for (int k = 0; k < 3; k++) { /* warm */
    OK(wf_callable_run(run, NULL, &in[0], &out, NULL, st));
    wf_tensor_release(out);
  }
  wf__memplan_stats s0 = stats();
  long n0 = wf__alloc_count();
  for (int k = 0; k < N; k++) {
    OK(wf_callable_run(run, NULL, &in[k], &out, NULL, st));
    const float *xv = wf_tensor_data(in[k]), *yv = wf_tensor_data(out);
    for (int i = 0; i < LEN; i++)
      if (yv[i] != in_place_ref(xv[i]))
        fail_msg("step %d element %d: %g, want %g", k, i, (double)yv[i],
                 (double)in_place_ref(xv[i]));
    wf_tensor_release(out);
  }
  long allocs = wf__alloc_count() - n0;
  wf__memplan_stats d1 = stats_since(&s0);
  assert_int_equal(d1.in_place, 3 * N);
  assert_int_equal(d1.views, 0);
  assert_int_equal(d1.fallbacks, 0);
  assert_int_equal(allocs, N);
  assert_memory_equal(wf_tensor_data(in[0]), x0, sizeof x0);
  for (int k = 0; k < N; k++)
    wf_tensor_release(in[k]);
  wf_callable_free(run);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* Nothing that another can still read is written over: a value with a
 * second reader, a fetched value, a variable's value and a constant keep
 * their bytes, and the results are right. */
static void test_in_place_spares_values_read_elsewhere(void **state) {
  (void)state;
  int64_t d[1] = {LEN};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  /* a has two readers: b = a + 1 and c = a * b. */
  wf_output a = op2(g, "Mul", x, scalar(g, 2.0f));
  wf_output b = op2(g, "Add", a, scalar(g, 1.0f));
  wf_output c = op2(g, "Mul", a, b);
  /* e is fetched beside f = e + 1. */
  wf_output e = op2(g, "Mul", x, scalar(g, 4.0f));
  wf_output f = op2(g, "Add", e, scalar(g, 1.0f));
  /* A variable's value read into v + 1, and a constant's into k + 1. */
  wf_node *h = var_handle(g, d, 1);
  wf_node_desc *ad = wf_node_desc_new(g, "AssignVariable", "assign");
  wf_node_desc_add_input(ad, (wf_output){h, 0});
  wf_node_desc_add_input(ad, x);
  wf_node *assign = finish(ad);
  wf_node_desc *rd = wf_node_desc_new(g, "ReadVariable", "read");
  wf_node_desc_add_input(rd, (wf_output){h, 0});
  wf_node_desc_set_attr_dtype(rd, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(rd, "shape", d, 1);
  wf_output read = {finish(rd), 0};
  wf_output v1 = op2(g, "Add", read, scalar(g, 1.0f));
  wf_tensor *kt = filled(d, 1, 2.0);
  float kv[LEN];
  memcpy(kv, wf_tensor_data(kt), sizeof kv);
  wf_node_desc *kd = wf_node_desc_new(g, "Const", "k");
  wf_node_desc_set_attr_tensor(kd, "value", kt);
  wf_node_desc_set_attr_dtype(kd, "dtype", WF_FLOAT32);
  wf_tensor_release(kt);
  wf_output k1 = op2(g, "Add", (wf_output){finish(kd), 0}, scalar(g, 1.0f));
  wf_session *s = wf_session_new(g, st);
  wf_callable *set = wf_session_prepare(s, &x, 1, NULL, 0, &assign, 1, st);
  OK(set == NULL);
  wf_output fetches[3] = {c, e, f};
  wf_callable *run_x = wf_session_prepare(s, &x, 1, fetches, 3, NULL, 0, st);
  OK(run_x == NULL);
  wf_tensor *vin = filled(d, 1, 5.0), *none = NULL;
  OK(wf_callable_run(set, NULL, &vin, &none, NULL, st));
  const float *vv = wf_tensor_data(vin);
  for (int step = 0; step < 3; step++) {
    wf_tensor *in = filled(d, 1, 0.3 * step), *out[3];
    wf__memplan_stats s0 = stats();
    OK(wf_callable_run(run_x, NULL, &in, out, NULL, st));
    assert_int_equal(stats_since(&s0).in_place, 0);
    const float *xv = wf_tensor_data(in);
    for (int i = 0; i < LEN; i++) {
      float av = xv[i] * 2.0f, ev = xv[i] * 4.0f;
      assert_true(((const float *)wf_tensor_data(out[0]))[i] ==
                  av * (av + 1.0f));
      assert_true(((const float *)wf_tensor_data(out[1]))[i] == ev);
      assert_true(((const float *)wf_tensor_data(out[2]))[i] == ev + 1.0f);
    }
    for (int k = 0; k < 3; k++)
      wf_tensor_release(out[k]);
    wf_tensor_release(in);
  }
  /* v + 1 and k + 1 read values no step may write: the same each time. */
  wf_output vk[2] = {v1, k1};
  wf_callable *run = wf_session_prepare(s, NULL, 0, vk, 2, NULL, 0, st);
  OK(run == NULL);
  for (int step = 0; step < 3; step++) {
    wf_tensor *out[2];
    OK(wf_callable_run(run, NULL, NULL, out, NULL, st));
    for (int i = 0; i < LEN; i++) {
      assert_true(((const float *)wf_tensor_data(out[0]))[i] ==
                  vv[i] + 1.0f);
      assert_true(((const float *)wf_tensor_data(out[1]))[i] ==
                  kv[i] + 1.0f);
    }
    wf_tensor_release(out[0]);
    wf_tensor_release(out[1]);
  }
  wf_tensor_release(vin);
  wf_callable_free(set);
  wf_callable_free(run);
  wf_callable_free(run_x);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* ---- constants bound once ------------------------------------------------ */

/* A Const node of dims holding filled(dims, phase), its values in *vals. */
static wf_output const_of(wf_graph *g, const char *name, const int64_t *dims,
                          int rank, double phase, float *vals) {
  wf_tensor *t = filled(dims, rank, phase);
  memcpy(vals, wf_tensor_data(t), (size_t)wf_tensor_count(t) * sizeof *vals);
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_tensor_release(t);
  return (wf_output){finish(d), 0};
}

/* The readers of a constant read its value from slots bound when the step
 * state is made (wf__part.bound), wait for no edge (y = x + k has only a
 * feed to wait for: a root), and never write it even as input 0
 * (z = k * y); the constant itself still runs when it is fetched. Values
 * stay right over steps, planned or not. */
static void test_constants_are_bound_once(void **state) {
  (void)state;
  int64_t d[1] = {LEN};
  static float kv[LEN];
  for (int plan = 0; plan <= 1; plan++) {
    wf_runtime *rt = runtime(plan);
    wf_graph *g = wf_graph_new(rt);
    wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
    wf_output k = const_of(g, "k", d, 1, 1.5, kv);
    wf_output y = op2(g, "Add", x, k);
    wf_output z = op2(g, "Mul", k, y);
    wf_output w = op2(g, "Sub", z, k);
    wf__signature sig = {&x, 1, (wf_output[]){w, k}, 2, NULL, 0};
    wf__exec *ex = wf__exec_new(rt, g, &sig, st);
    if (!ex)
      fail_msg("executor: %s", wf_status_message(st));
    const wf__part *pt = &ex->parts[0];
    const wf__xnode *xy = find_xnode(pt, y.node), *xz = find_xnode(pt, z.node),
                    *xw = find_xnode(pt, w.node), *xk = find_xnode(pt, k.node);
    assert_non_null(pt->bound);
    assert_int_equal(xy->bound_inputs, 2);
    assert_int_equal(xy->pending, 0);
    assert_int_equal(xz->bound_inputs, 1);
    assert_int_equal(xz->pending, 1);
    assert_int_equal(xw->bound_inputs, 2);
    const wf_tensor *value = pt->bound[xy->input_base + 1];
    assert_non_null(value);
    assert_ptr_equal(pt->bound[xz->input_base], value);
    assert_null(pt->bound[xy->input_base]);
    /* k is fetched: its node keeps that one edge. */
    assert_int_equal(xk->edge_end - xk->edge_begin, 1);
    for (int step = 0; step < 4; step++) {
      wf_tensor *in = filled(d, 1, 0.2 * step), *out[2];
      OK(wf__exec_run(ex, NULL, NULL, NULL, NULL, &in, out, NULL, st));
      const float *xv = wf_tensor_data(in), *wv = wf_tensor_data(out[0]);
      for (int i = 0; i < LEN; i++) {
        volatile float yi = xv[i] + kv[i], zi = kv[i] * yi;
        if (wv[i] != zi - kv[i])
          fail_msg("plan %d step %d element %d: %g, want %g", plan, step, i,
                   (double)wv[i], (double)(zi - kv[i]));
      }
      assert_memory_equal(wf_tensor_data(out[1]), kv, sizeof kv);
      assert_memory_equal(wf_tensor_data(value), kv, sizeof kv);
      wf_tensor_release(out[0]);
      wf_tensor_release(out[1]);
      wf_tensor_release(in);
    }
    wf__exec_release(ex);
    wf_graph_free(g);
    wf_runtime_free(rt);
  }
}

/* A step that fails after its constants were bound (Reshape of 10 values
 * to (4, -1)) leaves them bound: the next steps read them again, and the
 * failure names the node. */
static void test_failed_step_keeps_bound_constants(void **state) {
  (void)state;
  int64_t d[1] = {-1};
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  int64_t sv[2] = {4, -1}, sd[1] = {2};
  wf_tensor *shape = wf_tensor_new(WF_INT64, sd, 1, st);
  memcpy(wf_tensor_data(shape), sv, sizeof sv);
  wf_node_desc *cd = wf_node_desc_new(g, "Const", "shape");
  wf_node_desc_set_attr_tensor(cd, "value", shape);
  wf_node_desc_set_attr_dtype(cd, "dtype", WF_INT64);
  wf_tensor_release(shape);
  wf_output sh = {finish(cd), 0};
  wf_node_desc *rd = wf_node_desc_new(g, "Reshape", "reshape");
  wf_node_desc_add_input(rd, x);
  wf_node_desc_add_input(rd, sh);
  wf_output r = {finish(rd), 0};
  wf_session *s = wf_session_new(g, st);
  wf_callable *run = wf_session_prepare(s, &x, 1, &r, 1, NULL, 0, st);
  OK(run == NULL);
  for (int round = 0; round < 3; round++) {
    int64_t bad[1] = {10}, good[1] = {12};
    wf_tensor *in = filled(bad, 1, round), *out = NULL;
    assert_int_not_equal(wf_callable_run(run, NULL, &in, &out, NULL, st), 0);
    assert_non_null(strstr(wf_status_message(st), "reshape"));
    assert_null(out);
    wf_tensor_release(in);
    in = filled(good, 1, round);
    OK(wf_callable_run(run, NULL, &in, &out, NULL, st));
    assert_int_equal(wf_tensor_rank(out), 2);
    assert_int_equal(wf_tensor_dim(out, 0), 4);
    assert_int_equal(wf_tensor_dim(out, 1), 3);
    assert_memory_equal(wf_tensor_data(out), wf_tensor_data(in),
                        12 * sizeof(float));
    wf_tensor_release(out);
    wf_tensor_release(in);
  }
  wf_callable_free(run);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* Not bound: a constant that waits for a control input (its readers must
 * wait too), and a constant the signature feeds (the fed value wins). */
static void test_constants_not_bound_where_they_must_run(void **state) {
  (void)state;
  int64_t d[1] = {LEN};
  static float kv[LEN];
  wf_runtime *rt = runtime(1);
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  wf_node *first = finish(wf_node_desc_new(g, "NoOp", "first"));
  wf_tensor *t = filled(d, 1, 0.5);
  memcpy(kv, wf_tensor_data(t), sizeof kv);
  wf_node_desc *cd = wf_node_desc_new(g, "Const", "late");
  wf_node_desc_set_attr_tensor(cd, "value", t);
  wf_node_desc_set_attr_dtype(cd, "dtype", WF_FLOAT32);
  wf_node_desc_add_control_input(cd, first);
  wf_tensor_release(t);
  wf_output late = {finish(cd), 0};
  wf_output y = op2(g, "Add", x, late);
  wf__exec *ex = exec_for(rt, g, x, y);
  const wf__xnode *xy = find_xnode(&ex->parts[0], y.node);
  assert_int_equal(xy->bound_inputs, 0);
  assert_int_equal(xy->pending, 1);
  wf__exec_release(ex);

  float kv2[LEN];
  wf_output k = const_of(g, "k", d, 1, 2.5, kv2);
  wf_output z = op2(g, "Mul", x, k);
  wf_output feeds[2] = {x, k};
  wf__signature sig = {feeds, 2, &z, 1, NULL, 0};
  ex = wf__exec_new(rt, g, &sig, st);
  if (!ex)
    fail_msg("executor: %s", wf_status_message(st));
  assert_int_equal(find_xnode(&ex->parts[0], z.node)->bound_inputs, 0);
  wf_tensor *in[2] = {filled(d, 1, 0.1), filled(d, 1, 0.9)}, *out = NULL;
  OK(wf__exec_run(ex, NULL, NULL, NULL, NULL, in, &out, NULL, st));
  const float *xv = wf_tensor_data(in[0]), *kf = wf_tensor_data(in[1]);
  for (int i = 0; i < LEN; i++)
    assert_true(((const float *)wf_tensor_data(out))[i] == xv[i] * kf[i]);
  wf_tensor_release(out);
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf__exec_release(ex);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* A bad [passes] memory_plan value is refused naming the key. */
static void test_memory_plan_key_is_checked(void **state) {
  (void)state;
  wf_config *cfg = wf_config_new();
  assert_int_not_equal(wf_config_set(cfg, "passes", "memory_plan", "maybe", st),
                       0);
  assert_non_null(strstr(wf_status_message(st), "memory_plan"));
  wf_config_free(cfg);
}

static int setup_threads(void **state) {
  inter_op = 3;
  return setup(state);
}

int main(void) {
  /* No cache of freed blocks (core/graph/tensor.c): every tensor a step makes
   * is one allocation of the host allocator, so the counts of planned and
   * unplanned runs compare exactly. */
  setenv("WEFT_TENSOR_CACHE_MB", "0", 1);
  wf__memplan_stats_enable();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp_training_is_bit_identical_planned_or_not),
      cmocka_unit_test(test_mlp_with_executor_threads_is_bit_identical),
      cmocka_unit_test(test_unknown_batch_mlp_is_bit_identical_planned_or_not),
      cmocka_unit_test(
          test_unknown_batch_mlp_with_executor_threads_is_bit_identical),
      cmocka_unit_test(
          test_unknown_batch_steady_state_allocates_nothing_for_planned),
      cmocka_unit_test(test_other_batch_size_uses_another_plan_or_falls_back),
      cmocka_unit_test(test_more_batch_sizes_than_plans_stays_bounded),
      cmocka_unit_test(test_escaping_planned_output_is_never_overwritten),
      cmocka_unit_test(test_fetched_tensor_survives_later_steps),
      cmocka_unit_test(
          test_variable_assigned_from_planned_output_keeps_its_value),
      cmocka_unit_test(test_escapes_with_unknown_length),
      cmocka_unit_test(test_concurrent_steps_do_not_share_an_arena),
      cmocka_unit_test(test_concurrent_steps_of_two_batch_sizes),
      cmocka_unit_test(test_overlapping_step_states_have_their_own_arenas),
      cmocka_unit_test(test_steady_state_allocates_nothing_for_planned_outputs),
      cmocka_unit_test(test_peak_bytes_of_a_chain_of_known_sizes),
      cmocka_unit_test(test_in_place_rules),
      cmocka_unit_test(test_in_place_is_off_without_planning),
      cmocka_unit_test(test_in_place_chain_uses_one_buffer),
      cmocka_unit_test(test_in_place_spares_values_read_elsewhere),
      cmocka_unit_test(test_constants_are_bound_once),
      cmocka_unit_test(test_failed_step_keeps_bound_constants),
      cmocka_unit_test(test_constants_not_bound_where_they_must_run),
      cmocka_unit_test(test_memory_plan_key_is_checked),
  };
  /* The escapes, concurrency, counts and peaks again with executor
   * threads (plans that share buffers along dependencies only). */
  const struct CMUnitTest threaded[] = {
      cmocka_unit_test(test_escaping_planned_output_is_never_overwritten),
      cmocka_unit_test(test_fetched_tensor_survives_later_steps),
      cmocka_unit_test(
          test_variable_assigned_from_planned_output_keeps_its_value),
      cmocka_unit_test(test_escapes_with_unknown_length),
      cmocka_unit_test(test_concurrent_steps_do_not_share_an_arena),
      cmocka_unit_test(test_concurrent_steps_of_two_batch_sizes),
      cmocka_unit_test(test_steady_state_allocates_nothing_for_planned_outputs),
      cmocka_unit_test(test_peak_bytes_of_a_chain_of_known_sizes),
      cmocka_unit_test(
          test_unknown_batch_steady_state_allocates_nothing_for_planned),
      cmocka_unit_test(test_more_batch_sizes_than_plans_stays_bounded),
      cmocka_unit_test(test_in_place_chain_uses_one_buffer),
      cmocka_unit_test(test_in_place_spares_values_read_elsewhere),
  };
  int failed = cmocka_run_group_tests_name("one thread", tests, setup,
                                           teardown);
  failed += cmocka_run_group_tests_name("executor threads", threaded,
                                        setup_threads, teardown);
  return failed;
}
