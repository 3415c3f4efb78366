/* tests/transports/test_task_split.c — a graph split between the tasks of
 * an MPI job (run by task_split.sh under mpirun with 2 and 3 processes):
 * task 0 runs the cmocka tests as the client, the others serve. Every
 * dtype crosses tasks unchanged; a model-parallel graph gives the bits a
 * single process gives; variables on a worker keep their values between
 * steps and signatures; a worker's error reaches the client naming the
 * task, node and op, and the job goes on; steps run concurrently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

static wf_runtime *rt;
static int32_t ntasks;

static wf_node *node(wf_graph *g, const char *op, const char *name,
                     const char *device, const wf_output *in, int nin,
                     void (*attrs)(wf_node_desc *, void *), void *arg) {
  wf_status *st = wf_status_new();
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  if (device)
    wf_node_desc_set_device(d, device);
  if (attrs)
    attrs(d, arg);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("adding %s '%s': %s", op, name, wf_status_message(st));
  wf_status_free(st);
  return n;
}

typedef struct ph {
  wf_dtype dtype;
  wf_shape shape;
} ph;

static void ph_attrs(wf_node_desc *d, void *arg) {
  ph *p = arg;
  wf_node_desc_set_attr_dtype(d, "dtype", p->dtype);
  wf_node_desc_set_attr_shape(d, "shape", p->shape.dims, p->shape.rank);
}

static void var_attrs(wf_node_desc *d, void *arg) {
  ph *p = arg;
  wf_node_desc_set_attr_dtype(d, "dtype", p->dtype);
  wf_node_desc_set_attr_shape(d, "shape", p->shape.dims, p->shape.rank);
}

static void uniform_attrs(wf_node_desc *d, void *arg) {
  ph *p = arg;
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", p->shape.dims, p->shape.rank);
  wf_node_desc_set_attr_float(d, "minval", -1.0);
  wf_node_desc_set_attr_float(d, "maxval", 1.0);
}

static void read_attrs(wf_node_desc *d, void *arg) {
  (void)arg;
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
}

static wf_output out0(wf_node *n) { return (wf_output){n, 0}; }

static char task_dev[64];
static const char *on_task(int k) {
  snprintf(task_dev, sizeof task_dev, "/task:%d/cpu:0", k);
  return task_dev;
}

/* ---- every dtype ---------------------------------------------------------------- */

static void test_every_dtype_crosses_tasks(void **unused) {
  (void)unused;
  const wf_dtype dtypes[] = {WF_FLOAT32, WF_FLOAT64, WF_FLOAT16, WF_BFLOAT16,
                             WF_INT8,    WF_UINT8,   WF_INT32,   WF_INT64,
                             WF_BOOL};
  wf_status *st = wf_status_new();
  for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
    for (int shape_kind = 0; shape_kind < 3; shape_kind++) {
      /* (3, 5), a scalar, and an empty (0, 4) tensor. */
      int64_t dims[2] = {shape_kind == 2 ? 0 : 3, shape_kind == 2 ? 4 : 5};
      int rank = shape_kind == 1 ? 0 : 2;
      wf_graph *g = wf_graph_new(rt);
      ph p = {dtypes[k], {.rank = -1}};
      wf_node *x = node(g, "Placeholder", "x", NULL, NULL, 0, ph_attrs, &p);
      /* Out to the last task, through task 1, and back. */
      wf_output in = out0(x);
      wf_node *a = node(g, "Identity", "a", on_task(ntasks - 1), &in, 1,
                        NULL, NULL);
      in = out0(a);
      wf_node *b = node(g, "Identity", "b", on_task(1), &in, 1, NULL, NULL);
      wf_session *s = wf_session_new(g, st);
      assert_non_null(s);
      wf_tensor *v = wf_tensor_new(dtypes[k], dims, rank, st);
      assert_non_null(v);
      unsigned char *data = wf_tensor_data(v);
      for (size_t i = 0; i < wf_tensor_nbytes(v); i++)
        data[i] = dtypes[k] == WF_BOOL ? (unsigned char)(i % 2)
                                       : (unsigned char)(i * 37 + k);
      wf_output fx = out0(x), fb = out0(b);
      wf_tensor *got = NULL;
      int rc = wf_session_run(s, NULL, &fx, &v, 1, &fb, &got, 1, NULL, 0,
                              NULL, st);
      if (rc)
        fail_msg("%s, shape kind %d: %s", wf_dtype_name(dtypes[k]),
                 shape_kind, wf_status_message(st));
      assert_int_equal(wf_tensor_dtype(got), dtypes[k]);
      assert_int_equal(wf_tensor_rank(got), rank);
      assert_int_equal(wf_tensor_nbytes(got), wf_tensor_nbytes(v));
      if (wf_tensor_nbytes(v))
        assert_memory_equal(wf_tensor_data(got), wf_tensor_data(v),
                            wf_tensor_nbytes(v));
      wf_tensor_release(got);
      wf_tensor_release(v);
      wf_session_free(s);
      wf_graph_free(g);
    }
  }
  wf_status_free(st);
}

