/* tests/gpu/test_cuda_kernels.c — every CUDA kernel against the CPU's, on a
 * machine with a GPU: each case builds the op twice on the same inputs,
 * once asking for cpu:0 (where the config prefers the op plugins'
 * reference kernels) and once for cuda:0, runs both in one step, checks
 * that the second ran on cuda:0 with the device-cuda plugin's kernel, and
 * compares the values:
 *   Add, Sub, Mul, Relu    bit for bit (one IEEE operation per element)
 *   Sigmoid, Tanh          within 8 units in the last place of the CPU's
 *   MatMul                 |gpu - cpu| <= tol sum_k |a_ik b_kj| (float32:
 *                          1e-5, float64: 1e-13; the CPU sums float32 in
 *                          double, cuBLAS in float)
 *   uniform initializers   bit for bit, at two steps
 *   Neg, Square, Abs, Div, Maximum, Minimum, Relu/Abs/LeakyRelu/Elu
 *   gradients, BiasAdd, MaxPool, AvgPool, their gradients, Gather,
 *   GatherGrad, UnsortedSegmentSumToShape, Max, Min, Cast, AddN,
 *   OnesLike, ZerosLike, Reshape, ExpandDims, Shape, ReadVariable,
 *   AssignAdd/SubVariable and every Apply and SparseApply op
 *                          bit for bit (the same operations in the same
 *                          order; the updates in double without fused
 *                          multiply-adds, as the CPU)
 *   Sqrt, Rsqrt, Exp, Log, Elu, Softplus, Gelu, LeakyRelu, Pow
 *                          within 16 units in the last place of the CPU's
 *   the other activation gradients (Sigmoid, Tanh, Sqrt, Rsqrt, Softplus,
 *   Gelu), Sum, Mean, Prod, SumGrad, MeanGrad, MaxMinGrad, SumToLike,
 *   BiasAddGrad, Softmax, LogSoftmax, their gradients, both softmax
 *   cross-entropies, BatchNorm and BatchNormGrad
 *                          |gpu - cpu| <= tol max |cpu| over the tensor
 *                          (float32: 1e-6, float64: 1e-13: sums in double
 *                          in another order, multiply-adds fused)
 *   Conv2D and its two backprops (NHWC and NCHW; SAME, VALID, EXPLICIT;
 *   strides, dilations)   the same with tol float32: 1e-5, float64: 1e-12
 *                          (cuDNN sums float32 in float, without TF32)
 *
 * Without a usable cuda:0 it prints why and exits 77 (automake's skip).
 * The plugin directories are the build tree's, or the comma-separated
 * list in WEFT_GPU_PLUGIN_DIRS when it is set (a build copied to another
 * machine). */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PLUGIN_DIRS                                                            \
  TEST_BUILDDIR "/plugins/devices/cuda/.libs, " TEST_BUILDDIR                  \
                "/plugins/devices/cpu/.libs, " TEST_BUILDDIR                   \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/nn/.libs, " TEST_BUILDDIR                        \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/train/.libs"

static wf_runtime *rt;
static wf_status *st;
/* Which output of the op run_twins fetches (the losses and BatchNorm have
 * several). */
static int fetch_index;

/* ---- inputs and outputs -------------------------------------------------- */

static double value_at(const wf_tensor *t, int64_t i) {
  return wf_tensor_dtype(t) == WF_FLOAT32
             ? (double)((const float *)wf_tensor_data(t))[i]
             : ((const double *)wf_tensor_data(t))[i];
}

/* A tensor of dims with values in [-3, 3) from a fixed sequence, and a few
 * special values (0, -0, +-inf, NaN) when `special`. */
static wf_tensor *filled(wf_dtype dt, const int64_t *dims, int rank,
                         unsigned seed, int special) {
  static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN,
                                    1e-30, -40.0, 40.0};
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  uint64_t x = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
  int64_t n;

  if (!t)
    fail_msg("tensor: %s", wf_status_message(st));
  n = wf_tensor_count(t);
  for (int64_t i = 0; i < n; i++) {
    double v;
    x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    v = (double)(x >> 11) * 0x1p-53 * 6.0 - 3.0;
    if (special && i % 13 == 5)
      v = specials[(i / 13) % 8];
    if (dt == WF_FLOAT32)
      ((float *)wf_tensor_data(t))[i] = (float)v;
    else
      ((double *)wf_tensor_data(t))[i] = v;
  }
  return t;
}

static wf_output placeholder(wf_graph *g, wf_dtype dt, const int64_t *dims,
                             int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", NULL);
  wf_node *n;

  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("Placeholder: %s", wf_status_message(st));
  return (wf_output){n, 0};
}

/* Sets a case's attributes on a node being built. */
typedef void attrs_fn(wf_node_desc *d, const void *arg);

static wf_node *op_node(wf_graph *g, const char *op, const char *name,
                        const wf_output *in, int nin, attrs_fn *attrs,
                        const void *arg, const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node *n;

  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  if (attrs)
    attrs(d, arg);
  wf_node_desc_set_device(d, device);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", name, wf_status_message(st));
  return n;
}

/* Checks in md that node ran on device with a kernel of plugin. */
static void expect_ran_on(const wf_run_metadata *md, const char *node,
                          const char *device, const char *plugin) {
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    if (strcmp(ns.node, node) != 0)
      continue;
    if (strcmp(ns.device, device) != 0)
      fail_msg("%s ran on %s, not %s", node, ns.device, device);
    if (plugin &&
        strcmp(wf_run_metadata_node_kernel_plugin(md, i), plugin) != 0)
      fail_msg("%s ran %s's kernel, not %s's", node,
               wf_run_metadata_node_kernel_plugin(md, i), plugin);
    return;
  }
  fail_msg("node %s did not run", node);
}

/* op on the inputs, on cpu:0 and on cuda:0 in one step: *cpu and *gpu get
 * the outputs (new references). */
static void run_twins(const char *op, wf_tensor *const *inputs, int nin,
                      attrs_fn *attrs, const void *arg, wf_tensor **cpu,
                      wf_tensor **gpu) {
  wf_graph *g = wf_graph_new(rt);
  wf_output in[8], fetch[2];
  wf_session *s;
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *out[2] = {NULL, NULL};

  assert_true(nin <= 8);
  for (int i = 0; i < nin; i++) {
    wf_shape sh;
    wf_tensor_shape(inputs[i], &sh);
    in[i] = placeholder(g, wf_tensor_dtype(inputs[i]), sh.dims, sh.rank);
  }
  fetch[0] = (wf_output){op_node(g, op, "on_cpu", in, nin, attrs, arg,
                                 "cpu:0"),
                         fetch_index};
  fetch[1] = (wf_output){op_node(g, op, "on_gpu", in, nin, attrs, arg,
                                 "cuda:0"),
                         fetch_index};
  s = wf_session_new(g, st);
  assert_non_null(s);
  opt.trace_level = WF_TRACE_NODES;
  if (wf_session_run(s, &opt, in, inputs, nin, fetch, out, 2, NULL, 0, md,
                     st))
    fail_msg("%s: %s", op, wf_status_message(st));
  expect_ran_on(md, "on_cpu", "cpu:0", NULL);
  expect_ran_on(md, "on_gpu", "cuda:0", "device-cuda");
  *cpu = out[0];
  *gpu = out[1];
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_graph_free(g);
}

