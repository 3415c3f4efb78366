/* tests/gpu/test_cuda_graph.c — whole graphs over cpu:0 and cuda:0 on a
 * machine with a GPU, against the same graphs all on cpu:0:
 *   - a chain whose nodes ask for cpu:0 and cuda:0 in turn, so that
 *     partitioning puts _Send/_Recv pairs in both directions, in float32
 *     and float64: |split - cpu| <= tol (1 + |cpu|), tol 1e-4 for float32
 *     (cuBLAS sums in float, the CPU in double) and 1e-12 for float64, and
 *     three runs of one callable give the same bits;
 *   - five training steps of a small dense model (dense 8 tanh, dense 3,
 *     softmax cross-entropy) built under a cuda:0 device scope, with each
 *     optimizer whose apply op the CUDA plugin has a kernel for (SGD;
 *     Adam with epsilon 1e-3, so that an update moves at most lr / epsilon
 *     times a difference in its gradient): the losses and the final
 *     variables within 1e-5 (1 + |cpu|) of the CPU's. The variables, the
 *     apply ops and the MatMuls must run on cuda:0: the test fails, naming
 *     the node, when they cannot (no kernel there for one of them).
 * The run metadata must say where each node ran: the requested device,
 * with the device-cuda plugin's kernel there, and no fallback.
 *
 * Plugins come from the build tree, or from the comma-separated
 * directories in $WEFT_GPU_PLUGIN_DIRS (a bundle staged elsewhere:
 * tests/gpu/bundle.sh). Without a usable cuda:0 it prints why and exits 77
 * (automake's skip). */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PLUGIN_DIRS                                                            \
  TEST_BUILDDIR "/plugins/devices/cuda/.libs, " TEST_BUILDDIR                  \
                "/plugins/devices/cpu/.libs, " TEST_BUILDDIR                   \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/nn/.libs, " TEST_BUILDDIR                        \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/train/.libs"

#define CHECK(call)                                                            \
  do {                                                                         \
    if (call)                                                                  \
      fail_msg("%s: %s", #call, wf_status_message(st));                        \
  } while (0)

static wf_runtime *rt;
static wf_status *st;

/* ---- helpers ------------------------------------------------------------- */

static double value_at(const wf_tensor *t, int64_t i) {
  return wf_tensor_dtype(t) == WF_FLOAT32
             ? (double)((const float *)wf_tensor_data(t))[i]
             : ((const double *)wf_tensor_data(t))[i];
}

/* A (rows, cols) tensor of values in [-scale, scale) from a fixed
 * sequence. */
static wf_tensor *filled(wf_dtype dt, int64_t rows, int64_t cols, unsigned seed,
                         double scale) {
  int64_t dims[2] = {rows, cols};
  wf_tensor *t = wf_tensor_new(dt, dims, 2, st);
  uint64_t x = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;

  if (!t)
    fail_msg("tensor: %s", wf_status_message(st));
  for (int64_t i = 0; i < rows * cols; i++) {
    double v;
    x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    v = ((double)(x >> 11) * 0x1p-53 * 2.0 - 1.0) * scale;
    if (dt == WF_FLOAT32)
      ((float *)wf_tensor_data(t))[i] = (float)v;
    else
      ((double *)wf_tensor_data(t))[i] = v;
  }
  return t;
}

static wf_node *finish(wf_node_desc *d, const char *what) {
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", what, wf_status_message(st));
  return n;
}

static wf_output placeholder(wf_graph *g, const char *name, wf_dtype dt,
                             int64_t rows, int64_t cols) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  int64_t dims[2] = {rows, cols};

  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, cols < 0 ? 1 : 2);
  return (wf_output){finish(d, name), 0};
}

/* Const holding t (a new reference, released here), on device. */
static wf_output constant(wf_graph *g, const char *name, wf_tensor *t,
                          const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node *n;

  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(t));
  wf_node_desc_set_device(d, device);
  n = finish(d, name);
  wf_tensor_release(t);
  return (wf_output){n, 0};
}

static wf_output op(wf_graph *g, const char *opname, const char *name,
                    wf_output a, const wf_output *b, const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, opname, name);

  wf_node_desc_add_input(d, a);
  if (b)
    wf_node_desc_add_input(d, *b);
  wf_node_desc_set_device(d, device);
  return (wf_output){finish(d, name), 0};
}

/* Index in md of the node called name, failing when it did not run. */
static int stats_of(const wf_run_metadata *md, const char *name,
                    wf_node_stats *ns) {
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_run_metadata_node(md, i, ns);
    if (strcmp(ns->node, name) == 0)
      return i;
  }
  fail_msg("node %s did not run", name);
  return -1;
}

