/* tests/readers/test_tfrecord.c — the tfrecord reader plugin, loaded by the
 * real loader and driven through its registry entry and the host table:
 * CRC-32C (both implementations against a bitwise one), Example features
 * and their specs, plain, gzip and zlib files, every kind of damage
 * (including every truncation and every single-bit error of a file),
 * positions, counting and allocation failures.
 *
 * The fixtures come from tests/readers/fixtures/tfrecord/gen_tfrecord.py,
 * an independent Python implementation; its docstring lists the records
 * that valid_record() checks. The core pipeline is not used here. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "base/alloc.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"
#include "tfrecord.h"

#define TFR_PLUGIN_DIR TEST_BUILDDIR "/plugins/readers/tfrecord/.libs"
#define FIXDIR TEST_SRCDIR "/tests/readers/fixtures/tfrecord/"
#define FIX(name) FIXDIR name

/* valid.tfrecord: where each record starts, and the end of the file. */
static const uint64_t valid_offsets[] = {0, 114, 222, 333, 448};
static const int64_t labels[] = {-3, 4, 11, INT64_C(1) << 40};

static wf_runtime *rt;
static const wf_reader_def *def;

/* ---- helpers --------------------------------------------------------- */

static int load_plugin(void **state) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  (void)state;
  assert_non_null(cfg);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", TFR_PLUGIN_DIR, st),
                   0);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st),
                   0);
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  for (int i = 0; i < wf__registry_reader_count(rt->reg); i++) {
    const wf__reader *r = wf__registry_reader_at(rt->reg, i);
    if (strcmp(r->def.name, "tfrecord") == 0) {
      assert_string_equal(r->plugin, "reader-tfrecord");
      def = &r->def;
    }
  }
  if (!def)
    fail_msg("no reader named tfrecord in %s", TFR_PLUGIN_DIR);
  wf_status_free(st);
  return 0;
}

static int unload_plugin(void **state) {
  (void)state;
  wf_runtime_free(rt);
  rt = NULL;
  def = NULL;
  return 0;
}

static wf_attr_item opt_string(const char *name, const char *s) {
  wf_attr_item it = {name, {.type = WF_ATTR_STRING, .count = 1}};
  it.value.u.s = s;
  return it;
}

static wf_attr_item opt_strings(const char *name, const char *const *v,
                                int n) {
  wf_attr_item it = {name,
                     {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = n}};
  it.value.u.strings = v;
  return it;
}

static wf_attr_item opt_bool(const char *name, int b) {
  wf_attr_item it = {name, {.type = WF_ATTR_BOOL, .count = 1}};
  it.value.u.b = b;
  return it;
}

static wf_attr_item opt_int(const char *name, int64_t i) {
  wf_attr_item it = {name, {.type = WF_ATTR_INT, .count = 1}};
  it.value.u.i = i;
  return it;
}

/* The specs of valid.tfrecord's four features. */
static const char *const valid_specs[] = {"image:float32:2,3", "label:int64:",
                                          "name:string:-1", "tokens:int64:-1"};

static wf_attr_item valid_features(void) {
  return opt_strings("features", valid_specs, 4);
}

static void *open_ok(const char *path, const wf_attr_item *opts, int n) {
  wf_status *st = wf_status_new();
  void *rd = NULL;
  int rc = def->open(path, opts, n, &rd, st);
  if (rc != 0)
    fail_msg("open %s: %s", path, wf_status_message(st));
  assert_non_null(rd);
  wf_status_free(st);
  return rd;
}

/* Opens and expects failure with code; returns the message in msg. */
static void open_fails(const char *path, const wf_attr_item *opts, int n,
                       int code, char *msg, size_t len) {
  wf_status *st = wf_status_new();
  void *rd = NULL;
  int rc = def->open(path, opts, n, &rd, st);
  if (rc == 0)
    fail_msg("open %s succeeded; expected code %d", path, code);
  assert_int_equal(rc, code);
  assert_int_equal(wf_status_code(st), code);
  assert_null(rd);
  snprintf(msg, len, "%s", wf_status_message(st));
  wf_status_free(st);
}

static void release_fields(wf_tensor **f, int n) {
  for (int i = 0; i < n; i++) {
    wf_tensor_release(f[i]);
    f[i] = NULL;
  }
}

/* next, with the message copied into msg (when not NULL). */
static int next_msg(void *rd, wf_tensor **f, char *msg, size_t len) {
  wf_status *st = wf_status_new();
  int rc = def->next(rd, f, st);
  if (rc < 0)
    assert_int_equal(wf_status_code(st), -rc);
  if (msg)
    snprintf(msg, len, "%s", wf_status_message(st));
  wf_status_free(st);
  return rc;
}

static int next_rc(void *rd, wf_tensor **f) { return next_msg(rd, f, NULL, 0); }

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part))
    fail_msg("message \"%s\" lacks \"%s\"", msg, part);
}

static void assert_shape(const wf_tensor *t, int rank, const int64_t *dims) {
  assert_int_equal(wf_tensor_rank(t), rank);
  for (int i = 0; i < rank; i++)
    assert_int_equal(wf_tensor_dim(t, i), dims[i]);
}

/* The fields of valid.tfrecord's record i under valid_specs. */
static void valid_record(wf_tensor **f, int i) {
  char name[8];
  const float *image;
  const int64_t *tokens;

  assert_int_equal(wf_tensor_dtype(f[0]), WF_FLOAT32);
  assert_shape(f[0], 2, (const int64_t[]){2, 3});
  image = wf_tensor_data(f[0]);
  for (int j = 0; j < 6; j++)
    assert_true(image[j] == (float)(i + 0.25 * j));

  assert_int_equal(wf_tensor_dtype(f[1]), WF_INT64);
  assert_int_equal(wf_tensor_rank(f[1]), 0);
  assert_int_equal(*(const int64_t *)wf_tensor_data(f[1]), labels[i]);

  snprintf(name, sizeof name, "rec%d", i);
  assert_int_equal(wf_tensor_dtype(f[2]), WF_UINT8);
  assert_shape(f[2], 1, (const int64_t[]){4});
  assert_memory_equal(wf_tensor_data(f[2]), name, 4);

  assert_int_equal(wf_tensor_dtype(f[3]), WF_INT64);
  assert_shape(f[3], 1, (const int64_t[]){i});
  tokens = wf_tensor_data(f[3]);
  for (int k = 0; k < i; k++)
    assert_int_equal(tokens[k], 100 + k);
}

