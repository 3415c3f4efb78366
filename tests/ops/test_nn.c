/* tests/ops/test_nn.c — the ops_nn plugin: every op's reference CPU kernel,
 * the backward ops of the gradients included, against NumPy references
 * (fixtures/nn_cases.h, tolerances in array_nn_harness.h: float32 1e-5 and
 * float64 1e-12 relative, integers exact), shape inference, and the errors
 * of bad attributes, shapes and labels. The gradients themselves are
 * checked in test_nn_grad.c. Loads ops_array too, for Placeholder and
 * Const. */
#include <config.h>

#include "array_nn_harness.h"

#include "fixtures/nn_cases.h"

#define NCASES (sizeof nn_cases / sizeof nn_cases[0])

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {"plugins/ops/array/.libs",
                                     "plugins/ops/nn/.libs"};
  rt = fx_runtime(dirs, 2);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

/* ---- every op against its fixtures --------------------------------------- */

#define MATCHES(fn, op)                                                        \
  static void fn(void **state) { fx_check_op(rt, nn_cases, NCASES, op); }
MATCHES(test_bias_add_matches_numpy, "BiasAdd")
MATCHES(test_conv2d_matches_numpy, "Conv2D")
MATCHES(test_max_pool_matches_numpy, "MaxPool")
MATCHES(test_avg_pool_matches_numpy_excluding_padding, "AvgPool")
MATCHES(test_softmax_matches_numpy, "Softmax")
MATCHES(test_log_softmax_matches_numpy, "LogSoftmax")
MATCHES(test_softmax_xent_matches_numpy, "SoftmaxCrossEntropyWithLogits")
MATCHES(test_sparse_softmax_xent_matches_numpy,
        "SparseSoftmaxCrossEntropyWithLogits")
MATCHES(test_batch_norm_matches_numpy, "BatchNorm")
MATCHES(test_dropout_matches_the_philox_stream, "Dropout")
MATCHES(test_bias_add_grad_matches_numpy, "BiasAddGrad")
MATCHES(test_conv2d_backprop_input_matches_numpy_adjoint,
        "Conv2DBackpropInput")
MATCHES(test_conv2d_backprop_filter_matches_numpy_adjoint,
        "Conv2DBackpropFilter")
MATCHES(test_max_pool_grad_matches_numpy_argmax_with_ties_to_the_first,
        "MaxPoolGrad")
MATCHES(test_avg_pool_grad_matches_numpy, "AvgPoolGrad")
MATCHES(test_softmax_grad_matches_the_jacobian, "SoftmaxGrad")
MATCHES(test_log_softmax_grad_matches_the_jacobian, "LogSoftmaxGrad")
MATCHES(test_batch_norm_grad_matches_complex_step_derivatives,
        "BatchNormGrad")

/* ---- shape inference ----------------------------------------------------- */

/* Output shape of a Conv2D with stride 2 in H and W on an input and a
 * filter of the given (possibly unknown) shapes. */
