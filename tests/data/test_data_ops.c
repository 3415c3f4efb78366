/* tests/data/test_data_ops.c — graphs that read iterators: the
 * IteratorGetNext op (its registration, its outputs' types and shapes, end
 * of data as OUT_OF_RANGE naming the iterator, bad records, a missing
 * iterator), a training step that pulls its batch in the same run, and the
 * registry's rule for list(dtype)-typed outputs that the op relies on. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "host/host.h"
#include "data_harness.h"

static void test_iterator_get_next_is_a_built_in_op(void **state) {
  (void)state;
  const wf_op_def *op = wf_runtime_op_find(rt, "IteratorGetNext");
  assert_non_null(op);
  assert_true(op->flags & WF_OP_STATEFUL);
  assert_int_equal(wf_runtime_op_gradient(rt, "IteratorGetNext"), 0);
  int found = 0;
  for (int i = 0; i < wf_runtime_plugin_count(rt); i++) {
    wf_plugin_info p;
    wf_runtime_plugin_get(rt, i, &p);
    if (strcmp(p.name, "core-data") == 0) {
      found = 1;
      assert_int_equal(p.state, WF_PLUGIN_LOADED);
      assert_int_equal(p.num_ops, 1);
    }
  }
  assert_true(found);
}

static void test_get_next_outputs_follow_the_dataset(void **state) {
  (void)state;
  dh_write_range("ops-types.tst", 0, 10);
  wf_dataset *ds = wf_dataset_batch(dh_files("ops-types.tst"), 4, 1, st);
  wf_graph *g = wf_graph_new(rt);
  DH_CHECK(!ds);
  wf_node *n = wf_graph_add_get_next(g, "train", ds, "get_next", st);
  DH_CHECK(!n);
  assert_int_equal(wf_node_num_outputs(n), 3);
  assert_int_equal(wf_node_output_dtype(n, 0), WF_INT64);
  assert_int_equal(wf_node_output_dtype(n, 1), WF_INT32);
  assert_int_equal(wf_node_output_dtype(n, 2), WF_UINT8);
  wf_shape s;
  wf_node_output_shape(n, 2, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], 4);
  assert_int_equal(s.dims[1], 4);
  wf_graph_free(g);
  wf_dataset_release(ds);
}

static void test_runs_pull_elements_until_out_of_range(void **state) {
  (void)state;
  dh_write_range("ops-run.tst", 0, 10);
  wf_dataset *ds = wf_dataset_batch(dh_files("ops-run.tst"), 4, 0, st);
  wf_graph *g = wf_graph_new(rt);
  DH_CHECK(!ds);
  wf_node *n = wf_graph_add_get_next(g, "train", ds, "get_next", st);
  DH_CHECK(!n);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  wf_session *s = wf_session_new(g, st);
  DH_CHECK(!s);
  wf_output fetch[2] = {{n, 0}, {n, 2}};
  wf_tensor *out[2];

  /* Nothing attached yet. */
  assert_int_equal(wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, 2,
                                  NULL, 0, NULL, st),
                   WF_FAILED_PRECONDITION);
  assert_non_null(strstr(wf_status_message(st), "'train'"));
  assert_non_null(strstr(wf_status_message(st), "get_next"));

  DH_CHECK(wf_session_attach_iterator(s, "train", it, st));
  int64_t next = 0;
  for (int b = 0; b < 3; b++) {
    DH_CHECK(wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, 2, NULL, 0,
                            NULL, st));
    int64_t rows = wf_tensor_dim(out[0], 0);
    assert_int_equal(rows, b < 2 ? 4 : 2);
    assert_int_equal(wf_tensor_dim(out[1], 1), 4);
    for (int64_t r = 0; r < rows; r++)
      assert_int_equal(((int64_t *)wf_tensor_data(out[0]))[r], next++);
    wf_tensor_release(out[0]);
    wf_tensor_release(out[1]);
  }
  assert_int_equal(wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, 2,
                                  NULL, 0, NULL, st),
                   WF_OUT_OF_RANGE);
  assert_non_null(strstr(wf_status_message(st), "iterator 'train'"));
  assert_non_null(strstr(wf_status_message(st), "end of data"));
  assert_non_null(strstr(wf_status_message(st), "'get_next'"));

  /* A new pass, through the iterator. */
  DH_CHECK(wf_iterator_reset(it, st));
  DH_CHECK(wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, 2, NULL, 0,
                          NULL, st));
  assert_int_equal(((int64_t *)wf_tensor_data(out[0]))[0], 0);
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);

  /* Detached: the name is unknown again. */
  DH_CHECK(wf_session_attach_iterator(s, "train", NULL, st));
  assert_int_equal(wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, 2,
                                  NULL, 0, NULL, st),
                   WF_FAILED_PRECONDITION);
  assert_int_equal(wf_session_attach_iterator(s, "", it, st),
                   WF_INVALID_ARGUMENT);
  wf_session_free(s);
  wf_iterator_free(it);
  wf_graph_free(g);
  wf_dataset_release(ds);
}

