/* tests/core/test_pass_fusion.c — the fusion pass of ops-nn
 * (plugins/ops/nn/fusion.c): MatMul and Conv2D chains (BiasAdd, then each
 * activation) become the fused ops on the working graph, and chains that must
 * stay apart (a value read twice or fetched, a dtype without a fused kernel, a
 * Gelu in tanh form, requests for different devices) do; a Conv2D or a
 * MatMul and its BiasAdd fuse without an activation when none reads their
 * sum (a residual block's, a projection's); a chain whose activation
 * would run on another device (test-memdev's Relu, first in the device
 * order) stays apart, so that no fused op pulls it onto the CPU; fused and unfused
 * graphs fetch the same values within float rounding, in NHWC and NCHW; a
 * MaxPool after a fused convolution joins it, as _FusedConv2DMaxPool or,
 * where something else reads the convolution too, _FusedConv2DAndMaxPool; a
 * ReLU's and a MaxPool's gradients join as _FusedMaxPoolGradReluGrad. Uses
 * the built-in plugins of the build tree. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "graph/graph_internal.h"
#include "compile/optimize.h"

static wf_status *st;
/* Every other pass off; fusion on or off. */
static wf_runtime *rt_on, *rt_off;

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

/* order: the [devices] order, or NULL for the default (and no test-memdev
 * plugin). */
static wf_runtime *runtime_ordered(int fusion, const char *order) {
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  if (order) {
    OK(wf_config_set(cfg, "plugins", "paths",
                     TEST_BUILDDIR "/tests/devices/.libs", st));
    OK(wf_config_set(cfg, "devices", "order", order, st));
  }
  OK(wf_config_set(cfg, "passes", "cse", "false", st));
  OK(wf_config_set(cfg, "passes", "constant_folding", "false", st));
  OK(wf_config_set(cfg, "passes", "arithmetic", "false", st));
  OK(wf_config_set(cfg, "passes", "fusion", fusion ? "true" : "false", st));
  wf_runtime *r = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!r)
    fail_msg("runtime: %s", wf_status_message(st));
  return r;
}

static wf_runtime *runtime_with(int fusion) {
  return runtime_ordered(fusion, NULL);
}

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  rt_on = runtime_with(1);
  rt_off = runtime_with(0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  wf_runtime_free(rt_on);
  wf_runtime_free(rt_off);
  wf_status_free(st);
  return 0;
}

/* ---- building graphs ----------------------------------------------------- */

/* What a graph builder is told: dtype, data format, activation ("" none),
 * and which temptation to add. */
typedef enum tempt {
  PLAIN,
  PRODUCT_READ_TWICE, /* the product also feeds a Neg */
  BIAS_READ_TWICE,    /* the BiasAdd output also feeds a Neg */
  BIAS_FETCHED,       /* the BiasAdd output is fetched too */
  GELU_TANH,          /* Gelu with approximate = true */
  SPLIT_DEVICES,      /* MatMul asks for cpu:0, BiasAdd for cpu:1 */
  ON_DEVICE_GATED,    /* everything asks for "cpu"; MatMul has a control
                         input, BiasAdd another */
  SCOPED,             /* the chain inside a graph scope (as every layer of
                         weft/layers.h builds it) */
  ACT_READ_TWICE,     /* the activation's output also feeds a Neg (as a
                         training graph's gradient reads it) */
  ACT_FETCHED,        /* the activation's output is fetched too */
  POOL_GRADS          /* after the pooling, what a training graph's
                         gradients add: ReluGrad(MaxPoolGrad(r, g), r) of
                         the activation's output r, fetched too */
} tempt;

typedef struct spec {
  wf_dtype dt;
  int conv, nchw;
  const char *act;
  tempt tempt;
  const char *pool; /* a 2x2 MaxPool of stride 2 after the chain, with
                       this padding; NULL for none */
} spec;

typedef struct net {
  wf_graph *g;
  wf_output feed;
  wf_tensor *value;
  wf_output fetches[3];
  int nfetches;
} net;

static wf_node *finish(wf_node_desc *d) {
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("adding a node: %s", wf_status_message(st));
  return n;
}

/* A tensor of dtype dt filled with a fixed pattern in [-1.5, 1.5]. */
static wf_tensor *pattern(wf_dtype dt, const int64_t *dims, int rank,
                          int salt) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  assert_non_null(t);
  int64_t n = wf_tensor_count(t);
  for (int64_t i = 0; i < n; i++) {
    double v = (double)((i * 7 + salt * 13) % 31) / 10.0 - 1.5;
    if (dt == WF_FLOAT32)
      ((float *)wf_tensor_data(t))[i] = (float)v;
    else if (dt == WF_FLOAT64)
      ((double *)wf_tensor_data(t))[i] = v;
    else
      ((int32_t *)wf_tensor_data(t))[i] = (int32_t)(i % 5) - 2;
  }
  return t;
}

