/* tests/ops/train_harness.h — what test_state.c, test_random.c and
 * test_train.c share: a runtime that loads the built ops_state, ops_random,
 * ops_train and ops_array plugins and the CPU device through the real
 * loader (strictly, nothing else), node builders for variables, constants
 * and placeholders, and session helpers that fail the test with the
 * status message. Included by one test file per program, after cmocka.h;
 * everything is static inline, so a program need not use all of it. */
#ifndef WF_TESTS_OPS_TRAIN_HARNESS_H
#define WF_TESTS_OPS_TRAIN_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#define TH_PLUGIN_PATHS                                                        \
  TEST_BUILDDIR "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/train/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/devices/cpu/.libs"

#define TH_DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define TH_RANK(...)                                                           \
  ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

/* A runtime with the plugins above and inter_op threads (0: the config's
 * default). Fails the test when it cannot be made. */
static inline wf_runtime *th_runtime_new(int inter_op) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  char threads[16];
  wf_runtime *rt = NULL;

  snprintf(threads, sizeof threads, "%d", inter_op);
  if (!st || !cfg ||
      wf_config_set(cfg, "plugins", "paths", TH_PLUGIN_PATHS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "plugins", "strict", "true", st) ||
      (inter_op > 0 && wf_config_set(cfg, "threads", "inter_op", threads, st)))
    goto done;
  rt = wf_runtime_new(cfg, st);

done:
  if (!rt)
    fprintf(stderr, "cannot make the runtime: %s\n",
            st ? wf_status_message(st) : "out of memory");
  wf_config_free(cfg);
  wf_status_free(st);
  return rt;
}

/* Finishes d; fails the test (naming what) when the node is refused. */
static inline wf_node *th_finish(wf_node_desc *d, const char *what) {
  wf_status *st = wf_status_new();
  wf_node *n = wf_node_desc_finish(d, st);

  if (!n)
    fail_msg("adding %s: %s", what, wf_status_message(st));
  wf_status_free(st);
  return n;
}

static inline wf_output th_out(wf_node *n) { return (wf_output){n, 0}; }

/* A VarHandle named name (also the variable's name). */
static inline wf_node *th_var(wf_graph *g, const char *name, wf_dtype dt,
                              const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "VarHandle", name);

  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return th_finish(d, name);
}

/* ReadVariable of handle with the dtype and shape of the variable. */
static inline wf_node *th_read(wf_graph *g, wf_node *handle, wf_dtype dt,
                               const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "ReadVariable", NULL);

  wf_node_desc_add_input(d, th_out(handle));
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return th_finish(d, "ReadVariable");
}

/* A Const of dtype and shape holding data (count elements of the dtype). */
static inline wf_node *th_const(wf_graph *g, wf_dtype dt, const int64_t *dims,
                                int rank, const void *data) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  wf_node_desc *d;

  if (!t)
    fail_msg("tensor for a Const: %s", wf_status_message(st));
  memcpy(wf_tensor_data(t), data, wf_tensor_nbytes(t));
  d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_tensor_release(t);
  wf_status_free(st);
  return th_finish(d, "Const");
}

static inline wf_node *th_placeholder(wf_graph *g, const char *name,
                                      wf_dtype dt, const int64_t *dims,
                                      int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);

  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return th_finish(d, name);
}

/* An op node of `op` on inputs in[0..n-1] (no attributes: types come from
 * the inputs); NULL with st set when refused. */
static inline wf_node *th_op(wf_graph *g, const char *op, const char *name,
                             const wf_node *const *in, int n, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);

  for (int i = 0; i < n; i++)
    wf_node_desc_add_input(d, th_out((wf_node *)in[i]));
  return wf_node_desc_finish(d, st);
}

/* AssignVariable(handle, value). */
static inline wf_node *th_assign(wf_graph *g, wf_node *handle, wf_node *value) {
  wf_status *st = wf_status_new();
  const wf_node *in[2] = {handle, value};
  wf_node *n = th_op(g, "AssignVariable", NULL, in, 2, st);

  if (!n)
    fail_msg("adding AssignVariable: %s", wf_status_message(st));
  wf_status_free(st);
  return n;
}

/* Runs targets[0..n-1]; returns the code (st has the message). */
static inline int th_run_targets(wf_session *s, wf_node *const *targets, int n,
                                 wf_status *st) {
  return wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, targets, n, NULL,
                        st);
}

/* Runs targets and fails the test on error. */
static inline void th_run_ok(wf_session *s, wf_node *const *targets, int n) {
  wf_status *st = wf_status_new();

  if (th_run_targets(s, targets, n, st))
    fail_msg("run: %s", wf_status_message(st));
  wf_status_free(st);
}

/* Fetches output 0 of n (a new reference); fails the test on error. */
static inline wf_tensor *th_fetch(wf_session *s, wf_node *n) {
  wf_status *st = wf_status_new();
  wf_output out = th_out(n);
  wf_tensor *v = NULL;

  if (wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st))
    fail_msg("fetching %s: %s", wf_node_name(n), wf_status_message(st));
  wf_status_free(st);
  return v;
}

/* Element i of a float32, float64, int64 or int32 tensor as a double. */
static inline double th_get(const wf_tensor *t, int64_t i) {
  const void *p = wf_tensor_data(t);

  switch (wf_tensor_dtype(t)) {
  case WF_FLOAT32:
    return ((const float *)p)[i];
  case WF_FLOAT64:
    return ((const double *)p)[i];
  case WF_INT64:
    return (double)((const int64_t *)p)[i];
  case WF_INT32:
    return ((const int32_t *)p)[i];
  default:
    fail_msg("th_get: unexpected dtype %d", (int)wf_tensor_dtype(t));
  }
  return 0;
}

/* Fails unless st's message contains every one of the NULL-terminated
 * parts. */
static inline void th_expect_message(const wf_status *st, const char *part,
                                     ...) {
  va_list ap;

  va_start(ap, part);
  for (const char *p = part; p; p = va_arg(ap, const char *))
    if (!strstr(wf_status_message(st), p)) {
      va_end(ap);
      fail_msg("message \"%s\" does not mention \"%s\"", wf_status_message(st),
               p);
    }
  va_end(ap);
}

#endif /* WF_TESTS_OPS_TRAIN_HARNESS_H */
