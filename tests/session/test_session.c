/* tests/session/test_session.c — sessions, pruning and the executor, with
 * the ops of tests/session/session_ops.c (values are exact in float32). */
#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "exec/session_internal.h"

static wf_runtime *rt;
static wf_status *st;

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  wf_config *cfg = wf_config_new();
  assert_int_equal(wf_config_set(cfg, "plugins", "paths",
                                 TEST_BUILDDIR "/tests/session/.libs", st),
                   0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", st), 0);
  assert_int_equal(wf_config_set(cfg, "threads", "inter_op", "4", st), 0);
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

static wf_node *add(wf_graph *g, const char *op, const char *name, int nin,
                    ...) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  va_list ap;
  va_start(ap, nin);
  for (int i = 0; i < nin; i++) {
    wf_node *in = va_arg(ap, wf_node *);
    wf_node_desc_add_input(d, (wf_output){in, 0});
  }
  va_end(ap);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("adding %s: %s", op, wf_status_message(st));
  return n;
}

static wf_node *src(wf_graph *g, const char *name, double v) {
  wf_node_desc *d = wf_node_desc_new(g, "TSrc", name);
  wf_node_desc_set_attr_float(d, "value", v);
  wf_node *n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  return n;
}

static wf_node *placeholder(wf_graph *g, const char *name, int rank,
                            const int64_t *dims) {
  wf_node_desc *d = wf_node_desc_new(g, "TPlaceholder", name);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  wf_node *n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  return n;
}

static wf_node *sleeper(wf_graph *g, wf_node *in, int ms) {
  wf_node_desc *d = wf_node_desc_new(g, "TSleep", NULL);
  wf_node_desc_add_input(d, (wf_output){in, 0});
  wf_node_desc_set_attr_int(d, "ms", ms);
  wf_node *n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  return n;
}

static wf_tensor *scalar(float v) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  assert_non_null(t);
  *(float *)wf_tensor_data(t) = v;
  return t;
}

static float fetch1(wf_session *s, wf_node *n) {
  wf_output out = {n, 0};
  wf_tensor *v = NULL;
  if (wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st))
    fail_msg("run: %s", wf_status_message(st));
  float f = *(float *)wf_tensor_data(v);
  wf_tensor_release(v);
  return f;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- running and pruning --------------------------------------------------- */

