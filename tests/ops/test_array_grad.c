/* tests/ops/test_array_grad.c — the gradients of the ops_array plugin
 * against central finite differences in float64 (array_nn_gradcheck.h:
 * relative 1e-6 with an absolute floor of 1e-7), with shapes known while
 * building and fed with unknown shapes (the Shape/ConcatOffset paths);
 * Gather's sparse gradient as (indices, values, dense_shape) and densified
 * by the core; the backward ops' own gradients; and which ops are
 * registered as not differentiable. Loads ops_array, ops_math (Sum, AddN,
 * Cast) and the CPU device, which sessions need. */
#include <config.h>

#include "array_nn_gradcheck.h"

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {"plugins/ops/array/.libs",
                                     "plugins/ops/math/.libs",
                                     "plugins/devices/cpu/.libs"};
  rt = fx_runtime(dirs, 3);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define ATTR_I(nm, v) {nm, 'i', (v), 0, NULL, NULL, 0}
#define ATTR_F(nm, v) {nm, 'f', 0, (v), NULL, NULL, 0}
#define ATTR_INTS(nm, arr, cnt) {nm, 'I', 0, 0, NULL, (arr), (cnt)}

/* A random float64 argument checked against finite differences. */
static gc_arg x_arg(int rank, const int64_t *dims, int kind) {
  return (gc_arg){gc_random(rank, dims, -1, 1), kind, GC_CHECK};
}

/* An int64 vector argument (a Const unless kind says otherwise). */
static gc_arg vec_arg(int n, const int64_t *vals, int kind) {
  return (gc_arg){gc_tensor_i64(WF_INT64, 1, DIMS(n), vals), kind, GC_SKIP};
}

static void release_args(gc_arg *args, int n) {
  for (int i = 0; i < n; i++)
    wf_tensor_release(args[i].value);
}

/* ---- ops that move elements ---------------------------------------------- */

static void test_identity_gradient_passes_dy_through(void **state) {
  gc_op op = {.op = "Identity"};
  gc_arg a[] = {x_arg(2, DIMS(3, 4), GC_FEED)};

  gc_seed(1);
  gc_check_op(rt, "Identity", &op, a, 1, NULL);
  release_args(a, 1);
}

static void test_reshape_gradient_matches_finite_differences(void **state) {
  gc_op op = {.op = "Reshape"};
  static const int64_t shape[] = {4, -1};

  for (int kind = GC_FEED; kind <= GC_FEED_UNKNOWN; kind++) {
    gc_arg a[] = {x_arg(3, DIMS(2, 3, 4), kind), vec_arg(2, shape, GC_CONST)};
    gc_seed(2);
    gc_check_op(rt, kind == GC_FEED ? "Reshape" : "Reshape (shape unknown)",
                &op, a, 2, NULL);
    release_args(a, 2);
  }
}

static void test_squeeze_and_expand_dims_gradients_restore_shape(void **state) {
  static const int64_t axes[] = {1};
  gc_op sq = {.op = "Squeeze",
              .num_attrs = 1,
              .attrs = {ATTR_INTS("squeeze_dims", axes, 1)}};
  gc_op ex = {.op = "ExpandDims", .num_attrs = 1, .attrs = {ATTR_I("axis", -1)}};

  for (int kind = GC_FEED; kind <= GC_FEED_UNKNOWN; kind++) {
    gc_arg a[] = {x_arg(3, DIMS(2, 1, 3), kind)};
    gc_arg b[] = {x_arg(2, DIMS(2, 3), kind)};
    gc_seed(3);
    gc_check_op(rt, "Squeeze", &sq, a, 1, NULL);
    gc_check_op(rt, "ExpandDims", &ex, b, 1, NULL);
    release_args(a, 1);
    release_args(b, 1);
  }
}

