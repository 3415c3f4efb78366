/* tests/session/test_backends.c — one program on different kernels by
 * config alone: a dense layer (MatMul, BiasAdd, Relu) and a Conv2D, and a
 * small cnn's training steps, under the default kernels and under
 * [kernels] deny = onednn, openblas (the reference kernels), agree within
 * stated tolerances while the run metadata names different kernels for the
 * same nodes; prefer, OP:LABEL items, an op whose every kernel is denied,
 * malformed items, config items that name nothing loaded (noted in the run
 * metadata and logged once with file and line), [devices] order naming an
 * absent device type, fusion of denied fused ops, and the kernels in the
 * Chrome trace. Uses the built-in plugins of the build tree. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

static wf_status *st;
static char tmpdir[64];

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  strcpy(tmpdir, "/tmp/weft-test-backends-XXXXXX");
  assert_non_null(mkdtemp(tmpdir));
  return 0;
}

static int teardown(void **state) {
  char cmd[128];
  (void)state;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  assert_int_equal(system(cmd), 0);
  wf_status_free(st);
  return 0;
}

/* ---- runtimes from config files ------------------------------------------ */

/* Writes text to tmpdir/name; returns the path (static buffer). */
static const char *write_conf(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* A runtime with the build tree's plugins and the config file `text` (NULL:
 * the defaults). */
static wf_runtime *runtime(const char *text) {
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  /* The CUDA plugin (built when CUDA is found) stays out: "cuda" stands
   * for a device type no plugin provides here. */
  OK(wf_config_set(cfg, "plugins", "deny", "device-cuda", st));
  if (text)
    OK(wf_config_load(cfg, write_conf("weft.conf", text), st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  return rt;
}

static const char reference_only[] = "[kernels]\n"
                                     "deny = onednn, openblas\n";

/* ---- the dense layer and the convolution --------------------------------- */

enum { N = 4, D = 8, U = 5 };        /* dense: x (N, D), W (D, U) */
enum { B = 2, H = 6, C = 3, F = 4 }; /* conv: image (B, H, H, C), F out */

/* Deterministic values in [-1, 1]. */
static float value(int i, double phase) { return (float)sin(0.37 * i + phase); }

static wf_node *finish(wf_node_desc *d) {
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("adding a node: %s", wf_status_message(st));
  return n;
}

static wf_tensor *filled(const int64_t *dims, int rank, double phase) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, rank, st);
  assert_non_null(t);
  float *v = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    v[i] = value((int)i, phase);
  return t;
}

static wf_output konst(wf_graph *g, const char *name, const int64_t *dims,
                       int rank, double phase) {
  wf_tensor *t = filled(dims, rank, phase);
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_tensor_release(t);
  return (wf_output){finish(d), 0};
}

static wf_output placeholder(wf_graph *g, const char *name, const int64_t *dims,
                             int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return (wf_output){finish(d), 0};
}

static wf_output op2(wf_graph *g, const char *op, const char *name, wf_output a,
                     wf_output b) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node_desc_add_input(d, a);
  wf_node_desc_add_input(d, b);
  return (wf_output){finish(d), 0};
}

/* relu(x W + b) and conv(image, K) ("SAME", stride 1, NHWC), fed x and
 * image. */
typedef struct layers {
  wf_graph *g;
  wf_output feeds[2];
  wf_tensor *values[2];
  wf_output fetches[2];
} layers;

static const int64_t x_dims[2] = {N, D}, w_dims[2] = {D, U}, b_dims[1] = {U};
static const int64_t img_dims[4] = {B, H, H, C}, k_dims[4] = {3, 3, C, F};

static layers layers_build(wf_runtime *rt, const char *conv_device) {
  layers l;
  memset(&l, 0, sizeof l);
  l.g = wf_graph_new(rt);
  assert_non_null(l.g);
  l.feeds[0] = placeholder(l.g, "x", x_dims, 2);
  l.values[0] = filled(x_dims, 2, 0.1);
  wf_output w = konst(l.g, "w", w_dims, 2, 0.2);
  wf_output b = konst(l.g, "b", b_dims, 1, 0.3);
  wf_output mm = op2(l.g, "MatMul", "dense_matmul", l.feeds[0], w);
  wf_output ba = op2(l.g, "BiasAdd", "dense_bias", mm, b);
  wf_node_desc *d = wf_node_desc_new(l.g, "Relu", "dense_relu");
  wf_node_desc_add_input(d, ba);
  l.fetches[0] = (wf_output){finish(d), 0};

  l.feeds[1] = placeholder(l.g, "image", img_dims, 4);
  l.values[1] = filled(img_dims, 4, 0.4);
  wf_output k = konst(l.g, "filter", k_dims, 4, 0.5);
  static const int64_t ones[4] = {1, 1, 1, 1};
  d = wf_node_desc_new(l.g, "Conv2D", "conv");
  wf_node_desc_add_input(d, l.feeds[1]);
  wf_node_desc_add_input(d, k);
  wf_node_desc_set_attr_int_list(d, "strides", ones, 4);
  wf_node_desc_set_attr_string(d, "padding", "SAME");
  if (conv_device)
    wf_node_desc_set_device(d, conv_device);
  l.fetches[1] = (wf_output){finish(d), 0};
  return l;
}

