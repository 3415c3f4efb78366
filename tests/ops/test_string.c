/* tests/ops/test_string.c — the ops_string plugin: StringNormalizer on
 * string tensors fed to a Placeholder and run on the CPU device. Its
 * values against ONNX's own test cases and against the C library as the
 * reference for case mappings (exact: strings have no tolerance), every
 * case action with case-sensitive and case-insensitive stopwords, the
 * edges (nothing kept, empty strings, NUL bytes, an empty input), shape
 * inference, and each refusal with its code and what its message must
 * name. Loads ops_array (Placeholder, Const), ops_string and the CPU
 * device. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>

#include <weft/weft.h>

/* The node every test adds, which messages must name. */
#define NODE "norm"

#include "string_harness.h"




/* ---- helpers ------------------------------------------------------------- */

/* A list of strings, and its length. */
#define S(...)                                                                 \
  (const char *const[]) { __VA_ARGS__ }
#define COUNT(...) ((int)(sizeof(S(__VA_ARGS__)) / sizeof(char *)))

/* A node's attributes; those not set are left to the op's defaults:
 * ATTRS(.action = "UPPER", SENSITIVE(1), STOP("a", "b")). */
typedef struct sn_attrs {
  const char *action;
  int has_sensitive;
  int64_t sensitive;
  int has_stop;
  const char *const *stop;
  int nstop;
  const char *locale;
} sn_attrs;

#define ATTRS(...) (&(const sn_attrs){__VA_ARGS__})
static const sn_attrs no_attrs = {NULL};
#define SENSITIVE(v) .has_sensitive = 1, .sensitive = (v)
#define STOP(...)                                                              \
  .has_stop = 1, .stop = (const char *const[]){__VA_ARGS__},                   \
  .nstop = (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))
#define STOP_LIST(list, n) .has_stop = 1, .stop = (list), .nstop = (n)



static void set_attrs(wf_node_desc *d, const sn_attrs *a) {
  if (a->action)
    wf_node_desc_set_attr_string(d, "case_change_action", a->action);
  if (a->has_sensitive)
    wf_node_desc_set_attr_int(d, "is_case_sensitive", a->sensitive);
  if (a->has_stop)
    wf_node_desc_set_attr_string_list(d, "stopwords", a->stop, a->nstop);
  if (a->locale)
    wf_node_desc_set_attr_string(d, "locale", a->locale);
}

/* Adds a string Placeholder of shape s (rank -1: unknown) and the node
 * NODE on it; the node, or NULL with st set. */
static wf_node *add_norm(wf_graph *g, const wf_shape *s, const sn_attrs *a,
                         wf_output *x, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");

  wf_node_desc_set_attr_dtype(d, "dtype", WF_STRING);
  if (s->rank >= 0)
    wf_node_desc_set_attr_shape(d, "shape", s->dims, s->rank);
  x->node = wf_node_desc_finish(d, st);
  x->index = 0;
  if (!x->node)
    fail_msg("adding the Placeholder: %s", wf_status_message(st));
  d = wf_node_desc_new(g, "StringNormalizer", NODE);
  wf_node_desc_add_input(d, *x);
  set_attrs(d, a);
  return wf_node_desc_finish(d, st);
}


/* Runs NODE with attributes a on x fed to a Placeholder of unknown shape;
 * 0 with *y (release it), or the code with st set. */
static int run_norm(const sn_attrs *a, wf_tensor *x, wf_tensor **y,
                    wf_status *st) {
  wf_graph *g = wf_graph_new(rt);
  wf_shape any = unknown_shape();
  wf_session *s;
  wf_output in, out;
  wf_node *n;
  int rc;

  *y = NULL;
  n = add_norm(g, &any, a, &in, st);
  if (!n)
    fail_msg("adding the node: %s", wf_status_message(st));
  out = (wf_output){n, 0};
  s = wf_session_new(g, st);
  assert_non_null(s);
  rc = wf_session_run(s, NULL, &in, &x, 1, &out, y, 1, NULL, 0, NULL, st);
  wf_session_free(s);
  wf_graph_free(g);
  return rc;
}

