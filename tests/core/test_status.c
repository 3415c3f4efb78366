/* tests/core/test_status.c — status objects: codes, messages, prefixes and
 * code names (core/base/status.c). */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "base/status_internal.h"

static void test_status_new_is_ok_with_empty_message(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  assert_non_null(st);
  assert_int_equal(wf_status_code(st), WF_OK);
  assert_string_equal(wf_status_message(st), "");
  wf_status_free(st);
}

static void test_status_set_formats_message_and_returns_code(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(
      wf_status_set(st, WF_NOT_FOUND, "node '%s' has %d inputs", "add", 3),
      WF_NOT_FOUND);
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_string_equal(wf_status_message(st), "node 'add' has 3 inputs");
  /* A second set replaces the first. */
  wf_status_set(st, WF_INTERNAL, "second");
  assert_int_equal(wf_status_code(st), WF_INTERNAL);
  assert_string_equal(wf_status_message(st), "second");
  wf_status_free(st);
}

static void test_status_set_ok_clears_message(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  wf_status_set(st, WF_INTERNAL, "broken");
  assert_int_equal(wf_status_set(st, WF_OK, "ignored %d", 1), WF_OK);
  assert_int_equal(wf_status_code(st), WF_OK);
  assert_string_equal(wf_status_message(st), "");
  wf_status_free(st);
}

static void test_status_prefix_prepends_context(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  wf_status_set(st, WF_INVALID_ARGUMENT, "bad dim");
  wf_status_prefix(st, "file %s line %d", "a.ini", 7);
  assert_string_equal(wf_status_message(st), "file a.ini line 7: bad dim");
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  wf_status_free(st);
}

static void test_status_prefix_leaves_ok_status_alone(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  wf_status_prefix(st, "context");
  assert_int_equal(wf_status_code(st), WF_OK);
  assert_string_equal(wf_status_message(st), "");
  wf_status_free(st);
}

static void test_status_reset_returns_to_ok(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  wf_status_set(st, WF_ABORTED, "stopped");
  wf_status_reset(st);
  assert_int_equal(wf_status_code(st), WF_OK);
  assert_string_equal(wf_status_message(st), "");
  wf_status_free(st);
}

static void test_status_null_status_is_accepted(void **state) {
  (void)state;
  assert_int_equal(wf_status_set(NULL, WF_CANCELLED, "x"), WF_CANCELLED);
  wf_status_prefix(NULL, "y");
  wf_status_reset(NULL);
  wf_status_free(NULL);
  assert_int_equal(wf_status_code(NULL), WF_OK);
  assert_string_equal(wf_status_message(NULL), "");
}

static void test_status_without_format_keeps_code(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  wf_status_set(st, WF_UNAVAILABLE, NULL);
  assert_int_equal(wf_status_code(st), WF_UNAVAILABLE);
  assert_string_equal(wf_status_message(st), "");
  wf_status_free(st);
}

static wf_code vset_helper(wf_status *st, const char *fmt, ...) {
  va_list ap;
  wf_code c;
  va_start(ap, fmt);
  c = wf__status_vset(st, WF_DATA_LOSS, fmt, ap);
  va_end(ap);
  return c;
}

static void test_status_vset_formats_va_list(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(vset_helper(st, "%s=%d", "crc", 42), WF_DATA_LOSS);
  assert_string_equal(wf_status_message(st), "crc=42");
  wf_status_free(st);
}

static void test_code_name_covers_every_code(void **state) {
  (void)state;
  assert_string_equal(wf_code_name(WF_OK), "OK");
  assert_string_equal(wf_code_name(WF_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  assert_string_equal(wf_code_name(WF_NOT_FOUND), "NOT_FOUND");
  assert_string_equal(wf_code_name(WF_ALREADY_EXISTS), "ALREADY_EXISTS");
  assert_string_equal(wf_code_name(WF_RESOURCE_EXHAUSTED),
                      "RESOURCE_EXHAUSTED");
  assert_string_equal(wf_code_name(WF_UNAUTHENTICATED), "UNAUTHENTICATED");
  for (int c = WF_OK; c <= WF_UNAUTHENTICATED; c++)
    assert_string_not_equal(wf_code_name((wf_code)c), "UNKNOWN_CODE");
  assert_string_equal(wf_code_name((wf_code)17), "UNKNOWN_CODE");
  assert_string_equal(wf_code_name((wf_code)-1), "UNKNOWN_CODE");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_new_is_ok_with_empty_message),
      cmocka_unit_test(test_status_set_formats_message_and_returns_code),
      cmocka_unit_test(test_status_set_ok_clears_message),
      cmocka_unit_test(test_status_prefix_prepends_context),
      cmocka_unit_test(test_status_prefix_leaves_ok_status_alone),
      cmocka_unit_test(test_status_reset_returns_to_ok),
      cmocka_unit_test(test_status_null_status_is_accepted),
      cmocka_unit_test(test_status_without_format_keeps_code),
      cmocka_unit_test(test_status_vset_formats_va_list),
      cmocka_unit_test(test_code_name_covers_every_code),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