/* Checks in md that node ran on device, with the device-cuda plugin's
 * kernel when that is cuda:0. */
static void expect_ran_on(const wf_run_metadata *md, const char *node,
                          const char *device) {
  wf_node_stats ns;
  int i = stats_of(md, node, &ns);
  const char *plugin = wf_run_metadata_node_kernel_plugin(md, i);

  if (strcmp(ns.device, device) != 0)
    fail_msg("%s (%s) ran on %s, not %s", node, ns.op, ns.device, device);
  if (strcmp(device, "cuda:0") == 0 && strcmp(plugin, "device-cuda") != 0)
    fail_msg("%s (%s) ran %s's kernel on cuda:0, not device-cuda's", node,
             ns.op, plugin);
}

/* Prints every device request of md that placement could not meet;
 * returns how many there were. */
static int print_fallbacks(const wf_run_metadata *md, const char *what) {
  int n = wf_run_metadata_num_placements(md);

  for (int i = 0; i < n; i++) {
    wf_placement_info p;
    wf_run_metadata_placement(md, i, &p);
    print_message("%s: %s asked for %s, ran on %s: %s\n", what, p.node,
                  p.requested, p.device, p.reason);
  }
  return n;
}

static void expect_no_fallback(const wf_run_metadata *md, const char *what) {
  int n = print_fallbacks(md, what);

  if (n > 0)
    fail_msg("%s: %d device request(s) not met (listed above)", what, n);
}

/* Counts the _Recv nodes of md that ran on device. */
static int recvs_on(const wf_run_metadata *md, const char *device) {
  int n = 0;

  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    n += strcmp(ns.op, "_Recv") == 0 && strcmp(ns.device, device) == 0;
  }
  return n;
}

/* Same shape and dtype, and |got - want| <= tol (1 + |want|) for each
 * element. */
static void expect_close(const char *what, const wf_tensor *want,
                         const wf_tensor *got, double tol) {
  wf_shape a, b;

  wf_tensor_shape(want, &a);
  wf_tensor_shape(got, &b);
  if (!wf_shape_equal(&a, &b) || wf_tensor_dtype(want) != wf_tensor_dtype(got))
    fail_msg("%s: shape or dtype differs from the CPU's", what);
  for (int64_t i = 0; i < wf_tensor_count(want); i++) {
    double w = value_at(want, i), g = value_at(got, i);
    if (!(fabs(g - w) <= tol * (1 + fabs(w))))
      fail_msg("%s: element %lld: %.17g, cpu %.17g (tolerance %g (1 + |cpu|))",
               what, (long long)i, g, w, tol);
  }
}

/* ---- a chain split between the devices ----------------------------------- */

/* The chain's nodes and the device each asks for in the split graph (the
 * reference graph asks for cpu:0 everywhere). Every hop crosses devices,
 * and h3 and h5 read tensors made on both. */
static const struct {
  const char *name, *device;
} chain[] = {
    {"h1", "cuda:0"}, /* MatMul(x, w1): x and w1 come from cpu:0 */
    {"h2", "cpu:0"},  /* Relu(h1) */
    {"h3", "cuda:0"}, /* Add(h2, h1) */
    {"h4", "cpu:0"},  /* Tanh(h3) */
    {"h5", "cuda:0"}, /* Mul(Sigmoid(h3) on cuda:0, h4) */
    {"h6", "cuda:0"}, /* MatMul(h5, w2) */
    {"h7", "cpu:0"},  /* Sub(h6, w3) */
};

enum { ROWS = 33, INNER = 70, COLS = 17, OUT = 5 };

/* Builds the chain into g; split: the devices above, else cpu:0 for all.
 * fetch gets h3 (made on cuda:0 when split) and h7 (on cpu:0). */
static void build_chain(wf_graph *g, wf_dtype dt, int split, wf_output *x,
                        wf_output fetch[2]) {
  const char *dev[7];
  wf_output w1, w2, w3, h1, h2, h3, h4, sg, h5, h6, h7;

  for (int i = 0; i < 7; i++)
    dev[i] = split ? chain[i].device : "cpu:0";
  *x = placeholder(g, "x", dt, ROWS, INNER);
  /* Scaled so that each product is of order 1. */
  w1 = constant(g, "w1", filled(dt, INNER, COLS, 11, 1 / sqrt(INNER)), "cpu:0");
  w2 = constant(g, "w2", filled(dt, COLS, OUT, 12, 1 / sqrt(COLS)), "cpu:0");
  w3 = constant(g, "w3", filled(dt, ROWS, OUT, 13, 1), "cpu:0");
  h1 = op(g, "MatMul", "h1", *x, &w1, dev[0]);
  h2 = op(g, "Relu", "h2", h1, NULL, dev[1]);
  h3 = op(g, "Add", "h3", h2, &h1, dev[2]);
  h4 = op(g, "Tanh", "h4", h3, NULL, dev[3]);
  sg = op(g, "Sigmoid", "sg", h3, NULL, dev[4]);
  h5 = op(g, "Mul", "h5", sg, &h4, dev[4]);
  h6 = op(g, "MatMul", "h6", h5, &w2, dev[5]);
  h7 = op(g, "Sub", "h7", h6, &w3, dev[6]);
  fetch[0] = h3;
  fetch[1] = h7;
}