/* Same shape and dtype, and each element within ulps units in the last
 * place of the CPU's (0: the same bits; NaN matches NaN). */
static void expect_close(const char *what, const wf_tensor *cpu,
                         const wf_tensor *gpu, double ulps) {
  wf_shape a, b;
  double eps = wf_tensor_dtype(cpu) == WF_FLOAT32 ? 0x1p-23 : 0x1p-52;

  wf_tensor_shape(cpu, &a);
  wf_tensor_shape(gpu, &b);
  assert_true(wf_shape_equal(&a, &b));
  assert_int_equal(wf_tensor_dtype(cpu), wf_tensor_dtype(gpu));
  if (ulps == 0) {
    if (memcmp(wf_tensor_data(cpu), wf_tensor_data(gpu),
               wf_tensor_nbytes(cpu)) == 0)
      return;
  }
  for (int64_t i = 0; i < wf_tensor_count(cpu); i++) {
    double c = value_at(cpu, i), g = value_at(gpu, i);
    double tol = ulps * eps * fmax(fabs(c), 0x1p-126);
    if (isnan(c) && isnan(g))
      continue;
    if (ulps == 0 ? memcmp(&c, &g, sizeof c) != 0
                  : !(c == g || fabs(c - g) <= tol))
      fail_msg("%s: element %lld: gpu %.17g, cpu %.17g (tolerance %g)", what,
               (long long)i, g, c, tol);
  }
}

/* ---- elementwise --------------------------------------------------------- */

static const wf_dtype float_types[] = {WF_FLOAT32, WF_FLOAT64};

static void binary_case(const char *op, wf_dtype dt, const int64_t *xd,
                        int xr, const int64_t *yd, int yr) {
  wf_tensor *in[2] = {filled(dt, xd, xr, 1, 1), filled(dt, yd, yr, 2, 1)};
  wf_tensor *cpu, *gpu;
  char what[96];

  run_twins(op, in, 2, NULL, NULL, &cpu, &gpu);
  snprintf(what, sizeof what, "%s %s rank %d with rank %d", op,
           wf_dtype_name(dt), xr, yr);
  expect_close(what, cpu, gpu, 0);
  wf_tensor_release(cpu);
  wf_tensor_release(gpu);
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
}

static void test_add_sub_mul_match_the_cpu_bit_for_bit(void **state) {
  static const char *const ops[] = {"Add", "Sub", "Mul"};
  static const int64_t full[] = {3, 4, 5}, col[] = {3, 1, 5}, row[] = {4, 1};

  for (int o = 0; o < 3; o++)
    for (int t = 0; t < 2; t++) {
      binary_case(ops[o], float_types[t], full, 3, full, 3);  /* equal */
      binary_case(ops[o], float_types[t], NULL, 0, full, 3);  /* scalar x */
      binary_case(ops[o], float_types[t], full, 3, NULL, 0);  /* scalar y */
      binary_case(ops[o], float_types[t], col, 3, row, 2);    /* general */
      binary_case(ops[o], float_types[t], full + 2, 1, col, 3);
    }
}

static void test_unary_ops_match_the_cpu(void **state) {
  static const struct {
    const char *op;
    double ulps;
  } cases[] = {{"Relu", 0}, {"Sigmoid", 8}, {"Tanh", 8}};
  static const int64_t dims[] = {7, 11, 13};

  for (int c = 0; c < 3; c++)
    for (int t = 0; t < 2; t++) {
      wf_tensor *x = filled(float_types[t], dims, 3, 3, 1), *cpu, *gpu;
      char what[64];
      run_twins(cases[c].op, &x, 1, NULL, NULL, &cpu, &gpu);
      snprintf(what, sizeof what, "%s %s", cases[c].op,
               wf_dtype_name(float_types[t]));
      expect_close(what, cpu, gpu, cases[c].ulps);
      wf_tensor_release(cpu);
      wf_tensor_release(gpu);
      wf_tensor_release(x);
    }
}

/* ---- MatMul -------------------------------------------------------------- */

typedef struct transposes {
  int a, b;
} transposes;

static void matmul_attrs(wf_node_desc *d, const void *arg) {
  const transposes *t = arg;
  wf_node_desc_set_attr_bool(d, "transpose_a", t->a);
  wf_node_desc_set_attr_bool(d, "transpose_b", t->b);
}

static void matmul_case(wf_dtype dt, int64_t m, int64_t k, int64_t n,
                        transposes tr) {
  int64_t ad[2] = {tr.a ? k : m, tr.a ? m : k};
  int64_t bd[2] = {tr.b ? n : k, tr.b ? k : n};
  wf_tensor *in[2] = {filled(dt, ad, 2, 4, 0), filled(dt, bd, 2, 5, 0)};
  wf_tensor *cpu, *gpu;
  double tol = dt == WF_FLOAT32 ? 1e-5 : 1e-13;

  run_twins("MatMul", in, 2, matmul_attrs, &tr, &cpu, &gpu);
  assert_int_equal(wf_tensor_count(cpu), m * n);
  assert_int_equal(wf_tensor_count(gpu), m * n);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double bound = 0, c = value_at(cpu, i * n + j),
             g = value_at(gpu, i * n + j);
      for (int64_t p = 0; p < k; p++) {
        double a = value_at(in[0], tr.a ? p * m + i : i * k + p);
        double b = value_at(in[1], tr.b ? j * k + p : p * n + j);
        bound += fabs(a * b);
      }
      if (fabs(c - g) > tol * bound)
        fail_msg("MatMul %s (%lld, %lld) x (%lld, %lld)%s%s: (%lld, %lld): "
                 "gpu %.17g, cpu %.17g, allowed %g",
                 wf_dtype_name(dt), (long long)m, (long long)k, (long long)k,
                 (long long)n, tr.a ? " transpose_a" : "",
                 tr.b ? " transpose_b" : "", (long long)i, (long long)j, g, c,
                 tol * bound);
    }
  wf_tensor_release(cpu);
  wf_tensor_release(gpu);
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
}

static void test_matmul_matches_the_cpu(void **state) {
  for (int t = 0; t < 2; t++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        matmul_case(float_types[t], 33, 70, 17, (transposes){ta, tb});
        matmul_case(float_types[t], 1, 1, 1, (transposes){ta, tb});
      }
  /* An empty sum gives zeros; an empty product nothing. */
  matmul_case(WF_FLOAT32, 4, 0, 3, (transposes){0, 0});
  matmul_case(WF_FLOAT64, 0, 5, 3, (transposes){1, 0});
}

/* ---- uniform initializers ------------------------------------------------ */

typedef struct init_case {
  const char *op;
  wf_dtype dt;
  int64_t dims[4];
  int rank;
  int64_t seed, seed2;
} init_case;

static void init_attrs(wf_node_desc *d, const void *arg) {
  const init_case *c = arg;
  wf_node_desc_set_attr_dtype(d, "dtype", c->dt);
  wf_node_desc_set_attr_shape(d, "shape", c->dims, c->rank);
  wf_node_desc_set_attr_int(d, "seed", c->seed);
  wf_node_desc_set_attr_int(d, "seed2", c->seed2);
  if (strcmp(c->op, "RandomUniform") == 0) {
    wf_node_desc_set_attr_float(d, "minval", -0.25);
    wf_node_desc_set_attr_float(d, "maxval", 4.0);
  }
}

