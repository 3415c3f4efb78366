/* tests/session/test_check_numerics.c — finding where NaN and Inf appear:
 * the config's [debug] check_numerics fails a step at the first node whose
 * float output holds them (node, op, output, counts), is off by default;
 * the CheckNumerics op fails with its message, forwards good values and
 * passes gradients through. With the build tree's array, math and cpu
 * plugins. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PLUGINS                                                                \
  TEST_BUILDDIR "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/devices/cpu/.libs"

static wf_status *st;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond)                                                                  \
      fail_msg("%s:%d: %s", __FILE__, __LINE__, wf_status_message(st));        \
  } while (0)

static wf_runtime *runtime(const char *check_numerics) {
  wf_config *cfg = wf_config_new();
  CHECK(wf_config_set(cfg, "plugins", "paths", PLUGINS, st) ||
        wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
        wf_config_set(cfg, "plugins", "use_env_path", "false", st));
  if (check_numerics)
    CHECK(wf_config_set(cfg, "debug", "check_numerics", check_numerics, st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  CHECK(!rt);
  return rt;
}

static wf_node *op(wf_graph *g, const char *type, const char *name,
                   wf_node *a, wf_node *b) {
  wf_node_desc *d = wf_node_desc_new(g, type, name);
  wf_node_desc_add_input(d, (wf_output){a, 0});
  if (b)
    wf_node_desc_add_input(d, (wf_output){b, 0});
  wf_node *n = wf_node_desc_finish(d, st);
  CHECK(!n);
  return n;
}

static wf_node *placeholder(wf_graph *g) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", (int64_t[]){3}, 1);
  wf_node *n = wf_node_desc_finish(d, st);
  CHECK(!n);
  return n;
}

static wf_tensor *vec3(float a, float b, float c) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, (int64_t[]){3}, 1, st);
  CHECK(!t);
  float *p = wf_tensor_data(t);
  p[0] = a;
  p[1] = b;
  p[2] = c;
  return t;
}

/* Runs s feeding x and fetching y; returns the code (y in *out on
 * success, else NULL). */
static int run(wf_session *s, wf_node *x, wf_tensor *xv, wf_output y,
               wf_tensor **out) {
  wf_output feed = {x, 0};
  *out = NULL;
  wf_status_reset(st);
  return wf_session_run(s, NULL, &feed, &xv, 1, &y, out, 1, NULL, 0, NULL,
                        st);
}

static void assert_has(const char *part) {
  if (!strstr(wf_status_message(st), part))
    fail_msg("the message lacks \"%s\": %s", part, wf_status_message(st));
}

/* y = Log(x) * Log(x) + 1 over three values. */
static void log_graph(wf_runtime *rt, wf_graph **g, wf_node **x,
                      wf_output *y) {
  *g = wf_graph_new(rt);
  *x = placeholder(*g);
  wf_node *l = op(*g, "Log", "log", *x, NULL);
  wf_node *sq = op(*g, "Mul", "square", l, l);
  *y = (wf_output){op(*g, "Add", "plus_x", sq, *x), 0};
}

static void test_check_numerics_names_the_first_node(void **state) {
  wf_runtime *rt = runtime("true");
  wf_graph *g;
  wf_node *x;
  wf_output y;
  wf_tensor *out, *bad = vec3(1.0f, 0.0f, -1.0f), *good = vec3(1, 2, 3);
  (void)state;
  log_graph(rt, &g, &x, &y);
  wf_session *s = wf_session_new(g, st);
  CHECK(!s);
  /* Log(0) = -Inf and Log(-1) = NaN: the step fails at 'log', not at the
   * nodes after it that would carry them on. */
  assert_int_equal(run(s, x, bad, y, &out), WF_INVALID_ARGUMENT);
  assert_null(out);
  assert_has("node 'log' (op 'Log')");
  assert_has("output 0 (float32 (3)) holds 2 NaN or Inf values of 3");
  assert_has("1 NaN, 1 Inf; the first at element 1");
  assert_has("check_numerics");
  /* Good values go through, and the session stays usable. */
  CHECK(run(s, x, good, y, &out));
  assert_true(fabsf(((float *)wf_tensor_data(out))[1] -
                    (logf(2) * logf(2) + 2)) < 1e-5f);
  wf_tensor_release(out);
  /* An Inf fed straight in is caught at the first node that outputs it. */
  wf_tensor *inf = vec3(1.0f, INFINITY, 3.0f);
  assert_int_equal(run(s, x, inf, y, &out), WF_INVALID_ARGUMENT);
  assert_has("node 'log' (op 'Log')");
  assert_has("1 NaN or Inf values of 3 (0 NaN, 1 Inf; the first at "
             "element 1)");
  wf_tensor_release(inf);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_tensor_release(bad);
  wf_tensor_release(good);
}

