/* tests/ops/test_array.c — the ops_array plugin: every op's reference CPU
 * kernel, the backward ops of the gradients included, against NumPy
 * references (fixtures/array_cases.h, tolerances in array_nn_harness.h:
 * float32 1e-5 and float64 1e-12 relative, everything else exact), the
 * copy-free views of the reshaping ops, shape inference with fed and with
 * Const shape-valued inputs, and the errors of bad attributes, shapes and
 * indices. The gradients themselves are checked in test_array_grad.c. */
#include <config.h>

#include "array_nn_harness.h"

#include "fixtures/array_cases.h"

#define NCASES (sizeof array_cases / sizeof array_cases[0])

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {"plugins/ops/array/.libs"};
  rt = fx_runtime(dirs, 1);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

/* ---- every op against its fixtures --------------------------------------- */

#define MATCHES(fn, op)                                                        \
  static void fn(void **state) { fx_check_op(rt, array_cases, NCASES, op); }
MATCHES(test_identity_matches_numpy, "Identity")
MATCHES(test_stop_gradient_matches_numpy, "StopGradient")
MATCHES(test_zeros_like_matches_numpy, "ZerosLike")
MATCHES(test_ones_like_matches_numpy, "OnesLike")
MATCHES(test_shape_matches_numpy, "Shape")
MATCHES(test_size_matches_numpy, "Size")
MATCHES(test_fill_matches_numpy, "Fill")
MATCHES(test_reshape_matches_numpy, "Reshape")
MATCHES(test_squeeze_matches_numpy, "Squeeze")
MATCHES(test_expand_dims_matches_numpy, "ExpandDims")
MATCHES(test_transpose_matches_numpy, "Transpose")
MATCHES(test_concat_matches_numpy, "Concat")
MATCHES(test_split_matches_numpy, "Split")
MATCHES(test_tile_matches_numpy, "Tile")
MATCHES(test_pad_matches_numpy, "Pad")
MATCHES(test_slice_matches_numpy, "Slice")
MATCHES(test_strided_slice_matches_numpy_indexing, "StridedSlice")
MATCHES(test_gather_matches_numpy, "Gather")
MATCHES(test_one_hot_matches_numpy, "OneHot")
MATCHES(test_unsorted_segment_sum_matches_numpy_add_at,
        "UnsortedSegmentSumToShape")
MATCHES(test_invert_permutation_matches_numpy_argsort, "InvertPermutation")
MATCHES(test_concat_offset_matches_numpy_cumsum, "ConcatOffset")
MATCHES(test_slice_grad_matches_numpy, "SliceGrad")
MATCHES(test_strided_slice_grad_matches_numpy_indexing, "StridedSliceGrad")
MATCHES(test_pad_grad_matches_numpy, "PadGrad")
MATCHES(test_tile_grad_matches_numpy, "TileGrad")
MATCHES(test_gather_grad_matches_numpy_add_at, "GatherGrad")

/* ---- sources and forwarding ---------------------------------------------- */

static const float f6[] = {1, 2, 3, 4, 5, 6};

