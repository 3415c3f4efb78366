/* tests/abi/test_abi_frozen.c — plugins built against each frozen copy of
 * the plugin headers (tests/abi/MAJOR.MINOR/weft/, see tests/abi/README.md)
 * load into the current core and work: for every frozen directory of this
 * core's ABI major, the plugin "test-abi-MAJOR.MINOR" (tests/abi/
 * abi_plugin.c) is loaded with the version it was built for, and its op
 * AbiAffineMAJOR_MINOR infers shapes, runs its kernel (exact values) and
 * differentiates through its own gradient function in a session.
 *
 * It does not test refusals of other majors or capping of newer minors
 * (tests/core/test_loader.c does, with hand-made descriptions). */
#include <config.h>

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include <weft/weft.h>

#define ABI_DIR TEST_SRCDIR "/tests/abi"
#define MAX_FROZEN 64

typedef struct frozen {
  int major, minor;
} frozen;

static frozen versions[MAX_FROZEN];
static int num_versions;
static wf_runtime *rt;
static wf_status *st;

/* 1 when name is "MAJOR.MINOR" (decimal, no signs) */
static int parse_version(const char *name, int *major, int *minor) {
  char tail;
  return sscanf(name, "%d.%d%c", major, minor, &tail) == 2 && *major >= 0 &&
         *minor >= 0 && name[0] >= '0' && name[0] <= '9';
}

/* Collects the frozen directories: MAJOR.MINOR holding weft/plugin.h.
 * Returns 0, or -1 after saying why. */
static int find_frozen(void) {
  DIR *d = opendir(ABI_DIR);
  struct dirent *e;

  if (!d) {
    perror(ABI_DIR);
    return -1;
  }
  num_versions = 0;
  while ((e = readdir(d)) != NULL) {
    char path[4096];
    struct stat sb;
    int major, minor;
    if (!parse_version(e->d_name, &major, &minor))
      continue;
    snprintf(path, sizeof path, "%s/%s/weft/plugin.h", ABI_DIR, e->d_name);
    if (stat(path, &sb) != 0)
      continue;
    if (num_versions == MAX_FROZEN) {
      fprintf(stderr, "more than %d frozen ABI directories in %s\n", MAX_FROZEN,
              ABI_DIR);
      closedir(d);
      return -1;
    }
    versions[num_versions].major = major;
    versions[num_versions].minor = minor;
    num_versions++;
  }
  closedir(d);
  return 0;
}

/* The test plugins, and the in-tree plugins a session needs (Placeholder,
 * the CPU device); strict, so that any refusal fails the setup with its
 * reason. */
static int setup(void **state) {
  wf_config *cfg = wf_config_new();

  (void)state;
  st = wf_status_new();
  if (!st || !cfg || find_frozen()) {
    wf_config_free(cfg);
    return -1;
  }
  if (wf_config_set(cfg, "plugins", "paths",
                    TEST_BUILDDIR "/tests/abi/.libs, " TEST_BUILDDIR
                                  "/plugins/ops/array/.libs, " TEST_BUILDDIR
                                  "/plugins/devices/cpu/.libs",
                    st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "plugins", "strict", "true", st)) {
    fprintf(stderr, "config: %s\n", wf_status_message(st));
    wf_config_free(cfg);
    return -1;
  }
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt) {
    fprintf(stderr, "cannot load the frozen-ABI test plugins: %s\n",
            wf_status_message(st));
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}

static const char *op_name(const frozen *v, char *buf, size_t len) {
  snprintf(buf, len, "AbiAffine%d_%d", v->major, v->minor);
  return buf;
}

/* ---- the tests ----------------------------------------------------------- */

static void test_frozen_directories_are_of_this_major(void **state) {
  (void)state;
  assert_true(num_versions > 0);
  for (int i = 0; i < num_versions; i++)
    if (versions[i].major != WF_ABI_MAJOR)
      fail_msg("%s/%d.%d: frozen headers of ABI major %d, but this core has "
               "major %d: a new major drops the old frozen directories",
               ABI_DIR, versions[i].major, versions[i].minor, versions[i].major,
               WF_ABI_MAJOR);
}

static void test_each_frozen_abi_plugin_loads_with_its_version(void **state) {
  (void)state;
  for (int i = 0; i < num_versions; i++) {
    char want[64];
    int found = 0;
    snprintf(want, sizeof want, "test-abi-%d.%d", versions[i].major,
             versions[i].minor);
    for (int k = 0; k < wf_runtime_plugin_count(rt); k++) {
      wf_plugin_info p = WF_PLUGIN_INFO_INIT;
      wf_runtime_plugin_get(rt, k, &p);
      if (strcmp(p.name, want) != 0)
        continue;
      found = 1;
      if (p.state != WF_PLUGIN_LOADED)
        fail_msg("%s (%s) was not loaded: %s", want, p.path,
                 p.reason ? p.reason : "?");
      assert_int_equal(p.abi_major, versions[i].major);
      assert_int_equal(p.abi_minor, versions[i].minor);
      assert_int_equal(p.abi_capped, versions[i].minor > WF_ABI_MINOR);
      assert_int_equal(p.num_ops, 1);
      assert_int_equal(p.num_kernels, 1);
      assert_int_equal(p.num_gradients, 1);
    }
    if (!found)
      fail_msg("no plugin %s: %s/%d.%d has no test plugin built against it "
               "(add its rule to tests/abi/local.mk)",
               want, ABI_DIR, versions[i].major, versions[i].minor);
  }
}

