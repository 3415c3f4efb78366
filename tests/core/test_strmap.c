/* tests/core/test_strmap.c — the string-keyed hash map (core/base/strmap.c). */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/strmap.h"

static void test_strmap_empty_finds_nothing(void **state) {
  wf__strmap m;
  (void)state;
  wf__strmap_init(&m);
  assert_null(wf__strmap_get(&m, "a"));
  wf__strmap_del(&m, "a");
  assert_int_equal(m.n, 0);
  wf__strmap_deinit(&m);
}

static void test_strmap_put_get_replace(void **state) {
  wf__strmap m;
  int a = 1, b = 2;
  char key[] = "alpha";
  (void)state;
  wf__strmap_init(&m);
  assert_int_equal(wf__strmap_put(&m, "alpha", &a), 0);
  /* Lookup compares contents, not pointers. */
  assert_ptr_equal(wf__strmap_get(&m, key), &a);
  assert_int_equal(wf__strmap_put(&m, "alpha", &b), 0);
  assert_ptr_equal(wf__strmap_get(&m, "alpha"), &b);
  assert_int_equal(m.n, 1);
  assert_null(wf__strmap_get(&m, "alph"));
  wf__strmap_deinit(&m);
}

static void test_strmap_holds_many_keys_across_growth(void **state) {
  enum { N = 2000 };
  static char keys[N][24];
  wf__strmap m;
  (void)state;
  wf__strmap_init(&m);
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "node_%d", i);
    assert_int_equal(wf__strmap_put(&m, keys[i], keys[i]), 0);
  }
  assert_int_equal(m.n, N);
  assert_true(m.cap >= N);
  assert_int_equal(m.cap & (m.cap - 1), 0);
  for (int i = 0; i < N; i++)
    assert_ptr_equal(wf__strmap_get(&m, keys[i]), keys[i]);
  wf__strmap_deinit(&m);
}

static void test_strmap_delete_then_reinsert(void **state) {
  enum { N = 200 };
  static char keys[N][24];
  wf__strmap m;
  (void)state;
  wf__strmap_init(&m);
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "k%d", i);
    wf__strmap_put(&m, keys[i], keys[i]);
  }
  for (int i = 0; i < N; i += 2)
    wf__strmap_del(&m, keys[i]);
  assert_int_equal(m.n, N / 2);
  for (int i = 0; i < N; i++)
    if (i % 2)
      assert_ptr_equal(wf__strmap_get(&m, keys[i]), keys[i]);
    else
      assert_null(wf__strmap_get(&m, keys[i]));
  /* Churn: deleted slots are reused or swept, so the table stays bounded. */
  for (int round = 0; round < 50; round++)
    for (int i = 0; i < N; i += 2) {
      assert_int_equal(wf__strmap_put(&m, keys[i], keys[i]), 0);
      wf__strmap_del(&m, keys[i]);
    }
  assert_int_equal(m.n, N / 2);
  assert_true(m.cap <= 1024);
  for (int i = 1; i < N; i += 2)
    assert_ptr_equal(wf__strmap_get(&m, keys[i]), keys[i]);
  wf__strmap_deinit(&m);
}

static void test_strmap_put_out_of_memory_leaves_map_unchanged(void **state) {
  enum { N = 6 };
  static char keys[N + 1][16];
  wf__strmap m;
  (void)state;
  wf__strmap_init(&m);
  for (int i = 0; i <= N; i++)
    snprintf(keys[i], sizeof keys[i], "k%d", i);
  for (int i = 0; i < N; i++)
    wf__strmap_put(&m, keys[i], keys[i]);
  /* The 7th key needs a bigger table (8 slots, 3/4 full). */
  wf__alloc_fail_after(1, 0);
  assert_int_equal(wf__strmap_put(&m, keys[N], keys[N]), -1);
  wf__alloc_fail_after(0, 0);
  assert_int_equal(m.n, N);
  assert_null(wf__strmap_get(&m, keys[N]));
  for (int i = 0; i < N; i++)
    assert_ptr_equal(wf__strmap_get(&m, keys[i]), keys[i]);
  assert_int_equal(wf__strmap_put(&m, keys[N], keys[N]), 0);
  assert_ptr_equal(wf__strmap_get(&m, keys[N]), keys[N]);
  wf__strmap_deinit(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strmap_empty_finds_nothing),
      cmocka_unit_test(test_strmap_put_get_replace),
      cmocka_unit_test(test_strmap_holds_many_keys_across_growth),
      cmocka_unit_test(test_strmap_delete_then_reinsert),
      cmocka_unit_test(test_strmap_put_out_of_memory_leaves_map_unchanged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
