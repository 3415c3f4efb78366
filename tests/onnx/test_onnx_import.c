/* tests/onnx/test_onnx_import.c — the ONNX importer (plugins/importers/
 * onnx) on models this test builds with the generated protobuf-c code: a
 * small dense model imports, runs and matches a reference computed here;
 * its float initializers become variables and its integer ones constants;
 * external data is read from beside the model; ai.onnx.preview.training's
 * Gradient differentiates it with weft's autodiff, and its Momentum runs
 * in a model of that domain alone. Bad input is refused with a
 * message naming the file and, for a node, its name and op type, never a
 * crash: a truncated or corrupt file, an unknown op, an unknown domain,
 * an opset outside the supported range, external data that leaves the
 * model's directory, raw data that disagrees with the initializer's shape,
 * shapes that disagree between a node's inputs, an undefined input, a
 * graph output nothing computes. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "onnx.pb-c.h"

static wf_status *st;
static wf_runtime *rt;
static char dir[64];

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

/* ---- building models (every allocation freed by arena_free) ------------ */

static void *arena[2048];
static int narena;

static void *alloc(size_t n) {
  void *p = calloc(1, n);
  assert_non_null(p);
  assert_true(narena < 2048);
  arena[narena++] = p;
  return p;
}

static void arena_free(void) {
  while (narena)
    free(arena[--narena]);
}

static char *str(const char *s) {
  char *p = alloc(strlen(s) + 1);
  memcpy(p, s, strlen(s) + 1);
  return p;
}

static Onnx__ValueInfoProto *value(const char *name, int elem, int rank,
                                   const int64_t *dims) {
  Onnx__ValueInfoProto *v = alloc(sizeof *v);
  Onnx__TypeProto *t = alloc(sizeof *t);
  Onnx__TypeProto__Tensor *tt = alloc(sizeof *tt);
  Onnx__TensorShapeProto *sh = alloc(sizeof *sh);
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(t);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sh);
  v->name = str(name);
  v->type = t;
  t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  t->tensor_type = tt;
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  tt->shape = sh;
  sh->n_dim = (size_t)rank;
  sh->dim = alloc(sizeof *sh->dim * (size_t)(rank ? rank : 1));
  for (int i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *d = alloc(sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    if (dims[i] < 0) { /* symbolic */
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = str("batch");
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[i];
    }
    sh->dim[i] = d;
  }
  return v;
}

static Onnx__NodeProto *node(const char *name, const char *op, int nin,
                             const char *const *in, const char *out) {
  Onnx__NodeProto *n = alloc(sizeof *n);
  onnx__node_proto__init(n);
  n->name = str(name);
  n->op_type = str(op);
  n->n_input = (size_t)nin;
  n->input = alloc(sizeof(char *) * (size_t)(nin ? nin : 1));
  for (int i = 0; i < nin; i++)
    n->input[i] = str(in[i]);
  n->n_output = 1;
  n->output = alloc(sizeof(char *));
  n->output[0] = str(out);
  return n;
}

