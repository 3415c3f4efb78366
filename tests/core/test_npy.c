/* tests/core/test_npy.c — .npy files (core/io/npy.c): numpy-written fixtures
 * of every dtype, byte order, memory order and format version; round trips
 * of every dtype and rank; every refusal; atomic writes; allocation
 * failures; and, when numpy is installed, numpy reading what weft wrote.
 *
 * The fixtures and the arrays in them come from
 * tests/core/fixtures/npy/gen_npy.py; expected values are mirrored here. */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/npy.h>
#include <weft/status.h>
#include <weft/tensor.h>

#include "base/alloc.h"

#define FIXDIR TEST_SRCDIR "/tests/core/fixtures/npy/"

static const wf_dtype all_dtypes[] = {WF_FLOAT16, WF_FLOAT32, WF_FLOAT64,
                                      WF_INT8,    WF_UINT8,   WF_INT32,
                                      WF_INT64,   WF_BOOL};
#define NDTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* ---- helpers ------------------------------------------------------------ */

/* The (2, 3) values gen_npy.py's VALUES holds for dtype, in weft's
 * representation; out has room for 6 elements of 8 bytes. */
static void expected_values(wf_dtype dtype, void *out) {
  static const uint16_t f16[6] = {0xbc00, 0xb800, 0x0000,
                                  0x3800, 0x3c00, 0x3e00};
  static const float f32[6] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f};
  static const double f64[6] = {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5};
  static const int8_t i8[6] = {-128, -1, 0, 1, 2, 127};
  static const uint8_t u8[6] = {0, 1, 2, 127, 128, 255};
  static const int32_t i32[6] = {INT32_MIN, -1, 0, 1, 2, INT32_MAX};
  static const int64_t i64[6] = {INT64_MIN, -1, 0, 1, 2, INT64_MAX};
  static const uint8_t b[6] = {1, 0, 1, 1, 0, 0};
  const void *src = dtype == WF_FLOAT16   ? (const void *)f16
                    : dtype == WF_FLOAT32 ? (const void *)f32
                    : dtype == WF_FLOAT64 ? (const void *)f64
                    : dtype == WF_INT8    ? (const void *)i8
                    : dtype == WF_UINT8   ? (const void *)u8
                    : dtype == WF_INT32   ? (const void *)i32
                    : dtype == WF_INT64   ? (const void *)i64
                                          : (const void *)b;
  memcpy(out, src, 6 * wf_dtype_size(dtype));
}

static void *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long n;

  if (!f)
    fail_msg("cannot open %s: %s", path, strerror(errno));
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  n = ftell(f);
  assert_true(n >= 0);
  rewind(f);
  buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void spit(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static wf_tensor *read_fixture(const char *name, wf_status *st) {
  char path[512];
  wf_tensor *t;

  snprintf(path, sizeof path, FIXDIR "%s.npy", name);
  t = wf_npy_read(path, st);
  if (!t)
    fail_msg("%s: %s", name, wf_status_message(st));
  return t;
}

static void assert_shape(const wf_tensor *t, int rank, const int64_t *dims) {
  assert_int_equal(wf_tensor_rank(t), rank);
  for (int i = 0; i < rank; i++)
    assert_int_equal(wf_tensor_dim(t, i), dims[i]);
}

/* A fresh directory under TMPDIR; the caller removes it with rm_dir. */
static void make_dir(char *buf, size_t len) {
  const char *tmp = getenv("TMPDIR");
  snprintf(buf, len, "%s/weft-npy-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(buf));
}

/* Number of entries in dir other than . and ..; the first goes to first. */
static int count_entries(const char *dir, char *first, size_t len) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;

  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (n++ == 0 && first)
      snprintf(first, len, "%s", e->d_name);
  }
  closedir(d);
  return n;
}

/* Removes dir and everything in it. */
static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[1024];

  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0)
      rm_dir(path);
  }
  closedir(d);
  assert_int_equal(rmdir(dir), 0);
}

/* An .npy file of version major.0 with the header dict text dict (padded
 * numpy's way) followed by data; malloc'd, *len its size. */
static unsigned char *make_npy(int major, const char *dict, const void *data,
                               size_t dlen, size_t *len) {
  size_t prefix = major == 1 ? 10 : 12, n = strlen(dict);
  size_t pad = 64 - (prefix + n + 1) % 64, hlen = n + pad + 1;
  unsigned char *b = malloc(prefix + hlen + dlen + 1);

  assert_non_null(b);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = 0;
  for (size_t i = 0; i < prefix - 8; i++)
    b[8 + i] = (unsigned char)(hlen >> (8 * i));
  memcpy(b + prefix, dict, n);
  memset(b + prefix + n, ' ', pad);
  b[prefix + n + pad] = '\n';
  if (dlen)
    memcpy(b + prefix + hlen, data, dlen);
  *len = prefix + hlen + dlen;
  return b;
}

static int has(const wf_status *st, const char *text) {
  return strstr(wf_status_message(st), text) != NULL;
}

#define assert_message_has(st, text)                                           \
  do {                                                                         \
    if (!has(st, text))                                                        \
      fail_msg("message \"%s\" lacks \"%s\"", wf_status_message(st), text);    \
  } while (0)

/* Fills t with a pattern of valid values (bools 0/1). */
static void fill_pattern(wf_tensor *t, unsigned seed) {
  unsigned char *p = wf_tensor_data(t);
  for (size_t i = 0; i < wf_tensor_nbytes(t); i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (unsigned char)(seed >> 16);
    if (wf_tensor_dtype(t) == WF_BOOL)
      p[i] &= 1;
  }
}

static void assert_same_tensor(const wf_tensor *a, const wf_tensor *b) {
  wf_shape sa, sb;
  assert_int_equal(wf_tensor_dtype(a), wf_tensor_dtype(b));
  wf_tensor_shape(a, &sa);
  wf_tensor_shape(b, &sb);
  assert_true(wf_shape_equal(&sa, &sb));
  assert_int_equal(wf_tensor_nbytes(a), wf_tensor_nbytes(b));
  if (wf_tensor_nbytes(a))
    assert_memory_equal(wf_tensor_data(a), wf_tensor_data(b),
                        wf_tensor_nbytes(a));
}