static void conv_shape(const int64_t *in, const int64_t *filter,
                       const char *padding, const char *format,
                       wf_shape *out) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  static const int64_t nhwc_strides[] = {1, 2, 2, 1},
                       nchw_strides[] = {1, 1, 2, 2};
  const int64_t *strides = strcmp(format, "NCHW") ? nhwc_strides : nchw_strides;
  fx_case c = {.name = "Conv2D", .op = "Conv2D", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 4, {in[0], in[1], in[2], in[3]}, NULL},
                          {WF_FLOAT32, 4,
                           {filter[0], filter[1], filter[2], filter[3]},
                           NULL}},
               .num_attrs = 3,
               .attrs = {{"strides", 'I', 0, 0, NULL, strides, 4},
                         {"padding", 's', 0, 0, padding, NULL, 0},
                         {"data_format", 's', 0, 0, format, NULL, 0}}};
  wf_node *n = fx_build(g, &c, 0, st);

  if (!n)
    fail_msg("building: %s", wf_status_message(st));
  wf_node_output_shape(n, 0, out);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_conv2d_infers_shape_with_unknown_dims(void **state) {
  const int64_t nhwc[] = {-1, 28, 27, 1}, f[] = {3, 3, 1, 16};
  const int64_t nchw[] = {8, 1, -1, 28}, fk[] = {-1, -1, 1, 16};
  wf_shape s;

  /* SAME with stride 2: ceil(28 / 2) = 14, ceil(27 / 2) = 14. */
  conv_shape(nhwc, f, "SAME", "NHWC", &s);
  assert_int_equal(s.rank, 4);
  assert_int_equal(s.dims[0], -1);
  assert_int_equal(s.dims[1], 14);
  assert_int_equal(s.dims[2], 14);
  assert_int_equal(s.dims[3], 16);
  /* VALID: (27 - 3) / 2 + 1 = 13. */
  conv_shape(nhwc, f, "VALID", "NHWC", &s);
  assert_int_equal(s.dims[1], 13);
  assert_int_equal(s.dims[2], 13);
  /* NCHW, unknown H and unknown filter size: SAME still knows W. */
  conv_shape(nchw, fk, "SAME", "NCHW", &s);
  assert_int_equal(s.dims[0], 8);
  assert_int_equal(s.dims[1], 16);
  assert_int_equal(s.dims[2], -1);
  assert_int_equal(s.dims[3], 14);
}

/* ---- errors -------------------------------------------------------------- */

static const float zeros[64] = {0}; /* enough for every input below */

static void test_sparse_xent_refuses_out_of_range_label_naming_it(
    void **state) {
  static const int64_t labels[] = {0, 5, 1};
  static const int32_t neg[] = {0, 1, -2};
  fx_case c = {.name = "SparseXent",
               .op = "SparseSoftmaxCrossEntropyWithLogits",
               .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {3, 5}, zeros},
                          {WF_INT64, 1, {3}, labels}}};
  fx_case c2 = {.name = "SparseXent",
                .op = "SparseSoftmaxCrossEntropyWithLogits",
                .num_inputs = 2,
                .inputs = {{WF_FLOAT32, 2, {3, 5}, zeros},
                           {WF_INT32, 1, {3}, neg}}};

  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "labels[1] = 5",
                                        "[0, 5)", NULL});
  fx_expect_error(rt, &c2, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "labels[2] = -2", NULL});
}

/* A Conv2D case on a (1, 4, 5, 2) input with the given filter shape and
 * attributes (strides default to ones). */
static void conv_error(const int64_t *fdims, const int64_t *strides,
                       const char *padding, const int64_t *explicit_pads,
                       int nexplicit, const char *format, int code,
                       const char *part) {
  static const int64_t ones[] = {1, 1, 1, 1};
  fx_case c = {.name = "Conv2D", .op = "Conv2D", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 4, {1, 4, 5, 2}, zeros},
                          {WF_FLOAT32, 4,
                           {fdims[0], fdims[1], fdims[2], fdims[3]}, zeros}},
               .num_attrs = nexplicit ? 4 : 3,
               .attrs = {{"strides", 'I', 0, 0, NULL, strides ? strides : ones,
                          4},
                         {"padding", 's', 0, 0, padding, NULL, 0},
                         {"data_format", 's', 0, 0, format, NULL, 0},
                         {"explicit_paddings", 'I', 0, 0, NULL, explicit_pads,
                          nexplicit}}};

  fx_expect_error(rt, &c, 1, code,
                  (const char *const[]){"node 'op'", part, NULL});
}