static void layers_free(layers *l) {
  wf_tensor_release(l->values[0]);
  wf_tensor_release(l->values[1]);
  wf_graph_free(l->g);
}

/* Runs l traced into md (trace: WF_TRACE_NODES or NONE); out gets the two
 * fetched tensors. */
static int layers_run(layers *l, wf_run_metadata *md, int trace,
                      wf_tensor **out) {
  wf_session *s = wf_session_new(l->g, st);
  assert_non_null(s);
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.trace_level = trace;
  int rc = wf_session_run(s, &opt, l->feeds, l->values, 2, l->fetches, out, 2,
                          NULL, 0, md, st);
  wf_session_free(s);
  return rc;
}

/* What the layers compute, in double, straight from their definitions. */
static double dense_expected(int n, int u) {
  double acc = value(u, 0.3);
  for (int k = 0; k < D; k++)
    acc += (double)value(n * D + k, 0.1) * value(k * U + u, 0.2);
  return acc > 0 ? acc : 0;
}

static double conv_expected(int b, int y, int x, int f) {
  double acc = 0;
  for (int ky = 0; ky < 3; ky++)
    for (int kx = 0; kx < 3; kx++)
      for (int c = 0; c < C; c++) {
        int iy = y + ky - 1, ix = x + kx - 1;
        if (iy < 0 || iy >= H || ix < 0 || ix >= H)
          continue;
        acc += (double)value(((b * H + iy) * H + ix) * C + c, 0.4) *
               value(((ky * 3 + kx) * C + c) * F + f, 0.5);
      }
  return acc;
}

/* Float32 products of 8 to 27 terms in [-1, 1], accumulated in any order
 * or in double: within 1e-5 absolute plus 1e-5 relative of the exact. */
#define TOL(x) (1e-5 + 1e-5 * fabs(x))

static void check_layers(wf_tensor *const *out) {
  const float *dense = wf_tensor_data(out[0]), *conv = wf_tensor_data(out[1]);
  assert_int_equal(wf_tensor_count(out[0]), N * U);
  assert_int_equal(wf_tensor_count(out[1]), B * H * H * F);
  for (int n = 0; n < N; n++)
    for (int u = 0; u < U; u++) {
      double want = dense_expected(n, u);
      assert_float_equal(dense[n * U + u], want, TOL(want));
    }
  for (int b = 0; b < B; b++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < H; x++)
        for (int f = 0; f < F; f++) {
          double want = conv_expected(b, y, x, f);
          assert_float_equal(conv[((b * H + y) * H + x) * F + f], want,
                             TOL(want));
        }
}

/* Two runs' fetches agree element by element within TOL. */
static void assert_close(wf_tensor *const *a, wf_tensor *const *b) {
  for (int t = 0; t < 2; t++) {
    const float *x = wf_tensor_data(a[t]), *y = wf_tensor_data(b[t]);
    assert_int_equal(wf_tensor_count(a[t]), wf_tensor_count(b[t]));
    for (int64_t i = 0; i < wf_tensor_count(a[t]); i++)
      assert_float_equal(x[i], y[i], TOL(y[i]));
  }
}

/* Index of the node record of the node called name (or, name NULL, the
 * first of op); -1 when none. */
static int record_of(const wf_run_metadata *md, const char *name,
                     const char *op) {
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    if (name ? strcmp(ns.node, name) == 0 : strcmp(ns.op, op) == 0)
      return i;
  }
  return -1;
}

/* 1 when label names onednn or OpenBLAS ("onednn", "onednn/openblas"). */
static int is_library_kernel(const char *label) {
  return strstr(label, "onednn") || strstr(label, "openblas");
}

static void release2(wf_tensor **t) {
  wf_tensor_release(t[0]);
  wf_tensor_release(t[1]);
  t[0] = t[1] = NULL;
}