/* As run_norm, failing the test when the run fails. */
static wf_tensor *normalize(const sn_attrs *a, wf_tensor *x) {
  wf_status *st = wf_status_new();
  wf_tensor *y;

  if (run_norm(a, x, &y, st))
    fail_msg("running StringNormalizer: %s", wf_status_message(st));
  wf_status_free(st);
  return y;
}



/* Runs a on the 1-D x and checks y against want; releases both. */
static void check_vec(const sn_attrs *a, int nx, const char *const *x, int ny,
                      const char *const *want) {
  wf_tensor *in = vec(nx, x), *y = normalize(a, in);

  expect_vec(y, ny, want);
  wf_tensor_release(y);
  wf_tensor_release(in);
}

#define EXPECT_MESSAGE(st, ...)                                                \
  expect_message((st), S(__VA_ARGS__), COUNT(__VA_ARGS__))

/* Adding NODE on a Placeholder of shape s with attributes a must fail with
 * code, naming the node and each fragment. */
#define EXPECT_REFUSED(s, a, code, ...)                                        \
  do {                                                                         \
    wf_status *st_ = wf_status_new();                                          \
    wf_graph *g_ = wf_graph_new(rt);                                           \
    wf_output x_;                                                              \
    const wf_shape s_ = (s);                                                   \
    assert_null(add_norm(g_, &s_, (a), &x_, st_));                             \
    assert_int_equal(wf_status_code(st_), (code));                             \
    EXPECT_MESSAGE(st_, __VA_ARGS__);                                          \
    assert_int_equal(wf_graph_num_nodes(g_), 1);                               \
    wf_graph_free(g_);                                                         \
    wf_status_free(st_);                                                       \
  } while (0)

/* Running NODE with attributes a on x must fail with code, naming the
 * node and each fragment. Releases x. */
#define EXPECT_RUN_FAILS(a, x, code, ...)                                      \
  do {                                                                         \
    wf_status *st_ = wf_status_new();                                          \
    wf_tensor *x_ = (x), *y_;                                                  \
    assert_int_equal(run_norm((a), x_, &y_, st_), (code));                     \
    assert_null(y_);                                                           \
    EXPECT_MESSAGE(st_, __VA_ARGS__);                                          \
    wf_tensor_release(x_);                                                     \
    wf_status_free(st_);                                                       \
  } while (0)


/* ---- registration -------------------------------------------------------- */

static void test_registers_a_cpu_string_kernel_and_no_gradient(void **state) {
  int k = wf_runtime_kernel_select(rt, "StringNormalizer", "cpu", WF_STRING);
  wf_kernel_info info;

  assert_true(k >= 0);
  wf_runtime_kernel_get(rt, k, &info);
  assert_string_equal(info.plugin, "ops-string");
  assert_int_equal(info.dtypes, WF_DTYPE_BIT(WF_STRING));
  assert_int_equal(
      wf_runtime_kernel_select(rt, "StringNormalizer", "cpu", WF_FLOAT32), -1);
  assert_int_equal(wf_runtime_op_gradient(rt, "StringNormalizer"), 0);
}

/* ---- ONNX's test cases --------------------------------------------------- */

static const char *const days[] = {"monday", "tuesday", "wednesday",
                                   "thursday"};

static void test_onnx_case_sensitive_without_case_change(void **state) {
  check_vec(ATTRS(SENSITIVE(1), STOP("monday")), 4, days, 3,
            S("tuesday", "wednesday", "thursday"));
}

static void test_onnx_case_sensitive_lower(void **state) {
  check_vec(ATTRS(.action = "LOWER", SENSITIVE(1), STOP("monday")), 4, days, 3,
            S("tuesday", "wednesday", "thursday"));
}

static void test_onnx_case_sensitive_upper(void **state) {
  check_vec(ATTRS(.action = "UPPER", SENSITIVE(1), STOP("monday")), 4, days, 3,
            S("TUESDAY", "WEDNESDAY", "THURSDAY"));
}