/* ---- a model-parallel graph ---------------------------------------------------------- */

typedef struct model {
  wf_graph *g;
  wf_node *x, *init, *out, *bump, *counter;
} model;

/* x (4, 8) -> MatMul W1 (8, 16) on task 1 -> Relu -> MatMul W2 (16, 3) on
 * the last task -> out on the client; a counter variable on task 1 that
 * each `bump` step adds 1 to. With split 0 every node runs here. */
static model build_model(int split) {
  model m;
  m.g = wf_graph_new(rt);
  const char *t1 = split ? on_task(1) : NULL;
  char tl[64];
  snprintf(tl, sizeof tl, "/task:%d/cpu:0", (int)ntasks - 1);
  const char *tlast = split ? tl : NULL;
  ph px = {WF_FLOAT32, {.rank = 2, .dims = {4, 8}}};
  m.x = node(m.g, "Placeholder", "x", NULL, NULL, 0, ph_attrs, &px);
  ph p1 = {WF_FLOAT32, {.rank = 2, .dims = {8, 16}}};
  ph p2 = {WF_FLOAT32, {.rank = 2, .dims = {16, 3}}};
  ph pc = {WF_FLOAT32, {.rank = 0}};
  wf_node *w1 = node(m.g, "VarHandle", "w1", t1, NULL, 0, var_attrs, &p1);
  wf_node *w2 = node(m.g, "VarHandle", "w2", tlast, NULL, 0, var_attrs, &p2);
  m.counter = node(m.g, "VarHandle", "counter", t1, NULL, 0, var_attrs, &pc);
  wf_node *u1 = node(m.g, "RandomUniform", "u1", t1, NULL, 0, uniform_attrs,
                     &p1);
  wf_node *u2 = node(m.g, "RandomUniform", "u2", tlast, NULL, 0,
                     uniform_attrs, &p2);
  wf_node *zero = node(m.g, "RandomUniform", "zero", t1, NULL, 0,
                       uniform_attrs, &pc);
  wf_output a1[2] = {out0(w1), out0(u1)}, a2[2] = {out0(w2), out0(u2)};
  wf_node *i1 = node(m.g, "AssignVariable", "i1", NULL, a1, 2, NULL, NULL);
  wf_node *i2 = node(m.g, "AssignVariable", "i2", NULL, a2, 2, NULL, NULL);
  /* The counter starts at 0 (uniform in [-1, 1) times 0). */
  wf_output zz[2] = {out0(zero), out0(zero)};
  wf_node *z0 = node(m.g, "Sub", "z0", t1, zz, 2, NULL, NULL);
  wf_output a3[2] = {out0(m.counter), out0(z0)};
  wf_node *i3 = node(m.g, "AssignVariable", "i3", NULL, a3, 2, NULL, NULL);
  wf_output ins[3];
  wf_node_desc *d = wf_node_desc_new(m.g, "NoOp", "init");
  wf_node_desc_add_control_input(d, i1);
  wf_node_desc_add_control_input(d, i2);
  wf_node_desc_add_control_input(d, i3);
  wf_status *st = wf_status_new();
  m.init = wf_node_desc_finish(d, st);
  assert_non_null(m.init);
  wf_node *r1 = node(m.g, "ReadVariable", "r1", NULL, &a1[0], 1, read_attrs,
                     NULL);
  wf_node *r2 = node(m.g, "ReadVariable", "r2", NULL, &a2[0], 1, read_attrs,
                     NULL);
  ins[0] = out0(m.x);
  ins[1] = out0(r1);
  wf_node *h = node(m.g, "MatMul", "h", t1, ins, 2, NULL, NULL);
  ins[0] = out0(h);
  wf_node *relu = node(m.g, "Relu", "relu", t1, ins, 1, NULL, NULL);
  ins[0] = out0(relu);
  ins[1] = out0(r2);
  wf_node *y = node(m.g, "MatMul", "y", tlast, ins, 2, NULL, NULL);
  ins[0] = out0(y);
  m.out = node(m.g, "Identity", "out", NULL, ins, 1, NULL, NULL);
  /* bump: counter += 1 (a constant from the counter's own value). */
  wf_node *rc = node(m.g, "ReadVariable", "rc", NULL, &a3[0], 1, read_attrs,
                     NULL);
  ins[0] = out0(rc);
  ins[1] = out0(rc);
  wf_node *eq = node(m.g, "Sub", "eq", t1, ins, 2, NULL, NULL); /* 0 */
  ins[0] = out0(eq);
  wf_node *one = node(m.g, "Exp", "one", t1, ins, 1, NULL, NULL); /* 1 */
  wf_output a4[2] = {out0(m.counter), out0(one)};
  m.bump = node(m.g, "AssignAddVariable", "bump", NULL, a4, 2, NULL, NULL);
  wf_status_free(st);
  return m;
}

