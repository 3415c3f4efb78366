/* tests/core/test_gradients.c — the autodiff core: gradients summed over
 * several paths, StopGradient, "not differentiable" versus "no gradient",
 * disconnected xs, given output gradients, several ys, and sparse
 * gradients kept sparse (and concatenated). Values are exact in float64.
 * Op gradients themselves are tested with the op plugins. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

static wf_runtime *rt;
static wf_status *st;

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  wf_config *cfg = wf_config_new();
  assert_int_equal(
      wf_config_set(cfg, "plugins", "paths",
                    TEST_BUILDDIR "/tests/core/.libs, " TEST_BUILDDIR
                                  "/plugins/ops/math/.libs, " TEST_BUILDDIR
                                  "/plugins/ops/array/.libs, " TEST_BUILDDIR
                                  "/plugins/devices/cpu/.libs",
                    st),
      0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", st), 0);
  rt = wf_runtime_new(cfg, st);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  wf_config_free(cfg);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}

static wf_output op(wf_graph *g, const char *type, wf_output a, wf_output b) {
  wf_node_desc *d = wf_node_desc_new(g, type, NULL);
  wf_node_desc_add_input(d, a);
  if (b.node)
    wf_node_desc_add_input(d, b);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", type, wf_status_message(st));
  return (wf_output){n, 0};
}

static const wf_output none = {NULL, 0};

static wf_output placeholder(wf_graph *g, const char *name) {
  int64_t dims[1] = {3};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", dims, 1);
  wf_node *n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  return (wf_output){n, 0};
}

static const double xv[3] = {1.5, -2.0, 0.25};

/* Runs fetch with x fed xv; copies 3 doubles out. */
static void eval(wf_graph *g, wf_output x, wf_output fetch, double *out) {
  wf_session *s = wf_session_new(g, st);
  int64_t dims[1] = {3};
  wf_tensor *t = wf_tensor_new(WF_FLOAT64, dims, 1, st);
  memcpy(wf_tensor_data(t), xv, sizeof xv);
  wf_tensor *v = NULL;
  if (wf_session_run(s, NULL, &x, &t, 1, &fetch, &v, 1, NULL, 0, NULL, st))
    fail_msg("run: %s", wf_status_message(st));
  memcpy(out, wf_tensor_data(v), wf_tensor_nbytes(v));
  wf_tensor_release(v);
  wf_tensor_release(t);
  wf_session_free(s);
}

static void test_paths_are_summed(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x");
  wf_output y = op(g, "Add", op(g, "Mul", x, x), x); /* x^2 + x */
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st), 0);
  assert_non_null(dx.dense.node);
  assert_null(dx.indices.node);
  double got[3];
  eval(g, x, dx.dense, got);
  for (int i = 0; i < 3; i++)
    assert_true(got[i] == 2 * xv[i] + 1);
  /* The new nodes live under the gradients scope. */
  assert_non_null(strstr(wf_node_name(dx.dense.node), "gradients"));
  wf_graph_free(g);
}

static void test_stop_gradient_blocks(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x");
  wf_output y = op(g, "Mul", x, op(g, "StopGradient", x, none));
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st), 0);
  double got[3];
  eval(g, x, dx.dense, got);
  for (int i = 0; i < 3; i++)
    assert_true(got[i] == xv[i]); /* not 2x */
  wf_graph_free(g);
}

static void test_disconnected_x_has_no_gradient(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x"), z = placeholder(g, "z");
  wf_output y = op(g, "Exp", x, none);
  wf_output xs[2] = {x, z};
  wf_gradient dx[2];
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, xs, 2, dx, st), 0);
  assert_non_null(dx[0].dense.node);
  assert_null(dx[1].dense.node);
  assert_null(dx[1].indices.node);
  wf_graph_free(g);
}

static void test_not_differentiable_is_not_an_error(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x");
  wf_output y = op(g, "Add", op(g, "NotDiffOp", x, none), op(g, "Neg", x, none));
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st), 0);
  double got[3];
  eval(g, x, dx.dense, got);
  for (int i = 0; i < 3; i++)
    assert_true(got[i] == -1.0);
  assert_int_equal(wf_runtime_op_gradient(rt, "NotDiffOp"), 0);
  wf_graph_free(g);
}

static void test_missing_gradient_names_the_op(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x");
  wf_output mid = op(g, "NoGradOp", x, none);
  wf_output y = op(g, "Exp", mid, none);
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st),
                   WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "NoGradOp"));
  assert_non_null(strstr(wf_status_message(st), wf_node_name(mid.node)));
  assert_null(dx.dense.node);
  assert_int_equal(wf_runtime_op_gradient(rt, "NoGradOp"), -1);
  /* Off the path it does not matter. */
  wf_output y2 = op(g, "Add", op(g, "Exp", x, none),
                    op(g, "NoGradOp", placeholder(g, "other"), none));
  assert_int_equal(wf_graph_add_gradients(g, &y2, 1, NULL, &x, 1, &dx, st), 0);
  wf_graph_free(g);
}

