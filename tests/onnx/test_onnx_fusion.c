/* tests/onnx/test_onnx_fusion.c — the ONNX importer's fusion passes on the
 * transformer encoder of tests/onnx/models (as PyTorch exports it): with
 * the passes on, the step runs 4 LayerNorm (ops-nn's: each normalises the
 * last axis with a scale and offset) and 2 Gelu nodes and none
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

#define MODELS TEST_SRCDIR "/tests/onnx/models/"
#define MODEL MODELS "transformer_small"

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
static const char *const ops[] = {"LayerNorm", "Gelu",      "Sqrt",
                                  "Softmax",   "OnnxMath",  "Transpose",
                                  "Pad",       "_FusedConv2D", "_FusedMatMul",
                                  "MatMul",    "Add"};
enum {
  LN,
  GELU,
  SQRT,
  SOFTMAX,
  MATH,
  TRANSPOSE,
  PAD,
  FUSED_CONV,
  FUSED_MATMUL,
  MATMUL,
  ADD,
  NOPS
};

/* Runs model dir's model.onnx on its first data set with the named passes
 * off; returns the output, with how many nodes of each of ops ran in
 * count. */
static wf_tensor *run_model(const char *dir, const char *const *off,
                            int noff, int *count) {
  char path[1024];
  wf_run_metadata *md = wf_run_metadata_new();
  wf_config *cfg = wf_config_new();
  for (int i = 0; i < noff; i++)
    OK(wf_config_set(cfg, "passes", off[i], "false", st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  OK(!rt);
  wf_config_free(cfg);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  wf_imported *m = wf_import(rt, path, NULL, st);
  OK(!m);
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  int ninit;
  wf_node *const *init = wf_imported_init(m, &ninit);
  wf_session *s = wf_session_new(wf_imported_graph(m), st);
  OK(!s);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, ninit, NULL,
                    st));
  snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", dir);
  wf_tensor *x = load_pb(path), *y = NULL;
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

static wf_tensor *run(const char *const *off, int noff, int *count) {
  return run_model(MODEL, off, noff, count);
}

static void expect_close(const wf_tensor *a, const wf_tensor *b, double rtol,
                         double atol) {
  assert_int_equal(wf_tensor_count(a), wf_tensor_count(b));
  const float *p = wf_tensor_data(a), *q = wf_tensor_data(b);
  for (int64_t i = 0; i < wf_tensor_count(a); i++)
    if (!(fabs((double)p[i] - q[i]) <= atol + rtol * fabs((double)q[i])))
      fail_msg("element %lld: %.9g vs %.9g", (long long)i, p[i], q[i]);
}

/* The 2-layer transformer encoder: its 4 LayerNorms and 2 GELUs fuse; its
 * 12 linear layers ((batch, seq, d) x (d, n) + b, which the importer
 * writes as a Reshape of the rows' MatMul) become _FusedMatMul with their
 * bias (onnx_fuse_bias, then ops-nn's fusion) and the 2 GELUs go into
 * theirs. Each pass off, the patterns it fuses stay apart and the outputs
 * agree. */
static void test_passes_fuse_the_exported_patterns(void **state) {
  (void)state;
  int c[NOPS];
  wf_tensor *y = run(NULL, 0, c);
  assert_int_equal(c[LN], 4);
  assert_int_equal(c[GELU], 0);
  assert_int_equal(c[FUSED_MATMUL], 12);
  assert_int_equal(c[MATMUL], 0);
  assert_int_equal(c[ADD], 4); /* the residual ones */
  assert_int_equal(c[SQRT], 0);
  assert_int_equal(c[SOFTMAX], 2);
  assert_int_equal(c[MATH], 0);
  wf_tensor *want = load_pb(MODEL "/test_data_set_0/output_0.pb");
  expect_close(y, want, 1e-3, 1e-7);
  wf_tensor_release(want);

  static const char *const off[] = {"onnx_fuse_layer_norm", "onnx_fuse_gelu",
                                    "onnx_fuse_bias"};
  wf_tensor *z = run(&off[0], 1, c);
  assert_int_equal(c[LN], 0);
  assert_int_equal(c[FUSED_MATMUL], 12);
  expect_close(z, y, 1e-5, 1e-6);
  wf_tensor_release(z);
  /* no Gelu to fuse: the products take their bias only */
  z = run(&off[1], 1, c);
  assert_int_equal(c[LN], 4);
  assert_int_equal(c[GELU], 0);
  assert_int_equal(c[FUSED_MATMUL], 12);
  expect_close(z, y, 1e-5, 1e-6);
  wf_tensor_release(z);
  /* no bias moved: the products and the Gelus stay apart */
  z = run(&off[2], 1, c);
  assert_int_equal(c[LN], 4);
  assert_int_equal(c[GELU], 2);
  assert_int_equal(c[FUSED_MATMUL], 0);
  assert_int_equal(c[MATMUL], 12);
  expect_close(z, y, 1e-5, 1e-6);
  wf_tensor_release(z);
  static const char *const fusion_off[] = {"fusion"};
  z = run(fusion_off, 1, c);
  assert_int_equal(c[FUSED_MATMUL], 0);
  assert_int_equal(c[MATMUL], 12);
  expect_close(z, y, 1e-5, 1e-6);
  wf_tensor_release(z);
  z = run(off, 2, c);
  assert_int_equal(c[SQRT], 4);
  assert_int_equal(c[SOFTMAX], 2);
  assert_int_equal(c[MATH], 2);
  expect_close(z, y, 1e-5, 1e-6);
  wf_tensor_release(z);
  wf_tensor_release(y);
}

/* onnx_nhwc on the residual CNN (Conv, BatchNormalization, Relu, residual
 * Add, MaxPool, GlobalAveragePool): with the pass, the convolutions run
 * channels last between one Transpose in and one out (no more: the region
 * is whole); on the depthwise-separable one (grouped convolutions split
 * along the channels) the pass changes nothing, since no region saves
 * reorders. The outputs agree with the pass off within 1e-5 and with the
 * data set's reference within ONNX's tolerance. */
static void test_nhwc_pass_keeps_convolutions_channels_last(void **state) {
  (void)state;
  static const char *const off[] = {"onnx_nhwc"};
  static const char *const models[] = {MODELS "resnet_small",
                                       MODELS "mobilenet_small"};
  for (int i = 0; i < 2; i++) {
    int on[NOPS], no[NOPS];
    char path[1024];
    wf_tensor *y = run_model(models[i], NULL, 0, on);
    wf_tensor *z = run_model(models[i], off, 1, no);
    print_message("%s: with onnx_nhwc %d Transpose, %d Pad, %d _FusedConv2D; "
                  "without %d, %d, %d\n",
                  models[i], on[TRANSPOSE], on[PAD], on[FUSED_CONV],
                  no[TRANSPOSE], no[PAD], no[FUSED_CONV]);
    if (i == 0) { /* one region: the stem to the last block */
      assert_int_equal(on[TRANSPOSE], 2);
      assert_int_equal(no[TRANSPOSE], 0);
    } else { /* grouped convolutions split along C: nothing to gain */
      assert_int_equal(on[TRANSPOSE], no[TRANSPOSE]);
    }
    expect_close(y, z, 1e-5, 1e-6);
    snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", models[i]);
    wf_tensor *want = load_pb(path);
    expect_close(y, want, 1e-3, 1e-7);
    wf_tensor_release(want);
    wf_tensor_release(y);
    wf_tensor_release(z);
  }
}

/* ---- onnx_nhwc on a graph built here ------------------------------------ */

static wf_tensor *random_tensor(wf_dtype dt, const int64_t *dims, int rank,
                                unsigned seed) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  assert_non_null(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++) {
    seed = seed * 1103515245u + 12345u;
    ((float *)wf_tensor_data(t))[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1;
  }
  return t;
}

static wf_node *konst(wf_graph *g, wf_tensor *t) {
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(t));
  wf_tensor_release(t);
  wf_node *n = wf_node_desc_finish(d, st);
  OK(!n);
  return n;
}

