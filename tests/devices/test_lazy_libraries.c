/* tests/devices/test_lazy_libraries.c — the heavy libraries of the device
 * and transport plugins are opened on first use: after a runtime with
 * every in-tree plugin was made (what `weft plugins` and `weft devices`
 * do), none of oneDNN, OpenBLAS, the CUDA runtime, cuBLAS, cuDNN or Open
 * MPI is mapped into the process (/proc/self/maps); after a MatMul that
 * oneDNN computes, oneDNN is; and a library that cannot be opened fails
 * the first node that needs it with a message naming the library, the
 * plugin and the file (checked in a child process, since a library that
 * failed to open stays failed for the process).
 *
 * The runtime is made with the default search, which from the build tree
 * finds the in-tree plugins (CUDA's and MPI's included when they were
 * built). */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <weft/weft.h>

/* 1 when a file whose name starts with `lib` (e.g. "libdnnl.so") is
 * mapped into this process. */
static int mapped(const char *lib) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;

  assert_non_null(f);
  while (!found && fgets(line, sizeof line, f)) {
    const char *slash = strrchr(line, '/');
    found = slash && strncmp(slash + 1, lib, strlen(lib)) == 0;
  }
  fclose(f);
  return found;
}

/* The libraries opened on first use, each with the configuration that
 * builds the plugin which opens it. */
static const struct {
  const char *prefix;
  int built;
} heavy[] = {
    {"libdnnl.so",
#ifdef HAVE_DNNL
     1
#else
     0
#endif
    },
    {"libopenblas", /* libopenblas.so.0 and libopenblasp-r0.3.so */
#ifdef HAVE_OPENBLAS
     1
#else
     0
#endif
    },
    {"libcudart.so", WF_TEST_HAVE_CUDA},
    {"libcublas", WF_TEST_HAVE_CUDA}, /* libcublas.so and libcublasLt.so */
    {"libcudnn", WF_TEST_HAVE_CUDA},
    {"libmpi.so",
#ifdef HAVE_MPI
     1
#else
     0
#endif
    },
    {"libopen-pal.so",
#ifdef HAVE_MPI
     1
#else
     0
#endif
    },
};

static wf_runtime *runtime_new(void) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = wf_runtime_new(NULL, st);

  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  wf_status_free(st);
  return rt;
}

static const char *plugin_state(wf_runtime *rt, const char *name) {
  for (int i = 0; i < wf_runtime_plugin_count(rt); i++) {
    wf_plugin_info p = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &p);
    if (p.name && strcmp(p.name, name) == 0)
      return p.state == WF_PLUGIN_LOADED ? "loaded" : "not loaded";
  }
  return "absent";
}

/* Runs z = x y for x (n, n) and y (n, n) of dtype dt, all ones, on the
 * CPU; returns the run's code, its message copied to msg. */
static int run_matmul(wf_runtime *rt, wf_dtype dt, int64_t n, char *msg,
                      size_t len) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  int64_t dims[2] = {n, n};
  wf_node *in[2];
  wf_tensor *vals[2], *out = NULL;
  int code;

  for (int i = 0; i < 2; i++) {
    wf_node_desc *d = wf_node_desc_new(g, "Placeholder", i ? "y" : "x");
    wf_node_desc_set_attr_dtype(d, "dtype", dt);
    wf_node_desc_set_attr_shape(d, "shape", dims, 2);
    in[i] = wf_node_desc_finish(d, st);
    assert_non_null(in[i]);
    vals[i] = wf_tensor_new(dt, dims, 2, st);
    assert_non_null(vals[i]);
    for (int64_t k = 0; k < n * n; k++) {
      if (dt == WF_FLOAT64)
        ((double *)wf_tensor_data(vals[i]))[k] = 1.0;
      else
        ((float *)wf_tensor_data(vals[i]))[k] = 1.0f;
    }
  }
  wf_node_desc *d = wf_node_desc_new(g, "MatMul", "z");
  wf_node_desc_add_input(d, (wf_output){in[0], 0});
  wf_node_desc_add_input(d, (wf_output){in[1], 0});
  wf_node *z = wf_node_desc_finish(d, st);
  assert_non_null(z);
  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  wf_output feeds[2] = {{in[0], 0}, {in[1], 0}}, fetch = {z, 0};
  code = wf_session_run(s, NULL, feeds, vals, 2, &fetch, &out, 1, NULL, 0,
                        NULL, st);
  snprintf(msg, len, "%s", code ? wf_status_message(st) : "");
  if (!code) {
    /* Every entry of ones x ones is n. */
    double v = dt == WF_FLOAT64 ? ((double *)wf_tensor_data(out))[0]
                                : ((float *)wf_tensor_data(out))[0];
    assert_true(v == (double)n);
    wf_tensor_release(out);
  }
  wf_tensor_release(vals[0]);
  wf_tensor_release(vals[1]);
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_free(st);
  return code;
}