static void test_onnx_insensitive_upper_in_two_dims(void **state) {
  wf_tensor *x = strings(
      2, (int64_t[]){1, 6},
      S("Monday", "tuesday", "wednesday", "Monday", "tuesday", "wednesday"),
      NULL);
  wf_tensor *y =
      normalize(ATTRS(.action = "UPPER", SENSITIVE(0), STOP("monday")), x);

  expect_strings(y, 2, (int64_t[]){1, 4},
                 S("TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY"), NULL);
  wf_tensor_release(y);
  wf_tensor_release(x);
}

static void test_onnx_nothing_left_gives_one_empty_string(void **state) {
  check_vec(ATTRS(.action = "UPPER", SENSITIVE(1), STOP("monday")), 2,
            S("monday", "monday"), 1, S(""));
}

static void test_onnx_no_stopwords_keep_everything(void **state) {
  check_vec(ATTRS(SENSITIVE(1)), 2, S("monday", "tuesday"), 2,
            S("monday", "tuesday"));
}

/* ---- stopwords and case actions ------------------------------------------ */

static void test_nothing_left_in_two_dims_gives_1_by_1(void **state) {
  wf_tensor *x = strings(2, (int64_t[]){1, 3}, S("A", "a", "a"), NULL);
  wf_tensor *y = normalize(ATTRS(STOP("a")), x);

  expect_strings(y, 2, (int64_t[]){1, 1}, S(""), NULL);
  wf_tensor_release(y);
  wf_tensor_release(x);
}

static void test_defaults_change_nothing(void **state) {
  check_vec(&no_attrs, 3, S("Monday", "TUESDAY", "x"), 3,
            S("Monday", "TUESDAY", "x"));
}

static void test_each_case_action(void **state) {
  static const char *const x[] = {"MiXeD 42", "lower", "UPPER", "-_+"};

  check_vec(ATTRS(.action = "NONE"), 4, x, 4, x);
  check_vec(ATTRS(.action = "LOWER"), 4, x, 4,
            S("mixed 42", "lower", "upper", "-_+"));
  check_vec(ATTRS(.action = "UPPER"), 4, x, 4,
            S("MIXED 42", "LOWER", "UPPER", "-_+"));
}

static void test_sensitive_stopwords_match_bytes_only(void **state) {
  check_vec(ATTRS(SENSITIVE(1), STOP("monday", "Tuesday")), 5,
            S("monday", "Monday", "MONDAY", "tuesday", "Tuesday"), 3,
            S("Monday", "MONDAY", "tuesday"));
}

static void test_insensitive_stopwords_match_every_case(void **state) {
  check_vec(ATTRS(.action = "LOWER", STOP("MonDay", "TUESDAY")), 6,
            S("monday", "Monday", "MONDAY", "tuesday", "Tuesday", "wednesday"),
            1, S("wednesday"));
  /* The kept elements keep their case under NONE. */
  check_vec(ATTRS(STOP("monday")), 3, S("Monday", "Friday", "FRIDAY"), 2,
            S("Friday", "FRIDAY"));
}

static void test_an_empty_stopword_list_keeps_every_element(void **state) {
  static const char *const none[] = {NULL};

  check_vec(ATTRS(.action = "UPPER", STOP_LIST(none, 0)), 3, S("a", "", "b"), 3,
            S("A", "", "B"));
}

/* Many stopwords of mixed lengths, given unsorted and repeated, against a
 * linear search: the kernel looks them up sorted. */