/* The ops autodiff joins gradients with are found by their role flags: a
 * runtime without ops-math (which defines the WF_OP_ADD_N op) cannot sum
 * two arriving gradients, and says which role is missing. */
static void test_missing_glue_op_names_its_role(void **state) {
  (void)state;
  wf_config *cfg = wf_config_new();
  assert_int_equal(
      wf_config_set(cfg, "plugins", "paths",
                    TEST_BUILDDIR "/plugins/ops/array/.libs, " TEST_BUILDDIR
                                  "/plugins/devices/cpu/.libs",
                    st),
      0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st), 0);
  wf_runtime *bare = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!bare)
    fail_msg("runtime: %s", wf_status_message(st));
  assert_int_equal(wf_runtime_op_gradient(bare, "AddN"), -1);
  wf_graph *g = wf_graph_new(bare);
  wf_output x = placeholder(g, "x");
  wf_node_desc *d = wf_node_desc_new(g, "Concat", "y");
  wf_output both[2] = {x, x};
  wf_node_desc_add_input_list(d, both, 2);
  wf_node_desc_set_attr_int(d, "axis", 0);
  wf_node *y = wf_node_desc_finish(d, st);
  if (!y)
    fail_msg("Concat: %s", wf_status_message(st));
  wf_output yo = {y, 0};
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, &yo, 1, NULL, &x, 1, &dx, st),
                   WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "WF_OP_ADD_N"));
  wf_graph_free(g);
  wf_runtime_free(bare);
}

static void test_given_output_gradient_and_several_ys(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x");
  wf_output y1 = op(g, "Mul", x, x);      /* d = 2x */
  wf_output y2 = op(g, "Neg", x, none);   /* d = -1 */
  wf_output dy1 = op(g, "Add", x, x);     /* seed 2x for y1 */
  wf_output dy2 = op(g, "OnesLike", x, none);
  wf_output ys[2] = {y1, y2}, dys[2] = {dy1, dy2};
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, ys, 2, dys, &x, 1, &dx, st), 0);
  double got[3];
  eval(g, x, dx.dense, got);
  for (int i = 0; i < 3; i++)
    assert_true(got[i] == 2 * xv[i] * 2 * xv[i] - 1);
  wf_graph_free(g);
}

static void test_sparse_gradients_stay_sparse(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x");
  wf_output y = op(g, "SparseRowsOp", x, none);
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st), 0);
  assert_null(dx.dense.node);
  assert_non_null(dx.indices.node);
  assert_non_null(dx.values.node);
  assert_non_null(dx.dense_shape.node);
  double got[3];
  eval(g, x, dx.values, got);
  for (int i = 0; i < 3; i++)
    assert_true(got[i] == 1.0);

  /* Two sparse uses are concatenated: 6 rows. */
  wf_output y2 = op(g, "Add", op(g, "SparseRowsOp", x, none),
                    op(g, "SparseRowsOp", x, none));
  assert_int_equal(wf_graph_add_gradients(g, &y2, 1, NULL, &x, 1, &dx, st), 0);
  assert_non_null(dx.indices.node);
  wf_shape s;
  wf_node_output_shape(dx.values.node, dx.values.index, &s);
  assert_int_equal(s.rank, 1);
  assert_int_equal(s.dims[0], 6);
  wf_graph_free(g);
}

static void test_bad_arguments_are_refused(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x");
  wf_node_desc *d = wf_node_desc_new(g, "Cast", "as_int");
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_dtype(d, "DstT", WF_INT32);
  wf_output yi = {wf_node_desc_finish(d, st), 0};
  assert_non_null(yi.node);
  wf_gradient dx;
  assert_int_equal(wf_graph_add_gradients(g, &yi, 1, NULL, &x, 1, &dx, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "int32"));
  wf_output bad = {x.node, 4};
  assert_int_equal(wf_graph_add_gradients(g, &bad, 1, NULL, &x, 1, &dx, st),
                   WF_INVALID_ARGUMENT);
  wf_graph *other = wf_graph_new(rt);
  wf_output ox = placeholder(other, "ox");
  assert_int_equal(wf_graph_add_gradients(g, &x, 1, NULL, &ox, 1, &dx, st),
                   WF_INVALID_ARGUMENT);
  wf_graph_free(other);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths_are_summed),
      cmocka_unit_test(test_stop_gradient_blocks),
      cmocka_unit_test(test_disconnected_x_has_no_gradient),
      cmocka_unit_test(test_not_differentiable_is_not_an_error),
      cmocka_unit_test(test_missing_gradient_names_the_op),
      cmocka_unit_test(test_missing_glue_op_names_its_role),
      cmocka_unit_test(test_given_output_gradient_and_several_ys),
      cmocka_unit_test(test_sparse_gradients_stay_sparse),
      cmocka_unit_test(test_bad_arguments_are_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