static void test_transpose_gradient_uses_the_inverse_perm(void **state) {
  static const int64_t perm[] = {2, 0, 1};
  gc_op op = {.op = "Transpose"};

  /* perm as a Const and fed: InvertPermutation runs either way. */
  for (int kind = GC_CONST; kind <= GC_FEED; kind++) {
    gc_arg a[] = {x_arg(3, DIMS(2, 3, 4), GC_FEED), vec_arg(3, perm, kind)};
    gc_seed(4);
    gc_check_op(rt, "Transpose", &op, a, 2, NULL);
    release_args(a, 2);
  }
}

static void test_concat_gradient_cuts_dy_back_into_inputs(void **state) {
  gc_op op = {.op = "Concat",
              .num_attrs = 1,
              .attrs = {ATTR_I("axis", -1)},
              .list_input = 1};

  /* Known shapes: Const offsets; unknown: ConcatOffset at run time. */
  for (int kind = GC_FEED; kind <= GC_FEED_UNKNOWN; kind++) {
    gc_arg a[] = {x_arg(2, DIMS(2, 1), kind), x_arg(2, DIMS(2, 3), kind),
                  x_arg(2, DIMS(2, 2), kind)};
    gc_seed(5);
    gc_check_op(rt, kind == GC_FEED ? "Concat" : "Concat (shapes unknown)",
                &op, a, 3, NULL);
    release_args(a, 3);
  }
}

static void test_concat_gradient_along_first_axis_of_rank_3(void **state) {
  gc_op op = {.op = "Concat",
              .num_attrs = 1,
              .attrs = {ATTR_I("axis", 0)},
              .list_input = 1};
  gc_arg a[] = {x_arg(3, DIMS(1, 2, 2), GC_FEED_UNKNOWN),
                x_arg(3, DIMS(3, 2, 2), GC_FEED)};

  gc_seed(6);
  gc_check_op(rt, "Concat axis 0", &op, a, 2, NULL);
  release_args(a, 2);
}

static void test_split_gradient_joins_output_gradients(void **state) {
  gc_op all = {.op = "Split",
               .num_attrs = 2,
               .attrs = {ATTR_I("num_split", 3), ATTR_I("axis", 1)},
               .outputs = 0x7};
  gc_op middle = all;
  gc_arg a[] = {x_arg(2, DIMS(2, 6), GC_FEED)};
  gc_result r;

  gc_seed(7);
  gc_check_op(rt, "Split", &all, a, 1, NULL);
  /* Only output 1 is used: the others' parts of the gradient are zeros. */
  middle.outputs = 0x2;
  gc_check_op(rt, "Split (one output used)", &middle, a, 1, &r);
  for (int64_t i = 0; i < 12; i++) {
    int col = (int)(i % 6);
    if (col < 2 || col >= 4)
      assert_true(((const double *)wf_tensor_data(r.dense[0]))[i] == 0.0);
  }
  gc_result_free(&r);
  release_args(a, 1);
}

static void test_slice_gradient_places_dy_at_begin(void **state) {
  static const int64_t begin[] = {1, 2}, size[] = {2, -1};
  gc_op op = {.op = "Slice"};

  for (int kind = GC_FEED; kind <= GC_FEED_UNKNOWN; kind++) {
    gc_arg a[] = {x_arg(2, DIMS(4, 5), kind), vec_arg(2, begin, GC_CONST),
                  vec_arg(2, size, GC_CONST)};
    gc_seed(8);
    gc_check_op(rt, "Slice", &op, a, 3, NULL);
    release_args(a, 3);
  }
}

/* One StridedSlice spec: begin, end, strides (n entries) and masks. */
static void strided_case(const char *name, int n, const int64_t *b,
                         const int64_t *e, const int64_t *s, int64_t bm,
                         int64_t em, int64_t ell, int64_t na, int64_t sh,
                         int kind) {
  gc_op op = {.op = "StridedSlice",
              .num_attrs = 5,
              .attrs = {ATTR_I("begin_mask", bm), ATTR_I("end_mask", em),
                        ATTR_I("ellipsis_mask", ell),
                        ATTR_I("new_axis_mask", na),
                        ATTR_I("shrink_axis_mask", sh)}};
  gc_arg a[] = {x_arg(3, DIMS(4, 5, 3), kind), vec_arg(n, b, GC_CONST),
                vec_arg(n, e, GC_CONST), vec_arg(n, s, GC_CONST)};

  gc_check_op(rt, name, &op, a, 4, NULL);
  release_args(a, 4);
}

