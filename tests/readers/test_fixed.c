/* tests/readers/test_fixed.c — the fixed-record reader plugin through the
 * real loader: layouts from options, headers and padding, both byte
 * orders, tell/seek and count, files of the wrong size (refused, or the
 * partial record reported), and refused options. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "reader_harness.h"

typedef struct fixture {
  wf_runtime *rt;
  const wf_reader_def *fx;
  char *dir;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);

  f->rt = rh_runtime_new();
  f->fx = rh_reader(f->rt, "fixed", NULL);
  f->dir = rh_tmpdir_new();
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;

  rh_tmpdir_free(f->dir);
  wf_runtime_free(f->rt);
  free(f);
  return 0;
}

/* Little-endian writers into a byte buffer. */
static unsigned char *le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

static unsigned char *be(unsigned char *p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--)
    *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static uint64_t f64_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, 8);
  return u;
}

/* A 5-byte header, then n records of {image: uint8 2x3, label: int32,
 * weight: float64}: record r has pixels 10r + e, label -r, weight r / 4. */
static size_t layout_file(unsigned char *b, int n) {
  unsigned char *p = b;

  memcpy(p, "HEAD!", 5);
  p += 5;
  for (int r = 0; r < n; r++) {
    for (int e = 0; e < 6; e++)
      *p++ = (unsigned char)(10 * r + e);
    p = le(p, (uint32_t)-r, 4);
    p = le(p, f64_bits(r / 4.0), 8);
  }
  return (size_t)(p - b);
}

#define LAYOUT_OPTS                                                            \
  RH_OPTS(RH_STRS("fields", "image:uint8:2x3", "label:int32",                  \
                  "weight:float64"),                                           \
          RH_INT("header_bytes", 5))

static void expect_layout_record(const fixture *f, void *rd, int r) {
  wf_tensor *rec[3];
  const uint8_t *px;

  rh_next(f->fx, rd, rec);
  rh_expect_tensor(rec[0], WF_UINT8, 2, (const int64_t[]){2, 3});
  rh_expect_tensor(rec[1], WF_INT32, 0, NULL);
  rh_expect_tensor(rec[2], WF_FLOAT64, 0, NULL);
  px = wf_tensor_data(rec[0]);
  for (int e = 0; e < 6; e++)
    assert_int_equal(px[e], 10 * r + e);
  assert_int_equal(*(const int32_t *)wf_tensor_data(rec[1]), -r);
  assert_true(*(const double *)wf_tensor_data(rec[2]) == r / 4.0);
  rh_release_all(rec, 3);
}

static void test_fixed_is_registered_by_its_plugin(void **state) {
  fixture *f = *state;
  const char *plugin = NULL;
  const wf_reader_def *d = rh_reader(f->rt, "fixed", &plugin);

  assert_string_equal(plugin, "reader-fixed");
  assert_non_null(strstr(d->doc, "header_bytes"));
  assert_non_null(d->count);
}

static void test_fixed_reads_records_laid_out_by_options(void **state) {
  fixture *f = *state;
  unsigned char b[5 + 4 * 18];
  size_t n = layout_file(b, 4);
  const char *p = rh_path(f->dir, "recs.bin", 0);
  void *rd;

  rh_write(p, b, n);
  rd = rh_open(f->fx, p, LAYOUT_OPTS, 2);
  assert_int_equal(f->fx->num_fields(rd), 3);
  rh_expect_field(f->fx, rd, 0, "image", WF_UINT8, 2, (const int64_t[]){2, 3});
  rh_expect_field(f->fx, rd, 1, "label", WF_INT32, 0, NULL);
  rh_expect_field(f->fx, rd, 2, "weight", WF_FLOAT64, 0, NULL);
  assert_int_equal(f->fx->count(rd, NULL), 4);
  for (int r = 0; r < 4; r++)
    expect_layout_record(f, rd, r);
  rh_end(f->fx, rd);
  rh_end(f->fx, rd);
  f->fx->close(rd);

  /* The same layout as one string, header_bytes as a string. */
  rd = rh_open(f->fx, p,
               RH_OPTS(RH_STR("fields",
                              "image:uint8:2x3,label:int32,weight:float64"),
                       RH_STR("header_bytes", "5")),
               2);
  expect_layout_record(f, rd, 0);
  f->fx->close(rd);

  /* An empty file holds no records. */
  rh_write(p, "", 0);
  rd = rh_open(f->fx, p, RH_OPTS(RH_STR("fields", "x:uint8")), 1);
  assert_int_equal(f->fx->count(rd, NULL), 0);
  rh_end(f->fx, rd);
  f->fx->close(rd);
}

