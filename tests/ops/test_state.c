/* tests/ops/test_state.c — the ops_state plugin through sessions: variables
 * created by VarHandle, initialised by AssignVariable and read back;
 * refusals (uninitialised reads, wrong dtype or shape) that name the
 * variable; AssignAdd/AssignSub in place; snapshots that keep their value
 * across later updates; concurrent increments from 8 threads. Values are
 * small whole numbers, exact in float32 and float64. */
#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

/* ---- create, assign, read ---------------------------------------------- */

static void test_variable_is_assigned_then_read(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const float init[6] = {1, 2, 3, 4, 5, 6};
  wf_node *w = th_var(g, "w", WF_FLOAT32, TH_DIMS(2, 3), 2);
  wf_node *c = th_const(g, WF_FLOAT32, TH_DIMS(2, 3), 2, init);
  wf_node *assign = th_assign(g, w, c);
  wf_node *read = th_read(g, w, WF_FLOAT32, TH_DIMS(2, 3), 2);
  wf_session *s = wf_session_new(g, NULL);
  wf_tensor *v;
  wf_shape shape;

  assert_non_null(s);
  th_run_ok(s, &assign, 1);
  v = th_fetch(s, read);
  assert_int_equal(wf_tensor_dtype(v), WF_FLOAT32);
  wf_tensor_shape(v, &shape);
  assert_int_equal(shape.rank, 2);
  assert_int_equal(shape.dims[0], 2);
  assert_int_equal(shape.dims[1], 3);
  assert_memory_equal(wf_tensor_data(v), init, sizeof init);
  wf_tensor_release(v);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_read_of_uninitialised_variable_names_it(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node *w = th_var(g, "never_assigned", WF_FLOAT64, TH_DIMS(3), 1);
  wf_node *read = th_read(g, w, WF_FLOAT64, TH_DIMS(3), 1);
  wf_session *s = wf_session_new(g, NULL);
  wf_status *st = wf_status_new();
  wf_output out = th_out(read);
  wf_tensor *v = NULL;

  assert_int_equal(wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL,
                                  0, NULL, st),
                   WF_FAILED_PRECONDITION);
  assert_null(v);
  th_expect_message(st, "never_assigned", NULL);
  wf_status_free(st);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_var_is_initialized_turns_true_after_assign(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const double one = 1;
  wf_node *w = th_var(g, "flag_var", WF_FLOAT64, NULL, 0);
  wf_node *assign = th_assign(g, w, th_const(g, WF_FLOAT64, NULL, 0, &one));
  wf_status *st = wf_status_new();
  const wf_node *in[1] = {w};
  wf_node *is_init = th_op(g, "VarIsInitialized", NULL, in, 1, st);
  wf_session *s = wf_session_new(g, NULL);
  wf_tensor *v;

  assert_non_null(is_init);
  v = th_fetch(s, is_init);
  assert_int_equal(wf_tensor_dtype(v), WF_BOOL);
  assert_int_equal(*(uint8_t *)wf_tensor_data(v), 0);
  wf_tensor_release(v);
  th_run_ok(s, &assign, 1);
  v = th_fetch(s, is_init);
  assert_int_equal(*(uint8_t *)wf_tensor_data(v), 1);
  wf_tensor_release(v);
  wf_status_free(st);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_assign_of_wrong_dtype_or_shape_names_variable(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const double d3[3] = {1, 2, 3};
  const float f2[2] = {1, 2};
  wf_node *w = th_var(g, "weights", WF_FLOAT32, TH_DIMS(3), 1);
  wf_node *bad_dtype =
      th_assign(g, w, th_const(g, WF_FLOAT64, TH_DIMS(3), 1, d3));
  wf_node *bad_shape =
      th_assign(g, w, th_const(g, WF_FLOAT32, TH_DIMS(2), 1, f2));
  wf_session *s = wf_session_new(g, NULL);
  wf_status *st = wf_status_new();

  assert_int_equal(th_run_targets(s, &bad_dtype, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "weights", "float64", NULL);
  assert_int_equal(th_run_targets(s, &bad_shape, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "weights", "(2)", NULL);
  wf_status_free(st);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_read_with_other_dtype_than_variable_names_it(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const float x = 2;
  wf_node *w = th_var(g, "v32", WF_FLOAT32, NULL, 0);
  wf_node *assign = th_assign(g, w, th_const(g, WF_FLOAT32, NULL, 0, &x));
  wf_node *read = th_read(g, w, WF_FLOAT64, NULL, 0);
  wf_session *s = wf_session_new(g, NULL);
  wf_status *st = wf_status_new();
  wf_output out = th_out(read);
  wf_tensor *v = NULL;

  th_run_ok(s, &assign, 1);
  assert_int_equal(wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL,
                                  0, NULL, st),
                   WF_INVALID_ARGUMENT);
  th_expect_message(st, "v32", "float32", "float64", NULL);
  wf_status_free(st);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_var_handle_refuses_unknown_shape(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "VarHandle", "partial");
  wf_status *st = wf_status_new();

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(-1, 3), 2);
  assert_null(wf_node_desc_finish(d, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "partial", "(?, 3)", "fully known", NULL);
  wf_status_free(st);
  wf_graph_free(g);
}

static void test_shared_name_makes_one_variable(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const double seven = 7;
  wf_node *a, *b, *assign, *read;
  wf_node_desc *d;
  wf_session *s;
  wf_tensor *v;

  d = wf_node_desc_new(g, "VarHandle", "a");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", NULL, 0);
  wf_node_desc_set_attr_string(d, "shared_name", "shared");
  a = th_finish(d, "a");
  d = wf_node_desc_new(g, "VarHandle", "b");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", NULL, 0);
  wf_node_desc_set_attr_string(d, "shared_name", "shared");
  b = th_finish(d, "b");
  assign = th_assign(g, a, th_const(g, WF_FLOAT64, NULL, 0, &seven));
  read = th_read(g, b, WF_FLOAT64, NULL, 0);
  s = wf_session_new(g, NULL);
  th_run_ok(s, &assign, 1);
  v = th_fetch(s, read);
  assert_true(th_get(v, 0) == 7);
  wf_tensor_release(v);
  wf_session_free(s);
  wf_graph_free(g);
}

/* ---- in-place updates and snapshots ------------------------------------ */

/* AssignAdd or AssignSub of handle by value. */
static wf_node *update(wf_graph *g, const char *op, wf_node *handle,
                       wf_node *value) {
  wf_status *st = wf_status_new();
  const wf_node *in[2] = {handle, value};
  wf_node *n = th_op(g, op, NULL, in, 2, st);

  if (!n)
    fail_msg("adding %s: %s", op, wf_status_message(st));
  wf_status_free(st);
  return n;
}

static void test_assign_add_and_sub_update_in_place(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const int64_t init[3] = {10, 20, 30}, delta[3] = {1, -2, 3};
  wf_node *w = th_var(g, "counts", WF_INT64, TH_DIMS(3), 1);
  wf_node *assign =
      th_assign(g, w, th_const(g, WF_INT64, TH_DIMS(3), 1, init));
  wf_node *dc = th_const(g, WF_INT64, TH_DIMS(3), 1, delta);
  wf_node *add = update(g, "AssignAddVariable", w, dc);
  wf_node *sub = update(g, "AssignSubVariable", w, dc);
  wf_node *read = th_read(g, w, WF_INT64, TH_DIMS(3), 1);
  wf_session *s = wf_session_new(g, NULL);
  wf_tensor *v;

  th_run_ok(s, &assign, 1);
  th_run_ok(s, &add, 1);
  th_run_ok(s, &add, 1);
  v = th_fetch(s, read);
  assert_true(th_get(v, 0) == 12 && th_get(v, 1) == 16 && th_get(v, 2) == 36);
  wf_tensor_release(v);
  th_run_ok(s, &sub, 1);
  v = th_fetch(s, read);
  assert_true(th_get(v, 0) == 11 && th_get(v, 1) == 18 && th_get(v, 2) == 33);
  wf_tensor_release(v);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_assign_add_of_wrong_shape_names_variable(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const float init[4] = {0}, delta[2] = {1, 1};
  wf_node *w = th_var(g, "acc", WF_FLOAT32, TH_DIMS(4), 1);
  wf_node *assign =
      th_assign(g, w, th_const(g, WF_FLOAT32, TH_DIMS(4), 1, init));
  wf_node *add = update(g, "AssignAddVariable", w,
                        th_const(g, WF_FLOAT32, TH_DIMS(2), 1, delta));
  wf_node *uninit = th_var(g, "cold", WF_FLOAT32, TH_DIMS(2), 1);
  wf_node *add_cold = update(g, "AssignAddVariable", uninit,
                             th_const(g, WF_FLOAT32, TH_DIMS(2), 1, delta));
  wf_session *s = wf_session_new(g, NULL);
  wf_status *st = wf_status_new();

  th_run_ok(s, &assign, 1);
  assert_int_equal(th_run_targets(s, &add, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "acc", "(4)", "(2)", NULL);
  assert_int_equal(th_run_targets(s, &add_cold, 1, st),
                   WF_FAILED_PRECONDITION);
  th_expect_message(st, "cold", NULL);
  wf_status_free(st);
  wf_session_free(s);
  wf_graph_free(g);
}

/* A read whose result is still held keeps its value when the variable is
 * updated, both across runs and within one step ordered by control
 * edges. */
static void test_read_before_update_keeps_its_value(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const float init[2] = {1, 2}, delta[2] = {10, 10};
  wf_node *w = th_var(g, "snap", WF_FLOAT32, TH_DIMS(2), 1);
  wf_node *assign =
      th_assign(g, w, th_const(g, WF_FLOAT32, TH_DIMS(2), 1, init));
  wf_node *before = th_read(g, w, WF_FLOAT32, TH_DIMS(2), 1);
  wf_node *dc = th_const(g, WF_FLOAT32, TH_DIMS(2), 1, delta);
  wf_node_desc *d;
  wf_node *add, *after;
  wf_session *s;
  wf_tensor *held, *vals[2] = {NULL, NULL};
  wf_output outs[2];
  wf_status *st = wf_status_new();

  /* add runs after `before`, `after` after add. */
  d = wf_node_desc_new(g, "AssignAddVariable", NULL);
  wf_node_desc_add_input(d, th_out(w));
  wf_node_desc_add_input(d, th_out(dc));
  wf_node_desc_add_control_input(d, before);
  add = th_finish(d, "AssignAddVariable");
  d = wf_node_desc_new(g, "ReadVariable", NULL);
  wf_node_desc_add_input(d, th_out(w));
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", TH_DIMS(2), 1);
  wf_node_desc_add_control_input(d, add);
  after = th_finish(d, "ReadVariable");
  s = wf_session_new(g, NULL);
  th_run_ok(s, &assign, 1);

  /* Across runs: a fetched value outlives updates. */
  held = th_fetch(s, before);
  th_run_ok(s, &add, 1);
  assert_true(th_get(held, 0) == 1 && th_get(held, 1) == 2);
  wf_tensor_release(held);

  /* Within one step: the read ordered before the update sees 11, 12. */
  outs[0] = th_out(before);
  outs[1] = th_out(after);
  if (wf_session_run(s, NULL, NULL, NULL, 0, outs, vals, 2, NULL, 0, NULL,
                     st))
    fail_msg("run: %s", wf_status_message(st));
  assert_true(th_get(vals[0], 0) == 11 && th_get(vals[0], 1) == 12);
  assert_true(th_get(vals[1], 0) == 21 && th_get(vals[1], 1) == 22);
  wf_tensor_release(vals[0]);
  wf_tensor_release(vals[1]);
  wf_status_free(st);
  wf_session_free(s);
  wf_graph_free(g);
}

/* ---- concurrency ------------------------------------------------------- */

#define INC_THREADS 8
#define INC_RUNS 250

typedef struct inc_job {
  wf_session *s;
  wf_node *add;
  int failures;
} inc_job;

static void *inc_thread(void *arg) {
  inc_job *job = arg;
  wf_status *st = wf_status_new();

  for (int i = 0; i < INC_RUNS; i++)
    if (th_run_targets(job->s, &job->add, 1, st))
      job->failures++;
  wf_status_free(st);
  return NULL;
}

static void test_concurrent_increments_sum_exactly(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const double zero[4] = {0}, inc[4] = {1, 2, 3, 4};
  wf_node *w = th_var(g, "total", WF_FLOAT64, TH_DIMS(4), 1);
  wf_node *assign =
      th_assign(g, w, th_const(g, WF_FLOAT64, TH_DIMS(4), 1, zero));
  wf_node *add = update(g, "AssignAddVariable", w,
                        th_const(g, WF_FLOAT64, TH_DIMS(4), 1, inc));
  wf_node *read = th_read(g, w, WF_FLOAT64, TH_DIMS(4), 1);
  wf_session *s = wf_session_new(g, NULL);
  pthread_t threads[INC_THREADS];
  inc_job jobs[INC_THREADS];
  wf_tensor *v;

  th_run_ok(s, &assign, 1);
  for (int t = 0; t < INC_THREADS; t++) {
    jobs[t] = (inc_job){s, add, 0};
    assert_int_equal(pthread_create(&threads[t], NULL, inc_thread, &jobs[t]),
                     0);
  }
  for (int t = 0; t < INC_THREADS; t++) {
    pthread_join(threads[t], NULL);
    assert_int_equal(jobs[t].failures, 0);
  }
  v = th_fetch(s, read);
  for (int i = 0; i < 4; i++)
    assert_true(th_get(v, i) == (double)(INC_THREADS * INC_RUNS) * inc[i]);
  wf_tensor_release(v);
  wf_session_free(s);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_variable_is_assigned_then_read),
      cmocka_unit_test(test_read_of_uninitialised_variable_names_it),
      cmocka_unit_test(test_var_is_initialized_turns_true_after_assign),
      cmocka_unit_test(test_assign_of_wrong_dtype_or_shape_names_variable),
      cmocka_unit_test(test_read_with_other_dtype_than_variable_names_it),
      cmocka_unit_test(test_var_handle_refuses_unknown_shape),
      cmocka_unit_test(test_shared_name_makes_one_variable),
      cmocka_unit_test(test_assign_add_and_sub_update_in_place),
      cmocka_unit_test(test_assign_add_of_wrong_shape_names_variable),
      cmocka_unit_test(test_read_before_update_keeps_its_value),
      cmocka_unit_test(test_concurrent_increments_sum_exactly),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