/* A float initializer, typed (float_data) or raw (raw_data). */
static Onnx__TensorProto *weight(const char *name, int rank,
                                 const int64_t *dims, const float *v,
                                 size_t n, int raw) {
  Onnx__TensorProto *t = alloc(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = str(name);
  t->has_data_type = 1;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t->n_dims = (size_t)rank;
  t->dims = alloc(sizeof(int64_t) * (size_t)(rank ? rank : 1));
  memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
  if (raw) {
    t->has_raw_data = 1;
    t->raw_data.len = n * sizeof(float);
    t->raw_data.data = alloc(n * sizeof(float) + 1);
    memcpy(t->raw_data.data, v, n * sizeof(float));
  } else {
    t->n_float_data = n;
    t->float_data = alloc(n * sizeof(float) + 1);
    memcpy(t->float_data, v, n * sizeof(float));
  }
  return t;
}

/* y = relu(x w + b): x (batch, 3) symbolic batch, w (3, 2), b (2,). */
typedef struct model {
  Onnx__ModelProto m;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto op, op2;
  Onnx__OperatorSetIdProto *ops[2];
  Onnx__NodeProto *nodes[8];
  Onnx__TensorProto *inits[4];
  Onnx__ValueInfoProto *ins[2], *outs[3];
} model;

static const float W[6] = {1, -2, 3, 4, -5, 6}, B[2] = {0.5f, -0.5f};

static void dense(model *md, int opset) {
  static const int64_t xd[2] = {-1, 3}, yd[2] = {-1, 2}, wd[2] = {3, 2},
                       bd[1] = {2};
  memset(md, 0, sizeof *md);
  onnx__model_proto__init(&md->m);
  onnx__graph_proto__init(&md->g);
  onnx__operator_set_id_proto__init(&md->op);
  md->op.domain = str("");
  md->op.has_version = 1;
  md->op.version = opset;
  md->ops[0] = &md->op;
  md->m.has_ir_version = 1;
  md->m.ir_version = 8;
  md->m.n_opset_import = 1;
  md->m.opset_import = md->ops;
  md->m.graph = &md->g;
  md->g.name = str("dense");
  md->inits[0] = weight("w", 2, wd, W, 6, 0);
  md->inits[1] = weight("b", 1, bd, B, 2, 1);
  md->g.n_initializer = 2;
  md->g.initializer = md->inits;
  md->ins[0] = value("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, xd);
  md->g.n_input = 1;
  md->g.input = md->ins;
  md->outs[0] = value("y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, yd);
  md->g.n_output = 1;
  md->g.output = md->outs;
  md->nodes[0] = node("mm", "MatMul", 2, (const char *[]){"x", "w"}, "xw");
  md->nodes[1] = node("bias/add", "Add", 2, (const char *[]){"xw", "b"}, "z");
  md->nodes[2] = node("act", "Relu", 1, (const char *[]){"z"}, "y");
  md->g.n_node = 3;
  md->g.node = md->nodes;
}

static const char *in_dir(const char *name) {
  static char path[4][128];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", dir, name);
  return p;
}

static void write_bytes(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* Writes md to dir/name; returns its packed bytes' length (buf gets them
 * when not NULL, caller frees). */
static size_t save(const model *md, const char *name, uint8_t **buf) {
  size_t n = onnx__model_proto__get_packed_size(&md->m);
  uint8_t *b = malloc(n);
  assert_non_null(b);
  onnx__model_proto__pack(&md->m, b);
  write_bytes(in_dir(name), b, n);
  if (buf)
    *buf = b;
  else
    free(b);
  return n;
}

/* Imports dir/name expecting failure with each of the strings. */
static void expect_refused(const char *name, int code, ...) {
  va_list ap;
  wf_imported *m = wf_import(rt, in_dir(name), "onnx", st);
  if (m) {
    wf_imported_free(m);
    fail_msg("%s was imported", name);
  }
  if (code)
    assert_int_equal(wf_status_code(st), code);
  const char *msg = wf_status_message(st);
  if (!strstr(msg, name))
    fail_msg("the message does not name the file %s: %s", name, msg);
  va_start(ap, code);
  for (const char *s; (s = va_arg(ap, const char *));)
    if (!strstr(msg, s))
      fail_msg("the message lacks '%s': %s", s, msg);
  va_end(ap);
}

/* ---- tests ------------------------------------------------------------- */

static void check_dense_output(wf_imported *m) {
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  int ninit;
  wf_node *const *init = wf_imported_init(m, &ninit);
  assert_int_equal(ninit, 2); /* w and b are variables */
  assert_int_equal(sig->ninputs, 1);
  assert_string_equal(sig->input_keys[0], "x");
  assert_string_equal(sig->output_keys[0], "y");
  wf_session *s = wf_session_new(wf_imported_graph(m), st);
  OK(!s);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, ninit, NULL,
                    st));
  /* a batch of 4 rows, though the model was built with a symbolic batch */
  const float xv[12] = {1, 2, 3, -1, 0.5f, 2, 0, 0, 0, 4, -3, 1};
  int64_t dims[2] = {4, 3};
  wf_tensor *x = wf_tensor_new(WF_FLOAT32, dims, 2, st), *y = NULL;
  memcpy(wf_tensor_data(x), xv, sizeof xv);
  OK(wf_session_run(s, NULL, sig->inputs, &x, 1, sig->outputs, &y, 1, NULL, 0,
                    NULL, st));
  assert_int_equal(wf_tensor_dim(y, 0), 4);
  assert_int_equal(wf_tensor_dim(y, 1), 2);
  const float *got = wf_tensor_data(y);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++) {
      double z = B[j];
      for (int k = 0; k < 3; k++)
        z += (double)xv[i * 3 + k] * W[k * 2 + j];
      double want = z > 0 ? z : 0;
      if (got[i * 2 + j] < want - 1e-5 || got[i * 2 + j] > want + 1e-5)
        fail_msg("y[%d][%d] = %g, want %g (1e-5)", i, j, got[i * 2 + j],
                 want);
    }
  wf_tensor_release(x);
  wf_tensor_release(y);
  wf_session_free(s);
}

static void test_dense_model_imports_and_runs(void **state) {
  (void)state;
  model md;
  dense(&md, 13);
  save(&md, "dense.onnx", NULL);
  wf_imported *m = wf_import(rt, in_dir("dense.onnx"), NULL, st);
  OK(!m);
  assert_string_equal(wf_imported_format(m), "onnx");
  check_dense_output(m);
  wf_imported_free(m);
  /* chosen by its first bytes without the extension */
  save(&md, "dense.bin", NULL);
  m = wf_import(rt, in_dir("dense.bin"), NULL, st);
  OK(!m);
  wf_imported_free(m);
  arena_free();
}

