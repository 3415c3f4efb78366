/* tests/plugins/test_plugin_aux.c — the SDK's helper layer
 * (<weft/plugin_aux.h>): the test plugin "test-vendor" (vendor_op.c), built
 * on it, loads beside the built-in plugins and its vendor-domain ops run
 * (elementwise and broadcasting loops over several dtypes, a gradient);
 * the layer's checks refuse bad nodes with messages that name the node, the
 * op and the input or attribute; a plugin that needs a newer host ABI is
 * refused naming both versions; and the shape helpers and the version check
 * behave as documented when called directly over the core's host table. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/plugin_aux.h>
#include <weft/weft.h>

#include "host/host.h"

#define PLUGIN(name) TEST_PLUGIN_DIR "/" name ".so"

/* This test calls the layer's helpers itself, so it has a host too. */
WFX_HOST_DEFINE(1, 0);

static wf_runtime *runtime_with(const char *paths, wf_status *st) {
  wf_config *c = wf_config_new();
  wf_runtime *rt;

  assert_int_equal(wf_config_set(c, "plugins", "paths", paths, st), 0);
  rt = wf_runtime_new(c, st);
  wf_config_free(c);
  return rt;
}

static wf_plugin_info plugin_info(wf_runtime *rt, const char *name) {
  wf_plugin_info p = WF_PLUGIN_INFO_INIT;
  for (int i = 0; i < wf_runtime_plugin_count(rt); i++) {
    wf_runtime_plugin_get(rt, i, &p);
    if (strcmp(p.name, name) == 0)
      return p;
  }
  fail_msg("plugin %s was not looked at", name);
  return p;
}

static wf_output placeholder(wf_graph *g, const char *name, wf_dtype dtype,
                             const int64_t *dims, int rank, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dtype);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

static wf_output op2(wf_graph *g, const char *op, const char *name,
                     wf_output a, wf_output b, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node_desc_add_input(d, a);
  if (b.node)
    wf_node_desc_add_input(d, b);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

static wf_output scale(wf_graph *g, const char *name, wf_output x, double k,
                       wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "testvendor.Scale", name);
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_float(d, "k", k);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

/* Runs fetch on feeds; returns the fetched tensor (NULL with st set). */
static wf_tensor *run1(wf_graph *g, const wf_output *feeds, wf_tensor **vals,
                       int nfeeds, wf_output fetch, wf_status *st) {
  wf_session *s = wf_session_new(g, st);
  wf_tensor *out = NULL;
  if (!s)
    return NULL;
  if (wf_session_run(s, NULL, feeds, vals, nfeeds, &fetch, &out, 1, NULL, 0,
                     NULL, st))
    out = NULL;
  wf_session_free(s);
  return out;
}

static wf_tensor *filled(wf_dtype dt, const int64_t *dims, int rank,
                         wf_status *st) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  int64_t n = wf_tensor_count(t);
  assert_non_null(t);
  for (int64_t i = 0; i < n; i++) {
    void *p = wf_tensor_data(t);
    switch (dt) {
    case WF_FLOAT32: ((float *)p)[i] = (float)i - 1.5f; break;
    case WF_FLOAT64: ((double *)p)[i] = (double)i * 0.25; break;
    case WF_INT32: ((int32_t *)p)[i] = (int32_t)(10 * i); break;
    default: fail_msg("dtype %d", dt);
    }
  }
  return t;
}

static double at(const wf_tensor *t, int64_t i) {
  const void *p = wf_tensor_data(t);
  switch (wf_tensor_dtype(t)) {
  case WF_FLOAT32: return ((const float *)p)[i];
  case WF_FLOAT64: return ((const double *)p)[i];
  case WF_INT32: return ((const int32_t *)p)[i];
  default: fail_msg("dtype %d", wf_tensor_dtype(t));
  }
  return 0;
}