static wf_tensor *input(int seed) {
  int64_t dims[2] = {4, 8};
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 2, NULL);
  float *f = wf_tensor_data(t);
  for (int i = 0; i < 32; i++)
    f[i] = (float)((i * 7 + seed * 13) % 17) / 8.0f - 1.0f;
  return t;
}

static void run_model(model *m, wf_tensor **outs, int n, float *counter) {
  wf_status *st = wf_status_new();
  wf_session *s = wf_session_new(m->g, st);
  assert_non_null(s);
  if (wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &m->init, 1, NULL,
                     st))
    fail_msg("init: %s", wf_status_message(st));
  wf_output fx = out0(m->x), fo = out0(m->out);
  for (int i = 0; i < n; i++) {
    wf_tensor *in = input(i);
    if (wf_session_run(s, NULL, &fx, &in, 1, &fo, &outs[i], 1, &m->bump, 1,
                       NULL, st))
      fail_msg("step %d: %s", i, wf_status_message(st));
    wf_tensor_release(in);
  }
  /* The counter, read in a signature of its own. */
  wf_node *rd = wf_graph_find_node(m->g, "rc");
  wf_output fc = out0(rd);
  wf_tensor *c = NULL;
  if (wf_session_run(s, NULL, NULL, NULL, 0, &fc, &c, 1, NULL, 0, NULL, st))
    fail_msg("reading the counter: %s", wf_status_message(st));
  *counter = *(float *)wf_tensor_data(c);
  wf_tensor_release(c);
  wf_session_free(s);
  wf_status_free(st);
}

