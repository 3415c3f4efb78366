/* tests/devices/test_device_memory.c — tensors in the memory of a device
 * that has its own (ABI 1.2's wf_device_def.copy), without a GPU: the
 * test-memdev plugin (tests/devices/memdev.c) stores values complemented
 * in registered blocks, so a tensor the core forgot to move, or read as
 * host memory, gives wrong values or a kernel error naming the input.
 *
 * Checked: feeds reach memdev kernels in device memory and fetches come
 * back in host memory, with exact values; transfers between cpu:0 and
 * memdev:0 both ways; a chain of memdev kernels makes no copies between
 * its nodes; inputs and outputs a kernel marks as host memory stay on the
 * host; kernel_device_state; a variable updated on memdev:0 lives there
 * between steps (no copies per step but the feeds and fetches), matches
 * the same training on the CPU, and saves to and restores from a
 * checkpoint; a failing copy fails the step with an error naming the node
 * and the copy. All values are exact (float32 sums of small integers). */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PLUGIN_DIRS                                                            \
  TEST_BUILDDIR "/tests/devices/.libs, " TEST_BUILDDIR                         \
                "/plugins/devices/cpu/.libs, " TEST_BUILDDIR                   \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/train/.libs"

static wf_runtime *rt;
static wf_status *st;

static wf_tensor *vec(const float *v, int64_t n) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, &n, 1, st);
  assert_non_null(t);
  memcpy(wf_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}

static wf_tensor *scalar(float v) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  assert_non_null(t);
  *(float *)wf_tensor_data(t) = v;
  return t;
}

static wf_output placeholder(wf_graph *g, const char *name, int64_t n) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node *nd;
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", &n, 1);
  nd = wf_node_desc_finish(d, st);
  if (!nd)
    fail_msg("Placeholder: %s", wf_status_message(st));
  return (wf_output){nd, 0};
}

static wf_node *node(wf_graph *g, const char *op, const char *name,
                     const wf_output *in, int nin, const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node *n;
  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  if (device)
    wf_node_desc_set_device(d, device);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", name, wf_status_message(st));
  return n;
}

static wf_output out0(wf_node *n) { return (wf_output){n, 0}; }

/* memdev:0's counters through MemdevStats: [0] blocks alive, [1] copies
 * in, [2] copies out, [3] copies on the device, [4] bytes alive. */
static void stats(int64_t v[5]) {
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = node(g, "MemdevStats", "stats", NULL, 0, "cpu:0");
  wf_session *s = wf_session_new(g, st);
  wf_output f = out0(n);
  wf_tensor *t = NULL;
  assert_non_null(s);
  if (wf_session_run(s, NULL, NULL, NULL, 0, &f, &t, 1, NULL, 0, NULL, st))
    fail_msg("stats: %s", wf_status_message(st));
  memcpy(v, wf_tensor_data(t), 5 * sizeof *v);
  wf_tensor_release(t);
  wf_session_free(s);
  wf_graph_free(g);
}

/* Checks in md that node ran on device. */
static void expect_ran_on(const wf_run_metadata *md, const char *name,
                          const char *device) {
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    if (strcmp(ns.node, name) != 0)
      continue;
    if (strcmp(ns.device, device) != 0)
      fail_msg("%s ran on %s, not %s", name, ns.device, device);
    return;
  }
  fail_msg("node %s did not run", name);
}

static void expect_values(const wf_tensor *t, const float *want, int64_t n) {
  assert_int_equal(wf_tensor_dtype(t), WF_FLOAT32);
  assert_int_equal(wf_tensor_count(t), n);
  for (int64_t i = 0; i < n; i++)
    if (((const float *)wf_tensor_data(t))[i] != want[i])
      fail_msg("element %lld: %g, want %g", (long long)i,
               (double)((const float *)wf_tensor_data(t))[i],
               (double)want[i]);
}