static void test_aux_vendor_ops_run(void **state) {
  static const wf_dtype dtypes[] = {WF_FLOAT32, WF_FLOAT64, WF_INT32};
  wf_status *st = wf_status_new();
  wf_runtime *rt = runtime_with(PLUGIN("vendor_op"), st);
  (void)state;

  assert_non_null(rt);
  assert_int_equal(plugin_info(rt, "test-vendor").state, WF_PLUGIN_LOADED);
  assert_non_null(wf_runtime_op_find(rt, "testvendor.Scale"));
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
    int64_t da[2] = {2, 3}, db[1] = {3}, dc[2] = {2, 1};
    wf_graph *g = wf_graph_new(rt);
    wf_output a = placeholder(g, "a", dtypes[d], da, 2, st);
    wf_output b = placeholder(g, "b", dtypes[d], db, 1, st);
    wf_output c = placeholder(g, "c", dtypes[d], dc, 2, st);
    wf_output y = scale(g, "y", a, 3.0, st);
    wf_output z = op2(g, "testvendor.BAdd", "z", a, b, st);
    wf_output w = op2(g, "testvendor.BAdd", "w", b, c, st);
    wf_tensor *va = filled(dtypes[d], da, 2, st), *vb = filled(dtypes[d], db, 1, st);
    wf_tensor *vc = filled(dtypes[d], dc, 2, st);
    wf_output feeds[3] = {a, b, c};
    wf_tensor *vals[3] = {va, vb, vc}, *out;

    assert_true(y.node && z.node && w.node);
    out = run1(g, feeds, vals, 3, y, st);
    assert_non_null(out);
    for (int i = 0; i < 6; i++)
      assert_float_equal(at(out, i), 3.0 * at(va, i), 1e-6);
    wf_tensor_release(out);
    out = run1(g, feeds, vals, 3, z, st); /* (2, 3) + (3,) */
    assert_non_null(out);
    for (int i = 0; i < 6; i++)
      assert_float_equal(at(out, i), at(va, i) + at(vb, i % 3), 1e-6);
    wf_tensor_release(out);
    out = run1(g, feeds, vals, 3, w, st); /* (3,) + (2, 1) -> (2, 3) */
    assert_non_null(out);
    assert_int_equal(wf_tensor_count(out), 6);
    for (int i = 0; i < 6; i++)
      assert_float_equal(at(out, i), at(vb, i % 3) + at(vc, i / 3), 1e-6);
    wf_tensor_release(out);
    wf_tensor_release(va);
    wf_tensor_release(vb);
    wf_tensor_release(vc);
    wf_graph_free(g);
  }
  wf_runtime_free(rt);
  wf_status_free(st);
}

/* d(sum Scale(x, 2.5))/dx = 2.5 everywhere, through the plugin's gradient. */
static void test_aux_vendor_gradient(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = runtime_with(PLUGIN("vendor_op"), st);
  int64_t dims[1] = {4};
  wf_graph *g;
  wf_output x, y;
  wf_gradient dx;
  wf_tensor *vx, *out;
  (void)state;

  assert_non_null(rt);
  g = wf_graph_new(rt);
  x = placeholder(g, "x", WF_FLOAT64, dims, 1, st);
  y = scale(g, "y", x, 2.5, st);
  assert_non_null(y.node);
  assert_int_equal(wf_graph_add_gradients(g, &y, 1, NULL, &x, 1, &dx, st), 0);
  vx = filled(WF_FLOAT64, dims, 1, st);
  out = run1(g, &x, &vx, 1, dx.dense, st);
  if (!out)
    fail_msg("running the gradient: %s", wf_status_message(st));
  for (int i = 0; i < 4; i++)
    assert_float_equal(at(out, i), 2.5, 0);
  wf_tensor_release(out);
  wf_tensor_release(vx);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
}

