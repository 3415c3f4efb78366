/* tests/ops/test_layer_norm.c — LayerNorm and LayerNormGrad of the ops_nn
 * plugin against a float64 reference written here from the definition
 * (two-pass mean and biased variance, then the closed-form backward), with
 * tolerances |got - want| <= tol * max(|want|, 1), tol 1e-5 for float32
 * and 1e-12 for float64: the outputs are sums of terms of order 1 (xhat
 * scale + offset), so an output near 0 carries the absolute rounding of
 * those terms, not a relative error of its own; shape inference; the
 * errors of bad scale shapes and epsilon; and the kernel the CPU device
 * plugin picks (its own where it registers one) against the same
 * reference. The gradients against finite differences are in
 * test_layer_norm_grad.c. */
#include <config.h>

#include "array_nn_harness.h"

#include <stdlib.h>

static wf_runtime *ref_rt, *dev_rt;

static int setup(void **state) {
  static const char *const dirs[] = {"plugins/ops/array/.libs",
                                     "plugins/ops/nn/.libs",
                                     "plugins/devices/cpu/.libs"};
  ref_rt = fx_runtime(dirs, 2);
  dev_rt = fx_runtime(dirs, 3);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(ref_rt);
  wf_runtime_free(dev_rt);
  return 0;
}

/* Deterministic values in [lo, hi) (a small LCG; no libc rand state). */
static void fill(double *v, int64_t n, double lo, double hi, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = lo + (hi - lo) * (double)(s >> 8) / (double)(1u << 24);
  }
}

/* The definition, in float64: y, and for dy the three gradients. */
static void reference(const double *x, const double *scale,
                      const double *offset, const double *dy, int64_t rows,
                      int64_t c, double eps, double *y, double *dx,
                      double *ds, double *doff) {
  for (int64_t j = 0; j < c; j++)
    ds[j] = doff[j] = 0;
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * c, *gr = dy + r * c;
    double m = 0, v = 0, a = 0, b = 0;
    for (int64_t j = 0; j < c; j++)
      m += xr[j] / (double)c;
    for (int64_t j = 0; j < c; j++)
      v += (xr[j] - m) * (xr[j] - m) / (double)c;
    double rs = 1 / sqrt(v + eps);
    for (int64_t j = 0; j < c; j++) {
      double xh = (xr[j] - m) * rs;
      y[r * c + j] = xh * scale[j] + offset[j];
      ds[j] += gr[j] * xh;
      doff[j] += gr[j];
      a += gr[j] * scale[j];
      b += gr[j] * scale[j] * xh;
    }
    for (int64_t j = 0; j < c; j++) {
      double xh = (xr[j] - m) * rs;
      dx[r * c + j] = rs * (gr[j] * scale[j] - a / (double)c - xh * b / (double)c);
    }
  }
}

/* Storage of one case's tensors in the case's dtype. */
typedef struct ln_data {
  void *x, *scale, *offset, *dy, *y, *dx, *ds, *doff;
} ln_data;

static void *as_dtype(const double *v, int64_t n, wf_dtype dt) {
  void *p = malloc((size_t)(n > 0 ? n : 1) * 8);
  assert_non_null(p);
  for (int64_t i = 0; i < n; i++)
    if (dt == WF_FLOAT32)
      ((float *)p)[i] = (float)v[i];
    else
      ((double *)p)[i] = v[i];
  return p;
}

/* Builds the LayerNorm and LayerNormGrad cases of x (rank, dims) in dtype
 * dt; the reference sees the inputs as rounded to dt. */