static void test_layers_agree_on_library_and_reference_kernels(void **state) {
  (void)state;
  wf_runtime *dflt = runtime(NULL), *ref = runtime(reference_only);
  layers a = layers_build(dflt, NULL), b = layers_build(ref, NULL);
  wf_run_metadata *ma = wf_run_metadata_new(), *mb = wf_run_metadata_new();
  wf_tensor *oa[2] = {NULL, NULL}, *ob[2] = {NULL, NULL};
  OK(layers_run(&a, ma, WF_TRACE_NODES, oa));
  OK(layers_run(&b, mb, WF_TRACE_NODES, ob));
  check_layers(oa);
  check_layers(ob);
  assert_close(oa, ob);

  /* Fusion made the dense layer one node in both; the same nodes ran, on
   * onednn (with OpenBLAS for the product) by default and on the op
   * plugins' reference kernels when those are denied. */
  assert_int_equal(wf_run_metadata_num_nodes(ma),
                   wf_run_metadata_num_nodes(mb));
  int fa = record_of(ma, NULL, "_FusedMatMul");
  int fb = record_of(mb, NULL, "_FusedMatMul");
  assert_true(fa >= 0 && fb >= 0);
  wf_node_stats sa, sb;
  wf_run_metadata_node(ma, fa, &sa);
  wf_run_metadata_node(mb, fb, &sb);
  assert_string_equal(sa.node, sb.node);
  assert_string_equal(wf_run_metadata_node_kernel(ma, fa), "onednn/openblas");
  assert_string_equal(wf_run_metadata_node_kernel_plugin(ma, fa), "device-cpu");
  assert_string_equal(wf_run_metadata_node_kernel(mb, fb), "reference");
  assert_string_equal(wf_run_metadata_node_kernel_plugin(mb, fb), "ops-math");
  int ca = record_of(ma, "conv", NULL), cb = record_of(mb, "conv", NULL);
  assert_true(ca >= 0 && cb >= 0);
  assert_string_equal(wf_run_metadata_node_kernel(ma, ca), "onednn");
  assert_string_equal(wf_run_metadata_node_kernel_plugin(ma, ca), "device-cpu");
  assert_string_equal(wf_run_metadata_node_kernel(mb, cb), "reference");
  assert_string_equal(wf_run_metadata_node_kernel_plugin(mb, cb), "ops-nn");
  for (int i = 0; i < wf_run_metadata_num_nodes(mb); i++)
    assert_false(is_library_kernel(wf_run_metadata_node_kernel(mb, i)));
  /* Nothing in either config named something missing. */
  assert_int_equal(wf_run_metadata_num_notes(ma), 0);
  assert_int_equal(wf_run_metadata_num_notes(mb), 0);

  release2(oa);
  release2(ob);
  wf_run_metadata_free(ma);
  wf_run_metadata_free(mb);
  layers_free(&a);
  layers_free(&b);
  wf_runtime_free(dflt);
  wf_runtime_free(ref);
}

/* Without fusion each op of the dense layer is its own node: MatMul and
 * Relu change kernels, BiasAdd keeps the CPU plugin's loop kernel (its
 * label names neither library). */