/* The initializer of case c, named "init" (its stream key when the seeds
 * are 0), alone in a session on device, for steps 0 and 1. */
static void run_init(const init_case *c, const char *device,
                     wf_tensor **step0, wf_tensor **step1) {
  wf_graph *g = wf_graph_new(rt);
  wf_output out = {op_node(g, c->op, "init", NULL, 0, init_attrs, c, device),
                   0};
  wf_session *s = wf_session_new(g, st);
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();

  assert_non_null(s);
  opt.trace_level = WF_TRACE_NODES;
  if (wf_session_run(s, &opt, NULL, NULL, 0, &out, step0, 1, NULL, 0, md,
                     st) ||
      wf_session_run(s, &opt, NULL, NULL, 0, &out, step1, 1, NULL, 0, md,
                     st))
    fail_msg("%s on %s: %s", c->op, device, wf_status_message(st));
  expect_ran_on(md, "init", device,
                strcmp(device, "cuda:0") == 0 ? "device-cuda" : NULL);
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_uniform_initializers_match_the_cpu_bit_for_bit(
    void **state) {
  static const init_case cases[] = {
      {"RandomUniform", WF_FLOAT32, {1001}, 1, 42, 7},
      {"RandomUniform", WF_FLOAT64, {3, 333}, 2, 0, 0},
      {"GlorotUniform", WF_FLOAT32, {3, 3, 16, 32}, 4, 0, 0},
      {"GlorotUniform", WF_FLOAT64, {5, 7}, 2, 1, 0},
      {"HeUniform", WF_FLOAT32, {784, 256}, 2, 0, 0},
      {"HeUniform", WF_FLOAT64, {9}, 1, 0, 3},
  };

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wf_tensor *cpu[2], *gpu[2];
    char what[96];
    run_init(&cases[i], "cpu:0", &cpu[0], &cpu[1]);
    run_init(&cases[i], "cuda:0", &gpu[0], &gpu[1]);
    for (int s = 0; s < 2; s++) {
      snprintf(what, sizeof what, "%s %s step %d", cases[i].op,
               wf_dtype_name(cases[i].dt), s);
      expect_close(what, cpu[s], gpu[s], 0);
      wf_tensor_release(cpu[s]);
      wf_tensor_release(gpu[s]);
    }
  }
}

/* ---- helpers of the device-memory kernels' cases --------------------------- */

/* Each element within rel * max |cpu| of the CPU's (NaN matches NaN,
 * infinities must be equal). */
static void expect_near(const char *what, const wf_tensor *cpu,
                        const wf_tensor *gpu, double rel) {
  wf_shape a, b;
  double big = 0;

  wf_tensor_shape(cpu, &a);
  wf_tensor_shape(gpu, &b);
  assert_true(wf_shape_equal(&a, &b));
  assert_int_equal(wf_tensor_dtype(cpu), wf_tensor_dtype(gpu));
  for (int64_t i = 0; i < wf_tensor_count(cpu); i++) {
    double c = value_at(cpu, i);
    if (isfinite(c) && fabs(c) > big)
      big = fabs(c);
  }
  for (int64_t i = 0; i < wf_tensor_count(cpu); i++) {
    double c = value_at(cpu, i), g = value_at(gpu, i);
    if ((isnan(c) && isnan(g)) || c == g)
      continue;
    if (!isfinite(c) || !isfinite(g) || fabs(c - g) > rel * big)
      fail_msg("%s: element %lld: gpu %.17g, cpu %.17g (tolerance %g)", what,
               (long long)i, g, c, rel * big);
  }
}

static double near_tol(wf_dtype dt) { return dt == WF_FLOAT32 ? 1e-6 : 1e-13; }

/* An integer tensor of dims holding values. */
static wf_tensor *int_tensor(wf_dtype dt, const int64_t *dims, int rank,
                             const int64_t *values) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);

  if (!t)
    fail_msg("tensor: %s", wf_status_message(st));
  for (int64_t i = 0; i < wf_tensor_count(t); i++) {
    if (dt == WF_INT32)
      ((int32_t *)wf_tensor_data(t))[i] = (int32_t)values[i];
    else
      ((int64_t *)wf_tensor_data(t))[i] = values[i];
  }
  return t;
}

static wf_tensor *scalar_of(wf_dtype dt, double v) {
  wf_tensor *t = wf_tensor_new(dt, NULL, 0, st);

  if (!t)
    fail_msg("tensor: %s", wf_status_message(st));
  if (dt == WF_FLOAT32)
    *(float *)wf_tensor_data(t) = (float)v;
  else if (dt == WF_FLOAT64)
    *(double *)wf_tensor_data(t) = v;
  else
    *(int64_t *)wf_tensor_data(t) = (int64_t)v;
  return t;
}

/* Runs op twice on inputs and compares: ulps >= 0 with expect_close, ulps
 * < 0 with expect_near(-ulps). Releases the inputs. */
static void twin_check(const char *op, const char *what, wf_tensor **in,
                       int nin, attrs_fn *attrs, const void *arg,
                       double ulps) {
  wf_tensor *cpu, *gpu;
  char buf[160];

  run_twins(op, in, nin, attrs, arg, &cpu, &gpu);
  snprintf(buf, sizeof buf, "%s %s (output %d)", op, what, fetch_index);
  if (ulps >= 0)
    expect_close(buf, cpu, gpu, ulps);
  else
    expect_near(buf, cpu, gpu, -ulps);
  wf_tensor_release(cpu);
  wf_tensor_release(gpu);
  for (int i = 0; i < nin; i++)
    wf_tensor_release(in[i]);
}

/* Attributes given as a list. */
typedef struct attr_set {
  int n;
  struct {
    const char *name;
    char kind; /* 'i' int, 'f' float, 'b' bool, 's' string, 'l' int list,
                  'd' dtype */
    int64_t i;
    double f;
    const char *s;
    int64_t list[8];
    int count;
  } a[6];
} attr_set;

static void set_attrs(wf_node_desc *d, const void *arg) {
  const attr_set *as = arg;

  for (int k = 0; as && k < as->n; k++) {
    const char *nm = as->a[k].name;
    switch (as->a[k].kind) {
    case 'i': wf_node_desc_set_attr_int(d, nm, as->a[k].i); break;
    case 'f': wf_node_desc_set_attr_float(d, nm, as->a[k].f); break;
    case 'b': wf_node_desc_set_attr_bool(d, nm, (int)as->a[k].i); break;
    case 's': wf_node_desc_set_attr_string(d, nm, as->a[k].s); break;
    case 'd': wf_node_desc_set_attr_dtype(d, nm, (wf_dtype)as->a[k].i); break;
    case 'l':
      wf_node_desc_set_attr_int_list(d, nm, as->a[k].list, as->a[k].count);
      break;
    }
  }
}

/* ---- elementwise ---------------------------------------------------------- */