static void make_cases(wf_dtype dt, int rank, const int64_t *dims, double eps,
                       fx_case *fwd, fx_case *bwd, ln_data *d) {
  int64_t c = dims[rank - 1], n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  size_t nb = (size_t)(n > 0 ? n : 1) * 8;
  double *x = malloc(nb), *dy = malloc(nb), *y = malloc(nb), *dx = malloc(nb),
         *sc = malloc((size_t)c * 8), *of = malloc((size_t)c * 8),
         *ds = malloc((size_t)c * 8), *dof = malloc((size_t)c * 8);
  assert_true(x && dy && y && dx && sc && of && ds && dof);
  fill(x, n, -3, 5, (uint32_t)n);
  fill(dy, n, -1, 1, (uint32_t)n + 7);
  fill(sc, c, 0.5, 1.5, (uint32_t)c + 1);
  fill(of, c, -0.5, 0.5, (uint32_t)c + 2);
  if (dt == WF_FLOAT32) { /* the reference takes what the kernel takes */
    for (int64_t i = 0; i < n; i++) {
      x[i] = (float)x[i];
      dy[i] = (float)dy[i];
    }
    for (int64_t j = 0; j < c; j++) {
      sc[j] = (float)sc[j];
      of[j] = (float)of[j];
    }
  }
  reference(x, sc, of, dy, n / c, c, eps, y, dx, ds, dof);
  d->x = as_dtype(x, n, dt);
  d->dy = as_dtype(dy, n, dt);
  d->y = as_dtype(y, n, dt);
  d->dx = as_dtype(dx, n, dt);
  d->scale = as_dtype(sc, c, dt);
  d->offset = as_dtype(of, c, dt);
  d->ds = as_dtype(ds, c, dt);
  d->doff = as_dtype(dof, c, dt);
  free(x), free(dy), free(y), free(dx), free(sc), free(of), free(ds),
      free(dof);

  fx_tensor tx = {dt, rank, {0}, d->x}, tv = {dt, 1, {c}, d->scale};
  memcpy(tx.dims, dims, (size_t)rank * sizeof *dims);
  *fwd = (fx_case){.name = "LayerNorm", .op = "LayerNorm", .num_inputs = 3,
                   .num_attrs = 1, .num_outputs = 1};
  fwd->attrs[0] = (fx_attr){"epsilon", 'f', 0, eps, NULL, NULL, 0};
  fwd->inputs[0] = tx;
  fwd->inputs[1] = tv;
  fwd->inputs[2] = tv;
  fwd->inputs[2].data = d->offset;
  fwd->outputs[0] = tx;
  fwd->outputs[0].data = d->y;

  *bwd = (fx_case){.name = "LayerNormGrad", .op = "LayerNormGrad",
                   .num_inputs = 3, .num_attrs = 1, .num_outputs = 3};
  bwd->attrs[0] = fwd->attrs[0];
  bwd->inputs[0] = tx;
  bwd->inputs[0].data = d->dy;
  bwd->inputs[1] = tx;
  bwd->inputs[2] = tv;
  bwd->outputs[0] = tx;
  bwd->outputs[0].data = d->dx;
  bwd->outputs[1] = tv;
  bwd->outputs[1].data = d->ds;
  bwd->outputs[2] = tv;
  bwd->outputs[2].data = d->doff;
}

static void free_data(ln_data *d) {
  free(d->x), free(d->scale), free(d->offset), free(d->dy), free(d->y),
      free(d->dx), free(d->ds), free(d->doff);
}

/* Builds c (inputs fed), checks the inferred shapes equal the reference's,
 * runs the kernel the runtime picks for "cpu" and compares every output
 * with the tolerance above. */
static void check_case(wf_runtime *rt, const fx_case *c) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_tensor *outs[FX_MAX_IO];
  wf_node *n = fx_build(g, c, 0, st);

  if (!n)
    fail_msg("%s: building: %s", c->name, wf_status_message(st));
  assert_int_equal(wf_node_num_outputs(n), c->num_outputs);
  if (fx_run_node(rt, n, c, outs, st))
    fail_msg("%s: running: %s", c->name, wf_status_message(st));
  for (int i = 0; i < c->num_outputs; i++) {
    const fx_tensor *w = &c->outputs[i];
    wf_shape inferred, ref, made;
    wf_node_output_shape(n, i, &inferred);
    wf_tensor_shape(outs[i], &made);
    wf_shape_init(&ref, w->dims, w->rank);
    if (!wf_shape_equal(&inferred, &ref) || !wf_shape_equal(&made, &ref))
      fail_msg("%s: output %d has the wrong shape", c->name, i);
    double tol = w->dtype == WF_FLOAT32 ? 1e-5 : 1e-12;
    for (int64_t j = 0; j < fx_count(w); j++) {
      double want = fx_load(w->data, w->dtype, j),
             got = fx_load(wf_tensor_data(outs[i]), w->dtype, j);
      if (!(fabs(got - want) <= tol * fmax(fabs(want), 1)))
        fail_msg("%s: output %d element %lld is %.17g, want %.17g (tol %g)",
                 c->name, i, (long long)j, got, want, tol);
    }
    wf_tensor_release(outs[i]);
  }
  wf_graph_free(g);
  wf_status_free(st);
}