/* x, y fed -> Add (memdev) -> Relu (memdev) -> Add with x on cpu:0 ->
 * Sum (memdev); fetches from both devices, and Shape of the memdev Relu
 * written on the host. */
static void test_feeds_transfers_and_fetches(void **unused) {
  static const float xv[6] = {1, -2, 3, -4, 5, -6}, yv[6] = {2, 1, -5, 2, 1, 1};
  float sum[6], relu[6], total = 0;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", 6), y = placeholder(g, "y", 6);
  wf_node *add = node(g, "Add", "add", (wf_output[]){x, y}, 2, "memdev:0");
  wf_node *act = node(g, "Relu", "relu", (wf_output[]){out0(add)}, 1,
                      "memdev:0");
  wf_node *back = node(g, "Add", "back", (wf_output[]){out0(act), x}, 2,
                       "cpu:0");
  wf_node *red = node(g, "Sum", "sum", (wf_output[]){out0(back)}, 1,
                      "memdev:0");
  wf_node_desc *sd = wf_node_desc_new(g, "Shape", "shape");
  wf_node *shp;
  wf_tensor *feeds[2] = {vec(xv, 6), vec(yv, 6)}, *got[4] = {NULL};
  wf_output fetch[4];
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();
  wf_session *s;
  int64_t before[5], after[5];
  (void)unused;

  wf_node_desc_add_input(sd, out0(act));
  wf_node_desc_set_attr_dtype(sd, "out_type", WF_INT64);
  wf_node_desc_set_device(sd, "memdev:0");
  assert_non_null(shp = wf_node_desc_finish(sd, st));
  fetch[0] = out0(act);
  fetch[1] = out0(back);
  fetch[2] = out0(red);
  fetch[3] = out0(shp);
  for (int i = 0; i < 6; i++) {
    relu[i] = xv[i] + yv[i] > 0 ? xv[i] + yv[i] : 0;
    sum[i] = relu[i] + xv[i];
    total += sum[i];
  }
  assert_non_null(s = wf_session_new(g, st));
  opt.trace_level = WF_TRACE_NODES;
  stats(before);
  if (wf_session_run(s, &opt, (wf_output[]){x, y}, feeds, 2, fetch, got, 4,
                     NULL, 0, md, st))
    fail_msg("run: %s", wf_status_message(st));
  stats(after);
  expect_values(got[0], relu, 6);
  expect_values(got[1], sum, 6);
  expect_values(got[2], &total, 1);
  assert_int_equal(wf_tensor_dtype(got[3]), WF_INT64);
  assert_int_equal(((const int64_t *)wf_tensor_data(got[3]))[0], 6);
  expect_ran_on(md, "add", "memdev:0");
  expect_ran_on(md, "relu", "memdev:0");
  expect_ran_on(md, "back", "cpu:0");
  expect_ran_on(md, "sum", "memdev:0");
  expect_ran_on(md, "shape", "memdev:0");
  /* In: x and y for add, back's result for sum (x reaches back on the
   * host). Out: relu for back and for the fetch may share one copy or
   * not, sum's fetch; nothing between add and relu. */
  assert_int_equal(after[1] - before[1], 3);
  assert_true(after[2] - before[2] >= 2 && after[2] - before[2] <= 3);
  for (int i = 0; i < 4; i++)
    wf_tensor_release(got[i]);
  wf_tensor_release(feeds[0]);
  wf_tensor_release(feeds[1]);
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_graph_free(g);
  /* Everything the step made on the device was given back. */
  stats(after);
  assert_int_equal(after[0], before[0]);
  assert_int_equal(after[4], before[4]);
}

/* A variable of 4 floats trained with ApplyGradientDescent on `device`
 * (grad fed, lr a constant on the CPU): returns the value after `steps`
 * steps and, when ckpt is set, saves it there. */
typedef struct trained {
  float value[4];
  int64_t copies_in_last_step, copies_out_last_step;
} trained;