static void test_bad_record_fails_one_run_only(void **state) {
  (void)state;
  const char *p = dh_write_lines("ops-bad.tst", "0", "bad", "1", NULL);
  wf_dataset *ds = dh_files("ops-bad.tst");
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = wf_graph_add_get_next(g, "it", ds, NULL, st);
  DH_CHECK(!n);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  wf_session *s = wf_session_new(g, st);
  DH_CHECK(!it || !s);
  DH_CHECK(wf_session_attach_iterator(s, "it", it, st));
  wf_output fetch = {n, 0};
  wf_tensor *out;
  DH_CHECK(wf_session_run(s, NULL, NULL, NULL, 0, &fetch, &out, 1, NULL, 0,
                          NULL, st));
  wf_tensor_release(out);
  assert_int_equal(wf_session_run(s, NULL, NULL, NULL, 0, &fetch, &out, 1,
                                  NULL, 0, NULL, st),
                   WF_DATA_LOSS);
  assert_non_null(strstr(wf_status_message(st), p));
  DH_CHECK(wf_session_run(s, NULL, NULL, NULL, 0, &fetch, &out, 1, NULL, 0,
                          NULL, st));
  assert_int_equal(*(int64_t *)wf_tensor_data(out), 1);
  wf_tensor_release(out);
  wf_session_free(s);
  wf_iterator_free(it);
  wf_graph_free(g);
  wf_dataset_release(ds);
}

/* ---- training --------------------------------------------------------------------- */

#define TRAIN_PLUGINS                                                          \
  TEST_BUILDDIR "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/nn/.libs, " TEST_BUILDDIR                        \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/train/.libs, " TEST_BUILDDIR                     \
                "/plugins/devices/cpu/.libs"

