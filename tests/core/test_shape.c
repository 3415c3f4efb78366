/* tests/core/test_shape.c — dtypes and shapes as values (core/graph/dtype.c). */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>
#include <weft/tensor.h>

static void test_dtype_sizes(void **state) {
  (void)state;
  assert_int_equal(wf_dtype_size(WF_FLOAT32), 4);
  assert_int_equal(wf_dtype_size(WF_FLOAT64), 8);
  assert_int_equal(wf_dtype_size(WF_FLOAT16), 2);
  assert_int_equal(wf_dtype_size(WF_BFLOAT16), 2);
  assert_int_equal(wf_dtype_size(WF_INT8), 1);
  assert_int_equal(wf_dtype_size(WF_UINT8), 1);
  assert_int_equal(wf_dtype_size(WF_INT32), 4);
  assert_int_equal(wf_dtype_size(WF_INT64), 8);
  assert_int_equal(wf_dtype_size(WF_BOOL), 1);
  assert_int_equal(wf_dtype_size(WF_DTYPE_INVALID), 0);
  assert_int_equal(wf_dtype_size(WF_DTYPE_COUNT), 0);
  assert_int_equal(wf_dtype_size((wf_dtype)-3), 0);
}

static void test_dtype_names_round_trip(void **state) {
  (void)state;
  for (int t = 1; t < WF_DTYPE_COUNT; t++) {
    const char *name = wf_dtype_name((wf_dtype)t);
    assert_non_null(name);
    assert_int_equal(wf_dtype_from_name(name), t);
  }
  assert_string_equal(wf_dtype_name(WF_BFLOAT16), "bfloat16");
  assert_null(wf_dtype_name(WF_DTYPE_INVALID));
  assert_null(wf_dtype_name((wf_dtype)99));
}

static void test_dtype_from_name_accepts_aliases_refuses_unknown(void **state) {
  (void)state;
  assert_int_equal(wf_dtype_from_name("f32"), WF_FLOAT32);
  assert_int_equal(wf_dtype_from_name("float"), WF_FLOAT32);
  assert_int_equal(wf_dtype_from_name("FLOAT64"), WF_FLOAT64);
  assert_int_equal(wf_dtype_from_name("i64"), WF_INT64);
  assert_int_equal(wf_dtype_from_name("bf16"), WF_BFLOAT16);
  assert_int_equal(wf_dtype_from_name("complex64"), WF_DTYPE_INVALID);
  assert_int_equal(wf_dtype_from_name(""), WF_DTYPE_INVALID);
  assert_int_equal(wf_dtype_from_name(NULL), WF_DTYPE_INVALID);
}

static void test_shape_init_count_and_known(void **state) {
  int64_t dims[] = {2, 3, 4};
  wf_shape s;
  (void)state;
  wf_shape_init(&s, dims, 3);
  assert_int_equal(s.rank, 3);
  assert_true(wf_shape_is_known(&s));
  assert_int_equal(wf_shape_count(&s), 24);
  wf_shape_init(&s, NULL, 0);
  assert_int_equal(s.rank, 0);
  assert_int_equal(wf_shape_count(&s), 1); /* a scalar */
  dims[1] = -1;
  wf_shape_init(&s, dims, 3);
  assert_false(wf_shape_is_known(&s));
  assert_int_equal(wf_shape_count(&s), -1);
  wf_shape_unknown(&s);
  assert_int_equal(s.rank, WF_UNKNOWN_RANK);
  assert_int_equal(wf_shape_count(&s), -1);
  dims[1] = 0;
  wf_shape_init(&s, dims, 3);
  assert_int_equal(wf_shape_count(&s), 0);
}

static void test_shape_count_overflow_is_unknown(void **state) {
  int64_t dims[] = {INT64_MAX / 2, 3};
  wf_shape s;
  (void)state;
  wf_shape_init(&s, dims, 2);
  assert_int_equal(wf_shape_count(&s), -1);
}

static void test_shape_compatible_treats_unknowns_as_wildcards(void **state) {
  int64_t a[] = {2, 3}, b[] = {2, -1}, c[] = {2, 4}, d[] = {2};
  wf_shape sa, sb, sc, sd, su;
  (void)state;
  wf_shape_init(&sa, a, 2);
  wf_shape_init(&sb, b, 2);
  wf_shape_init(&sc, c, 2);
  wf_shape_init(&sd, d, 1);
  wf_shape_unknown(&su);
  assert_true(wf_shape_compatible(&sa, &sb));
  assert_true(wf_shape_compatible(&sb, &sc));
  assert_false(wf_shape_compatible(&sa, &sc));
  assert_false(wf_shape_compatible(&sa, &sd));
  assert_true(wf_shape_compatible(&su, &sd));
  assert_true(wf_shape_compatible(&sa, &su));
}

static void test_shape_equal_is_exact(void **state) {
  int64_t a[] = {2, 3}, b[] = {2, -1};
  wf_shape sa, sa2, sb, su, su2;
  (void)state;
  wf_shape_init(&sa, a, 2);
  wf_shape_init(&sa2, a, 2);
  wf_shape_init(&sb, b, 2);
  wf_shape_unknown(&su);
  wf_shape_unknown(&su2);
  assert_true(wf_shape_equal(&sa, &sa2));
  assert_false(wf_shape_equal(&sa, &sb));
  assert_true(wf_shape_equal(&sb, &sb));
  assert_true(wf_shape_equal(&su, &su2));
  assert_false(wf_shape_equal(&sa, &su));
}

static void test_shape_str_formats_and_truncates(void **state) {
  int64_t dims[] = {2, -1, 3};
  char buf[64], small[5];
  wf_shape s;
  (void)state;
  wf_shape_init(&s, dims, 3);
  assert_string_equal(wf_shape_str(&s, buf, sizeof buf), "(2, ?, 3)");
  wf_shape_init(&s, NULL, 0);
  assert_string_equal(wf_shape_str(&s, buf, sizeof buf), "()");
  wf_shape_init(&s, dims, 1);
  assert_string_equal(wf_shape_str(&s, buf, sizeof buf), "(2)");
  wf_shape_unknown(&s);
  assert_string_equal(wf_shape_str(&s, buf, sizeof buf), "<unknown>");
  wf_shape_init(&s, dims, 3);
  wf_shape_str(&s, small, sizeof small);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_memory_equal(small, "(2, ", 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_sizes),
      cmocka_unit_test(test_dtype_names_round_trip),
      cmocka_unit_test(test_dtype_from_name_accepts_aliases_refuses_unknown),
      cmocka_unit_test(test_shape_init_count_and_known),
      cmocka_unit_test(test_shape_count_overflow_is_unknown),
      cmocka_unit_test(test_shape_compatible_treats_unknowns_as_wildcards),
      cmocka_unit_test(test_shape_equal_is_exact),
      cmocka_unit_test(test_shape_str_formats_and_truncates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
