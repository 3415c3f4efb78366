/* tests/ops/test_nn_grad.c — the gradients of the ops_nn plugin against
 * central finite differences in float64 (array_nn_gradcheck.h: relative
 * 1e-6 with an absolute floor of 1e-7): Conv2D over strides, paddings,
 * dilations and both data formats; the pools on inputs without ties (every
 * window's values at least 0.05 apart, far beyond the step 1e-6); softmax
 * and its losses, including the backprop output's own gradient; BatchNorm
 * in training (with the batch statistics' gradients) and in inference; and
 * Dropout, whose gradient must draw exactly the forward mask of its step
 * (checked element by element against the Philox stream of philox.h).
 * Loads ops_array, ops_math, ops_nn and the CPU device. */
#include <config.h>

#include "array_nn_gradcheck.h"
#include "philox.h"

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {
      "plugins/ops/array/.libs", "plugins/ops/math/.libs",
      "plugins/ops/nn/.libs", "plugins/devices/cpu/.libs"};
  rt = fx_runtime(dirs, 4);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define ATTR_I(nm, v) {nm, 'i', (v), 0, NULL, NULL, 0}
#define ATTR_F(nm, v) {nm, 'f', 0, (v), NULL, NULL, 0}
#define ATTR_B(nm, v) {nm, 'b', (v), 0, NULL, NULL, 0}
#define ATTR_S(nm, v) {nm, 's', 0, 0, (v), NULL, 0}
#define ATTR_INTS(nm, arr, cnt) {nm, 'I', 0, 0, NULL, (arr), (cnt)}

static gc_arg x_arg(int rank, const int64_t *dims, int kind) {
  return (gc_arg){gc_random(rank, dims, -1, 1), kind, GC_CHECK};
}

static void release_args(gc_arg *args, int n) {
  for (int i = 0; i < n; i++)
    wf_tensor_release(args[i].value);
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
  gc_op nhwc = {.op = "BiasAdd"};
  gc_op nchw = {.op = "BiasAdd",
                .num_attrs = 1,
                .attrs = {ATTR_S("data_format", "NCHW")}};
  gc_arg a[] = {x_arg(3, DIMS(2, 3, 4), GC_FEED), x_arg(1, DIMS(4), GC_FEED)};
  gc_arg b[] = {x_arg(4, DIMS(2, 3, 2, 2), GC_FEED),
                x_arg(1, DIMS(3), GC_FEED)};

  gc_seed(1);
  gc_check_op(rt, "BiasAdd NHWC", &nhwc, a, 2, NULL);
  gc_check_op(rt, "BiasAdd NCHW", &nchw, b, 2, NULL);
  release_args(a, 2);
  release_args(b, 2);
}

/* ---- Conv2D -------------------------------------------------------------- */

typedef struct conv_cfg {
  const char *padding;
  int64_t sh, sw, dh, dw;
  int64_t pads[4]; /* EXPLICIT: top, bottom, left, right */
  int64_t kh, kw;
} conv_cfg;

static void conv_check(const conv_cfg *c, int nchw, int kind) {
  int64_t strides[4], dilations[4], explicit_pads[8] = {0}, xd[4];
  gc_op op = {.op = "Conv2D", .num_attrs = 4};
  char name[160];

  in_format(nchw, DIMS(1, 1, 1, 1), strides);
  strides[nchw ? 2 : 1] = c->sh;
  strides[nchw ? 3 : 2] = c->sw;
  in_format(nchw, DIMS(1, 1, 1, 1), dilations);
  dilations[nchw ? 2 : 1] = c->dh;
  dilations[nchw ? 3 : 2] = c->dw;
  {
    int ih = nchw ? 2 : 1, iw = nchw ? 3 : 2;
    explicit_pads[2 * ih] = c->pads[0];
    explicit_pads[2 * ih + 1] = c->pads[1];
    explicit_pads[2 * iw] = c->pads[2];
    explicit_pads[2 * iw + 1] = c->pads[3];
  }
  op.attrs[0] = (fx_attr)ATTR_INTS("strides", strides, 4);
  op.attrs[1] = (fx_attr)ATTR_S("padding", c->padding);
  op.attrs[2] = (fx_attr)ATTR_INTS("dilations", dilations, 4);
  op.attrs[3] = (fx_attr)ATTR_S("data_format", nchw ? "NCHW" : "NHWC");
  if (strcmp(c->padding, "EXPLICIT") == 0)
    op.attrs[op.num_attrs++] =
        (fx_attr)ATTR_INTS("explicit_paddings", explicit_pads, 8);
  in_format(nchw, DIMS(2, 5, 6, 2), xd);
  {
    gc_arg a[] = {x_arg(4, xd, kind), x_arg(4, DIMS(c->kh, c->kw, 2, 3),
                                            kind)};
    snprintf(name, sizeof name,
             "Conv2D %s %s s(%lld,%lld) d(%lld,%lld) k%lldx%lld%s",
             nchw ? "NCHW" : "NHWC", c->padding, (long long)c->sh,
             (long long)c->sw, (long long)c->dh, (long long)c->dw,
             (long long)c->kh, (long long)c->kw,
             kind == GC_FEED_UNKNOWN ? " (shapes unknown)" : "");
    gc_check_op(rt, name, &op, a, 2, NULL);
    release_args(a, 2);
  }
}