static void test_saved_model_of_an_onnx_file_runs(void **state) {
  (void)state;
  model md;
  dense(&md, 17);
  save(&md, "dense.onnx", NULL);
  OK(wf_import_saved_model(rt, in_dir("dense.onnx"), "onnx", in_dir("saved"),
                           st));
  wf_saved_model *sm = wf_saved_model_load(rt, in_dir("saved"), st);
  OK(!sm);
  assert_true(wf_saved_model_find_signature(sm, "serving_default") >= 0);
  wf_saved_model_free(sm);
  arena_free();
}

static void test_external_data_is_read_beside_the_model(void **state) {
  (void)state;
  model md;
  dense(&md, 13);
  /* w's values in a file of their own, after 8 bytes of something else */
  uint8_t blob[8 + sizeof W] = {0};
  memcpy(blob + 8, W, sizeof W);
  write_bytes(in_dir("weights.bin"), blob, sizeof blob);
  Onnx__TensorProto *w = md.inits[0];
  w->n_float_data = 0;
  w->has_data_location = 1;
  w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  Onnx__StringStringEntryProto *e[2];
  const char *kv[2][2] = {{"location", "weights.bin"}, {"offset", "8"}};
  for (int i = 0; i < 2; i++) {
    e[i] = alloc(sizeof *e[i]);
    onnx__string_string_entry_proto__init(e[i]);
    e[i]->key = str(kv[i][0]);
    e[i]->value = str(kv[i][1]);
  }
  w->n_external_data = 2;
  w->external_data = e;
  save(&md, "external.onnx", NULL);
  wf_imported *m = wf_import(rt, in_dir("external.onnx"), "onnx", st);
  OK(!m);
  check_dense_output(m);
  wf_imported_free(m);

  /* a location that leaves the model's directory is refused */
  e[0]->value = str("../../etc/passwd");
  save(&md, "escape.onnx", NULL);
  expect_refused("escape.onnx", WF_PERMISSION_DENIED, "initializer 'w'",
                 "leaves the model's directory", NULL);
  e[0]->value = str("/etc/passwd");
  save(&md, "absolute.onnx", NULL);
  expect_refused("absolute.onnx", WF_PERMISSION_DENIED, "initializer 'w'",
                 NULL);
  /* a file too short for the shape */
  e[1]->value = str("20");
  e[0]->value = str("weights.bin");
  save(&md, "short.onnx", NULL);
  expect_refused("short.onnx", WF_DATA_LOSS, "initializer 'w'", NULL);
  arena_free();
}

static void test_truncated_and_corrupt_files_are_refused(void **state) {
  (void)state;
  model md;
  uint8_t *b;
  dense(&md, 13);
  size_t n = save(&md, "whole.onnx", &b);
  /* every prefix: refused or (a prefix that happens to parse) imported,
   * never a crash; the half-way cut must be refused */
  for (size_t k = 0; k < n; k += 7) {
    write_bytes(in_dir("cut.onnx"), b, k);
    wf_imported *m = wf_import(rt, in_dir("cut.onnx"), "onnx", st);
    if (m)
      wf_imported_free(m);
    else
      assert_non_null(strstr(wf_status_message(st), "cut.onnx"));
  }
  write_bytes(in_dir("half.onnx"), b, n / 2);
  expect_refused("half.onnx", 0, NULL);
  /* flipped bytes, one at a time */
  for (size_t k = 0; k < n; k += 5) {
    b[k] ^= 0xa5;
    write_bytes(in_dir("flip.onnx"), b, n);
    wf_imported *m = wf_import(rt, in_dir("flip.onnx"), "onnx", st);
    if (m)
      wf_imported_free(m);
    else
      assert_non_null(strstr(wf_status_message(st), "flip.onnx"));
    b[k] ^= 0xa5;
  }
  write_bytes(in_dir("text.onnx"), "not a model at all\n", 19);
  expect_refused("text.onnx", WF_DATA_LOSS, "not an ONNX model", NULL);
  free(b);
  arena_free();
}

static void test_unknown_ops_and_domains_name_the_node(void **state) {
  (void)state;
  model md;
  dense(&md, 13);
  md.nodes[2]->op_type = str("Frobnicate");
  save(&md, "unknown_op.onnx", NULL);
  expect_refused("unknown_op.onnx", WF_UNIMPLEMENTED, "'act'", "Frobnicate",
                 "not supported", NULL);
  dense(&md, 13);
  md.nodes[1]->domain = str("com.example");
  save(&md, "domain.onnx", NULL);
  expect_refused("domain.onnx", WF_UNIMPLEMENTED, "'bias/add'",
                 "com.example", "Add", NULL);
  arena_free();
}

static void test_opsets_outside_the_range_are_refused(void **state) {
  (void)state;
  model md;
  dense(&md, 99);
  save(&md, "opset99.onnx", NULL);
  expect_refused("opset99.onnx", WF_UNIMPLEMENTED, "opset 99",
                 "supported range", NULL);
  dense(&md, 0);
  save(&md, "opset0.onnx", NULL);
  expect_refused("opset0.onnx", WF_UNIMPLEMENTED, "opset 0", NULL);
  arena_free();
}