static void test_const_outputs_its_value_tensor_without_copy(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  fx_tensor v = {WF_FLOAT32, 2, {2, 3}, f6};
  fx_case c = {.name = "Const", .op = "Const"};
  wf_node *n = fx_source(g, &v, 1, 0, 0);
  wf_tensor *outs[FX_MAX_IO];
  wf_attr_value a;
  wf_shape s;

  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], 2);
  assert_int_equal(s.dims[1], 3);
  assert_int_equal(wf_node_get_attr(n, "value", &a, st), 0);
  assert_int_equal(fx_run_node(rt, n, &c, outs, st), 0);
  assert_ptr_equal(outs[0], a.u.tensor);
  fx_expect("Const", 0, &v, outs[0]);
  wf_tensor_release(outs[0]);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_const_refuses_dtype_other_than_its_value(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  fx_tensor v = {WF_FLOAT32, 1, {6}, f6};
  wf_tensor *t = fx_tensor_new(&v);
  wf_node_desc *d = wf_node_desc_new(g, "Const", "c");

  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT32);
  assert_null(wf_node_desc_finish(d, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "float32"));
  assert_non_null(strstr(wf_status_message(st), "int32"));
  wf_tensor_release(t);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_ones_like_writes_one_in_half_types(void **state) {
  static const uint16_t x[3] = {0x1234, 0, 0xffff};
  static const uint16_t half[3] = {0x3c00, 0x3c00, 0x3c00};
  static const uint16_t bf16[3] = {0x3f80, 0x3f80, 0x3f80};
  wf_status *st = wf_status_new();
  fx_case c = {.name = "OnesLike", .op = "OnesLike", .num_inputs = 1,
               .inputs = {{WF_FLOAT16, 1, {3}, x}}};
  const fx_tensor want16 = {WF_FLOAT16, 1, {3}, half},
                  want_bf = {WF_BFLOAT16, 1, {3}, bf16};
  wf_tensor *outs[FX_MAX_IO];
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = fx_build(g, &c, 0, st);

  assert_int_equal(fx_run_node(rt, n, &c, outs, st), 0);
  fx_expect("OnesLike float16", 0, &want16, outs[0]);
  wf_tensor_release(outs[0]);
  wf_graph_free(g);
  c.inputs[0].dtype = WF_BFLOAT16;
  g = wf_graph_new(rt);
  n = fx_build(g, &c, 0, st);
  assert_int_equal(fx_run_node(rt, n, &c, outs, st), 0);
  fx_expect("OnesLike bfloat16", 0, &want_bf, outs[0]);
  wf_tensor_release(outs[0]);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_placeholder_is_fed_and_has_no_kernel(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  const int64_t dims[] = {-1, 28, 28, 1};
  wf_node *n;
  wf_shape s;

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", dims, 4);
  n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  assert_true(wf_node_op_flags(n) & WF_OP_SOURCE_FED);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 4);
  assert_int_equal(s.dims[0], -1);
  assert_int_equal(s.dims[1], 28);
  assert_null(wf__kernel_select(rt, n, "cpu", st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);

  /* Without a shape attribute the shape is unknown. */
  d = wf_node_desc_new(g, "Placeholder", "y");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT64);
  n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, WF_UNKNOWN_RANK);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_identity_forwards_the_input_tensor(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  fx_case c = {.name = "Identity", .op = "Identity", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 1, {6}, f6}}};
  wf_node *n = fx_build(g, &c, 0, st);
  const wf__kernel *k = wf__kernel_select(rt, n, "cpu", st);
  wf_tensor *x = fx_tensor_new(&c.inputs[0]), *y = NULL;

  assert_non_null(k);
  assert_true(k->def.flags & WF_KERNEL_CHEAP);
  assert_int_equal(wf__kernel_run(k, n, (const wf_tensor *const *)&x, &y, st),
                   0);
  assert_ptr_equal(x, y);
  wf_tensor_release(y);
  wf_tensor_release(x);
  wf_graph_free(g);
  wf_status_free(st);
}

/* Reshape, Squeeze and ExpandDims hand out a view: a new tensor of the new
 * shape on the input's very buffer, which outlives the input's release. */
static void test_reshape_ops_output_views_of_their_input(void **state) {
  static const int32_t shape_3_2[] = {3, 2};
  static const int64_t axis1[] = {1};
  fx_case cases[] = {
      {.name = "Reshape", .op = "Reshape", .num_inputs = 2,
       .inputs = {{WF_FLOAT32, 1, {6}, f6}, {WF_INT32, 1, {2}, shape_3_2}}},
      {.name = "Squeeze", .op = "Squeeze", .num_inputs = 1,
       .inputs = {{WF_FLOAT32, 3, {2, 1, 3}, f6}},
       .num_attrs = 1,
       .attrs = {{"squeeze_dims", 'I', 0, 0, NULL, axis1, 1}}},
      {.name = "ExpandDims", .op = "ExpandDims", .num_inputs = 1,
       .inputs = {{WF_FLOAT32, 2, {2, 3}, f6}},
       .num_attrs = 1,
       .attrs = {{"axis", 'i', 0, 0, NULL, NULL, 0}}}};
  static const int ranks[] = {2, 2, 3};

  for (int i = 0; i < 3; i++) {
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    wf_node *n = fx_build(g, &cases[i], 0, st);
    const wf__kernel *k = wf__kernel_select(rt, n, "cpu", st);
    wf_tensor *in[2] = {fx_tensor_new(&cases[i].inputs[0]),
                        cases[i].num_inputs > 1
                            ? fx_tensor_new(&cases[i].inputs[1])
                            : NULL};
    wf_tensor *y = NULL;
    void *data = wf_tensor_data(in[0]);

    assert_non_null(k);
    assert_true(k->def.flags & WF_KERNEL_CHEAP);
    assert_int_equal(
        wf__kernel_run(k, n, (const wf_tensor *const *)in, &y, st), 0);
    assert_true(y != in[0]);
    assert_ptr_equal(wf_tensor_data(y), data);
    assert_int_equal(wf_tensor_rank(y), ranks[i]);
    wf_tensor_release(in[0]);
    wf_tensor_release(in[1]);
    /* The view keeps the buffer alive: reading it is fine (ASan). */
    assert_true(((const float *)wf_tensor_data(y))[5] == f6[5]);
    wf_tensor_release(y);
    wf_graph_free(g);
    wf_status_free(st);
  }
}

