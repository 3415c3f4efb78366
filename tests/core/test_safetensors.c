/* tests/core/test_safetensors.c — the checkpoint file format
 * (core/io/safetensors.c) through weft/checkpoint.h's file API: every dtype
 * and rank 0..4 round-trips, empty tensors, the bytes on disk, each
 * refusal of the parser naming file and tensor, checksums that catch a
 * flipped byte, files of other writers, and writes that fail without
 * touching the previous file. */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "checkpoint_harness.h"
#include "io/crc32c.h"
#include "io/safetensors.h"

static wf_status *st;

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  return st && ch_setup_dir() == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  ch_remove_dir();
  wf_status_free(st);
  return 0;
}

#define CHECK(x)                                                               \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

/* Opens path expecting the header to be refused with code, the message
 * naming the file and each of the NULL-terminated parts. */
static void expect_refused(const char *path, wf_code code, ...) {
  va_list ap;
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  if (c)
    fail_msg("%s was accepted", path);
  assert_int_equal(wf_status_code(st), code);
  ch_expect_message(st, path, NULL);
  va_start(ap, code);
  for (const char *p = va_arg(ap, const char *); p;
       p = va_arg(ap, const char *))
    ch_expect_message(st, p, NULL);
  va_end(ap);
  /* verify refuses it the same way. */
  assert_int_equal(wf_checkpoint_verify(path, st), code);
}

/* ---- round trips --------------------------------------------------------- */