static void test_shapes_that_disagree_are_refused(void **state) {
  (void)state;
  model md;
  /* raw data shorter than the initializer's shape */
  dense(&md, 13);
  md.inits[1]->raw_data.len = 4;
  save(&md, "raw.onnx", NULL);
  expect_refused("raw.onnx", WF_INVALID_ARGUMENT, "initializer 'b'",
                 "raw_data", NULL);
  /* typed data with fewer values than the shape */
  dense(&md, 13);
  md.inits[0]->n_float_data = 5;
  save(&md, "typed.onnx", NULL);
  expect_refused("typed.onnx", WF_INVALID_ARGUMENT, "initializer 'w'", NULL);
  /* w of shape (4, 2) cannot multiply x (batch, 3) */
  dense(&md, 13);
  md.inits[0]->dims[0] = 4;
  md.inits[0]->n_float_data = 8;
  md.inits[0]->float_data = alloc(8 * sizeof(float));
  save(&md, "matmul.onnx", NULL);
  expect_refused("matmul.onnx", WF_INVALID_ARGUMENT, "'mm'", "MatMul", NULL);
  arena_free();
}

/* Strings: words (?,) -> StringNormalizer(stopwords [monday], UPPER) -> y;
 * a string initializer days (2,) -> Identity -> d. */
