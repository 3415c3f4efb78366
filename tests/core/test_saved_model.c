/* tests/core/test_saved_model.c — saved models (core/io/saved_model.c): an
 * exported model loaded into a new runtime computes what the original
 * session did; exports replace a model atomically and refuse signatures a
 * model cannot carry; loading names the file and problem of every broken
 * part; running checks its inputs by key. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PLUGINS                                                                \
  TEST_BUILDDIR "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/nn/.libs, " TEST_BUILDDIR                        \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/train/.libs, " TEST_BUILDDIR                     \
                "/plugins/devices/cpu/.libs"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond)                                                                  \
      fail_msg("%s:%d: %s", __FILE__, __LINE__, wf_status_message(st));        \
  } while (0)

static wf_status *st;
static char dir[256];

static wf_runtime *new_runtime(void) {
  wf_config *cfg = wf_config_new();
  CHECK(wf_config_set(cfg, "plugins", "paths", PLUGINS, st) ||
        wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
        wf_config_set(cfg, "plugins", "use_env_path", "false", st));
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  CHECK(!rt);
  return rt;
}

/* A trained-looking model: x (N, 5) -> dense 7 relu -> dense 3 -> logits,
 * softmax, argmax; variables initialised from a seed. */
typedef struct model {
  wf_runtime *rt;
  wf_graph *g;
  wf_model *m;
  wf_session *s;
  wf_output x, other, logits, probs, cls;
} model;

static wf_node *placeholder(wf_graph *g, const char *name, int64_t width) {
  int64_t dims[2] = {-1, width};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", dims, 2);
  wf_node *n = wf_node_desc_finish(d, st);
  CHECK(!n);
  return n;
}

static void model_build(model *md, uint64_t seed, int init) {
  memset(md, 0, sizeof *md);
  md->rt = new_runtime();
  md->g = wf_graph_new(md->rt);
  md->x = (wf_output){placeholder(md->g, "x", 5), 0};
  md->other = (wf_output){placeholder(md->g, "other", 5), 0};
  md->m = wf_model_new(md->g, seed, st);
  CHECK(!md->m);
  wf_model_begin(md->m, 0);
  wf_output h = wf_layer_dense(md->m, md->x, 7, WF_ACT_RELU, st);
  md->logits = wf_layer_dense(md->m, h, 3, WF_ACT_NONE, st);
  CHECK(!md->logits.node);
  wf_node_desc *d = wf_node_desc_new(md->g, "Softmax", "probs");
  wf_node_desc_add_input(d, md->logits);
  md->probs = (wf_output){wf_node_desc_finish(d, st), 0};
  CHECK(!md->probs.node);
  d = wf_node_desc_new(md->g, "ArgMax", "cls");
  wf_node_desc_add_input(d, md->logits);
  wf_node_desc_set_attr_int(d, "axis", 1);
  wf_node_desc_set_attr_dtype(d, "output_type", WF_INT64);
  md->cls = (wf_output){wf_node_desc_finish(d, st), 0};
  CHECK(!md->cls.node);
  wf_node *initop = wf_model_init_op(md->m, st);
  CHECK(!initop);
  md->s = wf_session_new(md->g, st);
  CHECK(!md->s);
  if (init)
    CHECK(wf_session_run(md->s, NULL, NULL, NULL, 0, NULL, NULL, 0, &initop,
                         1, NULL, st));
}

static void model_free(model *md) {
  wf_session_free(md->s);
  wf_model_free(md->m);
  wf_graph_free(md->g);
  wf_runtime_free(md->rt);
}

static wf_tensor *batch(int n, float offset) {
  int64_t dims[2] = {n, 5};
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 2, st);
  CHECK(!t);
  float *p = wf_tensor_data(t);
  for (int i = 0; i < n * 5; i++)
    p[i] = sinf((float)i * 0.7f) + offset;
  return t;
}

static const char *in_keys[] = {"x"};
static const char *out_keys[] = {"logits", "probabilities", "class"};

static wf_signature_def serve(model *md, wf_output *outs) {
  outs[0] = md->logits;
  outs[1] = md->probs;
  outs[2] = md->cls;
  wf_signature_def d = {"serve", 1, in_keys, &md->x, 3, out_keys, outs};
  return d;
}

static char *path_in(const char *file) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", dir, file);
  return buf;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

