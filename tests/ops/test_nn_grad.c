/* tests/ops/test_nn_grad.c — the gradients of the ops_nn plugin against
 * central finite differences through the shared checker (gradcheck.h:
 * float64 at 2 random points each, step 1e-6 relative, tolerance 1e-6
 * relative + 1e-7 absolute): Conv2D over strides, paddings, dilations and
 * both data formats; the pools on inputs without ties (values of one input
 * at least 0.01 apart, far beyond the step); softmax and its losses,
 * including the backprop output's own gradient; BatchNorm in training
 * (with the batch statistics' gradients) and in inference (mean and
 * variance get none); and Dropout, whose gradient must draw exactly the
 * forward mask of its step (checked element by element against the Philox
 * stream of philox.h). Loads ops_array, ops_math, ops_nn and the CPU
 * device. */
#include <config.h>

#include "array_nn_grad.h"
#include "philox.h"

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {
      "plugins/ops/array/.libs", "plugins/ops/math/.libs",
      "plugins/ops/nn/.libs", "plugins/devices/cpu/.libs"};
  rt = ag_runtime(dirs, 4);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

/* dims (N, H, W, C) in data_format order. */
static void in_format(int nchw, const int64_t *nhwc, int64_t *out) {
  out[0] = nhwc[0];
  out[1] = nchw ? nhwc[3] : nhwc[1];
  out[2] = nchw ? nhwc[1] : nhwc[2];
  out[3] = nchw ? nhwc[2] : nhwc[3];
}

/* ---- BiasAdd ------------------------------------------------------------- */

static void test_bias_add_gradient_in_both_formats(void **state) {
  ag_case nhwc = {.op = "BiasAdd", .order = "xx"};
  ag_case nchw = {.op = "BiasAdd",
                  .order = "xx",
                  .attrs = {{"data_format", AG_STRING("NCHW")}}};

  ag_check(rt,
           (gc_spec){.name = "BiasAdd NHWC",
                     .num_inputs = 2,
                     .in = {{.rank = 3, .dims = {2, 3, 4}},
                            {.rank = 1, .dims = {4}}}},
           &nhwc);
  ag_check(rt,
           (gc_spec){.name = "BiasAdd NCHW",
                     .num_inputs = 2,
                     .in = {{.rank = 4, .dims = {2, 3, 2, 2}},
                            {.rank = 1, .dims = {3}}},
                     .unknown_dims = 1},
           &nchw);
}

/* ---- Conv2D -------------------------------------------------------------- */

typedef struct conv_cfg {
  const char *padding;
  int64_t sh, sw, dh, dw;
  int64_t pads[4]; /* EXPLICIT: top, bottom, left, right */
  int64_t kh, kw;
} conv_cfg;

static void conv_check(const conv_cfg *c, int nchw, int unknown) {
  int64_t strides[4], dilations[4], explicit_pads[8] = {0};
  int ih = nchw ? 2 : 1, iw = nchw ? 3 : 2;
  ag_case op = {.op = "Conv2D", .order = "xx"};
  gc_spec s = {.num_inputs = 2, .unknown_dims = unknown};
  char name[160];

  in_format(nchw, AG_I64(1, 1, 1, 1), strides);
  in_format(nchw, AG_I64(1, 1, 1, 1), dilations);
  strides[ih] = c->sh;
  strides[iw] = c->sw;
  dilations[ih] = c->dh;
  dilations[iw] = c->dw;
  explicit_pads[2 * ih] = c->pads[0];
  explicit_pads[2 * ih + 1] = c->pads[1];
  explicit_pads[2 * iw] = c->pads[2];
  explicit_pads[2 * iw + 1] = c->pads[3];
  op.attrs[0] = (gc_attr){"strides", GC_INTS(strides, 4)};
  op.attrs[1] = (gc_attr){"padding", AG_STRING(c->padding)};
  op.attrs[2] = (gc_attr){"dilations", GC_INTS(dilations, 4)};
  op.attrs[3] = (gc_attr){"data_format", AG_STRING(nchw ? "NCHW" : "NHWC")};
  if (strcmp(c->padding, "EXPLICIT") == 0)
    op.attrs[4] = (gc_attr){"explicit_paddings", GC_INTS(explicit_pads, 8)};
  s.in[0].rank = 4;
  in_format(nchw, AG_I64(2, 5, 6, 2), s.in[0].dims);
  s.in[1] = (gc_input){.rank = 4, .dims = {c->kh, c->kw, 2, 3}};
  snprintf(
      name, sizeof name, "Conv2D %s %s s(%lld,%lld) d(%lld,%lld) k%lldx%lld%s",
      nchw ? "NCHW" : "NHWC", c->padding, (long long)c->sh, (long long)c->sw,
      (long long)c->dh, (long long)c->dw, (long long)c->kh, (long long)c->kw,
      unknown ? " (dims unknown)" : "");
  s.name = name;
  ag_check(rt, s, &op);
}

