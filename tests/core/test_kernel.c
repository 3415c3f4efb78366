/* tests/core/test_kernel.c — kernel selection and kernel contexts: the
 * test-good plugin's kernels run through wf__kernel_run on graph nodes
 * (synchronously and asynchronously), errors name node, op and device
 * type, and the host table's kernel_* entries check what kernels ask. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph/graph_internal.h"
#include "base/log.h"
#include "host/host.h"
#include "exec/kernel.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

#define GOOD_PLUGIN TEST_PLUGIN_DIR "/good.so"

/* ---- fixtures
 * ---------------------------------------------------------------- */

/* In-process kernels for TestScale on device type "inproc", to reach the
 * paths test-good's kernels never take. */
static int creates, destroys;

static int inproc_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  static int token;
  wf_attr_value v;
  if (wf__host()->kernel_attr(ctx, "scale", &v) == 0 && v.u.f == 7.0) {
    wf__host()->status_set(st, WF_INVALID_ARGUMENT, "scale 7 is unlucky");
    return WF_INVALID_ARGUMENT;
  }
  creates++;
  *state = &token;
  return 0;
}

static void inproc_destroy(void *state) {
  assert_non_null(state);
  destroys++;
}

/* Forgets to set its output. */
static int inproc_no_output(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)ctx;
  (void)st;
  assert_non_null(state);
  return 0;
}

static const wf_kernel_def inproc_kernel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "TestScale",
    .device_type = "inproc",       .label = "lazy",
    .create = inproc_create,       .compute = inproc_no_output,
    .destroy = inproc_destroy};

/* Fails without saying why. */
static int silent_failure(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)ctx;
  (void)state;
  (void)st;
  return 5;
}

static const wf_kernel_def silent_kernel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "TestScale", .device_type = "silent",
    .compute = silent_failure};

static const wf_kernel_def *const inproc_kernels[] = {&inproc_kernel,
                                                      &silent_kernel, NULL};
static const char *const inproc_requires[] = {"test-good", NULL};
static const wf_plugin_desc inproc_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc), .name = "inproc-kernels",
    .requires = inproc_requires, .kernels = inproc_kernels};

typedef struct fixture {
  wf_runtime *rt;
  wf_graph *g;
  wf_node *src;   /* TestSource float32 (2, 3) */
  wf_node *scale; /* TestScale of src, scale 3 */
  wf_status *st;
} fixture;

static wf_node *add_source(fixture *f, const char *name, wf_dtype dtype) {
  const int64_t dims[] = {2, 3};
  wf_node_desc *d = wf_node_desc_new(f->g, "TestSource", name);
  wf_node *n;
  wf_node_desc_set_attr_dtype(d, "T", dtype);
  wf_node_desc_set_attr_shape(d, "shape", dims, 2);
  n = wf_node_desc_finish(d, f->st);
  if (!n)
    fail_msg("adding %s: %s", name, wf_status_message(f->st));
  return n;
}

static wf_node *add_scale(fixture *f, const char *name, wf_node *in,
                          double scale) {
  wf_node_desc *d = wf_node_desc_new(f->g, "TestScale", name);
  wf_node *n;
  wf_node_desc_add_input(d, (wf_output){in, 0});
  wf_node_desc_set_attr_float(d, "scale", scale);
  n = wf_node_desc_finish(d, f->st);
  if (!n)
    fail_msg("adding %s: %s", name, wf_status_message(f->st));
  return n;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  wf_config *cfg = wf_config_new();
  assert_non_null(f);
  f->st = wf_status_new();
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", GOOD_PLUGIN, f->st),
                   WF_OK);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_env_path", "false", f->st), WF_OK);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_default_dir", "false", f->st), WF_OK);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", f->st),
                   WF_OK);
  f->rt = wf_runtime_new(cfg, f->st);
  wf_config_free(cfg);
  if (!f->rt)
    fail_msg("runtime: %s", wf_status_message(f->st));
  assert_int_equal(
      wf__runtime_add_plugin(f->rt, &inproc_plugin, NULL, NULL, f->st), WF_OK);
  f->g = wf_graph_new(f->rt);
  assert_non_null(f->g);
  f->src = add_source(f, "src", WF_FLOAT32);
  f->scale = add_scale(f, "scaled", f->src, 3.0);
  creates = destroys = 0;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  wf_graph_free(f->g);
  wf_runtime_free(f->rt);
  wf_status_free(f->st);
  free(f);
  return 0;
}