static void assert_message_has(const char *a, const char *b) {
  const char *msg = wf_status_message(st);
  if (!strstr(msg, a) || (b && !strstr(msg, b)))
    fail_msg("message \"%s\" lacks \"%s\"%s%s", msg, a, b ? " or " : "",
             b ? b : "");
}

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  snprintf(dir, sizeof dir, "/tmp/weft-saved-model-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  wf_status_free(st);
  return 0;
}

/* ---- round trip --------------------------------------------------------------- */

static void test_loaded_model_computes_what_the_session_did(void **state) {
  (void)state;
  model md;
  model_build(&md, 11, 1);
  wf_output outs[3];
  wf_signature_def sig = serve(&md, outs);
  wf_tensor *x = batch(4, 0.25f), *want[3];
  CHECK(wf_session_run(md.s, NULL, &md.x, &x, 1, outs, want, 3, NULL, 0, NULL,
                       st));
  CHECK(wf_saved_model_export(md.s, path_in("m"), &sig, 1, st));
  model_free(&md);

  wf_runtime *rt = new_runtime();
  wf_saved_model *sm = wf_saved_model_load(rt, path_in("m"), st);
  CHECK(!sm);
  assert_int_equal(wf_saved_model_num_signatures(sm), 1);
  int sg = wf_saved_model_find_signature(sm, "serve");
  assert_int_equal(sg, 0);
  assert_int_equal(wf_saved_model_find_signature(sm, NULL), 0);
  assert_int_equal(wf_saved_model_find_signature(sm, "train"), -1);
  assert_int_equal(wf_saved_model_num_inputs(sm, sg), 1);
  assert_int_equal(wf_saved_model_num_outputs(sm, sg), 3);
  wf_signature_arg a;
  wf_saved_model_input(sm, sg, 0, &a);
  assert_string_equal(a.key, "x");
  assert_int_equal(a.dtype, WF_FLOAT32);
  assert_int_equal(a.shape.rank, 2);
  assert_int_equal(a.shape.dims[0], -1);
  assert_int_equal(a.shape.dims[1], 5);
  wf_saved_model_output(sm, sg, 2, &a);
  assert_string_equal(a.key, "class");
  assert_int_equal(a.dtype, WF_INT64);

  /* Only what serving needs was kept: no initialisers, no other input. */
  wf_graph *g = wf_saved_model_graph(sm);
  assert_null(wf_graph_find_node(g, "other"));
  for (int i = 0; i < wf_graph_num_nodes(g); i++)
    assert_null(strstr(wf_node_op(wf_graph_node(g, i)), "Random"));

  wf_tensor *got[3];
  const char *keys[] = {"x"};
  CHECK(wf_saved_model_run(sm, sg, keys, &x, 1, got, st));
  for (int k = 0; k < 3; k++) {
    assert_int_equal(wf_tensor_nbytes(got[k]), wf_tensor_nbytes(want[k]));
    /* Same kernels on the same values: bit-identical. */
    assert_memory_equal(wf_tensor_data(got[k]), wf_tensor_data(want[k]),
                        wf_tensor_nbytes(want[k]));
    wf_tensor_release(got[k]);
    wf_tensor_release(want[k]);
  }
  wf_tensor_release(x);
  wf_saved_model_free(sm);
  wf_runtime_free(rt);
}

static void test_export_replaces_a_model_atomically(void **state) {
  (void)state;
  model a, b;
  wf_output outs[3];
  model_build(&a, 1, 1);
  wf_signature_def sig = serve(&a, outs);
  CHECK(wf_saved_model_export(a.s, path_in("swap"), &sig, 1, st));
  model_build(&b, 2, 1);
  wf_output outs_b[3];
  wf_signature_def sig_b = serve(&b, outs_b);
  sig_b.name = "predict";
  CHECK(wf_saved_model_export(b.s, path_in("swap"), &sig_b, 1, st));

  wf_runtime *rt = new_runtime();
  wf_saved_model *sm = wf_saved_model_load(rt, path_in("swap"), st);
  CHECK(!sm);
  assert_string_equal(wf_saved_model_signature_name(sm, 0), "predict");
  wf_saved_model_free(sm);
  wf_runtime_free(rt);

  /* No temporary directory is left beside it. */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q tmp", dir);
  assert_int_not_equal(system(cmd), 0);

  /* A failing export (uninitialised variables) keeps the model there. */
  model c;
  wf_output outs_c[3];
  model_build(&c, 3, 0);
  wf_signature_def sig_c = serve(&c, outs_c);
  assert_int_not_equal(
      wf_saved_model_export(c.s, path_in("swap"), &sig_c, 1, st), WF_OK);
  rt = new_runtime();
  sm = wf_saved_model_load(rt, path_in("swap"), st);
  CHECK(!sm);
  assert_string_equal(wf_saved_model_signature_name(sm, 0), "predict");
  wf_saved_model_free(sm);
  wf_runtime_free(rt);
  model_free(&a);
  model_free(&b);
  model_free(&c);
}