static void test_crc32c_matches_the_check_value(void **state) {
  (void)state;
  assert_int_equal(wf__crc32c(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(wf__crc32c_portable(0, "123456789", 9), 0xE3069283u);
}

static void test_every_dtype_and_rank_round_trips(void **state) {
  static const wf_dtype dts[] = {WF_FLOAT32,  WF_FLOAT64, WF_FLOAT16,
                                 WF_BFLOAT16, WF_INT8,    WF_UINT8,
                                 WF_INT32,    WF_INT64,   WF_BOOL};
  const int64_t dims[4] = {3, 2, 4, 5};
  enum { NDT = sizeof dts / sizeof *dts };
  wf_tensor *t[NDT * 5];
  const char *names[NDT * 5];
  char namebuf[NDT * 5][32];
  const char *path = ch_path("all.safetensors");
  int n = 0;
  (void)state;

  for (int d = 0; d < NDT; d++)
    for (int rank = 0; rank <= 4; rank++) {
      wf_tensor *x = wf_tensor_new(dts[d], dims, rank, st);
      unsigned char *p = wf_tensor_data(x);
      assert_non_null(x);
      for (size_t k = 0; k < wf_tensor_nbytes(x); k++)
        p[k] = dts[d] == WF_BOOL ? (unsigned char)(k % 3 == 0)
                                 : (unsigned char)(k * 37 + d);
      snprintf(namebuf[n], sizeof namebuf[n], "%s/rank%d",
               wf_dtype_name(dts[d]), rank);
      names[n] = namebuf[n];
      t[n++] = x;
    }
  CHECK(wf_checkpoint_write(path, names, t, n, NULL, NULL, 0, st));
  CHECK(wf_checkpoint_verify(path, st));

  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  assert_int_equal(wf_checkpoint_num_tensors(c), n);
  for (int i = 0; i < n; i++) {
    int k = wf_checkpoint_find(c, names[i]);
    wf_shape want, got;
    assert_true(k >= 0);
    assert_int_equal(wf_checkpoint_tensor_dtype(c, k), wf_tensor_dtype(t[i]));
    wf_tensor_shape(t[i], &want);
    wf_checkpoint_tensor_shape(c, k, &got);
    assert_true(wf_shape_equal(&want, &got));
    wf_tensor *back = wf_checkpoint_read(c, k, st);
    CHECK(!back);
    assert_int_equal(wf_tensor_nbytes(back), wf_tensor_nbytes(t[i]));
    assert_memory_equal(wf_tensor_data(back), wf_tensor_data(t[i]),
                        wf_tensor_nbytes(t[i]));
    wf_tensor_release(back);
  }
  /* Sorted by name. */
  for (int i = 1; i < n; i++)
    assert_true(strcmp(wf_checkpoint_tensor_name(c, i - 1),
                       wf_checkpoint_tensor_name(c, i)) < 0);
  wf_checkpoint_close(c);
  for (int i = 0; i < n; i++)
    wf_tensor_release(t[i]);
}

static void test_empty_tensors_and_empty_files_round_trip(void **state) {
  const int64_t d0[] = {0}, d1[] = {2, 0, 3};
  wf_tensor *t[3] = {wf_tensor_new(WF_FLOAT32, d0, 1, st),
                     wf_tensor_new(WF_INT64, d1, 3, st),
                     wf_tensor_new(WF_FLOAT64, NULL, 0, st)};
  const char *names[3] = {"empty", "empty3", "scalar"};
  const char *path = ch_path("empty.safetensors");
  (void)state;

  *(double *)wf_tensor_data(t[2]) = 2.5;
  CHECK(wf_checkpoint_write(path, names, t, 3, NULL, NULL, 0, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  for (int i = 0; i < 3; i++) {
    wf_tensor *back =
        wf_checkpoint_read(c, wf_checkpoint_find(c, names[i]), st);
    CHECK(!back);
    assert_int_equal(wf_tensor_count(back), wf_tensor_count(t[i]));
    assert_int_equal(wf_tensor_rank(back), wf_tensor_rank(t[i]));
    if (i == 2)
      assert_true(*(double *)wf_tensor_data(back) == 2.5);
    wf_tensor_release(back);
    wf_tensor_release(t[i]);
  }
  wf_checkpoint_close(c);

  /* No tensors at all. */
  path = ch_path("none.safetensors");
  CHECK(wf_checkpoint_write(path, NULL, NULL, 0, NULL, NULL, 0, st));
  CHECK(wf_checkpoint_verify(path, st));
  c = wf_checkpoint_open(path, st);
  CHECK(!c);
  assert_int_equal(wf_checkpoint_num_tensors(c), 0);
  wf_checkpoint_close(c);
}

static void test_metadata_round_trips_with_format_and_checksums(void **state) {
  const int64_t d[] = {2};
  wf_tensor *t = ch_filled(d, 1, 1.5f);
  const char *name = "w";
  const char *keys[] = {"note", "author"}, *values[] = {"a b\"c", "ünï"};
  const char *path = ch_path("meta.safetensors");
  (void)state;

  CHECK(wf_checkpoint_write(path, &name, &t, 1, keys, values, 2, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  assert_string_equal(wf_checkpoint_metadata(c, "note"), "a b\"c");
  assert_string_equal(wf_checkpoint_metadata(c, "author"), "ünï");
  assert_string_equal(wf_checkpoint_metadata(c, "weft.format"), "1");
  /* CRC-32C of the two little-endian floats, as 8 hex digits. */
  char want[16];
  snprintf(want, sizeof want, "%08x",
           (unsigned)wf__crc32c(0, wf_tensor_data(t), 8));
  assert_string_equal(wf_checkpoint_metadata(c, "weft.crc32c/w"), want);
  assert_null(wf_checkpoint_metadata(c, "missing"));
  assert_int_equal(wf_checkpoint_num_metadata(c), 4);
  for (int i = 1; i < wf_checkpoint_num_metadata(c); i++)
    assert_true(strcmp(wf_checkpoint_metadata_key(c, i - 1),
                       wf_checkpoint_metadata_key(c, i)) < 0);
  assert_string_equal(wf_checkpoint_metadata_key(c, 0), "author");
  assert_string_equal(wf_checkpoint_metadata_value(c, 0), "ünï");
  wf_checkpoint_close(c);
  wf_tensor_release(t);
}

static void test_written_bytes_follow_the_format(void **state) {
  const int64_t d[] = {2};
  wf_tensor *t[2] = {wf_tensor_new(WF_INT32, d, 1, st),
                     wf_tensor_new(WF_INT8, NULL, 0, st)};
  const char *names[2] = {"b", "a"};
  const char *path = ch_path("bytes.safetensors");
  unsigned char buf[512];
  FILE *f;
  size_t n;
  uint64_t hlen = 0;
  (void)state;

  ((int32_t *)wf_tensor_data(t[0]))[0] = 0x01020304;
  ((int32_t *)wf_tensor_data(t[0]))[1] = -2;
  *(int8_t *)wf_tensor_data(t[1]) = -7;
  CHECK(wf_checkpoint_write(path, names, t, 2, NULL, NULL, 0, st));
  f = fopen(path, "rb");
  assert_non_null(f);
  n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | buf[i];
  /* The data starts 8-byte aligned after a space-padded header. */
  assert_int_equal((8 + hlen) % 8, 0);
  assert_int_equal(n, 8 + hlen + 9);
  assert_true(buf[8] == '{');
  const char *b_entry = "\"b\":{\"shape\":[2],\"dtype\":\"I32\","
                        "\"data_offsets\":[0,8]}";
  const char *a_entry = "\"a\":{\"shape\":[],\"dtype\":\"I8\","
                        "\"data_offsets\":[8,9]}";
  assert_non_null(memmem(buf + 8, hlen, b_entry, strlen(b_entry)));
  assert_non_null(memmem(buf + 8, hlen, a_entry, strlen(a_entry)));
  /* Tensors in the order given, little-endian. */
  const unsigned char want[9] = {4, 3, 2, 1, 0xfe, 0xff, 0xff, 0xff, 0xf9};
  assert_memory_equal(buf + 8 + hlen, want, 9);
  wf_tensor_release(t[0]);
  wf_tensor_release(t[1]);
}

static void test_files_of_other_writers_read_without_checksums(void **state) {
  const char *path = ch_path("foreign.safetensors");
  const float v[3] = {1, -2, 3.5f};
  (void)state;

  unsigned char data[14];
  memcpy(data, v, 12);
  data[12] = 0;
  data[13] = 7; /* any non-zero byte is true */
  ch_write_file(path,
                "{\"__metadata__\":{\"format\":\"pt\"},"
                "\"x\":{\"dtype\":\"F32\",\"shape\":[3],"
                "\"data_offsets\":[0,12]},"
                "\"flag\":{\"dtype\":\"BOOL\",\"shape\":[2],"
                "\"data_offsets\":[12,14]}}",
                data, 14);
  CHECK(wf_checkpoint_verify(path, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  wf_tensor *x = wf_checkpoint_read(c, wf_checkpoint_find(c, "x"), st);
  wf_tensor *b = wf_checkpoint_read(c, wf_checkpoint_find(c, "flag"), st);
  CHECK(!x || !b);
  assert_memory_equal(wf_tensor_data(x), v, 12);
  assert_int_equal(((unsigned char *)wf_tensor_data(b))[0], 0);
  assert_int_equal(((unsigned char *)wf_tensor_data(b))[1], 1);
  assert_string_equal(wf_checkpoint_metadata(c, "format"), "pt");
  wf_tensor_release(x);
  wf_tensor_release(b);
  wf_checkpoint_close(c);
}

/* ---- refusals ------------------------------------------------------------ */

static void test_truncated_and_oversized_headers_are_refused(void **state) {
  const char *path = ch_path("short.safetensors");
  unsigned char len[8] = {40, 0, 0, 0, 0, 0, 0, 0};
  (void)state;

  ch_write_bytes(path, "\x10\0\0", 3);
  expect_refused(path, WF_DATA_LOSS, "truncated", "3 bytes", NULL);
  ch_write_bytes(path, "", 0);
  expect_refused(path, WF_DATA_LOSS, "truncated", NULL);

  /* A length past the end of the file. */
  path = ch_path("past.safetensors");
  ch_write_bytes(path, len, 8);
  expect_refused(path, WF_DATA_LOSS, "header length 40", "past the end", NULL);

  /* A length above the 100 MiB limit, in a (sparse) file that holds it. */
  path = ch_path("huge.safetensors");
  uint64_t big = WF__ST_HEADER_MAX + 8;
  for (int i = 0; i < 8; i++)
    len[i] = (unsigned char)(big >> (8 * i));
  ch_write_bytes(path, len, 8);
  assert_int_equal(truncate(path, (off_t)(big + 8)), 0);
  expect_refused(path, WF_DATA_LOSS, "above the limit", NULL);
  unlink(path);

  /* Not a file at all. */
  assert_null(wf_checkpoint_open(ch_dir, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(wf_checkpoint_open(ch_path("absent.safetensors"), st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  ch_expect_message(st, "absent.safetensors", NULL);
}

static void test_bad_json_headers_are_refused(void **state) {
  const char *path = ch_path("json.safetensors");
  (void)state;

  ch_write_file(path, "{\"a\": {\"dtype\": \"F32\",", NULL, 0);
  expect_refused(path, WF_DATA_LOSS, "not valid JSON", NULL);
  ch_write_file(path, "[1, 2]", NULL, 0);
  expect_refused(path, WF_DATA_LOSS, "not a JSON object", NULL);
  ch_write_file(
      path,
      "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
      NULL, 2);
  expect_refused(path, WF_DATA_LOSS, "not valid JSON", "duplicate", NULL);
  ch_write_file(path, "{\"a\": 3}", NULL, 0);
  expect_refused(path, WF_DATA_LOSS, "tensor 'a'", "not an object", NULL);
  ch_write_file(
      path, "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
      NULL, 1);
  expect_refused(path, WF_DATA_LOSS, "empty name", NULL);
}

/* One tensor "t" described by the JSON object body (inside {}), with ndata
 * bytes of data, must be refused with code and the parts. */
#define EXPECT_TENSOR_REFUSED(body, ndata, code, ...)                          \
  do {                                                                         \
    const char *path_ = ch_path("tensor.safetensors");                         \
    ch_write_file(path_, "{\"t\":{" body "}}", NULL, ndata);                   \
    expect_refused(path_, code, "tensor 't'", __VA_ARGS__, NULL);              \
  } while (0)

static void test_bad_tensor_entries_are_refused(void **state) {
  (void)state;
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F31\",\"shape\":[1],"
                        "\"data_offsets\":[0,4]",
                        4, WF_DATA_LOSS, "unknown dtype 'F31'");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"U16\",\"shape\":[1],"
                        "\"data_offsets\":[0,2]",
                        2, WF_UNIMPLEMENTED, "U16");
  EXPECT_TENSOR_REFUSED("\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]", 4,
                        WF_DATA_LOSS, "dtype is an integer");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":[2,-1],"
                        "\"data_offsets\":[0,0]",
                        0, WF_DATA_LOSS, "shape[1] is negative");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":[2,1.5],"
                        "\"data_offsets\":[0,0]",
                        0, WF_DATA_LOSS, "shape[1] is a real number");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":3,"
                        "\"data_offsets\":[0,12]",
                        12, WF_DATA_LOSS, "shape is an integer");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],"
                        "\"data_offsets\":[0,0]",
                        0, WF_DATA_LOSS, "overflows");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F64\",\"shape\":[2305843009213693952],"
                        "\"data_offsets\":[0,0]",
                        0, WF_DATA_LOSS, "byte size overflows");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                        "\"data_offsets\":[0,1]",
                        1, WF_UNIMPLEMENTED, "rank 9");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":[2],"
                        "\"data_offsets\":[0,8]",
                        4, WF_DATA_LOSS, "run past the end of the data");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":[2],"
                        "\"data_offsets\":[0,4]",
                        4, WF_DATA_LOSS, "hold 4 bytes", "F32 (2)", "has 8");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":[1],"
                        "\"data_offsets\":[4,0]",
                        4, WF_DATA_LOSS, "is not a range");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":[1],"
                        "\"data_offsets\":[0]",
                        4, WF_DATA_LOSS, "data_offsets is not an array");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"data_offsets\":[0,4]", 4,
                        WF_DATA_LOSS, "no 'shape'");
  EXPECT_TENSOR_REFUSED("\"dtype\":\"F32\",\"shape\":[1],"
                        "\"data_offsets\":[0,4],\"extra\":1",
                        4, WF_DATA_LOSS, "unexpected field 'extra'");
}

