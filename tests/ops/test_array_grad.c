/* tests/ops/test_array_grad.c — the gradients of the ops_array plugin
 * against central finite differences through the shared checker
 * (gradcheck.h: float64 at 2 random points each, step 1e-6 relative,
 * tolerance 1e-6 relative + 1e-7 absolute), with shapes known while
 * building and with every dim unknown (the Shape and ConcatOffset paths);
 * Gather's sparse gradient as (indices, values, dense_shape) against
 * reference values, kept sparse when every contribution is and densified
 * by the core when it meets a dense one; the backward ops' own gradients;
 * and which ops are registered as not differentiable. Loads ops_array,
 * ops_math (Mul, Sum and their gradients for the checker's loss; Sum for
 * Fill's gradient) and the CPU device. */
#include <config.h>

#include "array_nn_grad.h"

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {"plugins/ops/array/.libs",
                                     "plugins/ops/math/.libs",
                                     "plugins/devices/cpu/.libs"};
  rt = ag_runtime(dirs, 3);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

/* Checks c on inputs of the given spec, with known dims and, when
 * also_unknown, again with every dim unknown while building. */
static void check_both(gc_spec s, const ag_case *c, int also_unknown) {
  char name[160];

  ag_check(rt, s, c);
  if (!also_unknown)
    return;
  snprintf(name, sizeof name, "%s (dims unknown)", s.name);
  s.name = name;
  s.unknown_dims = 1;
  ag_check(rt, s, c);
}

/* ---- ops that move elements ---------------------------------------------- */

static void test_identity_gradient_passes_dy_through(void **state) {
  ag_case c = {.op = "Identity", .order = "x"};

  check_both((gc_spec){.name = "Identity",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {3, 4}}}},
             &c, 1);
}

static void test_reshape_gradient_restores_the_input_shape(void **state) {
  ag_case c = {.op = "Reshape", .order = "xc", .consts = {AG_VEC(4, -1)}};

  check_both((gc_spec){.name = "Reshape",
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {2, 3, 4}}}},
             &c, 1);
}

static void test_squeeze_and_expand_dims_gradients_restore_shape(void **state) {
  static const int64_t axis1[] = {1};
  ag_case sq = {.op = "Squeeze",
                .order = "x",
                .attrs = {{"squeeze_dims", GC_INTS(axis1, 1)}}};
  ag_case ex = {
      .op = "ExpandDims", .order = "x", .attrs = {{"axis", GC_INT(-1)}}};

  check_both((gc_spec){.name = "Squeeze",
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {2, 1, 3}}}},
             &sq, 1);
  check_both((gc_spec){.name = "ExpandDims",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {2, 3}}}},
             &ex, 1);
}

static void test_transpose_gradient_uses_the_inverse_perm(void **state) {
  ag_case c = {.op = "Transpose",
               .order = "xc",
               .consts = {{WF_INT32, 1, {3}, (const int32_t[]){2, 0, 1}}}};

  check_both((gc_spec){.name = "Transpose",
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {2, 3, 4}}}},
             &c, 1);
}

static void test_concat_gradient_cuts_dy_back_into_inputs(void **state) {
  ag_case c = {.op = "Concat",
               .order = "xxx",
               .list_input = 1,
               .attrs = {{"axis", GC_INT(-1)}}};
  ag_case c0 = {.op = "Concat",
                .order = "xx",
                .list_input = 1,
                .attrs = {{"axis", GC_INT(0)}}};

  /* Known shapes: Const offsets; unknown: ConcatOffset at run time. */
  check_both((gc_spec){.name = "Concat axis -1",
                       .num_inputs = 3,
                       .in = {{.rank = 2, .dims = {2, 1}},
                              {.rank = 2, .dims = {2, 3}},
                              {.rank = 2, .dims = {2, 2}}}},
             &c, 1);
  check_both((gc_spec){.name = "Concat axis 0",
                       .num_inputs = 2,
                       .in = {{.rank = 3, .dims = {1, 2, 2}},
                              {.rank = 3, .dims = {3, 2, 2}}}},
             &c0, 1);
}

static void test_split_gradient_joins_output_gradients(void **state) {
  ag_case all = {.op = "Split",
                 .order = "x",
                 .outputs = 0x7,
                 .attrs = {{"num_split", GC_INT(3)}, {"axis", GC_INT(1)}}};
  ag_case middle = all;
  gc_spec s = {
      .name = "Split", .num_inputs = 1, .in = {{.rank = 2, .dims = {2, 6}}}};

  check_both(s, &all, 1);
  /* Only output 1 differentiated: the other parts get zeros (ZerosLike). */
  middle.outputs = 0x2;
  s.name = "Split (one output used)";
  check_both(s, &middle, 0);
}

