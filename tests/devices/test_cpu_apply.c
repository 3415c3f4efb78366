/* tests/devices/test_cpu_apply.c — the CPU plugin's dense optimizer
 * updates on the intra-op threads (cpu_apply.c, label "threads") against
 * ops-train's reference kernels: the same small model trained for three
 * steps in two runtimes, one choosing the threaded kernels and one
 * denying them, must end with the same bits in every variable and slot,
 * for every optimizer (float32, through the layers API), and for Adam in
 * float64 on a variable built by hand. The weight matrix (99,891
 * elements) and the float64 variable (100,003) are odd sizes above the
 * one the plugin splits from, so the update is shared and its last piece
 * is short; the bias stays on one thread.
 * Tolerance: none (bit for bit). */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PLUGIN_DIRS                                                            \
  TEST_BUILDDIR "/plugins/devices/cpu/.libs, " TEST_BUILDDIR                   \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/nn/.libs, " TEST_BUILDDIR                        \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/train/.libs"

#define IN 1009
#define OUT 99 /* a weight matrix of 99,891 elements and a bias of 99 */
#define BATCH 8

static wf_status *st;

static wf_runtime *runtime(int threaded) {
  wf_config *cfg = wf_config_new();
  wf_runtime *rt = NULL;

  if (!cfg || wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths", PLUGIN_DIRS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "threads", "intra_op", "2", st) ||
      wf_config_set(cfg, "threads", "inter_op", "1", st) ||
      (!threaded &&
       wf_config_set(cfg, "kernels", "deny", "threads", st)) ||
      !(rt = wf_runtime_new(cfg, st)))
    fail_msg("runtime: %s", wf_status_message(st));
  wf_config_free(cfg);
  return rt;
}

static wf_tensor *filled(wf_dtype dt, int64_t rows, int64_t cols,
                         unsigned seed) {
  int64_t dims[2] = {rows, cols};
  wf_tensor *t = wf_tensor_new(dt, dims, 2, st);
  uint64_t x = seed * UINT64_C(0x9E3779B97F4A7C15) + 7;

  assert_non_null(t);
  for (int64_t i = 0; i < rows * cols; i++) {
    double v;
    x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    v = (double)(x >> 11) * 0x1p-53 * 2.0 - 1.0;
    if (dt == WF_FLOAT32)
      ((float *)wf_tensor_data(t))[i] = (float)v;
    else
      ((double *)wf_tensor_data(t))[i] = v;
  }
  return t;
}

/* Trains the model three steps with opt in rt; *values gets every
 * variable's value (new references), *n how many, and *label the kernel
 * label of the updates ("mixed" when they differ). */
static void train(wf_runtime *rt, const wf_optimizer *opt, wf_dtype dt,
                  wf_tensor **values, int *n, char *label, size_t len) {
  wf_graph *g = wf_graph_new(rt);
  wf_model *m = wf_model_new(g, 42, st);
  wf_node_desc *d;
  wf_node *xn, *yn, *init, *step;
  wf_output x, y, pred, loss, fetch[16];
  wf_session *s;
  wf_tensor *xv = filled(dt, BATCH, IN, 1), *yv = filled(dt, BATCH, OUT, 2);
  wf_tensor *feeds[2] = {xv, yv};
  wf_run_options ro = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();
  int64_t xd[2] = {BATCH, IN}, yd[2] = {BATCH, OUT};

  assert_non_null(m);
  d = wf_node_desc_new(g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", xd, 2);
  assert_non_null(xn = wf_node_desc_finish(d, st));
  d = wf_node_desc_new(g, "Placeholder", "y");
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", yd, 2);
  assert_non_null(yn = wf_node_desc_finish(d, st));
  x = (wf_output){xn, 0};
  y = (wf_output){yn, 0};
  wf_model_begin(m, 1);
  pred = wf_layer_dense(m, x, OUT, WF_ACT_NONE, st);
  loss = wf_loss_mean_squared_error(m, pred, y, st);
  if (!(step = wf_model_minimize(m, loss, opt, st)) ||
      !(init = wf_model_init_op(m, st)))
    fail_msg("model: %s", wf_status_message(st));
  assert_non_null(s = wf_session_new(g, st));
  if (wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                     st))
    fail_msg("init: %s", wf_status_message(st));
  ro.trace_level = WF_TRACE_NODES;
  for (int k = 0; k < 3; k++)
    if (wf_session_run(s, &ro, (wf_output[]){x, y}, feeds, 2, NULL, NULL, 0,
                       &step, 1, md, st))
      fail_msg("step %d: %s", k, wf_status_message(st));
  label[0] = '\0';
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    const char *k = wf_run_metadata_node_kernel(md, i);
    if (strncmp(ns.op, "Apply", 5) != 0)
      continue;
    /* Every update ran the same kernel (the bias's too, on one thread). */
    if (!label[0])
      snprintf(label, len, "%s", k);
    else if (strcmp(label, k) != 0)
      snprintf(label, len, "mixed");
  }
  *n = wf_model_num_variables(m);
  assert_true(*n <= 16);
  for (int i = 0; i < *n; i++) {
    wf_output h;
    wf_node_desc *r;
    wf_node *rn;
    char name[32];
    const char *var = wf_model_variable_name(m, i, &h, NULL);
    snprintf(name, sizeof name, "read%d", i);
    r = wf_node_desc_new(g, "ReadVariable", name);
    wf_node_desc_add_input(r, h);
    /* Every variable has the model's dtype but the step counter. */
    wf_node_desc_set_attr_dtype(r, "dtype",
                                strstr(var, "global_step") ? WF_INT64 : dt);
    assert_non_null(rn = wf_node_desc_finish(r, st));
    fetch[i] = (wf_output){rn, 0};
  }
  if (wf_session_run(s, NULL, NULL, NULL, 0, fetch, values, *n, NULL, 0,
                     NULL, st))
    fail_msg("read: %s", wf_status_message(st));
  wf_run_metadata_free(md);
  wf_tensor_release(xv);
  wf_tensor_release(yv);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

