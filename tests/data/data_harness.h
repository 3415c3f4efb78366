/* tests/data/data_harness.h — what the pipeline tests share: a runtime with
 * the array, math and CPU plugins (loaded strictly from the build tree) and
 * the test reader registered in-process (so its call counters are this
 * program's), a scratch directory with helpers to write .tst files, and
 * helpers that drain iterators into index lists. Included after cmocka.h;
 * everything is static, so a program need not use all of it. */
#ifndef WF_TESTS_DATA_HARNESS_H
#define WF_TESTS_DATA_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weft/weft.h>

#include "plugin/runtime_internal.h"
#include "test_reader.h"

#define DH_PLUGIN_PATHS                                                        \
  TEST_BUILDDIR "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/devices/cpu/.libs"

static wf_runtime *rt;
static wf_status *st;
static char dir[64];

/* Fails the test with st's message when cond holds. */
#define DH_CHECK(cond)                                                         \
  do {                                                                         \
    if (cond)                                                                  \
      fail_msg("%s: %s", #cond, wf_status_message(st));                        \
  } while (0)

static inline int dh_setup(void **state) {
  (void)state;
  st = wf_status_new();
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  DH_CHECK(wf_config_set(cfg, "plugins", "paths", DH_PLUGIN_PATHS, st));
  DH_CHECK(wf_config_set(cfg, "plugins", "use_default_dir", "false", st));
  DH_CHECK(wf_config_set(cfg, "plugins", "use_env_path", "false", st));
  DH_CHECK(wf_config_set(cfg, "plugins", "strict", "true", st));
  DH_CHECK(wf_config_set(cfg, "threads", "inter_op", "2", st));
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  DH_CHECK(!rt);
  DH_CHECK(wf__runtime_add_plugin(rt, test_reader_desc(), "(test)", NULL, st));
  strcpy(dir, "/tmp/weft-test-data-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}

static inline int dh_teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}

/* The path of name in the scratch directory (in one of 8 static buffers
 * used in turn: copy it to keep it longer). */
static inline const char *dh_path(const char *name) {
  static char buf[8][256];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, 256, "%s/%s", dir, name);
  return b;
}

/* Writes a .tst file of records first, first + 1, ..., first + n - 1. */
static inline const char *dh_write_range(const char *name, int first, int n) {
  const char *p = dh_path(name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  for (int i = 0; i < n; i++)
    fprintf(f, "%d\n", first + i);
  assert_int_equal(fclose(f), 0);
  return p;
}

/* Writes a file of the given lines (NULL-terminated). */
static inline const char *dh_write_lines(const char *name, ...) {
  const char *p = dh_path(name);
  FILE *f = fopen(p, "w");
  va_list ap;
  assert_non_null(f);
  va_start(ap, name);
  for (const char *l; (l = va_arg(ap, const char *));)
    fprintf(f, "%s\n", l);
  va_end(ap);
  assert_int_equal(fclose(f), 0);
  return p;
}

/* A dataset of the files pattern names (in the scratch directory). */
static inline wf_dataset *dh_files(const char *pattern) {
  wf_dataset *ds = wf_dataset_from_files(rt, dh_path(pattern), NULL, NULL, 0,
                                         st);
  DH_CHECK(!ds);
  return ds;
}

/* The int64 "index" of an element of the test reader's fields (field i of
 * f, unbatched). */
static inline int64_t dh_index(wf_tensor *const *f, int i) {
  assert_int_equal(wf_tensor_dtype(f[i]), WF_INT64);
  return *(const int64_t *)wf_tensor_data(f[i]);
}

static inline void dh_release(wf_tensor **f, int n) {
  for (int i = 0; i < n; i++) {
    wf_tensor_release(f[i]);
    f[i] = NULL;
  }
}

/* Takes up to max elements of it (all when max < 0) and stores field
 * `field`'s int64 values (every value of a batch) in out; returns how many
 * values. Fails the test on any error but the end. */
static inline int dh_take(wf_iterator *it, int field, int max, int64_t *out,
                   int cap) {
  int nf = wf_dataset_num_fields(wf_iterator_dataset(it));
  wf_tensor *f[16];
  int n = 0;
  assert_true(nf <= 16);
  for (int e = 0; max < 0 || e < max; e++) {
    int rc = wf_iterator_next(it, f, st);
    if (rc == WF_OUT_OF_RANGE)
      break;
    DH_CHECK(rc != WF_OK);
    int64_t count = wf_tensor_count(f[field]);
    const int64_t *v = wf_tensor_data(f[field]);
    assert_int_equal(wf_tensor_dtype(f[field]), WF_INT64);
    for (int64_t k = 0; k < count; k++) {
      assert_true(n < cap);
      out[n++] = v[k];
    }
    for (int i = 0; i < nf; i++)
      wf_tensor_release(f[i]);
  }
  return n;
}

/* Sorts a copy and checks it is first, first + 1, ..., first + n - 1. */
static inline void dh_assert_permutation(const int64_t *v, int n, int64_t first) {
  int64_t *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
  assert_non_null(s);
  memcpy(s, v, (size_t)n * sizeof *s);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
      int64_t t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
    }
  for (int i = 0; i < n; i++)
    if (s[i] != first + i)
      fail_msg("value %lld missing or repeated (sorted[%d] = %lld)",
               (long long)(first + i), i, (long long)s[i]);
  free(s);
}

#endif