static void strings_model(model *md) {
  static const int64_t any[1] = {-1}, two[1] = {2};
  memset(md, 0, sizeof *md);
  onnx__model_proto__init(&md->m);
  onnx__graph_proto__init(&md->g);
  onnx__operator_set_id_proto__init(&md->op);
  md->op.domain = str("");
  md->op.has_version = 1;
  md->op.version = 13;
  md->ops[0] = &md->op;
  md->m.has_ir_version = 1;
  md->m.ir_version = 8;
  md->m.n_opset_import = 1;
  md->m.opset_import = md->ops;
  md->m.graph = &md->g;
  md->g.name = str("strings");
  Onnx__TensorProto *t = alloc(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = str("days");
  t->has_data_type = 1;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
  t->n_dims = 1;
  t->dims = alloc(sizeof(int64_t));
  t->dims[0] = 2;
  t->n_string_data = 2;
  t->string_data = alloc(2 * sizeof *t->string_data);
  t->string_data[0] = (ProtobufCBinaryData){6, (uint8_t *)str("friday")};
  t->string_data[1] = (ProtobufCBinaryData){3, alloc(3)};
  memcpy(t->string_data[1].data, "a\0b", 3);
  md->inits[0] = t;
  md->g.n_initializer = 1;
  md->g.initializer = md->inits;
  md->ins[0] = value("words", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, any);
  md->g.n_input = 1;
  md->g.input = md->ins;
  md->outs[0] = value("y", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, any);
  md->outs[1] = value("d", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, two);
  md->outs[2] = value("c", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, two);
  md->g.n_output = 3;
  md->g.output = md->outs;
  Onnx__NodeProto *n = node("norm", "StringNormalizer", 1,
                            (const char *[]){"words"}, "y");
  Onnx__AttributeProto *a = alloc(2 * sizeof *a);
  n->n_attribute = 2;
  n->attribute = alloc(2 * sizeof *n->attribute);
  for (int i = 0; i < 2; i++) {
    onnx__attribute_proto__init(&a[i]);
    n->attribute[i] = &a[i];
  }
  a[0].name = str("case_change_action");
  a[0].has_type = 1;
  a[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a[0].has_s = 1;
  a[0].s = (ProtobufCBinaryData){5, (uint8_t *)str("UPPER")};
  a[1].name = str("stopwords");
  a[1].has_type = 1;
  a[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  a[1].n_strings = 1;
  a[1].strings = alloc(sizeof *a[1].strings);
  a[1].strings[0] = (ProtobufCBinaryData){6, (uint8_t *)str("monday")};
  md->nodes[0] = n;
  md->nodes[1] = node("copy", "Identity", 1, (const char *[]){"days"}, "d");
  /* a Constant of value_strings */
  Onnx__NodeProto *c = node("words2", "Constant", 0, NULL, "c");
  Onnx__AttributeProto *v = alloc(sizeof *v);
  onnx__attribute_proto__init(v);
  v->name = str("value_strings");
  v->has_type = 1;
  v->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  v->n_strings = 2;
  v->strings = alloc(2 * sizeof *v->strings);
  v->strings[0] = (ProtobufCBinaryData){1, (uint8_t *)str("x")};
  v->strings[1] = (ProtobufCBinaryData){2, (uint8_t *)str("yz")};
  c->n_attribute = 1;
  c->attribute = alloc(sizeof *c->attribute);
  c->attribute[0] = v;
  md->nodes[2] = c;
  md->g.n_node = 3;
  md->g.node = md->nodes;
}

static void test_string_model_imports_saves_and_runs(void **state) {
  (void)state;
  model md;
  strings_model(&md);
  save(&md, "strings.onnx", NULL);
  OK(wf_import_saved_model(rt, in_dir("strings.onnx"), "onnx",
                           in_dir("saved_strings"), st));
  wf_saved_model *sm = wf_saved_model_load(rt, in_dir("saved_strings"), st);
  OK(!sm);
  int sig = wf_saved_model_find_signature(sm, "serving_default");
  assert_true(sig >= 0);
  wf_signature_arg arg;
  wf_saved_model_input(sm, sig, 0, &arg);
  assert_int_equal(arg.dtype, WF_STRING);
  const char *words[4] = {"monday", "Tuesday", "\xc3\xa9t\xc3\xa9", "sunday"};
  int64_t dims[1] = {4};
  wf_tensor *x = wf_tensor_new_strings(dims, 1, words, NULL, st), *out[3];
  const char *key = "words";
  OK(wf_npy_write(in_dir("words.npy"), x, st));
  OK(wf_saved_model_run(sm, sig, &key, &x, 1, out, st));
  const char *want[3] = {"TUESDAY", "\xc3\x89T\xc3\x89", "SUNDAY"};
  assert_int_equal(wf_tensor_count(out[0]), 3);
  for (int i = 0; i < 3; i++)
    assert_string_equal(wf_tensor_string(out[0], i, NULL), want[i]);
  size_t len;
  assert_memory_equal(wf_tensor_string(out[1], 1, &len), "a\0b", 3);
  assert_int_equal(len, 3);
  assert_int_equal(wf_tensor_count(out[2]), 2);
  assert_string_equal(wf_tensor_string(out[2], 1, NULL), "yz");
  /* a float tensor where strings are wanted names the input */
  wf_tensor *f = wf_tensor_new(WF_FLOAT32, dims, 1, st), *none[3];
  assert_int_not_equal(wf_saved_model_run(sm, sig, &key, &f, 1, none, st), 0);
  if (!strstr(wf_status_message(st), "words"))
    fail_msg("%s", wf_status_message(st));
  wf_tensor_release(f);
  wf_tensor_release(x);
  for (int k = 0; k < 3; k++)
    wf_tensor_release(out[k]);
  wf_saved_model_free(sm);

  /* and from the command line, strings read and written as .npy text */
  char cmd[1024], model_dir[128], words_npy[128];
  snprintf(model_dir, sizeof model_dir, "%s", in_dir("cli_strings"));
  snprintf(words_npy, sizeof words_npy, "%s", in_dir("words.npy"));
  snprintf(cmd, sizeof cmd,
           "%s/tools/weft import %s --output %s >/dev/null && "
           "%s/tools/weft run %s --input words=%s --output %s >/dev/null",
           TEST_BUILDDIR, in_dir("strings.onnx"), model_dir, TEST_BUILDDIR,
           model_dir, words_npy, in_dir("cli_out"));
  if (system(cmd) != 0)
    fail_msg("failed: %s", cmd);
  wf_tensor *y = wf_npy_read(in_dir("cli_out/y.npy"), st);
  OK(!y);
  assert_int_equal(wf_tensor_dtype(y), WF_STRING);
  assert_int_equal(wf_tensor_count(y), 3);
  for (int i = 0; i < 3; i++)
    assert_string_equal(wf_tensor_string(y, i, NULL), want[i]);
  wf_tensor_release(y);

  /* strings kept elsewhere than in string_data, or too few of them */
  strings_model(&md);
  md.inits[0]->has_raw_data = 1;
  md.inits[0]->raw_data = (ProtobufCBinaryData){4, (uint8_t *)str("abcd")};
  save(&md, "raw_strings.onnx", NULL);
  expect_refused("raw_strings.onnx", WF_INVALID_ARGUMENT, "'days'",
                 "string_data, not in raw_data", NULL);
  strings_model(&md);
  md.inits[0]->n_string_data = 1;
  save(&md, "few_strings.onnx", NULL);
  expect_refused("few_strings.onnx", WF_INVALID_ARGUMENT, "'days'",
                 "holds 1 strings; its shape needs 2", NULL);
  arena_free();
}

static void test_dangling_names_are_refused(void **state) {
  (void)state;
  model md;
  dense(&md, 13);
  md.nodes[1]->input[0] = str("nowhere");
  save(&md, "dangling.onnx", NULL);
  expect_refused("dangling.onnx", WF_INVALID_ARGUMENT, "'bias/add'",
                 "'nowhere'", "not defined", NULL);
  dense(&md, 13);
  md.outs[0]->name = str("ghost");
  save(&md, "ghost.onnx", NULL);
  expect_refused("ghost.onnx", WF_INVALID_ARGUMENT, "'ghost'", NULL);
  dense(&md, 13);
  md.nodes[2]->output[0] = str("z"); /* z defined twice */
  save(&md, "twice.onnx", NULL);
  expect_refused("twice.onnx", WF_INVALID_ARGUMENT, "'act'", "'z'",
                 "already defined", NULL);
  arena_free();
}

/* Adds to the dense model (y = relu(x w + b)) the graph input "u" (which
 * y does not depend on) and ai.onnx.preview.training's Gradient of y with
 * respect to xs (x, w, u), outputs named "d" + each, also graph outputs. */
static void dense_gradient(model *md, int import_preview) {
  static const int64_t xd[2] = {-1, 3}, wd[2] = {3, 2}, ud[1] = {5};
  static const char *const xs[3] = {"x", "w", "u"};
  Onnx__NodeProto *n;
  Onnx__AttributeProto *ax = alloc(sizeof *ax), *ay = alloc(sizeof *ay);

  dense(md, 13);
  onnx__operator_set_id_proto__init(&md->op2);
  md->op2.domain = str("ai.onnx.preview.training");
  md->op2.has_version = 1;
  md->op2.version = 1;
  md->ops[1] = &md->op2;
  md->m.n_opset_import = import_preview ? 2 : 1;
  md->ins[1] = value("u", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, ud);
  md->g.n_input = 2;
  n = node("grad", "Gradient", 3, xs, "dx");
  n->domain = str("ai.onnx.preview.training");
  n->n_output = 3;
  n->output = alloc(3 * sizeof(char *));
  n->output[0] = str("dx"), n->output[1] = str("dw"), n->output[2] = str("du");
  onnx__attribute_proto__init(ax);
  ax->name = str("xs");
  ax->has_type = 1;
  ax->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  ax->n_strings = 3;
  ax->strings = alloc(3 * sizeof *ax->strings);
  for (int i = 0; i < 3; i++) {
    ax->strings[i].data = (uint8_t *)str(xs[i]);
    ax->strings[i].len = strlen(xs[i]);
  }
  onnx__attribute_proto__init(ay);
  ay->name = str("y");
  ay->has_type = 1;
  ay->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  ay->has_s = 1;
  ay->s.data = (uint8_t *)str("y");
  ay->s.len = 1;
  n->n_attribute = 2;
  n->attribute = alloc(2 * sizeof *n->attribute);
  n->attribute[0] = ax, n->attribute[1] = ay;
  md->nodes[3] = n;
  md->g.n_node = 4;
  md->outs[0] = value("dx", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, xd);
  md->outs[1] = value("dw", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, wd);
  md->g.n_output = 2;
}

/* Gradient: weft's autodiff gives d(sum y)/dx and d(sum y)/dw, checked
 * against the derivative worked out here; u, which y does not depend on,
 * gets zeros. Bad Gradient nodes are refused naming the node. */
static void test_gradient_op_differentiates_the_model(void **state) {
  (void)state;
  model md;
  dense_gradient(&md, 1);
  save(&md, "gradient.onnx", NULL);
  wf_imported *m = wf_import(rt, in_dir("gradient.onnx"), "onnx", st);
  OK(!m);
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  int ninit;
  wf_node *const *init = wf_imported_init(m, &ninit);
  wf_session *s = wf_session_new(wf_imported_graph(m), st);
  OK(!s);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, ninit, NULL,
                    st));
  const float xv[12] = {1, 2, 3, -1, 0.5f, 2, 0, 0, 0, 4, -3, 1};
  int64_t xd[2] = {4, 3}, ud[1] = {5};
  wf_tensor *in[2] = {wf_tensor_new(WF_FLOAT32, xd, 2, st),
                      wf_tensor_new(WF_FLOAT32, ud, 1, st)};
  memcpy(wf_tensor_data(in[0]), xv, sizeof xv);
  memset(wf_tensor_data(in[1]), 0, 5 * sizeof(float));
  assert_int_equal(sig->ninputs, 2);
  assert_int_equal(sig->noutputs, 2);
  wf_tensor *out[2] = {NULL, NULL};
  OK(wf_session_run(s, NULL, sig->inputs, in, 2, sig->outputs, out, 2, NULL,
                    0, NULL, st));
  /* mask[i][j] = x w + b > 0; dx = mask W^T, dw = x^T mask */
  int mask[4][2];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++) {
      double z = B[j];
      for (int k = 0; k < 3; k++)
        z += (double)xv[i * 3 + k] * W[k * 2 + j];
      mask[i][j] = z > 0;
    }
  const float *dx = wf_tensor_data(out[0]), *dw = wf_tensor_data(out[1]);
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 3; k++) {
      double want = mask[i][0] * W[k * 2] + mask[i][1] * W[k * 2 + 1];
      if (dx[i * 3 + k] != (float)want)
        fail_msg("dx[%d][%d] = %g, want %g", i, k, dx[i * 3 + k], want);
    }
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < 2; j++) {
      double want = 0;
      for (int i = 0; i < 4; i++)
        want += mask[i][j] * xv[i * 3 + k];
      if (dw[k * 2 + j] < want - 1e-5 || dw[k * 2 + j] > want + 1e-5)
        fail_msg("dw[%d][%d] = %g, want %g (1e-5)", k, j, dw[k * 2 + j],
                 want);
    }
  for (int i = 0; i < 2; i++)
    wf_tensor_release(out[i]);
  wf_session_free(s);
  wf_imported_free(m);

  /* u gets zeros */
  dense_gradient(&md, 1);
  md.outs[0] = md.outs[1];
  md.outs[1] = value("du", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, ud);
  save(&md, "gradient_zeros.onnx", NULL);
  OK(!(m = wf_import(rt, in_dir("gradient_zeros.onnx"), "onnx", st)));
  sig = wf_imported_signature(m, 0);
  init = wf_imported_init(m, &ninit);
  OK(!(s = wf_session_new(wf_imported_graph(m), st)));
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, ninit, NULL,
                    st));
  for (int i = 0; i < 5; i++)
    ((float *)wf_tensor_data(in[1]))[i] = (float)i + 1;
  OK(wf_session_run(s, NULL, sig->inputs, in, 2, sig->outputs, out, 2, NULL,
                    0, NULL, st));
  assert_int_equal(wf_tensor_count(out[1]), 5);
  for (int i = 0; i < 5; i++)
    assert_true(((const float *)wf_tensor_data(out[1]))[i] == 0.0f);
  for (int i = 0; i < 2; i++) {
    wf_tensor_release(out[i]);
    wf_tensor_release(in[i]);
  }
  wf_session_free(s);
  wf_imported_free(m);

  /* refusals, each naming the node */
  dense_gradient(&md, 0);
  save(&md, "gradient_noimport.onnx", NULL);
  expect_refused("gradient_noimport.onnx", WF_UNIMPLEMENTED, "'grad'",
                 "ai.onnx.preview.training", "imports no opset", NULL);
  dense_gradient(&md, 1);
  md.op2.version = 2;
  save(&md, "gradient_v2.onnx", NULL);
  expect_refused("gradient_v2.onnx", WF_UNIMPLEMENTED,
                 "ai.onnx.preview.training", "only 1", NULL);
  dense_gradient(&md, 1);
  md.nodes[3]->attribute[1]->s.data = (uint8_t *)str("q");
  save(&md, "gradient_noy.onnx", NULL);
  expect_refused("gradient_noy.onnx", WF_INVALID_ARGUMENT, "'grad'", "'q'",
                 NULL);
  dense_gradient(&md, 1);
  md.nodes[3]->input[1] = str("b");
  save(&md, "gradient_xs.onnx", NULL);
  expect_refused("gradient_xs.onnx", WF_INVALID_ARGUMENT, "'grad'",
                 "xs[1] 'w'", NULL);
  dense_gradient(&md, 1);
  md.nodes[3]->n_output = 2;
  save(&md, "gradient_outs.onnx", NULL);
  expect_refused("gradient_outs.onnx", WF_INVALID_ARGUMENT, "'grad'",
                 "one output per x", NULL);
  arena_free();
}