static void test_more_unary_ops_match_the_cpu(void **state) {
  static const struct {
    const char *op;
    double ulps;
  } cases[] = {{"Neg", 0},   {"Square", 0},    {"Abs", 0},  {"Sqrt", 16},
               {"Rsqrt", 16}, {"Exp", 16},     {"Log", 16}, {"Elu", 16},
               {"Softplus", 16}, {"Gelu", 16}, {"LeakyRelu", 0}};
  static const int64_t dims[] = {5, 7, 11};
  attr_set approx = {1, {{.name = "approximate", .kind = 'b', .i = 1}}};
  attr_set alpha = {1, {{.name = "alpha", .kind = 'f', .f = 0.3}}};

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int t = 0; t < 2; t++) {
      wf_tensor *x = filled(float_types[t], dims, 3, 7, 1);
      twin_check(cases[c].op, wf_dtype_name(float_types[t]), &x, 1,
                 set_attrs,
                 strcmp(cases[c].op, "LeakyRelu") == 0 ? &alpha : NULL,
                 cases[c].ulps);
    }
  for (int t = 0; t < 2; t++) {
    wf_tensor *x = filled(float_types[t], dims, 3, 8, 1);
    twin_check("Gelu", "approximate", &x, 1, set_attrs, &approx, 16);
  }
}

static void test_activation_gradients_match_the_cpu(void **state) {
  static const struct {
    const char *op;
    int exact;
  } cases[] = {{"ReluGrad", 1},    {"SigmoidGrad", 0},   {"TanhGrad", 0},
               {"SqrtGrad", 0},    {"RsqrtGrad", 0},     {"EluGrad", 1},
               {"LeakyReluGrad", 1}, {"SoftplusGrad", 0}, {"AbsGrad", 1},
               {"GeluGrad", 0}};
  static const int64_t dims[] = {6, 17};
  attr_set alpha = {1, {{.name = "alpha", .kind = 'f', .f = 0.2}}};

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int t = 0; t < 2; t++) {
      wf_tensor *in[2] = {filled(float_types[t], dims, 2, 9, 0),
                          filled(float_types[t], dims, 2, 10, 0)};
      twin_check(cases[c].op, wf_dtype_name(float_types[t]), in, 2,
                 set_attrs,
                 strcmp(cases[c].op, "LeakyReluGrad") == 0 ? &alpha : NULL,
                 cases[c].exact ? 0 : -near_tol(float_types[t]) * 8);
    }
}

static void test_div_maximum_minimum_pow_match_the_cpu(void **state) {
  static const char *const ops[] = {"Div", "Maximum", "Minimum", "Pow"};
  static const int64_t full[] = {3, 4, 5}, col[] = {3, 1, 5}, row[] = {4, 1};

  for (int o = 0; o < 4; o++)
    for (int t = 0; t < 2; t++) {
      double ulps = o == 3 ? 16 : 0;
      wf_tensor *a[2] = {filled(float_types[t], full, 3, 1, 1),
                         filled(float_types[t], full, 3, 2, 1)};
      wf_tensor *b[2] = {filled(float_types[t], col, 3, 3, 1),
                         filled(float_types[t], row, 2, 4, 1)};
      twin_check(ops[o], "equal shapes", a, 2, NULL, NULL, ulps);
      twin_check(ops[o], "broadcast", b, 2, NULL, NULL, ulps);
    }
}

static void dst_attr(wf_node_desc *d, const void *arg) {
  wf_node_desc_set_attr_dtype(d, "DstT", *(const wf_dtype *)arg);
}

static void test_add_n_cast_and_fills_match_the_cpu(void **state) {
  static const int64_t dims[] = {4, 9};
  static const wf_dtype to[] = {WF_FLOAT32, WF_FLOAT64, WF_INT32, WF_INT64,
                                WF_INT8,    WF_UINT8,   WF_BOOL};
  attr_set n3 = {1, {{.name = "N", .kind = 'i', .i = 3}}};

  for (int t = 0; t < 2; t++) {
    wf_tensor *in[3] = {filled(float_types[t], dims, 2, 11, 1),
                        filled(float_types[t], dims, 2, 12, 1),
                        filled(float_types[t], dims, 2, 13, 1)};
    twin_check("AddN", wf_dtype_name(float_types[t]), in, 3, set_attrs, &n3,
               0);
    for (size_t k = 0; k < sizeof to / sizeof to[0]; k++) {
      wf_tensor *x = filled(float_types[t], dims, 2, 14, 1);
      twin_check("Cast", wf_dtype_name(to[k]), &x, 1, dst_attr, &to[k], 0);
    }
    wf_tensor *x = filled(float_types[t], dims, 2, 15, 0);
    twin_check("OnesLike", "", &x, 1, NULL, NULL, 0);
    x = filled(float_types[t], dims, 2, 15, 0);
    twin_check("ZerosLike", "", &x, 1, NULL, NULL, 0);
  }
}

static void test_shape_ops_match_the_cpu(void **state) {
  static const int64_t dims[] = {2, 3, 4}, to[] = {4, -1};
  static const int64_t two[] = {2};
  attr_set axis = {1, {{.name = "axis", .kind = 'i', .i = -2}}};
  attr_set out64 = {1, {{.name = "out_type", .kind = 'd', .i = WF_INT64}}};
  wf_tensor *in[2] = {filled(WF_FLOAT32, dims, 3, 16, 0),
                      int_tensor(WF_INT64, two, 1, to)};
  wf_tensor *x;

  twin_check("Reshape", "(2, 3, 4) to (4, -1)", in, 2, NULL, NULL, 0);
  x = filled(WF_FLOAT64, dims, 3, 17, 0);
  twin_check("ExpandDims", "axis -2", &x, 1, set_attrs, &axis, 0);
  x = filled(WF_FLOAT32, dims, 3, 18, 0);
  twin_check("Identity", "", &x, 1, NULL, NULL, 0);
  x = filled(WF_FLOAT32, dims, 3, 18, 0);
  {
    wf_tensor *cpu, *gpu;
    run_twins("Shape", &x, 1, set_attrs, &out64, &cpu, &gpu);
    assert_int_equal(wf_tensor_nbytes(cpu), wf_tensor_nbytes(gpu));
    assert_memory_equal(wf_tensor_data(cpu), wf_tensor_data(gpu),
                        wf_tensor_nbytes(cpu));
    wf_tensor_release(cpu);
    wf_tensor_release(gpu);
    wf_tensor_release(x);
  }
}

/* ---- reductions ----------------------------------------------------------- */

static void test_reductions_match_the_cpu(void **state) {
  static const char *const ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
  static const int64_t dims[] = {5, 3, 130};
  attr_set sets[] = {
      {0},
      {2, {{.name = "axes", .kind = 'l', .list = {1}, .count = 1}, {.name = "keep_dims", .kind = 'b', .i = 1}}},
      {1, {{.name = "axes", .kind = 'l', .list = {0, 2}, .count = 2}}},
      {1, {{.name = "axes", .kind = 'l', .list = {-1}, .count = 1}}},
  };

  for (int o = 0; o < 5; o++)
    for (int t = 0; t < 2; t++)
      for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        /* Prod over many elements overflows: it gets small inputs. */
        wf_tensor *x = filled(float_types[t], dims, 3, 19, o != 4 && k == 1);
        char what[64];
        snprintf(what, sizeof what, "%s axes set %d",
                 wf_dtype_name(float_types[t]), (int)k);
        twin_check(ops[o], what, &x, 1, set_attrs, &sets[k],
                   o == 2 || o == 3 ? 0 : -near_tol(float_types[t]) * 4);
      }
}