static void test_session_runs_a_chain(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = src(g, "a", 1.0);
  wf_node *b = add(g, "TInc", "b", 1, a);
  wf_node *c = add(g, "TInc", "c", 1, b);
  wf_node *d = add(g, "TSum2", "d", 2, c, b); /* (3) + (2) */
  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  assert_true(fetch1(s, d) == 5.0f);
  assert_true(fetch1(s, c) == 3.0f);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_prune_ignores_unrelated_unfed_placeholder(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *p = placeholder(g, "p", WF_UNKNOWN_RANK, NULL);
  add(g, "TInc", "uses_p", 1, p);
  wf_node *b = add(g, "TInc", "b", 1, src(g, "a", 4.0));
  wf_session *s = wf_session_new(g, st);
  assert_true(fetch1(s, b) == 5.0f);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_prune_refuses_needed_unfed_placeholder(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *p = placeholder(g, "needed_input", WF_UNKNOWN_RANK, NULL);
  wf_node *b = add(g, "TInc", "b", 1, p);
  wf_session *s = wf_session_new(g, st);
  wf_output out = {b, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "needed_input"));
  assert_non_null(strstr(wf_status_message(st), "must be fed"));
  assert_null(v);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_fed_intermediate_skips_its_producer(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *bad = add(g, "TFail", "would_fail", 1, src(g, "a", 1.0));
  wf_node *c = add(g, "TInc", "c", 1, bad);
  wf_session *s = wf_session_new(g, st);
  wf_output feed = {bad, 0}, fetch = {c, 0};
  wf_tensor *ten = scalar(10.0f), *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, &feed, &ten, 1, &fetch, &v, 1, NULL, 0, NULL, st),
      0);
  assert_true(*(float *)wf_tensor_data(v) == 11.0f);
  wf_tensor_release(v);
  wf_tensor_release(ten);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_more_feeds_than_nodes(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *p[4];
  for (int i = 0; i < 4; i++)
    p[i] = placeholder(g, NULL, 0, NULL);
  wf_node *sum = add(g, "TSum2", "sum", 2, p[0], p[1]);
  wf_session *s = wf_session_new(g, st);
  wf_output feeds[4] = {{p[0], 0}, {p[1], 0}, {p[2], 0}, {p[3], 0}};
  wf_tensor *vals[4] = {scalar(1), scalar(2), scalar(3), scalar(4)};
  wf_output fetch = {sum, 0};
  wf_tensor *v = NULL;
  assert_int_equal(wf_session_run(s, NULL, feeds, vals, 4, &fetch, &v, 1,
                                  NULL, 0, NULL, st),
                   0);
  assert_true(*(float *)wf_tensor_data(v) == 3.0f);
  wf_tensor_release(v);
  for (int i = 0; i < 4; i++)
    wf_tensor_release(vals[i]);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_target_only_run_executes_target(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *cnt = add(g, "TCount", "counter", 0);
  wf_node *probe = add(g, "TCount", "probe", 0);
  wf_session *s = wf_session_new(g, st);
  float before = fetch1(s, probe);
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &cnt, 1, NULL, st), 0);
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &cnt, 1, NULL, st), 0);
  float after = fetch1(s, probe);
  assert_true(after == before + 3.0f); /* two targets + the second probe */
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_control_edges_order_and_prune(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *cnt = add(g, "TCount", "side_effect", 0);
  wf_node *a = src(g, "a", 1.0);
  wf_node_desc *d = wf_node_desc_new(g, "TInc", "after");
  wf_node_desc_add_input(d, (wf_output){a, 0});
  wf_node_desc_add_control_input(d, cnt);
  wf_node *b = wf_node_desc_finish(d, st);
  assert_non_null(b);
  wf_node *probe = add(g, "TCount", "probe", 0);
  wf_session *s = wf_session_new(g, st);
  float p0 = fetch1(s, probe);
  assert_true(fetch1(s, b) == 2.0f); /* runs side_effect through the edge */
  assert_true(fetch1(s, probe) == p0 + 2.0f);
  wf_session_free(s);
  wf_graph_free(g);
}

/* ---- feeds ------------------------------------------------------------------ */