static void test_slice_gradient_places_dy_at_begin(void **state) {
  ag_case c = {
      .op = "Slice", .order = "xcc", .consts = {AG_VEC(1, 2), AG_VEC(2, -1)}};

  check_both((gc_spec){.name = "Slice",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {4, 5}}}},
             &c, 1);
}

/* One StridedSlice spec on a (4, 5, 3) input. */
static void strided_case(const char *name, int n, const int64_t *b,
                         const int64_t *e, const int64_t *s, int64_t bm,
                         int64_t em, int64_t ell, int64_t na, int64_t sh) {
  ag_case c = {.op = "StridedSlice",
               .order = "xccc",
               .consts = {{WF_INT64, 1, {n}, b},
                          {WF_INT64, 1, {n}, e},
                          {WF_INT64, 1, {n}, s}},
               .attrs = {{"begin_mask", GC_INT(bm)},
                         {"end_mask", GC_INT(em)},
                         {"ellipsis_mask", GC_INT(ell)},
                         {"new_axis_mask", GC_INT(na)},
                         {"shrink_axis_mask", GC_INT(sh)}}};

  check_both((gc_spec){.name = name,
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {4, 5, 3}}}},
             &c, 1);
}

static void test_strided_slice_gradient_over_masks_and_strides(void **state) {
  /* x[1:4:2, ::-2, 1] */
  strided_case("StridedSlice strides and shrink", 3, AG_I64(1, 0, 1),
               AG_I64(4, 0, 2), AG_I64(2, -2, 1), 2, 2, 0, 0, 4);
  /* x[..., newaxis, -2:] */
  strided_case("StridedSlice ellipsis and new axis", 3, AG_I64(0, 0, -2),
               AG_I64(0, 0, 0), AG_I64(1, 1, 1), 0, 4, 1, 2, 0);
  /* x[-1:0:-1, 2] */
  strided_case("StridedSlice negative stride", 2, AG_I64(-1, 2), AG_I64(0, 3),
               AG_I64(-1, 1), 0, 0, 0, 0, 2);
}

static void test_pad_gradient_is_the_unpadded_block(void **state) {
  ag_case c = {.op = "Pad",
               .order = "xc",
               .consts = {{WF_INT32, 2, {2, 2}, (const int32_t[]){1, 2, 0, 1}}},
               .attrs = {{"constant_values", GC_FLOAT(0.5)}}};

  check_both((gc_spec){.name = "Pad",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {2, 3}}}},
             &c, 1);
}

static void test_tile_gradient_sums_the_copies(void **state) {
  ag_case c = {.op = "Tile", .order = "xc", .consts = {AG_VEC(2, 1, 3)}};

  check_both((gc_spec){.name = "Tile",
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {2, 3, 2}}}},
             &c, 1);
}

static void test_fill_gradient_sums_dy_into_the_value(void **state) {
  ag_case c = {.op = "Fill", .order = "cx", .consts = {AG_VEC(2, 3)}};

  check_both((gc_spec){.name = "Fill", .num_inputs = 1, .in = {{.rank = 0}}},
             &c, 0);
}

/* ---- Gather and sparse gradients ----------------------------------------- */

static void test_gather_gradient_matches_finite_differences(void **state) {
  /* Axis 0: sparse (the checker adds its rows up), index 2 twice. */
  ag_case a0 = {
      .op = "Gather",
      .order = "xc",
      .consts = {{WF_INT32, 2, {2, 2}, (const int32_t[]){0, 2, 2, 4}}}};
  ag_case a0r3 = {.op = "Gather",
                  .order = "xc",
                  .consts = {{WF_INT64, 1, {5}, AG_I64(3, 1, 3, 0, 3)}}};
  /* Axis -1 of a rank-3 params: dense, through GatherGrad. */
  ag_case a2 = {.op = "Gather",
                .order = "xc",
                .consts = {{WF_INT64, 1, {3}, AG_I64(1, 0, 1)}},
                .attrs = {{"axis", GC_INT(-1)}}};

  check_both((gc_spec){.name = "Gather axis 0",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {5, 3}}}},
             &a0, 1);
  check_both((gc_spec){.name = "Gather axis 0, rank 3",
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {4, 2, 2}}}},
             &a0r3, 1);
  check_both((gc_spec){.name = "Gather axis -1",
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {2, 3, 2}}}},
             &a2, 1);
}