/* Runs the chain three times through one callable; out gets h3 and h7 of
 * the last run, md its metadata. The runs must agree bit for bit. */
static void run_chain(wf_dtype dt, int split, wf_tensor *xv, wf_tensor *out[2],
                      wf_run_metadata *md) {
  wf_graph *g = wf_graph_new(rt);
  wf_output x, fetch[2];
  wf_session *s;
  wf_callable *c;
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  wf_tensor *prev[2] = {NULL, NULL};

  assert_non_null(g);
  build_chain(g, dt, split, &x, fetch);
  s = wf_session_new(g, st);
  if (!s)
    fail_msg("session: %s", wf_status_message(st));
  c = wf_session_prepare(s, &x, 1, fetch, 2, NULL, 0, st);
  if (!c)
    fail_msg("prepare: %s", wf_status_message(st));
  opt.trace_level = WF_TRACE_NODES;
  for (int r = 0; r < 3; r++) {
    if (wf_callable_run(c, &opt, &xv, out, md, st))
      fail_msg("run %d of the %s chain (%s): %s", r, split ? "split" : "cpu",
               wf_dtype_name(dt), wf_status_message(st));
    for (int k = 0; k < 2 && r > 0; k++) {
      if (memcmp(wf_tensor_data(prev[k]), wf_tensor_data(out[k]),
                 wf_tensor_nbytes(out[k])) != 0)
        fail_msg("run %d of the %s chain (%s) gave other values than run %d", r,
                 split ? "split" : "cpu", wf_dtype_name(dt), r - 1);
      wf_tensor_release(prev[k]);
    }
    prev[0] = out[0];
    prev[1] = out[1];
  }
  wf_callable_free(c);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_chain_split_over_cpu_and_cuda_matches_the_cpu(void **state) {
  static const wf_dtype types[] = {WF_FLOAT32, WF_FLOAT64};

  (void)state;
  for (int t = 0; t < 2; t++) {
    wf_dtype dt = types[t];
    double tol = dt == WF_FLOAT32 ? 1e-4 : 1e-12;
    wf_tensor *xv = filled(dt, ROWS, INNER, 7, 1), *cpu[2], *split[2];
    wf_run_metadata *md = wf_run_metadata_new();
    char what[64];

    assert_non_null(md);
    run_chain(dt, 0, xv, cpu, md);
    for (size_t i = 0; i < sizeof chain / sizeof chain[0]; i++)
      expect_ran_on(md, chain[i].name, "cpu:0");
    run_chain(dt, 1, xv, split, md);
    expect_no_fallback(md, "split chain");
    for (size_t i = 0; i < sizeof chain / sizeof chain[0]; i++)
      expect_ran_on(md, chain[i].name, chain[i].device);
    expect_ran_on(md, "sg", "cuda:0");
    if (recvs_on(md, "cuda:0") == 0 || recvs_on(md, "cpu:0") == 0)
      fail_msg("split chain: %d _Recv on cuda:0 and %d on cpu:0; expected "
               "transfers both ways",
               recvs_on(md, "cuda:0"), recvs_on(md, "cpu:0"));
    for (int k = 0; k < 2; k++) {
      snprintf(what, sizeof what, "%s %s", k ? "h7" : "h3", wf_dtype_name(dt));
      expect_close(what, cpu[k], split[k], tol);
      wf_tensor_release(cpu[k]);
      wf_tensor_release(split[k]);
    }
    wf_run_metadata_free(md);
    wf_tensor_release(xv);
  }
}

/* ---- training a dense model ---------------------------------------------- */

enum { BATCH = 16, FEATURES = 6, HIDDEN = 8, CLASSES = 3, STEPS = 5 };

typedef struct trained {
  double loss[STEPS];
  int nvars;
  char *names[24];
  wf_tensor *values[24]; /* each variable after the last step */
} trained;

/* Trains the model STEPS steps with o, every node asking for device (the
 * placeholders excepted), into *out. md gets the first step's metadata. */
static void train(const wf_optimizer *o, const char *device, trained *out,
                  wf_run_metadata *md) {
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, BATCH, FEATURES);
  wf_output y = placeholder(g, "y", WF_INT32, BATCH, -1);
  wf_output feeds[2] = {x, y}, loss, reads[24];
  wf_model *m = wf_model_new(g, 21, st);
  wf_node *step, *init;
  wf_session *s;
  wf_tensor *vals[2];
  wf_run_options opt = WF_RUN_OPTIONS_INIT;

  assert_non_null(m);
  CHECK(wf_graph_push_device(g, device, st));
  wf_model_begin(m, 1);
  loss = wf_layer_dense(m, x, HIDDEN, WF_ACT_TANH, st);
  if (loss.node)
    loss = wf_layer_dense(m, loss, CLASSES, WF_ACT_NONE, st);
  if (loss.node)
    loss = wf_loss_sparse_softmax_cross_entropy(m, loss, y, st);
  if (!loss.node)
    fail_msg("model: %s", wf_status_message(st));
  step = wf_model_minimize(m, loss, o, st);
  if (!step)
    fail_msg("minimize: %s", wf_status_message(st));
  init = wf_model_init_op(m, st);
  if (!init)
    fail_msg("init: %s", wf_status_message(st));
  wf_graph_pop_device(g);

  /* A read of each variable, placed with it. */
  out->nvars = wf_model_num_variables(m);
  assert_true(out->nvars <= 24);
  for (int i = 0; i < out->nvars; i++) {
    wf_output h;
    const char *name = wf_model_variable_name(m, i, &h, NULL);
    wf_node_desc *d = wf_node_desc_new(g, "ReadVariable", NULL);
    wf_attr_value dtv;
    out->names[i] = strdup(name);
    CHECK(wf_node_get_attr(h.node, "dtype", &dtv, st));
    wf_node_desc_add_input(d, h);
    wf_node_desc_set_attr_dtype(d, "dtype", (wf_dtype)dtv.u.dtype);
    reads[i] = (wf_output){finish(d, name), 0};
  }

  vals[0] = wf_tensor_new(WF_FLOAT32, (int64_t[]){BATCH, FEATURES}, 2, st);
  vals[1] = wf_tensor_new(WF_INT32, (int64_t[]){BATCH}, 1, st);
  assert_true(vals[0] && vals[1]);
  for (int i = 0; i < BATCH * FEATURES; i++)
    ((float *)wf_tensor_data(vals[0]))[i] = (float)cos(i * 0.37);
  for (int i = 0; i < BATCH; i++)
    ((int32_t *)wf_tensor_data(vals[1]))[i] = i % CLASSES;

  s = wf_session_new(g, st);
  if (!s)
    fail_msg("session: %s", wf_status_message(st));
  CHECK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                       st));
  opt.trace_level = WF_TRACE_NODES;
  for (int k = 0; k < STEPS; k++) {
    wf_tensor *lv = NULL;
    if (wf_session_run(s, &opt, feeds, vals, 2, &loss, &lv, 1, &step, 1,
                       k == 0 ? md : NULL, st))
      fail_msg("step %d on %s: %s", k, device, wf_status_message(st));
    out->loss[k] = value_at(lv, 0);
    wf_tensor_release(lv);
  }
  CHECK(wf_session_run(s, NULL, NULL, NULL, 0, reads, out->values, out->nvars,
                       NULL, 0, NULL, st));
  wf_tensor_release(vals[0]);
  wf_tensor_release(vals[1]);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