static void test_strided_slice_gradient_over_masks_and_strides(void **state) {
  gc_seed(9);
  /* x[1:4:2, ::-2, 1] */
  strided_case("strides and shrink", 3, DIMS(1, 0, 1), DIMS(4, 0, 2),
               DIMS(2, -2, 1), 2, 2, 0, 0, 4, GC_FEED);
  /* x[..., newaxis, -2:] */
  strided_case("ellipsis and new axis", 3, DIMS(0, 0, -2), DIMS(0, 0, 0),
               DIMS(1, 1, 1), 0, 4, 1, 2, 0, GC_FEED);
  /* x[-1:0:-1, 2] with x's shape unknown while building */
  strided_case("negative stride, shape unknown", 2, DIMS(-1, 2), DIMS(0, 3),
               DIMS(-1, 1), 0, 0, 0, 0, 2, GC_FEED_UNKNOWN);
}

static void test_pad_gradient_is_the_unpadded_block(void **state) {
  static const int64_t pads[] = {1, 2, 0, 1};
  gc_op op = {.op = "Pad",
              .num_attrs = 1,
              .attrs = {ATTR_F("constant_values", 0.5)}};
  gc_arg a[] = {x_arg(2, DIMS(2, 3), GC_FEED),
                {gc_tensor_i64(WF_INT32, 2, DIMS(2, 2), pads), GC_CONST,
                 GC_SKIP}};

  gc_seed(10);
  gc_check_op(rt, "Pad", &op, a, 2, NULL);
  release_args(a, 2);
}

static void test_tile_gradient_sums_the_copies(void **state) {
  static const int64_t mult[] = {2, 1, 3};
  gc_op op = {.op = "Tile"};

  for (int kind = GC_FEED; kind <= GC_FEED_UNKNOWN; kind++) {
    gc_arg a[] = {x_arg(3, DIMS(2, 3, 2), kind), vec_arg(3, mult, GC_CONST)};
    gc_seed(11);
    gc_check_op(rt, "Tile", &op, a, 2, NULL);
    release_args(a, 2);
  }
}

static void test_fill_gradient_sums_dy_into_the_value(void **state) {
  static const int64_t dims[] = {2, 3};
  gc_op op = {.op = "Fill"};
  gc_arg a[] = {vec_arg(2, dims, GC_CONST), x_arg(0, NULL, GC_FEED)};

  gc_seed(12);
  gc_check_op(rt, "Fill", &op, a, 2, NULL);
  release_args(a, 2);
}

/* ---- Gather and the sparse gradient ---------------------------------------- */

static void test_gather_gradient_is_sparse_along_axis_0(void **state) {
  static const int64_t idx[] = {0, 2, 2, 4};
  gc_op op = {.op = "Gather"};
  gc_arg a[] = {x_arg(2, DIMS(5, 3), GC_FEED),
                {gc_tensor_i64(WF_INT32, 2, DIMS(2, 2), idx), GC_FEED,
                 GC_NONE}};
  gc_result r;
  const int64_t *ds;

  gc_seed(13);
  gc_check_op(rt, "Gather axis 0", &op, a, 2, &r);
  /* (indices, values, dense_shape) = ((4,) flattened, (4, 3), [5, 3]). */
  assert_non_null(r.grads[0].indices.node);
  assert_null(r.grads[0].dense.node);
  assert_int_equal(wf_tensor_rank(r.sparse[0][0]), 1);
  assert_int_equal(wf_tensor_dim(r.sparse[0][0], 0), 4);
  for (int i = 0; i < 4; i++)
    assert_int_equal(gc_int_at(r.sparse[0][0], i), idx[i]);
  assert_int_equal(wf_tensor_rank(r.sparse[0][1]), 2);
  assert_int_equal(wf_tensor_dim(r.sparse[0][1], 0), 4);
  assert_int_equal(wf_tensor_dim(r.sparse[0][1], 1), 3);
  ds = wf_tensor_data(r.sparse[0][2]);
  assert_int_equal(ds[0], 5);
  assert_int_equal(ds[1], 3);
  /* Row 2 was picked twice, so its gradient adds up; rows 1, 3 get 0. */
  for (int c = 0; c < 3; c++) {
    const double *d = wf_tensor_data(r.dense[0]);
    assert_true(d[1 * 3 + c] == 0.0 && d[3 * 3 + c] == 0.0);
  }
  gc_result_free(&r);
  release_args(a, 2);
}