static wf_output konst(wf_graph *g, wf_dtype dt, const int64_t *dims,
                       int rank, int salt) {
  wf_tensor *t = pattern(dt, dims, rank, salt);
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_tensor_release(t);
  return (wf_output){finish(d), 0};
}

static wf_output op1(wf_graph *g, const char *op, wf_output a,
                     const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, a);
  if (device)
    wf_node_desc_set_device(d, device);
  return (wf_output){finish(d), 0};
}

/* MatMul (4, 6) x (6, 5) or Conv2D of (2, 5, 5, 3) by a 3x3 filter to 4
 * channels (SAME, stride 1), then BiasAdd and the activation. */
static net build(wf_runtime *r, const spec *s) {
  net n;
  memset(&n, 0, sizeof n);
  n.g = wf_graph_new(r);
  assert_non_null(n.g);
  const char *dev0 = s->tempt == SPLIT_DEVICES     ? "cpu:0"
                     : s->tempt == ON_DEVICE_GATED ? "cpu"
                                                   : NULL;
  const char *dev1 = s->tempt == SPLIT_DEVICES ? "cpu:1" : dev0;
  int64_t xd[4], wd[4], c;
  int xr;
  if (s->conv) {
    int64_t nhwc[4] = {2, 5, 5, 3}, nchw[4] = {2, 3, 5, 5};
    memcpy(xd, s->nchw ? nchw : nhwc, sizeof xd);
    xr = 4;
    wd[0] = 3, wd[1] = 3, wd[2] = 3, wd[3] = c = 4;
  } else {
    xd[0] = 4, xd[1] = 6, xr = 2;
    wd[0] = 6, wd[1] = c = 5;
  }
  wf_node_desc *d = wf_node_desc_new(n.g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", s->dt);
  wf_node_desc_set_attr_shape(d, "shape", xd, xr);
  n.feed = (wf_output){finish(d), 0};
  n.value = pattern(s->dt, xd, xr, 1);
  if (s->tempt == SCOPED)
    OK(wf_graph_push_scope(n.g, "layer", st));
  wf_output w = konst(n.g, s->dt, wd, xr, 2), b = konst(n.g, s->dt, &c, 1, 3);
  wf_node *gate0 = NULL, *gate1 = NULL;
  if (s->tempt == ON_DEVICE_GATED) {
    gate0 = op1(n.g, "Identity", konst(n.g, s->dt, &c, 1, 4), NULL).node;
    gate1 = op1(n.g, "Identity", konst(n.g, s->dt, &c, 1, 5), NULL).node;
  }

  d = wf_node_desc_new(n.g, s->conv ? "Conv2D" : "MatMul", "product");
  wf_node_desc_add_input(d, n.feed);
  wf_node_desc_add_input(d, w);
  if (s->conv) {
    int64_t ones[4] = {1, 1, 1, 1};
    wf_node_desc_set_attr_int_list(d, "strides", ones, 4);
    wf_node_desc_set_attr_string(d, "padding", "SAME");
    wf_node_desc_set_attr_string(d, "data_format", s->nchw ? "NCHW" : "NHWC");
  }
  if (dev0)
    wf_node_desc_set_device(d, dev0);
  if (gate0)
    wf_node_desc_add_control_input(d, gate0);
  wf_output prod = {finish(d), 0};

  d = wf_node_desc_new(n.g, "BiasAdd", "bias");
  wf_node_desc_add_input(d, prod);
  wf_node_desc_add_input(d, b);
  if (s->conv)
    wf_node_desc_set_attr_string(d, "data_format", s->nchw ? "NCHW" : "NHWC");
  if (dev1)
    wf_node_desc_set_device(d, dev1);
  if (gate1)
    wf_node_desc_add_control_input(d, gate1);
  wf_output out = {finish(d), 0};
  wf_output biased = out;

  if (s->act[0]) {
    d = wf_node_desc_new(n.g, s->act, "act");
    wf_node_desc_add_input(d, biased);
    if (strcmp(s->act, "LeakyRelu") == 0)
      wf_node_desc_set_attr_float(d, "alpha", 0.3);
    if (strcmp(s->act, "Gelu") == 0)
      wf_node_desc_set_attr_bool(d, "approximate", s->tempt == GELU_TANH);
    if (dev1)
      wf_node_desc_set_device(d, dev1);
    out = (wf_output){finish(d), 0};
  }
  wf_output activated = out;
  if (s->pool) {
    int64_t two[4] = {1, 2, 2, 1}, two_nchw[4] = {1, 1, 2, 2};
    d = wf_node_desc_new(n.g, "MaxPool", "pool");
    wf_node_desc_add_input(d, out);
    wf_node_desc_set_attr_int_list(d, "ksize", s->nchw ? two_nchw : two, 4);
    wf_node_desc_set_attr_int_list(d, "strides", s->nchw ? two_nchw : two, 4);
    wf_node_desc_set_attr_string(d, "padding", s->pool);
    wf_node_desc_set_attr_string(d, "data_format", s->nchw ? "NCHW" : "NHWC");
    if (dev1)
      wf_node_desc_set_device(d, dev1);
    out = (wf_output){finish(d), 0};
  }
  n.fetches[n.nfetches++] = out;
  if (s->tempt == ACT_READ_TWICE)
    n.fetches[n.nfetches++] = op1(n.g, "Neg", activated, NULL);
  if (s->tempt == ACT_FETCHED)
    n.fetches[n.nfetches++] = activated;
  if (s->tempt == POOL_GRADS) {
    /* the pooling's shape: (2, 2, 2, 4) VALID, (2, 3, 3, 4) SAME, NHWC */
    int64_t pd = strcmp(s->pool, "SAME") == 0 ? 3 : 2;
    int64_t gd[4] = {2, pd, pd, 4}, two[4] = {1, 2, 2, 1};
    wf_output g = konst(n.g, s->dt, gd, 4, 6);
    d = wf_node_desc_new(n.g, "MaxPoolGrad", "pool_grad");
    wf_node_desc_add_input(d, activated);
    wf_node_desc_add_input(d, g);
    wf_node_desc_set_attr_int_list(d, "ksize", two, 4);
    wf_node_desc_set_attr_int_list(d, "strides", two, 4);
    wf_node_desc_set_attr_string(d, "padding", s->pool);
    wf_node_desc_set_attr_string(d, "data_format", "NHWC");
    wf_output pool_grad = {finish(d), 0};
    d = wf_node_desc_new(n.g, "ReluGrad", "relu_grad");
    wf_node_desc_add_input(d, pool_grad);
    wf_node_desc_add_input(d, activated);
    n.fetches[n.nfetches++] = (wf_output){finish(d), 0};
  }
  if (s->tempt == PRODUCT_READ_TWICE)
    n.fetches[n.nfetches++] = op1(n.g, "Neg", prod, NULL);
  if (s->tempt == BIAS_READ_TWICE)
    n.fetches[n.nfetches++] = op1(n.g, "Neg", biased, NULL);
  if (s->tempt == BIAS_FETCHED)
    n.fetches[n.nfetches++] = biased;
  if (s->tempt == SCOPED)
    wf_graph_pop_scope(n.g);
  return n;
}

static void net_free(net *n) {
  wf_tensor_release(n->value);
  wf_graph_free(n->g);
}

static wf__work net_work(const net *n) {
  wf__signature sig = {&n->feed, 1, n->fetches, n->nfetches, NULL, 0};
  wf__work w;
  OK(wf__work_build(wf_graph_runtime(n->g), n->g, &sig, &w, st));
  return w;
}

static int count_op(const wf__work *w, const char *op) {
  int c = 0;
  for (int i = 0; i < wf_graph_num_nodes(w->g); i++)
    c += strcmp(wf_node_op(wf_graph_node(w->g, i)), op) == 0;
  return c;
}

static wf_node *first_op(const wf__work *w, const char *op) {
  for (int i = 0; i < wf_graph_num_nodes(w->g); i++)
    if (strcmp(wf_node_op(wf_graph_node(w->g, i)), op) == 0)
      return wf_graph_node(w->g, i);
  return NULL;
}

/* The fused node's fused_ops joined with ",". */
static void fused_steps(const wf_node *n, char *buf, size_t len) {
  const wf_attr_value *v = wf__node_attr(n, "fused_ops");
  assert_non_null(v);
  buf[0] = 0;
  for (int64_t i = 0; i < v->count; i++) {
    if (i)
      strncat(buf, ",", len - strlen(buf) - 1);
    strncat(buf, v->u.strings[i], len - strlen(buf) - 1);
  }
}

/* ---- structure ----------------------------------------------------------- */

static const char *const acts[] = {"",    "Relu", "Sigmoid",  "Tanh",
                                   "Elu", "Gelu", "LeakyRelu"};
#define NACTS (int)(sizeof acts / sizeof *acts)

static void test_fusion_replaces_each_chain_by_one_fused_node(void **state) {
  (void)state;
  for (int conv = 0; conv < 2; conv++)
    for (int a = 0; a < NACTS; a++) {
      spec s = {WF_FLOAT32, conv, 0, acts[a], PLAIN};
      net n = build(rt_on, &s);
      wf__work w = net_work(&n);
      const char *fused = conv ? "_FusedConv2D" : "_FusedMatMul";
      /* without an activation, the product takes its bias alone */
      assert_int_equal(count_op(&w, fused), 1);
      assert_int_equal(count_op(&w, conv ? "Conv2D" : "MatMul"), 0);
      assert_int_equal(count_op(&w, "BiasAdd"), 0);
      if (acts[a][0])
        assert_int_equal(count_op(&w, acts[a]), 0);
      wf_node *f = first_op(&w, fused);
      char steps[64], want[64];
      fused_steps(f, steps, sizeof steps);
      snprintf(want, sizeof want, "BiasAdd%s%s", acts[a][0] ? "," : "",
               acts[a]);
      assert_string_equal(steps, want);
      assert_ptr_equal(w.fetches[0].node, f);
      if (strcmp(acts[a], "LeakyRelu") == 0)
        assert_true(fabs(wf__node_attr(f, "alpha")->u.f - 0.3) < 1e-12);
      wf__work_deinit(&w);
      net_free(&n);
    }
}

static void test_fusion_fuses_chains_inside_scopes(void **state) {
  (void)state;
  for (int conv = 0; conv < 2; conv++) {
    spec s = {WF_FLOAT32, conv, 0, "Relu", SCOPED};
    net n = build(rt_on, &s);
    wf__work w = net_work(&n);
    assert_int_equal(count_op(&w, conv ? "_FusedConv2D" : "_FusedMatMul"), 1);
    assert_int_equal(count_op(&w, "BiasAdd"), 0);
    wf__work_deinit(&w);
    net_free(&n);
  }
}

static void test_fusion_is_off_when_the_config_says_so(void **state) {
  (void)state;
  spec s = {WF_FLOAT32, 0, 0, "Relu", PLAIN};
  net n = build(rt_off, &s);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "_FusedMatMul"), 0);
  assert_int_equal(count_op(&w, "MatMul"), 1);
  wf__work_deinit(&w);
  net_free(&n);
}