static void test_noop_runs_with_nothing(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = wf_node_desc_finish(wf_node_desc_new(g, "NoOp", NULL), st);
  const wf__kernel *k;

  assert_non_null(n);
  assert_int_equal(wf_node_num_outputs(n), 0);
  k = wf__kernel_select(rt, n, "cpu", st);
  assert_non_null(k);
  assert_int_equal(wf__kernel_run(k, n, NULL, NULL, st), 0);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_array_ops_are_registered_with_docs_and_kernels(void **state) {
  static const char *const ops[] = {
      "Const",     "Placeholder", "Identity", "NoOp",    "Reshape",
      "Transpose", "Concat",      "Split",    "Slice",   "StridedSlice",
      "Pad",       "Gather",      "OneHot",   "Fill",    "ZerosLike",
      "OnesLike",  "Shape",       "Size",     "Squeeze", "ExpandDims",
      "Tile",      "StopGradient"};
  int nk = wf_runtime_kernel_count(rt);

  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const wf_op_def *d = wf_runtime_op_find(rt, ops[i]);
    int kernels = 0;
    if (!d)
      fail_msg("op %s is not registered", ops[i]);
    assert_non_null(d->doc);
    for (int k = 0; k < nk; k++) {
      wf_kernel_info ki;
      wf_runtime_kernel_get(rt, k, &ki);
      if (strcmp(ki.op, ops[i]) == 0 && strcmp(ki.device_type, "cpu") == 0) {
        assert_string_equal(ki.label, "reference");
        assert_int_equal(ki.priority, 0);
        kernels++;
      }
    }
    assert_int_equal(kernels, strcmp(ops[i], "Placeholder") == 0 ? 0 : 1);
  }
  assert_int_equal(wf_runtime_op_gradient(rt, "StopGradient"), 0);
  assert_int_equal(wf_runtime_op_gradient(rt, "Shape"), 0);
}

/* ---- shape inference from Const inputs ----------------------------------- */

static const int32_t shape_m1_12[] = {-1, 12};

static void test_reshape_infers_minus_one_only_when_count_is_known(
    void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  /* The Const shape gives the rank and 12; the unknown batch stays. */
  fx_case c = {.name = "Reshape", .op = "Reshape", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 3, {-1, 3, 4}, NULL},
                          {WF_INT32, 1, {2}, shape_m1_12}},
               .value_inputs = 0x2};
  wf_node *n;
  wf_shape s;

  n = fx_build(g, &c, 1, st);
  assert_non_null(n);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], -1);
  assert_int_equal(s.dims[1], 12);

  /* A fed shape vector of known length gives the rank only. */
  wf_graph_free(g);
  g = wf_graph_new(rt);
  n = fx_build(g, &c, 0, st);
  assert_non_null(n);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], -1);
  assert_int_equal(s.dims[1], -1);
  wf_graph_free(g);
  wf_status_free(st);
}

static const int64_t tile_2_3[] = {2, 3};

static void test_tile_and_pad_know_their_shape_from_consts(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  static const int32_t pads[] = {1, 2, 0, 3};
  fx_case tile = {.name = "Tile", .op = "Tile", .num_inputs = 2,
                  .inputs = {{WF_INT8, 2, {-1, 2}, NULL},
                             {WF_INT64, 1, {2}, tile_2_3}},
                  .value_inputs = 0x2};
  fx_case pad = {.name = "Pad", .op = "Pad", .num_inputs = 2,
                 .inputs = {{WF_INT8, 2, {4, -1}, NULL},
                            {WF_INT32, 2, {2, 2}, pads}},
                 .value_inputs = 0x2};
  wf_node *n;
  wf_shape s;

  n = fx_build(g, &tile, 1, st);
  assert_non_null(n);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], -1);
  assert_int_equal(s.dims[1], 6);
  wf_graph_free(g);
  g = wf_graph_new(rt);
  n = fx_build(g, &pad, 1, st);
  assert_non_null(n);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], 7);
  assert_int_equal(s.dims[1], -1);
  wf_graph_free(g);
  wf_status_free(st);
}