/* Adds y_i = Gather(params, indices_i) for each index list and returns the
 * gradient of sum_i sum(y_i * w_i), w_i Consts of y_i's shape filled with
 * 1 + (element index) / 8 + i; when dense_too, params also feeds an
 * Identity whose output is weighted by 1. */
typedef struct gather_uses {
  int n;
  int32_t idx[2][4];
  int64_t len[2];
  int dense_too;
  int int64_at; /* 1 + the Gather whose indices are int64 (0: none) */
} gather_uses;

static void sparse_gradient_of(wf_graph *g, wf_output params,
                               const gather_uses *u, wf_gradient *dx) {
  wf_status *st = wf_status_new();
  wf_output ys[3], ws[3];
  int ny = 0;

  for (int i = 0; i < u->n; i++) {
    wf_output ind;
    wf_node_desc *d;
    double w[12];

    if (u->int64_at == i + 1) {
      int64_t wide[4];
      for (int k = 0; k < u->len[i]; k++)
        wide[k] = u->idx[i][k];
      assert_int_equal(gc_const(g, WF_INT64, &u->len[i], 1, wide, &ind, st),
                       0);
    } else {
      assert_int_equal(
          gc_const(g, WF_INT32, &u->len[i], 1, u->idx[i], &ind, st), 0);
    }
    d = wf_node_desc_new(g, "Gather", NULL);
    wf_node_desc_add_input(d, params);
    wf_node_desc_add_input(d, ind);
    ys[ny] = (wf_output){ag_node(d, "Gather"), 0};
    for (int e = 0; e < u->len[i] * 3; e++)
      w[e] = 1 + e / 8.0 + i;
    assert_int_equal(
        gc_const(g, WF_FLOAT64, AG_I64(u->len[i], 3), 2, w, &ws[ny++], st), 0);
  }
  if (u->dense_too) {
    static const double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    wf_node_desc *d = wf_node_desc_new(g, "Identity", NULL);

    wf_node_desc_add_input(d, params);
    ys[ny] = (wf_output){ag_node(d, "Identity"), 0};
    assert_int_equal(
        gc_const(g, WF_FLOAT64, AG_I64(4, 3), 2, ones, &ws[ny++], st), 0);
  }
  if (wf_graph_add_gradients(g, ys, ny, ws, &params, 1, dx, st))
    fail_msg("adding gradients: %s", wf_status_message(st));
  wf_status_free(st);
}

/* Runs the gradient and returns it densified, with params fed (4, 3). */
static void run_gradient(wf_graph *g, wf_output params, const wf_gradient *dx,
                         double *dense, int64_t *nrows) {
  wf_status *st = wf_status_new();
  wf_session *s = wf_session_new(g, st);
  wf_tensor *p = ag_tensor(2, AG_I64(4, 3), NULL), *out[3] = {NULL};
  wf_output fetch[3] = {dx->indices, dx->values, dx->dense_shape};
  int sparse = dx->indices.node != NULL;

  assert_non_null(s);
  if (!sparse)
    fetch[0] = dx->dense;
  if (wf_session_run(s, NULL, &params, &p, 1, fetch, out, sparse ? 3 : 1, NULL,
                     0, NULL, st))
    fail_msg("run: %s", wf_status_message(st));
  memset(dense, 0, 12 * sizeof *dense);
  if (sparse) {
    const int64_t *ds = wf_tensor_data(out[2]);

    /* (indices (K,), values (K, 3), dense_shape [4, 3]) */
    assert_int_equal(wf_tensor_rank(out[0]), 1);
    assert_int_equal(wf_tensor_rank(out[1]), 2);
    assert_int_equal(wf_tensor_dim(out[1], 0), wf_tensor_dim(out[0], 0));
    assert_int_equal(wf_tensor_dim(out[1], 1), 3);
    assert_int_equal(wf_tensor_dtype(out[2]), WF_INT64);
    assert_int_equal(wf_tensor_count(out[2]), 2);
    assert_int_equal(ds[0], 4);
    assert_int_equal(ds[1], 3);
    *nrows = wf_tensor_dim(out[0], 0);
    for (int64_t k = 0; k < *nrows; k++) {
      int64_t r = wf_tensor_dtype(out[0]) == WF_INT32
                      ? ((const int32_t *)wf_tensor_data(out[0]))[k]
                      : ((const int64_t *)wf_tensor_data(out[0]))[k];
      for (int c = 0; c < 3; c++)
        dense[r * 3 + c] += ((const double *)wf_tensor_data(out[1]))[k * 3 + c];
    }
  } else {
    *nrows = -1;
    memcpy(dense, wf_tensor_data(out[0]), 12 * sizeof *dense);
  }
  for (int i = 0; i < 3; i++)
    wf_tensor_release(out[i]);
  wf_tensor_release(p);
  wf_session_free(s);
  wf_status_free(st);
}