static void test_many_stopwords_against_a_linear_search(void **state) {
  enum { NX = 200 };
  static const char *const stop[] = {"kiwi",   "fig", "banana",
                                     "apple",  "fig", "date",
                                     "cherry", "",    "elderberry"};
  static const char *const pool[] = {
      "apple", "Apple", "fig",  "figs",   "kiwi",   "KIWI",       "date",
      "",      "grape", "lime", "cherry", "banana", "elderberry", "Fig"};
  const int npool = (int)(sizeof pool / sizeof pool[0]);
  const char *x[NX], *want[NX];
  int nwant = 0;

  for (int sensitive = 0; sensitive <= 1; sensitive++) {
    nwant = 0;
    for (int i = 0; i < NX; i++) {
      int hit = 0;
      x[i] = pool[(i * 7 + 3) % npool];
      for (size_t k = 0; k < sizeof stop / sizeof stop[0]; k++)
        hit |= sensitive ? strcmp(x[i], stop[k]) == 0
                         : strcasecmp(x[i], stop[k]) == 0;
      if (!hit)
        want[nwant++] = x[i];
    }
    assert_true(nwant > 0 && nwant < NX);
    check_vec(ATTRS(SENSITIVE(sensitive),
                    STOP_LIST(stop, (int)(sizeof stop / sizeof stop[0]))),
              NX, x, nwant, want);
  }
}

/* ---- the edges ----------------------------------------------------------- */

static void test_empty_strings_are_elements(void **state) {
  check_vec(ATTRS(.action = "UPPER", STOP("a")), 4, S("", "a", "", "b"), 3,
            S("", "", "B"));
  /* An empty stopword drops the empty elements. */
  check_vec(ATTRS(STOP("")), 4, S("", "x", "", "y"), 2, S("x", "y"));
}

static void test_nul_bytes_are_kept_intact(void **state) {
  const char *const x[] = {"ab\0cd", "ab", "e\0\0"};
  const size_t lens[] = {5, 2, 3};
  wf_tensor *in = strings(1, (int64_t[]){3}, x, lens), *y;

  y = normalize(ATTRS(.action = "UPPER", STOP("ab")), in);
  expect_strings(y, 1, (int64_t[]){2}, S("AB\0CD", "E\0\0"),
                 (const size_t[]){5, 3});
  wf_tensor_release(y);
  y = normalize(ATTRS(SENSITIVE(1), STOP("x")), in);
  expect_strings(y, 1, (int64_t[]){3}, x, lens);
  wf_tensor_release(y);
  wf_tensor_release(in);
}

static void test_an_empty_input_gives_an_empty_output(void **state) {
  wf_tensor *x = strings(1, (int64_t[]){0}, NULL, NULL);
  wf_tensor *y = normalize(ATTRS(.action = "UPPER", STOP("a")), x);

  expect_strings(y, 1, (int64_t[]){0}, NULL, NULL);
  wf_tensor_release(y);
  wf_tensor_release(x);
  x = strings(2, (int64_t[]){1, 0}, NULL, NULL);
  y = normalize(ATTRS(STOP("a")), x);
  expect_strings(y, 2, (int64_t[]){1, 0}, NULL, NULL);
  wf_tensor_release(y);
  wf_tensor_release(x);
}

/* Bytes that are not UTF-8 pass unchanged where nothing decodes them. */
static void test_invalid_utf8_passes_when_nothing_decodes_it(void **state) {
  check_vec(ATTRS(SENSITIVE(1), STOP("a", "\xff")), 3, S("\xc3", "a", "\xff"),
            1, S("\xc3"));
}

/* Two runs of one session: the per-node state is made once and reused. */
static void test_one_session_runs_twice(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_shape any = unknown_shape();
  wf_output in, out;
  wf_node *n = add_norm(g, &any, ATTRS(.action = "LOWER", STOP("B")), &in, st);
  wf_session *s;
  wf_tensor *x[2] = {vec(3, S("A", "b", "C")), vec(2, S("D", "Bb"))}, *y;

  assert_non_null(n);
  out = (wf_output){n, 0};
  s = wf_session_new(g, st);
  assert_non_null(s);
  for (int r = 0; r < 2; r++) {
    if (wf_session_run(s, NULL, &in, &x[r], 1, &out, &y, 1, NULL, 0, NULL, st))
      fail_msg("run %d: %s", r, wf_status_message(st));
    if (r == 0)
      expect_vec(y, 2, S("a", "c"));
    else
      expect_vec(y, 2, S("d", "bb"));
    wf_tensor_release(y);
    wf_tensor_release(x[r]);
  }
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_free(st);
}

/* ---- UTF-8 and locales --------------------------------------------------- */

