/* tests/ops/test_layer_norm_grad.c — LayerNorm's gradient (LayerNormGrad
 * built by ops_nn's gradient function) with respect to x, scale and offset
 * against central finite differences through the shared checker
 * (gradcheck.h: float64 at 2 random points, step 1e-6 relative, tolerance
 * 1e-6 relative + 1e-7 absolute), over ranks 1 to 3, one-element rows and
 * unknown static shapes; and that the op has a registered gradient. Loads
 * ops_array, ops_math, ops_nn and the CPU device. */
#include <config.h>

#include "array_nn_grad.h"

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

static void test_layer_norm_gradient_wrt_x_scale_offset(void **state) {
  ag_case c = {.op = "LayerNorm",
               .order = "xxx",
               .attrs = {{"epsilon", GC_FLOAT(0.01)}}};
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int unknown;
  } shapes[] = {{"LayerNorm (5,)", 1, {5}, 0},
                {"LayerNorm (3, 6)", 2, {3, 6}, 0},
                {"LayerNorm (2, 3, 4) unknown dims", 3, {2, 3, 4}, 1},
                {"LayerNorm (4, 1)", 2, {4, 1}, 0}};

  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int64_t ch = shapes[i].dims[shapes[i].rank - 1];
    gc_spec s = {.name = shapes[i].name,
                 .num_inputs = 3,
                 .in = {{.rank = shapes[i].rank},
                        {.rank = 1, .dims = {ch}, .lo = 0.5, .hi = 1.5},
                        {.rank = 1, .dims = {ch}}},
                 .unknown_dims = shapes[i].unknown};
    memcpy(s.in[0].dims, shapes[i].dims, sizeof shapes[i].dims);
    ag_check(rt, s, &c);
  }
}

static void test_layer_norm_gradient_with_constant_scale(void **state) {
  /* x and offset fed, scale a Const: x's gradient still uses it. */
  ag_case c = {.op = "LayerNorm",
               .order = "xcx",
               .consts = {{WF_FLOAT64, 1, {4}, (const double[]){2, -1, 0.5, 3}}},
               .attrs = {{"epsilon", GC_FLOAT(1e-3)}}};
  gc_spec s = {.name = "LayerNorm constant scale",
               .num_inputs = 2,
               .in = {{.rank = 2, .dims = {3, 4}, .lo = -3, .hi = 3},
                      {.rank = 1, .dims = {4}}}};

  ag_check(rt, s, &c);
}

static void test_layer_norm_has_a_gradient(void **state) {
  assert_int_equal(wf_runtime_op_gradient(rt, "LayerNorm"), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layer_norm_gradient_wrt_x_scale_offset),
      cmocka_unit_test(test_layer_norm_gradient_with_constant_scale),
      cmocka_unit_test(test_layer_norm_has_a_gradient),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
