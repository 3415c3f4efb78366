/* tests/core/test_attr.c — attribute values: deep copies, equality, hashes
 * and text (core/graph/attr.c). */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "base/alloc.h"
#include "graph/attr.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

static wf_tensor *make_tensor(float a, float b) {
  int64_t d = 2;
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, &d, 1, NULL);
  float *p = wf_tensor_data(t);
  p[0] = a;
  p[1] = b;
  return t;
}

static void test_attr_copy_of_string_is_deep(void **state) {
  char src[] = "same";
  wf_attr_value v = {.type = WF_ATTR_STRING, .count = 1, .u.s = src}, c;
  (void)state;
  assert_int_equal(wf__attr_copy(&c, &v), 0);
  src[0] = 'X';
  assert_string_equal(c.u.s, "same");
  assert_int_equal(c.count, 1);
  wf__attr_clear(&c);
  assert_int_equal(c.type, WF_ATTR_NONE);
}

static void test_attr_copy_of_lists_is_deep(void **state) {
  int64_t ints[] = {1, 2, 3};
  char s0[] = "a", s1[] = "bc";
  const char *strs[] = {s0, s1};
  wf_shape shapes[2];
  wf_attr_value vi = {.type = WF_ATTR_LIST | WF_ATTR_INT,
                      .count = 3,
                      .u.ints = ints},
                vs = {.type = WF_ATTR_LIST | WF_ATTR_STRING,
                      .count = 2,
                      .u.strings = strs},
                vh = {.type = WF_ATTR_LIST | WF_ATTR_SHAPE,
                      .count = 2,
                      .u.shapes = shapes},
                ci, cs, ch;
  (void)state;
  wf_shape_init(&shapes[0], ints, 3);
  wf_shape_unknown(&shapes[1]);
  assert_int_equal(wf__attr_copy(&ci, &vi), 0);
  assert_int_equal(wf__attr_copy(&cs, &vs), 0);
  assert_int_equal(wf__attr_copy(&ch, &vh), 0);
  assert_true(wf__attr_equal(&ci, &vi));
  assert_true(wf__attr_equal(&cs, &vs));
  assert_true(wf__attr_equal(&ch, &vh));
  ints[0] = 9;
  s1[0] = 'z';
  shapes[1].rank = 0;
  assert_int_equal(ci.u.ints[0], 1);
  assert_string_equal(cs.u.strings[1], "bc");
  assert_int_equal(ch.u.shapes[1].rank, WF_UNKNOWN_RANK);
  assert_false(wf__attr_equal(&ci, &vi));
  wf__attr_clear(&ci);
  wf__attr_clear(&cs);
  wf__attr_clear(&ch);
}

static void test_attr_copy_retains_tensors(void **state) {
  wf_tensor *t = make_tensor(1, 2), *items[1];
  wf_attr_value v = {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}, c, cl;
  wf_attr_value l = {.type = WF_ATTR_LIST | WF_ATTR_TENSOR, .count = 1};
  (void)state;
  items[0] = t;
  l.u.tensors = (const wf_tensor *const *)items;
  assert_int_equal(wf__attr_copy(&c, &v), 0);
  assert_int_equal(wf__attr_copy(&cl, &l), 0);
  wf_tensor_release(t); /* the copies keep it alive */
  assert_int_equal(((const float *)wf_tensor_data(c.u.tensor))[1], 2);
  assert_ptr_equal(cl.u.tensors[0], c.u.tensor);
  wf__attr_clear(&c);
  wf__attr_clear(&cl); /* the last reference: ASan reports a leak otherwise */
}

static void test_attr_copy_of_empty_list(void **state) {
  wf_attr_value v = {.type = WF_ATTR_LIST | WF_ATTR_FLOAT, .count = 0}, c;
  (void)state;
  assert_int_equal(wf__attr_copy(&c, &v), 0);
  assert_int_equal(c.count, 0);
  assert_true(wf__attr_equal(&c, &v));
  wf__attr_clear(&c);
}

static void test_attr_copy_out_of_memory_leaves_nothing(void **state) {
  const char *strs[] = {"one", "two", "three"};
  wf_attr_value v = {.type = WF_ATTR_LIST | WF_ATTR_STRING,
                     .count = 3,
                     .u.strings = strs},
                c;
  (void)state;
  /* Fail each allocation in turn: no leak (ASan) and -1 every time. */
  for (long k = 1; k <= 4; k++) {
    wf__alloc_fail_after(k, 0);
    assert_int_equal(wf__attr_copy(&c, &v), -1);
  }
  wf__alloc_fail_after(0, 0);
  assert_int_equal(wf__attr_copy(&c, &v), 0);
  wf__attr_clear(&c);
}

