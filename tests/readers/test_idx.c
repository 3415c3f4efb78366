/* tests/readers/test_idx.c — the idx reader plugin through the real loader:
 * every element type, raw and gzip files (by magic), image/label pairing,
 * tell/seek and count, each kind of broken file, and the real
 * Fashion-MNIST files when the dataset package is installed. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "reader_harness.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

typedef struct fixture {
  wf_runtime *rt;
  const wf_reader_def *idx;
  char *dir;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);

  f->rt = rh_runtime_new();
  f->idx = rh_reader(f->rt, "idx", NULL);
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

/* An idx file's bytes: magic with type code, dims (big-endian), then
 * `data` as given. A new buffer (free it); *n its size. */
static unsigned char *idx_bytes(int code, int rank, const uint32_t *dims,
                                const void *data, size_t data_n, size_t *n) {
  unsigned char *b = malloc(4 + 4 * (size_t)rank + data_n + 1);

  assert_non_null(b);
  b[0] = b[1] = 0;
  b[2] = (unsigned char)code;
  b[3] = (unsigned char)rank;
  for (int i = 0; i < rank; i++) {
    b[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
    b[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
    b[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
    b[7 + 4 * i] = (unsigned char)dims[i];
  }
  if (data_n)
    memcpy(b + 4 + 4 * rank, data, data_n);
  *n = 4 + 4 * (size_t)rank + data_n;
  return b;
}

/* Writes an idx file at dir/name, gzip-compressed when gz. */
static const char *write_idx(const fixture *f, const char *name, int gz,
                             int code, int rank, const uint32_t *dims,
                             const void *data, size_t data_n) {
  size_t n;
  unsigned char *b = idx_bytes(code, rank, dims, data, data_n, &n);
  const char *path = rh_path(f->dir, name, 0);

  if (gz)
    rh_write_gz(path, b, n);
  else
    rh_write(path, b, n);
  free(b);
  return path;
}

/* Deterministic bytes that do not compress much. */
static void fill_noise(unsigned char *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (unsigned char)(seed >> 24);
  }
}

/* Three 2x3 uint8 images (record r, element e holds 10 * r + e) and their
 * labels 7, 8, 9, as images.idx and labels.idx (gz: compressed). */
static void write_pair(const fixture *f, int gz) {
  unsigned char px[18], lb[3] = {7, 8, 9};

  for (int i = 0; i < 18; i++)
    px[i] = (unsigned char)(10 * (i / 6) + i % 6);
  write_idx(f, "images.idx", gz, 0x08, 3, (const uint32_t[]){3, 2, 3}, px,
            sizeof px);
  write_idx(f, "labels.idx", gz, 0x08, 1, (const uint32_t[]){3}, lb,
            sizeof lb);
}

static void test_idx_is_registered_by_its_plugin(void **state) {
  fixture *f = *state;
  const char *plugin = NULL;
  const wf_reader_def *d = rh_reader(f->rt, "idx", &plugin);

  assert_string_equal(plugin, "reader-idx");
  assert_non_null(strstr(d->formats, "ubyte.gz"));
  assert_non_null(strstr(d->doc, "label_file"));
  assert_non_null(d->count);
}

static void test_idx_reads_images_paired_with_labels(void **state) {
  fixture *f = *state;
  wf_status *st = wf_status_new();

  for (int gz = 0; gz < 2; gz++) {
    wf_tensor *rec[2];
    void *rd;

    write_pair(f, gz);
    rd = rh_open(f->idx, rh_path(f->dir, "images.idx", 1),
                 RH_OPTS(RH_STR("label_file", "labels.idx")),
                 RH_NOPTS(RH_STR("label_file", "labels.idx")));
    assert_int_equal(f->idx->num_fields(rd), 2);
    rh_expect_field(f->idx, rd, 0, "image", WF_UINT8, 2,
                    (const int64_t[]){2, 3});
    rh_expect_field(f->idx, rd, 1, "label", WF_UINT8, 0, NULL);
    assert_int_equal(f->idx->count(rd, st), 3);
    for (int r = 0; r < 3; r++) {
      const uint8_t *px;
      rh_next(f->idx, rd, rec);
      rh_expect_tensor(rec[0], WF_UINT8, 2, (const int64_t[]){2, 3});
      rh_expect_tensor(rec[1], WF_UINT8, 0, NULL);
      px = wf_tensor_data(rec[0]);
      for (int e = 0; e < 6; e++)
        assert_int_equal(px[e], 10 * r + e);
      assert_int_equal(*(const uint8_t *)wf_tensor_data(rec[1]), 7 + r);
      rh_release_all(rec, 2);
    }
    rh_end(f->idx, rd);
    rh_end(f->idx, rd);
    assert_int_equal(f->idx->tell(rd), 3);
    f->idx->close(rd);
  }
  wf_status_free(st);
}

static void test_idx_detects_gzip_by_magic_not_by_name(void **state) {
  fixture *f = *state;
  uint8_t lb[4] = {1, 2, 3, 4};
  wf_tensor *rec[1];
  void *rd;

  /* gzip data under a raw name, and raw data under a gzip name. */
  write_idx(f, "gzipped.idx", 1, 0x08, 1, (const uint32_t[]){4}, lb, 4);
  write_idx(f, "plain.gz", 0, 0x08, 1, (const uint32_t[]){4}, lb, 4);
  for (int k = 0; k < 2; k++) {
    rd = rh_open(f->idx, rh_path(f->dir, k ? "plain.gz" : "gzipped.idx", 1),
                 NULL, 0);
    for (int i = 0; i < 4; i++) {
      rh_next(f->idx, rd, rec);
      assert_int_equal(*(const uint8_t *)wf_tensor_data(rec[0]), lb[i]);
      rh_release_all(rec, 1);
    }
    rh_end(f->idx, rd);
    f->idx->close(rd);
  }
}

static void test_idx_converts_every_type_from_big_endian(void **state) {
  fixture *f = *state;
  /* Two records of two elements each, big-endian in the file. */
  static const unsigned char sbyte[] = {0xff, 0x7f, 0x80, 0x01};
  static const unsigned char shrt[] = {0xff, 0xfe, 0x01, 0x2c,
                                       0x80, 0x00, 0x7f, 0xff};
  static const unsigned char intv[] = {0xff, 0xff, 0xff, 0xfb, 0x00, 0x01,
                                       0x11, 0x70, 0x80, 0x00, 0x00, 0x00,
                                       0x7f, 0xff, 0xff, 0xff};
  static const unsigned char flt[] = {0x3f, 0xc0, 0x00, 0x00, 0xc0, 0x10,
                                      0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                      0x7f, 0x80, 0x00, 0x00};
  static const unsigned char dbl[] = {
      0x40, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xbf, 0xf0, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0xe0, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  const uint32_t dims[] = {2, 2};
  wf_tensor *rec[1];
  void *rd;

  for (int gz = 0; gz < 2; gz++) {
    write_idx(f, "sbyte.idx", gz, 0x09, 2, dims, sbyte, sizeof sbyte);
    rd = rh_open(f->idx, rh_path(f->dir, "sbyte.idx", 1), NULL, 0);
    rh_expect_field(f->idx, rd, 0, "image", WF_INT8, 1, (const int64_t[]){2});
    rh_next(f->idx, rd, rec);
    assert_int_equal(((const int8_t *)wf_tensor_data(rec[0]))[0], -1);
    assert_int_equal(((const int8_t *)wf_tensor_data(rec[0]))[1], 127);
    rh_release_all(rec, 1);
    rh_next(f->idx, rd, rec);
    assert_int_equal(((const int8_t *)wf_tensor_data(rec[0]))[0], -128);
    rh_release_all(rec, 1);
    f->idx->close(rd);

    /* short widens to int32. */
    write_idx(f, "short.idx", gz, 0x0B, 2, dims, shrt, sizeof shrt);
    rd = rh_open(f->idx, rh_path(f->dir, "short.idx", 1), NULL, 0);
    rh_expect_field(f->idx, rd, 0, "image", WF_INT32, 1, (const int64_t[]){2});
    rh_next(f->idx, rd, rec);
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[0], -2);
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[1], 300);
    rh_release_all(rec, 1);
    rh_next(f->idx, rd, rec);
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[0], -32768);
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[1], 32767);
    rh_release_all(rec, 1);
    rh_end(f->idx, rd);
    f->idx->close(rd);

    write_idx(f, "int.idx", gz, 0x0C, 2, dims, intv, sizeof intv);
    rd = rh_open(f->idx, rh_path(f->dir, "int.idx", 1), NULL, 0);
    rh_next(f->idx, rd, rec);
    rh_expect_tensor(rec[0], WF_INT32, 1, (const int64_t[]){2});
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[0], -5);
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[1], 70000);
    rh_release_all(rec, 1);
    rh_next(f->idx, rd, rec);
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[0], INT32_MIN);
    assert_int_equal(((const int32_t *)wf_tensor_data(rec[0]))[1], INT32_MAX);
    rh_release_all(rec, 1);
    f->idx->close(rd);

    write_idx(f, "float.idx", gz, 0x0D, 2, dims, flt, sizeof flt);
    rd = rh_open(f->idx, rh_path(f->dir, "float.idx", 1), NULL, 0);
    rh_next(f->idx, rd, rec);
    rh_expect_tensor(rec[0], WF_FLOAT32, 1, (const int64_t[]){2});
    assert_true(((const float *)wf_tensor_data(rec[0]))[0] == 1.5f);
    assert_true(((const float *)wf_tensor_data(rec[0]))[1] == -2.25f);
    rh_release_all(rec, 1);
    rh_next(f->idx, rd, rec);
    assert_true(((const float *)wf_tensor_data(rec[0]))[0] == 0.0f);
    assert_true(isinf(((const float *)wf_tensor_data(rec[0]))[1]));
    rh_release_all(rec, 1);
    f->idx->close(rd);

    write_idx(f, "double.idx", gz, 0x0E, 2, dims, dbl, sizeof dbl);
    rd = rh_open(f->idx, rh_path(f->dir, "double.idx", 1), NULL, 0);
    rh_next(f->idx, rd, rec);
    rh_expect_tensor(rec[0], WF_FLOAT64, 1, (const int64_t[]){2});
    assert_true(((const double *)wf_tensor_data(rec[0]))[0] == 3.125);
    assert_true(((const double *)wf_tensor_data(rec[0]))[1] == -1.0);
    rh_release_all(rec, 1);
    rh_next(f->idx, rd, rec);
    assert_true(((const double *)wf_tensor_data(rec[0]))[0] == 0.5);
    rh_release_all(rec, 1);
    rh_end(f->idx, rd);
    f->idx->close(rd);
  }
}

