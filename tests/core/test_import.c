/* tests/core/test_import.c — importer plugins (tests/plugins/importer.c,
 * a real module): a model file becomes a graph whose signature computes
 * what the file says, chosen by format name, extension or first bytes; a
 * saved model written from it loads and gives the same values; `weft
 * import` then `weft run` work from the command line; a missing file, an
 * unknown format and malformed files fail naming the file and line, and
 * leave no saved model behind. */
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

#define IMPORTER TEST_PLUGIN_DIR "/importer.so"

static wf_status *st;
static wf_runtime *rt;
static char dir[64];

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

/* y = relu(x w + b) for x (N, 3), w (3, 2), b (2). */
static const char model[] = "wtxt 1\n"
                            "# a dense layer\n"
                            "input x float32 -1,3\n"
                            "weight w float32 3,2 = 1 -2 3 4 -5 6\n"
                            "weight b float32 2 = 0.5 -0.5\n"
                            "op xw MatMul x w\n"
                            "op z BiasAdd xw b\n"
                            "op y Relu z\n"
                            "output y\n";

static void write_file(const char *name, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static const char *in_dir(const char *name) {
  static char path[8][128];
  static int k;
  char *p = path[k++ % 8];
  snprintf(p, sizeof path[0], "%s/%s", dir, name);
  return p;
}

static wf_tensor *x_value(void) {
  int64_t dims[2] = {2, 3};
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 2, st);
  float *p = wf_tensor_data(t);
  const float v[6] = {1, 2, 3, -1, 0.5f, 2};
  memcpy(p, v, sizeof v);
  return t;
}

/* relu(x w + b), computed here in double. */
static void expect_y(const wf_tensor *y) {
  const double x[2][3] = {{1, 2, 3}, {-1, 0.5, 2}};
  const double w[3][2] = {{1, -2}, {3, 4}, {-5, 6}}, b[2] = {0.5, -0.5};
  assert_int_equal(wf_tensor_dim(y, 0), 2);
  assert_int_equal(wf_tensor_dim(y, 1), 2);
  const float *got = wf_tensor_data(y);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      double z = b[j];
      for (int k = 0; k < 3; k++)
        z += x[i][k] * w[k][j];
      double want = z > 0 ? z : 0;
      if (got[i * 2 + j] < want - 1e-5 || got[i * 2 + j] > want + 1e-5)
        fail_msg("y[%d][%d] = %g, want %g (1e-5)", i, j, got[i * 2 + j],
                 want);
    }
}

static void test_import_builds_the_model(void **state) {
  (void)state;
  write_file("dense.wtxt", model);
  wf_imported *m = wf_import(rt, in_dir("dense.wtxt"), NULL, st);
  OK(!m);
  assert_string_equal(wf_imported_format(m), "wtxt");
  assert_int_equal(wf_imported_num_signatures(m), 1);
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  assert_string_equal(sig->name, "serving_default");
  assert_int_equal(sig->ninputs, 1);
  assert_string_equal(sig->input_keys[0], "x");
  int ninit;
  wf_node *const *init = wf_imported_init(m, &ninit);
  assert_int_equal(ninit, 2);
  wf_session *s = wf_session_new(wf_imported_graph(m), st);
  OK(!s);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, ninit, NULL,
                    st));
  wf_tensor *x = x_value(), *y = NULL;
  OK(wf_session_run(s, NULL, sig->inputs, &x, 1, sig->outputs, &y, 1, NULL, 0,
                    NULL, st));
  expect_y(y);
  wf_tensor_release(y);
  wf_tensor_release(x);
  wf_session_free(s);
  wf_imported_free(m);
}