static void test_reduction_gradients_match_the_cpu(void **state) {
  static const int64_t xd[] = {4, 6, 70}, red[] = {4, 1, 70}, like[] = {6, 1};
  attr_set keep = {2, {{.name = "axes", .kind = 'l', .list = {1}, .count = 1},
                       {.name = "keep_dims", .kind = 'b', .i = 1}}};

  for (int t = 0; t < 2; t++) {
    wf_dtype dt = float_types[t];
    wf_tensor *in[3];
    in[0] = filled(dt, red, 3, 20, 0);
    in[1] = filled(dt, xd, 3, 21, 0);
    twin_check("SumGrad", wf_dtype_name(dt), in, 2, set_attrs, &keep,
               -near_tol(dt));
    in[0] = filled(dt, red, 3, 20, 0);
    in[1] = filled(dt, xd, 3, 21, 0);
    twin_check("MeanGrad", wf_dtype_name(dt), in, 2, set_attrs, &keep,
               -near_tol(dt));
    {
      /* y: the CPU's Max of x, so that the ties are real. */
      wf_tensor *x = filled(dt, xd, 3, 22, 0), *ycpu, *ygpu;
      run_twins("Max", &x, 1, set_attrs, &keep, &ycpu, &ygpu);
      in[0] = filled(dt, red, 3, 23, 0);
      in[1] = x;
      in[2] = ycpu;
      twin_check("MaxMinGrad", wf_dtype_name(dt), in, 3, set_attrs, &keep,
                 -near_tol(dt));
      wf_tensor_release(ygpu);
    }
    in[0] = filled(dt, xd, 3, 24, 0);
    in[1] = filled(dt, like, 2, 25, 0);
    twin_check("SumToLike", wf_dtype_name(dt), in, 2, NULL, NULL,
               -near_tol(dt) * 4);
  }
}

/* ---- nn ------------------------------------------------------------------- */

typedef struct conv_case {
  int nchw;
  const char *padding;
  int64_t stride, dilation;
  int64_t x[4]; /* N, H, W, C */
  int64_t f[4]; /* KH, KW, C, C_out */
} conv_case;

static void conv_attrs(wf_node_desc *d, const void *arg) {
  const conv_case *c = arg;
  int64_t s[4] = {1, c->stride, c->stride, 1};
  int64_t dl[4] = {1, c->dilation, c->dilation, 1};
  int64_t pads[8] = {0, 0, 2, 0, 1, 2, 0, 0};

  if (c->nchw) {
    s[1] = 1, s[2] = c->stride, s[3] = c->stride;
    dl[1] = 1, dl[2] = c->dilation, dl[3] = c->dilation;
    pads[2] = 0, pads[3] = 0, pads[4] = 2, pads[5] = 0, pads[6] = 1,
    pads[7] = 2;
  }
  wf_node_desc_set_attr_int_list(d, "strides", s, 4);
  wf_node_desc_set_attr_int_list(d, "dilations", dl, 4);
  wf_node_desc_set_attr_string(d, "padding", c->padding);
  if (strcmp(c->padding, "EXPLICIT") == 0)
    wf_node_desc_set_attr_int_list(d, "explicit_paddings", pads, 8);
  wf_node_desc_set_attr_string(d, "data_format", c->nchw ? "NCHW" : "NHWC");
}

static void conv_case_run(const conv_case *c, wf_dtype dt) {
  int64_t xd[4] = {c->x[0], c->x[1], c->x[2], c->x[3]};
  double tol = dt == WF_FLOAT32 ? 1e-5 : 1e-12;
  wf_tensor *in[3], *ycpu, *ygpu;
  wf_shape ys;
  char what[96];

  if (c->nchw)
    xd[1] = c->x[3], xd[2] = c->x[1], xd[3] = c->x[2];
  snprintf(what, sizeof what, "%s %s %s stride %d dilation %d",
           wf_dtype_name(dt), c->nchw ? "NCHW" : "NHWC", c->padding,
           (int)c->stride, (int)c->dilation);
  in[0] = filled(dt, xd, 4, 26, 0);
  in[1] = filled(dt, c->f, 4, 27, 0);
  run_twins("Conv2D", in, 2, conv_attrs, c, &ycpu, &ygpu);
  expect_near(what, ycpu, ygpu, tol);
  wf_tensor_shape(ycpu, &ys);
  wf_tensor_release(ygpu);
  wf_tensor_release(in[0]);
  {
    wf_tensor *g[3] = {int_tensor(WF_INT32, (int64_t[]){4}, 1, xd), in[1],
                       filled(dt, ys.dims, 4, 28, 0)};
    twin_check("Conv2DBackpropInput", what, g, 3, conv_attrs, c, -tol);
  }
  {
    wf_tensor *g[3] = {filled(dt, xd, 4, 26, 0),
                       int_tensor(WF_INT64, (int64_t[]){4}, 1, c->f),
                       filled(dt, ys.dims, 4, 29, 0)};
    twin_check("Conv2DBackpropFilter", what, g, 3, conv_attrs, c, -tol);
  }
  wf_tensor_release(ycpu);
}

static void test_conv2d_and_backprops_match_the_cpu(void **state) {
  static const conv_case cases[] = {
      {0, "SAME", 1, 1, {2, 9, 8, 3}, {3, 3, 3, 5}},
      {0, "SAME", 2, 1, {2, 10, 9, 4}, {3, 3, 4, 6}}, /* asymmetric pads */
      {1, "SAME", 2, 1, {2, 10, 9, 4}, {2, 2, 4, 3}},
      {0, "VALID", 2, 1, {1, 11, 12, 2}, {3, 2, 2, 4}},
      {1, "VALID", 1, 2, {2, 12, 10, 3}, {3, 3, 3, 2}}, /* dilated */
      {0, "EXPLICIT", 1, 1, {2, 7, 8, 3}, {3, 3, 3, 4}},
      {1, "EXPLICIT", 2, 1, {1, 8, 7, 2}, {3, 2, 2, 3}},
  };

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int t = 0; t < 2; t++)
      conv_case_run(&cases[i], float_types[t]);
}

typedef struct pool_case {
  int nchw;
  const char *padding;
  int64_t k, s;
} pool_case;

static void pool_attrs(wf_node_desc *d, const void *arg) {
  const pool_case *c = arg;
  int64_t k[4] = {1, c->k, c->k, 1}, s[4] = {1, c->s, c->s, 1};

  if (c->nchw) {
    k[1] = 1, k[3] = c->k;
    s[1] = 1, s[3] = c->s;
  }
  wf_node_desc_set_attr_int_list(d, "ksize", k, 4);
  wf_node_desc_set_attr_int_list(d, "strides", s, 4);
  wf_node_desc_set_attr_string(d, "padding", c->padding);
  wf_node_desc_set_attr_string(d, "data_format", c->nchw ? "NCHW" : "NHWC");
}