static void test_conv2d_refuses_bad_geometry_and_attributes(void **state) {
  static const int64_t f_ok[] = {2, 2, 2, 3}, f_c[] = {2, 2, 3, 3},
                       f_big[] = {5, 2, 2, 3}, f_c1[] = {1, 1, 1, 1},
                       f_empty[] = {2, 0, 2, 3};
  static const int64_t s_batch[] = {2, 1, 1, 1}, s_zero[] = {1, 0, 1, 1};
  static const int64_t ex6[] = {0, 0, 1, 1, 1, 1};
  static const int64_t ex_c[] = {0, 0, 1, 1, 1, 1, 1, 0};

  conv_error(f_c, NULL, "SAME", NULL, 0, "NHWC", WF_INVALID_ARGUMENT,
             "2 channels");
  conv_error(f_empty, NULL, "SAME", NULL, 0, "NHWC", WF_INVALID_ARGUMENT,
             "empty window");
  conv_error(f_big, NULL, "VALID", NULL, 0, "NHWC", WF_INVALID_ARGUMENT,
             "larger than the input height 4");
  conv_error(f_ok, s_batch, "SAME", NULL, 0, "NHWC", WF_UNIMPLEMENTED,
             "batch and channel");
  conv_error(f_ok, s_zero, "SAME", NULL, 0, "NHWC", WF_INVALID_ARGUMENT,
             "'strides' must be >= 1");
  conv_error(f_ok, NULL, "FULL", NULL, 0, "NHWC", WF_INVALID_ARGUMENT,
             "padding \"FULL\"");
  conv_error(f_ok, NULL, "EXPLICIT", ex6, 6, "NHWC", WF_INVALID_ARGUMENT,
             "8 entries");
  conv_error(f_ok, NULL, "EXPLICIT", ex_c, 8, "NHWC", WF_INVALID_ARGUMENT,
             "explicit_paddings[6]");
  conv_error(f_ok, NULL, "SAME", ex_c, 8, "NHWC", WF_INVALID_ARGUMENT,
             "must be empty");
  conv_error(f_c1, NULL, "SAME", NULL, 0, "NWHC", WF_INVALID_ARGUMENT,
             "data_format \"NWHC\"");
}

static void test_kernels_refuse_shapes_unknown_while_building(void **state) {
  static const int64_t s1[] = {1, 1, 1, 1};
  fx_case conv = {.name = "Conv2D", .op = "Conv2D", .num_inputs = 2,
                  .inputs = {{WF_FLOAT32, 4, {1, 4, 5, 2}, zeros},
                             {WF_FLOAT32, 4, {2, 2, 3, 1}, zeros}},
                  .num_attrs = 2,
                  .attrs = {{"strides", 'I', 0, 0, NULL, s1, 4},
                            {"padding", 's', 0, 0, "VALID", NULL, 0}},
                  .unknown_shapes = 1};
  fx_case bias = {.name = "BiasAdd", .op = "BiasAdd", .num_inputs = 2,
                  .inputs = {{WF_FLOAT32, 2, {2, 3}, zeros},
                             {WF_FLOAT32, 1, {2}, zeros}},
                  .unknown_shapes = 1};
  fx_case xent = {.name = "Xent", .op = "SoftmaxCrossEntropyWithLogits",
                  .num_inputs = 2,
                  .inputs = {{WF_FLOAT32, 2, {2, 3}, zeros},
                             {WF_FLOAT32, 2, {3, 2}, zeros}},
                  .unknown_shapes = 1};
  fx_case pool = {.name = "MaxPool", .op = "MaxPool", .num_inputs = 1,
                  .inputs = {{WF_FLOAT32, 3, {2, 3, 5}, zeros}},
                  .num_attrs = 3,
                  .attrs = {{"ksize", 'I', 0, 0, NULL, s1, 4},
                            {"strides", 'I', 0, 0, NULL, s1, 4},
                            {"padding", 's', 0, 0, "VALID", NULL, 0}},
                  .unknown_shapes = 1};

  fx_expect_error(rt, &conv, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "2 channels",
                                        "C_in = 3", NULL});
  fx_expect_error(rt, &bias, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "3 channels", NULL});
  fx_expect_error(rt, &xent, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "do not match", NULL});
  fx_expect_error(rt, &pool, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "rank 4", NULL});
}