static void test_conv2d_gradients_over_strides_paddings_dilations_formats(
    void **state) {
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

  gc_seed(2);
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
    for (int nchw = 0; nchw <= 1; nchw++)
      conv_check(&cfgs[i], nchw, GC_FEED);
  /* Unknown shapes: the sizes come from Shape nodes at run time. */
  conv_check(&cfgs[2], 0, GC_FEED_UNKNOWN);
  conv_check(&cfgs[6], 1, GC_FEED_UNKNOWN);
}

/* ---- pools --------------------------------------------------------------- */

/* A float64 tensor whose values are a random permutation of 0.05 * k,
 * k = 0..count-1, minus 1: all distinct and 0.05 apart, so no window has a
 * tie within the finite-difference step. */
static wf_tensor *distinct_values(int rank, const int64_t *dims) {
  wf_tensor *t = gc_random(rank, dims, 0, 1);
  double *d = wf_tensor_data(t);
  int64_t n = wf_tensor_count(t);

  for (int64_t i = 0; i < n; i++)
    d[i] = 0.05 * (double)i - 1;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)((gc_uniform() + 1) / 2 * (double)(i + 1));
    double v;
    if (j > i)
      j = i;
    v = d[i];
    d[i] = d[j];
    d[j] = v;
  }
  return t;
}

static void pool_check(const char *op_name, const char *padding, int64_t k,
                       int64_t s, int nchw, int kind) {
  int64_t ksize[4], strides[4], xd[4];
  gc_op op = {.op = op_name, .num_attrs = 4};
  char name[128];
  gc_arg a[1];

  in_format(nchw, DIMS(1, k, k + 1, 1), ksize);
  in_format(nchw, DIMS(1, s, s, 1), strides);
  in_format(nchw, DIMS(2, 5, 6, 3), xd);
  op.attrs[0] = (fx_attr)ATTR_INTS("ksize", ksize, 4);
  op.attrs[1] = (fx_attr)ATTR_INTS("strides", strides, 4);
  op.attrs[2] = (fx_attr)ATTR_S("padding", padding);
  op.attrs[3] = (fx_attr)ATTR_S("data_format", nchw ? "NCHW" : "NHWC");
  a[0] = (gc_arg){distinct_values(4, xd), kind, GC_CHECK};
  snprintf(name, sizeof name, "%s %s %s k%lldx%lld s%lld%s", op_name,
           nchw ? "NCHW" : "NHWC", padding, (long long)k, (long long)(k + 1),
           (long long)s, kind == GC_FEED_UNKNOWN ? " (shape unknown)" : "");
  gc_check_op(rt, name, &op, a, 1, NULL);
  release_args(a, 1);
}

static void test_max_pool_gradient_goes_to_each_windows_maximum(void **state) {
  gc_seed(3);
  for (int nchw = 0; nchw <= 1; nchw++) {
    pool_check("MaxPool", "VALID", 2, 2, nchw, GC_FEED);
    pool_check("MaxPool", "SAME", 3, 2, nchw, GC_FEED); /* windows overlap */
    pool_check("MaxPool", "SAME", 2, 1, nchw, GC_FEED);
  }
}

static void test_avg_pool_gradient_shares_among_window_elements(void **state) {
  gc_seed(4);
  for (int nchw = 0; nchw <= 1; nchw++) {
    pool_check("AvgPool", "VALID", 2, 2, nchw, GC_FEED);
    pool_check("AvgPool", "SAME", 3, 2, nchw, GC_FEED);
    pool_check("AvgPool", "SAME", 2, 1, nchw, GC_FEED);
  }
  pool_check("AvgPool", "SAME", 3, 2, 0, GC_FEED_UNKNOWN);
}

/* ---- softmax and its losses -------------------------------------------------- */