static void test_idx_names_fields_from_options(void **state) {
  fixture *f = *state;
  uint8_t lb[2] = {1, 2};
  void *rd;

  write_pair(f, 0);
  /* Scalar records are a "label" by default. */
  rd = rh_open(f->idx, rh_path(f->dir, "labels.idx", 1), NULL, 0);
  rh_expect_field(f->idx, rd, 0, "label", WF_UINT8, 0, NULL);
  f->idx->close(rd);
  rd = rh_open(f->idx, rh_path(f->dir, "images.idx", 1),
               RH_OPTS(RH_STR("name", "x"), RH_STR("label_file", "labels.idx"),
                       RH_STR("label_name", "y")),
               3);
  rh_expect_field(f->idx, rd, 0, "x", WF_UINT8, 2, (const int64_t[]){2, 3});
  rh_expect_field(f->idx, rd, 1, "y", WF_UINT8, 0, NULL);
  f->idx->close(rd);

  rh_open_fails(f->idx, rh_path(f->dir, "images.idx", 1),
                RH_OPTS(RH_STR("label_file", "labels.idx"),
                        RH_STR("label_name", "image")),
                2, WF_INVALID_ARGUMENT, "both fields", "'image'", NULL);
  rh_open_fails(f->idx, rh_path(f->dir, "images.idx", 1),
                RH_OPTS(RH_STR("name", "")), 1, WF_INVALID_ARGUMENT,
                "'name'", NULL);
  rh_open_fails(f->idx, rh_path(f->dir, "images.idx", 1),
                RH_OPTS(RH_STR("colour", "red")), 1, WF_INVALID_ARGUMENT,
                "unknown option 'colour'", "label_file", NULL);
  rh_open_fails(f->idx, rh_path(f->dir, "images.idx", 1),
                RH_OPTS(RH_INT("label_file", 3)), 1, WF_INVALID_ARGUMENT,
                "'label_file'", "string", NULL);
  /* Counts must agree. */
  write_idx(f, "two.idx", 0, 0x08, 1, (const uint32_t[]){2}, lb, 2);
  rh_open_fails(f->idx, rh_path(f->dir, "images.idx", 1),
                RH_OPTS(RH_STR("label_file", "two.idx")), 1,
                WF_INVALID_ARGUMENT, "images.idx has 3 records", "two.idx",
                "has 2", NULL);
  rh_open_fails(f->idx, rh_path(f->dir, "images.idx", 1),
                RH_OPTS(RH_STR("label_file", "absent.idx")), 1, WF_NOT_FOUND,
                "absent.idx", NULL);
}