static void test_pools_refuse_window_over_channels(void **state) {
  static const int64_t k[] = {1, 2, 2, 2}, s[] = {1, 1, 1, 1};
  fx_case c = {.name = "MaxPool", .op = "MaxPool", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 4, {1, 3, 5, 2}, zeros}},
               .num_attrs = 3,
               .attrs = {{"ksize", 'I', 0, 0, NULL, k, 4},
                         {"strides", 'I', 0, 0, NULL, s, 4},
                         {"padding", 's', 0, 0, "VALID", NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_UNIMPLEMENTED,
                  (const char *const[]){"'ksize' must be 1", NULL});
  c.op = "AvgPool";
  fx_expect_error(rt, &c, 1, WF_UNIMPLEMENTED,
                  (const char *const[]){"'ksize' must be 1", NULL});
}

/* EXPLICIT pool padding at least the window would leave windows of only
 * padding: refused, naming the dimension; the amounts count too. */
static void test_pools_refuse_padding_as_large_as_the_window(void **state) {
  static const int64_t k[] = {1, 2, 3, 1}, s[] = {1, 1, 1, 1},
                       big[] = {0, 0, 1, 0, 1, 3, 0, 0},
                       short_pads[] = {0, 0, 1, 1};
  fx_case c = {.name = "MaxPool", .op = "MaxPool", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 4, {1, 3, 5, 2}, zeros}},
               .num_attrs = 4,
               .attrs = {{"ksize", 'I', 0, 0, NULL, k, 4},
                         {"strides", 'I', 0, 0, NULL, s, 4},
                         {"padding", 's', 0, 0, "EXPLICIT", NULL, 0},
                         {"explicit_paddings", 'I', 0, 0, NULL, big, 8}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"explicit padding after W 3",
                                        "the window's 3", NULL});
  c.op = "AvgPool";
  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"explicit padding after W 3", NULL});
  c.attrs[3] = (fx_attr){"explicit_paddings", 'I', 0, 0, NULL, short_pads, 4};
  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"explicit_paddings", "8", NULL});
}

static void test_bias_add_refuses_bias_of_other_length(void **state) {
  fx_case c = {.name = "BiasAdd", .op = "BiasAdd", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, zeros},
                          {WF_FLOAT32, 1, {2}, zeros}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"does not match the 3 channels",
                                        NULL});
}

static void test_batch_norm_needs_full_stats_for_inference(void **state) {
  fx_case c = {.name = "BatchNorm", .op = "BatchNorm", .num_inputs = 5,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, zeros},
                          {WF_FLOAT32, 1, {3}, zeros},
                          {WF_FLOAT32, 1, {3}, zeros},
                          {WF_FLOAT32, 1, {0}, NULL},
                          {WF_FLOAT32, 1, {0}, NULL}},
               .num_attrs = 1,
               .attrs = {{"is_training", 'b', 0, 0, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"mean has 0 entries", NULL});
  c.attrs[0].name = "epsilon";
  c.attrs[0].kind = 'f';
  c.attrs[0].f = -1;
  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"epsilon is -1", NULL});
}

static void test_dropout_refuses_rate_outside_0_1(void **state) {
  fx_case c = {.name = "Dropout", .op = "Dropout", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 1, {3}, zeros}},
               .num_attrs = 1,
               .attrs = {{"rate", 'f', 0, 1.0, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"rate is 1", NULL});
}

/* Runs Dropout on 1000 ones with the given seeds; returns how many were
 * kept and copies the output into y. */
static int dropout_ones(int64_t seed, int64_t seed2, float *y) {
  static float ones[1000];
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  fx_case c = {.name = "Dropout", .op = "Dropout", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 1, {1000}, ones}},
               .num_attrs = 3,
               .attrs = {{"rate", 'f', 0, 0.3, NULL, NULL, 0},
                         {"seed", 'i', seed, 0, NULL, NULL, 0},
                         {"seed2", 'i', seed2, 0, NULL, NULL, 0}}};
  wf_tensor *outs[FX_MAX_IO];
  wf_node *n;
  int kept = 0;

  for (int i = 0; i < 1000; i++)
    ones[i] = 1;
  n = fx_build(g, &c, 0, st);
  assert_non_null(n);
  assert_true(wf_node_op_flags(n) & WF_OP_RANDOM);
  assert_int_equal(fx_run_node(rt, n, &c, outs, st), 0);
  memcpy(y, wf_tensor_data(outs[0]), sizeof(float) * 1000);
  for (int i = 0; i < 1000; i++) {
    /* Kept elements are scaled by 1 / (1 - rate), the others are 0. */
    if (y[i] != 0) {
      assert_float_equal(y[i], 1 / 0.7f, 1e-6);
      kept++;
    }
  }
  wf_tensor_release(outs[0]);
  wf_graph_free(g);
  wf_status_free(st);
  return kept;
}