static void test_changes_the_case_of_non_ascii_letters(void **state) {
  check_vec(ATTRS(.action = "UPPER"), 4,
            S("École", "σοφία", "привет", "Straße"), 4,
            S("ÉCOLE", "ΣΟΦΊΑ", "ПРИВЕТ", "STRAßE"));
  check_vec(ATTRS(.action = "LOWER"), 4,
            S("ÉCOLE", "ΣΟΦΊΑ", "ПРИВЕТ", "ÅNGSTRÖM"), 4,
            S("école", "σοφία", "привет", "ångström"));
}

/* towupper_l/towlower_l of C.UTF-8 per code point, through the C
 * library's own UTF-8 conversions (mbstowcs, wcstombs) as the reference:
 * Latin, Greek (final sigma), Cyrillic, Armenian, Georgian, letters whose
 * mapping changes their UTF-8 length (ı, ſ, ɐ, ⱥ), and code points
 * without case (CJK, emoji, U+0000 is not here: mbstowcs stops at it). */
static void test_case_changes_match_the_c_library(void **state) {
  static const char *const x[] = {
      "École Française", "ΣΟΦΊΑ σοφία ς",    "Привет, Мир!",
      "Բարեւ աշխարհ",    "ıſɐⱥ Ĳǅǈǋǲϐϑϕϖϰϱ", "日本語 テキスト 😀🎉",
      "ÀÉÎÕÜ àéîõü ÿŸ",  "ǅungla",           "ქართული ენა"};
  enum { N = sizeof x / sizeof x[0] };
  locale_t loc = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
  locale_t old;
  char want[2][N][256];
  const char *wp[2][N];

  assert_true(loc != (locale_t)0);
  old = uselocale(loc);
  for (int i = 0; i < N; i++) {
    wchar_t w[128], m[2][128];
    size_t n = mbstowcs(w, x[i], 128);
    assert_true(n != (size_t)-1 && n < 128);
    for (size_t k = 0; k <= n; k++) {
      m[0][k] = (wchar_t)towlower_l((wint_t)w[k], loc);
      m[1][k] = (wchar_t)towupper_l((wint_t)w[k], loc);
    }
    for (int c = 0; c < 2; c++) {
      assert_true(wcstombs(want[c][i], m[c], 256) != (size_t)-1);
      wp[c][i] = want[c][i];
    }
  }
  uselocale(old);
  freelocale(loc);
  check_vec(ATTRS(.action = "LOWER"), N, x, N, wp[0]);
  check_vec(ATTRS(.action = "UPPER"), N, x, N, wp[1]);
  /* Some by hand, that the reference is what it should be. */
  assert_string_equal(wp[1][0], "ÉCOLE FRANÇAISE");
  assert_string_equal(wp[0][1], "σοφία σοφία ς");
}

static void test_insensitive_stopwords_fold_non_ascii(void **state) {
  /* Σ, σ and ς fold alike; so do S, s and ſ. */
  check_vec(ATTRS(.action = "UPPER", STOP("école", "ΣΟΦΊΑ", "s")), 8,
            S("École", "ÉCOLE", "école", "σοφία", "σοφίας", "ſ", "S", "Ecole"),
            2, S("ΣΟΦΊΑΣ", "ECOLE"));
  /* Case-sensitive: only the same bytes. */
  check_vec(ATTRS(SENSITIVE(1), STOP("école")), 3, S("École", "école", "ÉCOLE"),
            2, S("École", "ÉCOLE"));
}

static void test_locale_decides_the_mappings(void **state) {
  /* The C locale maps ASCII only. */
  check_vec(ATTRS(.action = "UPPER", .locale = "C"), 1, S("éa"), 1, S("éA"));
  check_vec(ATTRS(.action = "UPPER", .locale = ""), 1, S("éa"), 1, S("ÉA"));
  check_vec(ATTRS(.action = "UPPER", .locale = "C.UTF-8"), 1, S("éa"), 1,
            S("ÉA"));
}