static void test_idx_label_file_auto_follows_mnist_names(void **state) {
  fixture *f = *state;
  uint8_t px[4] = {1, 2, 3, 4}, lb[1] = {6};
  wf_tensor *rec[2];
  void *rd;

  write_idx(f, "train-images-idx3-ubyte.gz", 1, 0x08, 3,
            (const uint32_t[]){1, 2, 2}, px, 4);
  write_idx(f, "train-labels-idx1-ubyte.gz", 1, 0x08, 1, (const uint32_t[]){1},
            lb, 1);
  rd = rh_open(f->idx, rh_path(f->dir, "train-images-idx3-ubyte.gz", 1),
               RH_OPTS(RH_STR("label_file", "auto")), 1);
  rh_next(f->idx, rd, rec);
  assert_int_equal(((const uint8_t *)wf_tensor_data(rec[0]))[3], 4);
  assert_int_equal(*(const uint8_t *)wf_tensor_data(rec[1]), 6);
  rh_release_all(rec, 2);
  rh_end(f->idx, rd);
  f->idx->close(rd);

  /* An absolute label_file is taken as it is. */
  rd = rh_open(f->idx, rh_path(f->dir, "train-images-idx3-ubyte.gz", 1),
               RH_OPTS(RH_STR("label_file",
                              rh_path(f->dir, "train-labels-idx1-ubyte.gz",
                                      2))),
               1);
  assert_int_equal(f->idx->num_fields(rd), 2);
  f->idx->close(rd);

  rh_open_fails(f->idx, rh_path(f->dir, "train-labels-idx1-ubyte.gz", 1),
                RH_OPTS(RH_STR("label_file", "auto")), 1, WF_INVALID_ARGUMENT,
                "images-idx3", NULL);
}