static wf_output placeholder(wf_graph *g, const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("Placeholder: %s", wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_output affine(wf_graph *g, const frozen *v, wf_output x, double a,
                        double b) {
  char op[64];
  wf_node_desc *d = wf_node_desc_new(g, op_name(v, op, sizeof op), "y");
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_float(d, "a", a);
  wf_node_desc_set_attr_float(d, "b", b);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", op, wf_status_message(st));
  return (wf_output){n, 0};
}

static void test_frozen_abi_op_infers_shapes(void **state) {
  (void)state;
  for (int i = 0; i < num_versions; i++) {
    int64_t dims[3] = {-1, 4, 2};
    wf_graph *g = wf_graph_new(rt);
    wf_output y = affine(g, &versions[i], placeholder(g, dims, 3), 2, 1);
    wf_shape s;
    wf_node_output_shape(y.node, 0, &s);
    assert_int_equal(s.rank, 3);
    assert_int_equal(s.dims[0], -1);
    assert_int_equal(s.dims[1], 4);
    assert_int_equal(s.dims[2], 2);
    assert_int_equal(wf_node_output_dtype(y.node, 0), WF_FLOAT64);
    wf_graph_free(g);
  }
}

/* Runs fetch with x fed {0, 1, ..., 5} as (2, 3); returns a new reference. */
static wf_tensor *run(wf_graph *g, wf_output x, wf_output fetch) {
  int64_t dims[2] = {2, 3};
  wf_tensor *in = wf_tensor_new(WF_FLOAT64, dims, 2, st), *out = NULL;
  wf_session *s = wf_session_new(g, st);
  assert_non_null(in);
  assert_non_null(s);
  for (int i = 0; i < 6; i++)
    ((double *)wf_tensor_data(in))[i] = i;
  if (wf_session_run(s, NULL, &x, &in, 1, &fetch, &out, 1, NULL, 0, NULL, st))
    fail_msg("run: %s", wf_status_message(st));
  wf_session_free(s);
  wf_tensor_release(in);
  return out;
}

static void test_frozen_abi_kernel_runs_in_a_session(void **state) {
  (void)state;
  for (int i = 0; i < num_versions; i++) {
    int64_t dims[2] = {2, 3};
    wf_graph *g = wf_graph_new(rt);
    wf_output x = placeholder(g, dims, 2);
    wf_tensor *y = run(g, x, affine(g, &versions[i], x, 2.5, -1));
    assert_int_equal(wf_tensor_count(y), 6);
    for (int k = 0; k < 6; k++)
      assert_true(((const double *)wf_tensor_data(y))[k] == 2.5 * k - 1);
    wf_tensor_release(y);
    wf_graph_free(g);
  }
}

/* WF_STRING came with 1.6, past WF_DTYPE_COUNT: a plugin of any minor
 * whose masks do not name it never receives a string tensor (its tables
 * indexed by dtype are WF_DTYPE_COUNT long). The op of every frozen minor
 * refuses a string input while the graph is built, naming the dtype. */
static void test_frozen_abi_op_never_receives_strings(void **state) {
  (void)state;
  for (int i = 0; i < num_versions; i++) {
    char op[64];
    wf_graph *g = wf_graph_new(rt);
    wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "s");
    wf_node_desc_set_attr_dtype(d, "dtype", WF_STRING);
    wf_node *x = wf_node_desc_finish(d, st);
    if (!x)
      fail_msg("string Placeholder: %s", wf_status_message(st));
    d = wf_node_desc_new(g, op_name(&versions[i], op, sizeof op), "y");
    wf_node_desc_add_input(d, (wf_output){x, 0});
    wf_node_desc_set_attr_float(d, "a", 1);
    wf_node_desc_set_attr_float(d, "b", 0);
    assert_null(wf_node_desc_finish(d, st));
    assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
    assert_non_null(strstr(wf_status_message(st), "string"));
    wf_graph_free(g);
  }
}

static void test_frozen_abi_gradient_is_built_and_runs(void **state) {
  (void)state;
  for (int i = 0; i < num_versions; i++) {
    char op[64];
    int64_t dims[2] = {2, 3};
    wf_graph *g = wf_graph_new(rt);
    wf_output x = placeholder(g, dims, 2);
    wf_output y = affine(g, &versions[i], x, -3, 7);
    wf_gradient dx;
    wf_tensor *v;

    assert_int_equal(
        wf_runtime_op_gradient(rt, op_name(&versions[i], op, sizeof op)), 1);
    if (wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st))
      fail_msg("gradients of %s: %s", op, wf_status_message(st));
    assert_non_null(dx.dense.node);
    v = run(g, x, dx.dense);
    for (int k = 0; k < 6; k++)
      assert_true(((const double *)wf_tensor_data(v))[k] == -3);
    wf_tensor_release(v);
    wf_graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_frozen_directories_are_of_this_major),
      cmocka_unit_test(test_each_frozen_abi_plugin_loads_with_its_version),
      cmocka_unit_test(test_frozen_abi_op_infers_shapes),
      cmocka_unit_test(test_frozen_abi_kernel_runs_in_a_session),
      cmocka_unit_test(test_frozen_abi_gradient_is_built_and_runs),
      cmocka_unit_test(test_frozen_abi_op_never_receives_strings),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