static void
test_conv2d_gradients_over_strides_paddings_dilations_formats(void **state) {
  static const conv_cfg cfgs[] = {
      {"VALID", 1, 1, 1, 1, {0}, 3, 2},
      {"SAME", 1, 1, 1, 1, {0}, 3, 3},
      {"SAME", 2, 2, 1, 1, {0}, 3, 2},
      {"VALID", 2, 1, 1, 1, {0}, 2, 3},
      {"SAME", 1, 2, 2, 1, {0}, 2, 2},
      {"VALID", 1, 1, 2, 2, {0}, 2, 2},
      {"EXPLICIT", 2, 1, 1, 1, {1, 0, 2, 1}, 3, 3},
      {"EXPLICIT", 1, 2, 1, 2, {0, 2, 1, 1}, 2, 2},
  };

  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
    for (int nchw = 0; nchw <= 1; nchw++)
      conv_check(&cfgs[i], nchw, 0);
  /* Every dim unknown while building: the sizes come from Shape nodes. */
  conv_check(&cfgs[2], 0, 1);
  conv_check(&cfgs[6], 1, 1);
}

/* ---- pools --------------------------------------------------------------- */

/* pads: EXPLICIT's (top, bottom, left, right), or NULL. */
static void pool_check_pads(const char *op_name, const char *padding,
                            int64_t k, int64_t s, int nchw, int unknown,
                            const int64_t *pads) {
  int64_t ksize[4], strides[4], explicit_pads[8] = {0};
  ag_case op = {.op = op_name, .order = "x"};
  gc_spec spec = {.num_inputs = 1, .unknown_dims = unknown};
  char name[128];

  in_format(nchw, AG_I64(1, k, k + 1, 1), ksize);
  in_format(nchw, AG_I64(1, s, s, 1), strides);
  op.attrs[0] = (gc_attr){"ksize", GC_INTS(ksize, 4)};
  op.attrs[1] = (gc_attr){"strides", GC_INTS(strides, 4)};
  op.attrs[2] = (gc_attr){"padding", AG_STRING(padding)};
  op.attrs[3] = (gc_attr){"data_format", AG_STRING(nchw ? "NCHW" : "NHWC")};
  if (pads) {
    int ih = nchw ? 2 : 1, iw = nchw ? 3 : 2;
    explicit_pads[2 * ih] = pads[0];
    explicit_pads[2 * ih + 1] = pads[1];
    explicit_pads[2 * iw] = pads[2];
    explicit_pads[2 * iw + 1] = pads[3];
    op.attrs[4] = (gc_attr){"explicit_paddings", GC_INTS(explicit_pads, 8)};
  }
  /* 180 values at least 0.01 apart in [-2, 2): no window has a tie within
   * the step, so MaxPool is smooth there. */
  spec.in[0] = (gc_input){.rank = 4, .min_gap = 0.01};
  in_format(nchw, AG_I64(2, 5, 6, 3), spec.in[0].dims);
  snprintf(name, sizeof name, "%s %s %s k%lldx%lld s%lld%s", op_name,
           nchw ? "NCHW" : "NHWC", padding, (long long)k, (long long)(k + 1),
           (long long)s, unknown ? " (dims unknown)" : "");
  spec.name = name;
  ag_check(rt, spec, &op);
}