static void test_idx_seek_and_tell_round_trip(void **state) {
  fixture *f = *state;
  wf_status *st = wf_status_new();
  enum { N = 2000, SZ = 100 };
  unsigned char *data = malloc(N * SZ);
  wf_tensor *rec[1];

  /* Records large enough that gzip seeks cross input buffers. */
  fill_noise(data, N * SZ, 7);
  for (int gz = 0; gz < 2; gz++) {
    void *rd;
    write_idx(f, "seek.idx", gz, 0x08, 2, (const uint32_t[]){N, SZ}, data,
              N * SZ);
    rd = rh_open(f->idx, rh_path(f->dir, "seek.idx", 1), NULL, 0);
    assert_int_equal(f->idx->tell(rd), 0);
    for (int i = 0; i < 2; i++) {
      rh_next(f->idx, rd, rec);
      rh_release_all(rec, 1);
    }
    assert_int_equal(f->idx->tell(rd), 2);
    /* Forward, backward, to the end, and back to the start. */
    const uint64_t targets[] = {1500, 3, 1999, 0, 2000, 700};
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
      uint64_t t = targets[k];
      rh_seek(f->idx, rd, t);
      assert_int_equal(f->idx->tell(rd), t);
      if (t == N) {
        rh_end(f->idx, rd);
        continue;
      }
      rh_next(f->idx, rd, rec);
      assert_memory_equal(wf_tensor_data(rec[0]), data + t * SZ, SZ);
      rh_release_all(rec, 1);
      assert_int_equal(f->idx->tell(rd), t + 1);
    }
    assert_int_equal(rh_count_records(f->idx, rd), N - 701);
    assert_int_not_equal(f->idx->seek(rd, N + 1, st), 0);
    assert_int_equal(wf_status_code(st), WF_OUT_OF_RANGE);
    rh_expect_message(st, "seek.idx", "record 2001", "2000 records", NULL);
    assert_int_equal(f->idx->count(rd, st), N);
    f->idx->close(rd);
  }
  free(data);
  wf_status_free(st);
}

