/* tests/session/test_placement.c — placement with the test plugin's devices
 * (cpu:0; accel:0 available, accel:1 unavailable "no driver"): the config's
 * order, explicit requests, soft placement recorded in run metadata, and
 * the error when no device has a kernel. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

static wf_status *st;

static wf_runtime *runtime(const char *order) {
  wf_config *cfg = wf_config_new();
  assert_int_equal(wf_config_set(cfg, "plugins", "paths",
                                 TEST_BUILDDIR "/tests/session/.libs", st),
                   0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st), 0);
  if (order)
    assert_int_equal(wf_config_set(cfg, "devices", "order", order, st), 0);
  wf_runtime *rt = wf_runtime_new(cfg, st);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  wf_config_free(cfg);
  return rt;
}

static wf_node *node(wf_graph *g, const char *op, const char *name,
                     wf_node *in, const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  if (in)
    wf_node_desc_add_input(d, (wf_output){in, 0});
  if (!in)
    wf_node_desc_set_attr_float(d, "value", 1.0);
  if (device)
    wf_node_desc_set_device(d, device);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", name, wf_status_message(st));
  return n;
}

/* Runs fetch with tracing; returns the metadata (caller frees). */
static wf_run_metadata *run_traced(wf_graph *g, wf_node *fetch) {
  wf_session *s = wf_session_new(g, st);
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.trace_level = WF_TRACE_NODES;
  wf_run_metadata *md = wf_run_metadata_new();
  wf_output out = {fetch, 0};
  wf_tensor *v = NULL;
  if (wf_session_run(s, &opt, NULL, NULL, 0, &out, &v, 1, NULL, 0, md, st))
    fail_msg("run: %s", wf_status_message(st));
  wf_tensor_release(v);
  wf_session_free(s);
  return md;
}

static const char *device_of(const wf_run_metadata *md, const char *name) {
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    if (strcmp(ns.node, name) == 0)
      return ns.device;
  }
  return NULL;
}