static void test_fusion_keeps_device_request_and_control_inputs(void **state) {
  (void)state;
  spec s = {WF_FLOAT32, 0, 0, "Tanh", ON_DEVICE_GATED};
  net n = build(rt_on, &s);
  wf__work w = net_work(&n);
  wf_node *f = first_op(&w, "_FusedMatMul");
  assert_non_null(f);
  assert_string_equal(wf_node_device(f), "cpu");
  assert_int_equal(wf_node_num_control_inputs(f), 2);
  wf__work_deinit(&w);
  net_free(&n);
}

static void test_fusion_leaves_values_read_twice_apart(void **state) {
  (void)state;
  for (int conv = 0; conv < 2; conv++) {
    spec s = {WF_FLOAT32, conv, 0, "Relu", PRODUCT_READ_TWICE};
    net n = build(rt_on, &s);
    wf__work w = net_work(&n);
    assert_int_equal(count_op(&w, conv ? "_FusedConv2D" : "_FusedMatMul"), 0);
    assert_int_equal(count_op(&w, "BiasAdd"), 1);
    wf__work_deinit(&w);
    net_free(&n);
  }
  /* The BiasAdd read twice (as in training, where gradients read it): the
   * chain is not fused at all, nor, for a convolution, its first two
   * steps (the activation reads their sum). */
  for (int conv = 0; conv < 2; conv++) {
    spec s = {WF_FLOAT32, conv, 0, "Relu", BIAS_READ_TWICE};
    net n = build(rt_on, &s);
    wf__work w = net_work(&n);
    assert_null(first_op(&w, conv ? "_FusedConv2D" : "_FusedMatMul"));
    assert_int_equal(count_op(&w, "BiasAdd"), 1);
    assert_int_equal(count_op(&w, "Relu"), 1);
    wf__work_deinit(&w);
    net_free(&n);
  }
}