/* ---- reading numpy's files ---------------------------------------------- */

static void test_npy_reads_numpy_files_of_every_dtype(void **state) {
  static const int64_t dims[] = {2, 3};
  wf_status *st = wf_status_new();
  unsigned char want[48];
  (void)state;

  for (size_t k = 0; k < NDTYPES; k++) {
    wf_dtype dt = all_dtypes[k];
    wf_tensor *t = read_fixture(wf_dtype_name(dt), st);
    assert_int_equal(wf_tensor_dtype(t), dt);
    assert_shape(t, 2, dims);
    expected_values(dt, want);
    assert_memory_equal(wf_tensor_data(t), want, 6 * wf_dtype_size(dt));
    wf_tensor_release(t);
  }
  wf_status_free(st);
}

/* gen_npy.py's text arrays, row-major. */
typedef struct text_fixture {
  const char *name;
  int rank;
  int64_t dims[2];
  const char *values[6];
  size_t lens[6];
} text_fixture;

static const text_fixture text_fixtures[] = {
    {"str", 2, {2, 3},
     {"ab", "\xc3\x89" "cole", "", "\xce\xa3", "x", "yz"},
     {2, 6, 0, 2, 1, 2}},
    {"be_str", 1, {2, 0}, {"abc", "\xc3\xa9"}, {3, 2}},
    {"fortran_str", 2, {2, 3}, {"a", "bb", "ccc", "d", "ee", "fff"},
     {1, 2, 3, 1, 2, 3}},
    {"bytes", 1, {3, 0}, {"a", "\xff\x00" "b", ""}, {1, 3, 0}},
};

static void test_npy_reads_text_as_string_tensors(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  for (size_t k = 0; k < sizeof text_fixtures / sizeof text_fixtures[0];
       k++) {
    const text_fixture *f = &text_fixtures[k];
    wf_tensor *t = read_fixture(f->name, st);
    if (!t)
      fail_msg("%s: %s", f->name, wf_status_message(st));
    assert_int_equal(wf_tensor_dtype(t), WF_STRING);
    assert_shape(t, f->rank, f->dims);
    for (int64_t i = 0; i < wf_tensor_count(t); i++) {
      size_t len;
      const char *got = wf_tensor_string(t, i, &len);
      if (len != f->lens[i] || memcmp(got, f->values[i], len) != 0)
        fail_msg("%s: element %lld is \"%s\" (%zu bytes)", f->name,
                 (long long)i, got, len);
    }
    /* and back: the bytes numpy wrote, where numpy chose weft's width */
    void *buf;
    size_t blen, flen;
    char fix[512];
    snprintf(fix, sizeof fix, FIXDIR "%s.npy", f->name);
    unsigned char *file = slurp(fix, &flen);
    assert_int_equal(wf_npy_to_buffer(t, &buf, &blen, st), WF_OK);
    if (strcmp(f->name, "str") == 0 || strcmp(f->name, "bytes") == 0) {
      assert_int_equal(blen, flen);
      assert_memory_equal(buf, file, flen);
    }
    free(buf);
    free(file);
    wf_tensor_release(t);
  }
  wf_status_free(st);
}