static void test_feed_of_callers_memory_is_not_copied(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t dims[1] = {4};
  wf_node *p = placeholder(g, "p", 1, dims);
  wf_node *fwd = sleeper(g, p, 0); /* forwards its input tensor */
  wf_session *s = wf_session_new(g, st);
  float *buf = aligned_alloc(64, 64);
  for (int i = 0; i < 4; i++)
    buf[i] = (float)i;
  wf_tensor *t = wf_tensor_wrap(WF_FLOAT32, dims, 1, buf, 16, NULL, NULL, st);
  assert_non_null(t);
  wf_output feed = {p, 0}, fetch = {fwd, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, &feed, &t, 1, &fetch, &v, 1, NULL, 0, NULL, st), 0);
  assert_ptr_equal(wf_tensor_data(v), buf);
  wf_tensor_release(v);
  wf_tensor_release(t);
  free(buf);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_feed_errors_are_named(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t dims[1] = {2};
  wf_node *p = placeholder(g, "vec2", 1, dims);
  wf_node *b = add(g, "TInc", "b", 1, p);
  wf_session *s = wf_session_new(g, st);
  wf_output feed = {p, 0}, fetch = {b, 0};
  wf_tensor *v = NULL;

  /* Wrong dtype. */
  wf_tensor *it = wf_tensor_new(WF_INT32, dims, 1, st);
  assert_int_equal(
      wf_session_run(s, NULL, &feed, &it, 1, &fetch, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "vec2"));
  assert_non_null(strstr(wf_status_message(st), "int32"));
  wf_tensor_release(it);

  /* Wrong shape. */
  int64_t d3[1] = {3};
  wf_tensor *t3 = wf_tensor_new(WF_FLOAT32, d3, 1, st);
  assert_int_equal(
      wf_session_run(s, NULL, &feed, &t3, 1, &fetch, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "shape"));
  assert_non_null(strstr(wf_status_message(st), "(3)"));

  /* Fed twice. */
  wf_output feeds2[2] = {{p, 0}, {p, 0}};
  wf_tensor *vals2[2] = {t3, t3};
  assert_int_equal(wf_session_run(s, NULL, feeds2, vals2, 2, &fetch, &v, 1,
                                  NULL, 0, NULL, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "fed twice"));

  /* Fed and fetched. */
  wf_tensor *t2 = wf_tensor_new(WF_FLOAT32, dims, 1, st);
  assert_int_equal(
      wf_session_run(s, NULL, &feed, &t2, 1, &feed, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "is both fed"));
  assert_non_null(strstr(wf_status_message(st), "vec2:0"));

  /* No such output. */
  wf_output bad = {b, 3};
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &bad, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "no output 3"));
  assert_null(v);

  /* Names. */
  wf_output o;
  assert_int_equal(wf_graph_parse_output(g, "b:0", &o, st), 0);
  assert_ptr_equal(o.node, b);
  assert_int_equal(wf_graph_parse_output(g, "nosuch:0", &o, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "nosuch"));
  assert_int_equal(wf_graph_parse_output(g, "b:7", &o, st),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wf_graph_parse_output(g, "b:x", &o, st),
                   WF_INVALID_ARGUMENT);

  /* A node of another graph. */
  wf_graph *other = wf_graph_new(rt);
  wf_output foreign = {src(other, "x", 1.0), 0};
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &foreign, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "does not belong"));
  wf_graph_free(other);

  wf_tensor_release(t2);
  wf_tensor_release(t3);
  wf_session_free(s);
  wf_graph_free(g);
}

/* ---- errors, cancellation, timeouts ----------------------------------------- */