static void test_idx_reads_concatenated_gzip_members(void **state) {
  fixture *f = *state;
  uint8_t lb[6] = {10, 11, 12, 13, 14, 15};
  size_t n, g1, g2;
  unsigned char *b = idx_bytes(0x08, 1, (const uint32_t[]){6}, lb, 6, &n);
  unsigned char *m1 = rh_gzip(b, 9, &g1), *m2 = rh_gzip(b + 9, n - 9, &g2);
  unsigned char *cat = malloc(g1 + g2);
  wf_tensor *rec[1];
  void *rd;

  memcpy(cat, m1, g1);
  memcpy(cat + g1, m2, g2);
  rh_write(rh_path(f->dir, "members.gz", 0), cat, g1 + g2);
  rd = rh_open(f->idx, rh_path(f->dir, "members.gz", 0), NULL, 0);
  for (int i = 0; i < 6; i++) {
    rh_next(f->idx, rd, rec);
    assert_int_equal(*(const uint8_t *)wf_tensor_data(rec[0]), 10 + i);
    rh_release_all(rec, 1);
  }
  rh_end(f->idx, rd);
  f->idx->close(rd);
  free(cat);
  free(m1);
  free(m2);
  free(b);
}

/* ---- broken files ------------------------------------------------------ */

static void test_idx_refuses_bad_headers(void **state) {
  fixture *f = *state;
  const char *p = rh_path(f->dir, "bad.idx", 1);
  static const unsigned char wrong_magic[] = {0x00, 0x01, 0x08, 0x01,
                                              0, 0, 0, 0};
  static const unsigned char bad_type[] = {0, 0, 0x0A, 1, 0, 0, 0, 0};
  static const unsigned char rank0[] = {0, 0, 0x08, 0};
  static const unsigned char rank10[] = {0, 0, 0x08, 10};
  static const unsigned char short_dims[] = {0, 0, 0x08, 3, 0, 0, 0, 1, 0};
  static const unsigned char zero_dim[] = {0, 0, 0x08, 2, 0, 0, 0, 1,
                                           0, 0, 0, 0};
  unsigned char huge[4 + 4 * 9];

  for (int gz = 0; gz < 2; gz++) {
    void (*w)(const char *, const void *, size_t) =
        gz ? rh_write_gz : rh_write;
    w(p, "\0", 1);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "bad.idx",
                  "1 bytes", "too few for an idx header", NULL);
    w(p, wrong_magic, sizeof wrong_magic);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "bad.idx",
                  "bad magic 0x00010801", "offset 0", NULL);
    w(p, bad_type, sizeof bad_type);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "bad.idx",
                  "type code 0x0a", "offset 2", NULL);
    w(p, rank0, sizeof rank0);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "rank 0",
                  "offset 3", NULL);
    w(p, rank10, sizeof rank10);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "rank 10",
                  "maximum rank 8", NULL);
    w(p, short_dims, sizeof short_dims);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "bad.idx",
                  "truncated header", "offset 9", NULL);
    w(p, zero_dim, sizeof zero_dim);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT,
                  "dimension 1 (offset 8) is 0", NULL);
    /* Nine dimensions of 2^32 - 1 overflow any size. */
    memset(huge, 0xff, sizeof huge);
    huge[0] = huge[1] = 0;
    huge[2] = 0x0E;
    huge[3] = 9;
    w(p, huge, sizeof huge);
    rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "bad.idx",
                  "beyond 64 bits", NULL);
  }
  rh_open_fails(f->idx, rh_path(f->dir, "absent.idx", 1), NULL, 0,
                WF_NOT_FOUND, "absent.idx", "cannot open", NULL);
  rh_open_fails(f->idx, f->dir, NULL, 0, WF_FAILED_PRECONDITION,
                "not a regular file", NULL);
}