static void test_npy_refuses_text_that_is_no_unicode(void **state) {
  wf_status *st = wf_status_new();
  uint32_t cps[2] = {0x41, 0xD800};
  size_t len;
  (void)state;
  unsigned char *b = make_npy(
      1, "{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", cps,
      sizeof cps, &len);
  assert_null(wf_npy_parse(b, len, "surrogate.npy", st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "surrogate.npy");
  assert_message_has(st, "string 0 holds 0xd800 at character 1");
  free(b);
  wf_status_free(st);
}

/* Text arrays read back what weft writes of them: an empty one whatever
 * its other dims (written 0 characters wide: at numpy's 1 the byte size
 * of (0, 1e9, 1e9) would overflow, which the reader refuses), and empty
 * strings as numpy writes them, 1 character wide. */
static void test_npy_round_trips_empty_text(void **state) {
  wf_status *st = wf_status_new();
  const int64_t huge[3] = {0, 1000000000, 1000000000}, two[1] = {2};
  const char *blank[2] = {"", ""};
  (void)state;
  for (int k = 0; k < 2; k++) {
    wf_tensor *t = k == 0 ? wf_tensor_new_strings(huge, 3, NULL, NULL, st)
                          : wf_tensor_new_strings(two, 1, blank, NULL, st);
    void *buf;
    size_t len;
    assert_non_null(t);
    assert_int_equal(wf_npy_to_buffer(t, &buf, &len, st), WF_OK);
    char *hdr = strndup((const char *)buf + 10, len - 10);
    assert_non_null(strstr(hdr, k == 0 ? "'descr': '<U0'" : "'descr': '<U1'"));
    free(hdr);
    wf_tensor *back = wf_npy_parse(buf, len, "written", st);
    if (!back)
      fail_msg("read back: %s", wf_status_message(st));
    assert_shape(back, k == 0 ? 3 : 1, k == 0 ? huge : two);
    for (int64_t i = 0; i < wf_tensor_count(back); i++) {
      size_t n;
      wf_tensor_string(back, i, &n);
      assert_int_equal(n, 0);
    }
    free(buf);
    wf_tensor_release(back);
    wf_tensor_release(t);
  }
  /* Text 0 wide with elements is refused (a file of a few bytes would
   * otherwise ask for a tensor of a billion empty strings). */
  size_t len;
  unsigned char *b = make_npy(
      1, "{'descr': '|U0', 'fortran_order': False, 'shape': (1, 1000000000), }",
      NULL, 0, &len);
  assert_null(wf_npy_parse(b, len, "wide.npy", st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "wide.npy");
  assert_message_has(st, "0 characters wide holds 1000000000 elements");
  free(b);
  wf_status_free(st);
}

static void test_npy_reads_big_endian_files(void **state) {
  static const wf_dtype dts[] = {WF_FLOAT16, WF_FLOAT32, WF_FLOAT64,
                                 WF_INT32, WF_INT64};
  static const int64_t dims[] = {2, 3};
  wf_status *st = wf_status_new();
  unsigned char want[48];
  char name[64];
  (void)state;

  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    wf_tensor *t;
    snprintf(name, sizeof name, "be_%s", wf_dtype_name(dts[k]));
    t = read_fixture(name, st);
    assert_int_equal(wf_tensor_dtype(t), dts[k]);
    assert_shape(t, 2, dims);
    expected_values(dts[k], want);
    assert_memory_equal(wf_tensor_data(t), want, 6 * wf_dtype_size(dts[k]));
    wf_tensor_release(t);
  }
  wf_status_free(st);
}

static void test_npy_reads_fortran_order_as_row_major(void **state) {
  static const int64_t d3[] = {2, 3, 4}, d2[] = {2, 3};
  wf_status *st = wf_status_new();
  wf_tensor *t = read_fixture("fortran_int32", st);
  (void)state;

  /* numpy: np.asfortranarray(np.arange(24).reshape(2, 3, 4)); element
   * [i][j][k] is 12i + 4j + k, stored column-major in the file. */
  assert_int_equal(wf_tensor_dtype(t), WF_INT32);
  assert_shape(t, 3, d3);
  for (int i = 0; i < 24; i++)
    assert_int_equal(((const int32_t *)wf_tensor_data(t))[i], i);
  wf_tensor_release(t);

  t = read_fixture("fortran_be_float64", st);
  assert_int_equal(wf_tensor_dtype(t), WF_FLOAT64);
  assert_shape(t, 2, d2);
  for (int i = 0; i < 6; i++)
    assert_true(((const double *)wf_tensor_data(t))[i] == (double)i);
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_npy_reads_fortran_order_of_every_rank(void **state) {
  /* Hand-made column-major files: element at row-major index r holds r. */
  static const int64_t dims[] = {2, 3, 1, 4};
  wf_status *st = wf_status_new();
  (void)state;

  for (int rank = 1; rank <= 4; rank++) {
    int64_t n = 1, colmajor[24], idx[4] = {0};
    char dict[160], shape[64] = "";
    size_t len;
    unsigned char *b;
    wf_tensor *t;

    for (int i = 0; i < rank; i++) {
      n *= dims[i];
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld, ",
               (long long)dims[i]);
    }
    /* Walk row-major, store each element at its column-major offset. */
    for (int64_t r = 0; r < n; r++) {
      int64_t off = 0, stride = 1;
      for (int i = 0; i < rank; i++) {
        off += idx[i] * stride;
        stride *= dims[i];
      }
      colmajor[off] = r;
      for (int i = rank - 1; i >= 0 && ++idx[i] == dims[i]; i--)
        idx[i] = 0;
    }
    snprintf(dict, sizeof dict,
             "{'descr': '<i8', 'fortran_order': True, 'shape': (%s), }",
             shape);
    b = make_npy(1, dict, colmajor, (size_t)n * 8, &len);
    t = wf_npy_parse(b, len, "fortran.npy", st);
    assert_non_null(t);
    assert_shape(t, rank, dims);
    for (int64_t r = 0; r < n; r++)
      assert_int_equal(((const int64_t *)wf_tensor_data(t))[r], r);
    wf_tensor_release(t);
    free(b);
  }
  wf_status_free(st);
}

static void test_npy_reads_format_versions_2_and_3(void **state) {
  static const int64_t d2[] = {3, 4}, d3[] = {5};
  wf_status *st = wf_status_new();
  wf_tensor *t = read_fixture("v2_float32", st);
  (void)state;

  assert_int_equal(wf_tensor_dtype(t), WF_FLOAT32);
  assert_shape(t, 2, d2);
  for (int i = 0; i < 12; i++)
    assert_true(((const float *)wf_tensor_data(t))[i] == (float)i);
  wf_tensor_release(t);

  t = read_fixture("v3_int64", st);
  assert_int_equal(wf_tensor_dtype(t), WF_INT64);
  assert_shape(t, 1, d3);
  for (int i = 0; i < 5; i++)
    assert_int_equal(((const int64_t *)wf_tensor_data(t))[i], i - 2);
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_npy_reads_0d_empty_and_rank_4_arrays(void **state) {
  static const int64_t e2[] = {0, 3}, e1[] = {0}, d4[] = {2, 3, 4, 5};
  wf_status *st = wf_status_new();
  wf_tensor *t = read_fixture("scalar_float64", st);
  (void)state;

  assert_int_equal(wf_tensor_dtype(t), WF_FLOAT64);
  assert_int_equal(wf_tensor_rank(t), 0);
  assert_true(*(const double *)wf_tensor_data(t) == 2.5);
  wf_tensor_release(t);

  t = read_fixture("scalar_bool", st);
  assert_int_equal(wf_tensor_dtype(t), WF_BOOL);
  assert_int_equal(wf_tensor_rank(t), 0);
  assert_int_equal(*(const uint8_t *)wf_tensor_data(t), 1);
  wf_tensor_release(t);

  t = read_fixture("empty_float32", st);
  assert_int_equal(wf_tensor_dtype(t), WF_FLOAT32);
  assert_shape(t, 2, e2);
  assert_int_equal(wf_tensor_nbytes(t), 0);
  wf_tensor_release(t);

  t = read_fixture("empty_int8", st);
  assert_int_equal(wf_tensor_dtype(t), WF_INT8);
  assert_shape(t, 1, e1);
  wf_tensor_release(t);

  t = read_fixture("rank4_uint8", st);
  assert_int_equal(wf_tensor_dtype(t), WF_UINT8);
  assert_shape(t, 4, d4);
  for (int i = 0; i < 120; i++)
    assert_int_equal(((const uint8_t *)wf_tensor_data(t))[i], i);
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_npy_writes_the_bytes_numpy_writes(void **state) {
  static const char *const names[] = {
      "float16",        "float32",     "float64",       "int8",
      "uint8",          "int32",       "int64",         "bool",
      "scalar_float64", "scalar_bool", "empty_float32", "empty_int8",
      "rank4_uint8",    "wide_empty_uint8"};
  wf_status *st = wf_status_new();
  char dir[256], path[512], fix[512];
  (void)state;

  make_dir(dir, sizeof dir);
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    size_t flen, blen, wlen;
    void *buf;
    unsigned char *file, *written;
    wf_tensor *t = read_fixture(names[k], st);

    snprintf(fix, sizeof fix, FIXDIR "%s.npy", names[k]);
    file = slurp(fix, &flen);
    assert_int_equal(wf_npy_to_buffer(t, &buf, &blen, st), WF_OK);
    if (blen != flen || memcmp(buf, file, flen) != 0)
      fail_msg("%s: weft's %zu bytes differ from numpy's %zu", names[k], blen,
               flen);
    snprintf(path, sizeof path, "%s/%s.npy", dir, names[k]);
    assert_int_equal(wf_npy_write(path, t, st), WF_OK);
    written = slurp(path, &wlen);
    assert_int_equal(wlen, flen);
    assert_memory_equal(written, file, flen);
    free(written);
    free(buf);
    free(file);
    wf_tensor_release(t);
  }
  rm_dir(dir);
  wf_status_free(st);
}

static void test_npy_parses_header_variations(void **state) {
  /* Key order, quotes, commas and spaces that a Python literal allows. */
  static const char *const dicts[] = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",
      "{\"fortran_order\": False, \"descr\": \"<i4\", \"shape\": (2,3,)}",
      "  {  'descr' :'<i4' ,\t'fortran_order':False,'shape':( 2 , 3 )  }",
      "{'descr': '=i4', 'fortran_order': False, 'shape': (2, 3)}",
      "{'descr': '|i4', 'fortran_order': False, 'shape': (2, 3)}",
      "{'descr': 'i4', 'fortran_order': False, 'shape': (2, 3)}",
      "{'descr': '<i4',\n 'fortran_order': False,\n 'shape': (2, 3)}",
  };
  static const int64_t dims[] = {2, 3};
  const int32_t data[6] = {1, 2, 3, 4, 5, 6};
  wf_status *st = wf_status_new();
  (void)state;

  for (size_t k = 0; k < sizeof dicts / sizeof dicts[0]; k++) {
    size_t len;
    unsigned char *b = make_npy(1, dicts[k], data, sizeof data, &len);
    wf_tensor *t = wf_npy_parse(b, len, "variant.npy", st);
    if (!t)
      fail_msg("%s: %s", dicts[k], wf_status_message(st));
    assert_int_equal(wf_tensor_dtype(t), WF_INT32);
    assert_shape(t, 2, dims);
    assert_memory_equal(wf_tensor_data(t), data, sizeof data);
    wf_tensor_release(t);
    free(b);
  }
  wf_status_free(st);
}

static void test_npy_reads_bools_as_0_or_1(void **state) {
  const unsigned char data[4] = {0, 1, 2, 255};
  const unsigned char want[4] = {0, 1, 1, 1};
  wf_status *st = wf_status_new();
  size_t len;
  unsigned char *b = make_npy(
      1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", data,
      sizeof data, &len);
  wf_tensor *t = wf_npy_parse(b, len, NULL, st);
  (void)state;

  assert_non_null(t);
  assert_memory_equal(wf_tensor_data(t), want, 4);
  wf_tensor_release(t);
  free(b);
  wf_status_free(st);
}

/* ---- round trips -------------------------------------------------------- */

static void test_npy_round_trips_every_dtype_and_rank(void **state) {
  static const int64_t full[] = {3, 1, 4, 2}, empty[] = {2, 0, 3, 1};
  wf_status *st = wf_status_new();
  char dir[256], path[512];
  (void)state;

  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/x.npy", dir);
  for (size_t k = 0; k < NDTYPES; k++)
    for (int rank = 0; rank <= 4; rank++)
      for (int e = 0; e < (rank ? 2 : 1); e++) {
        wf_tensor *t = wf_tensor_new(all_dtypes[k], e ? empty : full, rank, st);
        wf_tensor *back;
        void *buf;
        size_t len;

        assert_non_null(t);
        fill_pattern(t, (unsigned)(k * 10 + (size_t)rank));
        assert_int_equal(wf_npy_write(path, t, st), WF_OK);
        back = wf_npy_read(path, st);
        if (!back)
          fail_msg("%s rank %d: %s", wf_dtype_name(all_dtypes[k]), rank,
                   wf_status_message(st));
        assert_same_tensor(t, back);
        wf_tensor_release(back);

        assert_int_equal(wf_npy_to_buffer(t, &buf, &len, st), WF_OK);
        assert_int_equal(len % 64, wf_tensor_nbytes(t) % 64);
        back = wf_npy_parse(buf, len, "buffer", st);
        assert_non_null(back);
        assert_same_tensor(t, back);
        wf_tensor_release(back);
        free(buf);
        wf_tensor_release(t);
      }
  assert_int_equal(count_entries(dir, NULL, 0), 1);
  rm_dir(dir);
  wf_status_free(st);
}

static void test_npy_write_refuses_bfloat16(void **state) {
  static const int64_t dims[] = {2};
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(WF_BFLOAT16, dims, 1, st);
  char dir[256], path[512];
  void *buf = (void *)1;
  size_t len = 7;
  (void)state;

  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/bf16.npy", dir);
  assert_int_equal(wf_npy_write(path, t, st), WF_INVALID_ARGUMENT);
  assert_message_has(st, path);
  assert_message_has(st, "numpy has no bfloat16 dtype");
  assert_int_equal(count_entries(dir, NULL, 0), 0);
  assert_int_equal(wf_npy_to_buffer(t, &buf, &len, st), WF_INVALID_ARGUMENT);
  assert_null(buf);
  assert_int_equal(len, 0);
  wf_tensor_release(t);
  rm_dir(dir);
  wf_status_free(st);
}

/* ---- refusals ----------------------------------------------------------- */

static void test_npy_refuses_numpy_dtypes_weft_lacks(void **state) {
  static const struct {
    const char *fixture, *says;
    int lists_supported;
  } cases[] = {
      {"refuse_int16", "numpy dtype int16 ('<i2')", 1},
      {"refuse_uint16", "numpy dtype uint16 ('<u2')", 1},
      {"refuse_uint32", "numpy dtype uint32 ('<u4')", 1},
      {"refuse_uint64", "numpy dtype uint64 ('<u8')", 1},
      {"refuse_complex64", "numpy dtype complex64 ('<c8')", 1},
      {"refuse_longdouble", "numpy dtype longdouble", 1},
      {"refuse_datetime64", "numpy dtype datetime64 ('<M8[s]')", 1},
      {"refuse_object", "'|O' is an object array", 0},
      {"refuse_structured", "structured dtype", 1},
  };
  wf_status *st = wf_status_new();
  char path[512];
  (void)state;

  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    snprintf(path, sizeof path, FIXDIR "%s.npy", cases[k].fixture);
    assert_null(wf_npy_read(path, st));
    assert_int_equal(wf_status_code(st), WF_UNIMPLEMENTED);
    assert_message_has(st, path);
    assert_message_has(st, cases[k].says);
    if (cases[k].lists_supported)
      assert_message_has(st, "float16, float32, float64, int8, uint8, int32, "
                             "int64, bool, str_ and bytes_");
  }
  wf_status_free(st);
}