static void test_fusion_leaves_fetched_values_apart(void **state) {
  (void)state;
  spec s = {WF_FLOAT32, 1, 0, "Sigmoid", BIAS_FETCHED};
  net n = build(rt_on, &s);
  wf__work w = net_work(&n);
  assert_null(first_op(&w, "_FusedConv2D"));
  assert_int_equal(count_op(&w, "Conv2D"), 1);
  assert_int_equal(count_op(&w, "Sigmoid"), 1);
  wf__work_deinit(&w);
  net_free(&n);
}

static void test_fusion_needs_a_device_with_the_fused_kernel(void **state) {
  (void)state;
  /* No fused kernel takes int32 (MatMul and BiasAdd do). */
  spec s = {WF_INT32, 0, 0, "", PLAIN};
  net n = build(rt_on, &s);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "_FusedMatMul"), 0);
  assert_int_equal(count_op(&w, "MatMul"), 1);
  wf__work_deinit(&w);
  net_free(&n);
}

static void test_fusion_skips_tanh_gelu_and_split_requests(void **state) {
  (void)state;
  spec g = {WF_FLOAT32, 0, 0, "Gelu", GELU_TANH};
  net n = build(rt_on, &g);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "Gelu"), 1);
  assert_int_equal(count_op(&w, "_FusedMatMul"), 0);
  wf__work_deinit(&w);
  net_free(&n);

  spec d = {WF_FLOAT32, 0, 0, "Relu", SPLIT_DEVICES};
  n = build(rt_on, &d);
  w = net_work(&n);
  assert_int_equal(count_op(&w, "_FusedMatMul"), 0);
  assert_int_equal(count_op(&w, "MatMul"), 1);
  wf__work_deinit(&w);
  net_free(&n);
}