static void test_config_order_decides_by_default(void **state) {
  (void)state;
  wf_runtime *rt = runtime("accel, cpu");
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = node(g, "TSrc", "a", NULL, NULL);
  wf_node *b = node(g, "TInc", "b", a, NULL);
  wf_run_metadata *md = run_traced(g, b);
  assert_string_equal(device_of(md, "b"), "accel:0"); /* preferred */
  assert_string_equal(device_of(md, "a"), "cpu:0");   /* only kernel there */
  assert_int_equal(wf_run_metadata_num_placements(md), 0);
  wf_run_metadata_free(md);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

static void test_explicit_request_is_honoured(void **state) {
  (void)state;
  wf_runtime *rt = runtime(NULL);
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = node(g, "TSrc", "a", NULL, NULL);
  wf_node *b = node(g, "TInc", "b", a, "accel:0");
  wf_node *c = node(g, "TInc", "c", b, "/device:ACCEL:0");
  wf_node *d = node(g, "TInc", "d", c, "cpu");
  wf_run_metadata *md = run_traced(g, d);
  assert_string_equal(device_of(md, "a"), "cpu:0");
  assert_string_equal(device_of(md, "b"), "accel:0");
  assert_string_equal(device_of(md, "c"), "accel:0");
  assert_string_equal(device_of(md, "d"), "cpu:0");
  assert_int_equal(wf_run_metadata_num_placements(md), 0);
  wf_run_metadata_free(md);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

static void expect_fallback(wf_run_metadata *md, const char *name,
                            const char *requested, const char *device,
                            const char *reason_part) {
  for (int i = 0; i < wf_run_metadata_num_placements(md); i++) {
    wf_placement_info p;
    wf_run_metadata_placement(md, i, &p);
    if (strcmp(p.node, name) != 0)
      continue;
    assert_string_equal(p.requested, requested);
    assert_string_equal(p.device, device);
    if (!strstr(p.reason, reason_part))
      fail_msg("reason for %s: '%s' lacks '%s'", name, p.reason, reason_part);
    return;
  }
  fail_msg("no placement record for node '%s'", name);
}

static void test_unmet_requests_fall_back_and_are_recorded(void **state) {
  (void)state;
  wf_runtime *rt = runtime(NULL);
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = node(g, "TSrc", "on_accel", NULL, "accel:0"); /* no kernel */
  wf_node *b = node(g, "TInc", "on_broken", a, "accel:1");   /* unavailable */
  wf_node *c = node(g, "TInc", "on_unknown", b, "gpu:3");    /* no such */
  wf_run_metadata *md = run_traced(g, c);
  assert_int_equal(wf_run_metadata_num_placements(md), 3);
  expect_fallback(md, "on_accel", "accel:0", "cpu:0", "no kernel");
  expect_fallback(md, "on_broken", "accel:1", "cpu:0", "no driver");
  expect_fallback(md, "on_unknown", "gpu:3", "cpu:0", "no device 'gpu:3'");
  assert_string_equal(device_of(md, "on_broken"), "cpu:0");
  wf_run_metadata_free(md);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

static void test_no_device_with_a_kernel_is_an_error(void **state) {
  (void)state;
  wf_runtime *rt = runtime(NULL);
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = node(g, "TSrc", "a", NULL, NULL);
  wf_node *b = node(g, "TGhost", "haunted", a, NULL);
  wf_session *s = wf_session_new(g, st);
  wf_output out = {b, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st),
      WF_NOT_FOUND);
  const char *m = wf_status_message(st);
  assert_non_null(strstr(m, "haunted"));
  assert_non_null(strstr(m, "TGhost"));
  assert_non_null(strstr(m, "kernels for ghost"));
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* A chain hopping between cpu:0 and accel:0 gives what one device gives,
 * also with a control edge across devices and from 8 threads at once. */
static void test_partitions_exchange_tensors(void **state) {
  (void)state;
  wf_runtime *rt = runtime(NULL);
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = node(g, "TSrc", "a", NULL, NULL);
  wf_node *n = a;
  for (int i = 0; i < 6; i++) {
    char name[16];
    snprintf(name, sizeof name, "hop%d", i);
    n = node(g, "TInc", name, n, i % 2 ? "cpu:0" : "accel:0");
  }
  /* a counter on cpu:0 that must run before the last hop (accel:0) */
  wf_node_desc *d = wf_node_desc_new(g, "TCount", "side");
  wf_node_desc_set_device(d, "cpu:0");
  wf_node *side = wf_node_desc_finish(d, st);
  assert_non_null(side);
  d = wf_node_desc_new(g, "TInc", "last");
  wf_node_desc_add_input(d, (wf_output){n, 0});
  wf_node_desc_add_control_input(d, side);
  wf_node_desc_set_device(d, "accel:0");
  wf_node *last = wf_node_desc_finish(d, st);
  assert_non_null(last);
  wf_run_metadata *md = run_traced(g, last);
  assert_string_equal(device_of(md, "hop0"), "accel:0");
  assert_string_equal(device_of(md, "hop1"), "cpu:0");
  assert_string_equal(device_of(md, "side"), "cpu:0");
  int sends = 0, recvs = 0, ctl = 0;
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    sends += strcmp(ns.op, "_Send") == 0;
    recvs += strcmp(ns.op, "_Recv") == 0;
    ctl += strcmp(ns.op, "_RecvControl") == 0;
  }
  assert_int_equal(sends, 7); /* a->hop0, five hops, hop5->last */
  assert_int_equal(recvs, 7);
  assert_int_equal(ctl, 1);
  wf_run_metadata_free(md);

  wf_session *s = wf_session_new(g, st);
  wf_output out = {last, 0};
  for (int i = 0; i < 50; i++) {
    wf_tensor *v = NULL;
    if (wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st))
      fail_msg("run %d: %s", i, wf_status_message(st));
    assert_true(*(float *)wf_tensor_data(v) == 8.0f);
    wf_tensor_release(v);
  }
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

/* A failure in one partition ends the step in the other instead of
 * leaving its _Recv waiting. */
static void test_failure_in_one_partition_ends_the_step(void **state) {
  (void)state;
  wf_runtime *rt = runtime(NULL);
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = node(g, "TSrc", "a", NULL, NULL);
  wf_node *bad = node(g, "TFail", "bad", a, "cpu:0");
  wf_node *c = node(g, "TInc", "c", bad, "accel:0");
  wf_session *s = wf_session_new(g, st);
  wf_output out = {c, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "'bad'"));
  assert_null(v);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void test_dot_files_show_passes_and_partitions(void **state) {
  (void)state;
  wf_runtime *rt = runtime(NULL);
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = node(g, "TSrc", "a", NULL, NULL);
  wf_node *b = node(g, "TInc", "b", a, "accel:0");
  wf_node *c = node(g, "TInc", "c", b, "cpu:0");
  char dir[] = "/tmp/weft-dot-XXXXXX";
  assert_non_null(mkdtemp(dir));
  wf_output fetch = {c, 0};
  assert_int_equal(wf_graph_write_dot_passes(g, NULL, 0, &fetch, 1, NULL, 0,
                                             dir, st),
                   0);
  char path[128];
  snprintf(path, sizeof path, "%s/00-graph.dot", dir);
  char *txt = slurp(path);
  assert_non_null(txt);
  assert_non_null(strstr(txt, "digraph"));
  assert_non_null(strstr(txt, "TInc"));
  snprintf(path, sizeof path, "%s/01-pruned.dot", dir);
  assert_non_null(slurp(path));
  snprintf(path, sizeof path, "%s/99-partitioned.dot", dir);
  txt = slurp(path);
  assert_non_null(txt);
  assert_non_null(strstr(txt, "cluster_"));
  assert_non_null(strstr(txt, "accel:0"));
  assert_non_null(strstr(txt, "_Send"));
  assert_non_null(strstr(txt, "_Recv"));
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(wf_graph_write_dot(g, "/nonexistent/x.dot", st),
                   WF_PERMISSION_DENIED);
  assert_non_null(strstr(wf_status_message(st), "/nonexistent/x.dot"));
  wf_graph_free(g);
  wf_runtime_free(rt);
}

int main(void) {
  st = wf_status_new();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_order_decides_by_default),
      cmocka_unit_test(test_explicit_request_is_honoured),
      cmocka_unit_test(test_unmet_requests_fall_back_and_are_recorded),
      cmocka_unit_test(test_no_device_with_a_kernel_is_an_error),
      cmocka_unit_test(test_partitions_exchange_tensors),
      cmocka_unit_test(test_failure_in_one_partition_ends_the_step),
      cmocka_unit_test(test_dot_files_show_passes_and_partitions),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  wf_status_free(st);
  return rc;
}