static void test_npy_refuses_malformed_headers(void **state) {
  static const struct {
    const char *dict;
    wf_code code;
    const char *says;
  } cases[] = {
      {"{'descr': '<f4', 'fortran_order': False}", WF_DATA_LOSS,
       "lacks the key 'shape'"},
      {"{'fortran_order': False, 'shape': (2,)}", WF_DATA_LOSS,
       "lacks the key 'descr'"},
      {"{'descr': '<f4', 'shape': (2,)}", WF_DATA_LOSS,
       "lacks the key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'order': 1}",
       WF_DATA_LOSS, "unknown key 'order'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (2,)}",
       WF_DATA_LOSS, "key 'descr' appears twice"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (2,)}", WF_DATA_LOSS,
       "expected a quoted string as the value of 'descr'"},
      {"{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,)}",
       WF_UNIMPLEMENTED, "structured dtype"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2,)}",
       WF_UNIMPLEMENTED, "object array"},
      {"{'descr': '<f3', 'fortran_order': False, 'shape': (2,)}",
       WF_DATA_LOSS, "'descr' '<f3' is not a numpy dtype"},
      {"{'descr': '<f4x', 'fortran_order': False, 'shape': (2,)}",
       WF_DATA_LOSS, "is not a numpy dtype"},
      {"{'descr': '', 'fortran_order': False, 'shape': (2,)}", WF_DATA_LOSS,
       "names no dtype"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", WF_DATA_LOSS,
       "'fortran_order' must be True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}",
       WF_DATA_LOSS, "'fortran_order' must be True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}",
       WF_DATA_LOSS, "'shape' entry 1 is negative (-1)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}",
       WF_DATA_LOSS, "'shape' entry 0 is not an integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}",
       WF_DATA_LOSS, "'shape' entry 0 is not an integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", WF_DATA_LOSS,
       "'shape' (2) is an int, not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", WF_DATA_LOSS,
       "expected '(' to open the 'shape' tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (02,)}",
       WF_DATA_LOSS, "leading zero"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",
       WF_DATA_LOSS, "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", WF_DATA_LOSS,
       "'shape' entry 0 is not an integer"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (99999999999999999999,)}",
       WF_DATA_LOSS, "'shape' entry 0 does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (4294967296, 4294967296)}",
       WF_DATA_LOSS, "is too large to address"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (0, 4294967296, 4294967296)}",
       WF_DATA_LOSS, "is too large to address"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1)}",
       WF_UNIMPLEMENTED, "more than 8 dims"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",
       WF_DATA_LOSS, "only spaces may follow the header dict, found 'x'"},
      {"{'descr': '<f4', 'fortran_order': False 'shape': (2,)}", WF_DATA_LOSS,
       "expected ',' or '}'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", WF_DATA_LOSS,
       "expected ':' after a key"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", WF_DATA_LOSS,
       "'descr' '<f4, ' is not a numpy dtype"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
       WF_DATA_LOSS, "expected ',' or '}'"},
      {"{'de\\x73cr': '<f4', 'fortran_order': False, 'shape': (2,)}",
       WF_DATA_LOSS, "escapes and line breaks"},
      {"['descr', '<f4']", WF_DATA_LOSS, "expected '{' to open the header"},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (2,)}", WF_DATA_LOSS,
       "expected a quoted string as a key"},
      {"", WF_DATA_LOSS, "expected '{'"},
      {"{'k\x01': 1}", WF_DATA_LOSS, "unknown key 'k\\x01'"},
  };
  const float data[2] = {1, 2};
  wf_status *st = wf_status_new();
  (void)state;

  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    size_t len;
    unsigned char *b = make_npy(1, cases[k].dict, data, sizeof data, &len);
    wf_tensor *t = wf_npy_parse(b, len, "case.npy", st);
    if (t)
      fail_msg("accepted %s", cases[k].dict);
    if (wf_status_code(st) != cases[k].code || !has(st, "case.npy: ") ||
        !has(st, cases[k].says))
      fail_msg("%s: got %s \"%s\", expected %s with \"%s\"", cases[k].dict,
               wf_code_name(wf_status_code(st)), wf_status_message(st),
               wf_code_name(cases[k].code), cases[k].says);
    free(b);
  }
  wf_status_free(st);
}