static void test_one_run_pulls_a_batch_and_trains_on_it(void **state) {
  (void)state;
  wf_config *cfg = wf_config_new();
  DH_CHECK(wf_config_set(cfg, "plugins", "paths", TRAIN_PLUGINS, st));
  DH_CHECK(wf_config_set(cfg, "plugins", "use_default_dir", "false", st));
  DH_CHECK(wf_config_set(cfg, "plugins", "use_env_path", "false", st));
  DH_CHECK(wf_config_set(cfg, "threads", "inter_op", "2", st));
  wf_runtime *trt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  DH_CHECK(!trt);
  DH_CHECK(wf__runtime_add_plugin(trt, test_reader_desc(), "(test)", NULL,
                                  st));

  wf_attr_item opt = {"pixels", {.type = WF_ATTR_INT, .count = 1, .u.i = 8}};
  wf_dataset *ds = wf_dataset_from_files(
      trt, dh_write_range("train.tst", 0, 40), NULL, &opt, 1, st);
  ds = wf_dataset_map_scale(ds, "pixels", 1.0 / 255, 0, st);
  ds = wf_dataset_batch(ds, 8, 1, st);
  ds = wf_dataset_prefetch(wf_dataset_repeat(ds, 3, st), 2, st);
  DH_CHECK(!ds);

  wf_graph *g = wf_graph_new(trt);
  wf_node *next = wf_graph_add_get_next(g, "train", ds, "get_next", st);
  DH_CHECK(!next);
  wf_model *m = wf_model_new(g, 5, st);
  DH_CHECK(!m);
  wf_model_begin(m, 1);
  wf_output logits =
      wf_layer_dense(m, (wf_output){next, 2}, 10, WF_ACT_NONE, st);
  DH_CHECK(!logits.node);
  wf_output loss = wf_loss_sparse_softmax_cross_entropy(
      m, logits, (wf_output){next, 1}, st);
  DH_CHECK(!loss.node);
  wf_optimizer opt_sgd = wf_optimizer_defaults(WF_OPT_SGD);
  wf_node *train = wf_model_minimize(m, loss, &opt_sgd, st);
  DH_CHECK(!train);
  wf_node *init = wf_model_init_op(m, st);
  DH_CHECK(!init);

  wf_session *s = wf_session_new(g, st);
  DH_CHECK(!s);
  DH_CHECK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1,
                          NULL, st));
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  DH_CHECK(wf_session_attach_iterator(s, "train", it, st));
  wf_output fetch[2] = {loss, {next, 0}};
  wf_tensor *out[2];
  int steps = 0, rc;
  while ((rc = wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, 2, &train,
                              1, NULL, st)) == WF_OK) {
    /* The loss is of the batch fetched with it. */
    const int64_t *idx = wf_tensor_data(out[1]);
    for (int r = 0; r < 8; r++)
      assert_int_equal(idx[r], (steps * 8 + r) % 40);
    assert_true(isfinite(*(float *)wf_tensor_data(out[0])));
    wf_tensor_release(out[0]);
    wf_tensor_release(out[1]);
    steps++;
  }
  assert_int_equal(rc, WF_OUT_OF_RANGE);
  assert_int_equal(steps, 15);

  wf_session_free(s);
  wf_iterator_free(it);
  wf_model_free(m);
  wf_graph_free(g);
  wf_dataset_release(ds);
  wf_runtime_free(trt);
}

/* ---- the registry rule --------------------------------------------------------------- */

static const wf_arg_def typed_list[] = {
    {WF_STRUCT_INIT(wf_arg_def), .name = "xs", .type_attr = "Ts",
     .doc = "one tensor per item of Ts"},
    WF_ARG_END};
static const wf_attr_def typed_list_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "Ts",
     .type = WF_ATTR_LIST | WF_ATTR_DTYPE},
    WF_ATTR_END};
static const wf_op_def list_input_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "TestTypedListIn",
    .inputs = typed_list, .attrs = typed_list_attrs};
static const wf_op_def *const list_input_ops[] = {&list_input_op, NULL};

static void test_type_lists_type_outputs_only(void **state) {
  (void)state;
  wf_plugin_desc desc = {WF_STRUCT_INIT(wf_plugin_desc),
                         .name = "test-typed-list",
                         .ops = list_input_ops};
  wf_runtime *r = wf__runtime_new_empty(NULL, st);
  DH_CHECK(!r);
  assert_int_not_equal(wf__runtime_add_plugin(r, &desc, "(test)", NULL, st),
                       WF_OK);
  assert_non_null(strstr(wf_status_message(st), "list(dtype)"));
  assert_non_null(strstr(wf_status_message(st), "'xs'"));
  wf_runtime_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_iterator_get_next_is_a_built_in_op),
      cmocka_unit_test(test_get_next_outputs_follow_the_dataset),
      cmocka_unit_test(test_runs_pull_elements_until_out_of_range),
      cmocka_unit_test(test_bad_record_fails_one_run_only),
      cmocka_unit_test(test_one_run_pulls_a_batch_and_trains_on_it),
      cmocka_unit_test(test_type_lists_type_outputs_only),
  };
  return cmocka_run_group_tests(tests, dh_setup, dh_teardown);
}