static void test_attr_equal_compares_type_and_value(void **state) {
  wf_tensor *t1 = make_tensor(1, 2), *t2 = make_tensor(1, 2),
            *t3 = make_tensor(1, 3);
  wf_attr_value i1 = {.type = WF_ATTR_INT, .u.i = 1},
                f1 = {.type = WF_ATTR_FLOAT, .u.f = 1},
                n1 = {.type = WF_ATTR_FLOAT, .u.f = NAN},
                n2 = {.type = WF_ATTR_FLOAT, .u.f = NAN},
                b1 = {.type = WF_ATTR_BOOL, .u.b = 1},
                b2 = {.type = WF_ATTR_BOOL, .u.b = 5},
                a = {.type = WF_ATTR_TENSOR, .u.tensor = t1},
                b = {.type = WF_ATTR_TENSOR, .u.tensor = t2},
                c = {.type = WF_ATTR_TENSOR, .u.tensor = t3};
  (void)state;
  assert_false(wf__attr_equal(&i1, &f1)); /* types differ */
  assert_true(wf__attr_equal(&n1, &n2));
  assert_true(wf__attr_equal(&b1, &b2)); /* any non-zero is true */
  assert_true(wf__attr_equal(&a, &b));   /* same bytes */
  assert_false(wf__attr_equal(&a, &c));
  wf_tensor_release(t1);
  wf_tensor_release(t2);
  wf_tensor_release(t3);
}

static void test_attr_hash_agrees_with_equal(void **state) {
  int64_t l1[] = {1, 2}, l2[] = {1, 2}, l3[] = {2, 1};
  wf_attr_value
      z = {.type = WF_ATTR_FLOAT, .u.f = 0.0},
      nz = {.type = WF_ATTR_FLOAT, .u.f = -0.0},
      a = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 2, .u.ints = l1},
      b = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 2, .u.ints = l2},
      c = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 2, .u.ints = l3},
      s1 = {.type = WF_ATTR_STRING, .u.s = "x"},
      s2 = {.type = WF_ATTR_STRING, .u.s = "x"};
  (void)state;
  assert_true(wf__attr_equal(&z, &nz));
  assert_true(wf__attr_hash(&z, 0) == wf__attr_hash(&nz, 0));
  assert_true(wf__attr_hash(&a, 7) == wf__attr_hash(&b, 7));
  assert_true(wf__attr_hash(&a, 7) != wf__attr_hash(&c, 7));
  assert_true(wf__attr_hash(&a, 1) != wf__attr_hash(&a, 2)); /* seeded */
  assert_true(wf__attr_hash(&s1, 0) == wf__attr_hash(&s2, 0));
}

static void test_attr_type_names(void **state) {
  (void)state;
  assert_string_equal(wf__attr_type_name(WF_ATTR_INT), "int");
  assert_string_equal(wf__attr_type_name(WF_ATTR_DTYPE), "dtype");
  assert_string_equal(wf__attr_type_name(WF_ATTR_LIST | WF_ATTR_FLOAT),
                      "list(float)");
  assert_string_equal(wf__attr_type_name(WF_ATTR_LIST | WF_ATTR_TENSOR),
                      "list(tensor)");
  assert_string_equal(wf__attr_type_name(99), "unknown");
}

static void test_attr_str_is_short_and_readable(void **state) {
  char buf[64], tiny[8];
  int64_t ints[] = {1, 2}, dims[] = {2, -1};
  int32_t dts[] = {WF_FLOAT32, WF_INT64};
  wf_tensor *t = make_tensor(0, 0);
  wf_attr_value v;
  (void)state;
  v = (wf_attr_value){.type = WF_ATTR_INT, .u.i = 3};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "3");
  v = (wf_attr_value){.type = WF_ATTR_FLOAT, .u.f = 0.5};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "0.5");
  v = (wf_attr_value){.type = WF_ATTR_BOOL, .u.b = 0};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "false");
  v = (wf_attr_value){.type = WF_ATTR_STRING, .u.s = "SAME"};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "\"SAME\"");
  v = (wf_attr_value){.type = WF_ATTR_DTYPE, .u.dtype = WF_BFLOAT16};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "bfloat16");
  v = (wf_attr_value){.type = WF_ATTR_SHAPE};
  wf_shape_init(&v.u.shape, dims, 2);
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "(2, ?)");
  v = (wf_attr_value){.type = WF_ATTR_TENSOR, .u.tensor = t};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf),
                      "<tensor float32 (2)>");
  v = (wf_attr_value){
      .type = WF_ATTR_LIST | WF_ATTR_INT, .count = 2, .u.ints = ints};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "[1, 2]");
  v = (wf_attr_value){
      .type = WF_ATTR_LIST | WF_ATTR_DTYPE, .count = 2, .u.dtypes = dts};
  assert_string_equal(wf__attr_str(&v, buf, sizeof buf), "[float32, int64]");
  wf__attr_str(&v, tiny, sizeof tiny);
  assert_string_equal(tiny, "[flo...");
  wf_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attr_copy_of_string_is_deep),
      cmocka_unit_test(test_attr_copy_of_lists_is_deep),
      cmocka_unit_test(test_attr_copy_retains_tensors),
      cmocka_unit_test(test_attr_copy_of_empty_list),
      cmocka_unit_test(test_attr_copy_out_of_memory_leaves_nothing),
      cmocka_unit_test(test_attr_equal_compares_type_and_value),
      cmocka_unit_test(test_attr_hash_agrees_with_equal),
      cmocka_unit_test(test_attr_type_names),
      cmocka_unit_test(test_attr_str_is_short_and_readable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