static void test_npy_refuses_bad_preambles(void **state) {
  const float data[2] = {1, 2};
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}";
  wf_status *st = wf_status_new();
  size_t len;
  unsigned char *b = make_npy(1, dict, data, sizeof data, &len);
  (void)state;

  assert_null(wf_npy_parse(b, 5, "short.npy", st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "short.npy: 5 bytes is too short for an .npy file");

  assert_null(wf_npy_parse(b, 9, "short.npy", st));
  assert_message_has(st, "too short for an .npy 1.0 preamble");

  assert_null(wf_npy_parse("PK\x03\x04 zip", 8, "a.npz", st));
  assert_message_has(st, "a.npz: a zip archive (.npz?)");

  b[1] = 'n';
  assert_null(wf_npy_parse(b, len, "magic.npy", st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "magic.npy: not an .npy file");
  b[1] = 'N';

  b[6] = 4;
  assert_null(wf_npy_parse(b, len, "v4.npy", st));
  assert_int_equal(wf_status_code(st), WF_UNIMPLEMENTED);
  assert_message_has(st, "v4.npy: .npy format version 4.0");
  b[6] = 1;
  b[7] = 1;
  assert_null(wf_npy_parse(b, len, "v11.npy", st));
  assert_message_has(st, "format version 1.1");
  b[7] = 0;

  /* A header length past the end of the file. */
  b[8] = 0xff;
  b[9] = 0x7f;
  assert_null(wf_npy_parse(b, len, "hlen.npy", st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "header of 32767 bytes runs past the end");
  free(b);

  /* A header that does not end in a newline: numpy's own padding but with
   * the newline replaced. */
  b = make_npy(1, dict, data, sizeof data, &len);
  assert_int_equal(len, 128 + sizeof data);
  b[127] = ' ';
  assert_null(wf_npy_parse(b, len, "nl.npy", st));
  assert_message_has(st, "nl.npy: .npy header, byte 127: the header does not "
                         "end in a newline");
  free(b);

  /* Version 2.0 with a 4-byte length that overflows what is there. */
  b = make_npy(2, dict, data, sizeof data, &len);
  b[11] = 0xff;
  assert_null(wf_npy_parse(b, len, "v2.npy", st));
  assert_message_has(st, "runs past the end");
  free(b);

  assert_null(wf_npy_parse("", 0, NULL, st));
  assert_message_has(st, "npy buffer: 0 bytes is too short");
  wf_status_free(st);
}

static void test_npy_refuses_data_shorter_or_longer_than_the_shape(
    void **state) {
  const float data[4] = {1, 2, 3, 4};
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}";
  wf_status *st = wf_status_new();
  char dir[256], path[512];
  size_t len;
  unsigned char *b;
  (void)state;

  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/size.npy", dir);

  b = make_npy(1, dict, data, 11, &len);
  assert_null(wf_npy_parse(b, len, "short.npy", st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "short.npy: data truncated: 11 bytes from byte 128, "
                         "but shape (3) of float32 needs 12");
  spit(path, b, len);
  assert_null(wf_npy_read(path, st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, path);
  assert_message_has(st, "data truncated: 11 bytes");
  free(b);

  b = make_npy(1, dict, data, 13, &len);
  assert_null(wf_npy_parse(b, len, "long.npy", st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "long.npy: 1 trailing bytes");
  spit(path, b, len);
  assert_null(wf_npy_read(path, st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "1 trailing bytes");
  free(b);

  /* A huge shape over a small file is refused before any allocation. */
  b = make_npy(1,
               "{'descr': '<f8', 'fortran_order': False, "
               "'shape': (1000000000, 1000000000)}",
               data, sizeof data, &len);
  spit(path, b, len);
  assert_null(wf_npy_read(path, st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "data truncated: 16 bytes");
  free(b);
  rm_dir(dir);
  wf_status_free(st);
}

/* ---- files -------------------------------------------------------------- */

static void test_npy_read_names_missing_files_and_directories(void **state) {
  wf_status *st = wf_status_new();
  char dir[256], path[512];
  (void)state;

  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/none.npy", dir);
  assert_null(wf_npy_read(path, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_message_has(st, path);
  assert_null(wf_npy_read(dir, st));
  assert_int_equal(wf_status_code(st), WF_FAILED_PRECONDITION);
  assert_message_has(st, "is a directory");
  spit(path, "", 0);
  assert_null(wf_npy_read(path, st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "0 bytes is too short");
  rm_dir(dir);
  wf_status_free(st);
}

typedef struct pipe_feed {
  int fd;
  const unsigned char *data;
  size_t len;
} pipe_feed;

static void *feed_pipe(void *arg) {
  pipe_feed *f = arg;
  size_t done = 0;
  while (done < f->len) {
    ssize_t w = write(f->fd, f->data + done, f->len - done);
    if (w <= 0)
      break;
    done += (size_t)w;
  }
  close(f->fd);
  return NULL;
}

/* Streams the file through a pipe and reads it as /dev/fd/N. */
static wf_tensor *read_through_pipe(const void *data, size_t len,
                                    wf_status *st) {
  int fds[2];
  char path[64];
  pthread_t th;
  pipe_feed f;
  wf_tensor *t;

  assert_int_equal(pipe(fds), 0);
  f.fd = fds[1];
  f.data = data;
  f.len = len;
  assert_int_equal(pthread_create(&th, NULL, feed_pipe, &f), 0);
  snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
  t = wf_npy_read(path, st);
  close(fds[0]);
  pthread_join(th, NULL);
  return t;
}

static void test_npy_reads_from_a_pipe(void **state) {
  static const int64_t dims[] = {300, 400};
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(WF_FLOAT64, dims, 2, st), *back;
  void *buf;
  size_t len;
  (void)state;

  /* Larger than a pipe's buffer, so the reader sees many short reads. */
  fill_pattern(t, 7);
  assert_int_equal(wf_npy_to_buffer(t, &buf, &len, st), WF_OK);
  back = read_through_pipe(buf, len, st);
  if (!back)
    fail_msg("%s", wf_status_message(st));
  assert_same_tensor(t, back);
  wf_tensor_release(back);

  assert_null(read_through_pipe(buf, len - 1, st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_message_has(st, "/dev/fd/");
  assert_message_has(st, "data truncated");
  free(buf);
  wf_tensor_release(t);
  wf_status_free(st);
}

static void test_npy_write_replaces_the_file_and_leaves_nothing_else(
    void **state) {
  static const int64_t d1[] = {4}, d2[] = {2, 2};
  wf_status *st = wf_status_new();
  wf_tensor *a = wf_tensor_new(WF_INT32, d1, 1, st);
  wf_tensor *b = wf_tensor_new(WF_FLOAT64, d2, 2, st), *back;
  char dir[256], path[512], name[256];
  (void)state;

  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/w.npy", dir);
  fill_pattern(a, 1);
  fill_pattern(b, 2);
  assert_int_equal(wf_npy_write(path, a, st), WF_OK);
  assert_int_equal(wf_npy_write(path, b, st), WF_OK);
  back = wf_npy_read(path, st);
  assert_non_null(back);
  assert_same_tensor(b, back);
  assert_int_equal(count_entries(dir, name, sizeof name), 1);
  assert_string_equal(name, "w.npy");
  wf_tensor_release(back);
  wf_tensor_release(a);
  wf_tensor_release(b);
  rm_dir(dir);
  wf_status_free(st);
}

static void test_npy_failed_write_keeps_the_old_file_and_no_temp(
    void **state) {
  static const int64_t small = 4, big = 4096;
  wf_status *st = wf_status_new();
  wf_tensor *old = wf_tensor_new(WF_INT32, &small, 1, st);
  wf_tensor *t = wf_tensor_new(WF_INT64, &big, 1, st), *back;
  char dir[256], path[512], name[512];
  struct rlimit saved, lim;
  void (*saved_sig)(int);
  (void)state;

  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/keep.npy", dir);
  fill_pattern(old, 3);
  fill_pattern(t, 4);
  assert_int_equal(wf_npy_write(path, old, st), WF_OK);

  /* The file size limit makes the write fail halfway (EFBIG). */
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
  lim = saved;
  lim.rlim_cur = 1000;
  saved_sig = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  assert_int_not_equal(wf_npy_write(path, t, st), WF_OK);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
  signal(SIGXFSZ, saved_sig);
  assert_message_has(st, path);
  assert_message_has(st, strerror(EFBIG));

  back = wf_npy_read(path, st);
  assert_non_null(back);
  assert_same_tensor(old, back);
  wf_tensor_release(back);
  assert_int_equal(count_entries(dir, name, sizeof name), 1);
  assert_string_equal(name, "keep.npy");

  /* Replacing a directory fails at the rename: the directory stays, and
   * the temporary file beside it goes. */
  snprintf(path, sizeof path, "%s/sub", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(name, sizeof name, "%s/sub/inner", dir);
  spit(name, "x", 1);
  assert_int_not_equal(wf_npy_write(path, t, st), WF_OK);
  assert_message_has(st, path);
  assert_message_has(st, strerror(EISDIR));
  assert_int_equal(count_entries(dir, NULL, 0), 2);

  /* A missing directory. */
  snprintf(path, sizeof path, "%s/nodir/x.npy", dir);
  assert_int_equal(wf_npy_write(path, t, st), WF_NOT_FOUND);
  assert_message_has(st, path);
  assert_int_equal(count_entries(dir, NULL, 0), 2);

  wf_tensor_release(old);
  wf_tensor_release(t);
  rm_dir(dir);
  wf_status_free(st);
}

static void test_npy_out_of_memory_fails_cleanly(void **state) {
  static const int64_t dims[] = {3, 4};
  wf_status *st = wf_status_new();
  char dir[256], path[512], fix[512];
  size_t flen;
  unsigned char *file;
  wf_tensor *t;
  int ok = 0;
  (void)state;

  /* Every allocation of parse, read (Fortran order: a second tensor) and
   * write fails in turn; each run either succeeds or reports
   * RESOURCE_EXHAUSTED, and leaks nothing. */
  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/oom.npy", dir);
  snprintf(fix, sizeof fix, FIXDIR "fortran_int32.npy");
  file = slurp(fix, &flen);
  t = wf_tensor_new(WF_FLOAT32, dims, 2, st);
  fill_pattern(t, 5);
  for (long n = 1; n < 50 && ok < 3; n++) {
    wf_tensor *x;
    int rc;

    ok = 0;
    wf__alloc_fail_after(n, 0);
    x = wf_npy_parse(file, flen, "oom", st);
    wf__alloc_fail_after(0, 0);
    if (x)
      ok++;
    else
      assert_int_equal(wf_status_code(st), WF_RESOURCE_EXHAUSTED);
    wf_tensor_release(x);

    wf__alloc_fail_after(n, 0);
    x = wf_npy_read(fix, st);
    wf__alloc_fail_after(0, 0);
    if (x)
      ok++;
    else
      assert_int_equal(wf_status_code(st), WF_RESOURCE_EXHAUSTED);
    wf_tensor_release(x);

    wf__alloc_fail_after(n, 0);
    rc = wf_npy_write(path, t, st);
    wf__alloc_fail_after(0, 0);
    if (rc == WF_OK)
      ok++;
    else
      assert_int_equal(rc, WF_RESOURCE_EXHAUSTED);
  }
  assert_int_equal(ok, 3);
  free(file);
  wf_tensor_release(t);
  rm_dir(dir);
  wf_status_free(st);
}

/* ---- numpy reads what weft writes ---------------------------------------- */

static void test_numpy_loads_what_weft_writes(void **state) {
  static const int64_t d23[] = {2, 3}, d234[] = {2, 3, 4}, d03[] = {0, 3},
                       d0[] = {0}, d2345[] = {2, 3, 4, 5};
  char dir[256], path[512], cmd[1024];
  unsigned char vals[48];
  wf_tensor *t;
  (void)state;

  if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    skip(); /* numpy is not installed: the fixtures cover the reading side */
  wf_status *st = wf_status_new();
  make_dir(dir, sizeof dir);
  /* Named after gen_npy.py's arrays, which --check compares them with. */
  for (size_t k = 0; k < NDTYPES; k++) {
    t = wf_tensor_new(all_dtypes[k], d23, 2, st);
    expected_values(all_dtypes[k], vals);
    memcpy(wf_tensor_data(t), vals, wf_tensor_nbytes(t));
    snprintf(path, sizeof path, "%s/%s.npy", dir, wf_dtype_name(all_dtypes[k]));
    assert_int_equal(wf_npy_write(path, t, st), WF_OK);
    /* The big-endian fixtures hold the same values. */
    if (wf_dtype_size(all_dtypes[k]) > 1 && all_dtypes[k] != WF_FLOAT16) {
      snprintf(path, sizeof path, "%s/be_%s.npy", dir,
               wf_dtype_name(all_dtypes[k]));
      assert_int_equal(wf_npy_write(path, t, st), WF_OK);
    }
    wf_tensor_release(t);
  }
  t = wf_tensor_new(WF_INT32, d234, 3, st);
  for (int i = 0; i < 24; i++)
    ((int32_t *)wf_tensor_data(t))[i] = i;
  snprintf(path, sizeof path, "%s/fortran_int32.npy", dir);
  assert_int_equal(wf_npy_write(path, t, st), WF_OK);
  wf_tensor_release(t);

  t = wf_tensor_new(WF_FLOAT64, NULL, 0, st);
  *(double *)wf_tensor_data(t) = 2.5;
  snprintf(path, sizeof path, "%s/scalar_float64.npy", dir);
  assert_int_equal(wf_npy_write(path, t, st), WF_OK);
  wf_tensor_release(t);

  t = wf_tensor_new(WF_FLOAT32, d03, 2, st);
  snprintf(path, sizeof path, "%s/empty_float32.npy", dir);
  assert_int_equal(wf_npy_write(path, t, st), WF_OK);
  wf_tensor_release(t);

  t = wf_tensor_new(WF_INT8, d0, 1, st);
  snprintf(path, sizeof path, "%s/empty_int8.npy", dir);
  assert_int_equal(wf_npy_write(path, t, st), WF_OK);
  wf_tensor_release(t);

  t = wf_tensor_new(WF_UINT8, d2345, 4, st);
  for (int i = 0; i < 120; i++)
    ((uint8_t *)wf_tensor_data(t))[i] = (uint8_t)i;
  snprintf(path, sizeof path, "%s/rank4_uint8.npy", dir);
  assert_int_equal(wf_npy_write(path, t, st), WF_OK);
  wf_tensor_release(t);

  /* text: the values of gen_npy.py's str, be_str, fortran_str, bytes */
  for (size_t k = 0; k < sizeof text_fixtures / sizeof text_fixtures[0];
       k++) {
    const text_fixture *f = &text_fixtures[k];
    t = wf_tensor_new_strings(f->dims, f->rank, f->values, f->lens, st);
    assert_non_null(t);
    snprintf(path, sizeof path, "%s/%s.npy", dir, f->name);
    assert_int_equal(wf_npy_write(path, t, st), WF_OK);
    wf_tensor_release(t);
  }

  snprintf(cmd, sizeof cmd, "python3 '%sgen_npy.py' --check '%s'", FIXDIR,
           dir);
  assert_int_equal(system(cmd), 0);
  rm_dir(dir);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_npy_reads_numpy_files_of_every_dtype),
      cmocka_unit_test(test_npy_reads_big_endian_files),
      cmocka_unit_test(test_npy_reads_text_as_string_tensors),
      cmocka_unit_test(test_npy_refuses_text_that_is_no_unicode),
      cmocka_unit_test(test_npy_round_trips_empty_text),
      cmocka_unit_test(test_npy_reads_fortran_order_as_row_major),
      cmocka_unit_test(test_npy_reads_fortran_order_of_every_rank),
      cmocka_unit_test(test_npy_reads_format_versions_2_and_3),
      cmocka_unit_test(test_npy_reads_0d_empty_and_rank_4_arrays),
      cmocka_unit_test(test_npy_writes_the_bytes_numpy_writes),
      cmocka_unit_test(test_npy_parses_header_variations),
      cmocka_unit_test(test_npy_reads_bools_as_0_or_1),
      cmocka_unit_test(test_npy_round_trips_every_dtype_and_rank),
      cmocka_unit_test(test_npy_write_refuses_bfloat16),
      cmocka_unit_test(test_npy_refuses_numpy_dtypes_weft_lacks),
      cmocka_unit_test(test_npy_refuses_malformed_headers),
      cmocka_unit_test(test_npy_refuses_bad_preambles),
      cmocka_unit_test(test_npy_refuses_data_shorter_or_longer_than_the_shape),
      cmocka_unit_test(test_npy_read_names_missing_files_and_directories),
      cmocka_unit_test(test_npy_reads_from_a_pipe),
      cmocka_unit_test(test_npy_write_replaces_the_file_and_leaves_nothing_else),
      cmocka_unit_test(test_npy_failed_write_keeps_the_old_file_and_no_temp),
      cmocka_unit_test(test_npy_out_of_memory_fails_cleanly),
      cmocka_unit_test(test_numpy_loads_what_weft_writes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
