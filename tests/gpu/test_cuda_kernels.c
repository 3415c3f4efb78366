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
 *
 * Without a usable cuda:0 it prints why and exits 77 (automake's skip). */
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
                "/plugins/ops/random/.libs"

static wf_runtime *rt;
static wf_status *st;

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
  wf_output in[4], fetch[2];
  wf_session *s;
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *out[2] = {NULL, NULL};

  assert_true(nin <= 4);
  for (int i = 0; i < nin; i++) {
    wf_shape sh;
    wf_tensor_shape(inputs[i], &sh);
    in[i] = placeholder(g, wf_tensor_dtype(inputs[i]), sh.dims, sh.rank);
  }
  fetch[0] = (wf_output){op_node(g, op, "on_cpu", in, nin, attrs, arg,
                                 "cpu:0"),
                         0};
  fetch[1] = (wf_output){op_node(g, op, "on_gpu", in, nin, attrs, arg,
                                 "cuda:0"),
                         0};
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_sub_mul_match_the_cpu_bit_for_bit),
      cmocka_unit_test(test_unary_ops_match_the_cpu),
      cmocka_unit_test(test_matmul_matches_the_cpu),
      cmocka_unit_test(test_uniform_initializers_match_the_cpu_bit_for_bit),
  };
  wf_config *cfg = wf_config_new();
  int rc = 77;

  st = wf_status_new();
  if (!cfg || !st ||
      wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths", PLUGIN_DIRS, st) ||
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