static void assert_close(const wf_tensor *a, const wf_tensor *b,
                         const spec *s);
static void run(wf_runtime *r, const spec *s, wf_tensor **out, int *nout);
static int assert_fused_gives_unfused(const spec *s);

/* With test-memdev first in the device order, a chain's Relu would run on
 * memdev:0 (it has a Relu kernel, no MatMul or BiasAdd): the chain is not
 * fused into a _FusedMatMul the CPU alone has, which would move the Relu
 * to the CPU; nor is the product with its bias, which the Relu reads. With
 * the CPU first, the same graph fuses. Both run and give the same values. */
static void test_fusion_keeps_work_on_its_device(void **state) {
  (void)state;
  wf_runtime *first_memdev = runtime_ordered(1, "memdev, cpu");
  wf_runtime *first_cpu = runtime_ordered(1, "cpu, memdev");
  spec s = {WF_FLOAT32, 0, 0, "Relu", PLAIN};
  wf_tensor *out[2][3];
  int nout[2];

  net n = build(first_memdev, &s);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "_FusedMatMul"), 0);
  assert_int_equal(count_op(&w, "MatMul"), 1);
  assert_int_equal(count_op(&w, "BiasAdd"), 1);
  assert_int_equal(count_op(&w, "Relu"), 1);
  wf__work_deinit(&w);
  net_free(&n);

  n = build(first_cpu, &s);
  w = net_work(&n);
  assert_int_equal(count_op(&w, "_FusedMatMul"), 1);
  assert_int_equal(count_op(&w, "Relu"), 0);
  wf__work_deinit(&w);
  net_free(&n);

  n = build(first_memdev, &s);
  wf_session *ses = wf_session_new(n.g, st);
  assert_non_null(ses);
  OK(wf_session_run(ses, NULL, &n.feed, &n.value, 1, n.fetches, out[0],
                    n.nfetches, NULL, 0, NULL, st));
  nout[0] = n.nfetches;
  wf_session_free(ses);
  net_free(&n);
  n = build(first_cpu, &s);
  ses = wf_session_new(n.g, st);
  assert_non_null(ses);
  OK(wf_session_run(ses, NULL, &n.feed, &n.value, 1, n.fetches, out[1],
                    n.nfetches, NULL, 0, NULL, st));
  nout[1] = n.nfetches;
  wf_session_free(ses);
  net_free(&n);
  assert_int_equal(nout[0], nout[1]);
  for (int i = 0; i < nout[0]; i++) {
    assert_close(out[0][i], out[1][i], &s);
    wf_tensor_release(out[0][i]);
    wf_tensor_release(out[1][i]);
  }
  wf_runtime_free(first_memdev);
  wf_runtime_free(first_cpu);
}

/* A MaxPool that alone reads a fused convolution joins it (SAME or VALID,
 * with or without an activation), taking over the convolution's
 * attributes and the pooling's; one whose input something else reads too,
 * or over NCHW, stays apart. Fused and unfused give the same values. */
static void test_fusion_takes_a_max_pool_after_a_convolution(void **state) {
  (void)state;
  static const char *const pads[2] = {"VALID", "SAME"};
  static const char *const pool_acts[2] = {"Relu", ""};
  /* float64: the reference kernels, fused against apart */
  static const wf_dtype dts[2] = {WF_FLOAT32, WF_FLOAT64};
  for (int t = 0; t < 2; t++)
    for (int p = 0; p < 2; p++)
      for (int a = 0; a < 2; a++) {
        spec s = {dts[t], 1, 0, pool_acts[a], PLAIN, pads[p]};
        net n = build(rt_on, &s);
        wf__work w = net_work(&n);
        assert_int_equal(count_op(&w, "_FusedConv2DMaxPool"), 1);
        assert_int_equal(count_op(&w, "_FusedConv2D"), 0);
        assert_int_equal(count_op(&w, "MaxPool"), 0);
        wf_node *f = first_op(&w, "_FusedConv2DMaxPool");
        assert_ptr_equal(w.fetches[0].node, f);
        char steps[64];
        fused_steps(f, steps, sizeof steps);
        assert_string_equal(steps, a == 0 ? "BiasAdd,Relu" : "BiasAdd");
        assert_string_equal(wf__node_attr(f, "pool_padding")->u.s, pads[p]);
        assert_string_equal(wf__node_attr(f, "padding")->u.s, "SAME");
        assert_int_equal(wf__node_attr(f, "pool_ksize")->u.ints[1], 2);
        assert_int_equal(wf__node_attr(f, "pool_strides")->u.ints[2], 2);
        wf__work_deinit(&w);
        net_free(&n);

        assert_fused_gives_unfused(&s);
      }
  /* NCHW: the chain fuses, the pooling stays */
  spec nchw = {WF_FLOAT32, 1, 1, "Relu", PLAIN, "VALID"};
  net n = build(rt_on, &nchw);
  wf__work w = net_work(&n);
  assert_int_equal(count_op(&w, "_FusedConv2D"), 1);
  assert_int_equal(count_op(&w, "MaxPool"), 1);
  assert_int_equal(count_op(&w, "_FusedConv2DMaxPool"), 0);
  assert_int_equal(count_op(&w, "_FusedConv2DAndMaxPool"), 0);
  wf__work_deinit(&w);
  net_free(&n);
  /* the activation read twice too: likewise */
  nchw.tempt = ACT_READ_TWICE;
  n = build(rt_on, &nchw);
  w = net_work(&n);
  assert_int_equal(count_op(&w, "_FusedConv2D"), 1);
  assert_int_equal(count_op(&w, "MaxPool"), 1);
  assert_int_equal(count_op(&w, "_FusedConv2DAndMaxPool"), 0);
  wf__work_deinit(&w);
  net_free(&n);
}