static void test_pools_and_gradients_match_the_cpu_bit_for_bit(void **state) {
  static const pool_case cases[] = {{0, "VALID", 2, 2}, {0, "SAME", 3, 2},
                                    {1, "SAME", 3, 1}, {1, "VALID", 3, 2}};
  static const int64_t xd[] = {2, 9, 8, 3};

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int t = 0; t < 2; t++) {
      wf_dtype dt = float_types[t];
      wf_tensor *x = filled(dt, xd, 4, 30, 1), *cpu, *gpu, *in[2];
      wf_shape ys;
      char what[64];
      snprintf(what, sizeof what, "%s case %d", wf_dtype_name(dt), (int)i);
      run_twins("MaxPool", &x, 1, pool_attrs, &cases[i], &cpu, &gpu);
      expect_close(what, cpu, gpu, 0);
      wf_tensor_shape(cpu, &ys);
      wf_tensor_release(cpu);
      wf_tensor_release(gpu);
      x = filled(dt, xd, 4, 30, 1);
      twin_check("AvgPool", what, &x, 1, pool_attrs, &cases[i], 0);
      /* Ties in the input: small integers. */
      in[0] = filled(dt, xd, 4, 31, 0);
      for (int64_t j = 0; j < wf_tensor_count(in[0]); j++) {
        double v = floor(value_at(in[0], j));
        if (dt == WF_FLOAT32)
          ((float *)wf_tensor_data(in[0]))[j] = (float)v;
        else
          ((double *)wf_tensor_data(in[0]))[j] = v;
      }
      in[1] = filled(dt, ys.dims, 4, 32, 0);
      twin_check("MaxPoolGrad", what, in, 2, pool_attrs, &cases[i], 0);
      in[0] = int_tensor(WF_INT32, (int64_t[]){4}, 1, xd);
      in[1] = filled(dt, ys.dims, 4, 33, 0);
      twin_check("AvgPoolGrad", what, in, 2, pool_attrs, &cases[i], 0);
    }
}

static void test_softmax_and_losses_match_the_cpu(void **state) {
  static const int64_t xd[] = {7, 300}, sd[] = {3, 4, 10}, nd[] = {7};
  static const int64_t labels[] = {0, 299, 5, 17, 100, 3, 250};

  for (int t = 0; t < 2; t++) {
    wf_dtype dt = float_types[t];
    double tol = -near_tol(dt) * 4;
    wf_tensor *x = filled(dt, xd, 2, 34, 0), *in[2];
    twin_check("Softmax", wf_dtype_name(dt), &x, 1, NULL, NULL, tol);
    x = filled(dt, sd, 3, 35, 0);
    twin_check("LogSoftmax", wf_dtype_name(dt), &x, 1, NULL, NULL, tol);
    in[0] = filled(dt, xd, 2, 36, 0);
    in[1] = filled(dt, xd, 2, 37, 0);
    twin_check("SoftmaxGrad", wf_dtype_name(dt), in, 2, NULL, NULL, tol);
    in[0] = filled(dt, xd, 2, 38, 0);
    in[1] = filled(dt, xd, 2, 39, 0);
    twin_check("LogSoftmaxGrad", wf_dtype_name(dt), in, 2, NULL, NULL, tol);
    for (fetch_index = 0; fetch_index < 2; fetch_index++) {
      in[0] = filled(dt, xd, 2, 40, 0);
      in[1] = filled(dt, xd, 2, 41, 0);
      twin_check("SoftmaxCrossEntropyWithLogits", wf_dtype_name(dt), in, 2,
                 NULL, NULL, tol);
      in[0] = filled(dt, xd, 2, 42, 0);
      in[1] = int_tensor(t ? WF_INT64 : WF_INT32, nd, 1, labels);
      twin_check("SparseSoftmaxCrossEntropyWithLogits", wf_dtype_name(dt),
                 in, 2, NULL, NULL, tol);
    }
    fetch_index = 0;
  }
}

static void test_batch_norm_matches_the_cpu(void **state) {
  static const int64_t xd[] = {4, 5, 6, 3}, cd[] = {3}, cd_nchw[] = {5};
  attr_set modes[] = {
      {3, {{.name = "epsilon", .kind = 'f', .f = 1e-3}, {.name = "is_training", .kind = 'b', .i = 1},
           {.name = "data_format", .kind = 's', .s = "NHWC"}}},
      {3, {{.name = "epsilon", .kind = 'f', .f = 0.0}, {.name = "is_training", .kind = 'b', .i = 0},
           {.name = "data_format", .kind = 's', .s = "NHWC"}}},
      {3, {{.name = "epsilon", .kind = 'f', .f = 1e-5}, {.name = "is_training", .kind = 'b', .i = 1},
           {.name = "data_format", .kind = 's', .s = "NCHW"}}},
  };

  for (int m = 0; m < 3; m++)
    for (int t = 0; t < 2; t++) {
      wf_dtype dt = float_types[t];
      const int64_t *c = m == 2 ? cd_nchw : cd;
      char what[64];
      snprintf(what, sizeof what, "%s mode %d", wf_dtype_name(dt), m);
      for (fetch_index = 0; fetch_index < 3; fetch_index++) {
        wf_tensor *in[7];
        wf_tensor *var = filled(dt, c, 1, 45, 0);
        for (int64_t j = 0; j < wf_tensor_count(var); j++) {
          double v = fabs(value_at(var, j)) + 0.5;
          if (dt == WF_FLOAT32)
            ((float *)wf_tensor_data(var))[j] = (float)v;
          else
            ((double *)wf_tensor_data(var))[j] = v;
        }
        in[0] = filled(dt, xd, 4, 43, 0);
        in[1] = filled(dt, c, 1, 44, 0);
        in[2] = filled(dt, c, 1, 46, 0);
        in[3] = filled(dt, c, 1, 47, 0);
        in[4] = var;
        twin_check("BatchNorm", what, in, 5, set_attrs, &modes[m],
                   -near_tol(dt) * 8);
        /* BatchNormGrad(dy, x, scale, mean, variance, dmean, dvar) */
        var = filled(dt, c, 1, 45, 0);
        for (int64_t j = 0; j < wf_tensor_count(var); j++) {
          double v = fabs(value_at(var, j)) + 0.5;
          if (dt == WF_FLOAT32)
            ((float *)wf_tensor_data(var))[j] = (float)v;
          else
            ((double *)wf_tensor_data(var))[j] = v;
        }
        in[0] = filled(dt, xd, 4, 48, 0);
        in[1] = filled(dt, xd, 4, 43, 0);
        in[2] = filled(dt, c, 1, 44, 0);
        in[3] = filled(dt, c, 1, 47, 0);
        in[4] = var;
        in[5] = filled(dt, c, 1, 49, 0);
        in[6] = filled(dt, c, 1, 50, 0);
        twin_check("BatchNormGrad", what, in, 7, set_attrs, &modes[m],
                   -near_tol(dt) * 8);
      }
      fetch_index = 0;
    }
}

