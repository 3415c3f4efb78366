/* tests/readers/reader_harness.h — what the reader tests share: a runtime
 * that loads the built reader plugins (idx, csv, fixed) strictly through
 * the real loader, the reader definitions from the registry, a temporary
 * directory with file writers (raw and gzip), option builders, and
 * record helpers that fail the test with the status message. Included by
 * one test file per program, after cmocka.h; everything is static inline,
 * so a program need not use all of it. The pipeline (weft/data.h) is not
 * used: readers are driven directly through their wf_reader_def. */
#ifndef WF_TESTS_READERS_HARNESS_H
#define WF_TESTS_READERS_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include <weft/weft.h>

#include "plugin/registry.h"
#include "plugin/runtime_internal.h"

#define RH_PLUGIN_PATHS                                                        \
  TEST_BUILDDIR "/plugins/readers/idx/.libs, " TEST_BUILDDIR                   \
                "/plugins/readers/csv/.libs, " TEST_BUILDDIR                   \
                "/plugins/readers/fixed/.libs"

/* ---- the runtime and the readers ---------------------------------------- */

/* A runtime holding exactly the reader plugins above; fails the test when
 * it cannot be made. */
static inline wf_runtime *rh_runtime_new(void) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  wf_runtime *rt = NULL;

  if (!st || !cfg ||
      wf_config_set(cfg, "plugins", "paths", RH_PLUGIN_PATHS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "plugins", "strict", "true", st))
    goto done;
  rt = wf_runtime_new(cfg, st);

done:
  if (!rt)
    fail_msg("cannot make the runtime: %s",
             st ? wf_status_message(st) : "out of memory");
  wf_config_free(cfg);
  wf_status_free(st);
  return rt;
}

/* The registered reader called name, with the plugin that registered it;
 * fails the test when there is none. */
static inline const wf_reader_def *rh_reader(const wf_runtime *rt,
                                             const char *name,
                                             const char **plugin) {
  for (int i = 0; i < wf__registry_reader_count(rt->reg); i++) {
    const wf__reader *r = wf__registry_reader_at(rt->reg, i);
    if (strcmp(r->def.name, name) == 0) {
      if (plugin)
        *plugin = r->plugin;
      return &r->def;
    }
  }
  fail_msg("no reader '%s' is registered", name);
  return NULL;
}

/* ---- files ----------------------------------------------------------------- */

/* A fresh temporary directory (a new string; rh_tmpdir_free removes it
 * with everything in it). */
static inline char *rh_tmpdir_new(void) {
  const char *base = getenv("TMPDIR");
  char *dir = malloc(4096);

  assert_non_null(dir);
  snprintf(dir, 4096, "%s/weft-readers-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir))
    fail_msg("mkdtemp %s failed", dir);
  return dir;
}

static inline void rh_tmpdir_free(char *dir) {
  char cmd[4200];

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fail_msg("could not remove %s", dir);
  free(dir);
}

/* dir/name in a static buffer of its own per call site's slot (0-3). */
static inline const char *rh_path(const char *dir, const char *name,
                                  int slot) {
  static char paths[4][4096];

  snprintf(paths[slot], sizeof paths[slot], "%s/%s", dir, name);
  return paths[slot];
}

static inline void rh_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");

  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0)
    fail_msg("cannot write %s", path);
}

/* data[0..n) gzip-compressed into a new buffer (free it); *out_n its size. */
static inline unsigned char *rh_gzip(const void *data, size_t n,
                                     size_t *out_n) {
  z_stream z;
  size_t cap = compressBound((uLong)n) + 64;
  unsigned char *out = malloc(cap);

  memset(&z, 0, sizeof z);
  assert_non_null(out);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
                                Z_DEFAULT_STRATEGY),
                   Z_OK);
  z.next_in = (unsigned char *)data;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  *out_n = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static inline void rh_write_gz(const char *path, const void *data, size_t n) {
  size_t gn;
  unsigned char *gz = rh_gzip(data, n, &gn);

  rh_write(path, gz, gn);
  free(gz);
}