/* ---- errors -------------------------------------------------------------- */

static const float f12[12] = {0};
static const int32_t idx_bad[] = {0, 1, 7, 2};

static void test_gather_refuses_out_of_range_index_naming_it(void **state) {
  fx_case c = {.name = "Gather", .op = "Gather", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {4, 3}, f12},
                          {WF_INT32, 2, {2, 2}, idx_bad}}};
  static const int32_t neg[] = {-1};
  fx_case c2 = {.name = "Gather", .op = "Gather", .num_inputs = 2,
                .inputs = {{WF_FLOAT32, 2, {4, 3}, f12},
                           {WF_INT32, 1, {1}, neg}},
                .num_attrs = 1,
                .attrs = {{"axis", 'i', 1, 0, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "indices[1, 0] = 7",
                                        "[0, 4)", NULL});
  fx_expect_error(rt, &c2, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "indices[0] = -1",
                                        "[0, 3)", NULL});
}

static void test_unsorted_segment_sum_refuses_out_of_range_index_naming_it(
    void **state) {
  static const int64_t idx[] = {0, 5, 1, 2};
  static const int64_t dense[] = {5, 3}, bad_inner[] = {5, 2};
  fx_case c = {.name = "UnsortedSegmentSumToShape",
               .op = "UnsortedSegmentSumToShape",
               .num_inputs = 3,
               .inputs = {{WF_FLOAT32, 2, {4, 3}, f12},
                          {WF_INT64, 1, {4}, idx},
                          {WF_INT64, 1, {2}, dense}}};

  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "indices[1] = 5",
                                        "[0, 5)", "dense_shape", NULL});
  /* Rows of values must have the inner shape of dense_shape. */
  c.inputs[2].data = bad_inner;
  c.value_inputs = 0x4;
  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"dense_shape (5, 2)", "values (4, 3)",
                                        "dimension 1", NULL});
  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"dense_shape (5, 2)", NULL});
}

/* With dense_shape a Const the output shape is it; otherwise the inner
 * dims come from values and the first is unknown. */
static void test_unsorted_segment_sum_infers_shape_from_dense_shape(
    void **state) {
  static const int64_t idx[] = {0, 1, 1, 2}, dense[] = {7, 3};
  fx_case c = {.name = "UnsortedSegmentSumToShape",
               .op = "UnsortedSegmentSumToShape",
               .num_inputs = 3,
               .inputs = {{WF_FLOAT64, 2, {4, 3}, NULL},
                          {WF_INT64, 1, {4}, idx},
                          {WF_INT64, 1, {2}, dense}},
               .value_inputs = 0x4};

  for (int as_const = 0; as_const <= 1; as_const++) {
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    wf_node *n = fx_build(g, &c, as_const, st);
    wf_shape s;

    assert_non_null(n);
    wf_node_output_shape(n, 0, &s);
    assert_int_equal(s.rank, 2);
    assert_int_equal(s.dims[0], as_const ? 7 : -1);
    assert_int_equal(s.dims[1], 3);
    wf_graph_free(g);
    wf_status_free(st);
  }
}