static void test_unfused_nodes_each_show_their_kernel(void **state) {
  (void)state;
  wf_runtime *dflt = runtime("[passes]\nfusion = false\n");
  wf_runtime *ref = runtime("[passes]\nfusion = false\n"
                            "[kernels]\ndeny = onednn, openblas\n");
  layers a = layers_build(dflt, NULL), b = layers_build(ref, NULL);
  wf_run_metadata *ma = wf_run_metadata_new(), *mb = wf_run_metadata_new();
  wf_tensor *oa[2] = {NULL, NULL}, *ob[2] = {NULL, NULL};
  OK(layers_run(&a, ma, WF_TRACE_NODES, oa));
  OK(layers_run(&b, mb, WF_TRACE_NODES, ob));
  check_layers(oa);
  check_layers(ob);
  assert_close(oa, ob);
  static const struct {
    const char *node, *dflt, *ref;
  } want[] = {{"dense_matmul", "onednn/openblas", "reference"},
              {"dense_bias", "loops", "loops"},
              {"dense_relu", "onednn", "reference"},
              {"conv", "onednn", "reference"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int ra = record_of(ma, want[i].node, NULL);
    int rb = record_of(mb, want[i].node, NULL);
    if (ra < 0 || rb < 0)
      fail_msg("node '%s' has no record", want[i].node);
    assert_string_equal(wf_run_metadata_node_kernel(ma, ra), want[i].dflt);
    assert_string_equal(wf_run_metadata_node_kernel(mb, rb), want[i].ref);
  }
  release2(oa);
  release2(ob);
  wf_run_metadata_free(ma);
  wf_run_metadata_free(mb);
  layers_free(&a);
  layers_free(&b);
  wf_runtime_free(dflt);
  wf_runtime_free(ref);
}

/* A fused op whose every kernel is denied is not made: the chain runs as
 * its own nodes, with the same values. */
static void test_fusion_skips_fused_ops_the_config_denies(void **state) {
  (void)state;
  wf_runtime *rt = runtime("[kernels]\ndeny = _FusedMatMul:*\n");
  layers l = layers_build(rt, NULL);
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *out[2] = {NULL, NULL};
  OK(layers_run(&l, md, WF_TRACE_NODES, out));
  check_layers(out);
  release2(out);
  assert_int_equal(record_of(md, NULL, "_FusedMatMul"), -1);
  int mm = record_of(md, "dense_matmul", NULL);
  assert_true(mm >= 0);
  assert_string_equal(wf_run_metadata_node_kernel(md, mm), "onednn/openblas");
  assert_int_equal(wf_run_metadata_num_notes(md), 0);
  wf_run_metadata_free(md);
  layers_free(&l);
  wf_runtime_free(rt);
}

/* ---- a training step --------------------------------------------------- */

/* Three SGD steps of a small cnn (conv 3x3 4 ReLU, dense 16 ReLU, dense 10,
 * softmax cross-entropy) on a fixed batch from the same initial weights:
 * the loss of each step into losses; md gets the trace of the last one. */
static void train_losses(wf_runtime *rt, double *losses, wf_run_metadata *md) {
  enum { TB = 8, TH = 8 };
  wf_graph *g = wf_graph_new(rt);
  assert_non_null(g);
  const int64_t xd[4] = {TB, TH, TH, 1}, yd[1] = {TB};
  wf_output x = placeholder(g, "x", xd, 4);
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "y");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT32);
  wf_node_desc_set_attr_shape(d, "shape", yd, 1);
  wf_output y = {finish(d), 0};
  wf_tensor *xv = filled(xd, 4, 0.7);
  wf_tensor *yv = wf_tensor_new(WF_INT32, yd, 1, st);
  assert_non_null(yv);
  for (int i = 0; i < TB; i++)
    ((int32_t *)wf_tensor_data(yv))[i] = (i * 3) % 10;

  wf_model *m = wf_model_new(g, 11, st);
  assert_non_null(m);
  wf_model_begin(m, 1);
  wf_output h = wf_layer_conv2d(m, x, 4, 3, 3, 1, "SAME", WF_ACT_RELU, st);
  h = wf_layer_flatten(m, h, st);
  h = wf_layer_dense(m, h, 16, WF_ACT_RELU, st);
  wf_output logits = wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
  wf_output loss = wf_loss_sparse_softmax_cross_entropy(m, logits, y, st);
  if (!loss.node)
    fail_msg("model: %s", wf_status_message(st));
  wf_optimizer o = wf_optimizer_defaults(WF_OPT_SGD);
  o.learning_rate = 0.1;
  wf_node *step = wf_model_minimize(m, loss, &o, st);
  if (!step)
    fail_msg("minimize: %s", wf_status_message(st));
  wf_node *init = wf_model_init_op(m, st);
  assert_non_null(init);

  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, st));
  wf_output feeds[2] = {x, y};
  wf_tensor *vals[2] = {xv, yv};
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.trace_level = WF_TRACE_NODES;
  for (int k = 0; k < 3; k++) {
    wf_tensor *lv = NULL;
    OK(wf_session_run(s, k == 2 ? &opt : NULL, feeds, vals, 2, &loss, &lv, 1,
                      &step, 1, k == 2 ? md : NULL, st));
    losses[k] = wf_tensor_element(lv, 0);
    wf_tensor_release(lv);
  }
  wf_session_free(s);
  wf_model_free(m);
  wf_tensor_release(xv);
  wf_tensor_release(yv);
  wf_graph_free(g);
}