static void test_import_chooses_by_name_and_first_bytes(void **state) {
  (void)state;
  /* No extension: the first bytes decide; --format names it outright. */
  write_file("model.bin", model);
  wf_imported *m = wf_import(rt, in_dir("model.bin"), NULL, st);
  OK(!m);
  wf_imported_free(m);
  m = wf_import(rt, in_dir("model.bin"), "wtxt", st);
  OK(!m);
  wf_imported_free(m);
  assert_null(wf_import(rt, in_dir("model.bin"), "nosuch", st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "no importer called 'nosuch'"));
  assert_non_null(strstr(wf_status_message(st), "wtxt"));
  write_file("other.bin", "something else\n");
  assert_null(wf_import(rt, in_dir("other.bin"), NULL, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_null(wf_import(rt, in_dir("missing.wtxt"), NULL, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "missing.wtxt"));
}

static void test_import_saved_model_runs(void **state) {
  (void)state;
  write_file("dense.wtxt", model);
  OK(wf_import_saved_model(rt, in_dir("dense.wtxt"), NULL, in_dir("saved"),
                           st));
  wf_saved_model *sm = wf_saved_model_load(rt, in_dir("saved"), st);
  OK(!sm);
  int sig = wf_saved_model_find_signature(sm, "serving_default");
  assert_true(sig >= 0);
  const char *keys[1] = {"x"};
  wf_tensor *x = x_value(), *y = NULL;
  OK(wf_saved_model_run(sm, sig, keys, &x, 1, &y, st));
  expect_y(y);
  wf_tensor_release(y);
  wf_tensor_release(x);
  wf_saved_model_free(sm);
}

static void test_malformed_models_name_file_and_line(void **state) {
  (void)state;
  static const struct {
    const char *text, *expect;
  } cases[] = {
      {"wtxt 1\ninput x float64 2\noutput x\n", ":2: unknown dtype"},
      {"wtxt 1\ninput x float32 2\nweight w float32 2 = 1\noutput x\n",
       ":3: the weight has fewer values"},
      {"wtxt 1\ninput x float32 2\nop y Relu nothing\noutput y\n",
       ":3: an input names nothing"},
      {"wtxt 1\ninput x float32 2\nop y NoSuchOp x\noutput y\n",
       ":3: node 'y'"},
      {"wtxt 1\ninput x float32 2\n", ":2: the model has no output"},
      {"wtxt 1\ninput x float32 2\ninput x float32 2\noutput x\n",
       ":3: importing node 'x'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_file("bad.wtxt", cases[i].text);
    assert_null(wf_import(rt, in_dir("bad.wtxt"), NULL, st));
    if (!strstr(wf_status_message(st), cases[i].expect) ||
        !strstr(wf_status_message(st), "bad.wtxt"))
      fail_msg("case %zu: '%s' lacks '%s'", i, wf_status_message(st),
               cases[i].expect);
    assert_int_not_equal(wf_import_saved_model(rt, in_dir("bad.wtxt"), NULL,
                                               in_dir("badsaved"), st),
                         WF_OK);
    assert_int_not_equal(access(in_dir("badsaved"), F_OK), 0);
  }
}

static void test_weft_import_then_run(void **state) {
  (void)state;
  char cmd[1024];
  write_file("dense.wtxt", model);
  write_file("weft.conf", "[plugins]\npaths = " IMPORTER "\n");
  snprintf(cmd, sizeof cmd,
           "%s/tools/weft --config %s import %s --output %s >/dev/null && "
           "%s/tools/weft --config %s run %s --show | grep -q 'input  x'",
           TEST_BUILDDIR, in_dir("weft.conf"), in_dir("dense.wtxt"),
           in_dir("cli"), TEST_BUILDDIR, in_dir("weft.conf"), in_dir("cli"));
  if (system(cmd) != 0)
    fail_msg("failed: %s", cmd);
  snprintf(cmd, sizeof cmd,
           "%s/tools/weft --config %s import %s/nothing.wtxt --output %s "
           "2>/dev/null",
           TEST_BUILDDIR, in_dir("weft.conf"), dir, in_dir("cli2"));
  assert_int_not_equal(system(cmd), 0);
}

int main(void) {
  st = wf_status_new();
  snprintf(dir, sizeof dir, "/tmp/weft-import.XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  wf_config *cfg = wf_config_new();
  if (wf_config_set(cfg, "plugins", "paths", IMPORTER, st) ||
      !(rt = wf_runtime_new(cfg, st))) {
    fprintf(stderr, "runtime: %s\n", wf_status_message(st));
    return 1;
  }
  wf_config_free(cfg);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_import_builds_the_model),
      cmocka_unit_test(test_import_chooses_by_name_and_first_bytes),
      cmocka_unit_test(test_import_saved_model_runs),
      cmocka_unit_test(test_malformed_models_name_file_and_line),
      cmocka_unit_test(test_weft_import_then_run),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  wf_runtime_free(rt);
  wf_status_free(st);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    rc = 1;
  return rc;
}