static void check_shapes(wf_runtime *rt, const char *who) {
  static const struct {
    int rank;
    int64_t dims[4];
    double eps;
  } shapes[] = {{1, {7}, 1e-5},          {2, {5, 64}, 1e-5},
                {3, {2, 28, 64}, 1e-6},  {3, {3, 4, 1}, 1e-3},
                {4, {2, 3, 2, 33}, 0.1}, {2, {0, 8}, 1e-5},
                /* the transformer's: the intra-op threads share its rows */
                {3, {64, 28, 64}, 1e-5},
                /* rows shared unevenly by the threads; long rows */
                {2, {19, 40}, 1e-5},     {3, {33, 37, 64}, 1e-5},
                {2, {3, 700}, 1e-5},
                /* one vector, and an odd count of them */
                {2, {4, 8}, 1e-5},       {2, {9, 24}, 1e-4},
                /* AVX-512's: one vector, three, blocks of rows (16)
                 * split unevenly */
                {2, {70, 16}, 1e-5},     {3, {3, 17, 48}, 1e-5}};
  static const wf_dtype dts[] = {WF_FLOAT32, WF_FLOAT64};

  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int k = 0; k < 2; k++) {
      fx_case fwd, bwd;
      ln_data d;
      char name[96];
      make_cases(dts[k], shapes[i].rank, shapes[i].dims, shapes[i].eps, &fwd,
                 &bwd, &d);
      snprintf(name, sizeof name, "%s LayerNorm %s case %zu", who,
               wf_dtype_name(dts[k]), i);
      fwd.name = name;
      check_case(rt, &fwd);
      snprintf(name, sizeof name, "%s LayerNormGrad %s case %zu", who,
               wf_dtype_name(dts[k]), i);
      bwd.name = name;
      check_case(rt, &bwd);
      free_data(&d);
    }
}

static void test_reference_kernels_match_the_definition(void **state) {
  check_shapes(ref_rt, "reference");
}

static void test_cpu_device_kernels_match_the_definition(void **state) {
  check_shapes(dev_rt, "cpu device");
}

static void test_constant_rows_normalise_to_the_offset(void **state) {
  /* Variance 0: y = offset exactly (epsilon keeps rstd finite), dx = 0. */
  static const float x[6] = {2, 2, 2, -1, -1, -1};
  static const float sc[3] = {1, 2, 3}, of[3] = {0.5f, -1, 0};
  static const float y[6] = {0.5f, -1, 0, 0.5f, -1, 0};
  fx_case c = {.name = "LayerNorm constant rows", .op = "LayerNorm",
               .num_inputs = 3,
               .inputs = {{WF_FLOAT32, 2, {2, 3}, x},
                          {WF_FLOAT32, 1, {3}, sc},
                          {WF_FLOAT32, 1, {3}, of}},
               .num_outputs = 1,
               .outputs = {{WF_FLOAT32, 2, {2, 3}, y}}};
  /* Exact outputs: the harness's own check (relative 1e-5) holds too. */
  fx_check_op(ref_rt, &c, 1, "LayerNorm");
  fx_check_op(dev_rt, &c, 1, "LayerNorm");
}

static void test_bad_scale_and_epsilon_are_refused(void **state) {
  static const float z[8] = {0};
  fx_case c = {.name = "LayerNorm", .op = "LayerNorm", .num_inputs = 3,
               .inputs = {{WF_FLOAT32, 2, {2, 4}, z},
                          {WF_FLOAT32, 1, {3}, z},
                          {WF_FLOAT32, 1, {4}, z}}};

  fx_expect_error(ref_rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"scale has 3 entries",
                                        "last axis of x has 4", NULL});
  c.inputs[1] = (fx_tensor){WF_FLOAT32, 2, {1, 4}, z};
  fx_expect_error(ref_rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"scale must be a vector", NULL});
  c.inputs[1] = (fx_tensor){WF_FLOAT32, 1, {4}, z};
  c.num_attrs = 1;
  c.attrs[0] = (fx_attr){"epsilon", 'f', 0, -1, NULL, NULL, 0};
  fx_expect_error(ref_rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"epsilon is -1", NULL});
  /* Found only when run: shapes unknown while building. */
  c.num_attrs = 0;
  c.inputs[2] = (fx_tensor){WF_FLOAT32, 1, {5}, z};
  c.unknown_shapes = 1;
  fx_expect_error(ref_rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"offset has 5 entries", NULL});
  c.inputs[0] = (fx_tensor){WF_FLOAT32, 0, {0}, z};
  c.inputs[2] = (fx_tensor){WF_FLOAT32, 1, {4}, z};
  fx_expect_error(ref_rt, &c, 0, WF_INVALID_ARGUMENT,
                  (const char *const[]){"rank 1 or more", NULL});
}

static void test_grad_checks_dy_against_x(void **state) {
  static const float z[12] = {0};
  fx_case c = {.name = "LayerNormGrad", .op = "LayerNormGrad",
               .num_inputs = 3,
               .inputs = {{WF_FLOAT32, 2, {3, 4}, z},
                          {WF_FLOAT32, 2, {2, 4}, z},
                          {WF_FLOAT32, 1, {4}, z}}};

  fx_expect_error(ref_rt, &c, 1, WF_INVALID_ARGUMENT,
                  (const char *const[]){"y_backprop against x", NULL});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_kernels_match_the_definition),
      cmocka_unit_test(test_cpu_device_kernels_match_the_definition),
      cmocka_unit_test(test_constant_rows_normalise_to_the_offset),
      cmocka_unit_test(test_bad_scale_and_epsilon_are_refused),
      cmocka_unit_test(test_grad_checks_dy_against_x),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