static void test_dropout_mask_repeats_for_same_seeds_and_step(void **state) {
  static float a[1000], b[1000], c[1000];
  int ka = dropout_ones(5, 6, a), kb = dropout_ones(5, 6, b);
  int kc = dropout_ones(5, 7, c);

  assert_int_equal(ka, kb);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  /* 700 expected of 1000; 6 standard deviations (~87) either way. */
  assert_in_range(ka, 613, 787);
  assert_in_range(kc, 613, 787);
}

/* ---- backward ops -------------------------------------------------------- */

static void test_backward_ops_refuse_gradients_of_the_wrong_shape(
    void **state) {
  static const int32_t xsize[] = {1, 4, 5, 2};
  static const int64_t ones4[] = {1, 1, 1, 1}, k22[] = {1, 2, 2, 1};
  /* Conv2D of (1, 4, 5, 2) by (3, 3, 2, 3), VALID: (1, 2, 3, 3), not
   * (1, 2, 2, 3). */
  fx_case conv = {.name = "Conv2DBackpropInput",
                  .op = "Conv2DBackpropInput",
                  .num_inputs = 3,
                  .inputs = {{WF_INT32, 1, {4}, xsize},
                             {WF_FLOAT32, 4, {3, 3, 2, 3}, zeros},
                             {WF_FLOAT32, 4, {1, 2, 2, 3}, zeros}},
                  .value_inputs = 1,
                  .num_attrs = 2,
                  .attrs = {{"strides", 'I', 0, 0, NULL, ones4, 4},
                            {"padding", 's', 0, 0, "VALID", NULL, 0}}};
  /* MaxPool 2x2 stride 2 of (1, 4, 5, 2): (1, 2, 2, 2), not (1, 2, 3, 2). */
  fx_case pool = {.name = "MaxPoolGrad",
                  .op = "MaxPoolGrad",
                  .num_inputs = 2,
                  .inputs = {{WF_FLOAT32, 4, {1, 4, 5, 2}, zeros},
                             {WF_FLOAT32, 4, {1, 2, 3, 2}, zeros}},
                  .num_attrs = 3,
                  .attrs = {{"ksize", 'I', 0, 0, NULL, k22, 4},
                            {"strides", 'I', 0, 0, NULL, k22, 4},
                            {"padding", 's', 0, 0, "VALID", NULL, 0}}};

  fx_expect_error(rt, &conv, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"out_backprop", "(1, 2, 3, 3)",
                                        NULL});
  fx_expect_error(rt, &conv, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"out_backprop has shape (1, 2, 2, 3)",
                                        "(1, 2, 3, 3)", NULL});
  fx_expect_error(rt, &pool, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"grad", "(1, 2, 2, 2)", NULL});
  pool.unknown_shapes = 1;
  fx_expect_error(rt, &pool, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"grad has shape (1, 2, 3, 2)",
                                        "(1, 2, 2, 2)", NULL});
}

/* The shape inferred for output 0 of c, its value inputs Consts when
 * as_const. */
static void inferred_shape(const fx_case *c, int as_const, wf_shape *s) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = fx_build(g, c, as_const, st);

  if (!n)
    fail_msg("%s: building: %s", c->name, wf_status_message(st));
  wf_node_output_shape(n, 0, s);
  wf_graph_free(g);
  wf_status_free(st);
}

/* The backward ops know their output shapes while building: from a Const
 * sizes vector, or else from the other inputs where those say it. */