static wf_node *op(wf_graph *g, const char *type, wf_node *a, wf_node *b,
                   const char *data_format) {
  wf_node_desc *d = wf_node_desc_new(g, type, NULL);
  wf_node_desc_add_input(d, (wf_output){a, 0});
  if (b)
    wf_node_desc_add_input(d, (wf_output){b, 0});
  if (data_format)
    wf_node_desc_set_attr_string(d, "data_format", data_format);
  return wf_node_desc_finish(d, st);
}

/* An NCHW Conv2D of x by a random filter (KH, KW, C, C_out) from seed,
 * stride s; padding SAME, or EXPLICIT with pads (8 entries) when given. */
static wf_node *conv(wf_graph *g, const char *name, wf_node *x,
                     const int64_t *fd, unsigned seed, int64_t s,
                     const int64_t *pads) {
  wf_node_desc *d = wf_node_desc_new(g, "Conv2D", name);
  wf_node_desc_add_input(d, (wf_output){x, 0});
  wf_node_desc_add_input(
      d, (wf_output){konst(g, random_tensor(WF_FLOAT32, fd, 4, seed)), 0});
  wf_node_desc_set_attr_int_list(d, "strides", (int64_t[]){1, 1, s, s}, 4);
  wf_node_desc_set_attr_string(d, "padding", pads ? "EXPLICIT" : "SAME");
  if (pads)
    wf_node_desc_set_attr_int_list(d, "explicit_paddings", pads, 8);
  wf_node_desc_set_attr_string(d, "data_format", "NCHW");
  wf_node *n = wf_node_desc_finish(d, st);
  OK(!n);
  return n;
}

