/* tests/core/test_plugin_passes.c — graph passes registered by a plugin
 * (tests/plugins/passes.c, a real module loaded from its file): a pass
 * fires and its rewrite shows in the Graphviz dumps and leaves the fetched
 * values unchanged; [passes] NAME = false switches it off; a pass that
 * leaves a cycle, or fails after changing the graph, has its change undone
 * and is named in a warning, or in the error under [plugins] strict; a bad
 * switch value is refused naming the key. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PASS_PLUGIN TEST_PLUGIN_DIR "/passes.so"

static wf_status *st;
static char logpath[256];

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

/* A runtime with the pass plugin; extra is "section key value" triples. */
static wf_runtime *runtime_with(const char *const *extra, int n) {
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  OK(wf_config_set(cfg, "plugins", "paths", PASS_PLUGIN, st));
  for (int i = 0; i + 2 < n; i += 3)
    OK(wf_config_set(cfg, extra[i], extra[i + 1], extra[i + 2], st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  return rt;
}

/* Which passes ran since the log was cleared. */
static int ran(const char *pass) {
  char line[64];
  int n = 0;
  FILE *f = fopen(logpath, "r");
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    n += strcmp(line, pass) == 0;
  }
  fclose(f);
  return n;
}

static void clear_log(void) { remove(logpath); }

/* x (Placeholder float [3]) -> Exp -> Neg -> Neg named `name`: fetched
 * y = exp(x) (the inner value is not fed, so it may be fetched). */
typedef struct chain {
  wf_graph *g;
  wf_node *x, *y;
} chain;

static chain make_chain(wf_runtime *rt, const char *name) {
  chain c = {wf_graph_new(rt), NULL, NULL};
  assert_non_null(c.g);
  wf_node_desc *d = wf_node_desc_new(c.g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  int64_t dims[1] = {3};
  wf_node_desc_set_attr_shape(d, "shape", dims, 1);
  c.x = wf_node_desc_finish(d, st);
  OK(!c.x);
  wf_output in = {c.x, 0};
  wf_node *e = wf_graph_add_op(c.g, "Exp", "exp", &in, 1, NULL, 0, st);
  OK(!e);
  in = (wf_output){e, 0};
  wf_node *n1 = wf_graph_add_op(c.g, "Neg", "neg1", &in, 1, NULL, 0, st);
  OK(!n1);
  in = (wf_output){n1, 0};
  c.y = wf_graph_add_op(c.g, "Neg", name, &in, 1, NULL, 0, st);
  OK(!c.y);
  return c;
}

/* Runs c with x = {1, -2, 3}; returns the code, *out the fetched values. */
static int run_chain(chain *c, float out[3]) {
  int64_t dims[1] = {3};
  wf_tensor *xv = wf_tensor_new(WF_FLOAT32, dims, 1, st);
  assert_non_null(xv);
  float *p = wf_tensor_data(xv);
  p[0] = 1.0f, p[1] = -2.0f, p[2] = 3.0f;
  wf_session *s = wf_session_new(c->g, st);
  assert_non_null(s);
  wf_output feed = {c->x, 0}, fetch = {c->y, 0};
  wf_tensor *yv = NULL;
  int rc = wf_session_run(s, NULL, &feed, &xv, 1, &fetch, &yv, 1, NULL, 0,
                          NULL, st);
  if (!rc) {
    memcpy(out, wf_tensor_data(yv), 3 * sizeof *out);
    wf_tensor_release(yv);
  }
  wf_tensor_release(xv);
  wf_session_free(s);
  return rc;
}

/* Counts the Neg nodes in the dump file `name` of the dumps of c. */
static int negs_in_dump(chain *c, const char *dir, const char *name) {
  char path[512], line[1024];
  wf_output feed = {c->x, 0}, fetch = {c->y, 0};
  OK(wf_graph_write_dot_passes(c->g, &feed, 1, &fetch, 1, NULL, 0, dir, st));
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, "\\nNeg\"") != NULL;
  fclose(f);
  return n;
}

/* exp(x) for x = {1, -2, 3}, as the CPU computes it in float. */
static void expect_exp(const float out[3]) {
  const float want[3] = {2.7182817f, 0.13533528f, 20.085537f};
  for (int i = 0; i < 3; i++)
    if (out[i] < want[i] * (1 - 1e-6f) || out[i] > want[i] * (1 + 1e-6f))
      fail_msg("y[%d] = %.9g, want exp = %.9g (relative 1e-6)", i, out[i],
               want[i]);
}

static char *temp_dir(void) {
  static char dir[64];
  snprintf(dir, sizeof dir, "/tmp/weft-passes.XXXXXX");
  assert_non_null(mkdtemp(dir));
  return dir;
}

static void remove_dir(const char *dir) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_plugin_pass_fires_and_keeps_values(void **state) {
  (void)state;
  wf_runtime *rt = runtime_with(NULL, 0);
  chain c = make_chain(rt, "y");
  float out[3];
  clear_log();
  OK(run_chain(&c, out));
  assert_true(ran("double_neg") >= 1);
  expect_exp(out);
  char *dir = temp_dir();
  /* Before the passes two Negs, none after the plugin's pass (dumps are
   * numbered on from the core's passes). */
  assert_int_equal(negs_in_dump(&c, dir, "01-pruned.dot"), 2);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls %s | grep -q -- '-after-double_neg.dot$'", dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(negs_in_dump(&c, dir, "99-partitioned.dot"), 0);
  wf_graph_free(c.g);
  wf_runtime_free(rt);
}

static void test_plugin_pass_switched_off_by_name(void **state) {
  (void)state;
  static const char *const off[] = {"passes", "double_neg", "false"};
  wf_runtime *rt = runtime_with(off, 3);
  chain c = make_chain(rt, "y");
  float out[3];
  clear_log();
  OK(run_chain(&c, out));
  assert_int_equal(ran("double_neg"), 0);
  assert_true(ran("fail") >= 1); /* the others still run */
  expect_exp(out);
  char *dir = temp_dir();
  assert_int_equal(negs_in_dump(&c, dir, "99-partitioned.dot"), 2);
  remove_dir(dir);
  wf_graph_free(c.g);
  wf_runtime_free(rt);
}

/* break_me and fail_me are the outer Neg, which double_neg replaces (and
 * which is then gone before the next pass): these tests switch it off. */
static const char *const no_double_neg[] = {"passes", "double_neg", "false"};

static void test_plugin_pass_leaving_a_cycle_is_undone(void **state) {
  (void)state;
  wf_runtime *rt = runtime_with(no_double_neg, 3);
  chain c = make_chain(rt, "break_me");
  float out[3];
  clear_log();
  OK(run_chain(&c, out));
  assert_true(ran("break_graph") >= 1);
  expect_exp(out);
  wf_graph_free(c.g);
  wf_runtime_free(rt);
}

static void test_plugin_pass_errors_under_strict(void **state) {
  (void)state;
  static const char *const strict[] = {"plugins", "strict", "true",
                                       "passes", "double_neg", "false"};
  wf_runtime *rt = runtime_with(strict, 6);
  chain c = make_chain(rt, "break_me");
  float out[3];
  assert_int_not_equal(run_chain(&c, out), WF_OK);
  assert_non_null(strstr(wf_status_message(st), "graph pass 'break_graph'"));
  assert_non_null(strstr(wf_status_message(st), "cycle"));
  wf_graph_free(c.g);
  chain d = make_chain(rt, "fail_me");
  assert_int_equal(run_chain(&d, out), WF_INTERNAL);
  assert_non_null(strstr(wf_status_message(st), "graph pass 'fail'"));
  assert_non_null(strstr(wf_status_message(st), "gave up"));
  wf_graph_free(d.g);
  wf_runtime_free(rt);
}

/* What a pass replaced is dropped before the next pass runs (with dead-node
 * removal on): double_neg replaces the outer Neg, fail_me, so the fail
 * pass after it no longer finds it and, under strict, the run succeeds;
 * with [passes] dead_nodes = false the replaced node is still there. */
static void test_replaced_nodes_are_gone_before_the_next_pass(void **state) {
  (void)state;
  static const char *const strict[] = {"plugins", "strict", "true"};
  wf_runtime *rt = runtime_with(strict, 3);
  chain c = make_chain(rt, "fail_me");
  float out[3];
  clear_log();
  OK(run_chain(&c, out));
  assert_true(ran("double_neg") >= 1);
  assert_true(ran("fail") >= 1);
  expect_exp(out);
  wf_graph_free(c.g);
  wf_runtime_free(rt);

  static const char *const keep[] = {"plugins", "strict", "true",
                                     "passes", "dead_nodes", "false"};
  rt = runtime_with(keep, 6);
  c = make_chain(rt, "fail_me");
  assert_int_equal(run_chain(&c, out), WF_INTERNAL);
  assert_non_null(strstr(wf_status_message(st), "graph pass 'fail'"));
  wf_graph_free(c.g);
  wf_runtime_free(rt);
}

static void test_failing_plugin_pass_change_is_undone(void **state) {
  (void)state;
  wf_runtime *rt = runtime_with(no_double_neg, 3);
  chain c = make_chain(rt, "fail_me");
  float out[3];
  clear_log();
  OK(run_chain(&c, out));
  assert_true(ran("fail") >= 1);
  expect_exp(out);
  char *dir = temp_dir();
  char cmd[256];
  /* The node the failing pass added is gone from every later dump; the
   * chain's own two Negs stay (double_neg is off). */
  assert_int_equal(negs_in_dump(&c, dir, "99-partitioned.dot"), 2);
  snprintf(cmd, sizeof cmd, "grep -q fail_added %s/99-partitioned.dot", dir);
  assert_int_not_equal(system(cmd), 0);
  remove_dir(dir);
  wf_graph_free(c.g);
  wf_runtime_free(rt);
}

static void test_plugin_pass_switch_value_checked(void **state) {
  (void)state;
  wf_config *cfg = wf_config_new();
  assert_int_equal(wf_config_set(cfg, "passes", "double_neg", "maybe", st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "double_neg"));
  /* Switched off, then on again: it runs. */
  OK(wf_config_set(cfg, "plugins", "paths", PASS_PLUGIN, st));
  OK(wf_config_set(cfg, "passes", "double_neg", "false", st));
  OK(wf_config_set(cfg, "passes", "double_neg", "true", st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  assert_non_null(rt);
  chain c = make_chain(rt, "y");
  float out[3];
  clear_log();
  OK(run_chain(&c, out));
  assert_true(ran("double_neg") >= 1);
  wf_graph_free(c.g);
  wf_runtime_free(rt);
}

int main(void) {
  st = wf_status_new();
  snprintf(logpath, sizeof logpath, "/tmp/weft-pass-log.%ld", (long)getpid());
  setenv("WEFT_TEST_PASS_LOG", logpath, 1);
  setenv("WEFT_LOG_LEVEL", "error", 1); /* the undone passes' warnings */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plugin_pass_fires_and_keeps_values),
      cmocka_unit_test(test_plugin_pass_switched_off_by_name),
      cmocka_unit_test(test_plugin_pass_leaving_a_cycle_is_undone),
      cmocka_unit_test(test_plugin_pass_errors_under_strict),
      cmocka_unit_test(test_failing_plugin_pass_change_is_undone),
      cmocka_unit_test(test_replaced_nodes_are_gone_before_the_next_pass),
      cmocka_unit_test(test_plugin_pass_switch_value_checked),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  clear_log();
  wf_status_free(st);
  return rc;
}