#if defined(__SANITIZE_ADDRESS__)
/* glibc's newlocale never frees the search list it builds from LOCPATH
 * (argz_add_sep in newlocale.c), a few bytes a call: a leak of the C
 * library's, which LeakSanitizer would blame on the test below (the hook
 * is looked up in the program's exported symbols). */
__attribute__((visibility("default"))) const char *
__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:__argz_add_sep\n";
}
#endif

/* A name that loads only with ".UTF-8" appended: a locale directory of
 * our own (LOCPATH) holding xx_TEST.utf8, a link to glibc's compiled
 * C.utf8; skipped where there is none. */
static void test_locale_is_tried_with_utf8_appended(void **state) {
  static const char *const sys = "/usr/lib/locale/C.utf8";
  char dir[] = "/tmp/weft-locale-XXXXXX", link[128], ctype[128];

  snprintf(ctype, sizeof ctype, "%s/LC_CTYPE", sys);
  if (access(ctype, R_OK) != 0)
    skip();
  assert_non_null(mkdtemp(dir));
  snprintf(link, sizeof link, "%s/xx_TEST.utf8", dir);
  assert_int_equal(symlink(sys, link), 0);
  assert_int_equal(setenv("LOCPATH", dir, 1), 0);
  check_vec(ATTRS(.action = "UPPER", .locale = "xx_TEST"), 1, S("éa"), 1,
            S("ÉA"));
  EXPECT_REFUSED(unknown_shape(), ATTRS(.locale = "xx_OTHER"), WF_NOT_FOUND,
                 "locale 'xx_OTHER'", "'xx_OTHER.UTF-8'");
  unsetenv("LOCPATH");
  unlink(link);
  rmdir(dir);
}

/* ---- shape inference ----------------------------------------------------- */

static void expect_shape(const sn_attrs *a, wf_shape in, const char *want) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output x;
  wf_node *n = add_norm(g, &in, a, &x, st);
  wf_shape s;
  char buf[128];

  if (!n)
    fail_msg("adding the node: %s", wf_status_message(st));
  assert_int_equal(wf_node_output_dtype(n, 0), WF_STRING);
  wf_node_output_shape(n, 0, &s);
  if (strcmp(wf_shape_str(&s, buf, sizeof buf), want) != 0)
    fail_msg("y has shape %s, want %s", buf, want);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_infers_the_rank_and_what_it_can_of_the_length(void **state) {
  const sn_attrs *stop = ATTRS(STOP("a")), *none = &no_attrs;

  expect_shape(stop, shape_of(1, (int64_t[]){4}), "(?)");
  expect_shape(stop, shape_of(2, (int64_t[]){1, 4}), "(1, ?)");
  expect_shape(stop, shape_of(2, (int64_t[]){-1, 4}), "(1, ?)");
  expect_shape(stop, shape_of(1, (int64_t[]){1}), "(1)");
  expect_shape(stop, shape_of(1, (int64_t[]){0}), "(0)");
  expect_shape(stop, shape_of(2, (int64_t[]){1, 0}), "(1, 0)");
  expect_shape(stop, unknown_shape(), "<unknown>");
  expect_shape(none, shape_of(1, (int64_t[]){4}), "(4)");
  expect_shape(none, shape_of(2, (int64_t[]){1, -1}), "(1, ?)");
  expect_shape(none, shape_of(2, (int64_t[]){1, 5}), "(1, 5)");
}

/* A Const input's value is known while building: the length is too. */
static void test_a_const_input_gives_the_exact_length(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_tensor *v = vec(4, S("a", "B", "A", "c")), *y;
  wf_node_desc *d = wf_node_desc_new(g, "Const", "x");
  wf_node *c, *n;
  wf_shape s;
  wf_session *ses;
  wf_output out;
  char buf[64];

  wf_node_desc_set_attr_tensor(d, "value", v);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_STRING);
  c = wf_node_desc_finish(d, st);
  if (!c)
    fail_msg("adding the Const: %s", wf_status_message(st));
  d = wf_node_desc_new(g, "StringNormalizer", NODE);
  wf_node_desc_add_input(d, (wf_output){c, 0});
  set_attrs(d, ATTRS(.action = "UPPER", STOP("a")));
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("adding the node: %s", wf_status_message(st));
  wf_node_output_shape(n, 0, &s);
  assert_string_equal(wf_shape_str(&s, buf, sizeof buf), "(2)");
  out = (wf_output){n, 0};
  ses = wf_session_new(g, st);
  assert_non_null(ses);
  if (wf_session_run(ses, NULL, NULL, NULL, 0, &out, &y, 1, NULL, 0, NULL, st))
    fail_msg("running: %s", wf_status_message(st));
  expect_vec(y, 2, S("B", "C"));
  wf_tensor_release(y);
  wf_session_free(ses);
  wf_graph_free(g);
  wf_tensor_release(v);
  wf_status_free(st);
}