/* A model of ai.onnx.preview.training alone: Momentum(R, T, X, G, V) ->
 * (X_new, V_new) with the given mode; with relu, a default-domain Relu of
 * X_new too. */
static void momentum_model(model *md, const char *mode, int relu) {
  static const int64_t one[1] = {1};
  static const char *const in[5] = {"R", "T", "X", "G", "V"};
  Onnx__AttributeProto *a[4];
  static const char *const names[4] = {"alpha", "beta", "norm_coefficient",
                                       "mode"};

  memset(md, 0, sizeof *md);
  onnx__model_proto__init(&md->m);
  onnx__graph_proto__init(&md->g);
  onnx__operator_set_id_proto__init(&md->op);
  md->op.domain = str("ai.onnx.preview.training");
  md->op.has_version = 1;
  md->op.version = 1;
  md->ops[0] = &md->op;
  md->m.has_ir_version = 1;
  md->m.ir_version = 8;
  md->m.n_opset_import = 1;
  md->m.opset_import = md->ops;
  md->m.graph = &md->g;
  md->g.name = str("momentum");
  md->g.n_input = 0;
  md->g.input = alloc(5 * sizeof *md->g.input);
  for (int i = 0; i < 5; i++)
    md->g.input[md->g.n_input++] =
        value(in[i],
              i == 1 ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                     : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
              i < 2 ? 0 : 1, one);
  Onnx__NodeProto *n = node("opt", "Momentum", 5, in, "X_new");
  n->domain = str("ai.onnx.preview.training");
  n->n_output = 2;
  n->output = alloc(2 * sizeof(char *));
  n->output[0] = str("X_new"), n->output[1] = str("V_new");
  for (int i = 0; i < 4; i++) {
    a[i] = alloc(sizeof *a[i]);
    onnx__attribute_proto__init(a[i]);
    a[i]->name = str(names[i]);
    a[i]->has_type = 1;
    if (i < 3) {
      a[i]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
      a[i]->has_f = 1;
      a[i]->f = 0.5f;
    } else {
      a[i]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
      a[i]->has_s = 1;
      a[i]->s.data = (uint8_t *)str(mode);
      a[i]->s.len = strlen(mode);
    }
  }
  n->n_attribute = 4;
  n->attribute = alloc(4 * sizeof *n->attribute);
  memcpy(n->attribute, a, sizeof a);
  md->nodes[0] = n;
  md->g.node = md->nodes;
  md->g.n_node = 1;
  if (relu) {
    md->nodes[1] = node("act", "Relu", 1, (const char *[]){"X_new"}, "Y");
    md->g.n_node = 2;
  }
  md->outs[0] = value(relu ? "Y" : "X_new",
                      ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, one);
  md->g.n_output = 1;
  md->g.output = md->outs;
}