/* A float32 tensor of the given shape holding 1, 2, 3, ... */
static wf_tensor *counting_tensor(const int64_t *dims, int rank,
                                  wf_status *st) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, rank, st);
  float *p;
  assert_non_null(t);
  p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    p[i] = (float)(i + 1);
  return t;
}

static void assert_contains(const char *message, const char *fragment) {
  if (!strstr(message, fragment))
    fail_msg("message lacks \"%s\": %s", fragment, message);
}

/* ---- selection
 * ---------------------------------------------------------------- */

static void test_kernel_select_picks_by_device_type(void **state) {
  fixture *f = *state;
  const wf__kernel *k;
  k = wf__kernel_select(f->rt, f->scale, "testdev", f->st);
  assert_non_null(k);
  assert_string_equal(k->def.label, "test-reference");
  assert_string_equal(k->plugin, "test-good");
  k = wf__kernel_select(f->rt, f->scale, "testasync", f->st);
  assert_non_null(k);
  assert_string_equal(k->def.label, "test-async");
}

static void
test_kernel_select_names_node_op_and_device_when_none(void **state) {
  fixture *f = *state;
  assert_null(wf__kernel_select(f->rt, f->scale, "gpu", f->st));
  assert_int_equal(wf_status_code(f->st), WF_NOT_FOUND);
  assert_string_equal(wf_status_message(f->st),
                      "node 'scaled' (op 'TestScale'): no kernel registered "
                      "for device type 'gpu'");
}

static void
test_kernel_select_honours_the_dtype_of_the_type_attr(void **state) {
  fixture *f = *state;
  wf_node *src64 = add_source(f, "src64", WF_FLOAT64);
  wf_node *scale64 = add_scale(f, "scaled64", src64, 1.0);
  assert_null(wf__kernel_select(f->rt, scale64, "testdev", f->st));
  assert_int_equal(wf_status_code(f->st), WF_NOT_FOUND);
  assert_string_equal(wf_status_message(f->st),
                      "node 'scaled64' (op 'TestScale'): no kernel on device "
                      "type 'testdev' for its dtypes; kernels there take "
                      "T=float32 (node has float64)");
}

/* ---- running
 * -------------------------------------------------------------------- */

static void run_scale_on(fixture *f, const char *device_type) {
  const int64_t dims[] = {2, 3};
  wf_tensor *x = counting_tensor(dims, 2, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  const wf__kernel *k = wf__kernel_select(f->rt, f->scale, device_type, f->st);
  wf_shape s;
  const float *y;

  assert_non_null(k);
  assert_int_equal(wf__kernel_run(k, f->scale, inputs, outputs, f->st), WF_OK);
  assert_non_null(outputs[0]);
  assert_int_equal(wf_tensor_dtype(outputs[0]), WF_FLOAT32);
  wf_tensor_shape(outputs[0], &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], 2);
  assert_int_equal(s.dims[1], 3);
  y = wf_tensor_data(outputs[0]);
  for (int i = 0; i < 6; i++)
    assert_float_equal(y[i], 3.0f * (float)(i + 1), 0.0f);
  wf_tensor_release(outputs[0]);
  wf_tensor_release(x);
}

static void test_kernel_run_computes_the_output(void **state) {
  run_scale_on(*state, "testdev");
}

static void test_kernel_run_waits_for_async_kernel(void **state) {
  fixture *f = *state;
  /* Several times: the kernel may finish before or after compute returns. */
  for (int i = 0; i < 20; i++)
    run_scale_on(f, "testasync");
}