static void test_bias_add_and_grad_match_the_cpu(void **state) {
  static const int64_t xd[] = {3, 4, 5, 6}, bn[] = {6}, bc[] = {4};
  attr_set nhwc = {1, {{.name = "data_format", .kind = 's', .s = "NHWC"}}};
  attr_set nchw = {1, {{.name = "data_format", .kind = 's', .s = "NCHW"}}};

  for (int t = 0; t < 2; t++) {
    wf_dtype dt = float_types[t];
    wf_tensor *in[2] = {filled(dt, xd, 4, 51, 1), filled(dt, bn, 1, 52, 0)};
    twin_check("BiasAdd", "NHWC", in, 2, set_attrs, &nhwc, 0);
    in[0] = filled(dt, xd, 4, 51, 1);
    in[1] = filled(dt, bc, 1, 53, 0);
    twin_check("BiasAdd", "NCHW", in, 2, set_attrs, &nchw, 0);
    in[0] = filled(dt, xd, 4, 54, 0);
    twin_check("BiasAddGrad", "NHWC", in, 1, set_attrs, &nhwc,
               -near_tol(dt) * 4);
    in[0] = filled(dt, xd, 4, 54, 0);
    twin_check("BiasAddGrad", "NCHW", in, 1, set_attrs, &nchw,
               -near_tol(dt) * 4);
  }
}

/* ---- array ---------------------------------------------------------------- */

static void test_gather_and_scatters_match_the_cpu_bit_for_bit(void **state) {
  static const int64_t pd[] = {6, 5, 4}, id[] = {2, 3};
  static const int64_t idx[] = {5, 0, 2, 2, 5, 1};
  attr_set axis0 = {1, {{.name = "axis", .kind = 'i', .i = 0}}}, axis1 = {1, {{.name = "axis", .kind = 'i', .i = 1}}};

  for (int t = 0; t < 2; t++) {
    wf_dtype dt = float_types[t];
    wf_tensor *in[3];
    in[0] = filled(dt, pd, 3, 55, 1);
    in[1] = int_tensor(WF_INT64, id, 2, idx);
    twin_check("Gather", "axis 0", in, 2, set_attrs, &axis0, 0);
    in[0] = filled(dt, pd, 3, 55, 1);
    in[1] = int_tensor(WF_INT32, id, 2, (const int64_t[]){4, 0, 2, 2, 3, 1});
    twin_check("Gather", "axis 1", in, 2, set_attrs, &axis1, 0);
    /* GatherGrad along axis 1: dy (6, 2, 3, 4). */
    in[0] = int_tensor(WF_INT64, (int64_t[]){3}, 1, pd);
    in[1] = int_tensor(WF_INT32, id, 2, (const int64_t[]){4, 0, 2, 2, 3, 1});
    in[2] = filled(dt, (int64_t[]){6, 2, 3, 4}, 4, 56, 0);
    twin_check("GatherGrad", "axis 1", in, 3, set_attrs, &axis1, 0);
    /* UnsortedSegmentSumToShape: values (6, 5, 4) into (9, 5, 4). */
    in[0] = filled(dt, (int64_t[]){6, 5, 4}, 3, 57, 0);
    in[1] = int_tensor(WF_INT64, (int64_t[]){6}, 1, idx);
    in[2] = int_tensor(WF_INT64, (int64_t[]){3}, 1,
                       (const int64_t[]){9, 5, 4});
    twin_check("UnsortedSegmentSumToShape", wf_dtype_name(dt), in, 3, NULL,
               NULL, 0);
  }
}

/* ---- variables ------------------------------------------------------------ */

typedef struct var_case {
  const char *op;
  int nres;           /* variable and slots */
  int nrest;          /* the other inputs */
  wf_tensor *rest[8]; /* owned by the case */
  attr_set attrs;
} var_case;

static wf_node *var_node(wf_graph *g, const char *op, const char *name,
                         wf_dtype dt, const wf_shape *s, const wf_output *in,
                         int nin, const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node *n;

  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  if (strcmp(op, "AssignVariable") != 0) {
    wf_node_desc_set_attr_dtype(d, "dtype", dt);
    wf_node_desc_set_attr_shape(d, "shape", s->dims, s->rank);
  }
  wf_node_desc_set_device(d, device);
  if (!(n = wf_node_desc_finish(d, st)))
    fail_msg("%s: %s", name, wf_status_message(st));
  return n;
}

/* The op on variables initialised alike on cpu:0 and cuda:0; then every
 * variable and slot (and the variable read on cuda:0) must have the same
 * bits. */
static void var_case_run(var_case *c, wf_dtype dt, const int64_t *dims,
                         int rank) {
  static const char *const devs[] = {"cpu:0", "cuda:0"};
  wf_graph *g = wf_graph_new(rt);
  wf_output feeds[16], reads[2 * 4 + 1];
  wf_tensor *values[16], *got[2 * 4 + 1];
  wf_node *assigns[8], *ops[2];
  wf_shape s;
  wf_session *sess;
  int nf = 0, na = 0;
  char name[64];

  memset(&s, 0, sizeof s);
  s.rank = rank;
  for (int i = 0; i < rank; i++)
    s.dims[i] = dims[i];
  for (int k = 0; k < c->nres; k++) {
    values[nf] = filled(dt, dims, rank, 60 + k, 0);
    if (strcmp(c->op, "ApplyAdagrad") == 0 ||
        strcmp(c->op, "SparseApplyAdagrad") == 0 || k >= 1)
      for (int64_t j = 0; j < wf_tensor_count(values[nf]); j++) {
        double v = k >= 1 ? fabs(value_at(values[nf], j)) + 0.25
                          : value_at(values[nf], j);
        if (dt == WF_FLOAT32)
          ((float *)wf_tensor_data(values[nf]))[j] = (float)v;
        else
          ((double *)wf_tensor_data(values[nf]))[j] = v;
      }
    feeds[nf] = placeholder(g, dt, dims, rank);
    nf++;
  }
  for (int i = 0; i < c->nrest; i++) {
    wf_shape rs;
    wf_tensor_shape(c->rest[i], &rs);
    values[nf] = c->rest[i];
    feeds[nf] = placeholder(g, wf_tensor_dtype(c->rest[i]), rs.dims, rs.rank);
    nf++;
  }
  for (int d = 0; d < 2; d++) {
    wf_output in[16];
    for (int k = 0; k < c->nres; k++) {
      wf_output a[2];
      snprintf(name, sizeof name, "%s_var%d", d ? "gpu" : "cpu", k);
      /* The variable, its reads and its updates share one device (the
       * first request in the group decides it): cuda:0 for the GPU's. */
      in[k] = (wf_output){var_node(g, "VarHandle", name, dt, &s, NULL, 0,
                                   devs[d]),
                          0};
      a[0] = in[k];
      a[1] = feeds[k];
      snprintf(name, sizeof name, "%s_init%d", d ? "gpu" : "cpu", k);
      assigns[na++] =
          var_node(g, "AssignVariable", name, dt, &s, a, 2, devs[d]);
      snprintf(name, sizeof name, "%s_read%d", d ? "gpu" : "cpu", k);
      reads[2 * k + d] = (wf_output){
          var_node(g, "ReadVariable", name, dt, &s, &in[k], 1, devs[d]), 0};
    }
    for (int i = 0; i < c->nrest; i++)
      in[c->nres + i] = feeds[c->nres + i];
    ops[d] = op_node(g, c->op, d ? "on_gpu" : "on_cpu", in,
                     c->nres + c->nrest, set_attrs, &c->attrs, devs[d]);
    if (d == 1)
      reads[2 * c->nres] = (wf_output){
          var_node(g, "ReadVariable", "gpu_read_on_gpu", dt, &s, in, 1,
                   "cuda:0"),
          0};
  }
  sess = wf_session_new(g, st);
  assert_non_null(sess);
  {
    wf_run_options opt = WF_RUN_OPTIONS_INIT;
    wf_run_metadata *md = wf_run_metadata_new();
    opt.trace_level = WF_TRACE_NODES;
    if (wf_session_run(sess, NULL, feeds, values, c->nres, NULL, NULL, 0,
                       assigns, na, NULL, st) ||
        wf_session_run(sess, &opt, feeds + c->nres, values + c->nres,
                       c->nrest, NULL, NULL, 0, ops, 2, md, st) ||
        wf_session_run(sess, NULL, NULL, NULL, 0, reads, got,
                       2 * c->nres + 1, NULL, 0, NULL, st))
      fail_msg("%s %s: %s", c->op, wf_dtype_name(dt), wf_status_message(st));
    expect_ran_on(md, "on_gpu", "cuda:0", "device-cuda");
    wf_run_metadata_free(md);
  }
  for (int k = 0; k < c->nres; k++) {
    snprintf(name, sizeof name, "%s %s variable %d", c->op, wf_dtype_name(dt),
             k);
    expect_close(name, got[2 * k], got[2 * k + 1], 0);
  }
  snprintf(name, sizeof name, "%s %s ReadVariable on cuda:0", c->op,
           wf_dtype_name(dt));
  expect_close(name, got[1], got[2 * c->nres], 0);
  for (int i = 0; i < 2 * c->nres + 1; i++)
    wf_tensor_release(got[i]);
  for (int i = 0; i < nf; i++)
    wf_tensor_release(values[i]);
  wf_session_free(sess);
  wf_graph_free(g);
}

