/* tests/ops/string_harness.h — what the tests of the ops_string plugin
 * share: a runtime of ops_array (Placeholder, Const), ops_string and the
 * CPU device, string tensors, shapes, and checks of string results and of
 * messages, which must name the node NODE (the includer defines it). */
#ifndef WF_TESTS_STRING_HARNESS_H
#define WF_TESTS_STRING_HARNESS_H

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {"plugins/ops/array/.libs",
                                     "plugins/ops/string/.libs",
                                     "plugins/devices/cpu/.libs"};
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  char paths[2048] = "";

  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    size_t used = strlen(paths);
    snprintf(paths + used, sizeof paths - used, "%s%s/%s", i ? "," : "",
             TEST_BUILDDIR, dirs[i]);
  }
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", paths, st), 0);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st),
                   0);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", st), 0);
  rt = wf_runtime_new(cfg, st);
  if (!rt)
    fail_msg("loading %s: %s", paths, wf_status_message(st));
  wf_config_free(cfg);
  wf_status_free(st);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

/* A string tensor of the given dims holding s[i] (lens NULL: each
 * NUL-terminated). */
static wf_tensor *strings(int rank, const int64_t *dims, const char *const *s,
                          const size_t *lens) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new_strings(dims, rank, s, lens, st);

  if (!t)
    fail_msg("making a string tensor: %s", wf_status_message(st));
  wf_status_free(st);
  return t;
}

static wf_tensor *vec(int n, const char *const *s) {
  return strings(1, (int64_t[]){n}, s, NULL);
}

static wf_shape unknown_shape(void) {
  wf_shape s;

  wf_shape_unknown(&s);
  return s;
}

static wf_shape shape_of(int rank, const int64_t *dims) {
  wf_shape s;

  wf_shape_init(&s, dims, rank);
  return s;
}

/* y must be a string tensor of the given dims holding want[i] (wlens
 * NULL: each NUL-terminated). */
static void expect_strings(const wf_tensor *y, int rank, const int64_t *dims,
                           const char *const *want, const size_t *wlens) {
  wf_shape s, w;
  char sb[128], wb[128];
  int64_t n;

  assert_int_equal(wf_tensor_dtype(y), WF_STRING);
  wf_tensor_shape(y, &s);
  wf_shape_init(&w, dims, rank);
  if (!wf_shape_equal(&s, &w))
    fail_msg("y has shape %s, want %s", wf_shape_str(&s, sb, sizeof sb),
             wf_shape_str(&w, wb, sizeof wb));
  n = wf_shape_count(&w);
  for (int64_t i = 0; i < n; i++) {
    size_t len, wl = wlens ? wlens[i] : strlen(want[i]);
    const char *got = wf_tensor_string(y, i, &len);

    assert_non_null(got);
    if (len != wl || memcmp(got, want[i], wl) != 0)
      fail_msg("y[%lld] is \"%.*s\" (%zu bytes), want \"%.*s\" (%zu bytes)",
               (long long)i, (int)len, got, len, (int)wl, want[i], wl);
  }
}

static void expect_vec(const wf_tensor *y, int n, const char *const *want) {
  expect_strings(y, 1, (int64_t[]){n}, want, NULL);
}

/* The message must name the node and hold every one of the fragments. */
static void expect_message(const wf_status *st, const char *const *parts,
                           int n) {
  const char *m = wf_status_message(st);

  if (!strstr(m, "'" NODE "'"))
    fail_msg("the message does not name node '%s': %s", NODE, m);
  for (int i = 0; i < n; i++)
    if (!strstr(m, parts[i]))
      fail_msg("the message lacks \"%s\": %s", parts[i], m);
}

#endif /* WF_TESTS_STRING_HARNESS_H */