static void test_backward_ops_infer_their_output_shapes(void **state) {
  static const int32_t xsize[] = {2, 6, 5, 3};
  static const int64_t ones4[] = {1, 1, 1, 1};
  fx_case c = {.name = "Conv2DBackpropInput",
               .op = "Conv2DBackpropInput",
               .num_inputs = 3,
               .inputs = {{WF_INT32, 1, {4}, xsize},
                          {WF_FLOAT32, 4, {3, 3, 3, 4}, zeros},
                          {WF_FLOAT32, 4, {2, 6, 5, 4}, zeros}},
               .value_inputs = 1,
               .num_attrs = 2,
               .attrs = {{"strides", 'I', 0, 0, NULL, ones4, 4},
                         {"padding", 's', 0, 0, "SAME", NULL, 0}}};
  fx_case b = {.name = "BiasAddGrad",
               .op = "BiasAddGrad",
               .num_inputs = 1,
               .inputs = {{WF_FLOAT64, 4, {2, 7, 3, 3}, NULL}},
               .num_attrs = 1,
               .attrs = {{"data_format", 's', 0, 0, "NCHW", NULL, 0}}};
  wf_shape s;

  /* A Const input_sizes: exactly it. */
  inferred_shape(&c, 1, &s);
  assert_int_equal(s.rank, 4);
  assert_int_equal(s.dims[1], 6);
  assert_int_equal(s.dims[2], 5);
  /* Fed: the batch from dy and the channels from the filter. */
  inferred_shape(&c, 0, &s);
  assert_int_equal(s.rank, 4);
  assert_int_equal(s.dims[0], 2);
  assert_int_equal(s.dims[1], -1);
  assert_int_equal(s.dims[3], 3);
  inferred_shape(&b, 0, &s);
  assert_int_equal(s.rank, 1);
  assert_int_equal(s.dims[0], 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bias_add_matches_numpy),
      cmocka_unit_test(test_conv2d_matches_numpy),
      cmocka_unit_test(test_max_pool_matches_numpy),
      cmocka_unit_test(test_avg_pool_matches_numpy_excluding_padding),
      cmocka_unit_test(test_softmax_matches_numpy),
      cmocka_unit_test(test_log_softmax_matches_numpy),
      cmocka_unit_test(test_softmax_xent_matches_numpy),
      cmocka_unit_test(test_sparse_softmax_xent_matches_numpy),
      cmocka_unit_test(test_batch_norm_matches_numpy),
      cmocka_unit_test(test_dropout_matches_the_philox_stream),
      cmocka_unit_test(test_bias_add_grad_matches_numpy),
      cmocka_unit_test(test_conv2d_backprop_input_matches_numpy_adjoint),
      cmocka_unit_test(test_conv2d_backprop_filter_matches_numpy_adjoint),
      cmocka_unit_test(
          test_max_pool_grad_matches_numpy_argmax_with_ties_to_the_first),
      cmocka_unit_test(test_avg_pool_grad_matches_numpy),
      cmocka_unit_test(test_softmax_grad_matches_the_jacobian),
      cmocka_unit_test(test_log_softmax_grad_matches_the_jacobian),
      cmocka_unit_test(test_batch_norm_grad_matches_complex_step_derivatives),
      cmocka_unit_test(test_conv2d_infers_shape_with_unknown_dims),
      cmocka_unit_test(test_sparse_xent_refuses_out_of_range_label_naming_it),
      cmocka_unit_test(test_conv2d_refuses_bad_geometry_and_attributes),
      cmocka_unit_test(test_kernels_refuse_shapes_unknown_while_building),
      cmocka_unit_test(test_pools_refuse_window_over_channels),
      cmocka_unit_test(test_pools_refuse_padding_as_large_as_the_window),
      cmocka_unit_test(test_bias_add_refuses_bias_of_other_length),
      cmocka_unit_test(test_batch_norm_needs_full_stats_for_inference),
      cmocka_unit_test(test_dropout_refuses_rate_outside_0_1),
      cmocka_unit_test(test_dropout_mask_repeats_for_same_seeds_and_step),
      cmocka_unit_test(test_backward_ops_refuse_gradients_of_the_wrong_shape),
      cmocka_unit_test(test_backward_ops_infer_their_output_shapes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