static void test_idx_refuses_raw_file_of_wrong_size(void **state) {
  fixture *f = *state;
  unsigned char px[40] = {0};
  const char *p;

  /* 4 records of 10 bytes promised, 25 bytes there. */
  p = write_idx(f, "short.idx", 0, 0x08, 2, (const uint32_t[]){4, 10}, px,
                25);
  rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "short.idx",
                "truncated", "ending at offset 52", "ends at offset 37",
                "in record 2", NULL);
  p = write_idx(f, "long.idx", 0, 0x08, 2, (const uint32_t[]){3, 10}, px, 33);
  rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "long.idx",
                "3 unexpected bytes at offset 42", NULL);
  /* A lying count far beyond the file. */
  p = write_idx(f, "lying.idx", 0, 0x08, 3,
                (const uint32_t[]){0xffffffffu, 28, 28}, px, 40);
  rh_open_fails(f->idx, p, NULL, 0, WF_INVALID_ARGUMENT, "lying.idx",
                "truncated", "4294967295 records", NULL);
}

static void test_idx_reports_truncated_gzip_with_offsets(void **state) {
  fixture *f = *state;
  enum { N = 50, SZ = 784 };
  unsigned char *data = malloc(N * SZ);
  size_t n, gn;
  unsigned char *b, *gz;
  wf_tensor *rec[1];
  void *rd;
  int got = 0;

  fill_noise(data, N * SZ, 11);
  b = idx_bytes(0x08, 3, (const uint32_t[]){N, 28, 28}, data, N * SZ, &n);
  gz = rh_gzip(b, n, &gn);
  /* The compressed file cut in half: the header survives, records do not. */
  rh_write(rh_path(f->dir, "cut.gz", 0), gz, gn / 2);
  rd = rh_open(f->idx, rh_path(f->dir, "cut.gz", 0), NULL, 0);
  for (;;) {
    wf_status *st = wf_status_new();
    int rc = f->idx->next(rd, rec, st);
    if (rc != WF_READER_RECORD) {
      assert_int_equal(rc, -WF_INVALID_ARGUMENT);
      rh_expect_message(st, "cut.gz", "truncated gzip data", "ends at byte",
                        "decompressed offset", NULL);
      wf_status_free(st);
      break;
    }
    assert_memory_equal(wf_tensor_data(rec[0]), data + got * SZ, SZ);
    rh_release_all(rec, 1);
    got++;
    wf_status_free(st);
  }
  assert_true(got > 0 && got < N);
  /* Once broken, next says so until a seek. */
  rh_next_fails(f->idx, rd, WF_FAILED_PRECONDITION, "cut.gz", "seek", NULL);
  rh_seek(f->idx, rd, 0);
  rh_next(f->idx, rd, rec);
  assert_memory_equal(wf_tensor_data(rec[0]), data, SZ);
  rh_release_all(rec, 1);
  f->idx->close(rd);

  /* Cut inside the header. */
  rh_write(rh_path(f->dir, "cut.gz", 0), gz, 12);
  rh_open_fails(f->idx, rh_path(f->dir, "cut.gz", 0), NULL, 0,
                WF_INVALID_ARGUMENT, "cut.gz", "truncated gzip data", NULL);
  free(gz);
  free(b);
  free(data);
}

/* Reads `name` (n records promised, all intact) to its first error, which
 * must be corrupt gzip data with `why`, at the last record or the end. */
static void expect_gzip_error(const fixture *f, const char *name, int n,
                              const char *why) {
  void *rd = rh_open(f->idx, rh_path(f->dir, name, 0), NULL, 0);
  wf_status *st = wf_status_new();
  wf_tensor *rec[1];
  int got = 0, rc;

  while ((rc = f->idx->next(rd, rec, st)) == WF_READER_RECORD) {
    rh_release_all(rec, 1);
    got++;
  }
  assert_int_equal(rc, -WF_INVALID_ARGUMENT);
  assert_true(got >= n - 1);
  rh_expect_message(st, name, "corrupt gzip data", why, NULL);
  wf_status_free(st);
  f->idx->close(rd);
}