static void test_model_parallel_matches_one_process(void **unused) {
  (void)unused;
  enum { STEPS = 4 };
  model local = build_model(0), split = build_model(1);
  wf_tensor *a[STEPS], *b[STEPS];
  float ca, cb;
  run_model(&local, a, STEPS, &ca);
  run_model(&split, b, STEPS, &cb);
  for (int i = 0; i < STEPS; i++) {
    assert_int_equal(wf_tensor_nbytes(a[i]), 12 * sizeof(float));
    /* Same kernels, same Philox streams (the client's step counter goes
     * to the workers): the same bits. */
    assert_memory_equal(wf_tensor_data(a[i]), wf_tensor_data(b[i]),
                        12 * sizeof(float));
    wf_tensor_release(a[i]);
    wf_tensor_release(b[i]);
  }
  assert_true(ca == (float)STEPS);
  assert_true(cb == (float)STEPS);
  wf_graph_free(local.g);
  wf_graph_free(split.g);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void test_worker_error_names_task_node_op(void **unused) {
  (void)unused;
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  ph p = {WF_FLOAT32, {.rank = 2, .dims = {-1, -1}}};
  wf_node *x = node(g, "Placeholder", "x", NULL, NULL, 0, ph_attrs, &p);
  wf_node *y = node(g, "Placeholder", "y", NULL, NULL, 0, ph_attrs, &p);
  wf_output in[2] = {out0(x), out0(y)};
  wf_node *mm = node(g, "MatMul", "bad_matmul", on_task(ntasks - 1), in, 2,
                     NULL, NULL);
  wf_session *s = wf_session_new(g, st);
  int64_t d1[2] = {3, 5}, d2[2] = {4, 2}, d3[2] = {5, 2};
  wf_tensor *vx = wf_tensor_new(WF_FLOAT32, d1, 2, st);
  wf_tensor *vy = wf_tensor_new(WF_FLOAT32, d2, 2, st);
  memset(wf_tensor_data(vx), 0, wf_tensor_nbytes(vx));
  memset(wf_tensor_data(vy), 0, wf_tensor_nbytes(vy));
  wf_output feeds[2] = {out0(x), out0(y)}, f = out0(mm);
  wf_tensor *vals[2] = {vx, vy}, *got = NULL;
  int rc = wf_session_run(s, NULL, feeds, vals, 2, &f, &got, 1, NULL, 0, NULL,
                          st);
  assert_int_equal(rc, WF_INVALID_ARGUMENT);
  char want[32];
  snprintf(want, sizeof want, "task %d", (int)ntasks - 1);
  const char *msg = wf_status_message(st);
  if (!strstr(msg, want) || !strstr(msg, "bad_matmul") ||
      !strstr(msg, "MatMul"))
    fail_msg("message lacks task, node or op: %s", msg);
  assert_null(got);
  /* The job goes on: a good step now works. */
  wf_tensor_release(vy);
  vy = wf_tensor_new(WF_FLOAT32, d3, 2, st);
  memset(wf_tensor_data(vy), 0, wf_tensor_nbytes(vy));
  vals[1] = vy;
  rc = wf_session_run(s, NULL, feeds, vals, 2, &f, &got, 1, NULL, 0, NULL, st);
  if (rc)
    fail_msg("the step after the error: %s", wf_status_message(st));
  assert_int_equal(wf_tensor_dim(got, 0), 3);
  assert_int_equal(wf_tensor_dim(got, 1), 2);
  wf_tensor_release(got);
  wf_tensor_release(vx);
  wf_tensor_release(vy);
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_asking_for_a_missing_task_is_refused(void **unused) {
  (void)unused;
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  ph p = {WF_FLOAT32, {.rank = 0}};
  wf_node *x = node(g, "Placeholder", "x", NULL, NULL, 0, ph_attrs, &p);
  wf_output in = out0(x);
  wf_node *far = node(g, "Identity", "far", on_task(ntasks + 3), &in, 1,
                      NULL, NULL);
  wf_session *s = wf_session_new(g, st);
  wf_tensor *v = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  wf_output f = out0(far);
  wf_tensor *got = NULL;
  int rc = wf_session_run(s, NULL, &in, &v, 1, &f, &got, 1, NULL, 0, NULL, st);
  assert_int_equal(rc, WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "far"));
  assert_non_null(strstr(wf_status_message(st), "task"));
  wf_tensor_release(v);
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_free(st);
}

/* ---- concurrency ----------------------------------------------------------------------- */

typedef struct runner {
  wf_callable *c;
  float scale;
  int failures;
} runner;

static void *run_many(void *arg) {
  runner *r = arg;
  wf_status *st = wf_status_new();
  int64_t dims[1] = {64};
  for (int i = 0; i < 20; i++) {
    wf_tensor *v = wf_tensor_new(WF_FLOAT32, dims, 1, st);
    float *f = wf_tensor_data(v);
    for (int k = 0; k < 64; k++)
      f[k] = r->scale * (float)(i * 64 + k);
    wf_tensor *got = NULL;
    if (wf_callable_run(r->c, NULL, &v, &got, NULL, st) ||
        memcmp(wf_tensor_data(got), f, 64 * sizeof(float)) != 0)
      r->failures++;
    wf_tensor_release(got);
    wf_tensor_release(v);
  }
  wf_status_free(st);
  return NULL;
}

static void test_concurrent_steps_do_not_mix(void **unused) {
  (void)unused;
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  ph p = {WF_FLOAT32, {.rank = 1, .dims = {64}}};
  wf_node *x = node(g, "Placeholder", "x", NULL, NULL, 0, ph_attrs, &p);
  wf_output in = out0(x);
  wf_node *a = node(g, "Identity", "a", on_task(1), &in, 1, NULL, NULL);
  in = out0(a);
  wf_node *b = node(g, "Identity", "b", on_task(ntasks - 1), &in, 1, NULL,
                    NULL);
  wf_session *s = wf_session_new(g, st);
  wf_output fx = out0(x), fb = out0(b);
  wf_callable *c = wf_session_prepare(s, &fx, 1, &fb, 1, NULL, 0, st);
  assert_non_null(c);
  runner r[3] = {{c, 1.0f, 0}, {c, -1.0f, 0}, {c, 0.5f, 0}};
  pthread_t th[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&th[i], NULL, run_many, &r[i]);
  for (int i = 0; i < 3; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++)
    assert_int_equal(r[i].failures, 0);
  wf_callable_free(c);
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_free(st);
}

int main(void) {
  wf_status *st = wf_status_new();
  /* The config the job's script wrote ($WEFT_CONFIG): one thread per
   * process and a short heartbeat timeout. */
  wf_config *cfg = wf_config_new();
  const char *path = wf_config_default_path();
  if (path && wf_config_load(cfg, path, st)) {
    fprintf(stderr, "%s\n", wf_status_message(st));
    return 1;
  }
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt) {
    fprintf(stderr, "test_task_split: %s\n", wf_status_message(st));
    return 1;
  }
  int32_t task;
  if (wf_runtime_cluster(rt, &task, &ntasks, st)) {
    fprintf(stderr, "test_task_split: %s\n", wf_status_message(st));
    return 1;
  }
  int rc;
  if (task != 0) {
    rc = wf_worker_serve(rt, st);
    if (rc)
      fprintf(stderr, "test_task_split (task %d): %s\n", (int)task,
              wf_status_message(st));
  } else if (ntasks < 2) {
    fprintf(stderr, "test_task_split: run it with at least 2 processes\n");
    rc = 1;
  } else {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_dtype_crosses_tasks),
        cmocka_unit_test(test_model_parallel_matches_one_process),
        cmocka_unit_test(test_worker_error_names_task_node_op),
        cmocka_unit_test(test_asking_for_a_missing_task_is_refused),
        cmocka_unit_test(test_concurrent_steps_do_not_mix),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
  }
  wf_runtime_free(rt);
  wf_status_free(st);
  return rc ? 1 : 0;
}