static void
test_training_steps_agree_on_library_and_reference_kernels(void **state) {
  (void)state;
  wf_runtime *dflt = runtime(NULL), *ref = runtime(reference_only);
  wf_run_metadata *ma = wf_run_metadata_new(), *mb = wf_run_metadata_new();
  double la[3], lb[3];
  train_losses(dflt, la, ma);
  train_losses(ref, lb, mb);
  /* SGD keeps the kernels' float32 rounding differences proportional: a
   * relative 1e-4 over three steps. */
  for (int k = 0; k < 3; k++)
    assert_float_equal(la[k], lb[k], 1e-4 * fabs(lb[k]) + 1e-6);
  assert_true(la[2] < la[0]);

  /* The same step ran on different kernels: every node that ran on a
   * library kernel by default ran on a reference kernel under the deny. */
  int library = 0;
  for (int i = 0; i < wf_run_metadata_num_nodes(ma); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(ma, i, &ns);
    if (!is_library_kernel(wf_run_metadata_node_kernel(ma, i)))
      continue;
    library++;
    int j = record_of(mb, ns.node, NULL);
    if (j < 0)
      fail_msg("node '%s' (%s) ran by default but not under the deny", ns.node,
               ns.op);
    assert_string_equal(wf_run_metadata_node_kernel(mb, j), "reference");
  }
  assert_true(library >= 4); /* conv forward and backward, products, relu */
  for (int i = 0; i < wf_run_metadata_num_nodes(mb); i++)
    assert_false(is_library_kernel(wf_run_metadata_node_kernel(mb, i)));
  wf_run_metadata_free(ma);
  wf_run_metadata_free(mb);
  wf_runtime_free(dflt);
  wf_runtime_free(ref);
}

/* ---- prefer, items and introspection ------------------------------------ */

static void
test_prefer_ranks_named_kernels_above_higher_priorities(void **state) {
  (void)state;
  /* prefer alone: reference wins although onednn has the higher priority;
   * an OP:LABEL prefer moves only that op. */
  wf_runtime *all = runtime("[kernels]\nprefer = reference\n");
  wf_runtime *conv = runtime("[kernels]\nprefer = Conv2D:REFERENCE\n");
  layers a = layers_build(all, NULL), b = layers_build(conv, NULL);
  wf_run_metadata *ma = wf_run_metadata_new(), *mb = wf_run_metadata_new();
  wf_tensor *oa[2] = {NULL, NULL}, *ob[2] = {NULL, NULL};
  OK(layers_run(&a, ma, WF_TRACE_NODES, oa));
  OK(layers_run(&b, mb, WF_TRACE_NODES, ob));
  check_layers(oa);
  check_layers(ob);
  assert_string_equal(
      wf_run_metadata_node_kernel(ma, record_of(ma, NULL, "_FusedMatMul")),
      "reference");
  assert_string_equal(
      wf_run_metadata_node_kernel(ma, record_of(ma, "conv", NULL)),
      "reference");
  assert_string_equal(
      wf_run_metadata_node_kernel(mb, record_of(mb, NULL, "_FusedMatMul")),
      "onednn/openblas");
  assert_string_equal(
      wf_run_metadata_node_kernel(mb, record_of(mb, "conv", NULL)),
      "reference");
  release2(oa);
  release2(ob);
  wf_run_metadata_free(ma);
  wf_run_metadata_free(mb);
  layers_free(&a);
  layers_free(&b);
  wf_runtime_free(all);
  wf_runtime_free(conv);
}

/* The index of op's kernel on cpu labelled label; fails when none. */
static int kernel_index(wf_runtime *rt, const char *op, const char *label) {
  for (int i = 0; i < wf_runtime_kernel_count(rt); i++) {
    wf_kernel_info k;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.op, op) == 0 && strcmp(k.device_type, "cpu") == 0 && k.label &&
        strcmp(k.label, label) == 0)
      return i;
  }
  fail_msg("no kernel '%s' for %s on cpu", label, op);
  return -1;
}