static void trained_free(trained *t) {
  for (int i = 0; i < t->nvars; i++) {
    free(t->names[i]);
    wf_tensor_release(t->values[i]);
  }
}

/* The variables (VarHandle, ReadVariable), the apply ops and the MatMuls
 * of md's step ran on cuda:0, the last two with the device-cuda plugin's
 * kernels (variable nodes may run a kernel that serves every device). */
static void expect_state_on_cuda(const wf_run_metadata *md, const char *apply) {
  int applies = 0, matmuls = 0, vars = 0;

  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    const char *plugin = wf_run_metadata_node_kernel_plugin(md, i);
    int is_apply, is_var;
    wf_run_metadata_node(md, i, &ns);
    is_apply = strcmp(ns.op, apply) == 0;
    is_var =
        strcmp(ns.op, "VarHandle") == 0 || strcmp(ns.op, "ReadVariable") == 0;
    if (!is_apply && !is_var && strcmp(ns.op, "MatMul") != 0)
      continue;
    if (strcmp(ns.device, "cuda:0") != 0)
      fail_msg("%s (%s) ran on %s with %s's kernel, not on cuda:0%s", ns.node,
               ns.op, ns.device, plugin,
               is_var ? ": the variables are not on the GPU" : "");
    if (!is_var && strcmp(plugin, "device-cuda") != 0)
      fail_msg("%s (%s) ran %s's kernel on cuda:0, not device-cuda's", ns.node,
               ns.op, plugin);
    applies += is_apply;
    vars += is_var;
    matmuls += !is_apply && !is_var;
  }
  if (applies == 0 || vars == 0 || matmuls == 0)
    fail_msg("the step ran %d %s, %d variable and %d MatMul node(s) on "
             "cuda:0; expected some of each",
             applies, apply, vars, matmuls);
}