static void test_backward_array_ops_refuse_mismatched_gradients(
    void **state) {
  static const int64_t shape45[] = {4, 5}, begin[] = {3, 1};
  static const int64_t mult[] = {2, 2}, perm_bad[] = {0, 0, 1};
  /* A (2, 3) block at [3, 1] does not fit (4, 5). */
  fx_case sg = {.name = "SliceGrad", .op = "SliceGrad", .num_inputs = 3,
                .inputs = {{WF_INT64, 1, {2}, shape45},
                           {WF_INT64, 1, {2}, begin},
                           {WF_FLOAT32, 2, {2, 3}, f12}},
                .value_inputs = 0x3};
  /* Tiling (4, 5) by (2, 2) gives (8, 10), not (2, 3). */
  fx_case tg = {.name = "TileGrad", .op = "TileGrad", .num_inputs = 3,
                .inputs = {{WF_INT64, 1, {2}, shape45},
                           {WF_INT64, 1, {2}, mult},
                           {WF_FLOAT32, 2, {2, 3}, f12}}};
  fx_case ip = {.name = "InvertPermutation", .op = "InvertPermutation",
                .num_inputs = 1, .inputs = {{WF_INT64, 1, {3}, perm_bad}}};

  fx_expect_error(rt, &sg, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"begin[0] = 3", "(4, 5)", NULL});
  fx_expect_error(rt, &sg, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"begin[0] = 3", NULL});
  fx_expect_error(rt, &tg, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"dy has shape (2, 3)", "(8, 10)",
                                        NULL});
  fx_expect_error(rt, &ip, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"not a permutation", NULL});
}

static void test_gather_refuses_axis_out_of_range(void **state) {
  fx_case c = {.name = "Gather", .op = "Gather", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {4, 3}, f12},
                          {WF_INT32, 1, {1}, idx_bad}},
               .num_attrs = 1,
               .attrs = {{"axis", 'i', 2, 0, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "axis 2", NULL});
}

static void test_one_hot_refuses_out_of_range_index_naming_it(void **state) {
  static const int64_t ind[] = {0, 3, 1};
  static const int32_t depth[] = {3};
  static const float on[] = {1}, off[] = {0};
  fx_case c = {.name = "OneHot", .op = "OneHot", .num_inputs = 4,
               .inputs = {{WF_INT64, 1, {3}, ind},
                          {WF_INT32, 0, {0}, depth},
                          {WF_FLOAT32, 0, {0}, on},
                          {WF_FLOAT32, 0, {0}, off}}};

  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "indices[1] = 3",
                                        "[0, 3)", NULL});
}

static const int32_t shape_5[] = {5};
static const int32_t shape_m1_m1[] = {-1, -1};

static void test_reshape_refuses_wrong_count_at_build_and_run(void **state) {
  fx_case c = {.name = "Reshape", .op = "Reshape", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_INT32, 1, {1}, shape_5}},
               .value_inputs = 0x2};
  fx_case two = {.name = "Reshape", .op = "Reshape", .num_inputs = 2,
                 .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                            {WF_INT32, 1, {2}, shape_m1_m1}},
                 .value_inputs = 0x2};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "6 elements", NULL});
  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "6 elements", NULL});
  fx_expect_error(rt, &two, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"only one dimension", NULL});
}

static void test_transpose_refuses_non_permutation(void **state) {
  static const int32_t perm[] = {0, 0};
  fx_case c = {.name = "Transpose", .op = "Transpose", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_INT32, 1, {2}, perm}},
               .value_inputs = 0x2};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"not a permutation", NULL});
  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"not a permutation", NULL});
}

static void test_concat_refuses_inputs_differing_off_axis(void **state) {
  fx_case c = {.name = "Concat", .op = "Concat", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_FLOAT32, 2, {3, 2}, f6}},
               .list_input = 1,
               .num_attrs = 1,
               .attrs = {{"axis", 'i', 0, 0, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "(3, 2)", NULL});
}

static void test_concat_kernel_refuses_shapes_unknown_while_building(
    void **state) {
  fx_case c = {.name = "Concat", .op = "Concat", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_FLOAT32, 1, {6}, f6}},
               .list_input = 1,
               .num_attrs = 1,
               .attrs = {{"axis", 'i', 0, 0, NULL, NULL, 0}},
               .unknown_shapes = 1};

  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "input 1 has shape (6)",
                                        NULL});
}

static void test_split_refuses_uneven_pieces(void **state) {
  fx_case c = {.name = "Split", .op = "Split", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6}},
               .num_attrs = 2,
               .attrs = {{"num_split", 'i', 2, 0, NULL, NULL, 0},
                         {"axis", 'i', 1, 0, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"does not split evenly", NULL});
  c.unknown_shapes = 1;
  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", "does not split evenly",
                                        NULL});
}

static void test_slice_refuses_block_past_the_end(void **state) {
  static const int64_t begin[] = {1, 1}, size[] = {1, 3};
  fx_case c = {.name = "Slice", .op = "Slice", .num_inputs = 3,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_INT64, 1, {2}, begin},
                          {WF_INT64, 1, {2}, size}},
               .value_inputs = 0x6};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"exceeds dimension 1", NULL});
  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"exceeds dimension 1", NULL});
}