static void test_deny_items_match_label_parts_ignoring_case(void **state) {
  (void)state;
  /* OPENBLAS matches the "onednn/openblas" product kernels only; prefer
   * cannot bring back what deny excludes. */
  wf_runtime *rt = runtime("[kernels]\ndeny = OPENBLAS\n"
                           "prefer = onednn/openblas, Relu:onednn\n");
  int mm_lib = kernel_index(rt, "MatMul", "onednn/openblas");
  int mm_ref = kernel_index(rt, "MatMul", "reference");
  int conv_lib = kernel_index(rt, "Conv2D", "onednn");
  int conv_wino = kernel_index(rt, "Conv2D", "onednn/winograd");
  int conv_own = kernel_index(rt, "Conv2D", "loops/winograd");
  int conv_shallow = kernel_index(rt, "Conv2D", "loops/shallow");
  int relu_lib = kernel_index(rt, "Relu", "onednn");
  assert_string_equal(wf_runtime_kernel_denied(rt, mm_lib), "OPENBLAS");
  assert_null(wf_runtime_kernel_denied(rt, mm_ref));
  assert_null(wf_runtime_kernel_denied(rt, conv_lib));
  assert_null(wf_runtime_kernel_denied(rt, conv_wino));
  assert_null(wf_runtime_kernel_denied(rt, conv_own));
  assert_null(wf_runtime_kernel_denied(rt, conv_shallow));
  assert_string_equal(wf_runtime_kernel_preferred(rt, mm_lib),
                      "onednn/openblas");
  assert_string_equal(wf_runtime_kernel_preferred(rt, relu_lib), "Relu:onednn");
  assert_null(wf_runtime_kernel_preferred(rt, conv_lib));
  assert_int_equal(wf_runtime_kernel_select(rt, "MatMul", "cpu", WF_FLOAT32),
                   mm_ref);
  /* The plugin's loops for shallow inputs rank first, then the Winograd
   * kernels, the plugin's own loops before oneDNN's (each declines the
   * nodes it does not serve when they are placed; onednn's direct kernel
   * takes the rest), and say that they may decline. */
  {
    wf_kernel_info si, oi, wi, di;
    wf_runtime_kernel_get(rt, conv_shallow, &si);
    wf_runtime_kernel_get(rt, conv_own, &oi);
    wf_runtime_kernel_get(rt, conv_wino, &wi);
    wf_runtime_kernel_get(rt, conv_lib, &di);
    assert_true(si.flags & WF_KERNEL_SELECTIVE);
    assert_true(si.priority > oi.priority);
    assert_true(oi.flags & WF_KERNEL_SELECTIVE);
    assert_true(wi.flags & WF_KERNEL_SELECTIVE);
    assert_false(di.flags & WF_KERNEL_SELECTIVE);
  }
  assert_int_equal(wf_runtime_kernel_select(rt, "Conv2D", "cpu", WF_FLOAT32),
                   conv_shallow);
  /* onednn's Conv2D is float32 only: float64 goes to the reference. */
  assert_int_equal(wf_runtime_kernel_select(rt, "Conv2D", "cpu", WF_FLOAT64),
                   kernel_index(rt, "Conv2D", "reference"));
  assert_int_equal(wf_runtime_kernel_select(rt, "Conv2D", "cpu", WF_BOOL), -1);
  assert_int_equal(wf_runtime_kernel_select(rt, "Conv2D", "cuda", WF_FLOAT32),
                   -1);
  assert_int_equal(wf_runtime_kernel_select(rt, "NoSuchOp", "cpu", WF_FLOAT32),
                   -1);
  wf_runtime_free(rt);
}