static void test_variable_updates_match_the_cpu_bit_for_bit(void **state) {
  static const int64_t dims[] = {7, 5};
  static const int64_t rows[] = {6, 0, 3, 6, 2};

  for (int t = 0; t < 2; t++) {
    wf_dtype dt = float_types[t];
#define GRAD_T() filled(dt, dims, 2, 70, 0)
#define VALUES_T() filled(dt, (int64_t[]){5, 5}, 2, 71, 0)
#define IDX_T() int_tensor(WF_INT64, (int64_t[]){5}, 1, rows)
#define S(v) scalar_of(dt, (v))
#define STEP(v) scalar_of(WF_INT64, (v))
    var_case cases[] = {
        {"ApplyGradientDescent", 1, 2, {S(0.1), GRAD_T()}, {0}},
        {"ApplyMomentum", 2, 3, {S(0.1), GRAD_T(), S(0.9)},
         {1, {{.name = "use_nesterov", .kind = 'b', .i = 1}}}},
        {"ApplyAdam", 4, 6,
         {S(1e-3), S(0.9), S(0.999), S(1e-7), GRAD_T(), STEP(3)},
         {1, {{.name = "amsgrad", .kind = 'b', .i = 1}}}},
        {"ApplyAdamW", 4, 7,
         {S(1e-3), S(0.9), S(0.999), S(1e-7), S(0.01), GRAD_T(), STEP(1)},
         {0}},
        {"ApplyRMSProp", 3, 5, {S(0.01), S(0.9), S(0.5), S(1e-7), GRAD_T()},
         {0}},
        {"ApplyCenteredRMSProp", 4, 5,
         {S(0.01), S(0.9), S(0.5), S(1e-7), GRAD_T()}, {0}},
        {"ApplyAdagrad", 2, 3, {S(0.1), S(1e-7), GRAD_T()}, {0}},
        {"SparseApplyGradientDescent", 1, 3, {S(0.1), VALUES_T(), IDX_T()},
         {0}},
        {"SparseApplyMomentum", 2, 4,
         {S(0.1), VALUES_T(), IDX_T(), S(0.9)}, {0}},
        {"SparseApplyAdam", 4, 7,
         {S(1e-3), S(0.9), S(0.999), S(1e-7), VALUES_T(), IDX_T(), STEP(2)},
         {0}},
        {"SparseApplyAdagrad", 2, 4, {S(0.1), S(1e-7), VALUES_T(), IDX_T()},
         {0}},
        {"SparseApplyRMSProp", 3, 6,
         {S(0.01), S(0.9), S(0.5), S(1e-7), VALUES_T(), IDX_T()}, {0}},
        {"AssignAddVariable", 1, 1, {GRAD_T()}, {0}},
        {"AssignSubVariable", 1, 1, {GRAD_T()}, {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      var_case_run(&cases[i], dt, dims, 2);
#undef GRAD_T
#undef VALUES_T
#undef IDX_T
#undef S
#undef STEP
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_sub_mul_match_the_cpu_bit_for_bit),
      cmocka_unit_test(test_unary_ops_match_the_cpu),
      cmocka_unit_test(test_matmul_matches_the_cpu),
      cmocka_unit_test(test_uniform_initializers_match_the_cpu_bit_for_bit),
      cmocka_unit_test(test_more_unary_ops_match_the_cpu),
      cmocka_unit_test(test_activation_gradients_match_the_cpu),
      cmocka_unit_test(test_div_maximum_minimum_pow_match_the_cpu),
      cmocka_unit_test(test_add_n_cast_and_fills_match_the_cpu),
      cmocka_unit_test(test_shape_ops_match_the_cpu),
      cmocka_unit_test(test_reductions_match_the_cpu),
      cmocka_unit_test(test_reduction_gradients_match_the_cpu),
      cmocka_unit_test(test_conv2d_and_backprops_match_the_cpu),
      cmocka_unit_test(test_pools_and_gradients_match_the_cpu_bit_for_bit),
      cmocka_unit_test(test_softmax_and_losses_match_the_cpu),
      cmocka_unit_test(test_batch_norm_matches_the_cpu),
      cmocka_unit_test(test_bias_add_and_grad_match_the_cpu),
      cmocka_unit_test(test_gather_and_scatters_match_the_cpu_bit_for_bit),
      cmocka_unit_test(test_variable_updates_match_the_cpu_bit_for_bit),
  };
  wf_config *cfg = wf_config_new();
  int rc = 77;

  st = wf_status_new();
  if (!cfg || !st ||
      wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths",
                    getenv("WEFT_GPU_PLUGIN_DIRS")
                        ? getenv("WEFT_GPU_PLUGIN_DIRS")
                        : PLUGIN_DIRS,
                    st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "kernels", "prefer", "reference", st) ||
      !(rt = wf_runtime_new(cfg, st))) {
    fprintf(stderr, "cannot load the plugins: %s\n",
            st ? wf_status_message(st) : "out of memory");
    rc = 1;
    goto out;
  }
  for (int i = 0; i < wf_runtime_device_count(rt); i++) {
    wf_device_info d;
    wf_runtime_device_get(rt, i, &d);
    if (strcmp(d.name, "cuda:0") != 0)
      continue;
    if (!d.available) {
      printf("SKIP: cuda:0 is unavailable (%s)\n", d.reason);
      goto out;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    goto out;
  }
  printf("SKIP: no cuda:0 listed\n");

out:
  wf_runtime_free(rt);
  wf_config_free(cfg);
  wf_status_free(st);
  return rc;
}