/* Making a runtime (loading every plugin, listing every device) opens
 * none of the heavy libraries. Runs first: nothing was used yet. */
static void test_loading_and_listing_map_no_heavy_library(void **state) {
  (void)state;
  wf_runtime *rt = runtime_new();

  /* The plugins that open them were loaded. */
  assert_string_equal(plugin_state(rt, "device-cpu"), "loaded");
  if (WF_TEST_HAVE_CUDA)
    assert_string_equal(plugin_state(rt, "device-cuda"), "loaded");
#ifdef HAVE_MPI
  assert_string_equal(plugin_state(rt, "transport-mpi"), "loaded");
#endif
  for (size_t i = 0; i < sizeof heavy / sizeof heavy[0]; i++)
    if (heavy[i].built && mapped(heavy[i].prefix))
      fail_msg("%s is mapped after the runtime was made, before any use",
               heavy[i].prefix);
  /* The device descriptions are there without them. */
  for (int i = 0; i < wf_runtime_device_count(rt); i++) {
    wf_device_info dev = {0};
    wf_runtime_device_get(rt, i, &dev);
    assert_non_null(dev.description);
  }
  for (size_t i = 0; i < sizeof heavy / sizeof heavy[0]; i++)
    if (heavy[i].built && mapped(heavy[i].prefix))
      fail_msg("%s is mapped after the devices were listed", heavy[i].prefix);
  wf_runtime_free(rt);
}

/* A MatMul of 64 x 64 x 64 (above what goes to OpenBLAS) is oneDNN's:
 * running it maps oneDNN, and nothing of CUDA or MPI. */
static void test_first_onednn_kernel_maps_onednn(void **state) {
  (void)state;
#ifdef HAVE_DNNL
  wf_runtime *rt = runtime_new();
  char msg[1024];

  assert_false(mapped("libdnnl.so"));
  if (run_matmul(rt, WF_FLOAT32, 64, msg, sizeof msg))
    fail_msg("MatMul failed: %s", msg);
  assert_true(mapped("libdnnl.so"));
  for (size_t i = 2; i < sizeof heavy / sizeof heavy[0]; i++)
    if (heavy[i].built && mapped(heavy[i].prefix))
      fail_msg("%s is mapped after a run on the CPU", heavy[i].prefix);
  wf_runtime_free(rt);
#else
  skip();
#endif
}

/* In a child: with the variable naming a file that does not exist, the
 * run fails, and its message names the library, the plugin and the file.
 * Returns 0 when it did, else 1 (after printing why). */
static int child_missing(const char *var, const char *file, const char *what,
                         wf_dtype dt) {
  char msg[2048];
  wf_runtime *rt;
  int code;

  setenv(var, file, 1);
  rt = runtime_new();
  code = run_matmul(rt, dt, 64, msg, sizeof msg);
  wf_runtime_free(rt);
  if (code != WF_FAILED_PRECONDITION || !strstr(msg, what) ||
      !strstr(msg, "device-cpu") || !strstr(msg, file) || !strstr(msg, var) ||
      !strstr(msg, "node 'z'")) {
    fprintf(stderr, "with %s=%s: code %d, message '%s'\n", var, file, code,
            msg);
    return 1;
  }
  return 0;
}

static void expect_child(int (*fn)(void)) {
  pid_t pid;
  int status;

  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(fn());
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

#ifdef HAVE_DNNL
static int missing_onednn(void) {
  return child_missing("WEFT_ONEDNN_LIBRARY", "/nonexistent/libdnnl.so.2",
                       "oneDNN", WF_FLOAT32);
}
#endif

#ifdef HAVE_OPENBLAS
/* float64 products are OpenBLAS's alone. */
static int missing_openblas(void) {
  return child_missing("WEFT_OPENBLAS_LIBRARY",
                       "/nonexistent/libopenblas.so.0", "OpenBLAS",
                       WF_FLOAT64);
}
#endif

static void test_missing_library_fails_first_use_naming_it(void **state) {
  (void)state;
#if defined(HAVE_DNNL) || defined(HAVE_OPENBLAS)
#ifdef HAVE_DNNL
  expect_child(missing_onednn);
#endif
#ifdef HAVE_OPENBLAS
  expect_child(missing_openblas);
#endif
#else
  skip();
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      /* In this order: the children of the second must not inherit an
       * open library from the third. */
      cmocka_unit_test(test_loading_and_listing_map_no_heavy_library),
      cmocka_unit_test(test_missing_library_fails_first_use_naming_it),
      cmocka_unit_test(test_first_onednn_kernel_maps_onednn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