/* A MaxPool after a fused convolution whose output something else reads
 * too (a Neg, a fetch, a training graph's gradients) joins it as one
 * _FusedConv2DAndMaxPool: its output 0 takes the convolution's readers
 * and fetches, its output 1 the pooling's; the gradients' MaxPoolGrad and
 * ReluGrad still join, reading output 0. Fused and unfused give the same
 * values, float32 (the CPU plugin's kernels) and float64 (the
 * reference's). */
static void test_fusion_keeps_a_pooled_convolution_read_twice(void **state) {
  (void)state;
  static const char *const pads[2] = {"VALID", "SAME"};
  static const wf_dtype dts[2] = {WF_FLOAT32, WF_FLOAT64};
  static const tempt tempts[3] = {ACT_READ_TWICE, ACT_FETCHED, POOL_GRADS};
  for (int t = 0; t < 2; t++)
    for (int p = 0; p < 2; p++)
      for (int k = 0; k < 3; k++)
        for (int a = 0; a < 2; a++) {
          spec s = {dts[t], 1, 0, a ? "" : "Relu", tempts[k], pads[p]};
          if (tempts[k] == POOL_GRADS && a)
            continue; /* (a ReLU's gradient needs the ReLU) */
          net n = build(rt_on, &s);
          wf__work w = net_work(&n);
          assert_int_equal(count_op(&w, "_FusedConv2DAndMaxPool"), 1);
          assert_int_equal(count_op(&w, "_FusedConv2D"), 0);
          assert_int_equal(count_op(&w, "MaxPool"), 0);
          assert_int_equal(count_op(&w, "_FusedConv2DMaxPool"), 0);
          wf_node *f = first_op(&w, "_FusedConv2DAndMaxPool");
          assert_ptr_equal(w.fetches[0].node, f);
          assert_int_equal(w.fetches[0].index, 1);
          char steps[64];
          fused_steps(f, steps, sizeof steps);
          assert_string_equal(steps, a ? "BiasAdd" : "BiasAdd,Relu");
          assert_string_equal(wf__node_attr(f, "pool_padding")->u.s,
                              pads[p]);
          assert_int_equal(wf__node_attr(f, "pool_ksize")->u.ints[1], 2);
          if (tempts[k] == ACT_FETCHED) {
            assert_ptr_equal(w.fetches[1].node, f);
            assert_int_equal(w.fetches[1].index, 0);
          } else if (tempts[k] == ACT_READ_TWICE) {
            wf_node *neg = first_op(&w, "Neg");
            assert_ptr_equal(wf_node_input(neg, 0).node, f);
            assert_int_equal(wf_node_input(neg, 0).index, 0);
          } else {
            wf_node *g = first_op(&w, "_FusedMaxPoolGradReluGrad");
            assert_non_null(g);
            assert_int_equal(count_op(&w, "MaxPoolGrad"), 0);
            assert_ptr_equal(wf_node_input(g, 0).node, f);
            assert_int_equal(wf_node_input(g, 0).index, 0);
          }
          wf__work_deinit(&w);
          net_free(&n);

          assert_int_equal(assert_fused_gives_unfused(&s), 2);
        }
}

/* ---- a ReLU's and a MaxPool's gradients ---------------------------------- */

typedef enum grad_tempt {
  GRAD_PLAIN,
  GRAD_POOL_FETCHED,    /* MaxPoolGrad's output is fetched too */
  GRAD_OTHER_FEATURES   /* ReluGrad reads the ReLU's input, not its output */
} grad_tempt;

/* x (2, 6, 6, 3) or NCHW -> Relu -> r; MaxPool 2x2 of r; then what a
 * training graph's gradients add: MaxPoolGrad(r, g) and ReluGrad of it
 * against r (g a constant of the pool's shape). Fetches the ReluGrad (and
 * with GRAD_POOL_FETCHED the MaxPoolGrad). */
