/* tests/core/test_kernel_supports.c — a kernel may decline a node
 * (wf_kernel_def.supports): tests/plugins/picky.c's Neg, above every other
 * CPU kernel, runs the rank-1 node and declines the rank-2 one, which the
 * next kernel by priority takes; run metadata shows which ran where, the
 * values are -x either way, and the picky kernel's output has the shape the
 * op's shape function gives (kernel_output_shape). */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

static wf_status *st;

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static wf_node *placeholder(wf_graph *g, const char *name, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  int64_t dims[2] = {2, 3};
  wf_node_desc_set_attr_shape(d, "shape", dims + (rank == 1), rank);
  wf_node *n = wf_node_desc_finish(d, st);
  OK(!n);
  return n;
}

static const char *kernel_of(const wf_run_metadata *md, const char *node) {
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats s;
    wf_run_metadata_node(md, i, &s);
    if (strcmp(s.node, node) == 0)
      return wf_run_metadata_node_kernel(md, i);
  }
  return NULL;
}

static void test_declined_node_gets_the_next_kernel(void **state) {
  (void)state;
  wf_config *cfg = wf_config_new();
  OK(wf_config_set(cfg, "plugins", "paths", TEST_PLUGIN_DIR "/picky.so", st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  OK(!rt);
  wf_graph *g = wf_graph_new(rt);
  wf_node *a = placeholder(g, "a", 1), *b = placeholder(g, "b", 2);
  wf_output ia = {a, 0}, ib = {b, 0};
  wf_node *na = wf_graph_add_op(g, "Neg", "neg_a", &ia, 1, NULL, 0, st);
  wf_node *nb = wf_graph_add_op(g, "Neg", "neg_b", &ib, 1, NULL, 0, st);
  OK(!na || !nb);
  int64_t d1[1] = {3}, d2[2] = {2, 3};
  wf_tensor *va = wf_tensor_new(WF_FLOAT32, d1, 1, st);
  wf_tensor *vb = wf_tensor_new(WF_FLOAT32, d2, 2, st);
  float *pa = wf_tensor_data(va), *pb = wf_tensor_data(vb);
  for (int i = 0; i < 3; i++)
    pa[i] = (float)i - 1.5f;
  for (int i = 0; i < 6; i++)
    pb[i] = 0.25f * (float)i - 0.5f;
  wf_session *s = wf_session_new(g, st);
  OK(!s);
  wf_run_metadata *md = wf_run_metadata_new();
  wf_run_options opts = {sizeof opts, WF_TRACE_NODES, 0};
  wf_output feeds[2] = {ia, ib}, fetches[2] = {{na, 0}, {nb, 0}};
  wf_tensor *fv[2] = {va, vb}, *out[2] = {NULL, NULL};
  OK(wf_session_run(s, &opts, feeds, fv, 2, fetches, out, 2, NULL, 0, md,
                    st));
  assert_string_equal(kernel_of(md, "neg_a"), "picky");
  const char *other = kernel_of(md, "neg_b");
  assert_non_null(other);
  assert_string_not_equal(other, "picky");
  assert_int_equal(wf_tensor_rank(out[0]), 1);
  assert_int_equal(wf_tensor_dim(out[0], 0), 3);
  const float *ya = wf_tensor_data(out[0]), *yb = wf_tensor_data(out[1]);
  for (int i = 0; i < 3; i++)
    assert_true(ya[i] == -pa[i]);
  for (int i = 0; i < 6; i++)
    assert_true(yb[i] == -pb[i]);
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);
  wf_tensor_release(va);
  wf_tensor_release(vb);
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
}

int main(void) {
  st = wf_status_new();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_declined_node_gets_the_next_kernel),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  wf_status_free(st);
  return rc;
}