static void test_fixed_converts_big_endian_and_pads(void **state) {
  fixture *f = *state;
  unsigned char b[2 * 32], *q = b;
  const char *p = rh_path(f->dir, "big.bin", 0);
  wf_tensor *rec[5];
  void *rd;

  /* {a: int32, v: float32 (2,), h: float16, l: int64} + 6 bytes padding */
  for (int r = 0; r < 2; r++) {
    q = be(q, (uint32_t)(-1000 * (r + 1)), 4);
    q = be(q, f32_bits(1.5f + (float)r), 4);
    q = be(q, f32_bits(-2.0f), 4);
    q = be(q, 0x3c00, 2); /* 1.0 in float16 */
    q = be(q, (uint64_t)INT64_MIN + (uint64_t)r, 8);
    memset(q, 0xee, 10);
    q += 10;
  }
  rh_write(p, b, sizeof b);
  rd = rh_open(f->fx, p,
               RH_OPTS(RH_STRS("fields", "a:int32", "v:float32:2", "h:float16",
                               "l:int64"),
                       RH_STR("byte_order", "big"), RH_INT("record_bytes", 32)),
               3);
  assert_int_equal(f->fx->count(rd, NULL), 2);
  for (int r = 0; r < 2; r++) {
    rh_next(f->fx, rd, rec);
    assert_int_equal(*(const int32_t *)wf_tensor_data(rec[0]), -1000 * (r + 1));
    assert_true(((const float *)wf_tensor_data(rec[1]))[0] == 1.5f + (float)r);
    assert_true(((const float *)wf_tensor_data(rec[1]))[1] == -2.0f);
    assert_int_equal(*(const uint16_t *)wf_tensor_data(rec[2]), 0x3c00);
    assert_true(*(const int64_t *)wf_tensor_data(rec[3]) == INT64_MIN + r);
    rh_release_all(rec, 4);
  }
  rh_end(f->fx, rd);
  f->fx->close(rd);

  rh_open_fails(f->fx, p,
                RH_OPTS(RH_STR("fields", "a:int64,b:int64,c:int64,d:int64,"
                                         "e:int64"),
                        RH_INT("record_bytes", 32)),
                2, WF_INVALID_ARGUMENT, "record_bytes 32",
                "smaller than the fields' 40 bytes", NULL);
}

static void test_fixed_seek_and_tell_round_trip(void **state) {
  fixture *f = *state;
  unsigned char b[5 + 6 * 18];
  size_t n = layout_file(b, 6);
  const char *p = rh_path(f->dir, "seek.bin", 0);
  wf_status *st = wf_status_new();
  void *rd;

  rh_write(p, b, n);
  rd = rh_open(f->fx, p, LAYOUT_OPTS, 2);
  assert_int_equal(f->fx->tell(rd), 0);
  expect_layout_record(f, rd, 0);
  expect_layout_record(f, rd, 1);
  assert_int_equal(f->fx->tell(rd), 2);
  rh_seek(f->fx, rd, 5);
  expect_layout_record(f, rd, 5);
  rh_end(f->fx, rd);
  assert_int_equal(f->fx->tell(rd), 6);
  rh_seek(f->fx, rd, 1);
  assert_int_equal(f->fx->tell(rd), 1);
  expect_layout_record(f, rd, 1);
  rh_seek(f->fx, rd, 6);
  rh_end(f->fx, rd);
  assert_int_not_equal(f->fx->seek(rd, 7, st), 0);
  assert_int_equal(wf_status_code(st), WF_OUT_OF_RANGE);
  rh_expect_message(st, "seek.bin", "record 7", "6 records", NULL);
  f->fx->close(rd);
  wf_status_free(st);
}