static void test_check_numerics_is_off_by_default(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    wf_runtime *rt = runtime(k ? "false" : NULL);
    wf_graph *g;
    wf_node *x;
    wf_output y;
    wf_tensor *out, *bad = vec3(1.0f, 0.0f, -1.0f);
    log_graph(rt, &g, &x, &y);
    wf_session *s = wf_session_new(g, st);
    CHECK(!s);
    CHECK(run(s, x, bad, y, &out));
    const float *v = wf_tensor_data(out);
    assert_true(v[0] == 1.0f);
    assert_true(isinf(v[1]));
    assert_true(isnan(v[2]));
    wf_tensor_release(out);
    wf_session_free(s);
    wf_graph_free(g);
    wf_runtime_free(rt);
    wf_tensor_release(bad);
  }
}

static void test_check_numerics_op(void **state) {
  wf_runtime *rt = runtime(NULL);
  wf_graph *g = wf_graph_new(rt);
  wf_node *x = placeholder(g);
  wf_tensor *out;
  (void)state;
  wf_node_desc *d = wf_node_desc_new(g, "CheckNumerics", "check_logits");
  wf_node_desc_add_input(d, (wf_output){x, 0});
  wf_node_desc_set_attr_string(d, "message", "logits");
  wf_node *c = wf_node_desc_finish(d, st);
  CHECK(!c);
  wf_node *y = op(g, "Mul", "double", c, c);
  wf_gradient dx;
  wf_output ys = {y, 0}, xs = {x, 0};
  CHECK(wf_graph_add_gradients(g, &ys, 1, NULL, &xs, 1, &dx, st));
  assert_non_null(dx.dense.node);
  wf_session *s = wf_session_new(g, st);
  CHECK(!s);

  wf_tensor *good = vec3(1, -2, 3), *bad = vec3(1, NAN, NAN);
  CHECK(run(s, x, good, (wf_output){c, 0}, &out));
  /* The same tensor, forwarded. */
  assert_ptr_equal(out, good);
  wf_tensor_release(out);
  /* d(x*x)/dx = 2x through CheckNumerics. */
  CHECK(run(s, x, good, dx.dense, &out));
  assert_true(((float *)wf_tensor_data(out))[1] == -4.0f);
  wf_tensor_release(out);
  assert_int_equal(run(s, x, bad, ys, &out), WF_INVALID_ARGUMENT);
  assert_has("node 'check_logits' (op 'CheckNumerics')");
  assert_has("logits: 2 NaN or Inf values of 3 (the first at element 1)");
  /* Integer inputs are refused when the node is added. */
  wf_node_desc *i = wf_node_desc_new(g, "Placeholder", "ints");
  wf_node_desc_set_attr_dtype(i, "dtype", WF_INT32);
  wf_node *in = wf_node_desc_finish(i, st);
  CHECK(!in);
  d = wf_node_desc_new(g, "CheckNumerics", "check_ints");
  wf_node_desc_add_input(d, (wf_output){in, 0});
  assert_null(wf_node_desc_finish(d, st));
  wf_tensor_release(good);
  wf_tensor_release(bad);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_check_numerics_names_the_first_node),
      cmocka_unit_test(test_check_numerics_is_off_by_default),
      cmocka_unit_test(test_check_numerics_op),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