/* ---- options ------------------------------------------------------------ */

#define RH_STR(nm, v)                                                          \
  (wf_attr_item) {                                                             \
    .name = (nm), .value = {.type = WF_ATTR_STRING, .count = 1, .u.s = (v) }   \
  }
#define RH_INT(nm, v)                                                          \
  (wf_attr_item) {                                                             \
    .name = (nm), .value = {.type = WF_ATTR_INT, .count = 1, .u.i = (v) }      \
  }
#define RH_BOOL(nm, v)                                                         \
  (wf_attr_item) {                                                             \
    .name = (nm), .value = {.type = WF_ATTR_BOOL, .count = 1, .u.b = (v) }     \
  }
/* A list of strings from a compound literal: RH_STRS("c", "a:int32", ...). */
#define RH_STRS(nm, ...)                                                       \
  (wf_attr_item) {                                                             \
    .name = (nm), .value = {                                                   \
      .type = WF_ATTR_LIST | WF_ATTR_STRING,                                   \
      .count = sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *),   \
      .u.strings = (const char *const[]){__VA_ARGS__}                          \
    }                                                                          \
  }
#define RH_OPTS(...) ((const wf_attr_item[]){__VA_ARGS__})
#define RH_NOPTS(...)                                                          \
  ((int32_t)(sizeof((const wf_attr_item[]){__VA_ARGS__}) /                     \
             sizeof(wf_attr_item)))

/* ---- opening and reading ---------------------------------------------------- */

/* Opens path; fails the test with the message on error. */
static inline void *rh_open(const wf_reader_def *def, const char *path,
                            const wf_attr_item *opts, int32_t nopts) {
  wf_status *st = wf_status_new();
  void *rd = NULL;

  if (def->open(path, opts, nopts, &rd, st))
    fail_msg("opening %s: %s", path, wf_status_message(st));
  assert_non_null(rd);
  wf_status_free(st);
  return rd;
}

/* Fails unless msg contains every one of the NULL-terminated parts. */
static inline void rh_expect_vparts(const char *msg, const char *part,
                                    va_list ap) {
  for (const char *p = part; p; p = va_arg(ap, const char *))
    if (!strstr(msg, p))
      fail_msg("message \"%s\" does not mention \"%s\"", msg, p);
}

static inline void rh_expect_message(const wf_status *st, const char *part,
                                     ...) {
  va_list ap;

  va_start(ap, part);
  rh_expect_vparts(wf_status_message(st), part, ap);
  va_end(ap);
}

/* Expects open to fail with code and a message holding every part. */
static inline void rh_open_fails(const wf_reader_def *def, const char *path,
                                 const wf_attr_item *opts, int32_t nopts,
                                 int code, const char *part, ...) {
  wf_status *st = wf_status_new();
  void *rd = (void *)&rd;
  va_list ap;
  int rc = def->open(path, opts, nopts, &rd, st);

  if (rc == 0)
    fail_msg("opening %s succeeded; expected %s", path, wf_code_name(code));
  assert_null(rd);
  if (rc != code || (int)wf_status_code(st) != code)
    fail_msg("opening %s: %s (%s), expected %s", path, wf_status_message(st),
             wf_code_name(rc), wf_code_name(code));
  va_start(ap, part);
  rh_expect_vparts(wf_status_message(st), part, ap);
  va_end(ap);
  wf_status_free(st);
}

static inline void rh_release_all(wf_tensor **fields, int n) {
  for (int i = 0; i < n; i++) {
    wf_tensor_release(fields[i]);
    fields[i] = NULL;
  }
}

/* Reads one record into fields (new references); fails unless it is one. */
static inline void rh_next(const wf_reader_def *def, void *rd,
                           wf_tensor **fields) {
  wf_status *st = wf_status_new();
  int rc = def->next(rd, fields, st);

  if (rc != WF_READER_RECORD)
    fail_msg("next returned %d, not a record: %s", rc, wf_status_message(st));
  wf_status_free(st);
}