static void test_fixed_wrong_size_is_refused_or_reported(void **state) {
  fixture *f = *state;
  unsigned char b[5 + 3 * 18];
  size_t n = layout_file(b, 3);
  const char *p = rh_path(f->dir, "cut.bin", 0);
  const wf_attr_item opts[] = {
      RH_STRS("fields", "image:uint8:2x3", "label:int32", "weight:float64"),
      RH_INT("header_bytes", 5), RH_STR("partial", "report")};
  void *rd;

  /* Three records and 7 bytes of a fourth. */
  rh_write(p, b, n - 11);
  rh_open_fails(f->fx, p, LAYOUT_OPTS, 2, WF_INVALID_ARGUMENT, "cut.bin",
                "size 48", "header of 5", "records of 18", "7 bytes",
                "offset 41", NULL);
  rd = rh_open(f->fx, p, opts, 3);
  assert_int_equal(f->fx->count(rd, NULL), 2);
  expect_layout_record(f, rd, 0);
  expect_layout_record(f, rd, 1);
  rh_next_fails(f->fx, rd, WF_DATA_LOSS, "cut.bin",
                "partial record of 7 bytes (of 18)", "offset 41", NULL);
  rh_end(f->fx, rd);
  /* A seek starts over, so the partial record is reported again. */
  rh_seek(f->fx, rd, 2);
  rh_next_fails(f->fx, rd, WF_DATA_LOSS, "offset 41", NULL);
  rh_end(f->fx, rd);
  f->fx->close(rd);

  /* Shorter than its header. */
  rh_write(p, b, 3);
  rh_open_fails(f->fx, p, LAYOUT_OPTS, 2, WF_INVALID_ARGUMENT, "cut.bin",
                "3 bytes, fewer than its header of 5", NULL);
  rh_open_fails(f->fx, rh_path(f->dir, "absent.bin", 0), LAYOUT_OPTS, 2,
                WF_NOT_FOUND, "absent.bin", NULL);
  rh_open_fails(f->fx, f->dir, LAYOUT_OPTS, 2, WF_FAILED_PRECONDITION,
                "not a regular file", NULL);
}

static void test_fixed_refuses_bad_options(void **state) {
  fixture *f = *state;
  const char *p = rh_path(f->dir, "o.bin", 0);
  char longname[100];

  rh_write(p, "12345678", 8);
  rh_open_fails(f->fx, p, NULL, 0, WF_INVALID_ARGUMENT, "o.bin",
                "needs option 'fields'", NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("field", "a:uint8")), 1,
                WF_INVALID_ARGUMENT, "unknown option 'field'", "fields",
                NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("fields", "a:uint16")), 1,
                WF_INVALID_ARGUMENT, "unknown dtype \"uint16\"", NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("fields", "a")), 1,
                WF_INVALID_ARGUMENT, "\"a\" is not name:dtype", NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("fields", "a:uint8:2x0")), 1,
                WF_INVALID_ARGUMENT, "\"a:uint8:2x0\"", "at least 1", NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("fields", "a:uint8:2x")), 1,
                WF_INVALID_ARGUMENT, "\"a:uint8:2x\"", NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("fields", "a:uint8:-2")), 1,
                WF_INVALID_ARGUMENT, "\"a:uint8:-2\"", NULL);
  rh_open_fails(f->fx, p,
                RH_OPTS(RH_STR("fields", "a:uint8:1x1x1x1x1x1x1x1x1")), 1,
                WF_INVALID_ARGUMENT, "up to 8 dimensions", NULL);
  rh_open_fails(f->fx, p,
                RH_OPTS(RH_STR("fields",
                               "a:float64:4294967296x4294967296x4294967296")),
                1, WF_INVALID_ARGUMENT, "is not name:dtype", NULL);
  memset(longname, 'n', 64);
  strcpy(longname + 64, ":uint8");
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("fields", longname)), 1,
                WF_INVALID_ARGUMENT, "a name of 1 to 63 bytes", NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_STR("fields", "a:uint8,a:int8")), 1,
                WF_INVALID_ARGUMENT, "two fields are named 'a'", NULL);
  rh_open_fails(f->fx, p,
                RH_OPTS(RH_STR("fields", "a:uint8"), RH_INT("header_bytes", -1)),
                2, WF_INVALID_ARGUMENT, "'header_bytes'", "non-negative",
                NULL);
  rh_open_fails(f->fx, p,
                RH_OPTS(RH_STR("fields", "a:uint8"),
                        RH_STR("header_bytes", "5x")),
                2, WF_INVALID_ARGUMENT, "'header_bytes'", NULL);
  rh_open_fails(f->fx, p,
                RH_OPTS(RH_STR("fields", "a:uint8"),
                        RH_STR("byte_order", "middle")),
                2, WF_INVALID_ARGUMENT, "'byte_order'", NULL);
  rh_open_fails(f->fx, p,
                RH_OPTS(RH_STR("fields", "a:uint8"), RH_STR("partial", "skip")),
                2, WF_INVALID_ARGUMENT, "'partial'", NULL);
  rh_open_fails(f->fx, p, RH_OPTS(RH_INT("fields", 3)), 1,
                WF_INVALID_ARGUMENT, "'fields'", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_is_registered_by_its_plugin),
      cmocka_unit_test(test_fixed_reads_records_laid_out_by_options),
      cmocka_unit_test(test_fixed_converts_big_endian_and_pads),
      cmocka_unit_test(test_fixed_seek_and_tell_round_trip),
      cmocka_unit_test(test_fixed_wrong_size_is_refused_or_reported),
      cmocka_unit_test(test_fixed_refuses_bad_options),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