static net build_grads(wf_runtime *r, wf_dtype dt, int nchw, grad_tempt t) {
  net n;
  memset(&n, 0, sizeof n);
  n.g = wf_graph_new(r);
  assert_non_null(n.g);
  int64_t nhwc[4] = {2, 6, 6, 3}, nchw_d[4] = {2, 3, 6, 6};
  int64_t gd_nhwc[4] = {2, 3, 3, 3}, gd_nchw[4] = {2, 3, 3, 3};
  int64_t two[4] = {1, 2, 2, 1}, two_nchw[4] = {1, 1, 2, 2};
  const char *fmt = nchw ? "NCHW" : "NHWC";
  wf_node_desc *d = wf_node_desc_new(n.g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", nchw ? nchw_d : nhwc, 4);
  n.feed = (wf_output){finish(d), 0};
  n.value = pattern(dt, nchw ? nchw_d : nhwc, 4, 1);
  wf_output relu = op1(n.g, "Relu", n.feed, NULL);
  wf_output g = konst(n.g, dt, nchw ? gd_nchw : gd_nhwc, 4, 7);

  d = wf_node_desc_new(n.g, "MaxPoolGrad", "pool_grad");
  wf_node_desc_add_input(d, relu);
  wf_node_desc_add_input(d, g);
  wf_node_desc_set_attr_int_list(d, "ksize", nchw ? two_nchw : two, 4);
  wf_node_desc_set_attr_int_list(d, "strides", nchw ? two_nchw : two, 4);
  wf_node_desc_set_attr_string(d, "padding", "VALID");
  wf_node_desc_set_attr_string(d, "data_format", fmt);
  wf_output pool_grad = {finish(d), 0};

  d = wf_node_desc_new(n.g, "ReluGrad", "relu_grad");
  wf_node_desc_add_input(d, pool_grad);
  wf_node_desc_add_input(d, t == GRAD_OTHER_FEATURES ? n.feed : relu);
  n.fetches[n.nfetches++] = (wf_output){finish(d), 0};
  if (t == GRAD_POOL_FETCHED)
    n.fetches[n.nfetches++] = pool_grad;
  return n;
}

/* ReluGrad(MaxPoolGrad(r, g), r) becomes one _FusedMaxPoolGradReluGrad
 * with MaxPoolGrad's attributes, in NHWC and NCHW, float32 (the CPU
 * plugin's kernel) and float64 (the reference), with the unfused values;
 * a MaxPoolGrad also fetched, or a ReluGrad reading another tensor, stays
 * apart. */
static void test_fusion_joins_a_pool_gradient_and_its_relu_gradient(
    void **state) {
  (void)state;
  static const wf_dtype dts[2] = {WF_FLOAT32, WF_FLOAT64};
  for (int t = 0; t < 2; t++)
    for (int nchw = 0; nchw < 2; nchw++) {
      net n = build_grads(rt_on, dts[t], nchw, GRAD_PLAIN);
      wf__work w = net_work(&n);
      assert_int_equal(count_op(&w, "_FusedMaxPoolGradReluGrad"), 1);
      assert_int_equal(count_op(&w, "MaxPoolGrad"), 0);
      assert_int_equal(count_op(&w, "ReluGrad"), 0);
      wf_node *f = first_op(&w, "_FusedMaxPoolGradReluGrad");
      assert_ptr_equal(w.fetches[0].node, f);
      assert_string_equal(wf__node_attr(f, "padding")->u.s, "VALID");
      assert_string_equal(wf__node_attr(f, "data_format")->u.s,
                          nchw ? "NCHW" : "NHWC");
      assert_int_equal(wf__node_attr(f, "ksize")->u.ints[nchw ? 3 : 2], 2);
      assert_string_equal(wf_node_op(wf_node_input(f, 0).node), "Relu");
      wf__work_deinit(&w);

      wf_tensor *out[2];
      spec s = {dts[t], 1, nchw, "Relu", PLAIN, NULL};
      for (int on = 0; on < 2; on++) {
        wf_runtime *r = on ? rt_on : rt_off;
        net m = build_grads(r, dts[t], nchw, GRAD_PLAIN);
        wf_session *ses = wf_session_new(m.g, st);
        assert_non_null(ses);
        OK(wf_session_run(ses, NULL, &m.feed, &m.value, 1, m.fetches,
                          &out[on], 1, NULL, 0, NULL, st));
        wf_session_free(ses);
        net_free(&m);
      }
      assert_close(out[0], out[1], &s);
      /* the ReLU's gradient is applied: zero where x is not > 0 */
      int64_t zeros = 0;
      for (int64_t i = 0; i < wf_tensor_count(out[1]); i++) {
        double x = dts[t] == WF_FLOAT32
                       ? ((const float *)wf_tensor_data(n.value))[i]
                       : ((const double *)wf_tensor_data(n.value))[i];
        double v = dts[t] == WF_FLOAT32
                       ? ((const float *)wf_tensor_data(out[1]))[i]
                       : ((const double *)wf_tensor_data(out[1]))[i];
        if (!(x > 0)) {
          assert_true(v == 0);
          zeros++;
        }
      }
      assert_true(zeros > 0);
      wf_tensor_release(out[0]);
      wf_tensor_release(out[1]);
      net_free(&n);
    }
  for (int t = GRAD_POOL_FETCHED; t <= GRAD_OTHER_FEATURES; t++) {
    net n = build_grads(rt_on, WF_FLOAT32, 0, (grad_tempt)t);
    wf__work w = net_work(&n);
    assert_int_equal(count_op(&w, "_FusedMaxPoolGradReluGrad"), 0);
    assert_int_equal(count_op(&w, "MaxPoolGrad"), 1);
    assert_int_equal(count_op(&w, "ReluGrad"), 1);
    wf__work_deinit(&w);
    net_free(&n);
  }
}

/* ---- values -------------------------------------------------------------- */

/* Fetches of s's graph on r. */
static void run(wf_runtime *r, const spec *s, wf_tensor **out, int *nout) {
  net n = build(r, s);
  wf_session *ses = wf_session_new(n.g, st);
  assert_non_null(ses);
  OK(wf_session_run(ses, NULL, &n.feed, &n.value, 1, n.fetches, out,
                    n.nfetches, NULL, 0, NULL, st));
  *nout = n.nfetches;
  wf_session_free(ses);
  net_free(&n);
}

static void assert_close(const wf_tensor *a, const wf_tensor *b,
                         const spec *s) {
  wf_shape sa, sb;
  wf_tensor_shape(a, &sa);
  wf_tensor_shape(b, &sb);
  assert_true(wf_shape_equal(&sa, &sb));
  int64_t n = wf_tensor_count(a);
  double tol = s->dt == WF_FLOAT32 ? 1e-5 : 1e-12;
  for (int64_t i = 0; i < n; i++) {
    double x = s->dt == WF_FLOAT32 ? ((const float *)wf_tensor_data(a))[i]
                                   : ((const double *)wf_tensor_data(a))[i];
    double y = s->dt == WF_FLOAT32 ? ((const float *)wf_tensor_data(b))[i]
                                   : ((const double *)wf_tensor_data(b))[i];
    if (!(fabs(x - y) <= tol * (1 + fabs(x))))
      fail_msg("%s %s%s %s: element %lld is %.9g unfused, %.9g fused",
               s->conv ? "Conv2D" : "MatMul", s->nchw ? "NCHW " : "",
               wf_dtype_name(s->dt), s->act[0] ? s->act : "(no activation)",
               (long long)i, x, y);
  }
}

/* s's graph fetches the same values with fusion on and off; the number of
 * fetches. */
static int assert_fused_gives_unfused(const spec *s) {
  wf_tensor *off[3], *on[3];
  int noff, non;
  run(rt_off, s, off, &noff);
  run(rt_on, s, on, &non);
  assert_int_equal(noff, non);
  for (int i = 0; i < noff; i++) {
    assert_close(off[i], on[i], s);
    wf_tensor_release(off[i]);
    wf_tensor_release(on[i]);
  }
  return noff;
}

static void test_fusion_gives_the_unfused_values(void **state) {
  (void)state;
  static const wf_dtype dts[2] = {WF_FLOAT32, WF_FLOAT64};
  for (int t = 0; t < 2; t++)
    for (int shape = 0; shape < 3; shape++)
      for (int a = 0; a < NACTS; a++) {
        spec s = {dts[t], shape > 0, shape == 2, acts[a], PLAIN};
        assert_fused_gives_unfused(&s);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fusion_replaces_each_chain_by_one_fused_node),
      cmocka_unit_test(test_fusion_fuses_chains_inside_scopes),
      cmocka_unit_test(test_fusion_is_off_when_the_config_says_so),
      cmocka_unit_test(test_fusion_keeps_device_request_and_control_inputs),
      cmocka_unit_test(test_fusion_leaves_values_read_twice_apart),
      cmocka_unit_test(test_fusion_leaves_fetched_values_apart),
      cmocka_unit_test(test_fusion_needs_a_device_with_the_fused_kernel),
      cmocka_unit_test(test_fusion_skips_tanh_gelu_and_split_requests),
      cmocka_unit_test(test_fusion_gives_the_unfused_values),
      cmocka_unit_test(test_fusion_keeps_work_on_its_device),
      cmocka_unit_test(test_fusion_takes_a_max_pool_after_a_convolution),
      cmocka_unit_test(test_fusion_keeps_a_pooled_convolution_read_twice),
      cmocka_unit_test(test_fusion_joins_a_pool_gradient_and_its_relu_gradient),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
