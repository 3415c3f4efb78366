/* tests/core/test_variables.c — a session's variables (core/exec/variables.c):
 * assignment, copy on write under var_lock, and the versions of their
 * values that the host table's tensor_version reports. */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include <weft/plugin.h>

#include "base/status_internal.h"
#include "exec/variables.h"
#include "graph/tensor_internal.h"
#include "host/host.h"

static const int64_t dims[2] = {2, 3};

static wf_tensor *filled(float v) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 2, NULL);
  assert_non_null(t);
  for (int i = 0; i < 6; i++)
    ((float *)wf_tensor_data(t))[i] = v;
  return t;
}

static wf__variable *make_var(wf__varstore *vs, const char *name) {
  wf_shape s;
  wf_shape_init(&s, dims, 2);
  wf__variable *v = wf__varstore_get(vs, name, WF_FLOAT32, &s, NULL);
  assert_non_null(v);
  return v;
}

static uint64_t version(const wf_tensor *t) {
  return wf__host()->tensor_version(t);
}

/* Tensors nobody vouches for have version 0; a variable's value has one of
 * its own, which changes with every update through var_lock and is gone
 * when the variable lets go of the value. */
static void test_a_value_has_a_version_that_every_write_changes(void **state) {
  wf_status *st = wf_status_new();
  wf__varstore *vs = wf__varstore_new();
  wf__variable *v = make_var(vs, "w");
  wf_tensor *a = filled(1.0f), *b = filled(2.0f), *seen;
  uint64_t v0, v1, v2;

  (void)state;
  assert_true(WF_HOST_HAS(wf__host(), tensor_version));
  assert_int_equal(version(a), 0);
  assert_int_equal(version(NULL), 0);
  assert_int_equal(wf__var_assign(v->handle, a, st), 0);
  wf_tensor_release(a); /* the variable's now: a is borrowed */
  v0 = version(a);
  assert_true(v0 != 0);
  /* Reading does not change it. */
  seen = wf__var_read(v->handle, st);
  assert_ptr_equal(seen, a);
  assert_true(version(seen) == v0);
  wf_tensor_release(seen);
  /* An update in place (nobody else holds the value): new versions at the
   * lock and at the unlock, never one seen before. */
  wf_tensor *w = wf__var_lock(v->handle, st);
  assert_ptr_equal(w, a);
  v1 = version(w);
  assert_true(v1 != 0 && v1 != v0);
  ((float *)wf_tensor_data(w))[0] = 5.0f;
  wf__var_unlock(v->handle);
  v2 = version(a);
  assert_true(v2 != 0 && v2 != v1 && v2 != v0);
  /* Assigning another value: the old one is no longer vouched for (its
   * last holder may write it unseen), the new one has a fresh version. */
  wf_tensor_retain(a);
  assert_int_equal(wf__var_assign(v->handle, b, st), 0);
  assert_int_equal(version(a), 0);
  assert_true(version(b) != 0 && version(b) != v2);
  wf_tensor_release(a);
  wf_tensor_release(b);
  wf__varstore_free(vs);
  wf_status_free(st);
}

/* A reader holding the value while it is updated keeps the old bytes and
 * the old version; the variable's new value (a copy) gets its own. */
static void test_copy_on_write_keeps_the_readers_version(void **state) {
  wf_status *st = wf_status_new();
  wf__varstore *vs = wf__varstore_new();
  wf__variable *v = make_var(vs, "w");
  wf_tensor *a = filled(1.0f), *held, *w;
  uint64_t before;

  (void)state;
  assert_int_equal(wf__var_assign(v->handle, a, st), 0);
  wf_tensor_release(a);
  held = wf__var_read(v->handle, st);
  before = version(held);
  w = wf__var_lock(v->handle, st);
  assert_non_null(w);
  assert_ptr_not_equal(w, held);
  ((float *)wf_tensor_data(w))[0] = 9.0f;
  wf__var_unlock(v->handle);
  /* The reader's tensor is no longer the value: nothing vouches for it,
   * and its bytes are the old ones. */
  assert_int_equal(version(held), 0);
  assert_true(((float *)wf_tensor_data(held))[0] == 1.0f);
  w = wf__var_read(v->handle, st);
  assert_true(version(w) != 0 && version(w) != before);
  assert_true(((float *)wf_tensor_data(w))[0] == 9.0f);
  wf_tensor_release(w);
  wf_tensor_release(held);
  wf__varstore_free(vs);
  wf_status_free(st);
}

/* A wrapped buffer stays the caller's: the variable holds (and versions) a
 * copy, and the caller's tensor keeps version 0. */
static void test_a_wrapped_value_is_copied_and_versioned(void **state) {
  wf_status *st = wf_status_new();
  wf__varstore *vs = wf__varstore_new();
  wf__variable *v = make_var(vs, "w");
  float buf[6] = {1, 2, 3, 4, 5, 6};
  wf_tensor *t = wf_tensor_wrap(WF_FLOAT32, dims, 2, buf, sizeof buf, NULL,
                                NULL, st), *got;

  (void)state;
  assert_non_null(t);
  assert_int_equal(wf__var_assign(v->handle, t, st), 0);
  assert_int_equal(version(t), 0);
  got = wf__var_read(v->handle, st);
  assert_ptr_not_equal(got, t);
  assert_true(version(got) != 0);
  wf_tensor_release(got);
  wf_tensor_release(t);
  wf__varstore_free(vs);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_value_has_a_version_that_every_write_changes),
      cmocka_unit_test(test_copy_on_write_keeps_the_readers_version),
      cmocka_unit_test(test_a_wrapped_value_is_copied_and_versioned),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