static void test_kernel_error_names_node_op_and_device(void **state) {
  fixture *f = *state;
  const int64_t dims[] = {2, 3};
  wf_node *bad = add_scale(f, "negative", f->src, -1.0);
  wf_tensor *x = counting_tensor(dims, 2, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  const wf__kernel *k = wf__kernel_select(f->rt, bad, "testdev", f->st);

  assert_non_null(k);
  assert_int_equal(wf__kernel_run(k, bad, inputs, outputs, f->st),
                   WF_INVALID_ARGUMENT);
  assert_null(outputs[0]);
  assert_string_equal(wf_status_message(f->st),
                      "node 'negative' (op 'TestScale') on device type "
                      "'testdev', kernel 'test-reference' of plugin "
                      "'test-good': scale must be >= 0, got -1");
  /* The asynchronous kernel fails before it starts: same report. */
  k = wf__kernel_select(f->rt, bad, "testasync", f->st);
  assert_int_equal(wf__kernel_run(k, bad, inputs, outputs, f->st),
                   WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(f->st), "node 'negative'");
  assert_contains(wf_status_message(f->st), "'testasync'");
  assert_null(outputs[0]);
  wf_tensor_release(x);
}

static void test_kernel_run_refuses_input_of_wrong_dtype(void **state) {
  fixture *f = *state;
  const int64_t dims[] = {2, 3};
  wf_tensor *x = wf_tensor_new(WF_FLOAT64, dims, 2, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  const wf__kernel *k = wf__kernel_select(f->rt, f->scale, "testdev", f->st);
  assert_int_equal(wf__kernel_run(k, f->scale, inputs, outputs, f->st),
                   WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(f->st), "node 'scaled' (op 'TestScale')");
  assert_contains(wf_status_message(f->st),
                  "input 0 is a float64 tensor, the node takes float32");
  wf_tensor_release(x);
}

static void test_kernel_run_checks_output_against_inferred_shape(void **state) {
  fixture *f = *state;
  const int64_t dims[] = {4};
  wf_tensor *x = counting_tensor(dims, 1, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  const wf__kernel *k = wf__kernel_select(f->rt, f->scale, "testdev", f->st);
  assert_int_equal(wf__kernel_run(k, f->scale, inputs, outputs, f->st),
                   WF_INTERNAL);
  assert_null(outputs[0]);
  assert_contains(wf_status_message(f->st), "node 'scaled'");
  assert_contains(wf_status_message(f->st),
                  "output 0 has shape (4), but shape inference said (2, 3)");
  wf_tensor_release(x);
}

static void
test_kernel_run_reports_missing_output_and_destroys_state(void **state) {
  fixture *f = *state;
  const int64_t dims[] = {2, 3};
  wf_tensor *x = counting_tensor(dims, 2, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  const wf__kernel *k = wf__kernel_select(f->rt, f->scale, "inproc", f->st);
  assert_non_null(k);
  assert_int_equal(wf__kernel_run(k, f->scale, inputs, outputs, f->st),
                   WF_INTERNAL);
  assert_string_equal(wf_status_message(f->st),
                      "node 'scaled' (op 'TestScale') on device type "
                      "'inproc', kernel 'lazy' of plugin 'inproc-kernels': "
                      "the kernel did not produce output 0");
  assert_int_equal(creates, 1);
  assert_int_equal(destroys, 1);
  wf_tensor_release(x);
}

static void test_kernel_run_reports_failed_setup(void **state) {
  fixture *f = *state;
  const int64_t dims[] = {2, 3};
  wf_node *unlucky = add_scale(f, "unlucky", f->src, 7.0);
  wf_tensor *x = counting_tensor(dims, 2, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  const wf__kernel *k = wf__kernel_select(f->rt, unlucky, "inproc", f->st);
  assert_int_equal(wf__kernel_run(k, unlucky, inputs, outputs, f->st),
                   WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(f->st),
                  "node 'unlucky' (op 'TestScale') on device type 'inproc'");
  assert_contains(wf_status_message(f->st), "kernel setup: scale 7 is unlucky");
  assert_int_equal(creates, 0);
  assert_int_equal(destroys, 0);
  wf_tensor_release(x);
}

static void test_kernel_run_reports_failure_without_message(void **state) {
  fixture *f = *state;
  const int64_t dims[] = {2, 3};
  wf_tensor *x = counting_tensor(dims, 2, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  const wf__kernel *k = wf__kernel_select(f->rt, f->scale, "silent", f->st);
  assert_int_equal(wf__kernel_run(k, f->scale, inputs, outputs, f->st),
                   WF_INTERNAL);
  assert_contains(wf_status_message(f->st), "kernel '(unlabelled)'");
  assert_contains(wf_status_message(f->st),
                  "the kernel failed (returned 5) without a message");
  wf_tensor_release(x);
}

/* ---- the host table's kernel entries
 * ------------------------------------------------ */

static void test_kernel_ctx_entries_check_their_arguments(void **state) {
  fixture *f = *state;
  const wf_host *h = wf__host();
  const int64_t dims[] = {2, 3};
  wf_tensor *x = counting_tensor(dims, 2, f->st);
  wf_tensor *wrong = wf_tensor_new(WF_INT32, dims, 2, f->st);
  const wf_tensor *inputs[] = {x};
  wf_tensor *outputs[1] = {NULL};
  struct wf_kernel_ctx ctx;
  wf_attr_value v;
  wf_shape s;

  memset(&ctx, 0, sizeof ctx);
  ctx.node = f->scale;
  ctx.num_inputs = 1;
  ctx.num_outputs = 1;
  /* As the executor's create call sees it: no inputs, no outputs yet. */
  assert_null(h->kernel_input(&ctx, 0));
  wf_shape_init(&s, dims, 2);
  assert_null(h->kernel_output_new(&ctx, 0, &s, f->st));
  assert_int_equal(wf_status_code(f->st), WF_FAILED_PRECONDITION);
  assert_contains(wf_status_message(f->st), "node 'scaled'");

  ctx.inputs = inputs;
  ctx.outputs = outputs;
  assert_int_equal(h->kernel_num_inputs(&ctx), 1);
  assert_int_equal(h->kernel_num_outputs(&ctx), 1);
  assert_ptr_equal(h->kernel_input(&ctx, 0), x);
  assert_null(h->kernel_input(&ctx, 1));
  assert_null(h->kernel_input(&ctx, -1));
  assert_string_equal(h->kernel_node_name(&ctx), "scaled");
  assert_int_equal(h->kernel_output_dtype(&ctx, 0), WF_FLOAT32);
  assert_int_equal(h->kernel_output_dtype(&ctx, 1), WF_DTYPE_INVALID);
  assert_int_equal(h->kernel_attr(&ctx, "scale", &v), 0);
  assert_int_equal(v.type, WF_ATTR_FLOAT);
  assert_true(v.u.f == 3.0);
  assert_int_equal(h->kernel_attr(&ctx, "T", &v), 0);
  assert_int_equal(v.u.dtype, WF_FLOAT32);
  assert_int_equal(h->kernel_attr(&ctx, "nope", &v), -1);

  assert_null(h->kernel_output_new(&ctx, 1, &s, f->st));
  assert_int_equal(wf_status_code(f->st), WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(f->st), "output 1 out of range");
  assert_int_equal(h->kernel_output_set(&ctx, 0, wrong, f->st),
                   WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(f->st),
                  "output 0 is float32, given a int32 tensor");
  assert_null(outputs[0]);

  /* Forwarding retains; a second set replaces the first. */
  assert_int_equal(h->kernel_output_set(&ctx, 0, x, f->st), WF_OK);
  assert_ptr_equal(outputs[0], x);
  assert_non_null(h->kernel_output_new(&ctx, 0, &s, f->st));
  assert_ptr_not_equal(outputs[0], x);
  wf_tensor_release(outputs[0]);
  wf_tensor_release(wrong);
  wf_tensor_release(x); /* the last reference: ASan checks the count */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kernel_select_picks_by_device_type,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_select_names_node_op_and_device_when_none, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_select_honours_the_dtype_of_the_type_attr, setup,
          teardown),
      cmocka_unit_test_setup_teardown(test_kernel_run_computes_the_output,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_run_waits_for_async_kernel,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_error_names_node_op_and_device, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_run_refuses_input_of_wrong_dtype, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_run_checks_output_against_inferred_shape, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_run_reports_missing_output_and_destroys_state, setup,
          teardown),
      cmocka_unit_test_setup_teardown(test_kernel_run_reports_failed_setup,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_run_reports_failure_without_message, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_kernel_ctx_entries_check_their_arguments, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