static wf_graph *training_graph(const char *device, wf_output *grad,
                                wf_node **init, wf_node **apply,
                                wf_node **read) {
  static const float start[4] = {1, 2, 3, 4};
  wf_graph *g = wf_graph_new(rt);
  int64_t four = 4;
  wf_node_desc *d = wf_node_desc_new(g, "VarHandle", "w");
  wf_node *h, *c, *lr;
  wf_tensor *cv = vec(start, 4), *lv = scalar(0.5f);

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", &four, 1);
  wf_node_desc_set_device(d, device);
  assert_non_null(h = wf_node_desc_finish(d, st));
  d = wf_node_desc_new(g, "Const", "start");
  wf_node_desc_set_attr_tensor(d, "value", cv);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_device(d, "cpu:0");
  assert_non_null(c = wf_node_desc_finish(d, st));
  d = wf_node_desc_new(g, "Const", "lr");
  wf_node_desc_set_attr_tensor(d, "value", lv);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_device(d, "cpu:0");
  assert_non_null(lr = wf_node_desc_finish(d, st));
  wf_tensor_release(cv);
  wf_tensor_release(lv);
  *init = node(g, "AssignVariable", "init", (wf_output[]){out0(h), out0(c)}, 2,
               device);
  *grad = placeholder(g, "grad", 4);
  *apply = node(g, "ApplyGradientDescent", "apply",
                (wf_output[]){out0(h), out0(lr), *grad}, 3, device);
  d = wf_node_desc_new(g, "ReadVariable", "read");
  wf_node_desc_add_input(d, out0(h));
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", &four, 1);
  wf_node_desc_set_device(d, device);
  assert_non_null(*read = wf_node_desc_finish(d, st));
  return g;
}

static void train(const char *device, int steps, const char *ckpt,
                  trained *out) {
  wf_output grad;
  wf_node *init, *apply, *read;
  wf_graph *g = training_graph(device, &grad, &init, &apply, &read);
  wf_session *s = wf_session_new(g, st);
  wf_output r;
  wf_tensor *v = NULL;
  int64_t a[5], b[5];

  assert_non_null(s);
  if (wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                     st))
    fail_msg("init on %s: %s", device, wf_status_message(st));
  for (int k = 0; k < steps; k++) {
    float gv[4] = {(float)k, 1, -2, 0.5f};
    wf_tensor *gt = vec(gv, 4);
    stats(a);
    if (wf_session_run(s, NULL, &grad, &gt, 1, NULL, NULL, 0, &apply, 1,
                       NULL, st))
      fail_msg("step %d on %s: %s", k, device, wf_status_message(st));
    stats(b);
    out->copies_in_last_step = b[1] - a[1];
    out->copies_out_last_step = b[2] - a[2];
    wf_tensor_release(gt);
  }
  r = out0(read);
  if (wf_session_run(s, NULL, NULL, NULL, 0, &r, &v, 1, NULL, 0, NULL, st))
    fail_msg("read on %s: %s", device, wf_status_message(st));
  memcpy(out->value, wf_tensor_data(v), sizeof out->value);
  wf_tensor_release(v);
  if (ckpt && wf_session_save(s, ckpt, NULL, st))
    fail_msg("save: %s", wf_status_message(st));
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_variable_lives_on_the_device(void **unused) {
  trained cpu, dev;
  (void)unused;
  train("cpu:0", 4, NULL, &cpu);
  train("memdev:0", 4, NULL, &dev);
  for (int i = 0; i < 4; i++)
    assert_true(cpu.value[i] == dev.value[i]);
  /* After the first update the variable stays in memdev memory: a step
   * copies in only the fed gradient, and nothing out. */
  assert_int_equal(dev.copies_in_last_step, 1);
  assert_int_equal(dev.copies_out_last_step, 0);
}