static void pool_check(const char *op_name, const char *padding, int64_t k,
                       int64_t s, int nchw, int unknown) {
  pool_check_pads(op_name, padding, k, s, nchw, unknown, NULL);
}

/* EXPLICIT paddings below the window (k x k+1): uneven, and one side 0. */
static const int64_t pool_pads[4] = {2, 0, 1, 3};

static void test_max_pool_gradient_goes_to_each_windows_maximum(void **state) {
  for (int nchw = 0; nchw <= 1; nchw++) {
    pool_check("MaxPool", "VALID", 2, 2, nchw, 0);
    pool_check("MaxPool", "SAME", 3, 2, nchw, 0); /* windows overlap */
    pool_check("MaxPool", "SAME", 2, 1, nchw, 0);
    pool_check_pads("MaxPool", "EXPLICIT", 3, 2, nchw, 0, pool_pads);
  }
  pool_check("MaxPool", "SAME", 3, 2, 1, 1);
  pool_check_pads("MaxPool", "EXPLICIT", 3, 1, 0, 1, pool_pads);
}

static void test_avg_pool_gradient_shares_among_window_elements(void **state) {
  for (int nchw = 0; nchw <= 1; nchw++) {
    pool_check("AvgPool", "VALID", 2, 2, nchw, 0);
    pool_check("AvgPool", "SAME", 3, 2, nchw, 0);
    pool_check("AvgPool", "SAME", 2, 1, nchw, 0);
    pool_check_pads("AvgPool", "EXPLICIT", 3, 2, nchw, 0, pool_pads);
  }
  pool_check("AvgPool", "SAME", 3, 2, 0, 1);
  pool_check_pads("AvgPool", "EXPLICIT", 3, 1, 1, 1, pool_pads);
}

/* ---- softmax and its losses
 * -------------------------------------------------- */

static void test_softmax_and_log_softmax_gradients(void **state) {
  ag_case sm = {.op = "Softmax", .order = "x"};
  ag_case lsm = {.op = "LogSoftmax", .order = "x"};
  gc_spec s2 = {.num_inputs = 1, .in = {{.rank = 2, .dims = {3, 5}}}};
  gc_spec s3 = {.num_inputs = 1,
                .in = {{.rank = 3, .dims = {2, 2, 4}}},
                .unknown_dims = 1};

  s2.name = "Softmax";
  ag_check(rt, s2, &sm);
  s2.name = "LogSoftmax";
  ag_check(rt, s2, &lsm);
  s3.name = "Softmax rank 3 (dims unknown)";
  ag_check(rt, s3, &sm);
  s3.name = "LogSoftmax rank 3 (dims unknown)";
  ag_check(rt, s3, &lsm);
}

/* Rows of 4 that are distributions: positive, summing to 1 (the op's
 * contract, which makes backprop the loss's gradient). */
static void fill_distributions(double *x, int64_t n, gc_rng *r,
                               const void *arg) {
  for (int64_t row = 0; row < n / 4; row++) {
    double sum = 0;
    for (int c = 0; c < 4; c++)
      sum += x[row * 4 + c] = gc_uniform(r, 0.1, 1);
    for (int c = 0; c < 4; c++)
      x[row * 4 + c] /= sum;
  }
}