static void test_softmax_and_log_softmax_gradients(void **state) {
  gc_op sm = {.op = "Softmax"}, lsm = {.op = "LogSoftmax"};
  gc_arg a[] = {x_arg(2, DIMS(3, 5), GC_FEED)};
  gc_arg b[] = {x_arg(3, DIMS(2, 2, 4), GC_FEED_UNKNOWN)};

  gc_seed(5);
  gc_check_op(rt, "Softmax", &sm, a, 1, NULL);
  gc_check_op(rt, "LogSoftmax", &lsm, a, 1, NULL);
  gc_check_op(rt, "Softmax rank 3", &sm, b, 1, NULL);
  gc_check_op(rt, "LogSoftmax rank 3", &lsm, b, 1, NULL);
  release_args(a, 1);
  release_args(b, 1);
}

static void test_softmax_xent_gradients_for_logits_and_labels(void **state) {
  gc_op loss = {.op = "SoftmaxCrossEntropyWithLogits", .outputs = 0x1};
  gc_op both = {.op = "SoftmaxCrossEntropyWithLogits", .outputs = 0x3};
  gc_op back = {.op = "SoftmaxCrossEntropyWithLogits", .outputs = 0x2};
  gc_arg a[] = {x_arg(2, DIMS(3, 4), GC_FEED),
                {gc_random(2, DIMS(3, 4), 0.1, 1), GC_FEED, GC_CHECK}};
  double *lab = wf_tensor_data(a[1].value);

  /* Label rows are distributions (the op's contract, which makes backprop
   * the loss's gradient). */
  for (int r = 0; r < 3; r++) {
    double sum = 0;
    for (int c = 0; c < 4; c++)
      sum += lab[r * 4 + c];
    for (int c = 0; c < 4; c++)
      lab[r * 4 + c] /= sum;
  }
  gc_seed(6);
  /* Labels get -log_softmax(features) * dloss; the backprop output's own
   * gradient reaches both inputs too. */
  gc_check_op(rt, "SoftmaxXent loss", &loss, a, 2, NULL);
  gc_check_op(rt, "SoftmaxXent loss and backprop", &both, a, 2, NULL);
  gc_check_op(rt, "SoftmaxXent backprop", &back, a, 2, NULL);
  release_args(a, 2);
}

static void test_sparse_softmax_xent_gradient_and_none_for_labels(
    void **state) {
  static const int64_t labels[] = {2, 0, 3};
  gc_op loss = {.op = "SparseSoftmaxCrossEntropyWithLogits", .outputs = 0x1};
  gc_op both = {.op = "SparseSoftmaxCrossEntropyWithLogits", .outputs = 0x3};
  gc_arg a[] = {x_arg(2, DIMS(3, 4), GC_FEED),
                {gc_tensor_i64(WF_INT64, 1, DIMS(3), labels), GC_FEED,
                 GC_NONE}};

  gc_seed(7);
  gc_check_op(rt, "SparseSoftmaxXent loss", &loss, a, 2, NULL);
  gc_check_op(rt, "SparseSoftmaxXent loss and backprop", &both, a, 2, NULL);
  release_args(a, 2);
}

/* ---- BatchNorm ------------------------------------------------------------- */

static void test_batch_norm_training_gradient_wrt_x_scale_offset(
    void **state) {
  for (int nchw = 0; nchw <= 1; nchw++) {
    gc_op y_only = {.op = "BatchNorm",
                    .num_attrs = 2,
                    .attrs = {ATTR_S("data_format", nchw ? "NCHW" : "NHWC"),
                              ATTR_F("epsilon", 0.01)},
                    .outputs = 0x1};
    gc_op all = y_only;
    int64_t xd[4];
    gc_arg a[5];

    all.outputs = 0x7; /* the batch statistics depend on x too */
    in_format(nchw, DIMS(2, 2, 3, 3), xd);
    a[0] = x_arg(4, xd, GC_FEED);
    a[1] = (gc_arg){gc_random(1, DIMS(3), 0.5, 1.5), GC_FEED, GC_CHECK};
    a[2] = x_arg(1, DIMS(3), GC_FEED);
    a[3] = (gc_arg){gc_random(1, DIMS(0), 0, 1), GC_CONST, GC_SKIP};
    a[4] = (gc_arg){gc_random(1, DIMS(0), 0, 1), GC_CONST, GC_SKIP};
    gc_seed(8);
    gc_check_op(rt, nchw ? "BatchNorm training NCHW y"
                         : "BatchNorm training NHWC y",
                &y_only, a, 5, NULL);
    gc_check_op(rt, nchw ? "BatchNorm training NCHW y, mean, variance"
                         : "BatchNorm training NHWC y, mean, variance",
                &all, a, 5, NULL);
    release_args(a, 5);
  }
}