/* The reference: w_i's rows added at their indices (+ 1 when dense_too). */
static void expected_gradient(const gather_uses *u, double *want) {
  for (int e = 0; e < 12; e++)
    want[e] = u->dense_too ? 1 : 0;
  for (int i = 0; i < u->n; i++)
    for (int k = 0; k < u->len[i]; k++)
      for (int c = 0; c < 3; c++)
        want[u->idx[i][k] * 3 + c] += 1 + (k * 3 + c) / 8.0 + i;
}

static void test_gather_gradient_is_sparse_and_stays_sparse(void **state) {
  /* One Gather with a (2, 2) index (flattened to 4 rows; row 2 twice), and
   * two Gathers (their rows concatenated: 3 + 2), also with int32 indices
   * in one and int64 in the other (concatenated as int64). */
  gather_uses one = {1, {{0, 2, 2, 3}}, {4, 0}, 0, 0};
  gather_uses two = {2, {{1, 3, 1}, {0, 1}}, {3, 2}, 0, 0};
  gather_uses wide2 = {2, {{1, 3, 1}, {0, 3}}, {3, 2}, 0, 2};
  gather_uses wide1 = {2, {{1, 3, 1}, {0, 3}}, {3, 2}, 0, 1};
  const gather_uses *cases[] = {&one, &two, &wide2, &wide1};
  static const int64_t rows[] = {4, 5, 5, 5};

  for (int i = 0; i < 4; i++) {
    wf_graph *g = wf_graph_new(rt);
    wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "params");
    wf_output params;
    wf_gradient dx;
    double got[12], want[12];
    int64_t k;

    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
    wf_node_desc_set_attr_shape(d, "shape", AG_I64(4, 3), 2);
    params = (wf_output){ag_node(d, "params"), 0};
    sparse_gradient_of(g, params, cases[i], &dx);
    assert_non_null(dx.indices.node);
    assert_null(dx.dense.node);
    if (cases[i]->int64_at)
      assert_int_equal(wf_node_output_dtype(dx.indices.node, dx.indices.index),
                       WF_INT64);
    run_gradient(g, params, &dx, got, &k);
    assert_int_equal(k, rows[i]);
    expected_gradient(cases[i], want);
    for (int e = 0; e < 12; e++)
      assert_true(got[e] == want[e]);
    wf_graph_free(g);
  }
}

static void
test_sparse_gradient_meeting_a_dense_one_is_densified(void **state) {
  gather_uses mixed = {1, {{3, 0, 3}}, {3, 0}, 1, 0};
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "params");
  wf_output params;
  wf_gradient dx;
  double got[12], want[12];
  int64_t k;
  int densified = 0;

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", AG_I64(4, 3), 2);
  params = (wf_output){ag_node(d, "params"), 0};
  sparse_gradient_of(g, params, &mixed, &dx);
  assert_non_null(dx.dense.node);
  assert_null(dx.indices.node);
  for (int i = 0; i < wf_graph_num_nodes(g); i++)
    densified += strcmp(wf_node_op(wf_graph_node(g, i)),
                        "UnsortedSegmentSumToShape") == 0;
  assert_true(densified >= 1);
  run_gradient(g, params, &dx, got, &k);
  expected_gradient(&mixed, want);
  for (int e = 0; e < 12; e++)
    assert_true(got[e] == want[e]);
  wf_graph_free(g);
}

static void test_unsorted_segment_sum_gradient_gathers_dy(void **state) {
  ag_case c = {.op = "UnsortedSegmentSumToShape",
               .order = "xcc",
               .consts = {{WF_INT32, 1, {4}, (const int32_t[]){1, 0, 1, 3}},
                          AG_VEC(5, 3)}};

  check_both((gc_spec){.name = "UnsortedSegmentSumToShape",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {4, 3}}}},
             &c, 1);
}

/* ---- the backward ops' own gradients ------------------------------------- */