static void test_softmax_xent_gradients_for_logits_and_labels(void **state) {
  ag_case c = {.op = "SoftmaxCrossEntropyWithLogits", .order = "xx"};
  gc_spec s = {.num_inputs = 2,
               .in = {{.rank = 2, .dims = {3, 4}},
                      {.rank = 2, .dims = {3, 4}, .fill = fill_distributions}}};
  static const struct {
    const char *name;
    uint32_t outputs;
  } uses[] = {{"SoftmaxXent loss", 0x1},
              {"SoftmaxXent loss and backprop", 0x3},
              {"SoftmaxXent backprop", 0x2}};

  /* Labels get -log_softmax(features) * dloss; the backprop output's own
   * gradient reaches both inputs too. */
  for (int i = 0; i < 3; i++) {
    c.outputs = uses[i].outputs;
    s.name = uses[i].name;
    ag_check(rt, s, &c);
  }
}

static void test_sparse_softmax_xent_gradient(void **state) {
  ag_case c = {.op = "SparseSoftmaxCrossEntropyWithLogits",
               .order = "xc",
               .consts = {AG_VEC(2, 0, 3)}};
  gc_spec s = {.num_inputs = 1, .in = {{.rank = 2, .dims = {3, 4}}}};

  c.outputs = 0x1;
  s.name = "SparseSoftmaxXent loss";
  ag_check(rt, s, &c);
  c.outputs = 0x3;
  s.name = "SparseSoftmaxXent loss and backprop";
  ag_check(rt, s, &c);
}

/* Labels are class indices: asked for, they get no gradient (and asking
 * is no error). */
static void test_sparse_softmax_xent_labels_get_no_gradient(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "logits");
  wf_output in[2], loss;
  wf_gradient dx[2];

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", AG_I64(3, 4), 2);
  in[0] = (wf_output){ag_node(d, "logits"), 0};
  d = wf_node_desc_new(g, "Placeholder", "labels");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT64);
  wf_node_desc_set_attr_shape(d, "shape", AG_I64(3), 1);
  in[1] = (wf_output){ag_node(d, "labels"), 0};
  d = wf_node_desc_new(g, "SparseSoftmaxCrossEntropyWithLogits", "xent");
  wf_node_desc_add_input(d, in[0]);
  wf_node_desc_add_input(d, in[1]);
  loss = (wf_output){ag_node(d, "xent"), 0};
  assert_int_equal(wf_graph_add_gradients(g, &loss, 1, NULL, in, 2, dx, st), 0);
  assert_non_null(dx[0].dense.node);
  assert_null(dx[1].dense.node);
  assert_null(dx[1].indices.node);
  wf_graph_free(g);
  wf_status_free(st);
}

/* ---- BatchNorm ----------------------------------------------------------- */

static void test_batch_norm_training_gradient_wrt_x_scale_offset(void **state) {
  for (int nchw = 0; nchw <= 1; nchw++) {
    /* mean and variance are not read in training: empty Consts. */
    ag_case c = {.op = "BatchNorm",
                 .order = "xxxcc",
                 .consts = {{WF_FLOAT64, 1, {0}, (const double[]){0}},
                            {WF_FLOAT64, 1, {0}, (const double[]){0}}},
                 .attrs = {{"data_format", AG_STRING(nchw ? "NCHW" : "NHWC")},
                           {"epsilon", GC_FLOAT(0.01)}}};
    gc_spec s = {.num_inputs = 3,
                 .in = {{.rank = 4},
                        {.rank = 1, .dims = {3}, .lo = 0.5, .hi = 1.5},
                        {.rank = 1, .dims = {3}}}};

    in_format(nchw, AG_I64(2, 2, 3, 3), s.in[0].dims);
    c.outputs = 0x1;
    s.name = nchw ? "BatchNorm training NCHW y" : "BatchNorm training NHWC y";
    ag_check(rt, s, &c);
    /* The batch statistics depend on x too. */
    c.outputs = 0x7;
    s.name = nchw ? "BatchNorm training NCHW y, mean, variance"
                  : "BatchNorm training NHWC y, mean, variance";
    ag_check(rt, s, &c);
  }
}

