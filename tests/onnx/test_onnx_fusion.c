/* tests/onnx/test_onnx_fusion.c — the ONNX importer's fusion passes on the
 * transformer encoder of tests/onnx/models (as PyTorch exports it): with
 * the passes on, the step runs 4 OnnxLayerNorm and 2 Gelu nodes and none
 * of the ops they replace (Sqrt, the Erf of OnnxMath), while attention
 * stays as exported (2 Softmax: the importer fuses no attention); with
 * each switched off in [passes], none of its fused ops runs; the outputs
 * agree with each other within 1e-5 and with the numpy reference of the
 * model's data set within ONNX's tolerance. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "onnx.pb-c.h"

#define MODEL TEST_SRCDIR "/tests/onnx/models/transformer_small"

static wf_status *st;

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static wf_tensor *load_pb(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  uint8_t buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, n, buf);
  assert_non_null(tp);
  assert_int_equal(tp->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
  assert_true(tp->has_raw_data);
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, tp->dims, (int)tp->n_dims, st);
  assert_non_null(t);
  assert_int_equal(wf_tensor_nbytes(t), tp->raw_data.len);
  memcpy(wf_tensor_data(t), tp->raw_data.data, tp->raw_data.len);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  return t;
}

static int count_op(const wf_run_metadata *md, const char *op) {
  int c = 0;
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats s;
    wf_run_metadata_node(md, i, &s);
    c += strcmp(s.op, op) == 0;
  }
  return c;
}

/* The ops counted in each run (the metadata's strings live as long as the
 * graph, so they are counted before it goes). */
static const char *const ops[] = {"OnnxLayerNorm", "Gelu", "Sqrt", "Softmax",
                                  "OnnxMath"};
enum { LN, GELU, SQRT, SOFTMAX, MATH, NOPS };

/* Runs the model with the named passes off; returns the output, with how
 * many nodes of each of ops ran in count. */
static wf_tensor *run(const char *const *off, int noff, int *count) {
  wf_run_metadata *md = wf_run_metadata_new();
  wf_config *cfg = wf_config_new();
  for (int i = 0; i < noff; i++)
    OK(wf_config_set(cfg, "passes", off[i], "false", st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  OK(!rt);
  wf_config_free(cfg);
  wf_imported *m = wf_import(rt, MODEL "/model.onnx", NULL, st);
  OK(!m);
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  int ninit;
  wf_node *const *init = wf_imported_init(m, &ninit);
  wf_session *s = wf_session_new(wf_imported_graph(m), st);
  OK(!s);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, ninit, NULL,
                    st));
  wf_tensor *x = load_pb(MODEL "/test_data_set_0/input_0.pb"), *y = NULL;
  OK(wf_session_run(s, NULL, sig->inputs, &x, 1, sig->outputs, &y, 1, NULL, 0,
                    md, st));
  wf_tensor_release(x);
  for (int i = 0; i < NOPS; i++)
    count[i] = count_op(md, ops[i]);
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_imported_free(m);
  wf_runtime_free(rt);
  return y;
}

static void expect_close(const wf_tensor *a, const wf_tensor *b, double rtol,
                         double atol) {
  assert_int_equal(wf_tensor_count(a), wf_tensor_count(b));
  const float *p = wf_tensor_data(a), *q = wf_tensor_data(b);
  for (int64_t i = 0; i < wf_tensor_count(a); i++)
    if (!(fabs((double)p[i] - q[i]) <= atol + rtol * fabs((double)q[i])))
      fail_msg("element %lld: %.9g vs %.9g", (long long)i, p[i], q[i]);
}

static void test_passes_fuse_the_exported_patterns(void **state) {
  (void)state;
  int c[NOPS];
  wf_tensor *y = run(NULL, 0, c);
  assert_int_equal(c[LN], 4);
  assert_int_equal(c[GELU], 2);
  assert_int_equal(c[SQRT], 0);
  assert_int_equal(c[SOFTMAX], 2);
  assert_int_equal(c[MATH], 0);
  wf_tensor *want = load_pb(MODEL "/test_data_set_0/output_0.pb");
  expect_close(y, want, 1e-3, 1e-7);
  wf_tensor_release(want);

  static const char *const off[] = {"onnx_fuse_layer_norm", "onnx_fuse_gelu"};
  for (int i = 0; i < 2; i++) {
    wf_tensor *z = run(&off[i], 1, c);
    for (int j = 0; j < 2; j++)
      if (j == i)
        assert_int_equal(c[j], 0);
      else
        assert_true(c[j] > 0);
    expect_close(z, y, 1e-5, 1e-6);
    wf_tensor_release(z);
  }
  wf_tensor *z = run(off, 2, c);
  assert_int_equal(c[SQRT], 4);
  assert_int_equal(c[SOFTMAX], 2);
  assert_int_equal(c[MATH], 2);
  expect_close(z, y, 1e-5, 1e-6);
  wf_tensor_release(z);
  wf_tensor_release(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_passes_fuse_the_exported_patterns),
  };
  st = wf_status_new();
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  wf_status_free(st);
  return rc;
}