static void assert_message(wf_status *st, ...) {
  va_list ap;
  const char *want;
  assert_int_not_equal(wf_status_code(st), WF_OK);
  va_start(ap, st);
  while ((want = va_arg(ap, const char *)) != NULL)
    if (!strstr(wf_status_message(st), want))
      fail_msg("message \"%s\" lacks \"%s\"", wf_status_message(st), want);
  va_end(ap);
  wf_status_reset(st);
}

static void test_aux_checks_name_node_and_op(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = runtime_with(PLUGIN("vendor_op"), st);
  int64_t d3[3] = {2, 2, 2}, d1[1] = {3};
  wf_graph *g;
  wf_output a, v, bad, m;
  wf_tensor *vv;
  (void)state;

  assert_non_null(rt);
  g = wf_graph_new(rt);
  a = placeholder(g, "cube", WF_FLOAT32, d3, 3, st);
  v = placeholder(g, "vec", WF_FLOAT32, d1, 1, st);
  bad = scale(g, "nan_k", v, NAN, st);
  assert_null(bad.node);
  assert_message(st, "nan_k", "testvendor.Scale", "attribute 'k'", "finite",
                 NULL);
  bad = op2(g, "testvendor.BAdd", "too_deep", a, v, st);
  assert_null(bad.node);
  assert_message(st, "too_deep", "testvendor.BAdd", "input 0 (a)", "rank 3",
                 NULL);
  bad = op2(g, "testvendor.BAdd", "no_bcast", v,
            placeholder(g, "four", WF_FLOAT32, (int64_t[]){4}, 1, st), st);
  assert_null(bad.node);
  assert_message(st, "no_bcast", "(3) and (4)", "cannot be broadcast", NULL);
  /* The kernel's checked input read: a vector where a matrix is wanted. */
  m = op2(g, "testvendor.NeedMatrix", "wants_matrix", v, (wf_output){0}, st);
  assert_non_null(m.node);
  vv = filled(WF_FLOAT32, d1, 1, st);
  assert_null(run1(g, &v, &vv, 1, m, st));
  assert_message(st, "wants_matrix", "testvendor.NeedMatrix", "input 0",
                 "(3) (rank 1); expected rank 2", NULL);
  wf_tensor_release(vv);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
}

static void test_aux_newer_abi_refused_naming_both(void **state) {
  char want[64], ours[64];
  wf_status *st = wf_status_new();
  wf_runtime *rt = runtime_with(PLUGIN("needs_newer"), st);
  wf_plugin_info p = WF_PLUGIN_INFO_INIT;
  (void)state;

  assert_non_null(rt);
  p = plugin_info(rt, "test-needs-newer");
  assert_int_equal(p.state, WF_PLUGIN_REFUSED);
  snprintf(want, sizeof want, "ABI %d.%d", WF_ABI_MAJOR, WF_ABI_MINOR + 1);
  snprintf(ours, sizeof ours, "provides ABI %d.%d", WF_ABI_MAJOR,
           WF_ABI_MINOR);
  assert_non_null(p.reason);
  assert_non_null(strstr(p.reason, "test-needs-newer"));
  assert_non_null(strstr(p.reason, want));
  assert_non_null(strstr(p.reason, ours));
  wf_runtime_free(rt);
  wf_status_free(st);
}