/* Expects a StridedSlice of (2, 3) with this spec to fail naming part: at
 * build time with Const spec inputs, and with fed ones at run time, or at
 * build time too when only the masks and lengths are at fault (fed_build).
 */
static void strided_error(const int32_t *b, const int32_t *e,
                          const int32_t *s, int n, int64_t ellipsis,
                          int64_t shrink, int fed_build, const char *part) {
  fx_case c = {.name = "StridedSlice", .op = "StridedSlice", .num_inputs = 4,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_INT32, 1, {n}, b},
                          {WF_INT32, 1, {n}, e},
                          {WF_INT32, 1, {n}, s}},
               .value_inputs = 0xe,
               .num_attrs = 2,
               .attrs = {{"ellipsis_mask", 'i', ellipsis, 0, NULL, NULL, 0},
                         {"shrink_axis_mask", 'i', shrink, 0, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", part, NULL});
  if (fed_build)
    c.value_inputs = 0;
  fx_expect_error(rt, &c, fed_build, WF_INVALID_ARGUMENT,
                  (const char *const[]){"node 'op'", part, NULL});
}

static void test_strided_slice_refuses_bad_specs(void **state) {
  static const int32_t z2[] = {0, 0}, one2[] = {1, 1}, s0[] = {1, 0};
  static const int32_t b3[] = {5}, e3[] = {6}, s3[] = {1};
  static const int32_t z3[] = {0, 0, 0}, one3[] = {1, 1, 1};

  strided_error(z2, one2, s0, 2, 0, 0, 0, "stride of dimension 1 is 0");
  strided_error(b3, e3, s3, 1, 0, 1, 0, "index 5 of shrunk dimension 0");
  strided_error(z2, one2, one2, 2, 3, 0, 1, "more than one ellipsis");
  strided_error(z3, one3, one3, 3, 0, 0, 1, "more dimensions than");
}

static void test_pad_refuses_bad_paddings_and_constants(void **state) {
  static const int32_t neg[] = {0, 1, -1, 0};
  static const int32_t i6[] = {1, 2, 3, 4, 5, 6};
  static const int32_t ok[] = {0, 1, 1, 0};
  fx_case c = {.name = "Pad", .op = "Pad", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_INT32, 2, {2, 2}, neg}},
               .value_inputs = 0x2};
  fx_case frac = {.name = "Pad", .op = "Pad", .num_inputs = 2,
                  .inputs = {{WF_INT32, 2, {2, 3}, i6},
                             {WF_INT32, 2, {2, 2}, ok}},
                  .value_inputs = 0x2,
                  .num_attrs = 1,
                  .attrs = {{"constant_values", 'f', 0, 0.5, NULL, NULL, 0}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"paddings[1, 0] is -1", NULL});
  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"paddings[1, 0] is -1", NULL});
  fx_expect_error(rt, &frac, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"0.5 is not representable in int32",
                                        NULL});
}

static void test_squeeze_refuses_dimension_not_one(void **state) {
  static const int64_t axes[] = {1};
  fx_case c = {.name = "Squeeze", .op = "Squeeze", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6}},
               .num_attrs = 1,
               .attrs = {{"squeeze_dims", 'I', 0, 0, NULL, axes, 1}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"dimension 1 of size 3", NULL});
}

static void test_fill_refuses_negative_dims(void **state) {
  static const int32_t dims[] = {2, -1};
  fx_case c = {.name = "Fill", .op = "Fill", .num_inputs = 2,
               .inputs = {{WF_INT32, 1, {2}, dims}, {WF_FLOAT32, 0, {0}, f6}},
               .value_inputs = 0x1};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"dims[1] is -1", NULL});
  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"dims[1] is -1", NULL});
}

static void test_tile_refuses_multiples_of_wrong_length(void **state) {
  static const int32_t mult[] = {2};
  fx_case c = {.name = "Tile", .op = "Tile", .num_inputs = 2,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, f6},
                          {WF_INT32, 1, {1}, mult}}};

  fx_expect_error(rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"'multiples' has 1 entries", NULL});
}