static void test_gather_sparse_gradient_with_params_shape_unknown(
    void **state) {
  static const int64_t idx[] = {3, 1, 3, 0, 2, 3};
  gc_op op = {.op = "Gather"};
  gc_arg a[] = {x_arg(3, DIMS(4, 2, 2), GC_FEED_UNKNOWN),
                {gc_tensor_i64(WF_INT64, 2, DIMS(3, 2), idx), GC_FEED_UNKNOWN,
                 GC_SKIP}};
  gc_result r;

  gc_seed(14);
  gc_check_op(rt, "Gather (shapes unknown)", &op, a, 2, &r);
  assert_non_null(r.grads[0].indices.node);
  assert_int_equal(wf_tensor_dim(r.sparse[0][1], 0), 6);
  gc_result_free(&r);
  release_args(a, 2);
}

static void test_gather_gradient_is_dense_along_other_axes(void **state) {
  static const int64_t idx[] = {1, 0, 1};
  gc_op op = {.op = "Gather", .num_attrs = 1, .attrs = {ATTR_I("axis", -1)}};
  gc_arg a[] = {x_arg(3, DIMS(2, 3, 2), GC_FEED),
                {gc_tensor_i64(WF_INT32, 1, DIMS(3), idx), GC_CONST, GC_SKIP}};
  gc_result r;

  gc_seed(15);
  gc_check_op(rt, "Gather axis -1", &op, a, 2, &r);
  assert_non_null(r.grads[0].dense.node);
  assert_null(r.grads[0].indices.node);
  gc_result_free(&r);
  release_args(a, 2);
}

/* ys = Gather(params, i0) and either Gather(params, i1) (both sparse: the
 * sum stays sparse) or Identity(params) (dense: the core densifies with
 * UnsortedSegmentSumToShape and adds). */
typedef struct two_uses {
  int second_dense;
} two_uses;

static int build_two_uses(wf_graph *g, const wf_output *in, void *arg,
                          wf_output *ys) {
  const two_uses *t = arg;
  wf_node_desc *d = wf_node_desc_new(g, "Gather", "g0");

  wf_node_desc_add_input(d, in[0]);
  wf_node_desc_add_input(d, in[1]);
  ys[0] = (wf_output){gc_node(d, "Gather"), 0};
  if (t->second_dense) {
    d = wf_node_desc_new(g, "Identity", "id");
    wf_node_desc_add_input(d, in[0]);
  } else {
    d = wf_node_desc_new(g, "Gather", "g1");
    wf_node_desc_add_input(d, in[0]);
    wf_node_desc_add_input(d, in[2]);
  }
  ys[1] = (wf_output){gc_node(d, "second use"), 0};
  return 2;
}