/* The helpers themselves, over the core's host table. */
static void test_aux_helpers_direct(void **state) {
  wf_status *st = wf_status_new();
  wf_host old = *wf__host();
  wf_shape a, b, out;
  char buf[WFX_SHAPE_STR_MAX];
  int axis;
  uint32_t mask;
  (void)state;

  /* An older core (1.0 where 1.2 is needed), a short table, a major. */
  old.abi_minor = 0;
  assert_int_equal(wfx_host_set(&old, "p", 1, 2, st), WF_FAILED_PRECONDITION);
  assert_message(st, "plugin 'p' needs", "ABI 1.2", "provides ABI 1.0", NULL);
  old = *wf__host();
  old.struct_size = (uint32_t)offsetof(wf_host, threads);
  assert_int_equal(wfx_host_set(&old, "p", 1, 0, st), WF_FAILED_PRECONDITION);
  wf_status_reset(st);
  old = *wf__host();
  old.abi_major = 2;
  assert_int_equal(wfx_host_set(&old, "p", 1, 0, st), WF_FAILED_PRECONDITION);
  wf_status_reset(st);
  assert_int_equal(wfx_host_set(wf__host(), "p", 1, WF_ABI_MINOR, st), 0);
  assert_ptr_equal(wfx_host, wf__host());

  wfx_shape_make(&a, 3, (int64_t[]){2, -1, 3});
  assert_string_equal(wfx_shape_str(&a, buf, sizeof buf), "(2, ?, 3)");
  wfx_shape_set_scalar(&b);
  assert_string_equal(wfx_shape_str(&b, buf, sizeof buf), "()");
  assert_int_equal(wfx_shape_count(&a), -1);
  wfx_shape_make(&b, 2, (int64_t[]){4, 1});
  assert_int_equal(wfx_broadcast_shapes(&a, &b, &out, NULL, st), 0);
  assert_string_equal(wfx_shape_str(&out, buf, sizeof buf), "(2, 4, 3)");
  wfx_shape_make(&b, 1, (int64_t[]){5});
  assert_int_equal(wfx_broadcast_shapes(&a, &b, &out, "here", st),
                   WF_INVALID_ARGUMENT);
  assert_message(st, "here: shapes (2, ?, 3) and (5)", NULL);
  assert_int_equal(wfx_axis_normalize(-1, 3, &axis, NULL, st), 0);
  assert_int_equal(axis, 2);
  assert_int_equal(wfx_axis_normalize(3, 3, &axis, NULL, st),
                   WF_INVALID_ARGUMENT);
  assert_message(st, "axis 3 is out of range for rank 3", NULL);
  assert_int_equal(wfx_axes_mask((int64_t[]){0, -1}, 2, 3, &mask, NULL, st),
                   0);
  assert_int_equal(mask, 5);
  assert_int_equal(wfx_axes_mask((int64_t[]){1, -2}, 2, 3, &mask, NULL, st),
                   WF_INVALID_ARGUMENT);
  assert_message(st, "given twice", NULL);
  assert_int_equal(wfx_fail(st, WF_NOT_FOUND, "no %s %d", "thing", 7),
                   WF_NOT_FOUND);
  assert_message(st, "no thing 7", NULL);

  /* A broadcast walk of (2, 3) over (2, 1) and (3,): every element once,
   * each operand at the right offset. */
  {
    wf_shape in[2], o;
    wfx_bcast w;
    int64_t seen = 0, sum = 0;
    wfx_shape_make(&in[0], 2, (int64_t[]){2, 1});
    wfx_shape_make(&in[1], 1, (int64_t[]){3});
    wfx_shape_make(&o, 2, (int64_t[]){2, 3});
    wfx_bcast_init(&w, &o, 2, in);
    WFX_BCAST_EACH(&w, k, i) {
      assert_int_equal(WFX_BCAST_AT(&w, 0, i), k / 3);
      assert_int_equal(WFX_BCAST_AT(&w, 1, i), k % 3);
      seen++;
      sum += k;
    }
    assert_int_equal(seen, 6);
    assert_int_equal(sum, 15);
  }
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_aux_vendor_ops_run),
      cmocka_unit_test(test_aux_vendor_gradient),
      cmocka_unit_test(test_aux_checks_name_node_and_op),
      cmocka_unit_test(test_aux_newer_abi_refused_naming_both),
      cmocka_unit_test(test_aux_helpers_direct),
  };
  setenv("WEFT_LOG_LEVEL", "error", 1);
  unsetenv("WEFT_PLUGIN_PATH");
  return cmocka_run_group_tests(tests, NULL, NULL);
}