static void test_shape_refuses_dimension_beyond_int32(void **state) {
  /* No elements, so nothing is allocated, but one dimension is 2^32. */
  fx_case c = {.name = "Shape", .op = "Shape", .num_inputs = 1,
               .inputs = {{WF_FLOAT32, 2, {INT64_C(4294967296), 0}, NULL}}};

  fx_expect_error(rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"4294967296", "int64", NULL});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity_matches_numpy),
      cmocka_unit_test(test_stop_gradient_matches_numpy),
      cmocka_unit_test(test_zeros_like_matches_numpy),
      cmocka_unit_test(test_ones_like_matches_numpy),
      cmocka_unit_test(test_shape_matches_numpy),
      cmocka_unit_test(test_size_matches_numpy),
      cmocka_unit_test(test_fill_matches_numpy),
      cmocka_unit_test(test_reshape_matches_numpy),
      cmocka_unit_test(test_squeeze_matches_numpy),
      cmocka_unit_test(test_expand_dims_matches_numpy),
      cmocka_unit_test(test_transpose_matches_numpy),
      cmocka_unit_test(test_concat_matches_numpy),
      cmocka_unit_test(test_split_matches_numpy),
      cmocka_unit_test(test_tile_matches_numpy),
      cmocka_unit_test(test_pad_matches_numpy),
      cmocka_unit_test(test_slice_matches_numpy),
      cmocka_unit_test(test_strided_slice_matches_numpy_indexing),
      cmocka_unit_test(test_gather_matches_numpy),
      cmocka_unit_test(test_one_hot_matches_numpy),
      cmocka_unit_test(test_unsorted_segment_sum_matches_numpy_add_at),
      cmocka_unit_test(test_invert_permutation_matches_numpy_argsort),
      cmocka_unit_test(test_concat_offset_matches_numpy_cumsum),
      cmocka_unit_test(test_slice_grad_matches_numpy),
      cmocka_unit_test(test_strided_slice_grad_matches_numpy_indexing),
      cmocka_unit_test(test_pad_grad_matches_numpy),
      cmocka_unit_test(test_tile_grad_matches_numpy),
      cmocka_unit_test(test_gather_grad_matches_numpy_add_at),
      cmocka_unit_test(test_const_outputs_its_value_tensor_without_copy),
      cmocka_unit_test(test_const_refuses_dtype_other_than_its_value),
      cmocka_unit_test(test_ones_like_writes_one_in_half_types),
      cmocka_unit_test(test_placeholder_is_fed_and_has_no_kernel),
      cmocka_unit_test(test_identity_forwards_the_input_tensor),
      cmocka_unit_test(test_reshape_ops_output_views_of_their_input),
      cmocka_unit_test(test_noop_runs_with_nothing),
      cmocka_unit_test(test_array_ops_are_registered_with_docs_and_kernels),
      cmocka_unit_test(test_reshape_infers_minus_one_only_when_count_is_known),
      cmocka_unit_test(test_tile_and_pad_know_their_shape_from_consts),
      cmocka_unit_test(test_gather_refuses_out_of_range_index_naming_it),
      cmocka_unit_test(
          test_unsorted_segment_sum_refuses_out_of_range_index_naming_it),
      cmocka_unit_test(test_unsorted_segment_sum_infers_shape_from_dense_shape),
      cmocka_unit_test(test_backward_array_ops_refuse_mismatched_gradients),
      cmocka_unit_test(test_gather_refuses_axis_out_of_range),
      cmocka_unit_test(test_one_hot_refuses_out_of_range_index_naming_it),
      cmocka_unit_test(test_reshape_refuses_wrong_count_at_build_and_run),
      cmocka_unit_test(test_transpose_refuses_non_permutation),
      cmocka_unit_test(test_concat_refuses_inputs_differing_off_axis),
      cmocka_unit_test(
          test_concat_kernel_refuses_shapes_unknown_while_building),
      cmocka_unit_test(test_split_refuses_uneven_pieces),
      cmocka_unit_test(test_slice_refuses_block_past_the_end),
      cmocka_unit_test(test_strided_slice_refuses_bad_specs),
      cmocka_unit_test(test_pad_refuses_bad_paddings_and_constants),
      cmocka_unit_test(test_squeeze_refuses_dimension_not_one),
      cmocka_unit_test(test_fill_refuses_negative_dims),
      cmocka_unit_test(test_tile_refuses_multiples_of_wrong_length),
      cmocka_unit_test(test_shape_refuses_dimension_beyond_int32),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