/* ---- refusals ------------------------------------------------------------ */

static void test_refuses_inputs_that_are_no_vector(void **state) {
  const sn_attrs *a = ATTRS(STOP("a"));

  EXPECT_REFUSED(shape_of(2, (int64_t[]){2, 3}), a, WF_INVALID_ARGUMENT,
                 "(2, 3)", "(C) or (1, C)");
  EXPECT_REFUSED(shape_of(3, (int64_t[]){1, 1, 3}), a, WF_INVALID_ARGUMENT,
                 "(1, 1, 3)", "(C) or (1, C)");
  EXPECT_REFUSED(shape_of(0, NULL), a, WF_INVALID_ARGUMENT, "()",
                 "(C) or (1, C)");
}

/* The same shapes fed to a Placeholder of unknown shape reach the kernel,
 * which refuses them too. */
static void test_kernel_refuses_inputs_that_are_no_vector(void **state) {
  const sn_attrs *a = ATTRS(STOP("a"));

  EXPECT_RUN_FAILS(
      a, strings(2, (int64_t[]){2, 3}, S("a", "b", "c", "d", "e", "f"), NULL),
      WF_INVALID_ARGUMENT, "(2, 3)", "(C) or (1, C)");
  EXPECT_RUN_FAILS(a, strings(0, NULL, S("a"), NULL), WF_INVALID_ARGUMENT,
                   "(C) or (1, C)");
}