/* x (2, 5, 13, 11) NCHW -> Conv2D (3x3, stride 2, explicit pads 1/2 and
 * 0/1) -> BiasAdd -> Relu -> Pad (1 each side of H and W, -1e30) ->
 * MaxPool 3x3 stride 2 -> m; Sigmoid(Conv2D(m) + m); and a 1x1 Conv2D on
 * x read by a Mean over H and W. With the pass, the first region (two
 * convolutions: four reorders saved) runs NHWC between one Transpose in
 * and one out; the 1x1 convolution's region (one in, one out: nothing
 * saved) stays NCHW. The values equal the pass-off graph's. */
static wf_tensor *run_built(int nhwc, int *count) {
  wf_config *cfg = wf_config_new();
  if (!nhwc)
    OK(wf_config_set(cfg, "passes", "onnx_nhwc", "false", st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  OK(!rt);
  wf_config_free(cfg);
  wf_graph *g = wf_graph_new(rt);
  int64_t xd[4] = {2, 5, 13, 11}, fd[4] = {3, 3, 5, 7}, f1[4] = {1, 1, 5, 4},
          f2[4] = {3, 3, 7, 7},
          bd[1] = {7}, pd[2] = {4, 2};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", xd, 4);
  wf_node *x = wf_node_desc_finish(d, st);
  OK(!x);
  wf_node *c = conv(g, "conv", x, fd, 1, 2,
                    (int64_t[]){0, 0, 0, 0, 1, 2, 0, 1});
  wf_node *b = op(g, "BiasAdd", c,
                  konst(g, random_tensor(WF_FLOAT32, bd, 1, 2)), "NCHW");
  wf_node *r = op(g, "Relu", b, NULL, NULL);
  wf_tensor *pt = wf_tensor_new(WF_INT32, pd, 2, st);
  int32_t pads[8] = {0, 0, 0, 0, 1, 1, 1, 1};
  memcpy(wf_tensor_data(pt), pads, sizeof pads);
  d = wf_node_desc_new(g, "Pad", "pad");
  wf_node_desc_add_input(d, (wf_output){r, 0});
  wf_node_desc_add_input(d, (wf_output){konst(g, pt), 0});
  wf_node_desc_set_attr_float(d, "constant_values", -1e30);
  wf_node *p = wf_node_desc_finish(d, st);
  OK(!p);
  d = wf_node_desc_new(g, "MaxPool", "pool");
  wf_node_desc_add_input(d, (wf_output){p, 0});
  wf_node_desc_set_attr_int_list(d, "ksize", (int64_t[]){1, 1, 3, 3}, 4);
  wf_node_desc_set_attr_int_list(d, "strides", (int64_t[]){1, 1, 2, 2}, 4);
  wf_node_desc_set_attr_string(d, "padding", "VALID");
  wf_node_desc_set_attr_string(d, "data_format", "NCHW");
  wf_node *m = wf_node_desc_finish(d, st);
  OK(!m);
  wf_node *c2 = conv(g, "conv2", m, f2, 5, 1, NULL);
  wf_node *y = op(g, "Sigmoid", op(g, "Add", c2, m, NULL), NULL, NULL);
  wf_node *c1 = conv(g, "conv1x1", x, f1, 3, 1, NULL);
  d = wf_node_desc_new(g, "Mean", "mean");
  wf_node_desc_add_input(d, (wf_output){c1, 0});
  wf_node_desc_set_attr_int_list(d, "axes", (int64_t[]){2, 3}, 2);
  wf_node *z = wf_node_desc_finish(d, st);
  OK(!y || !z);

  wf_session *s = wf_session_new(g, st);
  OK(!s);
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *xv = random_tensor(WF_FLOAT32, xd, 4, 4), *out[2] = {NULL};
  wf_output feeds[1] = {{x, 0}}, fetches[2] = {{y, 0}, {z, 0}};
  OK(wf_session_run(s, NULL, feeds, &xv, 1, fetches, out, 2, NULL, 0, md,
                    st));
  for (int i = 0; i < NOPS; i++)
    count[i] = count_op(md, ops[i]);
  wf_run_metadata_free(md);
  wf_tensor_release(xv);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
  /* both results in one tensor's worth of checks: y, then z */
  int64_t ny = wf_tensor_count(out[0]), nz = wf_tensor_count(out[1]);
  int64_t all = ny + nz;
  wf_tensor *both = wf_tensor_new(WF_FLOAT32, &all, 1, st);
  memcpy(wf_tensor_data(both), wf_tensor_data(out[0]), (size_t)ny * 4);
  memcpy((float *)wf_tensor_data(both) + ny, wf_tensor_data(out[1]),
         (size_t)nz * 4);
  wf_tensor_release(out[0]);
  wf_tensor_release(out[1]);
  return both;
}

static void test_nhwc_pass_on_a_built_graph(void **state) {
  (void)state;
  int on[NOPS], no[NOPS];
  wf_tensor *y = run_built(1, on), *z = run_built(0, no);
  print_message("with onnx_nhwc %d Transpose, %d Pad, %d _FusedConv2D; "
                "without %d, %d, %d\n",
                on[TRANSPOSE], on[PAD], on[FUSED_CONV], no[TRANSPOSE],
                no[PAD], no[FUSED_CONV]);
  assert_int_equal(on[TRANSPOSE], 2);
  assert_int_equal(no[TRANSPOSE], 0);
  assert_int_equal(on[PAD], 1);
  assert_int_equal(on[FUSED_CONV], 1); /* Conv2D, BiasAdd, Relu in NHWC */
  expect_close(y, z, 1e-5, 1e-6);
  wf_tensor_release(y);
  wf_tensor_release(z);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_passes_fuse_the_exported_patterns),
      cmocka_unit_test(test_nhwc_pass_keeps_convolutions_channels_last),
      cmocka_unit_test(test_nhwc_pass_on_a_built_graph),
  };
  st = wf_status_new();
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  wf_status_free(st);
  return rc;
}