static void test_overlaps_gaps_and_trailing_bytes_are_refused(void **state) {
  const char *path = ch_path("layout.safetensors");
  (void)state;

  ch_write_file(
      path,
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
      NULL, 12);
  expect_refused(path, WF_DATA_LOSS, "'b'", "overlaps", "'a'", NULL);
  /* An empty tensor inside another's bytes overlaps it too. */
  ch_write_file(
      path,
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
      NULL, 8);
  expect_refused(path, WF_DATA_LOSS, "'e'", "overlaps", NULL);
  ch_write_file(
      path,
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
      NULL, 12);
  expect_refused(path, WF_DATA_LOSS, "'b'", "starts at data offset 8",
                 "end at 4", NULL);
  ch_write_file(
      path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
      NULL, 6);
  expect_refused(path, WF_DATA_LOSS, "2 bytes follow the last tensor", NULL);
}

static void test_bad_metadata_is_refused(void **state) {
  const char *path = ch_path("meta.safetensors");
  (void)state;

#define ONE_TENSOR                                                             \
  "\"t\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}"
  ch_write_file(path, "{\"__metadata__\":{\"n\":3}," ONE_TENSOR "}", NULL, 2);
  expect_refused(path, WF_DATA_LOSS, "metadata 'n' is an integer", NULL);
  ch_write_file(path, "{\"__metadata__\":[]," ONE_TENSOR "}", NULL, 2);
  expect_refused(path, WF_DATA_LOSS, "__metadata__ is an array", NULL);
  ch_write_file(path,
                "{\"__metadata__\":{\"weft.format\":\"1\"}," ONE_TENSOR "}",
                NULL, 2);
  expect_refused(path, WF_DATA_LOSS, "tensor 't' has no checksum", NULL);
  ch_write_file(path,
                "{\"__metadata__\":{\"weft.format\":\"2\"}," ONE_TENSOR "}",
                NULL, 2);
  expect_refused(path, WF_UNIMPLEMENTED, "weft.format is '2'", NULL);
  ch_write_file(
      path, "{\"__metadata__\":{\"weft.crc32c/t\":\"12345\"}," ONE_TENSOR "}",
      NULL, 2);
  expect_refused(path, WF_DATA_LOSS, "tensor 't'", "'12345' is not 8 hex",
                 NULL);
  ch_write_file(path,
                "{\"__metadata__\":{\"weft.crc32c/u\":\"00000000\"}," ONE_TENSOR
                "}",
                NULL, 2);
  expect_refused(path, WF_DATA_LOSS, "'weft.crc32c/u'",
                 "tensor the file does not have", NULL);
#undef ONE_TENSOR
}