static void
test_batch_norm_inference_treats_statistics_as_constants(void **state) {
  /* x, scale, mean and variance fed (the last two must get no gradient);
   * offset a Const (its gradient is the same sum as in training). */
  ag_case c = {
      .op = "BatchNorm",
      .order = "xxcxx",
      .consts = {{WF_FLOAT64, 1, {3}, (const double[]){0.1, -2, 1}}},
      .attrs = {{"is_training", GC_BOOL(0)}, {"epsilon", GC_FLOAT(0.001)}}};
  gc_spec s = {.name = "BatchNorm inference",
               .num_inputs = 4,
               .in = {{.rank = 2, .dims = {5, 3}},
                      {.rank = 1, .dims = {3}, .lo = 0.5, .hi = 1.5},
                      {.rank = 1, .dims = {3}, .lo = -0.5, .hi = 0.5},
                      {.rank = 1, .dims = {3}, .lo = 0.5, .hi = 2}},
               .no_gradient = 0xc};

  ag_check(rt, s, &c);
  c.outputs = 0x7; /* outputs 1 and 2 are copies of the constants */
  s.name = "BatchNorm inference y, mean, variance";
  ag_check(rt, s, &c);
}

/* ---- Dropout ------------------------------------------------------------- */

/* Whether the Philox stream (key, step) keeps element i at rate: the
 * float64 uniform of element i (philox.h's layout) >= rate. */
static int philox_keeps(uint64_t key, int64_t step, int64_t i, double rate) {
  rnd_stream s;
  uint32_t w[4];
  int j = (int)(i % 2);

  rnd_stream_init(&s, key, step);
  rnd_stream_block(&s, (uint64_t)(i / 2), 0, w);
  return rnd_u53(w[2 * j], w[2 * j + 1]) >= rate;
}

/* Runs y = Dropout(x) and dx = d(sum(y * w))/dx in one step per run, for
 * three runs (steps 0, 1, 2 of a new session), and checks that dx uses
 * exactly y's mask: dx[i] = w[i] / (1 - rate) where y[i] = x[i] / (1 -
 * rate), 0 where y[i] = 0, and that the mask is the stream's. */
static void dropout_mask_check(int64_t seed, int64_t seed2) {
  enum { N = 257 };
  const double rate = 0.4, scale = 1.0 / (1.0 - rate);
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  double xs[N], ws[N];
  wf_tensor *x;
  wf_output in, wc, y, fetch[2];
  wf_gradient dx;
  wf_session *s;
  uint64_t key = seed || seed2 ? rnd_key_from_seeds(seed, seed2)
                               : rnd_key_from_name("drop");
  int differs = 0;
  uint8_t first[N];

  for (int i = 0; i < N; i++) {
    xs[i] = 0.5 + i / 256.0; /* never 0 */
    ws[i] = 1.5 - i / 512.0;
  }
  x = ag_tensor(1, AG_I64(N), xs);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", AG_I64(N), 1);
  in = (wf_output){ag_node(d, "x"), 0};
  assert_int_equal(gc_const(g, WF_FLOAT64, AG_I64(N), 1, ws, &wc, st), 0);
  d = wf_node_desc_new(g, "Dropout", "drop");
  wf_node_desc_add_input(d, in);
  wf_node_desc_set_attr_float(d, "rate", rate);
  wf_node_desc_set_attr_int(d, "seed", seed);
  wf_node_desc_set_attr_int(d, "seed2", seed2);
  y = (wf_output){ag_node(d, "Dropout"), 0};
  if (wf_graph_add_gradients(g, &y, 1, &wc, &in, 1, &dx, st))
    fail_msg("adding gradients: %s", wf_status_message(st));
  assert_non_null(dx.dense.node);
  assert_string_equal(wf_node_op(dx.dense.node), "Dropout");
  fetch[0] = y;
  fetch[1] = dx.dense;
  s = wf_session_new(g, st);
  assert_non_null(s);
  for (int64_t step = 0; step < 3; step++) {
    wf_tensor *out[2];
    const double *yv, *gv;
    int kept = 0;

    if (wf_session_run(s, NULL, &in, &x, 1, fetch, out, 2, NULL, 0, NULL, st))
      fail_msg("run: %s", wf_status_message(st));
    yv = wf_tensor_data(out[0]);
    gv = wf_tensor_data(out[1]);
    for (int64_t i = 0; i < N; i++) {
      int keep = philox_keeps(key, step, i, rate);
      if ((yv[i] != 0) != keep || (gv[i] != 0) != keep)
        fail_msg("step %lld element %lld: y %g, dx %g, the stream %s it",
                 (long long)step, (long long)i, yv[i], gv[i],
                 keep ? "keeps" : "drops");
      if (keep && (yv[i] != xs[i] * scale || gv[i] != ws[i] * scale))
        fail_msg("step %lld element %lld: kept values are not scaled by "
                 "1 / (1 - rate)",
                 (long long)step, (long long)i);
      kept += keep;
      if (step == 0)
        first[i] = (uint8_t)keep;
      else
        differs |= first[i] != keep;
    }
    /* 257 draws at rate 0.4 keep about 154; 100..220 is over 6 sigma. */
    assert_true(kept > 100 && kept < 220);
    wf_tensor_release(out[0]);
    wf_tensor_release(out[1]);
  }
  assert_true(differs); /* each step draws a new mask */
  wf_session_free(s);
  wf_tensor_release(x);
  wf_graph_free(g);
  wf_status_free(st);
}