static void test_backward_ops_have_their_forward_op_as_gradient(void **state) {
  ag_case slice = {.op = "SliceGrad",
                   .order = "ccx",
                   .consts = {AG_VEC(4, 5), AG_VEC(1, 2)}};
  ag_case pad = {.op = "PadGrad",
                 .order = "xc",
                 .consts = {{WF_INT64, 2, {2, 2}, AG_I64(1, 0, 2, 1)}}};
  ag_case tile = {
      .op = "TileGrad", .order = "ccx", .consts = {AG_VEC(2, 2), AG_VEC(2, 3)}};
  ag_case gather = {
      .op = "GatherGrad",
      .order = "ccx",
      .consts = {AG_VEC(2, 3, 2),
                 {WF_INT32, 1, {4}, (const int32_t[]){2, 0, 2, 1}}},
      .attrs = {{"axis", GC_INT(1)}}};
  /* StridedSliceGrad of x[1, 1:4:2] on (4, 5): dy is (2,). */
  ag_case strided = {
      .op = "StridedSliceGrad",
      .order = "ccccx",
      .consts = {AG_VEC(4, 5), AG_VEC(1, 1), AG_VEC(2, 4), AG_VEC(1, 2)},
      .attrs = {{"shrink_axis_mask", GC_INT(1)}}};

  check_both((gc_spec){.name = "SliceGrad",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {2, 3}}}},
             &slice, 1);
  check_both((gc_spec){.name = "PadGrad",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {5, 4}}}},
             &pad, 1);
  check_both((gc_spec){.name = "TileGrad",
                       .num_inputs = 1,
                       .in = {{.rank = 2, .dims = {4, 6}}}},
             &tile, 1);
  check_both((gc_spec){.name = "GatherGrad",
                       .num_inputs = 1,
                       .in = {{.rank = 3, .dims = {2, 4, 2}}}},
             &gather, 1);
  check_both((gc_spec){.name = "StridedSliceGrad",
                       .num_inputs = 1,
                       .in = {{.rank = 1, .dims = {2}}}},
             &strided, 1);
}

/* ---- what has no gradient ------------------------------------------------ */

static void test_index_and_shape_ops_are_not_differentiable(void **state) {
  static const char *const none[] = {
      "Shape",    "Size",         "OneHot",       "ZerosLike",
      "OnesLike", "StopGradient", "ConcatOffset", "InvertPermutation"};
  static const char *const some[] = {
      "Identity",     "Reshape",
      "Squeeze",      "ExpandDims",
      "Transpose",    "Concat",
      "Split",        "Slice",
      "StridedSlice", "Pad",
      "Tile",         "Gather",
      "Fill",         "UnsortedSegmentSumToShape",
      "SliceGrad",    "StridedSliceGrad",
      "PadGrad",      "TileGrad",
      "GatherGrad"};

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
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  wf_output x, y;
  wf_gradient dx;

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  x = (wf_output){ag_node(d, "x"), 0};
  d = wf_node_desc_new(g, "Shape", "shape");
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_dtype(d, "out_type", WF_INT64);
  y = (wf_output){ag_node(d, "Shape"), 0};
  d = wf_node_desc_new(g, "Cast", "cast");
  wf_node_desc_add_input(d, y);
  wf_node_desc_set_attr_dtype(d, "DstT", WF_FLOAT64);
  y = (wf_output){ag_node(d, "Cast"), 0};
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st), 0);
  assert_null(dx.dense.node);
  assert_null(dx.indices.node);
  wf_graph_free(g);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity_gradient_passes_dy_through),
      cmocka_unit_test(test_reshape_gradient_restores_the_input_shape),
      cmocka_unit_test(test_squeeze_and_expand_dims_gradients_restore_shape),
      cmocka_unit_test(test_transpose_gradient_uses_the_inverse_perm),
      cmocka_unit_test(test_concat_gradient_cuts_dy_back_into_inputs),
      cmocka_unit_test(test_split_gradient_joins_output_gradients),
      cmocka_unit_test(test_slice_gradient_places_dy_at_begin),
      cmocka_unit_test(test_strided_slice_gradient_over_masks_and_strides),
      cmocka_unit_test(test_pad_gradient_is_the_unpadded_block),
      cmocka_unit_test(test_tile_gradient_sums_the_copies),
      cmocka_unit_test(test_fill_gradient_sums_dy_into_the_value),
      cmocka_unit_test(test_gather_gradient_matches_finite_differences),
      cmocka_unit_test(test_gather_gradient_is_sparse_and_stays_sparse),
      cmocka_unit_test(test_sparse_gradient_meeting_a_dense_one_is_densified),
      cmocka_unit_test(test_unsorted_segment_sum_gradient_gathers_dy),
      cmocka_unit_test(test_backward_ops_have_their_forward_op_as_gradient),
      cmocka_unit_test(test_index_and_shape_ops_are_not_differentiable),
      cmocka_unit_test(test_gradient_through_shape_is_none),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