/* The optimizer ops of ai.onnx.preview.training (their numbers are the
 * conformance cases' node/test_adagrad*, test_adam*, test_momentum*):
 * a Momentum step runs in a model that imports that domain alone, and bad
 * ones are refused naming the node. */
static void test_training_ops_import_and_refuse_bad_nodes(void **state) {
  (void)state;
  model md;
  momentum_model(&md, "standard", 0);
  save(&md, "momentum.onnx", NULL);
  wf_imported *m = wf_import(rt, in_dir("momentum.onnx"), "onnx", st);
  OK(!m);
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  wf_session *s = wf_session_new(wf_imported_graph(m), st);
  OK(!s);
  int64_t one[1] = {1};
  wf_tensor *in[5], *y = NULL;
  const float fv[5] = {0.1f, 0, 2, -1, 3}; /* R, -, X, G, V */
  for (int i = 0; i < 5; i++) {
    in[i] = i == 1 ? wf_tensor_new(WF_INT64, NULL, 0, st)
                   : wf_tensor_new(WF_FLOAT32, one, i < 2 ? 0 : 1, st);
    if (i == 1)
      *(int64_t *)wf_tensor_data(in[i]) = 3;
    else
      *(float *)wf_tensor_data(in[i]) = fv[i];
  }
  assert_int_equal(sig->ninputs, 5);
  OK(wf_session_run(s, NULL, sig->inputs, in, 5, sig->outputs, &y, 1, NULL,
                    0, NULL, st));
  /* G_reg = 0.5 * 2 - 1 = 0; V_new = 0.5 * 3 + 0.5 * 0 = 1.5 (T > 0: beta
   * as given); X_new = 2 - 0.1 * 1.5 */
  float got = *(const float *)wf_tensor_data(y);
  if (got < 1.85f - 1e-6f || got > 1.85f + 1e-6f)
    fail_msg("X_new = %.9g, want 1.85", got);
  wf_tensor_release(y);
  for (int i = 0; i < 5; i++)
    wf_tensor_release(in[i]);
  wf_session_free(s);
  wf_imported_free(m);

  momentum_model(&md, "sideways", 0);
  save(&md, "momentum_mode.onnx", NULL);
  expect_refused("momentum_mode.onnx", WF_INVALID_ARGUMENT, "'opt'",
                 "'sideways'", NULL);
  momentum_model(&md, "standard", 0);
  md.nodes[0]->n_input = 4;
  save(&md, "momentum_inputs.onnx", NULL);
  expect_refused("momentum_inputs.onnx", WF_INVALID_ARGUMENT, "'opt'",
                 "4 inputs", NULL);
  momentum_model(&md, "standard", 0);
  md.nodes[0]->op_type = str("Lamb");
  save(&md, "lamb.onnx", NULL);
  expect_refused("lamb.onnx", WF_UNIMPLEMENTED, "'opt'", "Lamb", NULL);
  momentum_model(&md, "standard", 1);
  save(&md, "momentum_relu.onnx", NULL);
  expect_refused("momentum_relu.onnx", WF_INVALID_ARGUMENT, "'act'",
                 "no opset of the default domain", NULL);
  arena_free();
}

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  snprintf(dir, sizeof dir, "/tmp/weft-onnx-XXXXXX");
  assert_non_null(mkdtemp(dir));
  rt = wf_runtime_new(NULL, st);
  if (!rt) {
    fprintf(stderr, "runtime: %s\n", wf_status_message(st));
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  wf_runtime_free(rt);
  wf_status_free(st);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dense_model_imports_and_runs),
      cmocka_unit_test(test_saved_model_of_an_onnx_file_runs),
      cmocka_unit_test(test_string_model_imports_saves_and_runs),
      cmocka_unit_test(test_external_data_is_read_beside_the_model),
      cmocka_unit_test(test_truncated_and_corrupt_files_are_refused),
      cmocka_unit_test(test_unknown_ops_and_domains_name_the_node),
      cmocka_unit_test(test_opsets_outside_the_range_are_refused),
      cmocka_unit_test(test_shapes_that_disagree_are_refused),
      cmocka_unit_test(test_dangling_names_are_refused),
      cmocka_unit_test(test_gradient_op_differentiates_the_model),
      cmocka_unit_test(test_training_ops_import_and_refuse_bad_nodes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