/* The same through var_lock without a kernel context, as plugins built
 * before ABI 1.4 lock variables. */
static void test_variable_lives_on_the_device_old_lock(void **unused) {
  setenv("MEMDEV_OLD_VAR_LOCK", "1", 1);
  test_variable_lives_on_the_device(unused);
  unsetenv("MEMDEV_OLD_VAR_LOCK");
}

static void test_checkpoint_of_a_device_variable(void **unused) {
  char path[] = "/tmp/weft-memdev-XXXXXX";
  char file[64];
  trained dev;
  wf_output grad, r;
  wf_node *init, *apply, *read;
  wf_graph *g;
  wf_session *s;
  wf_tensor *v = NULL;
  int fd = mkstemp(path);
  (void)unused;

  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  snprintf(file, sizeof file, "%s.ckpt", path);
  train("memdev:0", 3, file, &dev);
  /* A new session restores the value and reads it on the device. */
  g = training_graph("memdev:0", &grad, &init, &apply, &read);
  assert_non_null(s = wf_session_new(g, st));
  if (wf_session_restore(s, file, NULL, st))
    fail_msg("restore: %s", wf_status_message(st));
  r = out0(read);
  if (wf_session_run(s, NULL, NULL, NULL, 0, &r, &v, 1, NULL, 0, NULL, st))
    fail_msg("read: %s", wf_status_message(st));
  expect_values(v, dev.value, 4);
  wf_tensor_release(v);
  wf_session_free(s);
  wf_graph_free(g);
  unlink(file);
}

static void test_a_failed_copy_fails_the_step_naming_it(void **unused) {
  static const float xv[2] = {1, 2};
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", 2);
  wf_node *add = node(g, "Add", "add2", (wf_output[]){x, x}, 2, "memdev:0");
  wf_output f = out0(add);
  wf_tensor *in = vec(xv, 2), *got = NULL;
  wf_session *s = wf_session_new(g, st);
  int rc;
  (void)unused;

  assert_non_null(s);
  setenv("MEMDEV_FAIL_COPY", "1", 1);
  rc = wf_session_run(s, NULL, &x, &in, 1, &f, &got, 1, NULL, 0, NULL, st);
  unsetenv("MEMDEV_FAIL_COPY");
  assert_int_equal(rc, WF_UNAVAILABLE);
  assert_null(got);
  if (!strstr(wf_status_message(st), "node 'add2'") ||
      !strstr(wf_status_message(st), "memdev:0") ||
      !strstr(wf_status_message(st), "copy refused"))
    fail_msg("unexpected message: %s", wf_status_message(st));
  /* The next step works. */
  if (wf_session_run(s, NULL, &x, &in, 1, &f, &got, 1, NULL, 0, NULL, st))
    fail_msg("after the failure: %s", wf_status_message(st));
  expect_values(got, (const float[]){2, 4}, 2);
  wf_tensor_release(got);
  wf_tensor_release(in);
  wf_session_free(s);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_feeds_transfers_and_fetches),
      cmocka_unit_test(test_variable_lives_on_the_device),
      cmocka_unit_test(test_variable_lives_on_the_device_old_lock),
      cmocka_unit_test(test_checkpoint_of_a_device_variable),
      cmocka_unit_test(test_a_failed_copy_fails_the_step_naming_it),
  };
  wf_config *cfg = wf_config_new();
  int rc = 1;

  st = wf_status_new();
  if (!cfg || !st ||
      wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths", PLUGIN_DIRS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "kernels", "prefer", "reference", st) ||
      !(rt = wf_runtime_new(cfg, st))) {
    fprintf(stderr, "cannot load the plugins: %s\n",
            st ? wf_status_message(st) : "out of memory");
    goto out;
  }
  rc = cmocka_run_group_tests(tests, NULL, NULL);

out:
  wf_runtime_free(rt);
  wf_config_free(cfg);
  wf_status_free(st);
  return rc;
}