/* Expects the end of the data. */
static inline void rh_end(const wf_reader_def *def, void *rd) {
  wf_status *st = wf_status_new();
  wf_tensor *fields[16] = {0};
  int rc = def->next(rd, fields, st);

  if (rc != WF_READER_END) {
    if (rc == WF_READER_RECORD)
      rh_release_all(fields, def->num_fields(rd));
    fail_msg("next returned %d, not the end: %s", rc, wf_status_message(st));
  }
  wf_status_free(st);
}

/* Expects next to return -code with a message holding every part. */
static inline void rh_next_fails(const wf_reader_def *def, void *rd, int code,
                                 const char *part, ...) {
  wf_status *st = wf_status_new();
  wf_tensor *fields[16] = {0};
  int rc = def->next(rd, fields, st);
  va_list ap;

  if (rc >= 0) {
    if (rc == WF_READER_RECORD)
      rh_release_all(fields, def->num_fields(rd));
    fail_msg("next returned %d; expected -%s", rc, wf_code_name(code));
  }
  if (rc != -code || (int)wf_status_code(st) != code)
    fail_msg("next: %s (%d), expected -%s", wf_status_message(st), rc,
             wf_code_name(code));
  va_start(ap, part);
  rh_expect_vparts(wf_status_message(st), part, ap);
  va_end(ap);
  wf_status_free(st);
}

/* Records until the end; fails on an error. */
static inline int64_t rh_count_records(const wf_reader_def *def, void *rd) {
  wf_status *st = wf_status_new();
  wf_tensor *fields[16] = {0};
  int64_t n = 0;
  int rc;

  while ((rc = def->next(rd, fields, st)) == WF_READER_RECORD) {
    rh_release_all(fields, def->num_fields(rd));
    n++;
  }
  if (rc != WF_READER_END)
    fail_msg("after %lld records: %s", (long long)n, wf_status_message(st));
  wf_status_free(st);
  return n;
}

static inline void rh_seek(const wf_reader_def *def, void *rd, uint64_t pos) {
  wf_status *st = wf_status_new();

  if (def->seek(rd, pos, st))
    fail_msg("seek to %llu: %s", (unsigned long long)pos,
             wf_status_message(st));
  wf_status_free(st);
}

/* A field struct as the core hands it to a reader: zeroed, header set. */
static inline void rh_field_init(wf_reader_field *f) {
  memset(f, 0, sizeof *f);
  f->struct_size = (uint32_t)sizeof *f;
  f->abi_major = WF_ABI_MAJOR;
  f->abi_minor = WF_ABI_MINOR;
}

/* Checks field i of the schema; the reader leaves the header alone. */
static inline void rh_expect_field(const wf_reader_def *def, void *rd, int i,
                                   const char *name, wf_dtype dtype, int rank,
                                   const int64_t *dims) {
  wf_reader_field f;

  rh_field_init(&f);
  def->field(rd, i, &f);
  assert_int_equal(f.struct_size, sizeof f);
  assert_int_equal(f.abi_major, WF_ABI_MAJOR);
  assert_int_equal(f.abi_minor, WF_ABI_MINOR);
  assert_string_equal(f.name, name);
  assert_int_equal(f.dtype, dtype);
  assert_int_equal(f.shape.rank, rank);
  for (int k = 0; k < rank; k++)
    assert_int_equal(f.shape.dims[k], dims[k]);
}

/* Checks a tensor's dtype and shape. */
static inline void rh_expect_tensor(const wf_tensor *t, wf_dtype dtype,
                                    int rank, const int64_t *dims) {
  assert_non_null(t);
  assert_int_equal(wf_tensor_dtype(t), dtype);
  assert_int_equal(wf_tensor_rank(t), rank);
  for (int k = 0; k < rank; k++)
    assert_int_equal(wf_tensor_dim(t, k), dims[k]);
}

#endif