static void test_node_error_names_node_op_and_device(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *f = add(g, "TFail", "the_bad_one", 1, src(g, "a", 1.0));
  wf_node *c = add(g, "TInc", "c", 1, f);
  wf_session *s = wf_session_new(g, st);
  wf_output out = {c, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  const char *m = wf_status_message(st);
  assert_non_null(strstr(m, "the_bad_one"));
  assert_non_null(strstr(m, "TFail"));
  assert_non_null(strstr(m, "cpu:0"));
  assert_non_null(strstr(m, "deliberate failure"));
  assert_null(v);
  /* The session is still usable. */
  wf_node *ok = add(g, "TInc", "ok", 1, src(g, "z", 1.0));
  assert_true(fetch1(s, ok) == 2.0f);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_timeout_cancels_the_step(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = src(g, "a", 1.0);
  for (int i = 0; i < 20; i++)
    n = sleeper(g, n, 50);
  wf_session *s = wf_session_new(g, st);
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.timeout_ms = 120;
  wf_output out = {n, 0};
  wf_tensor *v = NULL;
  double t0 = now_ms();
  assert_int_equal(
      wf_session_run(s, &opt, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st),
      WF_DEADLINE_EXCEEDED);
  double took = now_ms() - t0;
  assert_true(took < 600.0); /* 1000 ms if it had not been cancelled */
  assert_non_null(strstr(wf_status_message(st), "120 ms"));
  assert_null(v);
  wf_session_free(s);
  wf_graph_free(g);
}

typedef struct runner {
  wf_session *s;
  wf_node *fetch;
  int code;
  char msg[256];
} runner;

static void *run_thread(void *arg) {
  runner *r = arg;
  wf_status *ts = wf_status_new();
  wf_output out = {r->fetch, 0};
  wf_tensor *v = NULL;
  r->code = wf_session_run(r->s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0,
                           NULL, ts);
  snprintf(r->msg, sizeof r->msg, "%s", wf_status_message(ts));
  wf_tensor_release(v);
  wf_status_free(ts);
  return NULL;
}

static void test_close_cancels_running_steps(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = src(g, "a", 1.0);
  for (int i = 0; i < 40; i++)
    n = sleeper(g, n, 25);
  wf_session *s = wf_session_new(g, st);
  runner r = {s, n, -1, ""};
  pthread_t t;
  pthread_create(&t, NULL, run_thread, &r);
  usleep(100 * 1000);
  double t0 = now_ms();
  wf_session_close(s);
  pthread_join(t, NULL);
  assert_true(now_ms() - t0 < 500.0);
  assert_int_equal(r.code, WF_CANCELLED);
  assert_non_null(strstr(r.msg, "closed"));
  /* Later calls fail cleanly. */
  wf_output out = {n, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st),
      WF_FAILED_PRECONDITION);
  assert_null(wf_session_prepare(s, NULL, 0, &out, 1, NULL, 0, st));
  assert_int_equal(wf_status_code(st), WF_FAILED_PRECONDITION);
  wf_session_free(s);
  wf_graph_free(g);
}

/* ---- concurrency, callables, async kernels ------------------------------------ */

typedef struct stress {
  wf_session *s;
  wf_callable *c;
  wf_node *p, *out;
  int id, errors;
} stress;

static void *stress_thread(void *arg) {
  stress *w = arg;
  wf_status *ts = wf_status_new();
  int64_t dims[1] = {3};
  for (int i = 0; i < 1000; i++) {
    wf_tensor *x = wf_tensor_new(WF_FLOAT32, dims, 1, ts);
    float *xv = wf_tensor_data(x);
    for (int k = 0; k < 3; k++)
      xv[k] = (float)(w->id * 1000 + i + k);
    wf_tensor *y = NULL;
    int rc;
    if (i % 2) {
      rc = wf_callable_run(w->c, NULL, &x, &y, NULL, ts);
    } else {
      wf_output feed = {w->p, 0}, fetch = {w->out, 0};
      rc = wf_session_run(w->s, NULL, &feed, &x, 1, &fetch, &y, 1, NULL, 0,
                          NULL, ts);
    }
    if (rc) {
      w->errors++;
    } else {
      const float *yv = wf_tensor_data(y);
      for (int k = 0; k < 3; k++)
        if (yv[k] != 2.0f * xv[k] + 3.0f)
          w->errors++;
    }
    wf_tensor_release(y);
    wf_tensor_release(x);
  }
  wf_status_free(ts);
  return NULL;
}

static void test_eight_threads_share_a_session(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t dims[1] = {3};
  wf_node *p = placeholder(g, "x", 1, dims);
  wf_node *a = add(g, "TInc", "a", 1, p);
  wf_node *b = add(g, "TAsyncInc", "b", 1, a);  /* x + 2 */
  wf_node *c = add(g, "TSum2", "c", 2, b, add(g, "TInc", "d", 1, p));
  /* c = (x + 2) + (x + 1) = 2x + 3 */
  wf_session *s = wf_session_new(g, st);
  wf_output feed = {p, 0}, fetch = {c, 0};
  wf_callable *call = wf_session_prepare(s, &feed, 1, &fetch, 1, NULL, 0, st);
  assert_non_null(call);
  stress w[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    w[i] = (stress){s, call, p, c, i, 0};
    pthread_create(&t[i], NULL, stress_thread, &w[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].errors, 0);
  }
  wf_callable_free(call);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_async_kernel_failure_reaches_the_caller(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = add(g, "TAsyncInc", "async_node", 1, src(g, "neg", -5.0));
  wf_node *b = add(g, "TInc", "b", 1, a);
  wf_session *s = wf_session_new(g, st);
  wf_output out = {b, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, &out, &v, 1, NULL, 0, NULL, st),
      WF_OUT_OF_RANGE);
  assert_non_null(strstr(wf_status_message(st), "async_node"));
  assert_non_null(strstr(wf_status_message(st), "negative input -5"));
  assert_null(v);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_callable_prepare_reports_errors(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *p = placeholder(g, "in", WF_UNKNOWN_RANK, NULL);
  wf_node *b = add(g, "TInc", "b", 1, p);
  wf_session *s = wf_session_new(g, st);
  wf_output fetch = {b, 0};
  assert_null(wf_session_prepare(s, NULL, 0, &fetch, 1, NULL, 0, st));
  assert_non_null(strstr(wf_status_message(st), "'in'"));
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_executor_cache_is_bounded(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = src(g, "a", 0.0);
  wf_node *nodes[100];
  for (int i = 0; i < 100; i++)
    nodes[i] = n = add(g, "TInc", NULL, 1, n);
  wf_session *s = wf_session_new(g, st);
  for (int i = 0; i < 100; i++)
    assert_true(fetch1(s, nodes[i]) == (float)(i + 1));
  assert_true(wf__session_cache_count(s) <= wf__session_cache_capacity());
  assert_true(wf__session_cache_count(s) > 0);
  /* Evicted signatures still run. */
  assert_true(fetch1(s, nodes[0]) == 1.0f);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_trace_records_every_node(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node *b = add(g, "TInc", "traced_b", 1, src(g, "traced_a", 1.0));
  wf_session *s = wf_session_new(g, st);
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.trace_level = WF_TRACE_NODES;
  wf_run_metadata *md = wf_run_metadata_new();
  wf_output out = {b, 0};
  wf_tensor *v = NULL;
  assert_int_equal(
      wf_session_run(s, &opt, NULL, NULL, 0, &out, &v, 1, NULL, 0, md, st), 0);
  wf_tensor_release(v);
  assert_int_equal(wf_run_metadata_num_nodes(md), 2);
  for (int i = 0; i < 2; i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    assert_string_equal(ns.device, "cpu:0");
    assert_true(ns.end_ns >= ns.start_ns);
    assert_int_equal(ns.output_bytes, 4);
  }
  assert_true(wf_run_metadata_step_ns(md) > 0);
  char path[] = "/tmp/weft-trace-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(wf_run_metadata_write_trace(md, path, st), 0);
  FILE *f = fopen(path, "r");
  char buf[4096] = {0};
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  unlink(path);
  assert_true(got > 0);
  assert_non_null(strstr(buf, "\"traceEvents\""));
  assert_non_null(strstr(buf, "traced_b"));
  assert_int_equal(wf_run_metadata_write_trace(md, "/nonexistent/dir/t.json", st),
                   WF_PERMISSION_DENIED);
  assert_non_null(strstr(wf_status_message(st), "/nonexistent/dir/t.json"));
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_session_runs_a_chain),
      cmocka_unit_test(test_prune_ignores_unrelated_unfed_placeholder),
      cmocka_unit_test(test_prune_refuses_needed_unfed_placeholder),
      cmocka_unit_test(test_fed_intermediate_skips_its_producer),
      cmocka_unit_test(test_more_feeds_than_nodes),
      cmocka_unit_test(test_target_only_run_executes_target),
      cmocka_unit_test(test_control_edges_order_and_prune),
      cmocka_unit_test(test_feed_of_callers_memory_is_not_copied),
      cmocka_unit_test(test_feed_errors_are_named),
      cmocka_unit_test(test_node_error_names_node_op_and_device),
      cmocka_unit_test(test_timeout_cancels_the_step),
      cmocka_unit_test(test_close_cancels_running_steps),
      cmocka_unit_test(test_eight_threads_share_a_session),
      cmocka_unit_test(test_async_kernel_failure_reaches_the_caller),
      cmocka_unit_test(test_callable_prepare_reports_errors),
      cmocka_unit_test(test_executor_cache_is_bounded),
      cmocka_unit_test(test_trace_records_every_node),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