static void test_batch_norm_inference_treats_statistics_as_constants(
    void **state) {
  gc_op op = {.op = "BatchNorm",
              .num_attrs = 2,
              .attrs = {ATTR_B("is_training", 0), ATTR_F("epsilon", 0.001)}};
  gc_arg a[] = {x_arg(2, DIMS(5, 3), GC_FEED),
                {gc_random(1, DIMS(3), 0.5, 1.5), GC_FEED, GC_CHECK},
                x_arg(1, DIMS(3), GC_FEED),
                {gc_random(1, DIMS(3), -0.5, 0.5), GC_FEED, GC_NONE},
                {gc_random(1, DIMS(3), 0.5, 2), GC_FEED, GC_NONE}};

  gc_seed(9);
  gc_check_op(rt, "BatchNorm inference", &op, a, 5, NULL);
  release_args(a, 5);
}

/* ---- Dropout ---------------------------------------------------------------- */

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
  const double rate = 0.4, scale = 1.0 / (1.0 - rate);
  const int64_t n = 257;
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_tensor *x = gc_random(1, DIMS(n), 0.5, 1.5); /* never 0 */
  wf_tensor *w = gc_random(1, DIMS(n), 0.5, 1.5);
  wf_output in = gc_placeholder(g, x, 1), wc = gc_const(g, w), y, fetch[2];
  wf_node_desc *d = wf_node_desc_new(g, "Dropout", "drop");
  wf_gradient dx;
  wf_session *s;
  uint64_t key = seed || seed2 ? rnd_key_from_seeds(seed, seed2)
                               : rnd_key_from_name("drop");
  int differs = 0;
  uint8_t first[257];

  wf_node_desc_add_input(d, in);
  wf_node_desc_set_attr_float(d, "rate", rate);
  wf_node_desc_set_attr_int(d, "seed", seed);
  wf_node_desc_set_attr_int(d, "seed2", seed2);
  y = (wf_output){gc_node(d, "Dropout"), 0};
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
    const double *yv, *gv, *xv = wf_tensor_data(x), *wv = wf_tensor_data(w);
    int kept = 0;

    if (wf_session_run(s, NULL, &in, &x, 1, fetch, out, 2, NULL, 0, NULL, st))
      fail_msg("run: %s", wf_status_message(st));
    yv = wf_tensor_data(out[0]);
    gv = wf_tensor_data(out[1]);
    for (int64_t i = 0; i < n; i++) {
      int keep = philox_keeps(key, step, i, rate);
      if ((yv[i] != 0) != keep || (gv[i] != 0) != keep)
        fail_msg("step %lld element %lld: y %g, dx %g, the stream %s it",
                 (long long)step, (long long)i, yv[i], gv[i],
                 keep ? "keeps" : "drops");
      if (keep && (yv[i] != (double)(xv[i] * scale) ||
                   gv[i] != (double)(wv[i] * scale)))
        fail_msg("step %lld element %lld: kept values are not scaled by "
                 "1 / (1 - rate)",
                 (long long)step, (long long)i);
      kept += keep;
      if (step == 0)
        first[i] = (uint8_t)keep;
      else
        differs |= first[i] != keep;
    }
    /* 257 draws at rate 0.4: far from all or nothing. */
    assert_true(kept > 100 && kept < 220);
    wf_tensor_release(out[0]);
    wf_tensor_release(out[1]);
  }
  assert_true(differs); /* each step draws a new mask */
  wf_session_free(s);
  wf_tensor_release(x);
  wf_tensor_release(w);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_dropout_gradient_draws_the_forward_mask_of_its_step(
    void **state) {
  gc_seed(10);
  dropout_mask_check(0, 0); /* keyed by the node name */
  dropout_mask_check(7, 11);
}

static void test_dropout_at_rate_zero_matches_finite_differences(
    void **state) {
  gc_op op = {.op = "Dropout", .num_attrs = 1, .attrs = {ATTR_F("rate", 0)}};
  gc_arg a[] = {x_arg(2, DIMS(3, 4), GC_FEED)};

  gc_seed(11);
  gc_check_op(rt, "Dropout rate 0", &op, a, 1, NULL);
  release_args(a, 1);
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
      cmocka_unit_test(test_sparse_softmax_xent_gradient_and_none_for_labels),
      cmocka_unit_test(test_batch_norm_training_gradient_wrt_x_scale_offset),
      cmocka_unit_test(
          test_batch_norm_inference_treats_statistics_as_constants),
      cmocka_unit_test(test_dropout_gradient_draws_the_forward_mask_of_its_step),
      cmocka_unit_test(test_dropout_at_rate_zero_matches_finite_differences),
      cmocka_unit_test(test_every_nn_op_has_a_gradient),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