/* Reads records first..3 of valid.tfrecord's content, then the end. */
static void read_valid_from(void *rd, int first) {
  wf_tensor *f[4] = {0};
  for (int i = first; i < 4; i++) {
    assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
    valid_record(f, i);
    release_fields(f, 4);
    assert_int_equal(def->tell(rd), valid_offsets[i + 1]);
  }
  assert_int_equal(next_rc(rd, f), WF_READER_END);
  assert_int_equal(next_rc(rd, f), WF_READER_END);
}

static void *slurp(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  void *buf;
  long n;
  assert_non_null(fp);
  assert_int_equal(fseek(fp, 0, SEEK_END), 0);
  n = ftell(fp);
  assert_true(n >= 0);
  rewind(fp);
  buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
  fclose(fp);
  *len = (size_t)n;
  return buf;
}

/* A temporary file holding len bytes of data; path receives its name. */
static void write_tmp(char *path, size_t cap, const void *data, size_t len) {
  int fd;
  snprintf(path, cap, "%s", "/tmp/weft-test-tfrecord-XXXXXX");
  fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, len), (ssize_t)len);
  close(fd);
}

/* ---- CRC-32C ----------------------------------------------------------- */

static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  while (n--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0);
  }
  return ~c;
}

static void test_crc32c_matches_the_check_value(void **state) {
  (void)state;
  assert_int_equal(tfr_crc32c_portable(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(tfr_crc32c(0, "123456789", 9), 0xE3069283u);
  if (tfr_crc32c_hw_available())
    assert_int_equal(tfr_crc32c_hw(0, "123456789", 9), 0xE3069283u);
  else
    print_message("SSE4.2 not available: only the portable CRC-32C runs\n");
  assert_int_equal(tfr_crc32c(0, "", 0), 0);
  /* TFRecord's mask of it, as the fixture generator computes it. */
  assert_int_equal(tfr_crc_mask(0xE3069283u), 0xc78ab0e5u);
}

static void test_crc32c_implementations_agree_on_every_length_and_alignment(
    void **state) {
  uint8_t buf[1100];
  uint32_t seed = 12345;
  (void)state;
  for (size_t i = 0; i < sizeof buf; i++) {
    seed = seed * 1103515245u + 12345u;
    buf[i] = (uint8_t)(seed >> 16);
  }
  for (size_t off = 0; off < 8; off++)
    for (size_t n = 0; n <= 1024; n += (n < 80 ? 1 : 37)) {
      uint32_t want = crc_bitwise(buf + off, n);
      assert_int_equal(tfr_crc32c_portable(0, buf + off, n), want);
      if (tfr_crc32c_hw_available())
        assert_int_equal(tfr_crc32c_hw(0, buf + off, n), want);
      assert_int_equal(tfr_crc32c(0, buf + off, n), want);
      /* Continuing a CRC over two pieces gives the whole one. */
      assert_int_equal(
          tfr_crc32c(tfr_crc32c(0, buf + off, n / 3), buf + off + n / 3,
                         n - n / 3),
          want);
    }
}

/* ---- registration and options ----------------------------------------- */

static void test_reader_is_registered_with_its_formats(void **state) {
  (void)state;
  assert_non_null(strstr(def->formats, "tfrecord"));
  assert_non_null(strstr(def->formats, "tfrecord.gz"));
  assert_non_null(def->count);
  assert_non_null(strstr(def->doc, "features"));
}

static void test_reader_refuses_bad_options(void **state) {
  const char *two_images[] = {"image:float32:6", "image:int64:-1"};
  struct {
    wf_attr_item opt;
    const char *part;
  } cases[] = {
      {opt_int("colour", 1), "'colour' is unknown"},
      {opt_string("compression", "lz4"), "auto, none, gzip or zlib"},
      {opt_int("max_record_bytes", 0), "max_record_bytes"},
      {opt_string("raw", "maybe"), "true or false"},
      {opt_int("features", 3), "list of strings"},
      {opt_string("features", "image"), "at least name:dtype:shape"},
      {opt_string("features", "image:float64:6"), "unknown dtype"},
      {opt_string("features", ":float32:6"), "the name is empty"},
      {opt_string("features", "image:float32:2,-1,-1"), "bad shape"},
      {opt_string("features", "image:float32:2,x"), "bad shape"},
      {opt_string("features", "image:float32:-2"), "bad shape"},
      {opt_string("features", "image:float32:1,1,1,1,1,1,1,1,1"),
       "bad shape"},
      {opt_string("features",
                  "a_name_that_is_much_longer_than_sixty_three_bytes_which_"
                  "is_the_limit:int64:1"),
       "longer than 63"},
      {opt_string("features", "x:float32:2:1,2,3"), "does not fit"},
      {opt_string("features", "x:float32:-1,2:1,2,3"), "does not fit"},
      {opt_string("features", "x:string:4:abc"), "does not fit"},
      {opt_string("features", "x:int64:1:abc"), "not an int64"},
      {opt_string("features", "x:float32:1:1.5q"), "not a float32"},
      {opt_string("features", "x:int64:2:1,"), "empty"},
      {opt_strings("features", two_images, 2), "named by two specs"},
  };
  char msg[2048];
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    open_fails(FIX("valid.tfrecord"), &cases[i].opt, 1, WF_INVALID_ARGUMENT,
               msg, sizeof msg);
    assert_contains(msg, cases[i].part);
  }
  {
    wf_attr_item both[] = {opt_bool("raw", 1), valid_features()};
    open_fails(FIX("valid.tfrecord"), both, 2, WF_INVALID_ARGUMENT, msg,
               sizeof msg);
    assert_contains(msg, "cannot be combined");
  }
}

static void test_open_names_a_missing_file(void **state) {
  char msg[2048];
  (void)state;
  open_fails(FIX("no-such.tfrecord"), NULL, 0, WF_NOT_FOUND, msg, sizeof msg);
  assert_contains(msg, "no-such.tfrecord");
  open_fails(FIXDIR, NULL, 0, WF_INVALID_ARGUMENT, msg, sizeof msg);
  assert_contains(msg, "not a regular file");
}

/* A field struct as the core hands it to a reader: zeroed, header set. */
static void rh_field_init(wf_reader_field *f) {
  memset(f, 0, sizeof *f);
  f->struct_size = (uint32_t)sizeof *f;
  f->abi_major = WF_ABI_MAJOR;
  f->abi_minor = WF_ABI_MINOR;
}

/* ---- reading ------------------------------------------------------------ */

static void test_reads_float_int64_and_bytes_features(void **state) {
  wf_attr_item opt = valid_features();
  void *rd = open_ok(FIX("valid.tfrecord"), &opt, 1);
  wf_reader_field f;
  (void)state;

  assert_int_equal(def->num_fields(rd), 4);
  rh_field_init(&f);
  def->field(rd, 0, &f);
  assert_string_equal(f.name, "image");
  assert_int_equal(f.dtype, WF_FLOAT32);
  assert_int_equal(f.shape.rank, 2);
  assert_int_equal(f.shape.dims[0], 2);
  assert_int_equal(f.shape.dims[1], 3);
  def->field(rd, 1, &f);
  assert_string_equal(f.name, "label");
  assert_int_equal(f.dtype, WF_INT64);
  assert_int_equal(f.shape.rank, 0);
  def->field(rd, 2, &f);
  assert_string_equal(f.name, "name");
  assert_int_equal(f.dtype, WF_UINT8);
  assert_int_equal(f.shape.rank, 1);
  assert_int_equal(f.shape.dims[0], WF_UNKNOWN_DIM);
  def->field(rd, 3, &f);
  assert_string_equal(f.name, "tokens");
  assert_int_equal(f.shape.dims[0], WF_UNKNOWN_DIM);

  assert_int_equal(def->tell(rd), 0);
  read_valid_from(rd, 0);
  def->close(rd);
}

static void test_features_option_may_be_one_string(void **state) {
  wf_attr_item opt = opt_string(
      "features", "image:float32:2,3;label:int64:;name:string:-1;"
                  "tokens:int64:-1");
  void *rd = open_ok(FIX("valid.tfrecord"), &opt, 1);
  (void)state;
  read_valid_from(rd, 0);
  def->close(rd);
}

static void test_variable_length_with_known_inner_dims(void **state) {
  /* image's 6 floats as (?, 2) and (3, ?); tokens of record 2 as (?, 1). */
  const char *specs[] = {"image:float32:-1,2", "tokens:int64:-1,1"};
  const char *specs2[] = {"image:float32:3,-1"};
  wf_attr_item opt = opt_strings("features", specs, 2);
  wf_tensor *f[2] = {0};
  wf_status *st = wf_status_new();
  void *rd = open_ok(FIX("valid.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(def->seek(rd, valid_offsets[2], st), 0);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 2, (const int64_t[]){3, 2});
  assert_shape(f[1], 2, (const int64_t[]){2, 1});
  release_fields(f, 2);
  def->close(rd);

  opt = opt_strings("features", specs2, 1);
  rd = open_ok(FIX("valid.tfrecord"), &opt, 1);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 2, (const int64_t[]){3, 2});
  release_fields(f, 1);
  def->close(rd);
  wf_status_free(st);
}

static void test_without_features_every_feature_of_the_first_record(
    void **state) {
  void *rd = open_ok(FIX("valid.tfrecord"), NULL, 0);
  const char *names[] = {"image", "label", "name", "tokens"};
  const int dtypes[] = {WF_FLOAT32, WF_INT64, WF_UINT8, WF_INT64};
  const int64_t counts[] = {6, 1, 4, 3};
  wf_tensor *f[4] = {0};
  wf_status *st = wf_status_new();
  (void)state;

  assert_int_equal(def->num_fields(rd), 4);
  for (int i = 0; i < 4; i++) {
    wf_reader_field fd;
    rh_field_init(&fd);
    def->field(rd, i, &fd);
    assert_string_equal(fd.name, names[i]);
    assert_int_equal(fd.dtype, dtypes[i]);
    assert_int_equal(fd.shape.rank, 1);
    assert_int_equal(fd.shape.dims[0], WF_UNKNOWN_DIM);
  }
  /* Schema inference leaves the first record unread. */
  assert_int_equal(def->tell(rd), 0);
  assert_int_equal(def->seek(rd, valid_offsets[3], st), 0);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  for (int i = 0; i < 4; i++)
    assert_int_equal(wf_tensor_count(f[i]), counts[i]);
  assert_int_equal(*(const int64_t *)wf_tensor_data(f[1]), labels[3]);
  release_fields(f, 4);
  def->close(rd);
  wf_status_free(st);
}

static void test_inferring_from_a_bad_first_record_fails_open(void **state) {
  char path[64], msg[2048];
  size_t len;
  uint8_t *bytes = slurp(FIX("malformed.tfrecord"), &len);
  (void)state;
  /* malformed.tfrecord from its record 1: the malformed payload first. */
  write_tmp(path, sizeof path, bytes + valid_offsets[1],
            len - valid_offsets[1]);
  open_fails(path, NULL, 0, WF_INVALID_ARGUMENT, msg, sizeof msg);
  assert_contains(msg, "record 0 at offset 0");
  assert_contains(msg, "not a valid tf.train.Example");
  assert_contains(msg, "the schema comes from the first record");
  unlink(path);
  open_fails(FIX("truncated_header.tfrecord.gz"), NULL, 0, WF_NOT_FOUND, msg,
             sizeof msg);
  free(bytes);
}

static void test_empty_file_has_no_records(void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  wf_status *st = wf_status_new();
  void *rd = open_ok(FIX("empty.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_END);
  assert_int_equal(def->count(rd, st), 0);
  def->close(rd);
  rd = open_ok(FIX("empty.tfrecord"), NULL, 0);
  assert_int_equal(def->num_fields(rd), 0);
  assert_int_equal(next_rc(rd, f), WF_READER_END);
  def->close(rd);
  wf_status_free(st);
}

static void test_reads_gzip_zlib_and_concatenated_gzip_files(void **state) {
  const char *files[] = {FIX("valid.tfrecord.gz"), FIX("valid.tfrecord.zz"),
                         FIX("multi.tfrecord.gz")};
  wf_attr_item opts[2] = {valid_features(), opt_string("compression", "auto")};
  (void)state;
  for (int i = 0; i < 3; i++) {
    void *rd = open_ok(files[i], opts, 2);
    read_valid_from(rd, 0);
    def->close(rd);
  }
  /* Compression named explicitly. */
  opts[1] = opt_string("compression", "gzip");
  {
    void *rd = open_ok(FIX("valid.tfrecord.gz"), opts, 2);
    read_valid_from(rd, 0);
    def->close(rd);
  }
  opts[1] = opt_string("compression", "zlib");
  {
    void *rd = open_ok(FIX("valid.tfrecord.zz"), opts, 2);
    read_valid_from(rd, 0);
    def->close(rd);
  }
}

static void test_compression_option_is_checked_against_the_file(
    void **state) {
  wf_attr_item opts[2] = {valid_features(), opt_string("compression", "gzip")};
  wf_tensor *f[4] = {0};
  char msg[2048];
  void *rd;
  (void)state;
  open_fails(FIX("valid.tfrecord"), opts, 2, WF_INVALID_ARGUMENT, msg,
             sizeof msg);
  assert_contains(msg, "magic");
  /* A gzip file read as plain: its first bytes are no TFRecord header. */
  opts[1] = opt_string("compression", "none");
  rd = open_ok(FIX("valid.tfrecord.gz"), opts, 2);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_INVALID_ARGUMENT);
  assert_contains(msg, "length CRC mismatch");
  def->close(rd);
}

static void test_plain_file_that_looks_like_zlib_is_read_plain(void **state) {
  wf_attr_item opt = opt_bool("raw", 1);
  wf_tensor *f[1] = {0};
  const uint8_t *p;
  void *rd = open_ok(FIX("zlib_lookalike.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_int_equal(wf_tensor_count(f[0]), 376);
  p = wf_tensor_data(f[0]);
  for (int i = 0; i < 376; i++)
    assert_int_equal(p[i], i % 251);
  release_fields(f, 1);
  assert_int_equal(next_rc(rd, f), WF_READER_END);
  def->close(rd);
}

static void test_raw_yields_each_record_unparsed(void **state) {
  wf_attr_item opt = opt_bool("raw", 1);
  wf_tensor *f[1] = {0};
  wf_reader_field fd;
  const uint8_t *p;
  void *rd = open_ok(FIX("raw.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(def->num_fields(rd), 1);
  rh_field_init(&fd);
  def->field(rd, 0, &fd);
  assert_string_equal(fd.name, "record");
  assert_int_equal(fd.dtype, WF_UINT8);
  assert_int_equal(fd.shape.rank, 1);
  assert_int_equal(fd.shape.dims[0], WF_UNKNOWN_DIM);

  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 1, (const int64_t[]){0});
  release_fields(f, 1);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 1, (const int64_t[]){5});
  assert_memory_equal(wf_tensor_data(f[0]), "hello", 5);
  release_fields(f, 1);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 1, (const int64_t[]){256});
  p = wf_tensor_data(f[0]);
  for (int i = 0; i < 256; i++)
    assert_int_equal(p[i], i);
  release_fields(f, 1);
  assert_int_equal(next_rc(rd, f), WF_READER_END);
  def->close(rd);
}

static void test_reads_unpacked_numeric_lists(void **state) {
  const float image[] = {0.5f, -1.5f, 2.0f, 3.25f, 1e-3f, 7.0f};
  const int64_t tokens[] = {1, INT64_C(1) << 62, -5};
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  void *rd = open_ok(FIX("unpacked.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_memory_equal(wf_tensor_data(f[0]), image, sizeof image);
  assert_int_equal(*(const int64_t *)wf_tensor_data(f[1]), -1);
  assert_shape(f[2], 1, (const int64_t[]){0});
  assert_shape(f[3], 1, (const int64_t[]){3});
  assert_memory_equal(wf_tensor_data(f[3]), tokens, sizeof tokens);
  release_fields(f, 4);
  def->close(rd);
}

/* ---- defaults and mismatches ------------------------------------------- */

static void test_missing_feature_is_a_skippable_error_naming_it(
    void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char msg[2048];
  void *rd = open_ok(FIX("missing_feature.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  release_fields(f, 4);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_DATA_LOSS);
  for (int i = 0; i < 4; i++)
    assert_null(f[i]);
  assert_contains(msg, "missing_feature.tfrecord: record 1 at offset 114");
  assert_contains(msg, "feature 'label' is missing");
  assert_contains(msg, "'tokens'");
  /* Reading goes on with the next record. */
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  valid_record(f, 2);
  release_fields(f, 4);
  assert_int_equal(next_rc(rd, f), WF_READER_END);
  def->close(rd);
}

static void test_missing_feature_takes_its_default(void **state) {
  const char *specs[] = {"label:int64::-1",   "extra:float32:2,2:1.5",
                         "list:int64:3:7,8,9", "var:int64:-1:",
                         "text:string:-1:a,b", "var2:float32:-1,2:1,2,3,4"};
  wf_attr_item opt = opt_strings("features", specs, 6);
  wf_tensor *f[6] = {0};
  const float *x;
  const int64_t *l;
  void *rd = open_ok(FIX("missing_feature.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_int_equal(*(const int64_t *)wf_tensor_data(f[0]), labels[0]);
  release_fields(f, 6);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_int_equal(*(const int64_t *)wf_tensor_data(f[0]), -1);
  assert_shape(f[1], 2, (const int64_t[]){2, 2});
  x = wf_tensor_data(f[1]);
  for (int i = 0; i < 4; i++)
    assert_true(x[i] == 1.5f);
  l = wf_tensor_data(f[2]);
  assert_int_equal(l[0], 7);
  assert_int_equal(l[2], 9);
  assert_shape(f[3], 1, (const int64_t[]){0});
  assert_shape(f[4], 1, (const int64_t[]){3});
  assert_memory_equal(wf_tensor_data(f[4]), "a,b", 3);
  assert_shape(f[5], 2, (const int64_t[]){2, 2});
  x = wf_tensor_data(f[5]);
  assert_true(x[3] == 4.0f);
  release_fields(f, 6);
  def->close(rd);
}

static void test_feature_of_another_kind_is_skippable(void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char msg[2048];
  void *rd = open_ok(FIX("wrong_kind.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  release_fields(f, 4);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_DATA_LOSS);
  assert_contains(msg, "record 1 at offset 114");
  assert_contains(msg, "feature 'label' holds a float list");
  assert_contains(msg, "int64");
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  release_fields(f, 4);
  def->close(rd);
}

static void test_feature_without_a_kind_is_an_empty_list(void **state) {
  const char *var[] = {"label:int64:-1"};
  const char *scalar[] = {"label:int64:"};
  wf_attr_item opt = opt_strings("features", var, 1);
  wf_tensor *f[1] = {0};
  char msg[2048];
  void *rd = open_ok(FIX("no_kind.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 1, (const int64_t[]){0});
  release_fields(f, 1);
  def->close(rd);
  opt = opt_strings("features", scalar, 1);
  rd = open_ok(FIX("no_kind.tfrecord"), &opt, 1);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_DATA_LOSS);
  assert_contains(msg, "feature 'label' has 0 values; its shape () cannot");
  def->close(rd);
}

static void test_count_that_does_not_fit_the_shape_is_skippable(
    void **state) {
  const char *specs[] = {"image:float32:7", "tokens:int64:-1,2"};
  wf_attr_item opt = opt_strings("features", specs, 1);
  wf_tensor *f[2] = {0};
  char msg[2048];
  void *rd = open_ok(FIX("valid.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_DATA_LOSS);
  assert_contains(msg, "valid.tfrecord: record 0 at offset 0: feature 'image' "
                       "has 6 values; its shape (7) cannot hold them");
  def->close(rd);
  /* tokens: record 1 has 1 value, (?, 2) needs an even count. */
  opt = opt_strings("features", specs + 1, 1);
  rd = open_ok(FIX("valid.tfrecord"), &opt, 1);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 2, (const int64_t[]){0, 2});
  release_fields(f, 1);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_DATA_LOSS);
  assert_contains(msg, "record 1 at offset 114: feature 'tokens' has 1 values");
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  assert_shape(f[0], 2, (const int64_t[]){1, 2});
  release_fields(f, 1);
  def->close(rd);
}

/* ---- damage ------------------------------------------------------------- */

static void test_bad_data_crc_skips_the_record(void **state) {
  wf_attr_item opts[2] = {valid_features(), opt_bool("raw", 1)};
  wf_tensor *f[4] = {0};
  char msg[2048];
  void *rd = open_ok(FIX("bad_data_crc.tfrecord"), opts, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  valid_record(f, 0);
  release_fields(f, 4);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_DATA_LOSS);
  assert_contains(msg, "bad_data_crc.tfrecord: record 1 at offset 114: data "
                       "CRC mismatch");
  assert_int_equal(def->tell(rd), valid_offsets[2]);
  read_valid_from(rd, 2);
  def->close(rd);

  /* The same in raw mode. */
  rd = open_ok(FIX("bad_data_crc.tfrecord"), opts + 1, 1);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  release_fields(f, 1);
  assert_int_equal(next_rc(rd, f), -WF_DATA_LOSS);
  assert_null(f[0]);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  release_fields(f, 1);
  def->close(rd);
}

/* Reads the file with valid_specs: `good` records as in valid.tfrecord,
 * then a fatal error whose message holds each of parts; the error repeats
 * on the next call. */
static void expect_fatal_after(const char *path, int good,
                               const char *const *parts, int nparts) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char msg[2048], again[2048];
  void *rd = open_ok(path, &opt, 1);
  int rc;
  for (int i = 0; i < good; i++) {
    assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
    valid_record(f, i);
    release_fields(f, 4);
  }
  rc = next_msg(rd, f, msg, sizeof msg);
  assert_true(rc < 0);
  assert_int_not_equal(rc, -WF_DATA_LOSS);
  for (int i = 0; i < nparts; i++)
    assert_contains(msg, parts[i]);
  assert_int_equal(next_msg(rd, f, again, sizeof again), rc);
  assert_string_equal(again, msg);
  def->close(rd);
}

static void test_bad_length_crc_is_fatal_naming_file_and_offset(
    void **state) {
  const char *parts[] = {"bad_length_crc.tfrecord: record 2 at offset 222",
                         "length CRC mismatch"};
  (void)state;
  expect_fatal_after(FIX("bad_length_crc.tfrecord"), 2, parts, 2);
}

static void test_truncated_file_is_fatal_naming_file_and_offset(
    void **state) {
  const char *data[] = {"truncated.tfrecord: record 3 at offset 333",
                        "larger than what remains of the file (93 bytes",
                        "truncated"};
  const char *header[] = {"truncated_header.tfrecord: record 3 at offset 333",
                          "5 bytes into the 12-byte record header"};
  (void)state;
  expect_fatal_after(FIX("truncated.tfrecord"), 3, data, 3);
  expect_fatal_after(FIX("truncated_header.tfrecord"), 3, header, 2);
}

static void test_length_past_the_end_is_fatal(void **state) {
  const char *parts[] = {"length_past_eof.tfrecord: record 1 at offset 114",
                         "length 1000000 is larger than what remains"};
  (void)state;
  expect_fatal_after(FIX("length_past_eof.tfrecord"), 1, parts, 2);
}

static void test_length_above_max_record_bytes_is_fatal(void **state) {
  wf_attr_item opts[2] = {valid_features(), opt_int("max_record_bytes", 95)};
  wf_tensor *f[4] = {0};
  char msg[2048];
  void *rd = open_ok(FIX("valid.tfrecord"), opts, 2);
  (void)state;
  /* Payloads are 98, 92, 95 and 99 bytes. */
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_INVALID_ARGUMENT);
  assert_contains(msg, "record 0 at offset 0: length 98 is above "
                       "max_record_bytes (95)");
  def->close(rd);
}

static void test_malformed_protobuf_is_skippable(void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char msg[2048];
  void *rd = open_ok(FIX("malformed.tfrecord"), &opt, 1);
  (void)state;
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  release_fields(f, 4);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), -WF_DATA_LOSS);
  assert_contains(msg, "malformed.tfrecord: record 1 at offset 114: the ");
  assert_contains(msg, "not a valid tf.train.Example");
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  valid_record(f, 2);
  release_fields(f, 4);
  assert_int_equal(next_rc(rd, f), WF_READER_END);
  def->close(rd);
  /* Without specs the schema comes from record 0 and record 1 still
   * fails alone. */
  rd = open_ok(FIX("malformed.tfrecord"), NULL, 0);
  assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
  release_fields(f, 4);
  assert_int_equal(next_rc(rd, f), -WF_DATA_LOSS);
  def->close(rd);
}

static void test_corrupt_gzip_is_fatal(void **state) {
  const char *block[] = {"bad_block.tfrecord.gz (gzip)",
                         "corrupt compressed data at compressed offset"};
  const char *trailer[] = {"bad_trailer.tfrecord.gz (gzip)",
                           "corrupt compressed data", "check"};
  const char *cut[] = {"truncated.tfrecord.gz (gzip)",
                       "before the end of its stream: truncated file"};
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char msg[2048];
  void *rd;
  int good = 0, rc;
  (void)state;
  expect_fatal_after(FIX("bad_block.tfrecord.gz"), 0, block, 2);
  /* The trailer is checked once the data is all inflated: some records
   * may come first. */
  rd = open_ok(FIX("bad_trailer.tfrecord.gz"), &opt, 1);
  while ((rc = next_msg(rd, f, msg, sizeof msg)) == WF_READER_RECORD) {
    valid_record(f, good++);
    release_fields(f, 4);
  }
  assert_int_equal(rc, -WF_INVALID_ARGUMENT);
  for (int i = 0; i < 3; i++)
    assert_contains(msg, trailer[i]);
  def->close(rd);
  rd = open_ok(FIX("truncated.tfrecord.gz"), &opt, 1);
  good = 0;
  while ((rc = next_msg(rd, f, msg, sizeof msg)) == WF_READER_RECORD) {
    valid_record(f, good++);
    release_fields(f, 4);
  }
  assert_int_equal(rc, -WF_INVALID_ARGUMENT);
  for (int i = 0; i < 2; i++)
    assert_contains(msg, cut[i]);
  def->close(rd);
}

/* The record of valid.tfrecord that holds byte b. */
static int record_of(size_t b) {
  int r = 0;
  while (b >= valid_offsets[r + 1])
    r++;
  return r;
}

static void test_every_truncation_reads_whole_records_then_fails(
    void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char path[64], msg[2048], off[64];
  size_t len;
  uint8_t *valid = slurp(FIX("valid.tfrecord"), &len);
  (void)state;
  assert_int_equal(len, valid_offsets[4]);
  for (size_t cut = 0; cut <= len; cut++) {
    int whole = cut == len ? 4 : record_of(cut);
    int at_boundary = cut == valid_offsets[whole];
    void *rd;
    int rc;

    write_tmp(path, sizeof path, valid, cut);
    rd = open_ok(path, &opt, 1);
    for (int i = 0; i < whole; i++) {
      assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
      valid_record(f, i);
      release_fields(f, 4);
    }
    rc = next_msg(rd, f, msg, sizeof msg);
    if (at_boundary) {
      assert_int_equal(rc, WF_READER_END);
    } else {
      assert_int_equal(rc, -WF_INVALID_ARGUMENT);
      snprintf(off, sizeof off, "record %d at offset %llu", whole,
               (unsigned long long)valid_offsets[whole]);
      assert_contains(msg, path);
      assert_contains(msg, off);
      assert_contains(msg, "truncated");
    }
    def->close(rd);
    unlink(path);
  }
  free(valid);
}

static void test_every_truncated_gzip_reads_good_records_then_fails(
    void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char path[64], msg[2048];
  size_t len;
  uint8_t *gz = slurp(FIX("valid.tfrecord.gz"), &len);
  (void)state;
  for (size_t cut = 0; cut <= len; cut++) {
    void *rd;
    int good = 0, rc;
    write_tmp(path, sizeof path, gz, cut);
    rd = open_ok(path, &opt, 1);
    while ((rc = next_msg(rd, f, msg, sizeof msg)) == WF_READER_RECORD) {
      valid_record(f, good++);
      release_fields(f, 4);
    }
    if (cut == len || cut == 0) {
      assert_int_equal(rc, WF_READER_END);
      assert_int_equal(good, cut ? 4 : 0);
    } else {
      assert_int_equal(rc, -WF_INVALID_ARGUMENT);
      assert_contains(msg, path);
    }
    def->close(rd);
    unlink(path);
  }
  free(gz);
}

static void test_every_bit_flip_is_caught_by_a_crc(void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char path[64], msg[2048], off[64];
  size_t len;
  uint8_t *valid = slurp(FIX("valid.tfrecord"), &len);
  (void)state;
  for (size_t b = 0; b < len; b++) {
    int bad = record_of(b);
    int in_header = b < valid_offsets[bad] + 12;
    void *rd;

    valid[b] ^= (uint8_t)(1u << (b % 8));
    write_tmp(path, sizeof path, valid, len);
    valid[b] ^= (uint8_t)(1u << (b % 8));
    rd = open_ok(path, &opt, 1);
    snprintf(off, sizeof off, "record %d at offset %llu", bad,
             (unsigned long long)valid_offsets[bad]);
    for (int i = 0; i < 4; i++) {
      int rc = next_msg(rd, f, msg, sizeof msg);
      if (i < bad) {
        assert_int_equal(rc, WF_READER_RECORD);
        valid_record(f, i);
        release_fields(f, 4);
        continue;
      }
      if (i == bad) {
        /* Header: the length is not trusted and reading stops. Data or
         * its CRC: only this record is lost. */
        assert_int_equal(rc, in_header ? -WF_INVALID_ARGUMENT : -WF_DATA_LOSS);
        assert_contains(msg, off);
        assert_contains(msg, in_header ? "length CRC" : "data CRC");
        if (in_header)
          break;
        continue;
      }
      assert_int_equal(rc, WF_READER_RECORD);
      valid_record(f, i);
      release_fields(f, 4);
    }
    if (!in_header)
      assert_int_equal(next_rc(rd, f), WF_READER_END);
    def->close(rd);
    unlink(path);
  }
  free(valid);
}

/* ---- positions and counting --------------------------------------------- */

static void seek_round_trip(const char *path) {
  const int order[] = {3, 0, 2, 2, 1, 3, 0};
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  wf_status *st = wf_status_new();
  void *rd = open_ok(path, &opt, 1);

  read_valid_from(rd, 0);
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
    int i = order[k];
    assert_int_equal(def->seek(rd, valid_offsets[i], st), 0);
    assert_int_equal(def->tell(rd), valid_offsets[i]);
    assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
    valid_record(f, i);
    release_fields(f, 4);
    assert_int_equal(def->tell(rd), valid_offsets[i + 1]);
  }
  /* The end is a position too. */
  assert_int_equal(def->seek(rd, valid_offsets[4], st), 0);
  assert_int_equal(next_rc(rd, f), WF_READER_END);

  /* Inside a record: refused, and the reader stays where it was. */
  assert_int_equal(def->seek(rd, valid_offsets[1], st), 0);
  assert_int_equal(def->seek(rd, valid_offsets[2] + 5, st),
                   WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(st), "inside record 2 (offsets 222 to 333)");
  assert_int_equal(def->tell(rd), valid_offsets[1]);
  assert_int_equal(def->seek(rd, 7, st), WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(st), "inside record 0");
  assert_int_equal(def->seek(rd, 100000, st), WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(st), "the data ends at offset 448");
  assert_int_equal(def->tell(rd), valid_offsets[1]);
  read_valid_from(rd, 1);
  /* Messages after a seek still count records right. */
  def->close(rd);
  wf_status_free(st);
}

static void test_seek_and_tell_round_trip(void **state) {
  (void)state;
  seek_round_trip(FIX("valid.tfrecord"));
  seek_round_trip(FIX("valid.tfrecord.gz"));
  seek_round_trip(FIX("multi.tfrecord.gz"));
}

static void test_resume_in_a_new_reader_reads_the_rest_once(void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  const char *files[] = {FIX("valid.tfrecord"), FIX("valid.tfrecord.zz")};
  wf_status *st = wf_status_new();
  (void)state;
  for (int k = 0; k < 2; k++) {
    void *rd = open_ok(files[k], &opt, 1);
    uint64_t pos;
    for (int i = 0; i < 2; i++) {
      assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
      release_fields(f, 4);
    }
    pos = def->tell(rd);
    def->close(rd);
    rd = open_ok(files[k], &opt, 1);
    assert_int_equal(def->seek(rd, pos, st), 0);
    read_valid_from(rd, 2);
    def->close(rd);
  }
  wf_status_free(st);
}

static void test_seek_after_a_fatal_error_recovers(void **state) {
  wf_attr_item opt = valid_features();
  wf_tensor *f[4] = {0};
  char msg[2048];
  wf_status *st = wf_status_new();
  void *rd = open_ok(FIX("bad_length_crc.tfrecord"), &opt, 1);
  (void)state;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
    release_fields(f, 4);
  }
  assert_int_equal(next_rc(rd, f), -WF_INVALID_ARGUMENT);
  /* Past the damage: the walk meets it and says so. */
  assert_int_equal(def->seek(rd, valid_offsets[3], st), WF_INVALID_ARGUMENT);
  assert_contains(wf_status_message(st), "cannot seek to offset 333");
  assert_contains(wf_status_message(st), "length CRC mismatch");
  assert_int_equal(def->seek(rd, 0, st), 0);
  assert_int_equal(next_msg(rd, f, msg, sizeof msg), WF_READER_RECORD);
  valid_record(f, 0);
  release_fields(f, 4);
  def->close(rd);
  wf_status_free(st);
}

static void test_count_walks_the_framing(void **state) {
  const char *four[] = {FIX("valid.tfrecord"), FIX("valid.tfrecord.gz"),
                        FIX("valid.tfrecord.zz"), FIX("multi.tfrecord.gz"),
                        FIX("malformed.tfrecord"), FIX("raw.tfrecord")};
  const int64_t want[] = {4, 4, 4, 4, 3, 3};
  wf_attr_item raw = opt_bool("raw", 1);
  wf_status *st = wf_status_new();
  wf_tensor *f[1] = {0};
  (void)state;
  for (int i = 0; i < 6; i++) {
    void *rd = open_ok(four[i], &raw, 1);
    assert_int_equal(next_rc(rd, f), WF_READER_RECORD);
    release_fields(f, 1);
    assert_int_equal(def->count(rd, st), want[i]);
    /* Counting does not move the reader. */
    assert_int_equal(def->tell(rd), i == 5 ? 16 : valid_offsets[1]);
    def->close(rd);
  }
  wf_status_free(st);
}

static void test_count_checks_data_crcs_only_when_validating(void **state) {
  wf_attr_item opts[2] = {opt_bool("raw", 1), opt_bool("validate", 1)};
  wf_status *st = wf_status_new();
  void *rd = open_ok(FIX("bad_data_crc.tfrecord"), opts, 1);
  (void)state;
  assert_int_equal(def->count(rd, st), 4);
  def->close(rd);
  rd = open_ok(FIX("bad_data_crc.tfrecord"), opts, 2);
  assert_int_equal(def->count(rd, st), -1);
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_contains(wf_status_message(st), "record 1 at offset 114: data CRC");
  def->close(rd);
  rd = open_ok(FIX("valid.tfrecord.gz"), opts, 2);
  assert_int_equal(def->count(rd, st), 4);
  def->close(rd);
  wf_status_free(st);
}

static void test_count_reports_broken_framing(void **state) {
  const char *files[] = {FIX("bad_length_crc.tfrecord"),
                         FIX("truncated.tfrecord"),
                         FIX("truncated_header.tfrecord"),
                         FIX("length_past_eof.tfrecord"),
                         FIX("truncated.tfrecord.gz")};
  const char *parts[] = {"record 2 at offset 222: length CRC",
                         "record 3 at offset 333", "record 3 at offset 333",
                         "record 1 at offset 114",
                         "truncated file"};
  wf_attr_item raw = opt_bool("raw", 1);
  wf_status *st = wf_status_new();
  (void)state;
  for (int i = 0; i < 5; i++) {
    void *rd = open_ok(files[i], &raw, 1);
    assert_int_equal(def->count(rd, st), -1);
    assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
    assert_contains(wf_status_message(st), parts[i]);
    def->close(rd);
  }
  wf_status_free(st);
}

/* ---- allocation failures ----------------------------------------------- */

/* Opens and reads a whole file with allocation n failing: every failure is
 * RESOURCE_EXHAUSTED, a failed next leaves the record to the next call,
 * and nothing leaks (ASan checks that). Returns 1 when the n-th allocation
 * was reached. */
static int read_with_failure(const char *path, const wf_attr_item *opts,
                             int nopts, long n) {
  wf_status *st = wf_status_new();
  wf_tensor *f[4] = {0};
  void *rd = NULL;
  long before = wf__alloc_count();
  int rc, i = 0, retried = 0;

  wf__alloc_fail_after(n, 0);
  rc = def->open(path, opts, nopts, &rd, st);
  if (rc != 0) {
    assert_int_equal(rc, WF_RESOURCE_EXHAUSTED);
    wf__alloc_fail_after(0, 0);
    wf_status_free(st);
    return 1;
  }
  while ((rc = def->next(rd, f, st)) != WF_READER_END) {
    if (rc == -WF_RESOURCE_EXHAUSTED) {
      for (int k = 0; k < 4; k++)
        assert_null(f[k]);
      /* Fatal for the file, but where the failure left the input intact
       * the same record comes again (valid_record checks which). */
      if (retried++)
        break;
      continue;
    }
    retried = 0;
    assert_int_equal(rc, WF_READER_RECORD);
    if (nopts)
      valid_record(f, i);
    i++;
    release_fields(f, 4);
  }
  assert_true(rc != WF_READER_END || i == 4);
  def->close(rd);
  wf__alloc_fail_after(0, 0);
  wf_status_free(st);
  return wf__alloc_count() - before >= n;
}

static void test_allocation_failures_are_reported_and_leak_nothing(
    void **state) {
  wf_attr_item opt = valid_features();
  const char *files[] = {FIX("valid.tfrecord"), FIX("valid.tfrecord.gz")};
  (void)state;
  for (int k = 0; k < 2; k++) {
    long n = 1;
    while (read_with_failure(files[k], &opt, 1, n))
      n++;
    assert_true(n > 10);
    n = 1;
    while (read_with_failure(files[k], NULL, 0, n))
      n++;
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_matches_the_check_value),
      cmocka_unit_test(
          test_crc32c_implementations_agree_on_every_length_and_alignment),
      cmocka_unit_test(test_reader_is_registered_with_its_formats),
      cmocka_unit_test(test_reader_refuses_bad_options),
      cmocka_unit_test(test_open_names_a_missing_file),
      cmocka_unit_test(test_reads_float_int64_and_bytes_features),
      cmocka_unit_test(test_features_option_may_be_one_string),
      cmocka_unit_test(test_variable_length_with_known_inner_dims),
      cmocka_unit_test(test_without_features_every_feature_of_the_first_record),
      cmocka_unit_test(test_inferring_from_a_bad_first_record_fails_open),
      cmocka_unit_test(test_empty_file_has_no_records),
      cmocka_unit_test(test_reads_gzip_zlib_and_concatenated_gzip_files),
      cmocka_unit_test(test_compression_option_is_checked_against_the_file),
      cmocka_unit_test(test_plain_file_that_looks_like_zlib_is_read_plain),
      cmocka_unit_test(test_raw_yields_each_record_unparsed),
      cmocka_unit_test(test_reads_unpacked_numeric_lists),
      cmocka_unit_test(test_missing_feature_is_a_skippable_error_naming_it),
      cmocka_unit_test(test_missing_feature_takes_its_default),
      cmocka_unit_test(test_feature_of_another_kind_is_skippable),
      cmocka_unit_test(test_feature_without_a_kind_is_an_empty_list),
      cmocka_unit_test(test_count_that_does_not_fit_the_shape_is_skippable),
      cmocka_unit_test(test_bad_data_crc_skips_the_record),
      cmocka_unit_test(test_bad_length_crc_is_fatal_naming_file_and_offset),
      cmocka_unit_test(test_truncated_file_is_fatal_naming_file_and_offset),
      cmocka_unit_test(test_length_past_the_end_is_fatal),
      cmocka_unit_test(test_length_above_max_record_bytes_is_fatal),
      cmocka_unit_test(test_malformed_protobuf_is_skippable),
      cmocka_unit_test(test_corrupt_gzip_is_fatal),
      cmocka_unit_test(test_every_truncation_reads_whole_records_then_fails),
      cmocka_unit_test(
          test_every_truncated_gzip_reads_good_records_then_fails),
      cmocka_unit_test(test_every_bit_flip_is_caught_by_a_crc),
      cmocka_unit_test(test_seek_and_tell_round_trip),
      cmocka_unit_test(test_resume_in_a_new_reader_reads_the_rest_once),
      cmocka_unit_test(test_seek_after_a_fatal_error_recovers),
      cmocka_unit_test(test_count_walks_the_framing),
      cmocka_unit_test(test_count_checks_data_crcs_only_when_validating),
      cmocka_unit_test(test_count_reports_broken_framing),
      cmocka_unit_test(test_allocation_failures_are_reported_and_leak_nothing),
  };
  return cmocka_run_group_tests(tests, load_plugin, unload_plugin);
}
