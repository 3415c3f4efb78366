/* tests/core/test_alloc.c — the host allocator: alignment, realloc, string
 * helpers, counting and failure injection (core/base/alloc.c). */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "base/alloc.h"

static void test_alloc_honours_alignment(void **state) {
  static const size_t aligns[] = {0, 1, 8, 16, 64, 128, 4096};
  (void)state;
  for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
    size_t want = aligns[i] ? aligns[i] : 64;
    for (size_t bytes = 0; bytes < 300; bytes += 37) {
      unsigned char *p = wf__alloc(bytes, aligns[i]);
      assert_non_null(p);
      assert_int_equal((uintptr_t)p % (want < 16 ? 16 : want), 0);
      memset(p, 0xab, bytes); /* ASan checks the size */
      wf__free(p);
    }
  }
}

static void test_calloc_zeroes_and_refuses_overflow(void **state) {
  unsigned char *p = wf__calloc(10, 7);
  (void)state;
  assert_non_null(p);
  for (int i = 0; i < 70; i++)
    assert_int_equal(p[i], 0);
  wf__free(p);
  assert_null(wf__calloc(SIZE_MAX / 2, 3));
}

static void test_realloc_keeps_contents(void **state) {
  char *p = wf__calloc(4, 1);
  (void)state;
  memcpy(p, "abc", 4);
  p = wf__realloc(p, 1000);
  assert_non_null(p);
  assert_string_equal(p, "abc");
  p = wf__realloc(p, 2);
  assert_non_null(p);
  assert_memory_equal(p, "ab", 2);
  wf__free(p);
  p = wf__realloc(NULL, 8);
  assert_non_null(p);
  wf__free(p);
  wf__free(NULL);
}

static void test_string_helpers_copy(void **state) {
  char *a = wf__strdup("weft"), *b = wf__strndup("weftcore", 4),
       *c = wf__asprintf("%s-%d", "op", 7);
  (void)state;
  assert_string_equal(a, "weft");
  assert_string_equal(b, "weft");
  assert_string_equal(c, "op-7");
  wf__free(a);
  wf__free(b);
  wf__free(c);
}

static void test_alloc_count_increases(void **state) {
  long before = wf__alloc_count();
  void *p = wf__alloc(8, 0), *q = wf__calloc(1, 8);
  (void)state;
  assert_true(wf__alloc_count() >= before + 2);
  wf__free(p);
  wf__free(q);
}

static void test_fail_after_fails_exactly_the_nth(void **state) {
  void *a, *b, *c;
  (void)state;
  wf__alloc_fail_after(2, 0);
  a = wf__alloc(8, 0);
  b = wf__alloc(8, 0);
  c = wf__alloc(8, 0);
  wf__alloc_fail_after(0, 0);
  assert_non_null(a);
  assert_null(b);
  assert_non_null(c);
  wf__free(a);
  wf__free(c);
}

static void test_fail_after_sticky_fails_everything_after(void **state) {
  void *a, *b, *c;
  (void)state;
  wf__alloc_fail_after(1, 1);
  a = wf__alloc(8, 0);
  b = wf__strdup("x");
  c = wf__asprintf("%d", 1);
  wf__alloc_fail_after(0, 0);
  assert_null(a);
  assert_null(b);
  assert_null(c);
  a = wf__alloc(8, 0);
  assert_non_null(a);
  wf__free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_honours_alignment),
      cmocka_unit_test(test_calloc_zeroes_and_refuses_overflow),
      cmocka_unit_test(test_realloc_keeps_contents),
      cmocka_unit_test(test_string_helpers_copy),
      cmocka_unit_test(test_alloc_count_increases),
      cmocka_unit_test(test_fail_after_fails_exactly_the_nth),
      cmocka_unit_test(test_fail_after_sticky_fails_everything_after),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