static void test_idx_reports_corrupt_gzip(void **state) {
  fixture *f = *state;
  enum { N = 20, SZ = 784 };
  unsigned char *data = malloc(N * SZ);
  size_t n, gn;
  unsigned char *b, *gz;

  fill_noise(data, N * SZ, 5);
  b = idx_bytes(0x08, 3, (const uint32_t[]){N, 28, 28}, data, N * SZ, &n);
  gz = rh_gzip(b, n, &gn);

  /* A changed CRC in the trailer: found when inflate reaches it, at the
   * last record or at the end. */
  gz[gn - 8] ^= 0x55;
  rh_write(rh_path(f->dir, "crc.gz", 0), gz, gn);
  expect_gzip_error(f, "crc.gz", N, "incorrect data check");
  gz[gn - 8] ^= 0x55;

  /* Bytes that are not gzip after a whole member. */
  gz = realloc(gz, gn + 4);
  memcpy(gz + gn, "junk", 4);
  rh_write(rh_path(f->dir, "junk.gz", 0), gz, gn + 4);
  expect_gzip_error(f, "junk.gz", N, "incorrect header check");

  /* A reserved block type (BTYPE 11) in the first deflate block, right
   * after the 10-byte gzip header: refused while reading the header. */
  gz[10] |= 0x06;
  rh_write(rh_path(f->dir, "bad.gz", 0), gz, gn);
  rh_open_fails(f->idx, rh_path(f->dir, "bad.gz", 0), NULL, 0,
                WF_INVALID_ARGUMENT, "bad.gz", "corrupt gzip data",
                "near byte", "invalid block type", NULL);
  free(gz);
  free(b);
  free(data);
}

static void test_idx_refuses_lying_gzip_headers(void **state) {
  fixture *f = *state;
  enum { SZ = 784 };
  unsigned char data[3 * SZ];
  wf_tensor *rec[1];
  void *rd;

  fill_noise(data, sizeof data, 3);
  /* 2^32 - 1 images of 28x28 cannot come out of a few kilobytes. */
  write_idx(f, "lie.gz", 1, 0x08, 3, (const uint32_t[]){0xffffffffu, 28, 28},
            data, sizeof data);
  rh_open_fails(f->idx, rh_path(f->dir, "lie.gz", 1), NULL, 0,
                WF_INVALID_ARGUMENT, "lie.gz", "4294967295 records",
                "more than a gzip file of", NULL);

  /* 5 promised, 3 there: found when the data runs out. */
  write_idx(f, "few.gz", 1, 0x08, 3, (const uint32_t[]){5, 28, 28}, data,
            sizeof data);
  rd = rh_open(f->idx, rh_path(f->dir, "few.gz", 1), NULL, 0);
  assert_int_equal(f->idx->count(rd, NULL), 5);
  for (int i = 0; i < 3; i++) {
    rh_next(f->idx, rd, rec);
    rh_release_all(rec, 1);
  }
  rh_next_fails(f->idx, rd, WF_INVALID_ARGUMENT, "few.gz",
                "truncated: record 3 of 5", "offset 2368",
                "decompressed data", NULL);
  f->idx->close(rd);

  /* 2 promised, 3 there: found at the end. */
  write_idx(f, "more.gz", 1, 0x08, 3, (const uint32_t[]){2, 28, 28}, data,
            sizeof data);
  rd = rh_open(f->idx, rh_path(f->dir, "more.gz", 1), NULL, 0);
  for (int i = 0; i < 2; i++) {
    rh_next(f->idx, rd, rec);
    rh_release_all(rec, 1);
  }
  rh_next_fails(f->idx, rd, WF_INVALID_ARGUMENT, "more.gz",
                "goes on at offset 1584", "2 records", NULL);
  f->idx->close(rd);
}