static void test_sparse_gradients_stay_sparse_or_are_densified(void **state) {
  static const int64_t i0[] = {1, 3, 1}, i1[] = {0, 1};
  gc_arg a[] = {x_arg(2, DIMS(4, 3), GC_FEED),
                {gc_tensor_i64(WF_INT64, 1, DIMS(3), i0), GC_CONST, GC_SKIP},
                {gc_tensor_i64(WF_INT64, 1, DIMS(2), i1), GC_CONST, GC_SKIP}};
  two_uses sparse = {0}, dense = {1};
  gc_result r;

  gc_seed(16);
  gc_check(rt, "two Gathers", a, 3, build_two_uses, &sparse, &r);
  assert_non_null(r.grads[0].indices.node);
  assert_int_equal(wf_tensor_dim(r.sparse[0][0], 0), 5);
  gc_result_free(&r);
  gc_check(rt, "Gather and Identity", a, 3, build_two_uses, &dense, &r);
  assert_non_null(r.grads[0].dense.node);
  gc_result_free(&r);
  release_args(a, 3);
}

static void test_unsorted_segment_sum_gradient_gathers_dy(void **state) {
  static const int64_t idx[] = {1, 0, 1, 3}, shape[] = {5, 3};
  gc_op op = {.op = "UnsortedSegmentSumToShape"};
  gc_arg a[] = {x_arg(2, DIMS(4, 3), GC_FEED),
                {gc_tensor_i64(WF_INT32, 1, DIMS(4), idx), GC_CONST, GC_SKIP},
                vec_arg(2, shape, GC_CONST)};

  gc_seed(17);
  gc_check_op(rt, "UnsortedSegmentSumToShape", &op, a, 3, NULL);
  release_args(a, 3);
}

/* ---- the backward ops' own gradients --------------------------------------- */

static void test_backward_ops_have_their_forward_op_as_gradient(void **state) {
  static const int64_t shape45[] = {4, 5}, begin[] = {1, 2};
  static const int64_t pads[] = {1, 0, 2, 1}, mult[] = {2, 3};
  static const int64_t shape232[] = {2, 3, 2}, idx[] = {2, 0, 2, 1};
  gc_op slice = {.op = "SliceGrad"}, pad = {.op = "PadGrad"},
        tile = {.op = "TileGrad"},
        gather = {.op = "GatherGrad", .num_attrs = 1,
                  .attrs = {ATTR_I("axis", 1)}},
        strided = {.op = "StridedSliceGrad", .num_attrs = 1,
                   .attrs = {ATTR_I("shrink_axis_mask", 1)}};
  gc_arg s[] = {vec_arg(2, shape45, GC_CONST), vec_arg(2, begin, GC_CONST),
                x_arg(2, DIMS(2, 3), GC_FEED)};
  gc_arg p[] = {x_arg(2, DIMS(5, 4), GC_FEED),
                {gc_tensor_i64(WF_INT64, 2, DIMS(2, 2), pads), GC_CONST,
                 GC_SKIP}};
  gc_arg t[] = {vec_arg(2, DIMS(2, 2), GC_CONST), vec_arg(2, mult, GC_CONST),
                x_arg(2, DIMS(4, 6), GC_FEED)};
  gc_arg g[] = {vec_arg(3, shape232, GC_CONST),
                {gc_tensor_i64(WF_INT32, 1, DIMS(4), idx), GC_CONST, GC_SKIP},
                x_arg(3, DIMS(2, 4, 2), GC_FEED)};
  /* StridedSliceGrad of x[1, 1:4:2] on (4, 5): dy is (2,). */
  gc_arg ss[] = {vec_arg(2, shape45, GC_CONST), vec_arg(2, DIMS(1, 1), GC_CONST),
                 vec_arg(2, DIMS(2, 4), GC_CONST),
                 vec_arg(2, DIMS(1, 2), GC_CONST), x_arg(1, DIMS(2), GC_FEED)};

  gc_seed(18);
  gc_check_op(rt, "SliceGrad", &slice, s, 3, NULL);
  gc_check_op(rt, "PadGrad", &pad, p, 2, NULL);
  gc_check_op(rt, "TileGrad", &tile, t, 3, NULL);
  gc_check_op(rt, "GatherGrad", &gather, g, 3, NULL);
  gc_check_op(rt, "StridedSliceGrad", &strided, ss, 5, NULL);
  release_args(s, 3);
  release_args(p, 2);
  release_args(t, 3);
  release_args(g, 3);
  release_args(ss, 5);
}