static void
test_flipped_data_byte_fails_the_checksum_naming_the_tensor(void **state) {
  const int64_t d[] = {64};
  wf_tensor *t[3] = {ch_filled(d, 1, 1), ch_filled(d, 1, 2),
                     ch_filled(d, 1, 3)};
  const char *names[3] = {"alpha", "beta", "gamma"};
  const char *path = ch_path("flip.safetensors");
  (void)state;

  CHECK(wf_checkpoint_write(path, names, t, 3, NULL, NULL, 0, st));
  ch_flip_byte(path, ch_data_offset(path, "beta") + 17);
  /* The header still parses; only beta's data is wrong. */
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  wf_tensor *ok = wf_checkpoint_read(c, wf_checkpoint_find(c, "alpha"), st);
  CHECK(!ok);
  wf_tensor_release(ok);
  assert_null(wf_checkpoint_read(c, wf_checkpoint_find(c, "beta"), st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  ch_expect_message(st, path, "tensor 'beta'", "checksum mismatch", NULL);
  wf_checkpoint_close(c);
  assert_int_equal(wf_checkpoint_verify(path, st), WF_DATA_LOSS);
  ch_expect_message(st, path, "tensor 'beta'", NULL);

  /* Every corrupt tensor is listed. */
  ch_flip_byte(path, ch_data_offset(path, "gamma"));
  assert_int_equal(wf_checkpoint_verify(path, st), WF_DATA_LOSS);
  ch_expect_message(st, "2 problems", "tensor 'beta'", "tensor 'gamma'", NULL);
  assert_null(strstr(wf_status_message(st), "alpha"));

  /* A flipped checksum digit in the header is caught the same way. */
  CHECK(wf_checkpoint_write(path, names, t, 3, NULL, NULL, 0, st));
  c = wf_checkpoint_open(path, st);
  CHECK(!c);
  char crc[16], patched[16];
  snprintf(crc, sizeof crc, "%s",
           wf_checkpoint_metadata(c, "weft.crc32c/alpha"));
  snprintf(patched, sizeof patched, "%s", crc);
  wf_checkpoint_close(c);
  patched[0] = patched[0] == '0' ? '1' : '0';
  /* Rewrite the header text in place (same length). */
  FILE *f = fopen(path, "r+b");
  char head[1024] = {0};
  assert_non_null(f);
  assert_true(fread(head, 1, sizeof head - 1, f) > 8);
  char *at = strstr(head + 8, crc);
  assert_non_null(at);
  memcpy(at, patched, 8);
  rewind(f);
  assert_true(fwrite(head, 1, (size_t)(at - head) + 8, f) > 0);
  fclose(f);
  assert_int_equal(wf_checkpoint_verify(path, st), WF_DATA_LOSS);
  ch_expect_message(st, "tensor 'alpha'", "checksum mismatch", NULL);
  for (int i = 0; i < 3; i++)
    wf_tensor_release(t[i]);
}

/* ---- writing ------------------------------------------------------------- */

static void test_write_refuses_bad_names_and_keys(void **state) {
  const int64_t d[] = {1};
  wf_tensor *t[2] = {ch_filled(d, 1, 1), ch_filled(d, 1, 2)};
  wf_tensor *res = wf_tensor_new(WF_RESOURCE, NULL, 0, st);
  const char *path = ch_path("names.safetensors");
  const char *dup[2] = {"x", "x"}, *empty[1] = {""},
             *meta[1] = {"__metadata__"};
  const char *bad_utf8[1] = {"\xff\xfe"};
  const char *own_key[1] = {"weft.crc32c/x"}, *val[1] = {"0"};
  const char *x[1] = {"x"};
  (void)state;

  assert_int_equal(wf_checkpoint_write(path, dup, t, 2, NULL, NULL, 0, st),
                   WF_INVALID_ARGUMENT);
  ch_expect_message(st, path, "two tensors are called 'x'", NULL);
  assert_int_equal(wf_checkpoint_write(path, empty, t, 1, NULL, NULL, 0, st),
                   WF_INVALID_ARGUMENT);
  ch_expect_message(st, "empty name", NULL);
  assert_int_equal(wf_checkpoint_write(path, meta, t, 1, NULL, NULL, 0, st),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wf_checkpoint_write(path, bad_utf8, t, 1, NULL, NULL, 0, st),
                   WF_INVALID_ARGUMENT);
  ch_expect_message(st, "UTF-8", NULL);
  assert_int_equal(wf_checkpoint_write(path, x, &res, 1, NULL, NULL, 0, st),
                   WF_INVALID_ARGUMENT);
  ch_expect_message(st, "resource", NULL);
  assert_int_equal(wf_checkpoint_write(path, x, t, 1, own_key, val, 1, st),
                   WF_INVALID_ARGUMENT);
  ch_expect_message(st, "weft.crc32c/x", "weft's own", NULL);
  /* Nothing was written, not even a temporary file. */
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(ch_count_hidden(ch_dir), 0);
  wf_tensor_release(res);
  wf_tensor_release(t[0]);
  wf_tensor_release(t[1]);
}

static void
test_write_into_missing_directory_fails_leaving_nothing(void **state) {
  const int64_t d[] = {4};
  wf_tensor *t = ch_filled(d, 1, 1);
  const char *name = "w";
  const char *path = ch_path("no/such/dir/x.safetensors");
  (void)state;

  assert_int_equal(wf_checkpoint_write(path, &name, &t, 1, NULL, NULL, 0, st),
                   WF_NOT_FOUND);
  ch_expect_message(st, path, NULL);
  assert_int_equal(access(ch_path("no"), F_OK), -1);
  assert_int_equal(ch_count_hidden(ch_dir), 0);
  wf_tensor_release(t);
}

/* Writes t to path as "w", expecting PERMISSION_DENIED naming path; as
 * root (who writes anywhere) from a child that became nobody. */
static void expect_write_denied(const char *path, wf_tensor *t) {
  const char *name = "w";
  int status;
  pid_t pid;

  if (geteuid() != 0) {
    assert_int_equal(wf_checkpoint_write(path, &name, &t, 1, NULL, NULL, 0, st),
                     WF_PERMISSION_DENIED);
    ch_expect_message(st, path, NULL);
    return;
  }
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    wf_status *cst = wf_status_new();
    if (setgid(65534) != 0 || setuid(65534) != 0)
      _exit(3);
    int rc = wf_checkpoint_write(path, &name, &t, 1, NULL, NULL, 0, cst);
    _exit(rc == WF_PERMISSION_DENIED && strstr(wf_status_message(cst), path)
              ? 0
              : 1);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void
test_write_into_read_only_directory_keeps_the_old_file(void **state) {
  const int64_t d[] = {4};
  wf_tensor *t = ch_filled(d, 1, 1), *t2 = ch_filled(d, 1, 2);
  const char *name = "w";
  const char *sub = ch_path("ro");
  char path[300];
  (void)state;

  assert_int_equal(mkdir(sub, 0755), 0);
  snprintf(path, sizeof path, "%s/x.safetensors", sub);
  CHECK(wf_checkpoint_write(path, &name, &t, 1, NULL, NULL, 0, st));
  assert_int_equal(chmod(ch_dir, 0755), 0);
  assert_int_equal(chmod(sub, 0555), 0);
  expect_write_denied(path, t2);
  assert_int_equal(chmod(sub, 0755), 0);
  assert_int_equal(chmod(ch_dir, 0700), 0);
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  wf_tensor *back = wf_checkpoint_read(c, 0, st);
  CHECK(!back);
  assert_true(((float *)wf_tensor_data(back))[0] == 1);
  wf_tensor_release(back);
  wf_checkpoint_close(c);
  assert_int_equal(ch_count_hidden(sub), 0);
  wf_tensor_release(t);
  wf_tensor_release(t2);
}

/* A write that runs out of room (here the file size limit, EFBIG, which
 * takes the path ENOSPC and EIO take) fails, keeps the previous file and
 * removes its temporary file. Done in a child, whose limit is its own. */
static void test_failed_write_keeps_the_previous_file(void **state) {
  const int64_t small[] = {4}, big[] = {1 << 16};
  wf_tensor *t = ch_filled(small, 1, 1);
  const char *name = "w";
  const char *path = ch_path("full.safetensors");
  long before;
  int status;
  pid_t pid;
  (void)state;

  CHECK(wf_checkpoint_write(path, &name, &t, 1, NULL, NULL, 0, st));
  before = ch_file_size(path);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rlimit lim = {32 << 10, 32 << 10};
    wf_status *cst = wf_status_new();
    wf_tensor *b = wf_tensor_new(WF_FLOAT32, big, 1, cst);
    signal(SIGXFSZ, SIG_IGN);
    if (!b || setrlimit(RLIMIT_FSIZE, &lim) != 0)
      _exit(3);
    memset(wf_tensor_data(b), 0, wf_tensor_nbytes(b));
    int rc = wf_checkpoint_write(path, &name, &b, 1, NULL, NULL, 0, cst);
    if (rc == WF_RESOURCE_EXHAUSTED && strstr(wf_status_message(cst), path))
      _exit(0);
    fprintf(stderr, "child: write returned %d: %s\n", rc,
            wf_status_message(cst));
    _exit(1);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(ch_file_size(path), before);
  CHECK(wf_checkpoint_verify(path, st));
  assert_int_equal(ch_count_hidden(ch_dir), 0);
  wf_tensor_release(t);
}

static void test_overwrite_replaces_the_file_whole(void **state) {
  const int64_t d[] = {8};
  wf_tensor *t = ch_filled(d, 1, 1), *t2 = ch_filled(d, 1, 9);
  const char *name = "w";
  const char *path = ch_path("over.safetensors");
  (void)state;

  CHECK(wf_checkpoint_write(path, &name, &t, 1, NULL, NULL, 0, st));
  CHECK(wf_checkpoint_write(path, &name, &t2, 1, NULL, NULL, 0, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  wf_tensor *back = wf_checkpoint_read(c, 0, st);
  CHECK(!back);
  assert_true(((float *)wf_tensor_data(back))[7] == 9);
  wf_tensor_release(back);
  wf_checkpoint_close(c);
  assert_int_equal(ch_count_hidden(ch_dir), 0);
  wf_tensor_release(t);
  wf_tensor_release(t2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_matches_the_check_value),
      cmocka_unit_test(test_every_dtype_and_rank_round_trips),
      cmocka_unit_test(test_empty_tensors_and_empty_files_round_trip),
      cmocka_unit_test(test_metadata_round_trips_with_format_and_checksums),
      cmocka_unit_test(test_written_bytes_follow_the_format),
      cmocka_unit_test(test_files_of_other_writers_read_without_checksums),
      cmocka_unit_test(test_truncated_and_oversized_headers_are_refused),
      cmocka_unit_test(test_bad_json_headers_are_refused),
      cmocka_unit_test(test_bad_tensor_entries_are_refused),
      cmocka_unit_test(test_overlaps_gaps_and_trailing_bytes_are_refused),
      cmocka_unit_test(test_bad_metadata_is_refused),
      cmocka_unit_test(
          test_flipped_data_byte_fails_the_checksum_naming_the_tensor),
      cmocka_unit_test(test_write_refuses_bad_names_and_keys),
      cmocka_unit_test(test_write_into_missing_directory_fails_leaving_nothing),
      cmocka_unit_test(test_write_into_read_only_directory_keeps_the_old_file),
      cmocka_unit_test(test_failed_write_keeps_the_previous_file),
      cmocka_unit_test(test_overwrite_replaces_the_file_whole),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