static void
test_op_whose_every_kernel_is_denied_fails_naming_the_config(void **state) {
  (void)state;
  wf_runtime *rt = runtime("[kernels]\n"
                           "deny = onednn,\n"
                           "  Conv2D:reference\n");
  layers l = layers_build(rt, NULL);
  wf_tensor *out[2] = {NULL, NULL};
  assert_int_equal(layers_run(&l, NULL, WF_TRACE_NONE, out), WF_NOT_FOUND);
  assert_null(out[0]);
  const char *m = wf_status_message(st);
  const char *parts[] = {"'conv'",
                         "Conv2D",
                         "cpu",
                         "denied by the config",
                         "[kernels] deny = onednn (",
                         "weft.conf:2)",
                         "[kernels] deny = Conv2D:reference (",
                         "weft.conf:3)"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (!strstr(m, parts[i]))
      fail_msg("message lacks '%s': %s", parts[i], m);
  /* The dense layer alone still runs: only Conv2D lost every kernel. */
  wf_session *s = wf_session_new(l.g, st);
  wf_tensor *v = NULL;
  OK(wf_session_run(s, NULL, l.feeds, l.values, 1, l.fetches, &v, 1, NULL, 0,
                    NULL, st));
  wf_tensor_release(v);
  wf_session_free(s);
  layers_free(&l);
  wf_runtime_free(rt);
}

/* The contents of a small file (static buffer). */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The Chrome trace names every node's kernel, the fallback of a node that
 * asked for a device that does not exist here, and the config's notes. */
static void test_trace_names_kernels_fallbacks_and_notes(void **state) {
  (void)state;
  wf_runtime *rt = runtime("[devices]\norder = cuda, cpu\n");
  layers l = layers_build(rt, "cuda:0");
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *out[2] = {NULL, NULL};
  OK(layers_run(&l, md, WF_TRACE_NODES, out));
  check_layers(out);
  release2(out);
  assert_int_equal(wf_run_metadata_num_placements(md), 1);
  char path[128];
  snprintf(path, sizeof path, "%s/trace.json", tmpdir);
  OK(wf_run_metadata_write_trace(md, path, st));
  const char *t = slurp(path);
  const char *parts[] = {
      "\"kernel\":\"onednn\"",
      "\"kernel_plugin\":\"device-cpu\"",
      "\"kernel\":\"onednn/openblas\"",
      "\"requested\":\"cuda:0\",\"placement\":\"no device 'cuda:0' is known\"",
      "\"placements\":[{\"node\":\"conv\",\"requested\":\"cuda:0\","
      "\"device\":\"cpu:0\"",
      "\"notes\":[\"",
      "[devices] order names device type 'cuda', which no loaded plugin "
      "provides; skipped\"]"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (!strstr(t, parts[i]))
      fail_msg("trace lacks '%s':\n%s", parts[i], t);
  wf_run_metadata_free(md);
  layers_free(&l);
  wf_runtime_free(rt);
}

/* ---- config items that name nothing loaded ------------------------------ */

static void test_device_order_naming_an_absent_type_is_skipped(void **state) {
  (void)state;
  wf_runtime *rt = runtime("[devices]\n"
                           "order = cuda, cpu\n");
  layers l = layers_build(rt, NULL);
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *out[2] = {NULL, NULL};
  OK(layers_run(&l, md, WF_TRACE_NODES, out));
  check_layers(out);
  release2(out);
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    assert_string_equal(ns.device, "cpu:0");
  }
  assert_int_equal(wf_run_metadata_num_placements(md), 0);
  assert_int_equal(wf_run_metadata_num_notes(md), 1);
  const char *note = wf_run_metadata_note(md, 0);
  if (!strstr(note, "weft.conf:2: [devices] order names device type 'cuda', "
                    "which no loaded plugin provides; skipped"))
    fail_msg("note: %s", note);
  /* Untraced runs list the note too, and each node with its kernel (not
   * its times). */
  int traced_nodes = wf_run_metadata_num_nodes(md);
  const char *kernel0 = wf_run_metadata_node_kernel(md, 0);
  const char *plugin0 = wf_run_metadata_node_kernel_plugin(md, 0);
  OK(layers_run(&l, md, WF_TRACE_NONE, out));
  release2(out);
  assert_int_equal(wf_run_metadata_num_nodes(md), traced_nodes);
  assert_true(traced_nodes > 0);
  assert_string_equal(wf_run_metadata_node_kernel(md, 0), kernel0);
  assert_string_equal(wf_run_metadata_node_kernel_plugin(md, 0), plugin0);
  assert_true(plugin0[0] != 0);
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    assert_string_equal(ns.device, "cpu:0");
    assert_non_null(ns.op);
    assert_true(ns.start_ns == 0 && ns.end_ns == 0 && ns.thread == -1);
  }
  assert_int_equal(wf_run_metadata_num_notes(md), 1);
  wf_run_metadata_free(md);
  layers_free(&l);
  wf_runtime_free(rt);

  /* Set by a program, the note says "config"; a type that no plugin
   * provides is no error even when it is the only one named. */
  wf_config *cfg = wf_config_new();
  OK(wf_config_set(cfg, "devices", "order", "cuda", st));
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  assert_non_null(rt);
  l = layers_build(rt, NULL);
  md = wf_run_metadata_new();
  OK(layers_run(&l, md, WF_TRACE_NONE, out));
  check_layers(out);
  release2(out);
  assert_int_equal(wf_run_metadata_num_notes(md), 1);
  assert_non_null(strstr(wf_run_metadata_note(md, 0), "config: [devices] "
                                                      "order names device "
                                                      "type 'cuda'"));
  wf_run_metadata_free(md);
  layers_free(&l);
  wf_runtime_free(rt);
}