/* ---- what has no gradient --------------------------------------------------- */

static void test_index_and_shape_ops_are_not_differentiable(void **state) {
  static const char *const none[] = {"Shape",      "Size",
                                     "OneHot",     "ZerosLike",
                                     "OnesLike",   "StopGradient",
                                     "ConcatOffset", "InvertPermutation"};
  static const char *const some[] = {
      "Identity", "Reshape", "Squeeze",     "ExpandDims",   "Transpose",
      "Concat",   "Split",   "Slice",       "StridedSlice", "Pad",
      "Tile",     "Gather",  "Fill",        "UnsortedSegmentSumToShape"};

  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    if (wf_runtime_op_gradient(rt, none[i]) != 0)
      fail_msg("%s should be registered as not differentiable", none[i]);
  for (size_t i = 0; i < sizeof some / sizeof some[0]; i++)
    if (wf_runtime_op_gradient(rt, some[i]) != 1)
      fail_msg("%s should have a gradient function", some[i]);
}

/* A float y that depends on x only through Shape, Cast(Shape(x)): its
 * gradient with respect to x is none (Shape lets nothing through), not an
 * error. */
static void test_gradient_through_shape_is_none(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_tensor *x = gc_random(2, DIMS(2, 3), -1, 1);
  wf_output in = gc_placeholder(g, x, 1), y;
  wf_node_desc *d = wf_node_desc_new(g, "Shape", "shape");
  wf_node_desc *d2;
  wf_gradient dx;
  wf_output ones;
  wf_tensor *one = gc_random(1, DIMS(2), 1, 1);

  wf_node_desc_add_input(d, in);
  wf_node_desc_set_attr_dtype(d, "out_type", WF_INT64);
  y = (wf_output){gc_node(d, "Shape"), 0};
  d2 = wf_node_desc_new(g, "Cast", "cast");
  wf_node_desc_add_input(d2, y);
  wf_node_desc_set_attr_dtype(d2, "DstT", WF_FLOAT64);
  y = (wf_output){gc_node(d2, "Cast"), 0};
  ones = gc_const(g, one);
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, &ones, &in, 1, &dx, st),
                   0);
  assert_null(dx.dense.node);
  assert_null(dx.indices.node);
  wf_tensor_release(one);
  wf_tensor_release(x);
  wf_graph_free(g);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity_gradient_passes_dy_through),
      cmocka_unit_test(test_reshape_gradient_matches_finite_differences),
      cmocka_unit_test(test_squeeze_and_expand_dims_gradients_restore_shape),
      cmocka_unit_test(test_transpose_gradient_uses_the_inverse_perm),
      cmocka_unit_test(test_concat_gradient_cuts_dy_back_into_inputs),
      cmocka_unit_test(test_concat_gradient_along_first_axis_of_rank_3),
      cmocka_unit_test(test_split_gradient_joins_output_gradients),
      cmocka_unit_test(test_slice_gradient_places_dy_at_begin),
      cmocka_unit_test(test_strided_slice_gradient_over_masks_and_strides),
      cmocka_unit_test(test_pad_gradient_is_the_unpadded_block),
      cmocka_unit_test(test_tile_gradient_sums_the_copies),
      cmocka_unit_test(test_fill_gradient_sums_dy_into_the_value),
      cmocka_unit_test(test_gather_gradient_is_sparse_along_axis_0),
      cmocka_unit_test(test_gather_sparse_gradient_with_params_shape_unknown),
      cmocka_unit_test(test_gather_gradient_is_dense_along_other_axes),
      cmocka_unit_test(test_sparse_gradients_stay_sparse_or_are_densified),
      cmocka_unit_test(test_unsorted_segment_sum_gradient_gathers_dy),
      cmocka_unit_test(test_backward_ops_have_their_forward_op_as_gradient),
      cmocka_unit_test(test_index_and_shape_ops_are_not_differentiable),
      cmocka_unit_test(test_gradient_through_shape_is_none),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