static void test_dense_training_on_cuda_matches_the_cpu(void **state) {
  static const struct {
    wf_optimizer_kind kind;
    const char *apply;
    double lr;
  } opts[] = {{WF_OPT_SGD, "ApplyGradientDescent", 0.1},
              {WF_OPT_ADAM, "ApplyAdam", 0.01}};
  int trained_with = 0;
  char missing[256] = "";

  (void)state;
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
    wf_optimizer o = wf_optimizer_defaults(opts[i].kind);
    wf_run_metadata *md;
    trained cpu = {0}, gpu = {0};
    char what[96];

    if (wf_runtime_kernel_select(rt, opts[i].apply, "cuda", WF_FLOAT32) < 0) {
      size_t n = strlen(missing);
      snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "",
               opts[i].apply);
      continue;
    }
    o.learning_rate = opts[i].lr;
    if (opts[i].kind == WF_OPT_ADAM)
      o.epsilon = 1e-3;
    md = wf_run_metadata_new();
    assert_non_null(md);
    train(&o, "cpu:0", &cpu, NULL);
    train(&o, "cuda:0", &gpu, md);
    /* Ops without a CUDA kernel may run on the CPU; say which did. */
    print_fallbacks(md, opts[i].apply);
    expect_state_on_cuda(md, opts[i].apply);
    for (int k = 0; k < STEPS; k++)
      if (!(fabs(gpu.loss[k] - cpu.loss[k]) <= 1e-5 * (1 + fabs(cpu.loss[k]))))
        fail_msg("%s: loss at step %d: cuda %.9g, cpu %.9g", opts[i].apply, k,
                 gpu.loss[k], cpu.loss[k]);
    if (!(cpu.loss[STEPS - 1] < cpu.loss[0]))
      fail_msg("%s: the loss did not fall (%.9g to %.9g)", opts[i].apply,
               cpu.loss[0], cpu.loss[STEPS - 1]);
    assert_int_equal(cpu.nvars, gpu.nvars);
    for (int v = 0; v < cpu.nvars; v++) {
      assert_string_equal(cpu.names[v], gpu.names[v]);
      snprintf(what, sizeof what, "%s: variable %s", opts[i].apply,
               cpu.names[v]);
      expect_close(what, cpu.values[v], gpu.values[v], 1e-5);
    }
    trained_free(&cpu);
    trained_free(&gpu);
    wf_run_metadata_free(md);
    trained_with++;
  }
  if (trained_with == 0)
    fail_msg("the cuda device has no float32 kernel for any apply op tried "
             "(%s)",
             missing);
  if (missing[0])
    print_message("not tried, no cuda kernel: %s\n", missing);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain_split_over_cpu_and_cuda_matches_the_cpu),
      cmocka_unit_test(test_dense_training_on_cuda_matches_the_cpu),
  };
  const char *dirs = getenv("WEFT_GPU_PLUGIN_DIRS");
  wf_config *cfg = wf_config_new();
  int rc = 77;

  st = wf_status_new();
  if (!cfg || !st || wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths", dirs && *dirs ? dirs : PLUGIN_DIRS,
                    st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      !(rt = wf_runtime_new(cfg, st))) {
    fprintf(stderr, "cannot load the plugins: %s\n",
            st ? wf_status_message(st) : "out of memory");
    rc = 1;
    goto out;
  }
  for (int i = 0; i < wf_runtime_device_count(rt); i++) {
    wf_device_info d;
    wf_runtime_device_get(rt, i, &d);
    if (strcmp(d.name, "cuda:0") != 0)
      continue;
    if (!d.available) {
      printf("SKIP: cuda:0 is unavailable (%s)\n", d.reason);
      goto out;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    goto out;
  }
  printf("SKIP: no cuda:0 listed\n");

out:
  wf_runtime_free(rt);
  wf_config_free(cfg);
  wf_status_free(st);
  return rc;
}
