/* tests/core/test_tensor.c — tensors: allocation and alignment, wrapped
 * buffers and their dealloc, reference counting, refused shapes
 * (core/graph/tensor.c). */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

typedef struct dealloc_record {
  atomic_int calls;
  void *data;
  size_t len;
} dealloc_record;

static void record_dealloc(void *data, size_t len, void *arg) {
  dealloc_record *r = arg;
  atomic_fetch_add(&r->calls, 1);
  r->data = data;
  r->len = len;
}

static void test_tensor_new_is_64_byte_aligned(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  for (int t = 1; t < WF_DTYPE_COUNT; t++)
    for (int64_t n = 0; n < 70; n += 13) {
      wf_tensor *x = wf_tensor_new((wf_dtype)t, &n, 1, st);
      assert_non_null(x);
      assert_int_equal((uintptr_t)wf_tensor_data(x) % WF_TENSOR_ALIGN, 0);
      memset(wf_tensor_data(x), 0x5a, wf_tensor_nbytes(x));
      wf_tensor_release(x);
    }
  wf_status_free(st);
}

static void test_tensor_new_reports_dtype_shape_and_size(void **state) {
  int64_t dims[] = {2, 3, 5};
  wf_status *st = wf_status_new();
  wf_tensor *x = wf_tensor_new(WF_FLOAT64, dims, 3, st);
  wf_shape s;
  (void)state;
  assert_non_null(x);
  assert_int_equal(wf_status_code(st), WF_OK);
  assert_int_equal(wf_tensor_dtype(x), WF_FLOAT64);
  assert_int_equal(wf_tensor_rank(x), 3);
  assert_int_equal(wf_tensor_dim(x, 0), 2);
  assert_int_equal(wf_tensor_dim(x, 2), 5);
  assert_int_equal(wf_tensor_count(x), 30);
  assert_int_equal(wf_tensor_nbytes(x), 240);
  wf_tensor_shape(x, &s);
  assert_int_equal(s.rank, 3);
  assert_int_equal(s.dims[1], 3);
  wf_tensor_release(x);
  wf_status_free(st);
}

static void test_tensor_new_scalar_and_empty(void **state) {
  int64_t zero = 0;
  wf_status *st = wf_status_new();
  wf_tensor *s = wf_tensor_new(WF_INT32, NULL, 0, st);
  wf_tensor *e = wf_tensor_new(WF_INT32, &zero, 1, st);
  (void)state;
  assert_non_null(s);
  assert_int_equal(wf_tensor_rank(s), 0);
  assert_int_equal(wf_tensor_count(s), 1);
  assert_int_equal(wf_tensor_nbytes(s), 4);
  assert_non_null(e);
  assert_int_equal(wf_tensor_count(e), 0);
  assert_int_equal(wf_tensor_nbytes(e), 0);
  wf_tensor_release(s);
  wf_tensor_release(e);
  wf_status_free(st);
}