/* ---- refusals ------------------------------------------------------------------ */

static void test_export_refuses_signatures_a_model_cannot_carry(
    void **state) {
  (void)state;
  model md;
  model_build(&md, 5, 1);
  wf_output outs[3];
  wf_signature_def sig = serve(&md, outs);

  wf_signature_def bad = sig;
  wf_output h = {md.logits.node, 0};
  bad.inputs = &h; /* not a placeholder */
  assert_int_equal(wf_saved_model_export(md.s, path_in("bad"), &bad, 1, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("Placeholder", "input 'x'");

  bad = sig;
  const char *dup_keys[] = {"a", "a", "b"};
  bad.output_keys = dup_keys;
  assert_int_equal(wf_saved_model_export(md.s, path_in("bad"), &bad, 1, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("'a'", "twice");

  bad = sig;
  const char *bad_keys[] = {"lo gits", "p", "c"};
  bad.output_keys = bad_keys;
  assert_int_equal(wf_saved_model_export(md.s, path_in("bad"), &bad, 1, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("lo gits", NULL);

  /* An output computed from a placeholder the signature does not feed. */
  wf_node_desc *d = wf_node_desc_new(md.g, "Add", "uses_other");
  wf_node_desc_add_input(d, md.x);
  wf_node_desc_add_input(d, md.other);
  wf_output sum = {wf_node_desc_finish(d, st), 0};
  CHECK(!sum.node);
  bad = sig;
  bad.noutputs = 1;
  bad.outputs = &sum;
  assert_int_equal(wf_saved_model_export(md.s, path_in("bad"), &bad, 1, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("other", "no signature");

  wf_signature_def two[2] = {sig, sig};
  assert_int_equal(wf_saved_model_export(md.s, path_in("bad"), two, 2, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("serve", "twice");
  struct stat sb;
  assert_int_not_equal(stat(path_in("bad"), &sb), 0);
  model_free(&md);
}

static void test_run_checks_inputs_by_key(void **state) {
  (void)state;
  model md;
  model_build(&md, 6, 1);
  wf_output outs[3];
  wf_signature_def sig = serve(&md, outs);
  CHECK(wf_saved_model_export(md.s, path_in("run"), &sig, 1, st));
  model_free(&md);
  wf_runtime *rt = new_runtime();
  wf_saved_model *sm = wf_saved_model_load(rt, path_in("run"), st);
  CHECK(!sm);
  wf_tensor *out[3] = {NULL, NULL, NULL};
  wf_tensor *x = batch(2, 0);
  const char *wrong[] = {"y"};
  assert_int_equal(wf_saved_model_run(sm, 0, wrong, &x, 1, out, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("no input 'y'", NULL);
  assert_int_equal(wf_saved_model_run(sm, 0, NULL, NULL, 0, out, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("'x' is not given", NULL);
  const char *twice[] = {"x", "x"};
  wf_tensor *xs[2] = {x, x};
  assert_int_equal(wf_saved_model_run(sm, 0, twice, xs, 2, out, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("twice", NULL);
  int64_t dims[2] = {2, 4};
  wf_tensor *narrow = wf_tensor_new(WF_FLOAT32, dims, 2, st);
  const char *key[] = {"x"};
  assert_int_equal(wf_saved_model_run(sm, 0, key, &narrow, 1, out, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("input 'x' wants float32", NULL);
  wf_tensor *ints = wf_tensor_new(WF_INT32, (int64_t[]){2, 5}, 2, st);
  assert_int_equal(wf_saved_model_run(sm, 0, key, &ints, 1, out, st),
                   WF_INVALID_ARGUMENT);
  assert_message_has("int32", NULL);
  assert_int_equal(wf_saved_model_run(sm, 3, key, &x, 1, out, st),
                   WF_INVALID_ARGUMENT);
  assert_null(out[0]);
  wf_tensor_release(ints);
  wf_tensor_release(narrow);
  wf_tensor_release(x);
  wf_saved_model_free(sm);
  wf_runtime_free(rt);
}

static void copy_model(const char *from, const char *to) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", to, from, to);
  assert_int_equal(system(cmd), 0);
}

static void expect_load_error(wf_runtime *rt, const char *model_dir,
                              wf_code code, const char *a, const char *b) {
  wf_saved_model *sm = wf_saved_model_load(rt, model_dir, st);
  if (sm) {
    wf_saved_model_free(sm);
    fail_msg("loading %s succeeded; expected an error about %s", model_dir,
             a);
  }
  if (code != WF_OK)
    assert_int_equal(wf_status_code(st), code);
  assert_message_has(a, b);
}

static void test_load_names_the_broken_part(void **state) {
  (void)state;
  model md;
  model_build(&md, 8, 1);
  wf_output outs[3];
  wf_signature_def sig = serve(&md, outs);
  char good[512];
  snprintf(good, sizeof good, "%s", path_in("good"));
  CHECK(wf_saved_model_export(md.s, good, &sig, 1, st));
  model_free(&md);
  wf_runtime *rt = new_runtime();
  char broken[512], file[600];
  snprintf(broken, sizeof broken, "%s", path_in("broken"));

  expect_load_error(rt, path_in("missing"), WF_NOT_FOUND, "missing", NULL);

  copy_model(good, broken);
  snprintf(file, sizeof file, "%s/model.json", broken);
  write_text(file, "{\"format\": 1, \"graph\": ");
  expect_load_error(rt, broken, WF_DATA_LOSS, "model.json", "line");

  write_text(file, "{\"format\": 99, \"graph\": \"graph.wfg\", "
                   "\"variables\": \"variables.safetensors\", "
                   "\"signatures\": []}");
  expect_load_error(rt, broken, WF_UNIMPLEMENTED, "format 99", "newer");

  write_text(file, "{\"format\": 1, \"graph\": \"../graph.wfg\", "
                   "\"variables\": \"variables.safetensors\", "
                   "\"signatures\": []}");
  expect_load_error(rt, broken, WF_DATA_LOSS, "\"graph\"", NULL);

  /* An index naming a tensor the graph does not have. */
  copy_model(good, broken);
  char cmd[1400];
  snprintf(cmd, sizeof cmd,
           "sed -i 's/\"tensor\": \"x:0\"/\"tensor\": \"nowhere:0\"/' "
           "'%s/model.json'",
           broken);
  assert_int_equal(system(cmd), 0);
  expect_load_error(rt, broken, WF_OK, "nowhere", "input 'x'");

  /* A truncated graph file. */
  copy_model(good, broken);
  snprintf(file, sizeof file, "%s/graph.wfg", broken);
  assert_int_equal(truncate(file, 40), 0);
  expect_load_error(rt, broken, WF_OK, "graph.wfg", NULL);

  /* A flipped byte in the variables: the checksum names the variable. */
  copy_model(good, broken);
  snprintf(file, sizeof file, "%s/variables.safetensors", broken);
  FILE *f = fopen(file, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, -3, SEEK_END), 0);
  int ch = fgetc(f);
  assert_int_equal(fseek(f, -3, SEEK_END), 0);
  fputc(ch ^ 0x40, f);
  assert_int_equal(fclose(f), 0);
  expect_load_error(rt, broken, WF_DATA_LOSS, "variables.safetensors", NULL);

  /* The variables file missing entirely. */
  assert_int_equal(unlink(file), 0);
  expect_load_error(rt, broken, WF_OK, "variables.safetensors", NULL);
  wf_runtime_free(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loaded_model_computes_what_the_session_did),
      cmocka_unit_test(test_export_replaces_a_model_atomically),
      cmocka_unit_test(test_export_refuses_signatures_a_model_cannot_carry),
      cmocka_unit_test(test_run_checks_inputs_by_key),
      cmocka_unit_test(test_load_names_the_broken_part),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