static void
test_dropout_gradient_draws_the_forward_mask_of_its_step(void **state) {
  dropout_mask_check(0, 0); /* keyed by the node name */
  dropout_mask_check(7, 11);
}

static void test_dropout_at_rate_zero_matches_finite_differences(void **state) {
  ag_case c = {.op = "Dropout", .order = "x", .attrs = {{"rate", GC_FLOAT(0)}}};

  ag_check(rt,
           (gc_spec){.name = "Dropout rate 0",
                     .num_inputs = 1,
                     .in = {{.rank = 2, .dims = {3, 4}}}},
           &c);
}

static void test_every_nn_op_has_a_gradient(void **state) {
  static const char *const ops[] = {"BiasAdd",
                                    "Conv2D",
                                    "MaxPool",
                                    "AvgPool",
                                    "Softmax",
                                    "LogSoftmax",
                                    "SoftmaxCrossEntropyWithLogits",
                                    "SparseSoftmaxCrossEntropyWithLogits",
                                    "BatchNorm",
                                    "Dropout"};

  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (wf_runtime_op_gradient(rt, ops[i]) != 1)
      fail_msg("%s should have a gradient function", ops[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bias_add_gradient_in_both_formats),
      cmocka_unit_test(
          test_conv2d_gradients_over_strides_paddings_dilations_formats),
      cmocka_unit_test(test_max_pool_gradient_goes_to_each_windows_maximum),
      cmocka_unit_test(test_avg_pool_gradient_shares_among_window_elements),
      cmocka_unit_test(test_softmax_and_log_softmax_gradients),
      cmocka_unit_test(test_softmax_xent_gradients_for_logits_and_labels),
      cmocka_unit_test(test_sparse_softmax_xent_gradient),
      cmocka_unit_test(test_sparse_softmax_xent_labels_get_no_gradient),
      cmocka_unit_test(test_batch_norm_training_gradient_wrt_x_scale_offset),
      cmocka_unit_test(
          test_batch_norm_inference_treats_statistics_as_constants),
      cmocka_unit_test(
          test_dropout_gradient_draws_the_forward_mask_of_its_step),
      cmocka_unit_test(test_dropout_at_rate_zero_matches_finite_differences),
      cmocka_unit_test(test_every_nn_op_has_a_gradient),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