static void test_tensor_new_refuses_bad_dims(void **state) {
  int64_t neg[] = {2, -1}, big[] = {INT64_MAX, INT64_MAX},
          many[WF_MAX_RANK + 1] = {0};
  wf_status *st = wf_status_new();
  (void)state;
  assert_null(wf_tensor_new(WF_FLOAT32, neg, 2, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "dim 1 is -1"));
  assert_null(wf_tensor_new(WF_FLOAT32, big, 2, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "too large"));
  assert_null(wf_tensor_new(WF_FLOAT32, many, WF_MAX_RANK + 1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "rank 9"));
  assert_null(wf_tensor_new(WF_FLOAT32, neg, -1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(wf_tensor_new(WF_FLOAT32, NULL, 2, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  wf_status_free(st);
}

static void test_tensor_new_refuses_invalid_dtype(void **state) {
  int64_t d = 3;
  wf_status *st = wf_status_new();
  (void)state;
  assert_null(wf_tensor_new(WF_DTYPE_INVALID, &d, 1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(wf_tensor_new((wf_dtype)42, &d, 1, st));
  assert_non_null(strstr(wf_status_message(st), "42"));
  wf_status_free(st);
}

static void test_tensor_new_reports_allocation_failure(void **state) {
  int64_t d = 16;
  wf_status *st = wf_status_new();
  wf_tensor *x;
  (void)state;
  wf__alloc_fail_after(1, 0);
  x = wf_tensor_new(WF_FLOAT32, &d, 1, st);
  wf__alloc_fail_after(0, 0);
  assert_null(x);
  assert_int_equal(wf_status_code(st), WF_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(wf_status_message(st), "64 bytes"));
  wf_status_free(st);
}

static void test_tensor_new_shape_refuses_unknown_dims(void **state) {
  int64_t dims[] = {2, -1};
  wf_status *st = wf_status_new();
  wf_shape s;
  wf_tensor *x;
  (void)state;
  wf_shape_init(&s, dims, 2);
  assert_null(wf__tensor_new_shape(WF_FLOAT32, &s, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "(2, ?)"));
  dims[1] = 4;
  wf_shape_init(&s, dims, 2);
  x = wf__tensor_new_shape(WF_FLOAT32, &s, st);
  assert_non_null(x);
  assert_int_equal(wf_tensor_count(x), 8);
  wf_tensor_release(x);
  wf_status_free(st);
}

static void test_tensor_wrap_calls_dealloc_once_on_last_release(void **state) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  int64_t dims[] = {2, 3};
  dealloc_record r = {0};
  wf_status *st = wf_status_new();
  wf_tensor *x = wf_tensor_wrap(WF_FLOAT32, dims, 2, buf, sizeof buf,
                                record_dealloc, &r, st);
  (void)state;
  assert_non_null(x);
  assert_ptr_equal(wf_tensor_data(x), buf); /* no copy */
  wf_tensor_retain(x);
  wf_tensor_release(x);
  assert_int_equal(atomic_load(&r.calls), 0);
  wf_tensor_release(x);
  assert_int_equal(atomic_load(&r.calls), 1);
  assert_ptr_equal(r.data, buf);
  assert_int_equal(r.len, sizeof buf);
  wf_status_free(st);
}

static void test_tensor_wrap_without_dealloc_leaves_buffer(void **state) {
  int32_t buf[2] = {7, 8};
  int64_t d = 2;
  wf_status *st = wf_status_new();
  wf_tensor *x =
      wf_tensor_wrap(WF_INT32, &d, 1, buf, sizeof buf, NULL, NULL, st);
  (void)state;
  assert_non_null(x);
  wf_tensor_release(x);
  assert_int_equal(buf[1], 8);
  wf_status_free(st);
}

static void test_tensor_wrap_calls_dealloc_when_it_fails(void **state) {
  float buf[4];
  int64_t d = 4, neg = -4;
  dealloc_record r = {0};
  wf_status *st = wf_status_new();
  (void)state;
  /* Length that does not match the shape. */
  assert_null(
      wf_tensor_wrap(WF_FLOAT32, &d, 1, buf, 12, record_dealloc, &r, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "12 bytes"));
  assert_int_equal(atomic_load(&r.calls), 1);
  assert_int_equal(r.len, 12);
  /* A bad dim. */
  assert_null(wf_tensor_wrap(WF_FLOAT32, &neg, 1, buf, sizeof buf,
                             record_dealloc, &r, st));
  assert_int_equal(atomic_load(&r.calls), 2);
  /* Out of memory for the tensor itself. */
  wf__alloc_fail_after(1, 0);
  assert_null(wf_tensor_wrap(WF_FLOAT32, &d, 1, buf, sizeof buf, record_dealloc,
                             &r, st));
  wf__alloc_fail_after(0, 0);
  assert_int_equal(wf_status_code(st), WF_RESOURCE_EXHAUSTED);
  assert_int_equal(atomic_load(&r.calls), 3);
  wf_status_free(st);
}

static void test_tensor_release_null_is_ignored(void **state) {
  (void)state;
  wf_tensor_release(NULL);
}

enum { THREADS = 4, ROUNDS = 20000 };

static void *retain_release_many(void *arg) {
  wf_tensor *x = arg;
  for (int i = 0; i < ROUNDS; i++) {
    wf_tensor_retain(x);
    wf_tensor_release(x);
  }
  wf_tensor_release(x); /* the reference the thread was given */
  return NULL;
}

static void test_tensor_refcount_is_thread_safe(void **state) {
  static float buf[1];
  int64_t d = 1;
  dealloc_record r = {0};
  pthread_t th[THREADS];
  wf_status *st = wf_status_new();
  wf_tensor *x = wf_tensor_wrap(WF_FLOAT32, &d, 1, buf, sizeof buf,
                                record_dealloc, &r, st);
  (void)state;
  assert_non_null(x);
  for (int i = 0; i < THREADS; i++) {
    wf_tensor_retain(x);
    assert_int_equal(pthread_create(&th[i], NULL, retain_release_many, x), 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  assert_int_equal(atomic_load(&r.calls), 0);
  wf_tensor_release(x);
  assert_int_equal(atomic_load(&r.calls), 1);
  wf_status_free(st);
}

/* ---- the cache of freed large blocks --------------------------------------- */

static wf_tensor *floats(int64_t n) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, &n, 1, NULL);
  assert_non_null(t);
  return t;
}

static void test_large_freed_blocks_are_reused_by_the_same_size(void **state) {
  (void)state;
  unsetenv("WEFT_TENSOR_CACHE_MB");
  wf__tensor_cache_clear();
  wf_tensor *t = floats(1 << 18); /* 1 MiB */
  void *data = wf_tensor_data(t);
  wf_tensor_release(t);
  assert_true(wf__tensor_cache_bytes() >= (size_t)1 << 20);
  wf_tensor *u = floats(1 << 18);
  assert_ptr_equal(wf_tensor_data(u), data); /* no fresh pages */
  assert_int_equal(wf__tensor_cache_bytes(), 0);
  wf_tensor *v = floats((1 << 18) + 16); /* another size: not that block */
  assert_ptr_not_equal(wf_tensor_data(v), data);
  wf_tensor_release(u);
  wf_tensor_release(v);
  /* Small tensors go straight back to malloc. */
  wf__tensor_cache_clear();
  wf_tensor_release(floats(16));
  assert_int_equal(wf__tensor_cache_bytes(), 0);
  wf__tensor_cache_clear();
}

static void test_block_cache_keeps_to_its_budget(void **state) {
  (void)state;
  setenv("WEFT_TENSOR_CACHE_MB", "1", 1);
  wf__tensor_cache_clear();
  wf_tensor *t[3] = {floats(150000), floats(150000), floats(150000)};
  for (int i = 0; i < 3; i++)
    wf_tensor_release(t[i]); /* 3 x 600 KB: only one fits in 1 MiB */
  assert_true(wf__tensor_cache_bytes() <= (size_t)1 << 20);
  assert_true(wf__tensor_cache_bytes() > 0);
  setenv("WEFT_TENSOR_CACHE_MB", "0", 1);
  wf__tensor_cache_clear();
  wf_tensor_release(floats(1 << 18));
  assert_int_equal(wf__tensor_cache_bytes(), 0); /* switched off */
  unsetenv("WEFT_TENSOR_CACHE_MB");
  wf__tensor_cache_clear();
}

static void test_elements_read_as_doubles_in_every_dtype(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  int64_t n = 3;
  wf_tensor *h = wf_tensor_new(WF_FLOAT16, &n, 1, st);
  uint16_t *hp = wf_tensor_data(h);
  hp[0] = 0x3c00;                    /* 1 */
  hp[1] = 0xc000;                    /* -2 */
  hp[2] = 0x0001;                    /* smallest subnormal, 2^-24 */
  assert_true(wf_tensor_element(h, 0) == 1.0);
  assert_true(wf_tensor_element(h, 1) == -2.0);
  assert_true(wf_tensor_element(h, 2) == 0x1p-24);
  assert_true(isnan(wf_tensor_element(h, 3)));
  assert_true(isnan(wf_tensor_element(h, -1)));
  wf_tensor *b = wf_tensor_new(WF_BFLOAT16, &n, 1, st);
  uint16_t *bp = wf_tensor_data(b);
  bp[0] = 0x3fc0;                    /* 1.5 */
  bp[1] = wf__float_to_bf16(-0.25f);
  bp[2] = wf__float_to_bf16(NAN);
  assert_true(wf_tensor_element(b, 0) == 1.5);
  assert_true(wf_tensor_element(b, 1) == -0.25);
  assert_true(isnan(wf_tensor_element(b, 2)));
  wf_tensor *q = wf_tensor_new(WF_INT64, &n, 1, st);
  int64_t *qp = wf_tensor_data(q);
  qp[0] = -7;
  qp[1] = 1;
  qp[2] = (int64_t)1 << 40;
  assert_true(wf_tensor_element(q, 0) == -7.0);
  assert_true(wf_tensor_element(q, 2) == 0x1p40);
  wf_tensor *z = wf_tensor_new(WF_BOOL, &n, 1, st);
  uint8_t *zp = wf_tensor_data(z);
  zp[0] = 0;
  zp[1] = 1;
  zp[2] = 7; /* any non-zero byte is true */
  assert_true(wf_tensor_element(z, 2) == 1.0);

  char buf[128];
  assert_string_equal(wf_tensor_str(h, 8, buf, sizeof buf),
                      "float16 (3) [1, -2, 5.96046e-08]");
  assert_string_equal(wf_tensor_str(q, 2, buf, sizeof buf),
                      "int64 (3) [-7, 1, ... 3 values]");
  assert_string_equal(wf_tensor_str(z, 3, buf, sizeof buf),
                      "bool (3) [false, true, true]");
  /* A short buffer is cut, never overrun. */
  char small[12];
  wf_tensor_str(q, 3, small, sizeof small);
  assert_true(strlen(small) < sizeof small);
  wf_tensor_release(h);
  wf_tensor_release(b);
  wf_tensor_release(q);
  wf_tensor_release(z);
  wf_status_free(st);
}

/* ---- string tensors ------------------------------------------------------ */

static void test_string_tensor_holds_copies_of_its_strings(void **state) {
  wf_status *st = wf_status_new();
  const char *words[] = {"monday", "", "a\0b", "\xc3\x89" "cole"};
  size_t lens[] = {6, 0, 3, 6};
  int64_t dims[2] = {2, 2};
  char buf[256];
  (void)state;
  wf_tensor *t = wf_tensor_new_strings(dims, 2, words, lens, st);
  assert_non_null(t);
  assert_int_equal(wf_tensor_dtype(t), WF_STRING);
  assert_int_equal(wf_tensor_count(t), 4);
  for (int i = 0; i < 4; i++) {
    size_t n = 99;
    const char *s = wf_tensor_string(t, i, &n);
    assert_non_null(s);
    assert_int_equal(n, lens[i]);
    if (n)
      assert_memory_equal(s, words[i], n);
    assert_int_equal(s[n], '\0');
    assert_ptr_not_equal(s, words[i]);
  }
  /* the layout of weft/tensor.h: 5 offsets, then each string and a NUL */
  assert_int_equal(wf_tensor_nbytes(t), 5 * 8 + 7 + 1 + 4 + 7);
  assert_int_equal(wf__strings_check(wf_tensor_data(t), wf_tensor_nbytes(t),
                                     4, st),
                   WF_OK);
  assert_null(wf_tensor_string(t, 4, NULL));
  assert_null(wf_tensor_string(t, -1, NULL));
  assert_true(isnan(wf_tensor_element(t, 0)));
  assert_string_equal(wf_tensor_str(t, 8, buf, sizeof buf),
                      "string (2, 2) [\"monday\", \"\", \"a\\x00b\", "
                      "\"\xc3\x89" "cole\"]");
  /* without lengths: NUL-terminated strings */
  wf_tensor *u = wf_tensor_new_strings(NULL, 0, words, NULL, st);
  assert_non_null(u);
  assert_int_equal(wf_tensor_rank(u), 0);
  assert_string_equal(wf_tensor_string(u, 0, NULL), "monday");
  wf_tensor_release(u);
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_string_tensor_of_no_elements(void **state) {
  wf_status *st = wf_status_new();
  int64_t dims[2] = {0, 3};
  (void)state;
  wf_tensor *t = wf_tensor_new_strings(dims, 2, NULL, NULL, st);
  assert_non_null(t);
  assert_int_equal(wf_tensor_count(t), 0);
  assert_int_equal(wf_tensor_nbytes(t), 8);
  assert_null(wf_tensor_string(t, 0, NULL));
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_string_tensors_refuse_what_they_cannot_hold(void **state) {
  wf_status *st = wf_status_new();
  const char *words[] = {"x", NULL};
  int64_t dims[1] = {2}, bad[1] = {-1};
  (void)state;
  assert_null(wf_tensor_new_strings(dims, 1, words, NULL, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "string 1 is NULL"));
  assert_null(wf_tensor_new_strings(dims, 1, NULL, NULL, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(wf_tensor_new_strings(bad, 1, words, NULL, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  /* no uninitialised string tensor: its size depends on its strings */
  assert_null(wf_tensor_new(WF_STRING, dims, 1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "wf_tensor_new_strings"));
  /* element access of another dtype */
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 1, st);
  assert_null(wf_tensor_string(t, 0, NULL));
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_wrapped_string_buffers_are_checked(void **state) {
  wf_status *st = wf_status_new();
  const char *words[] = {"ab", "c"};
  int64_t dims[1] = {2};
  dealloc_record rec = {0};
  (void)state;
  wf_tensor *t = wf_tensor_new_strings(dims, 1, words, NULL, st);
  size_t n = wf_tensor_nbytes(t);
  unsigned char *good = malloc(n), *bad = malloc(n);
  memcpy(good, wf_tensor_data(t), n);
  /* a copy of the bytes is a string tensor again, under any shape */
  int64_t col[2] = {2, 1};
  wf_tensor *w = wf_tensor_wrap(WF_STRING, col, 2, good, n, record_dealloc,
                                &rec, st);
  assert_non_null(w);
  assert_string_equal(wf_tensor_string(w, 1, NULL), "c");
  wf_tensor_release(w);
  assert_int_equal(atomic_load(&rec.calls), 1);
  /* each way of breaking the layout is refused, saying how */
  struct {
    size_t at;
    uint64_t value;
    const char *says;
  } breaks[] = {
      {0, 16, "first string starts"},
      {8, 40, "string 0 ends at byte 40"},
      {8, 24, "string 0 ends"},
      {16, 4096, "string 1 ends"},
      {24, 0, "not followed by a NUL"},
  };
  for (size_t k = 0; k < sizeof breaks / sizeof breaks[0]; k++) {
    memcpy(bad, wf_tensor_data(t), n);
    if (breaks[k].at == 24)
      bad[24 + 2] = 'x';
    else
      memcpy(bad + breaks[k].at, &breaks[k].value, 8);
    atomic_store(&rec.calls, 0);
    assert_null(wf_tensor_wrap(WF_STRING, dims, 1, bad, n, record_dealloc,
                               &rec, st));
    assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
    if (!strstr(wf_status_message(st), breaks[k].says))
      fail_msg("break %zu: %s", k, wf_status_message(st));
    assert_int_equal(atomic_load(&rec.calls), 1);
  }
  /* too short for its offsets */
  assert_null(wf_tensor_wrap(WF_STRING, dims, 1, bad, 16, NULL, NULL, st));
  assert_non_null(strstr(wf_status_message(st), "cannot hold"));
  free(good);
  free(bad);
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_string_dtype_has_a_name_and_no_size(void **state) {
  (void)state;
  assert_string_equal(wf_dtype_name(WF_STRING), "string");
  assert_int_equal(wf_dtype_from_name("string"), WF_STRING);
  assert_int_equal(wf_dtype_from_name("str"), WF_STRING);
  assert_int_equal(wf_dtype_size(WF_STRING), 0);
  assert_null(wf_dtype_name(WF__DTYPE_END));
  /* past the fixed-size dtypes, outside every WF_DTYPES_* set */
  assert_true(WF_STRING >= WF_DTYPE_COUNT);
  assert_int_equal(WF_DTYPES_ALL & WF_DTYPE_BIT(WF_STRING), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tensor_new_is_64_byte_aligned),
      cmocka_unit_test(test_tensor_new_reports_dtype_shape_and_size),
      cmocka_unit_test(test_tensor_new_scalar_and_empty),
      cmocka_unit_test(test_tensor_new_refuses_bad_dims),
      cmocka_unit_test(test_tensor_new_refuses_invalid_dtype),
      cmocka_unit_test(test_tensor_new_reports_allocation_failure),
      cmocka_unit_test(test_tensor_new_shape_refuses_unknown_dims),
      cmocka_unit_test(test_tensor_wrap_calls_dealloc_once_on_last_release),
      cmocka_unit_test(test_tensor_wrap_without_dealloc_leaves_buffer),
      cmocka_unit_test(test_tensor_wrap_calls_dealloc_when_it_fails),
      cmocka_unit_test(test_tensor_release_null_is_ignored),
      cmocka_unit_test(test_tensor_refcount_is_thread_safe),
      cmocka_unit_test(test_large_freed_blocks_are_reused_by_the_same_size),
      cmocka_unit_test(test_block_cache_keeps_to_its_budget),
      cmocka_unit_test(test_elements_read_as_doubles_in_every_dtype),
      cmocka_unit_test(test_string_tensor_holds_copies_of_its_strings),
      cmocka_unit_test(test_string_tensor_of_no_elements),
      cmocka_unit_test(test_string_tensors_refuse_what_they_cannot_hold),
      cmocka_unit_test(test_wrapped_string_buffers_are_checked),
      cmocka_unit_test(test_string_dtype_has_a_name_and_no_size),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