static void same_bits(const char *what, wf_runtime *fast, wf_runtime *ref,
                      const wf_optimizer *opt) {
  static const wf_dtype types[] = {WF_FLOAT32}; /* the layers' dtype */
  for (int t = 0; t < 1; t++) {
    wf_tensor *a[16], *b[16];
    int na, nb;
    char la[64], lb[64];
    train(fast, opt, types[t], a, &na, la, sizeof la);
    train(ref, opt, types[t], b, &nb, lb, sizeof lb);
    if (strcmp(la, "threads") != 0 || strcmp(lb, "reference") != 0)
      fail_msg("%s %s: the weight update ran kernels '%s' and '%s', not "
               "'threads' and 'reference'",
               what, wf_dtype_name(types[t]), la, lb);
    assert_int_equal(na, nb);
    for (int i = 0; i < na; i++) {
      assert_int_equal(wf_tensor_nbytes(a[i]), wf_tensor_nbytes(b[i]));
      if (memcmp(wf_tensor_data(a[i]), wf_tensor_data(b[i]),
                 wf_tensor_nbytes(a[i])) != 0)
        fail_msg("%s %s: variable %d differs", what,
                 wf_dtype_name(types[t]), i);
      wf_tensor_release(a[i]);
      wf_tensor_release(b[i]);
    }
  }
}

static wf_runtime *fast_rt, *ref_rt;

static void test_every_dense_update_matches_the_reference(void **unused) {
  static const struct {
    const char *name;
    wf_optimizer_kind kind;
    int variant;
  } cases[] = {
      {"sgd", WF_OPT_SGD, 0},         {"momentum", WF_OPT_MOMENTUM, 0},
      {"nesterov", WF_OPT_MOMENTUM, 1}, {"adam", WF_OPT_ADAM, 0},
      {"amsgrad", WF_OPT_ADAM, 1},    {"adamw", WF_OPT_ADAMW, 0},
      {"rmsprop", WF_OPT_RMSPROP, 0}, {"centered rmsprop", WF_OPT_RMSPROP, 1},
      {"adagrad", WF_OPT_ADAGRAD, 0},
  };
  (void)unused;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    wf_optimizer o = wf_optimizer_defaults(cases[c].kind);
    if (cases[c].kind == WF_OPT_MOMENTUM)
      o.nesterov = cases[c].variant;
    if (cases[c].kind == WF_OPT_ADAM)
      o.amsgrad = cases[c].variant;
    if (cases[c].kind == WF_OPT_RMSPROP) {
      o.centered = cases[c].variant;
      o.momentum = 0.5;
    }
    same_bits(cases[c].name, fast_rt, ref_rt, &o);
  }
}

/* float64: ApplyAdam on a variable of 100,003 elements built by hand, two
 * steps with fed gradients, in each runtime. */
static wf_node *scalar_const(wf_graph *g, const char *name, double v) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT64, NULL, 0, st);
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node *n;
  *(double *)wf_tensor_data(t) = v;
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  assert_non_null(n = wf_node_desc_finish(d, st));
  wf_tensor_release(t);
  return n;
}