static void test_refuses_an_input_that_is_no_string(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  wf_node *x;

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  x = wf_node_desc_finish(d, st);
  assert_non_null(x);
  d = wf_node_desc_new(g, "StringNormalizer", NODE);
  wf_node_desc_add_input(d, (wf_output){x, 0});
  assert_null(wf_node_desc_finish(d, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  EXPECT_MESSAGE(st, "float32", "string");
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_refuses_an_unknown_case_change_action(void **state) {
  EXPECT_REFUSED(shape_of(1, (int64_t[]){3}), ATTRS(.action = "lower"),
                 WF_INVALID_ARGUMENT, "case_change_action", "'lower'",
                 "NONE, LOWER or UPPER");
  EXPECT_REFUSED(unknown_shape(), ATTRS(.action = ""), WF_INVALID_ARGUMENT,
                 "case_change_action", "''");
}

static void test_refuses_a_locale_that_does_not_load(void **state) {
  EXPECT_REFUSED(shape_of(1, (int64_t[]){3}),
                 ATTRS(.action = "UPPER", .locale = "xx_NOWHERE"), WF_NOT_FOUND,
                 "attribute 'locale'", "locale 'xx_NOWHERE'",
                 "'xx_NOWHERE.UTF-8'");
  /* Also where no decoding would need it. */
  EXPECT_REFUSED(unknown_shape(), ATTRS(SENSITIVE(1), .locale = "xx_NOWHERE"),
                 WF_NOT_FOUND, "locale 'xx_NOWHERE'");
}

static void test_refuses_an_invalid_utf8_stopword_it_must_fold(void **state) {
  EXPECT_REFUSED(unknown_shape(), ATTRS(STOP("ok", "b\xc3(")),
                 WF_INVALID_ARGUMENT, "stopwords", "item 1", "UTF-8", "0xc3");
  /* Compared byte for byte, it is only bytes. */
  expect_shape(ATTRS(SENSITIVE(1), STOP("ok", "b\xc3(")),
               shape_of(1, (int64_t[]){3}), "(?)");
}

static void test_refuses_invalid_utf8_elements_it_must_decode(void **state) {
  /* A lone continuation byte, a truncated sequence, an overlong '/', a
   * surrogate, past U+10FFFF, a byte UTF-8 never uses. */
  static const char *const bad[] = {
      "\x80",         "ab\xe2\x82",       "\xc0\xaf",
      "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"};

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    /* To change its case. */
    EXPECT_RUN_FAILS(ATTRS(.action = "UPPER", SENSITIVE(1)),
                     vec(2, S("fine", bad[i])), WF_INVALID_ARGUMENT,
                     "element 1 of input 'x'", "UTF-8", "UPPER");
    /* To compare it case-insensitively. */
    EXPECT_RUN_FAILS(ATTRS(STOP("a")), vec(3, S("a", "b", bad[i])),
                     WF_INVALID_ARGUMENT, "element 2 of input 'x'", "UTF-8",
                     "case-insensitively");
  }
  /* The offending byte is named. */
  EXPECT_RUN_FAILS(ATTRS(.action = "LOWER"), vec(1, S("ok\xff")),
                   WF_INVALID_ARGUMENT, "element 0", "byte 2", "0xff", "LOWER");
  /* A dropped element is never decoded for a case change. */
  check_vec(ATTRS(.action = "UPPER", SENSITIVE(1), STOP("\xff")), 2,
            S("\xff", "ok"), 1, S("OK"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registers_a_cpu_string_kernel_and_no_gradient),
      cmocka_unit_test(test_onnx_case_sensitive_without_case_change),
      cmocka_unit_test(test_onnx_case_sensitive_lower),
      cmocka_unit_test(test_onnx_case_sensitive_upper),
      cmocka_unit_test(test_onnx_insensitive_upper_in_two_dims),
      cmocka_unit_test(test_onnx_nothing_left_gives_one_empty_string),
      cmocka_unit_test(test_onnx_no_stopwords_keep_everything),
      cmocka_unit_test(test_nothing_left_in_two_dims_gives_1_by_1),
      cmocka_unit_test(test_defaults_change_nothing),
      cmocka_unit_test(test_each_case_action),
      cmocka_unit_test(test_sensitive_stopwords_match_bytes_only),
      cmocka_unit_test(test_insensitive_stopwords_match_every_case),
      cmocka_unit_test(test_an_empty_stopword_list_keeps_every_element),
      cmocka_unit_test(test_many_stopwords_against_a_linear_search),
      cmocka_unit_test(test_empty_strings_are_elements),
      cmocka_unit_test(test_nul_bytes_are_kept_intact),
      cmocka_unit_test(test_an_empty_input_gives_an_empty_output),
      cmocka_unit_test(test_invalid_utf8_passes_when_nothing_decodes_it),
      cmocka_unit_test(test_one_session_runs_twice),
      cmocka_unit_test(test_changes_the_case_of_non_ascii_letters),
      cmocka_unit_test(test_case_changes_match_the_c_library),
      cmocka_unit_test(test_insensitive_stopwords_fold_non_ascii),
      cmocka_unit_test(test_locale_decides_the_mappings),
      cmocka_unit_test(test_locale_is_tried_with_utf8_appended),
      cmocka_unit_test(test_infers_the_rank_and_what_it_can_of_the_length),
      cmocka_unit_test(test_a_const_input_gives_the_exact_length),
      cmocka_unit_test(test_refuses_inputs_that_are_no_vector),
      cmocka_unit_test(test_kernel_refuses_inputs_that_are_no_vector),
      cmocka_unit_test(test_refuses_an_input_that_is_no_string),
      cmocka_unit_test(test_refuses_an_unknown_case_change_action),
      cmocka_unit_test(test_refuses_a_locale_that_does_not_load),
      cmocka_unit_test(test_refuses_an_invalid_utf8_stopword_it_must_fold),
      cmocka_unit_test(test_refuses_invalid_utf8_elements_it_must_decode),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