static void test_idx_large_gzip_records_grow_with_the_data(void **state) {
  fixture *f = *state;
  /* One record of 20 MiB (past the direct-read limit) of mostly zeros. */
  enum { H = 5 * 1024, W = 4096 };
  unsigned char *data = calloc(H, W);
  wf_tensor *rec[1];
  void *rd;

  /* 64 KiB of noise keeps the compressed file above the size that the
   * header's 20 MiB need at deflate's best ratio. */
  fill_noise(data, 65536, 9);
  data[(size_t)H * W - 1] = 2;
  write_idx(f, "big.gz", 1, 0x08, 3, (const uint32_t[]){1, H, W}, data,
            (size_t)H * W);
  rd = rh_open(f->idx, rh_path(f->dir, "big.gz", 1), NULL, 0);
  rh_next(f->idx, rd, rec);
  assert_memory_equal(wf_tensor_data(rec[0]), data, (size_t)H * W);
  rh_release_all(rec, 1);
  rh_end(f->idx, rd);
  f->idx->close(rd);

  /* The same header over a tenth of the data: truncated, not allocated. */
  write_idx(f, "big.gz", 1, 0x08, 3, (const uint32_t[]){1, H, W}, data,
            (size_t)H * W / 10);
  rd = rh_open(f->idx, rh_path(f->dir, "big.gz", 1), NULL, 0);
  rh_next_fails(f->idx, rd, WF_INVALID_ARGUMENT, "big.gz",
                "truncated: record 0 of 1", "ends at offset 2097168", NULL);
  f->idx->close(rd);
  free(data);
}

/* ---- Fashion-MNIST ------------------------------------------------------- */

static void test_idx_reads_fashion_mnist(void **state) {
  fixture *f = *state;
  const char *images = FMNIST_DIR "/train-images-idx3-ubyte.gz";
  wf_tensor *rec[2];
  const uint8_t *px;
  void *rd;

  if (access(images, R_OK) != 0 ||
      access(FMNIST_DIR "/train-labels-idx1-ubyte.gz", R_OK) != 0) {
    skip();
    return;
  }
  rd = rh_open(f->idx, images, RH_OPTS(RH_STR("label_file", "auto")), 1);
  rh_expect_field(f->idx, rd, 0, "image", WF_UINT8, 2,
                  (const int64_t[]){28, 28});
  rh_expect_field(f->idx, rd, 1, "label", WF_UINT8, 0, NULL);
  assert_int_equal(f->idx->count(rd, NULL), 60000);

  rh_next(f->idx, rd, rec);
  px = wf_tensor_data(rec[0]);
  assert_int_equal(*(const uint8_t *)wf_tensor_data(rec[1]), 9); /* boot */
  assert_int_equal(px[3 * 28 + 16], 73);
  assert_int_equal(px[4 * 28 + 15], 136);
  assert_int_equal(px[0], 0);
  rh_release_all(rec, 2);
  assert_int_equal(rh_count_records(f->idx, rd), 59999);

  rh_seek(f->idx, rd, 59999);
  rh_next(f->idx, rd, rec);
  assert_int_equal(*(const uint8_t *)wf_tensor_data(rec[1]), 5);
  assert_int_equal(((const uint8_t *)wf_tensor_data(rec[0]))[8 * 28 + 15], 71);
  rh_release_all(rec, 2);
  rh_end(f->idx, rd);
  f->idx->close(rd);

  rd = rh_open(f->idx, FMNIST_DIR "/t10k-labels-idx1-ubyte.gz", NULL, 0);
  assert_int_equal(f->idx->count(rd, NULL), 10000);
  assert_int_equal(rh_count_records(f->idx, rd), 10000);
  f->idx->close(rd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idx_is_registered_by_its_plugin),
      cmocka_unit_test(test_idx_reads_images_paired_with_labels),
      cmocka_unit_test(test_idx_detects_gzip_by_magic_not_by_name),
      cmocka_unit_test(test_idx_converts_every_type_from_big_endian),
      cmocka_unit_test(test_idx_names_fields_from_options),
      cmocka_unit_test(test_idx_label_file_auto_follows_mnist_names),
      cmocka_unit_test(test_idx_seek_and_tell_round_trip),
      cmocka_unit_test(test_idx_reads_concatenated_gzip_members),
      cmocka_unit_test(test_idx_refuses_bad_headers),
      cmocka_unit_test(test_idx_refuses_raw_file_of_wrong_size),
      cmocka_unit_test(test_idx_reports_truncated_gzip_with_offsets),
      cmocka_unit_test(test_idx_reports_corrupt_gzip),
      cmocka_unit_test(test_idx_refuses_lying_gzip_headers),
      cmocka_unit_test(test_idx_large_gzip_records_grow_with_the_data),
      cmocka_unit_test(test_idx_reads_fashion_mnist),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