static void adam_f64(wf_runtime *rt, wf_tensor **out, char *label,
                     size_t len) {
  static const char *const names[3] = {"var", "m", "v"};
  int64_t count = 100003;
  wf_graph *g = wf_graph_new(rt);
  wf_node *h[3], *init[3], *apply, *read;
  wf_node_desc *d;
  wf_output grad;
  wf_session *s;
  wf_tensor *start = filled(WF_FLOAT64, 1, count, 3);
  wf_run_options ro = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();

  for (int k = 0; k < 3; k++) {
    d = wf_node_desc_new(g, "VarHandle", names[k]);
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
    wf_node_desc_set_attr_shape(d, "shape", &count, 1);
    assert_non_null(h[k] = wf_node_desc_finish(d, st));
  }
  d = wf_node_desc_new(g, "Placeholder", "grad");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", &count, 1);
  grad = (wf_output){wf_node_desc_finish(d, st), 0};
  assert_non_null(grad.node);
  for (int k = 0; k < 3; k++) {
    char name[16];
    wf_tensor *v = k ? filled(WF_FLOAT64, 1, count, 10 + (unsigned)k) : start;
    wf_node *c;
    int64_t dims[1] = {count};
    wf_tensor *flat;
    snprintf(name, sizeof name, "start%d", k);
    flat = wf_tensor_new(WF_FLOAT64, dims, 1, st);
    memcpy(wf_tensor_data(flat), wf_tensor_data(v), wf_tensor_nbytes(flat));
    if (k == 2) /* v >= 0 */
      for (int64_t i = 0; i < count; i++)
        ((double *)wf_tensor_data(flat))[i] =
            ((double *)wf_tensor_data(flat))[i] *
            ((double *)wf_tensor_data(flat))[i];
    d = wf_node_desc_new(g, "Const", name);
    wf_node_desc_set_attr_tensor(d, "value", flat);
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
    assert_non_null(c = wf_node_desc_finish(d, st));
    snprintf(name, sizeof name, "init%d", k);
    d = wf_node_desc_new(g, "AssignVariable", name);
    wf_node_desc_add_input(d, (wf_output){h[k], 0});
    wf_node_desc_add_input(d, (wf_output){c, 0});
    assert_non_null(init[k] = wf_node_desc_finish(d, st));
    wf_tensor_release(flat);
    if (k)
      wf_tensor_release(v);
  }
  wf_tensor_release(start);
  d = wf_node_desc_new(g, "ApplyAdam", "adam");
  wf_node_desc_add_input(d, (wf_output){h[0], 0});
  wf_node_desc_add_input(d, (wf_output){h[1], 0});
  wf_node_desc_add_input(d, (wf_output){h[2], 0});
  wf_node_desc_add_input(d, (wf_output){h[2], 0});
  wf_node_desc_add_input(d, (wf_output){scalar_const(g, "lr", 0.01), 0});
  wf_node_desc_add_input(d, (wf_output){scalar_const(g, "b1", 0.9), 0});
  wf_node_desc_add_input(d, (wf_output){scalar_const(g, "b2", 0.999), 0});
  wf_node_desc_add_input(d, (wf_output){scalar_const(g, "eps", 1e-7), 0});
  wf_node_desc_add_input(d, grad);
  wf_node_desc_add_input(d, (wf_output){scalar_const(g, "step", 3), 0});
  assert_non_null(apply = wf_node_desc_finish(d, st));
  d = wf_node_desc_new(g, "ReadVariable", "read");
  wf_node_desc_add_input(d, (wf_output){h[0], 0});
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  assert_non_null(read = wf_node_desc_finish(d, st));
  assert_non_null(s = wf_session_new(g, st));
  if (wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, 3, NULL,
                     st))
    fail_msg("init: %s", wf_status_message(st));
  ro.trace_level = WF_TRACE_NODES;
  for (int k = 0; k < 2; k++) {
    wf_tensor *gt = filled(WF_FLOAT64, 1, count, 20 + (unsigned)k);
    wf_tensor *flat = wf_tensor_new(WF_FLOAT64, &count, 1, st);
    memcpy(wf_tensor_data(flat), wf_tensor_data(gt), wf_tensor_nbytes(flat));
    if (wf_session_run(s, &ro, &grad, &flat, 1, NULL, NULL, 0, &apply, 1, md,
                       st))
      fail_msg("step: %s", wf_status_message(st));
    wf_tensor_release(gt);
    wf_tensor_release(flat);
  }
  label[0] = '\0';
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    if (strcmp(ns.node, "adam") == 0)
      snprintf(label, len, "%s", wf_run_metadata_node_kernel(md, i));
  }
  {
    wf_output r = {read, 0};
    if (wf_session_run(s, NULL, NULL, NULL, 0, &r, out, 1, NULL, 0, NULL, st))
      fail_msg("read: %s", wf_status_message(st));
  }
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_float64_adam_matches_the_reference(void **unused) {
  wf_tensor *a = NULL, *b = NULL;
  char la[64], lb[64];
  (void)unused;
  adam_f64(fast_rt, &a, la, sizeof la);
  adam_f64(ref_rt, &b, lb, sizeof lb);
  assert_string_equal(la, "threads");
  assert_string_equal(lb, "reference");
  assert_int_equal(wf_tensor_nbytes(a), wf_tensor_nbytes(b));
  assert_memory_equal(wf_tensor_data(a), wf_tensor_data(b),
                      wf_tensor_nbytes(a));
  wf_tensor_release(a);
  wf_tensor_release(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_dense_update_matches_the_reference),
      cmocka_unit_test(test_float64_adam_matches_the_reference),
  };
  int rc;

  st = wf_status_new();
  fast_rt = runtime(1);
  ref_rt = runtime(0);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  wf_runtime_free(fast_rt);
  wf_runtime_free(ref_rt);
  wf_status_free(st);
  return rc;
}