/* How often needle occurs in text. */
static int count_occurrences(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

static void test_items_naming_nothing_are_noted_and_logged_once(void **state) {
  (void)state;
  /* stderr goes to a file while two sessions run two signatures. */
  char log_path[128];
  snprintf(log_path, sizeof log_path, "%s/stderr.log", tmpdir);
  fflush(stderr);
  int saved = dup(2);
  FILE *log = fopen(log_path, "w");
  assert_true(saved >= 0 && log);
  assert_int_equal(dup2(fileno(log), 2), 2);
  const char *old_level = getenv("WEFT_LOG_LEVEL");
  char *saved_level = old_level ? strdup(old_level) : NULL;
  setenv("WEFT_LOG_LEVEL", "info", 1);

  wf_runtime *rt = runtime("[kernels]\n"
                           "deny = onedn\n"
                           "prefer = reference,\n"
                           "  Conv3D:onednn, Conv2D:cudnn\n"
                           "[devices]\n"
                           "order = cuda, cpu\n");
  layers l = layers_build(rt, NULL);
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *out[2] = {NULL, NULL};
  OK(layers_run(&l, md, WF_TRACE_NONE, out));
  release2(out);
  /* A second signature (the dense layer alone) in a second session. */
  wf_session *s = wf_session_new(l.g, st);
  wf_tensor *v = NULL;
  OK(wf_session_run(s, NULL, l.feeds, l.values, 1, l.fetches, &v, 1, NULL, 0,
                    md, st));
  wf_tensor_release(v);
  wf_session_free(s);

  fflush(stderr);
  assert_int_equal(dup2(saved, 2), 2);
  close(saved);
  fclose(log);
  if (saved_level)
    setenv("WEFT_LOG_LEVEL", saved_level, 1);
  else
    unsetenv("WEFT_LOG_LEVEL");
  free(saved_level);

  static const char *const want[] = {
      "weft.conf:6: [devices] order names device type 'cuda', which no "
      "loaded plugin provides; skipped",
      "weft.conf:2: [kernels] deny item 'onedn' matches no kernel label (the "
      "labels are ",
      "weft.conf:4: [kernels] prefer item 'Conv3D:onednn' names op "
      "'Conv3D', which has no kernel here; ignored",
      "weft.conf:4: [kernels] prefer item 'Conv2D:cudnn' matches none of the "
      "kernels of op 'Conv2D' (labelled loops/shallow, loops/winograd, "
      "onednn/winograd, onednn, reference); "
      "ignored"};
  enum { NWANT = sizeof want / sizeof want[0] };
  assert_int_equal(wf_run_metadata_num_notes(md), NWANT);
  const char *logged = slurp(log_path);
  for (int i = 0; i < NWANT; i++) {
    if (!strstr(wf_run_metadata_note(md, i), want[i]))
      fail_msg("note %d: '%s' lacks '%s'", i, wf_run_metadata_note(md, i),
               want[i]);
    if (count_occurrences(logged, want[i]) != 1)
      fail_msg("'%s' is logged %d times, not once:\n%s", want[i],
               count_occurrences(logged, want[i]), logged);
  }
  assert_int_equal(count_occurrences(logged, "[config] info: "), 1);
  assert_int_equal(count_occurrences(logged, "[config] warning: "), 3);
  wf_run_metadata_free(md);
  layers_free(&l);
  wf_runtime_free(rt);
}

static void
test_malformed_kernel_items_are_refused_with_file_and_line(void **state) {
  (void)state;
  static const char *const bad[] = {
      "*",       "a:b:c",   "Conv2D:",   ":onednn",   "one dnn",
      "onednn/", "/onednn", "onednn//x", "Conv 2D:x", "Conv2D:*x"};
  wf_config *cfg = wf_config_new();
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(wf_config_set(cfg, "kernels", "deny", bad[i], st),
                     WF_INVALID_ARGUMENT);
    assert_non_null(strstr(wf_status_message(st), bad[i]));
    assert_int_equal(wf_config_set(cfg, "kernels", "prefer", bad[i], st),
                     WF_INVALID_ARGUMENT);
  }
  OK(wf_config_set(cfg, "kernels", "deny",
                   "onednn/openblas, Conv2D:*, _FusedMatMul:reference, "
                   "loops",
                   st));
  const char *path = write_conf("bad.conf", "[kernels]\n"
                                            "prefer = reference\n"
                                            "deny = onednn,\n"
                                            "  Conv2D:\n");
  assert_int_equal(wf_config_load(cfg, path, st), WF_INVALID_ARGUMENT);
  const char *m = wf_status_message(st);
  if (!strstr(m, "bad.conf:4: bad value 'Conv2D:' for deny in [kernels]"))
    fail_msg("message: %s", m);
  path = write_conf("bad.conf", "[kernels]\nrefuse = onednn\n");
  assert_int_equal(wf_config_load(cfg, path, st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "bad.conf:2: unknown key "
                                                "'refuse' in section "
                                                "[kernels]"));
  wf_config_free(cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layers_agree_on_library_and_reference_kernels),
      cmocka_unit_test(test_unfused_nodes_each_show_their_kernel),
      cmocka_unit_test(test_fusion_skips_fused_ops_the_config_denies),
      cmocka_unit_test(
          test_training_steps_agree_on_library_and_reference_kernels),
      cmocka_unit_test(test_prefer_ranks_named_kernels_above_higher_priorities),
      cmocka_unit_test(test_deny_items_match_label_parts_ignoring_case),
      cmocka_unit_test(
          test_op_whose_every_kernel_is_denied_fails_naming_the_config),
      cmocka_unit_test(test_trace_names_kernels_fallbacks_and_notes),
      cmocka_unit_test(test_device_order_naming_an_absent_type_is_skipped),
      cmocka_unit_test(test_items_naming_nothing_are_noted_and_logged_once),
      cmocka_unit_test(
          test_malformed_kernel_items_are_refused_with_file_and_line),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
